"""The docs are self-contained (issue 17, item 7): the conventions and the result schema live in the repository,
and nothing points at files outside it (the team's notes are absent from a user's clone)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_reference_to_the_team_notes():
    files = [*ROOT.joinpath("xeval").rglob("*.py"), *ROOT.joinpath("xeval").rglob("*.yaml"), *_docs()]
    hits = [str(p.relative_to(ROOT)) for p in files if "DESIGN.md" in p.read_text(encoding="utf-8")]
    assert not hits, hits


def test_relative_links_resolve_inside_the_repository():
    for doc in _docs():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):  # http(s), mailto
                continue
            path = (doc.parent / target).resolve()
            assert path.is_relative_to(ROOT) and path.exists(), f"{doc.name}: link to {target}"


def test_conventions_and_result_schema_are_documented():
    conventions = (ROOT / "docs" / "conventions.md").read_text(encoding="utf-8")
    for topic in ("hidden_states[k]", "en→xx", "AER", "(EM + F1) / 2", "Transfer gap", "Label-free", "Unit identity"):
        assert topic in conventions, topic
    schema = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    from xeval.results.outcomes import SCHEMA as OUTCOMES
    from xeval.results.store import SCHEMA

    assert SCHEMA in schema and OUTCOMES in schema and '"correct"' in schema
