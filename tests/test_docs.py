"""The docs are self-contained (issue 17, item 7): the conventions and the result schema live in the repository,
and nothing points at files outside it (the team's notes are absent from a user's clone). Every command in them is
checked or run as docs/README.md ("Commands in these pages") defines, and the CLI reference is the parsers' own
--help (issue 26)."""

import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import doc_commands

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


# ------------------------------------------------------------------ the commands of the docs (docs/README.md)

BLOCKS = doc_commands.all_blocks()
CHECKED = [b for b in BLOCKS if b.lang in doc_commands.COMMAND_LANGS and b.marker != "illustrative"]
RUN = [b for b in BLOCKS if b.marker == "run"]


def _where(block) -> str:
    return block.where


def _simple_commands(block):
    return [argv for command in doc_commands.commands(block) for argv in command.pipeline()]


def test_every_block_names_its_language_and_prompts_sit_in_console_blocks():
    assert not [b.where for b in BLOCKS if not b.lang], "tag every fenced block (bash, console, text, python, ...)"
    prompts = [b.where for b in BLOCKS if b.lang != "console" and re.search(r"^\$ ", b.text, flags=re.M)]
    assert not prompts, f"a `$ ` command outside a console block: {prompts}"


def test_markers_are_well_formed():
    assert not [b.where for b in BLOCKS if b.marker == "illustrative" and not b.reason], "say why it is illustrative"
    assert not [b.where for b in RUN if b.lang not in {"bash", "console", "python"}]
    assert not [b.where for b in BLOCKS if b.lang == "console" and not doc_commands.commands(b)]


def test_relative_link_anchors_resolve():
    for doc in _docs():
        for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", doc.read_text(encoding="utf-8")):
            page = (doc.parent / target).resolve() if target else doc
            if page.suffix == ".md":
                assert anchor in doc_commands.anchors(page), f"{doc.name}: link to {target}#{anchor}"


@pytest.mark.parametrize("block", CHECKED, ids=_where)
def test_documented_commands_parse(block):
    """Every xeval / torchrun / pip / pytest command of a block: valid for the program's own parser."""
    commands = [argv for argv in _simple_commands(block) if not (len(argv) > 1 and argv[1].startswith("bench/"))]
    problems = [problem for argv in commands if (problem := doc_commands.check(argv))]
    assert not problems, f"{block.where}: {problems}"


@pytest.mark.slow
def test_documented_bench_commands_name_options_their_help_lists():
    """``python bench/X.py --opt``: the script exists and its --help lists every option (each script's --help runs
    once: some import torch first)."""
    problems = [f"{b.where}: {problem}" for b in CHECKED for argv in _simple_commands(b)
                if len(argv) > 1 and argv[1].startswith("bench/") and (problem := doc_commands.check(argv))]
    assert not problems, problems


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in {"python", "yaml"}], ids=_where)
def test_python_compiles_and_yaml_loads(block):
    if block.lang == "python":
        compile(block.text, block.where, "exec")
    else:
        assert yaml.safe_load(block.text) is not None


def test_readme_test_command_and_extras_are_the_ones_ci_runs():
    """.ci/run runs "the README's test command": the two are kept in step here."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_test = ci.split("# The README's test command (keep the two in step):\n", 1)[1].split("\n", 1)[0].strip()
    readme = [c.text for b in doc_commands.blocks(ROOT / "README.md") if b.lang == "bash"
              for c in doc_commands.commands(b)]
    assert ci_test in readme, f"README.md has no `{ci_test}` (the test command of .ci/run)"
    ci_extras = re.search(r'pip install .*-e "\.\[([\w,-]+)\]"', ci).group(1)
    assert any(f'pip install -e ".[{ci_extras}]"' in line for line in readme), ci_extras


def test_cli_reference_is_generated_from_the_parsers():
    from xeval.cli import reference

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    expected = reference.render()
    diff = list(difflib.unified_diff(page.splitlines(), expected.splitlines(), "docs/cli.md", "parsers", lineterm=""))
    assert not diff, f"docs/cli.md is out of date; regenerate: {reference.REGENERATE}\n" + "\n".join(diff[:40])


# --------------------------------------------------------------- the blocks marked <!-- run --> are executed


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory, data_root):
    """The scratch folder docs/README.md describes: ``tiny/``, ``reports/``, ``bench/`` and ``../shared/data``
    (the model folders of all-MiniLM-L6-v2 are added by the blocks that name it); ``python`` is this interpreter."""
    from tests.helpers.tiny import make_tiny_bert

    base = tmp_path_factory.mktemp("docs")
    work = base / "work"
    work.mkdir()
    (base / "shared").mkdir()
    (base / "shared" / "data").symlink_to(data_root)
    make_tiny_bert(work / "tiny")
    for name in ("reports", "bench"):
        (work / name).symlink_to(ROOT / name)
    bin_dir = base / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(ROOT),
           "XEVAL_DATA": str(data_root), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "XEVAL_CACHE": str(base / "cache")}
    return work, env


def _with_minilm(work: Path, request) -> None:
    minilm = request.getfixturevalue("minilm_dir")
    for link in (work / "all-MiniLM-L6-v2", work / "sentence-transformers" / "all-MiniLM-L6-v2"):
        if not link.exists():
            link.parent.mkdir(exist_ok=True)
            link.symlink_to(minilm)


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN, ids=_where)
def test_documented_run_blocks_run(block, sandbox, request):
    work, env = sandbox
    if "all-MiniLM-L6-v2" in block.text:
        _with_minilm(work, request)
    if block.lang == "python":
        script = work / "doc_example.py"
        script.write_text(block.text, encoding="utf-8")
        proc = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, f"{block.where}:\n{proc.stderr[-3000:]}"
        if block.next_text is not None:  # the output the page shows is the output it gives
            assert proc.stdout.strip() == block.next_text.strip(), f"{block.where}: output differs:\n{proc.stdout}"
        return
    for command in doc_commands.commands(block):
        errors = [line.strip() for line in command.output if ": error:" in line]
        proc = subprocess.run(["bash", "-c", command.text], cwd=work, env=env, capture_output=True, text=True,
                              timeout=900)
        expected = 2 if errors else 0
        assert proc.returncode == expected, (f"{block.where}: `{command.text}` exited {proc.returncode}, expected "
                                             f"{expected}:\n{proc.stderr[-3000:]}")
        for line in errors:  # the error the page shows is the error it gives
            assert line in proc.stderr, f"{block.where}: `{command.text}` did not print\n{line}\n{proc.stderr}"
