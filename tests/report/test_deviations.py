"""A cell's departure from XTREME's protocol is visible (issue 26 item 4, issue 25's second fidelity bug): an
xtreme-mini run scores German POS on dev and English on test, XNLI on dev sets, QA on 100-question subsets, Tatoeba
on 200 of 1,000 sentences, and trains XNLI / QA on data that stands in for XTREME's. Every table, the console and
the LaTeX mark such cells and say why; Tatoeba's dev rows are named FLORES-200."""

from __future__ import annotations

import pytest

from tests.helpers import transfer as helpers_transfer
from tests.helpers.report_records import A, rec
from xeval.cli import main
from xeval.report.build import build
from xeval.report.deviations import record_deviations
from xeval.report.formats import render
from xeval.report.tables.base import Results
from xeval.results.store import Store

# the mini suite's own subsamples (200 sentences / pairs, 100 questions), a short fine-tune
FLAGS = ["--max-train", "32", "--max-dev", "8", "--epochs", "1", "--batch-size", "16", "--threads", "1",
         "--set", "learning_rate=0.001"]


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory, data_root):
    """Real records of the tiny model on xtreme-mini: POS (en test, de dev), XNLI (dev), XQuAD, Tatoeba (two
    layers, chosen on FLORES-200 dev), with what the run printed."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("mini") / "runs"
    printed = io.StringIO()
    model = helpers_transfer.tiny_model(data_root)
    with contextlib.redirect_stdout(printed):
        assert main(["run", "--model", str(model), "--suite", "xtreme-mini", "--data", str(data_root), "--out",
                     str(out), "--tasks", "udpos,xnli,xquad,tatoeba", "--langs", "en,de", "--layers", "1,2",
                     *FLAGS]) == 0
    return list(Store(out).records()), printed.getvalue()


@pytest.mark.slow
def test_summary_marks_every_departure_and_is_not_titled_xtreme(mini_run):
    records, _ = mini_run
    [summary] = build(Results(records), "summary")
    marks = summary.marks.loc["tiny"]
    assert "not XTREME's numbers" in summary.title
    assert marks["POS F1"] == "†‡§"  # 2 of 33 languages; de on dev; 200 of each language
    # this 32-example fine-tune of a tiny model answers one class on XNLI: its records warn, and the cell says so (!)
    warned = "!" if any((r.extra or {}).get("warnings") for r in records if r.unit.task == "xnli") else ""
    assert marks["XNLI Acc"] == "†‡§¶" + warned  # dev sets; MultiNLI's 9,999-pair subset for MultiNLI
    assert marks["XQuAD F1"] == "†§¶" and marks["XQuAD EM"] == "†§¶"  # 100 questions; TyDiQA + SQuAD dev
    assert marks["Tatoeba Acc"] == "†§"  # 200 of 1,000 sentences
    notes = "\n".join(summary.notes)
    assert "‡ scored on dev sets where XTREME reports test" in notes and "POS 1 of 2 languages; XNLI all 2" in notes
    assert "XNLI: the 9,999-pair MultiNLI train subset instead of MultiNLI train" in notes
    assert "Tatoeba scored on 200 examples a language" in notes and "XQuAD trained on 32 English" in notes
    assert "retrieval among fewer candidates scores higher" in notes
    text = render.render([summary], "md")
    assert "| tiny |" in text and "‡" in text.split("| tiny |")[1].splitlines()[0]
    tex = render.render([summary], "latex")
    assert r"\ddag{}" in tex and r"\S{}" in tex and r"\P{}" in tex and "‡" not in tex


@pytest.mark.slow
def test_gap_and_language_tables_never_mix_dev_and_test_unmarked(mini_run):
    records, _ = mini_run
    results = Results(records)
    [gap] = build(results, "gap")
    assert "‡" in gap.marks.loc["tiny", "POS"] and "‡" in gap.marks.loc["tiny", "XNLI"]
    assert "‡" not in gap.marks.loc["tiny", "XQuAD"] and "‡" in gap.marks.loc["tiny", "avg"]
    pos = next(t for t in build(results, "languages") if t.key == "languages:udpos")
    assert pos.marks.loc[("tiny", "f1"), "de"] == "‡" and pos.marks.loc[("tiny", "f1"), "en"] == ""
    assert pos.marks.loc[("tiny", "f1"), "avg"] == "‡§"
    assert any("layer: chosen on dev (FLORES-200;" in n
               for n in next(t for t in build(results, "languages") if t.key == "languages:tatoeba").notes)


@pytest.mark.slow
def test_the_run_prints_split_mixing_averages_and_flores_rows(mini_run):
    _, printed = mini_run
    pos = printed.split("udpos (zero-shot")[1].split("\n\n")[0]
    assert "avg   dev+test" in pos and "avg spans splits (1 dev and 1 test languages): not a test-set number" in pos
    tatoeba = printed.split("tatoeba (zero-shot")[1]
    rows = [line.split() for line in tatoeba.splitlines() if line.startswith("de ")]
    assert rows[0][1] == "test" and rows[1][1:3] == ["dev", "(FLORES-200)"]  # the selection split is FLORES-200
    assert "chosen on dev (FLORES-200; mean over 1 language)" in tatoeba


def _with_blocks(record, split="test", n=200, cap=200, train=None, layout="shared"):
    record.n_examples = n
    record.data = {"layout": layout, "format": "tagging", "subsample": {"n": cap, "seed": 0} if cap else None}
    record.unit = type(record.unit)(**{**record.unit.__dict__, "split": split})
    if train is not None:
        record.config = {"train": {"lang": "en", "split": "train", "n_examples": train,
                                   "data": {"layout": layout, "subsample": {"n": 2000, "seed": 0}}}}
    return record


def test_record_deviations_by_hand():
    full = record_deviations(_with_blocks(rec(A, "udpos", "de", {"f1": 1.0}), n=150))
    assert full.kinds() == set()  # 150 < 200: the whole file was scored; no training block, test split
    dev = record_deviations(_with_blocks(rec(A, "udpos", "de", {"f1": 1.0}), split="dev", n=150))
    assert dev.kinds() == {"dev"} and dev.on_dev == {"de"}
    sub = record_deviations(_with_blocks(rec(A, "udpos", "de", {"f1": 1.0}), train=2000))
    assert sub.kinds() == {"subsample"} and sub.eval_sizes == {"de": 200} and sub.train_sizes == {2000}
    xnli = record_deviations(_with_blocks(rec(A, "xnli", "de", {"accuracy": 1.0}), n=150, cap=None, train=1999))
    assert xnli.kinds() == {"substitute"}  # shared layout: MultiNLI's subset stands in; 1,999 < 2,000 is all of it
    official = record_deviations(_with_blocks(rec(A, "xnli", "de", {"accuracy": 1.0}), n=150, cap=None, train=1999,
                                              layout="xtreme"))
    assert official.kinds() == set()  # XTREME's download trains on MultiNLI itself
    flores = record_deviations(_with_blocks(rec(A, "flores", "de", {"accuracy": 1.0}), split="devtest", cap=None))
    assert flores.kinds() == set()  # FLORES reports devtest: its own split, not a dev set for a test


def test_hand_made_records_without_run_blocks_carry_no_marks():
    from tests.helpers.report_records import transfer_records

    [summary] = build(Results(transfer_records(A)), "summary")
    assert "not XTREME's numbers" not in summary.title
    assert set(summary.marks.loc["alpha"].str.replace("†", "")) == {""}  # only the language-set dagger


def test_a_warned_record_marks_its_cell_and_says_why_without_calling_the_table_off_protocol():
    from tests.helpers.report_records import transfer_records

    records = transfer_records(A)
    collapsed = "every one of the 200 predictions is '0': the classifier collapsed to one class"
    for r in records:
        if r.unit.task == "pawsx" and r.unit.lang == "de":
            r.extra = {**(r.extra or {}), "warnings": [collapsed]}
    assert record_deviations(next(r for r in records if r.unit.task == "pawsx" and r.unit.lang == "de")).kinds() \
        == {"warned"}
    [summary] = build(Results(records), "summary")
    assert "!" in summary.marks.at["alpha", "PAWS-X Acc"] and "!" not in summary.marks.at["alpha", "XNLI Acc"]
    assert "!" in summary.marks.at["alpha", "Avg (7 tasks)"]  # a mean over a warned cell carries its mark
    assert "not XTREME's numbers" not in summary.title  # a warning is not a departure from the protocol
    [note] = [n for n in summary.notes if n.startswith("!")]
    assert "PAWS-X de" in note and collapsed in note
