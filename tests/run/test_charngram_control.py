"""``xeval run --control charngram`` on real Tatoeba: records of their own key (no layer, labelled, what the IDF is
fitted on recorded), the other task types skipped with one line, string similarity doing what it must (Latin-script
pairs far above different-script ones), and the row in the report and in the printed tables."""

from __future__ import annotations

import pytest

from tests.helpers.transfer import tiny_model
from xeval.models.charngram import FITTED_ON, CharNgramModel
from xeval.results.store import Store

LATIN, OTHER = ("de", "fr", "es"), ("zh", "ja", "ar")


@pytest.fixture(scope="module")
def charngram_run(data_root, tmp_path_factory):
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    out = tmp_path_factory.mktemp("charngram") / "runs"
    lines: list[str] = []
    opts = RunOptions(model=str(tiny_model(data_root)), suite="probes", tasks=["tatoeba", "alignment"],
                      langs=[*LATIN, *OTHER, "de-en"], data=str(data_root), out=str(out), device="cpu",
                      layers="all", control="random-init,charngram", threads=1)
    records = run(opts, echo=lines.append)
    return out, records, lines


def baseline(records):
    key = CharNgramModel().key
    return {r.unit.lang: r for r in records if r.unit.model == key}


def test_records_of_its_own_key_labelled_without_layers(charngram_run):
    out, records, _ = charngram_run
    mine = baseline(records)
    assert set(mine) == {*LATIN, *OTHER}  # Tatoeba test only: no selection split (no layers to choose)
    stored = [r for r in Store(out).records() if r.unit.model == CharNgramModel().key]
    assert len(stored) == 6
    for rec in stored:
        assert rec.unit.task == "tatoeba" and rec.unit.split == "test" and rec.unit.layer is None
        assert rec.model["control"] == "charngram" and rec.model["fitted_on"] == FITTED_ON
        assert rec.model["parent"]["id"] == model_id(records)
        assert rec.config["fitted_on"] == FITTED_ON and rec.config["analyzer"] == "char_wb"
        assert rec.n_examples == 1000 and 0.0 <= rec.metrics["accuracy"] <= 100.0


def model_id(records):
    return next(r.model["id"] for r in records if "control" not in r.model)


def test_other_task_types_are_skipped_with_one_line(charngram_run):
    _, records, lines = charngram_run
    assert [line for line in lines if "charngram skipped" in line] == [
        "  note: control charngram skipped for alignment: it scores sentence retrieval only (Tatoeba, FLORES, BUCC, "
        "heldout)"]
    assert not [r for r in records if r.unit.task == "alignment" and r.unit.model == CharNgramModel().key]
    assert [r for r in records if r.unit.task == "alignment" and "random-init" in r.unit.model]


def test_string_similarity_finds_latin_script_translations_not_other_scripts(charngram_run):
    _, records, _ = charngram_run
    acc = {lang: rec.metrics["accuracy"] for lang, rec in baseline(records).items()}
    assert min(acc[lang] for lang in LATIN) > 10.0  # names, numbers and cognates, shared spelling
    assert max(acc[lang] for lang in OTHER) < 5.0  # almost nothing of a sentence survives another script
    assert min(acc[lang] for lang in LATIN) > 3 * max(acc[lang] for lang in OTHER)


def test_rerun_reuses_the_baseline(data_root, charngram_run):
    from xeval.run.options import RunOptions
    from xeval.run.runner import RunSummary, run

    out, records, _ = charngram_run
    summary = RunSummary()
    again = run(RunOptions(model=str(tiny_model(data_root)), suite="probes", tasks=["tatoeba"], langs=list(LATIN),
                           data=str(data_root), out=str(out), device="cpu", layers="all", control="charngram",
                           threads=1), echo=lambda text: None, summary=summary)
    assert summary.computed == 0
    assert {lang: r.metrics for lang, r in baseline(again).items()} == \
        {lang: r.metrics for lang, r in baseline(records).items() if lang in LATIN}


def test_report_and_printed_tables_show_the_row(charngram_run):
    from xeval.report.build import build
    from xeval.report.console_tables import format_tables
    from xeval.report.formats import markdown
    from xeval.report.sweep_summary import sweep_lines
    from xeval.report.tables.base import Results

    _, records, _ = charngram_run
    acc = {lang: rec.metrics["accuracy"] for lang, rec in baseline(records).items()}
    mean = sum(acc.values()) / len(acc)
    tables = {t.key: t for t in build(Results(records), "all")}
    languages = tables["languages:tatoeba"]
    rows = list(dict.fromkeys(languages.mean.index.get_level_values("model")))
    assert len(rows) == 3 and rows[1].startswith(rows[0].split(" · ")[0] + " (random init) · L")
    assert rows[2] == "char n-gram TF-IDF"  # after the model and its random-init control, no layer in its label
    assert languages.mean.loc[("char n-gram TF-IDF", "accuracy_en_xx"), "avg"] == pytest.approx(mean)
    assert "char n-gram TF-IDF" in languages.controls
    sweep = tables["layers:tatoeba"]
    assert list(sweep.mean.loc["char n-gram TF-IDF"]) == pytest.approx([mean] * len(sweep.mean.columns))
    text = markdown.markdown_table(languages)
    assert "| char n-gram TF-IDF |" in text and "never on a pair" in text
    printed = format_tables(records)
    [line] = [x for x in printed.splitlines() if x.startswith("avg (char n-gram TF-IDF, no layers)")]
    assert line.split()[-3:] == [f"{mean:.1f}"] * 3  # its one number under each of the tiny model's 3 layers
    assert any(f"char n-gram TF-IDF (no layers): test accuracy {mean:.1f}" in line for line in sweep_lines(records))
