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
