"""Tables from hand-made records: averages, seeds as mean ± std, gap arithmetic, empty summary cells, layers."""

import math

import pandas as pd
import pytest

from tests.helpers.report_records import A, B, probe_records, rec, transfer_records
from xeval.base.errors import UserError
from xeval.metrics.xtreme import XTREME
from xeval.report.build import build
from xeval.report.tables.base import Results
from xeval.report.tables.gap_table import gap_table
from xeval.report.tables.language_table import language_tables
from xeval.report.tables.layer_table import layer_tables, sweeps, universal_layer
from xeval.report.tables.summary_table import seven_task_average, summary_table


@pytest.fixture(scope="module")
def results():
    records = (transfer_records(A, seeds=(1, 2, 3)) + transfer_records(B, offset=1.0, skip=("tydiqa",))
               + probe_records(A, best_layer=2, dev_best=2) + probe_records(B, best_layer=1, dev_best=1))
    return Results(records)


def _table(tables, key):
    return next(t for t in tables if t.key == key)


def test_language_table_mean_std_and_average(results):
    pos = _table(language_tables(results), "languages:udpos")
    assert list(pos.mean.columns) == ["en", "de", "zh", "avg"]  # English first
    assert pos.mean.loc[("alpha", "f1"), "de"] == pytest.approx(80.0)
    assert pos.std.loc[("alpha", "f1"), "de"] == pytest.approx(1.0)  # seeds 79, 80, 81: sample std
    assert pos.mean.loc[("alpha", "f1"), "avg"] == pytest.approx(80.0)  # (90 + 80 + 70) / 3
    assert pos.std.loc[("alpha", "f1"), "avg"] == pytest.approx(1.0)  # std of the per-seed averages
    assert math.isnan(pos.std.loc[("beta", "f1"), "de"])  # one seed: no std
    assert pos.mean.index.get_level_values("metric")[0] == "f1"  # headline metric first
    assert pos.best_mask().loc[("beta", "f1"), "en"]  # beta is one point better


def test_average_left_empty_when_a_row_misses_languages():
    records = [rec(A, "xnli", lang, {"accuracy": 70.0}) for lang in ("en", "de")]
    records.append(rec(B, "xnli", "en", {"accuracy": 80.0}))
    [table] = language_tables(Results(records))
    assert table.mean.loc[("alpha", "accuracy"), "avg"] == pytest.approx(70.0)
    assert math.isnan(table.mean.loc[("beta", "accuracy"), "avg"])


def test_summary_layout_average_and_empty_cells(results):
    table = summary_table(results)
    assert list(table.mean.columns) == ["POS F1", "NER F1", "XQuAD F1", "XQuAD EM", "MLQA F1", "MLQA EM",
                                        "TyDiQA F1", "TyDiQA EM", "XNLI Acc", "PAWS-X Acc", "Tatoeba Acc",
                                        "Avg (7 tasks)"]  # no BUCC in the runs: no XTREME score column
    alpha = table.mean.loc["alpha"]
    assert alpha["POS F1"] == pytest.approx(80.0)
    assert alpha["Tatoeba Acc"] == pytest.approx((62 + 42) / 2)  # en->xx at the chosen layer (2)
    # the 7-task mean (not the XTREME score): tasks unweighted, QA as (F1 + EM) / 2: (80 + 70 + 55 + 45 + 35 + 75 + 85) / 7
    assert alpha["Avg (7 tasks)"] == pytest.approx(445 / 7)
    beta = table.mean.loc["beta"]
    assert math.isnan(beta["TyDiQA F1"]) and math.isnan(beta["TyDiQA EM"])
    assert math.isnan(beta["Avg (7 tasks)"])  # no average over whatever happened to run


def test_xtreme_score_needs_every_task():
    full = {"udpos": 1, "panx": 2, "xnli": 3, "pawsx": 4, "xquad": 5, "mlqa": 5, "tydiqa": 2}
    blocks = {task: {"avg_metric": value} for task, value in full.items()}
    assert seven_task_average(blocks) == pytest.approx((1 + 2 + 3 + 4 + 5 + 5 + 2) / 7)
    assert seven_task_average({k: v for k, v in blocks.items() if k != "mlqa"}) is None


def test_gap_arithmetic(results):
    table = gap_table(results)
    # en = base, de = base - 10, zh = base - 20 -> gap = base - (base - 15) = 15 for every task and model
    assert table.mean.loc["alpha", "POS"] == pytest.approx(15.0)
    assert table.mean.loc["alpha", "avg"] == pytest.approx(15.0)
    assert math.isnan(table.mean.loc["beta", "TyDiQA"]) and math.isnan(table.mean.loc["beta", "avg"])
    assert "tatoeba" not in table.mean.columns  # no English side: no gap


def test_gap_uses_non_english_mean_and_lower_is_better():
    records = [rec(A, "xnli", "en", {"accuracy": 80.0}), rec(A, "xnli", "de", {"accuracy": 70.0}),
               rec(A, "xnli", "fr", {"accuracy": 60.0}), rec(B, "xnli", "en", {"accuracy": 75.0}),
               rec(B, "xnli", "de", {"accuracy": 72.0}), rec(B, "xnli", "fr", {"accuracy": 70.0})]
    table = gap_table(Results(records))
    assert table.mean.loc["alpha", "XNLI"] == pytest.approx(15.0)
    assert table.mean.loc["beta", "XNLI"] == pytest.approx(4.0)
    assert table.best_mask().loc["beta", "XNLI"] and not table.best_mask().loc["alpha", "XNLI"]


def test_probes_best_layer_tatoeba_mean_and_aer(results):
    tables = layer_tables(results)
    best = _table(tables, "layers:best").mean
    # Tatoeba's headline is XTREME's official en->xx accuracy; the layer is chosen on dev (peaking where test does)
    assert best.loc[("alpha", "tatoeba", "accuracy"), "chosen layer"] == 2
    assert best.loc[("alpha", "tatoeba", "accuracy"), "score at chosen"] == pytest.approx(52.0)
    assert best.loc[("beta", "tatoeba", "accuracy"), "chosen layer"] == 1
    assert best.loc[("alpha", "alignment", "aer"), "chosen layer"] == 2  # lowest dev AER wins
    assert best.loc[("alpha", "alignment", "aer"), "score at chosen"] == pytest.approx(30.0)
    tatoeba = _table(language_tables(results), "languages:tatoeba").mean
    # both directions and their mean (derived when the record has only the two directions), at the best layer
    assert tatoeba.loc[("alpha · L2", "accuracy_xx_en"), "de"] == pytest.approx(60.0)
    assert tatoeba.loc[("alpha · L2", "accuracy_en_xx"), "de"] == pytest.approx(62.0)
    assert tatoeba.loc[("alpha · L2", "accuracy_mean"), "de"] == pytest.approx(61.0)
    table = _table(language_tables(results), "languages:tatoeba")
    metrics = list(table.mean.loc["alpha · L2"].index)
    assert metrics == ["accuracy_en_xx", "accuracy_xx_en", "accuracy_mean"]  # 'accuracy' repeats en->xx
    assert "accuracy equals accuracy_en_xx (left out)" in table.notes
    aer = _table(language_tables(results), "languages:alignment")
    assert aer.best_mask().columns.tolist() == ["de-en", "avg"]


def test_held_out_f1_is_never_taken_for_a_refinement_of_f1():
    # f1 == f1_held_out in every row (a control at 0, a threshold that happens to transfer): both stay, with the note
    records = [rec(A, "bucc", "zh", {"f1": 0.0, "f1_held_out": 0.0, "precision": 0.0}, layer=8, split="dev")]
    table = _table(language_tables(Results(records, layer=8)), "languages:bucc")
    assert list(table.mean.loc["alpha · L8"].index) == ["f1", "f1_held_out", "precision"]
    assert not any("left out" in note for note in table.notes)
    assert any(note.startswith("f1_held_out = F1 with each half") for note in table.notes)


def test_fixed_layer_and_unknown_layer():
    records = probe_records(A)
    table = _table(language_tables(Results(records, layer=0)), "languages:tatoeba").mean
    assert table.loc[("alpha · L0", "accuracy_mean"), "de"] == pytest.approx(51.0)
    with pytest.raises(UserError, match="no records for layer 9"):
        Results(records, layer=9)


def test_all_leaves_out_tables_the_runs_cannot_fill():
    tables = build(Results(probe_records(A)), "all")
    keys = [t.key for t in tables]
    assert "summary" not in keys and "gap" not in keys
    assert "layers:best" in keys and "languages:tatoeba" in keys
    with pytest.raises(UserError, match="no XTREME task records"):
        build(Results(probe_records(A)), "summary")


def test_split_prefers_test():
    records = [rec(A, "xnli", "en", {"accuracy": 50.0}, split="dev"),
               rec(A, "xnli", "en", {"accuracy": 60.0}, split="test")]
    [table] = language_tables(Results(records))
    assert table.mean.loc[("alpha", "accuracy"), "en"] == pytest.approx(60.0)
    [table] = language_tables(Results(records, split="dev"))
    assert table.mean.loc[("alpha", "accuracy"), "en"] == pytest.approx(50.0)


def test_split_per_language_as_suites_mix_them():
    """xtreme-mini evaluates some languages on dev (no labelled test): one row, both splits named."""
    records = [rec(A, "udpos", "en", {"f1": 90.0}, split="test"), rec(A, "udpos", "de", {"f1": 70.0}, split="dev")]
    [table] = language_tables(Results(records))
    assert table.mean.loc[("alpha", "f1"), "avg"] == pytest.approx(80.0)
    assert table.notes[0].startswith("splits: dev for de; test for en")


def test_half_finished_sweep_compares_one_language_set():
    """zh stopped after layer 1: layers are compared on de only (as the probes' own sweep does)."""
    records = [rec(A, "tatoeba", "de", {"accuracy": v}, layer=k) for k, v in enumerate((10.0, 20.0, 30.0))]
    records += [rec(A, "tatoeba", "zh", {"accuracy": v}, layer=k) for k, v in enumerate((90.0, 0.0))]
    [sweep] = sweeps(Results(records)).values()
    assert list(sweep.loc["alpha"]) == [10.0, 20.0, 30.0]
    assert universal_layer(sweep.loc["alpha"], "accuracy") == 2
    assert universal_layer(pd.Series({0: 5.0, 1: 5.0}), "accuracy") == 0  # ties: the lowest layer
    assert universal_layer(pd.Series({0: 40.0, 1: 30.0, 2: 30.0}), "aer") == 1  # AER: lower is better


def _official_records(model, drop=()):
    """Every summary task on XTREME's official languages (minus ``drop``: (task, lang) pairs), flat scores."""
    base = {"udpos": {"f1": 80.0}, "panx": {"f1": 70.0}, "xquad": {"f1": 60.0, "exact_match": 50.0},
            "mlqa": {"f1": 50.0, "exact_match": 40.0}, "tydiqa": {"f1": 40.0, "exact_match": 30.0},
            "xnli": {"accuracy": 75.0}, "pawsx": {"accuracy": 85.0}}
    return [rec(model, task, lang, metrics) for task, metrics in base.items()
            for lang in XTREME.tasks[task].langs if (task, lang) not in drop]


def test_summary_full_language_sets_are_unmarked():
    table = summary_table(Results(_official_records(A)))
    assert table.marks is None
    assert not any(note.startswith("†") for note in table.notes)
    assert table.mean.loc["alpha", "Avg (7 tasks)"] == pytest.approx(445 / 7)


def test_summary_marks_partial_language_sets_with_counts():
    drop = {("udpos", "kk"), ("udpos", "tl"), ("udpos", "yo")}  # xtreme-mini's POS
    records = _official_records(A) + _official_records(B, drop=drop)
    records += [rec(B, "xnli", "xx", {"accuracy": 75.0})]  # a language XTREME's XNLI does not have
    table = summary_table(Results(records))
    marked = table.marks != ""
    assert not marked.loc["alpha"].any()  # the official sets stay unmarked, Avg included
    assert marked.loc["beta", "POS F1"] and marked.loc["beta", "XNLI Acc"]
    assert not marked.loc["beta", ["NER F1", "XQuAD F1", "XQuAD EM", "PAWS-X Acc"]].any()
    assert marked.loc["beta", "Avg (7 tasks)"]  # kept, but not the XTREME score
    assert table.mean.loc["beta", "Avg (7 tasks)"] == pytest.approx(445 / 7)
    assert "† averaged over N of M XTREME languages per task: POS 30 of 33, XNLI 15 of 15 (+1 not in XTREME)" \
        in table.notes
    assert "Avg (7 tasks)†: a mean over marked cells, not XTREME's number" in table.notes


def test_summary_marks_a_three_language_run(results):
    table = summary_table(results)  # alpha and beta both on en/de/zh; beta without TyDiQA
    marked = table.marks != ""
    assert marked.loc["alpha"].all()  # Tatoeba on de/zh only is marked too
    assert not marked.loc["beta", "Avg (7 tasks)"]  # no Avg shown, nothing to mark
    assert math.isnan(table.mean.loc["beta", "Avg (7 tasks)"]) and not marked.loc["beta", "TyDiQA F1"]
    assert "POS 3 of 33" in table.notes[2] and "TyDiQA 1 of 9 (+2 not in XTREME)" in table.notes[2]  # no de/zh


def test_tables_use_the_layer_chosen_on_the_selection_split_not_the_test_best():
    """Test peaks at layer 2, dev (the selection split) at layer 1: every table reports layer 1 and says so."""
    results = Results(probe_records(A, best_layer=2, dev_best=1))
    assert results.chosen_layers[(A, "tatoeba", "zero-shot")] == 1
    best = _table(layer_tables(results), "layers:best")
    assert best.mean.loc[("alpha", "tatoeba", "accuracy"), "chosen layer"] == 1
    assert best.mean.loc[("alpha", "tatoeba", "accuracy"), "score at chosen"] == pytest.approx(42.0)  # test at L1
    assert any("chosen on dev" in note for note in best.notes)
    tatoeba = _table(language_tables(results), "languages:tatoeba")
    assert {ix[0] for ix in tatoeba.mean.index} == {"alpha · L1"}
    # Tatoeba's dev split is FLORES-200 (the card's split_sources): every table says so beside "dev"
    assert any("layer: chosen on dev (FLORES-200; mean over 2 languages)" in note for note in tatoeba.notes)
    assert set(results.long["split"]) == {"test"}  # dev chose the layer; it is not reported


def test_without_a_selection_split_the_layer_is_the_cards_or_the_last_never_the_test_best():
    test_only = probe_records(A, best_layer=1)
    results = Results(test_only)
    assert results.chosen_layers[(A, "tatoeba", "zero-shot")] == 3  # the last layer, although test peaks at 1
    assert "the last layer" in results.layer_note("tatoeba")
    for r in test_only:
        r.config = {"default_layer": 2}
    results = Results(test_only)
    assert results.chosen_layers[(A, "tatoeba", "zero-shot")] == 2
    assert "fixed layer" in results.layer_note("tatoeba")
    # a dev-only probe (BUCC in the shared data) reports dev: dev cannot choose its own layer
    dev_only = [r for r in probe_records(A, best_layer=1, dev_best=1) if r.unit.split == "dev"]
    assert Results(dev_only).chosen_layers[(A, "tatoeba", "zero-shot")] == 3


def test_the_xtreme_score_counts_nine_tasks_and_the_seven_task_mean_is_named_apart():
    """mBERT's published XTREME row (Hu et al. 2020, Table 2), every official language at the task's average: the
    XTREME score (evaluate.py's all_task, nine tasks) is 59.6; the mean of the seven fine-tuning tasks is 63.1."""
    from xeval.metrics.xtreme import XTREME

    published = {"udpos": {"f1": 70.3}, "panx": {"f1": 62.2}, "xquad": {"f1": 64.5, "exact_match": 49.4},
                 "mlqa": {"f1": 61.4, "exact_match": 44.2}, "tydiqa": {"f1": 59.7, "exact_match": 43.9},
                 "xnli": {"accuracy": 65.4}, "pawsx": {"accuracy": 81.9}, "bucc2018": {"f1": 56.7},
                 "tatoeba": {"accuracy": 38.7}}
    card = {"bucc2018": "bucc"}
    records = []
    for task, metrics in published.items():
        layer = 8 if task in ("bucc2018", "tatoeba") else None
        for lang in XTREME.tasks[task].langs:
            records.append(rec(A, card.get(task, task), lang, metrics, layer=layer))
    table = summary_table(Results(records))
    row = table.mean.loc["alpha"]
    assert row["XTREME score"] == pytest.approx(536.75 / 9) and row["Avg (7 tasks)"] == pytest.approx(441.35 / 7)
    assert round(row["XTREME score"], 1) == 59.6  # and 63.05 for the 7-task mean, printed 63.1 in papers
    assert row["BUCC F1"] == pytest.approx(56.7) and row["Tatoeba Acc"] == pytest.approx(38.7)
    assert table.marks is None  # XTREME's own language sets
    # without Tatoeba there is no XTREME score, only the 7-task mean
    partial = summary_table(Results([r for r in records if r.unit.task != "tatoeba"])).mean.loc["alpha"]
    assert "XTREME score" not in partial.index and partial["Avg (7 tasks)"] == pytest.approx(441.35 / 7)


def test_a_store_of_only_unscored_records_says_so():
    """An official XTREME download's test files carry no labels: every record is unscored. The error must say
    that (and point at xeval score), not that the store holds no records."""
    from xeval.report.frame import long_frame

    with pytest.raises(UserError, match="hold 2 record.*all unscored.*xeval score"):
        long_frame([rec(A, "pawsx", "de", {}), rec(A, "pawsx", "fr", {})])
    with pytest.raises(UserError, match="no result records found"):
        long_frame([])


def test_a_probe_with_a_selection_split_reports_the_other_split_never_dev():
    """FLORES-200 reports devtest and chooses its layer on dev: sorted, 'dev' comes first, and was reported."""
    from xeval.results.layers import reported_split

    assert reported_split({"dev", "devtest"}) == "devtest"
    assert reported_split({"dev", "test"}) == "test"
    assert reported_split({"test"}) == "test"
    assert reported_split({"dev"}) == "dev"  # a probe reported on dev alone (no selection split ran)


def test_report_tables_show_flores_devtest_and_choose_its_layer_on_dev():
    """The report's frame kept the first sorted split per language: FLORES' dev (its selection split) was shown as
    the result, and with dev among the shown splits no layer was chosen on it."""
    records = []
    for layer, (dev, devtest) in enumerate([(10.0, 30.0), (50.0, 20.0)]):  # dev prefers layer 1, devtest layer 0
        for lang in ("de", "fr"):
            records.append(rec(A, "flores", lang, {"accuracy": dev}, layer=layer, split="dev"))
            records.append(rec(A, "flores", lang, {"accuracy": devtest}, layer=layer, split="devtest"))
    results = Results(records)
    assert set(results.sweep["split"]) == {"devtest"}
    assert results.chosen_layer("flores", "alpha") == 1 and results.layer_rules[(A, "flores", "zero-shot")].rule == "dev"
    shown = results.long[(results.long["task"] == "flores") & (results.long["metric"] == "accuracy")]
    assert set(shown["value"]) == {20.0}  # devtest at the dev-chosen layer, never dev's 50 or devtest's own best 30
