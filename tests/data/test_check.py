"""``xeval data check``: the mini suite on the real data with counts checked against independent counts, and
malformed files giving exit 2 with ``path:line:`` and nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import one_card_world
from xeval import cli
from xeval.cards.catalog import load_suite


def _blank_separated(path: Path) -> int:
    """Sentences in a token-per-line file, counted independently of the readers."""
    blocks, inside = 0, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            blocks += not inside
            inside = True
        else:
            inside = False
    return blocks


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def _questions(path: Path) -> int:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return sum(len(p["qas"]) for article in data for p in article["paragraphs"])


def _table(out: str) -> dict[tuple[str, str, str], tuple[int, int, str]]:
    rows = {}
    for line in out.splitlines()[2:]:
        cells = line.split()
        if len(cells) >= 7 and cells[4].isdigit():
            rows[(cells[0], cells[1], cells[3])] = (int(cells[4]), int(cells[5]), cells[6])
    return rows


@pytest.fixture(scope="module")
def mini_table(data_root):
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(["data", "check", "--data", str(data_root), "--suite", "xtreme-mini"])
    assert status == 0, out.getvalue()[-2000:]
    return out.getvalue()


@pytest.mark.slow
def test_mini_suite_lists_every_task_and_language(mini_table):
    rows = _table(mini_table)
    suite = load_suite("xtreme-mini")
    for card in suite.cards:
        for lang, _ in card.eval_units():
            assert (card.name, lang, "eval") in rows, (card.name, lang)
        if card.train:
            assert (card.name, "en", "train") in rows
    assert len(rows) == sum(len(c.languages) + bool(c.train) for c in suite.cards)
    assert mini_table.rstrip().splitlines()[-1].startswith(f"ok: {len(rows)} sources")


@pytest.mark.slow
def test_mini_suite_counts_match_independent_counts(mini_table, data_root):
    rows = _table(mini_table)
    expected = {
        ("udpos", "th", "eval"): _blank_separated(data_root / "udpos_xtreme/test_labeled/test-th.tsv"),
        ("udpos", "mr", "eval"): _blank_separated(data_root / "udpos_xtreme/dev-mr.tsv"),
        ("udpos", "en", "train"): _blank_separated(data_root / "udpos_xtreme/train-en.tsv"),
        ("panx", "jv", "eval"): _blank_separated(data_root / "panx_xtreme/dev-jv.tsv"),
        ("panx", "de", "eval"): _blank_separated(data_root / "panx_xtreme/test-de.tsv"),
        ("xnli", "de", "eval"): _lines(data_root / "xnli_xtreme/dev-de.tsv"),
        ("pawsx", "en", "train"): _lines(data_root / "pawsx_xtreme/dev-en.tsv"),
        ("tydiqa", "bn", "eval"): _questions(data_root / "tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-dev/tydiqa.goldp.bn.dev.json"),
        ("mlqa", "en", "eval"): _questions(data_root / "mlqa_v1/dev/dev-context-en-question-en.json"),
        ("xquad", "en", "train"): _questions(data_root / "tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-train/tydiqa.goldp.en.train.json")
        + _questions(data_root / "squad_v1.1/dev-v1.1.json") - _questions(data_root / "xquad/xquad.en.json"),
        ("tatoeba", "jv", "eval"): _lines(data_root / "tatoeba/tatoeba.jav-eng.jav"),
        ("alignment", "de-en", "eval"): _lines(data_root / "word_alignment/deen.src-tgt"),
    }
    for key, total in expected.items():
        assert rows[key][1] == total, (key, rows[key], total)
    assert (expected[("udpos", "th", "eval")], expected[("xnli", "de", "eval")]) == (1000, 2490)
    assert rows[("xnli", "en", "train")][:2] == (2000, 9999)  # 8,999 + 1,000 MultiNLI pairs, subsampled
    assert rows[("udpos", "mr", "eval")][0] == rows[("udpos", "mr", "eval")][1] < 200  # fewer than asked: all kept
    assert rows[("tatoeba", "de", "eval")][:2] == (200, 1000)
    assert rows[("udpos", "de", "eval")][2] == "udpos_xtreme/dev-de.tsv"


def test_subset_of_tasks_on_real_data(data_root, capsys):
    status = cli.main(["data", "check", "--data", str(data_root), "--suite", "xtreme-mini", "--tasks", "pawsx,alignment"])
    out = capsys.readouterr().out
    assert status == 0
    rows = _table(out)
    assert rows[("pawsx", "ko", "eval")] == (200, 2000, "pawsx_xtreme/dev-ko.tsv")
    assert rows[("alignment", "ro-en", "eval")][:2] == (248, 248)
    assert {k[0] for k in rows} == {"pawsx", "alignment"}


# ------------------------------------------------------------------------------------------ malformed files

CARD = """\
name: tiny
type: {type}
format: {format}
languages: [de, fr]
metric: accuracy
eval_split: dev
files:
  shared:
    dev: {path}
citation: test
licence: test
"""


@pytest.fixture
def tiny_suite(tmp_path, monkeypatch):
    """A task folder ($XEVAL_TASKS) with one two-language card and a suite, and a shared-layout data folder."""
    tasks, data = one_card_world(tmp_path, monkeypatch)

    def make(kind: str, files: dict[str, str]) -> Path:
        spec = {
            "pairs": ("pair_classification", "pairs", "xnli_xtreme/dev-{lang}.tsv"),
            "tagging": ("tagging", "tagging", "xnli_xtreme/dev-{lang}.tsv"),
            "squad": ("qa", "squad", "xnli_xtreme/dev-{lang}.json"),
        }[kind]
        (tasks / "tiny.yaml").write_text(CARD.format(type=spec[0], format=spec[1], path=spec[2]))
        for rel, text in files.items():
            (data / "xnli_xtreme" / rel).write_bytes(text.encode("utf-8"))
        return data

    return make


def _snapshot(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*")}


@pytest.mark.parametrize(
    "kind, files, bad, line",
    [
        ("pairs", {"dev-de.tsv": "a\tb\tneutral\r\n", "dev-fr.tsv": "a\tb\tneutral\r\nc\td\tentailment\r\nonly one\r\n"},
         "dev-fr.tsv", 3),
        ("tagging", {"dev-de.tsv": "Das\tDET\n\n", "dev-fr.tsv": "Le\tDET\nchat\n\n"}, "dev-fr.tsv", 2),
        ("squad", {"dev-de.json": '{"data": [{"title": "t", "paragraphs": [{"context": "c", "qas": [{"id": "1", '
                                 '"question": "q", "answers": [{"text": "c", "answer_start": 0}]}]}]}]}', "dev-fr.json": '{"data": [\n  {"title": "t",,}\n]}'}, "dev-fr.json", 2),
    ],
)
def test_malformed_file_exits_2_with_path_line_and_writes_nothing(tiny_suite, tmp_path, capsys, kind, files, bad, line):
    data = tiny_suite(kind, files)
    before = _snapshot(tmp_path)
    status = cli.main(["data", "check", "--data", str(data), "--suite", "t"])
    captured = capsys.readouterr()
    assert status == 2
    errors = [e for e in captured.err.splitlines() if e.startswith("xeval data: error: ")]
    assert len(errors) == 1, captured.err
    assert errors[0].startswith(f"xeval data: error: {data.resolve() / 'xnli_xtreme' / bad}:{line}: expected")
    assert "Traceback" not in captured.err
    assert _snapshot(tmp_path) == before  # nothing written: no store, no cache, no partial files
    assert not (tmp_path / "runs").exists()


def test_all_problems_are_reported_not_just_the_first(tiny_suite, capsys):
    data = tiny_suite("pairs", {"dev-de.tsv": "x\r\n"})  # de malformed, fr missing
    assert cli.main(["data", "check", "--data", str(data), "--suite", "t"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert any(e.endswith("dev-de.tsv:1: expected text<TAB>text<TAB>label (or two texts), found 1 fields") for e in err)
    assert any("dev-fr.tsv: missing file: task tiny needs it for language fr, split dev" in e for e in err)
    assert err[-1] == "xeval data: 2 of 2 sources failed"


def test_unknown_suite_and_bad_data_folder_exit_2(tmp_path, capsys):
    assert cli.main(["data", "check", "--data", str(tmp_path), "--suite", "nope"]) == 2
    assert "unknown suite 'nope'" in capsys.readouterr().err
    assert cli.main(["data", "check", "--data", str(tmp_path), "--suite", "probes"]) == 2
    assert "found neither" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []
