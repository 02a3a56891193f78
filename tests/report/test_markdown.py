"""Markdown, LaTeX (compiled with pdflatex when installed, a structural check always), CSV, figures, the CLI."""

import io
import re
import shutil
import subprocess

import pandas as pd
import pytest

from tests.helpers.report_records import A, B, probe_records, transfer_records, write_run
from xeval.cli import main
from xeval.report.build import build
from xeval.report.formats import render
from xeval.report.plots import plot
from xeval.report.tables.base import Results


@pytest.fixture(scope="module")
def results():
    return Results(transfer_records(A, seeds=(1, 2)) + transfer_records(B, offset=1.0, skip=("tydiqa",))
                   + probe_records(A) + probe_records(B, best_layer=1))


def test_markdown_summary_renders_pairs_bold_and_empty_cells(results):
    text = render.render(build(results, "summary"), "md")
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines[0] == ("| model | POS F1 | NER F1 | XQuAD F1 / EM | MLQA F1 / EM | TyDiQA F1 / EM | XNLI Acc "
                        "| PAWS-X Acc | Tatoeba Acc | Avg (7 tasks) |")
    assert lines[1].startswith("|:---|---:")
    assert all(line.count("|") == lines[0].count("|") for line in lines)  # every row has every cell
    # en/de/zh only: every cell is marked, and so is the Avg (not the XTREME score)
    # alpha has two seeds (each 0.5 below and above the mean): ± 0.7 = std(ddof=1) of the two per-seed cells;
    # Tatoeba at the last layer (no selection split in these records): 42.0 for both models, so no bold
    assert lines[2] == ("| alpha | 80.0 ± 0.7† | 70.0 ± 0.7† | 60.0 ± 0.7 / 50.0 ± 0.7† | 50.0 ± 0.7 / 40.0 ± 0.7† "
                        "| 40.0 ± 0.7 / 30.0 ± 0.7† | 75.0 ± 0.7† | 85.0 ± 0.7† | 42.0† | 63.6 ± 0.7† |")
    assert lines[3] == ("| beta | **81.0**† | **71.0**† | **61.0** / **51.0**† | **51.0** / **41.0**† |  | **76.0**† "
                        "| **86.0**† | 42.0† |  |")
    assert ("<sub>† averaged over N of M XTREME languages per task: POS 3 of 33, NER 3 of 40, XQuAD 3 of 11, "
            "MLQA 3 of 7, TyDiQA 1 of 9 (+2 not in XTREME), XNLI 3 of 15, PAWS-X 3 of 7, Tatoeba 2 of 36</sub><br>"
            ) in text


def test_latex_and_csv_mark_partial_cells(results):
    tex = render.render(build(results, "summary"), "latex")
    # the ± goes on the line under the numbers (the table takes fewer pieces so); the dagger stays with the number
    assert "alpha & 80 & 0\\dag{}" in tex and "\\footnotesize$\\pm$0.7" in tex
    assert r"\dag{} averaged over N of M" in tex
    assert "†" not in tex
    summary = pd.read_csv(io.StringIO(render.render(build(results, "summary"), "csv")), index_col=0)
    assert summary.loc["alpha", "POS F1"] == pytest.approx(80.0)  # values stay numbers
    assert summary.loc["alpha", "POS F1 marks"] == "†" and pd.isna(summary.loc["beta", "TyDiQA F1 marks"])


def test_markdown_language_table_shows_seed_std(results):
    text = render.render(build(results, "languages"), "md")
    assert "| alpha | f1 | 90.0 ± 0.7 | 80.0 ± 0.7 | 70.0 ± 0.7 | 80.0 ± 0.7 |" in text
    assert "seeds: 2 (mean ± std over seeds)" in text


def _check_latex_structure(tex: str) -> None:
    """What pdflatex would trip over: balanced braces and environments, rows as wide as their column spec."""
    assert tex.startswith(r"\documentclass") and tex.rstrip().endswith(r"\end{document}")
    assert r"\resizebox" not in tex
    assert r"\usepackage{booktabs}" in tex
    assert tex.count("{") - tex.count(r"\{") == tex.count("}") - tex.count(r"\}")
    for env in ("table", "tabular", "document"):
        assert tex.count(rf"\begin{{{env}}}") == tex.count(rf"\end{{{env}}}")
    for block in re.findall(r"\\begin\{tabular\}\{([lrc@{}.,\\/]+)\}\n(.*?)\\end\{tabular\}", tex, flags=re.S):
        spec, body = block
        spec = re.sub(r"@\{[^}]*\}", "", spec.replace(r"@{\,/\,}", ""))  # r@{.}l: two columns
        for line in body.splitlines():
            if line.endswith(r"\\") and r"\multicolumn" not in line:
                cells = re.sub(r"\\begin\{tabular\}.*?\\end\{tabular\}", "X", line)  # stacked headers
                assert cells.count(" & ") + 1 == len(spec), line
    assert "_" not in re.sub(r"\\_", "", tex.replace(r"\textbackslash{}", ""))  # every underscore escaped
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"\textbf{" in tex


def test_latex_compiles(results, tmp_path):
    tex = render.render(build(results, "all"), "latex", standalone=True)
    _check_latex_structure(tex)
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex not installed (apt-get install texlive-latex-base texlive-latex-recommended); "
                    "the structural check above passed")
    (tmp_path / "report.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "report.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (tmp_path / "report.pdf").stat().st_size > 1000
    assert "Overfull" not in proc.stdout  # wide tables are transposed or split to the text width


def test_csv_single_table_is_wide_and_several_are_tidy(results):
    summary = pd.read_csv(io.StringIO(render.render(build(results, "summary"), "csv")), index_col=0)
    assert summary.loc["alpha", "Avg (7 tasks)"] == pytest.approx(445 / 7, abs=1e-3)
    assert pd.isna(summary.loc["beta", "Avg (7 tasks)"])
    tidy = pd.read_csv(io.StringIO(render.render(build(results, "languages"), "csv")))
    assert {"table", "model", "metric", "column", "mean", "std"} <= set(tidy.columns)
    row = tidy[(tidy.table == "languages:udpos") & (tidy.model == "alpha") & (tidy.metric == "f1")
               & (tidy.column == "de")]
    assert row["mean"].item() == pytest.approx(80.0)


@pytest.mark.parametrize("kind", ["layers", "languages", "gap"])
def test_plots_write_png_and_pdf(results, tmp_path, kind):
    paths = plot(results, kind, tmp_path / f"{kind}.png")
    assert [p.name for p in paths] == [f"{kind}.png", f"{kind}.pdf"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)  # no temp files left


def test_cli_report_tables_plots_and_errors(tmp_path, capsys):
    run_a = write_run(tmp_path / "a", transfer_records(A) + probe_records(A))
    run_b = write_run(tmp_path / "b", transfer_records(B, skip=("xnli",)))
    out = tmp_path / "report" / "summary.tex"
    assert main(["report", str(run_a), str(run_b), "--table", "summary", "--format", "latex", "--out", str(out)]) == 0
    assert out.read_text().startswith("% xeval report")  # a fragment for \input
    assert main(["report", str(run_a), "--table", "summary", "--format", "latex", "--standalone", "--out",
                 str(out)]) == 0
    assert out.read_text().startswith(r"\documentclass")
    assert main(["report", str(run_a), "--plot", "layers", "--figures", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "layers.png").is_file() and (tmp_path / "fig" / "layers.pdf").is_file()
    capsys.readouterr()
    assert main(["report", str(run_a)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# xeval report") and "## XTREME summary" in text and "## Chosen layer per probe" in text
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "expected a run folder" in capsys.readouterr().err
    assert main(["report", str(run_b), "--table", "layers"]) == 2
