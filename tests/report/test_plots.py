"""Paper-ready figures (issue 17, item 2): no Type 3 font in any PDF (pdffonts), exactly a column's or a page's
width with no text below 7 pt, the Okabe-Ito palette, error bars where a value has two seeds or more."""

import re
import shutil
import subprocess

import pytest

from tests.helpers.report_records import A, B, probe_records, transfer_records, xtreme_scale_records
from xeval.report import plots
from xeval.report.tables.base import Results


@pytest.fixture(scope="module")
def paper():
    return Results(xtreme_scale_records())


def _fonts(pdf) -> list[str]:
    pdffonts = shutil.which("pdffonts")
    if pdffonts is None:
        pytest.skip("pdffonts not installed (apt-get install poppler-utils)")
    out = subprocess.run([pdffonts, str(pdf)], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[2:]  # below the header and its rule


def _page_width_inches(pdf) -> float:
    box = re.search(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf.read_bytes())
    return float(box.group(1)) / 72


def _smallest_text(pdf) -> float:
    """The smallest font size a text operator sets (``/F1 8 Tf``); matplotlib draws at scale 1 (rotation through
    ``cm`` only), so the operand is the printed size. Needs the PDF written uncompressed."""
    sizes = [float(x) for x in re.findall(rb"/F\d+ ([\d.]+) Tf", pdf.read_bytes())]
    assert sizes, "no text found in the PDF"
    return min(sizes)


@pytest.mark.parametrize("width, inches", [("column", 3.3), ("page", 6.9)])
@pytest.mark.parametrize("kind", ["layers", "languages", "gap"])
def test_figures_embed_truetype_at_the_width_asked_with_text_of_7pt_or_more(paper, tmp_path, kind, width, inches):
    import matplotlib

    with matplotlib.rc_context({"pdf.compression": 0}):  # text operators readable
        png, pdf = plots.plot(paper, kind, tmp_path / kind, width=width)
    fonts = _fonts(pdf)
    assert fonts and not [line for line in fonts if "Type 3" in line], fonts
    assert all("TrueType" in line for line in fonts), fonts  # Type 42 (CID TrueType)
    assert _page_width_inches(pdf) == pytest.approx(inches, abs=0.01)
    assert _smallest_text(pdf) >= 6.95


def test_error_bars_where_seeds_are_two_or_more_and_the_palette(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    results = Results(transfer_records(A, seeds=(1, 2, 3)) + transfer_records(B, offset=1.0)
                      + probe_records(A))
    kept = []
    monkeypatch.setattr(plt, "close", kept.append)
    plots.plot(results, "languages", tmp_path / "languages")
    plots.plot(results, "gap", tmp_path / "gap")
    monkeypatch.undo()
    try:
        languages, gap = kept
        pos = next(ax for ax in languages.axes if ax.get_title().startswith("POS"))
        by_label = {c.get_label(): c for c in pos.containers if c.get_label()}
        assert by_label["alpha"].errorbar is not None  # 3 seeds: ± std bars
        assert by_label["beta"].errorbar is None  # 1 seed: none
        from matplotlib.container import BarContainer

        bars = {c.get_label(): c for c in gap.axes[0].containers if isinstance(c, BarContainer)}
        assert bars["alpha"].errorbar is not None and bars["beta"].errorbar is None
        # (alpha's per-seed gaps are equal, each seed shifting every language alike: a bar of ± 0 is still drawn)
        colours = {label: c.patches[0].get_facecolor()[:3] for label, c in bars.items()}
        from matplotlib.colors import to_rgb

        assert colours["alpha"] == pytest.approx(to_rgb(plots.OKABE_ITO[0]))
        assert colours["beta"] == pytest.approx(to_rgb(plots.OKABE_ITO[1]))
    finally:
        for fig in kept:
            plt.close(fig)


def test_gap_std_is_the_std_of_the_per_seed_gaps():
    from tests.helpers.report_records import rec

    records = []
    for seed, (en, de, fr) in enumerate([(80.0, 60.0, 50.0), (82.0, 60.0, 52.0), (78.0, 62.0, 50.0)], start=1):
        for lang, value in (("en", en), ("de", de), ("fr", fr)):
            records.append(rec(A, "xnli", lang, {"accuracy": value}, seed=seed))
    # per-seed gaps: 80 - 55 = 25, 82 - 56 = 26, 78 - 56 = 22 -> sample std 2.0817
    assert plots.gap_std(Results(records)) == {("alpha", "XNLI"): pytest.approx(2.081666, abs=1e-5)}


def _kept_figure(monkeypatch, results, kind, tmp_path, **kwargs):
    import matplotlib.pyplot as plt

    kept = []
    monkeypatch.setattr(plt, "close", kept.append)
    plots.plot(results, kind, tmp_path / kind, **kwargs)
    monkeypatch.undo()
    return kept[0]


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_language_panels_are_a_grid_not_one_tall_column(paper, tmp_path, monkeypatch):
    """Issue 26 item 7: nine tasks at page width in rows of three panels (were one column 8.2 in tall);
    --figure-columns chooses."""
    fig = _kept_figure(monkeypatch, paper, "languages", tmp_path, width="page")
    try:
        lefts = {round(ax.get_position().x0, 2) for ax in _panels(fig)}
        assert len(_panels(fig)) == 9 and len(lefts) == 3
        # tasks of few languages side by side, a task of many in a row of its own: shorter than one column of
        # nine panels (1.9 in each)
        assert fig.get_size_inches()[1] < 9 * 1.9 * 0.8
    finally:
        plots.plt.close(fig)
    fig = _kept_figure(monkeypatch, paper, "languages", tmp_path, width="page", columns=2, tasks=["xquad", "mlqa"])
    try:
        assert len({round(ax.get_position().x0, 2) for ax in _panels(fig)}) == 2
    finally:
        plots.plt.close(fig)


def test_no_titles_by_default_task_names_on_panels_and_titles_when_asked(paper, tmp_path, monkeypatch):
    gap = _kept_figure(monkeypatch, paper, "gap", tmp_path)
    layers = _kept_figure(monkeypatch, paper, "layers", tmp_path, tasks=["tatoeba"])
    titled = _kept_figure(monkeypatch, paper, "gap", tmp_path, titles=True)
    try:
        assert gap.axes[0].get_title() == "" and not gap.texts  # one panel: the caption says what it is
        assert layers.axes[0].get_title() == ""  # one panel (Tatoeba's sweep)
        assert titled.axes[0].get_title().startswith("Cross-lingual transfer gap")
    finally:
        for fig in (gap, layers, titled):
            plots.plt.close(fig)
    fig = _kept_figure(monkeypatch, paper, "languages", tmp_path, width="page")
    try:  # several panels: each named by its task, no more
        assert [ax.get_title() for ax in _panels(fig)][:2] == ["POS (udpos)", "NER (panx)"]
    finally:
        plots.plt.close(fig)


def test_figure_tasks_selects_the_panels(paper, tmp_path, monkeypatch):
    from xeval.base.errors import UserError

    fig = _kept_figure(monkeypatch, paper, "languages", tmp_path, tasks=["pos", "xnli"])
    try:
        assert len(_panels(fig)) == 2
    finally:
        plots.plt.close(fig)
    with pytest.raises(UserError, match="--figure-tasks: no records for 'nope'; the runs have: .*udpos"):
        plots.plot(paper, "languages", tmp_path / "x", tasks=["nope"])


def test_the_selection_split_star_is_drawn_only_where_a_selection_split_ran(tmp_path, monkeypatch):
    def legend_texts(records):
        fig = _kept_figure(monkeypatch, Results(records), "layers", tmp_path)
        try:
            return [t.get_text() for legend in fig.legends for t in legend.get_texts()]
        finally:
            plots.plt.close(fig)

    with_dev = legend_texts(probe_records(A, dev_best=1))
    assert "chosen layer (on dev, FLORES-200)" in with_dev  # Tatoeba's selection split is FLORES-200 dev
    without = legend_texts(probe_records(A))  # no dev records: the reported layer is the last one
    assert not any("chosen layer" in t for t in without)
    assert "reported layer (the last layer; no selection split)" in without
