"""Reports with a random-init control: rows "(random init)" right after the model's, never bold, a dashed line of
the model's colour in the layer-sweep plots, and compare/baseline picking the model rather than its control."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.helpers.report_records import A, B, probe_records, transfer_records, write_run
from xeval.report import plots
from xeval.report.build import build
from xeval.report.formats import markdown
from xeval.report.gate import baseline_entries
from xeval.report.tables.base import Results
from xeval.report.tables.language_table import language_tables
from xeval.report.tables.layer_table import layer_tables, sweeps
from xeval.results.store import Record, Unit

CA = "alpha-random-init@cccccccccccc"


def control_of(records, key=CA, parent=A):
    """The same units under the control's key, scores lowered by 20 points (AER raised): a control's record."""
    out = []
    for r in records:
        metrics = {m: (v + 20 if m == "aer" else v - 20) for m, v in r.metrics.items()}
        out.append(Record(unit=replace(r.unit, model=key), metrics=metrics, n_examples=r.n_examples,
                          model={"control": "random-init", "control_seed": 0, "parent": {"key": parent}}))
    return out


@pytest.fixture
def records():
    # the control first, so the report has to put it after its model
    return (control_of(probe_records(A, best_layer=2, dev_best=2)) + probe_records(A, best_layer=2, dev_best=2)
            + probe_records(B, 1, dev_best=1))


def test_control_rows_follow_their_model_and_are_labelled(records):
    results = Results(records)
    assert results.labels[CA] == "alpha (random init)"
    assert results.control_rows() == {"alpha (random init)": "alpha"}
    sweep = sweeps(results)["tatoeba"]
    assert list(sweep.index) == ["alpha", "alpha (random init)", "beta"]
    assert sweep.loc["alpha (random init)", 2] == pytest.approx(sweep.loc["alpha", 2] - 20)
    best = layer_tables(results)[0]
    assert best.key == "layers:best"
    labels = list(best.mean.index.get_level_values("model"))
    assert labels == ["alpha", "alpha (random init)", "beta"] * 2
    assert best.controls == {"alpha (random init)"}


def test_control_never_bold(records):
    # a control that beats every model is shown, not bolded: bold stays with the best model
    better = control_of(probe_records(A, best_layer=2))
    for r in better:
        r.metrics = {m: (v - 40 if m == "aer" else v + 40) for m, v in r.metrics.items()}
    results = Results(better + probe_records(A, best_layer=2) + probe_records(B, 1))
    table = next(t for t in layer_tables(results) if t.key == "layers:tatoeba")
    mask = table.best_mask()
    assert not mask.loc["alpha (random init)"].any()
    assert mask.loc["alpha", "L2"] and mask.loc["beta", "L1"]
    text = markdown.markdown_table(table)
    assert "| alpha (random init) |" in text and "(random init) = the same architecture" in text


def test_language_tables_show_the_control_at_its_chosen_layer(records):
    [tatoeba] = [t for t in language_tables(Results(records)) if t.key == "languages:tatoeba"]
    models = list(dict.fromkeys(tatoeba.mean.index.get_level_values("model")))
    assert models == ["alpha · L2", "alpha (random init) · L2", "beta · L1"]
    assert tatoeba.controls == {"alpha (random init) · L2"}


def test_no_control_no_change():
    plain = probe_records(A) + probe_records(B, 1)
    tables = build(Results(plain), "all")
    assert all(not t.controls for t in tables)
    assert not any("random init" in note for t in tables for note in t.notes)


def test_layer_plot_draws_the_control_dashed_in_its_models_colour(records):
    fig = plots.plot_layers(Results(records))
    try:
        ax = fig.axes[0]
        lines = {line.get_label(): line for line in ax.get_lines()}
        model, control, other = lines["alpha"], lines["alpha (random init)"], lines["beta"]
        assert control.get_color() == model.get_color() != other.get_color()
        assert control.get_linestyle() == "--" and model.get_linestyle() == "-"
    finally:
        plots.plt.close(fig)


def test_summary_and_gap_rows_for_a_fine_tuned_control():
    # fine-tuning tasks work the same way: the control is one more row
    recs = transfer_records(A) + control_of(transfer_records(A))
    tables = {t.key: t for t in build(Results(recs), "all")}
    assert list(tables["summary"].mean.index) == ["alpha", "alpha (random init)"]
    assert tables["summary"].controls == {"alpha (random init)"}
    assert "alpha (random init)" in tables["gap"].mean.index


def test_baseline_and_compare_take_the_model_not_its_control(records, tmp_path):
    recs = probe_records(A) + control_of(probe_records(A))
    entries, key = baseline_entries(recs)
    assert key == A
    assert len(entries) == len(baseline_entries(probe_records(A))[0])
    assert baseline_entries(recs, model=CA)[1] == CA
    from xeval.cli import main

    run = write_run(tmp_path / "runs", recs)
    assert main(["compare", "--baseline", str(run), "--current", str(run)]) == 0


def test_cli_report_shows_the_control(records, tmp_path, capsys):
    from xeval.cli import main

    run = write_run(tmp_path / "runs", records)
    assert main(["report", str(run), "--table", "layers"]) == 0
    out = capsys.readouterr().out
    assert "| alpha (random init) | tatoeba | accuracy |" in out


# ------------------------------------------------------------------ the char n-gram baseline (no layers)

CN = "charngram@dddddddddddd"


def charngram_of(parent=A, de=20.0, zh=2.0):
    """Tatoeba test records of the baseline beside ``parent``: no layer, no dev split (nothing to choose)."""
    return [Record(unit=Unit(model=CN, task="tatoeba", lang=lang, split="test", seed=0, layer=None,
                             config_hash="0123456789ab"),
                   metrics={"accuracy": v, "accuracy_en_xx": v, "accuracy_xx_en": v - 1}, n_examples=10,
                   model={"control": "charngram", "parent": {"key": parent}})
            for lang, v in (("de", de), ("zh", zh))]


@pytest.fixture
def with_baseline(records):
    return charngram_of() + records  # first in store order: the report puts it after alpha and its control


def test_baseline_row_is_labelled_by_itself_after_the_model_and_its_control(with_baseline):
    results = Results(with_baseline)
    assert results.labels[CN] == "char n-gram TF-IDF"
    [tatoeba] = [t for t in language_tables(results) if t.key == "languages:tatoeba"]
    models = list(dict.fromkeys(tatoeba.mean.index.get_level_values("model")))
    assert models == ["alpha · L2", "alpha (random init) · L2", "char n-gram TF-IDF", "beta · L1"]
    assert tatoeba.controls == {"alpha (random init) · L2", "char n-gram TF-IDF"}
    assert tatoeba.mean.loc[("char n-gram TF-IDF", "accuracy_en_xx"), "avg"] == pytest.approx(11.0)
    assert any("never on a pair" in note for note in tatoeba.notes)
    # a --rename of the model renames its random-init control, not the baseline (it is no model's)
    renamed = Results(with_baseline, rename={"alpha": "A"})
    assert renamed.labels[CA] == "A (random init)" and renamed.labels[CN] == "char n-gram TF-IDF"


def test_baseline_is_a_flat_row_of_the_layer_sweep_and_a_horizontal_line(with_baseline):
    results = Results(with_baseline)
    sweep = sweeps(results)["tatoeba"]
    assert list(sweep.index) == ["alpha", "alpha (random init)", "char n-gram TF-IDF", "beta"]
    assert list(sweep.loc["char n-gram TF-IDF"]) == [11.0] * 4  # its one mean under each of alpha's 4 layers
    assert sweep.attrs["flat"] == {"char n-gram TF-IDF"}
    assert "char n-gram TF-IDF" not in sweeps(results)["alignment"].index  # it ran no alignment
    fig = plots.plot_layers(results)
    try:
        panels = [{line.get_label(): line for line in ax.get_lines()} for ax in fig.axes[:2]]  # alignment, tatoeba
        assert "char n-gram TF-IDF (no layers)" not in panels[0]
        lines = panels[1]
        flat = lines["char n-gram TF-IDF (no layers)"]
        assert set(flat.get_ydata()) == {11.0} and flat.get_linestyle() == ":"
        assert flat.get_color() != lines["alpha"].get_color()
    finally:
        plots.plt.close(fig)


@pytest.mark.parametrize("width", ["column", "page"])
def test_the_layer_legend_names_every_panels_rows_and_fits_the_figure(with_baseline, width):
    """The baseline is drawn in the second panel only (it ran no alignment), and a control and the reported layer's
    rule make long labels: the legend still names the baseline and stays inside the figure (e5-small's page-width
    sweep ran past both edges and left the baseline out)."""
    fig = plots.plot_layers(Results(with_baseline), width=width)
    try:
        [legend] = fig.legends
        texts = [t.get_text() for t in legend.get_texts()]
        assert "char n-gram TF-IDF (no layers)" in texts and "alpha (random init)" in texts
        renderer = fig.canvas.get_renderer()
        box, room = legend.get_window_extent(renderer), fig.get_figwidth() * fig.dpi
        assert box.x0 >= 0 and box.x1 <= room, (box, room)
    finally:
        plots.plt.close(fig)


def test_a_table_notes_only_the_controls_it_shows(with_baseline):
    """The baseline ran Tatoeba only: the alignment sweep shows the random-init control and no baseline row, so it
    explains the one and not the other (e5-small's report explained a row it did not have)."""
    from xeval.report.tables.layer_table import layer_tables

    tables = {t.key: t for t in layer_tables(Results(with_baseline))}
    align, tatoeba = tables["layers:alignment"], tables["layers:tatoeba"]
    assert any("random init" in note for note in align.notes)
    assert not any("never on a pair" in note for note in align.notes)
    assert any("never on a pair" in note for note in tatoeba.notes)
