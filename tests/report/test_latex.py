"""Paper-ready LaTeX (issue 17, item 1): an XTREME-scale store (3 models x 3 seeds x every XTREME language)
compiled with pdflatex at the article's text width, with no text below 8 pt and nothing overfull; fragments,
labels, minus signs, decimal alignment, ± over seeds, --rename and --order."""

import math
import re
import shutil
import subprocess

import pytest

from tests.helpers.report_records import A, B, transfer_records, write_run, xtreme_scale_records
from xeval.cli import main
from xeval.report.build import build
from xeval.report.formats import latex, render
from xeval.report.tables.base import Results


@pytest.fixture(scope="module")
def paper():
    return Results(xtreme_scale_records())


@pytest.fixture(scope="module")
def paper_tables(paper):
    """The paper's tables (summary, gap, layers, per language); the analyses' tables have their own tests."""
    return [t for kind in ("summary", "gap", "layers", "languages") for t in build(paper, kind)]


def _compile(tex: str, folder):
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex not installed (apt-get install texlive-latex-base texlive-latex-recommended)")
    (folder / "t.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=folder,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return folder / "t.pdf", (folder / "t.log").read_text(encoding="latin-1")


def _char_sizes(pdf) -> dict[float, int]:
    """Effective font size of every character drawn (pdfminer applies the text and transformation matrices, so a
    scaled \\resizebox table shows up at its printed size)."""
    pytest.importorskip("pdfminer", reason="pip install pdfminer.six (dev extra)")
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTChar

    sizes: dict[float, int] = {}

    def walk(item):
        if isinstance(item, LTChar):
            size = round(item.size, 1)  # upright text: its height at the printed size
            sizes[size] = sizes.get(size, 0) + 1
        for child in getattr(item, "_objs", []) or []:
            walk(child)

    for page in extract_pages(str(pdf)):
        walk(page)
    return sizes


def test_xtreme_scale_latex_compiles_with_no_text_below_8pt(paper_tables, tmp_path):
    tex = render.render(paper_tables, "latex", standalone=True)
    assert r"\resizebox" not in tex
    pdf, log = _compile(tex, tmp_path)
    overfull = re.findall(r"Overfull \\hbox \((\d+\.\d+)pt too wide\)", log)
    assert not overfull, overfull  # every tabular fits the text width (345 pt)
    sizes = _char_sizes(pdf)
    assert sum(sizes.values()) > 5000  # the tables are really there
    assert min(sizes) >= 7.9, sorted(sizes.items())  # \footnotesize (8 pt) is the smallest size set


def test_wide_language_tables_are_transposed_and_split(paper):
    tables = {t.key: t for t in build(paper, "languages")}
    pos = latex.fit(tables["languages:udpos"])
    assert [r[0] for r in pos.rows][:2] == ["en", "af"] and len(pos.rows) == 34  # 33 languages + avg as rows
    assert [h for h, _ in pos.groups] == ["XLM-R base", "InfoXLM base", "XLM-E base"]  # a band per model
    chunks = latex.column_chunks(pos)
    assert len(chunks) > 1 and sorted(i for c in chunks for i in c) == list(range(len(pos.columns)))
    text = latex.latex_table(tables["languages:udpos"])
    # 34 rows fit one page: one float per column group (a model's four metrics), continued
    assert text.count(r"\begin{table}") == len(chunks) == 3 and text.count("(continued)") == 2
    # PAN-X: 40 languages + avg, each with its ± on a line of its own: the rows continue over several floats
    panx = latex.fit(tables["languages:panx"])
    lines = len(panx.rows) * panx.lines_per_row()
    assert panx.std_below and lines > latex.MAX_ROWS
    floats = latex.latex_table(tables["languages:panx"]).count(r"\begin{table}")
    assert floats == len(latex.column_chunks(panx)) * math.ceil(lines / latex.MAX_ROWS)
    assert text.count(r"\label{tab:languages-udpos}") == 1


def test_fragment_labels_minus_alignment_and_seed_std(paper, paper_tables):
    tex = render.render(paper_tables, "latex")
    assert not tex.lstrip().startswith(r"\documentclass") and r"\begin{document}" not in tex  # a fragment
    labels = re.findall(r"\\label\{(tab:[a-z0-9-]+)\}", tex)
    assert "tab:summary" in labels and "tab:gap" in labels and len(labels) == len(set(labels))
    gap = latex.latex_table(next(t for t in build(paper, "gap")))
    assert "$-$" in gap and not re.search(r"(?<![\w$])-\d", gap)  # negative gaps with a real minus
    summary = latex.latex_table(build(paper, "summary")[0], 900)  # wide enough to fit as it is
    assert r"r@{.}l" in summary  # integer and fraction columns: points aligned
    rows = [line for line in summary.splitlines() if line.startswith("XLM-R base")]
    assert sum(row.count(r"\pm") for row in rows) == 11  # 3 seeds: ± on POS, NER, 3 x F1/EM, XNLI, PAWS-X, Avg
    assert "-{}-layer" in tex or "--layer" not in tex  # "--layer" in a note stays two hyphens


def test_std_goes_under_the_numbers_when_that_takes_fewer_pieces(paper_tables, tmp_path):
    summary = paper_tables[0]
    beside = latex.grid(summary)
    assert latex.fit(summary, 455).std_below  # three seeds' ± beside every cell would take a third piece
    assert len(latex.column_chunks(latex.fit(summary, 455), 455)) < len(latex.column_chunks(beside, 455))
    text = latex.latex(paper_tables[:1], standalone=True, text_width=455)
    assert r"\multicolumn{2}{c}{\footnotesize$\pm$" in text
    pdf, log = _compile(text, tmp_path)
    assert "Overfull" not in log and min(_char_sizes(pdf)) >= 7.9


def test_escape_minus_and_double_hyphen():
    assert latex.escape("a_b & 50% −3 --layer †") == r"a\_b \& 50\% $-$3 -{}-layer \dag{}"


def test_latex_escapes_special_characters():
    assert latex.escape("a_b & 50% #1 {x} ~^\\") == (
        r"a\_b \& 50\% \#1 \{x\} \textasciitilde{}\textasciicircum{}\textbackslash{}")


def test_rename_and_order_rows(tmp_path, capsys):
    run = write_run(tmp_path / "r", transfer_records(A) + transfer_records(B, offset=1.0))
    assert main(["report", str(run), "--table", "summary", "--rename", "alpha=XLM-R", "--rename",
                 "beta@bbbbbbbbbbbb=Ours", "--order", "Ours,alpha"]) == 0
    rows = [line.split("|")[1].strip() for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert rows == ["model", "Ours", "XLM-R"]
    assert main(["report", str(run), "--rename", "gamma=G"]) == 2
    assert "--rename: no model 'gamma'" in capsys.readouterr().err
    assert main(["report", str(run), "--rename", "alpha=beta"]) == 2  # two rows would share a label


@pytest.fixture(scope="module")
def seven_tasks():
    """The summary of 3 models x 3 seeds x the seven fine-tuning tasks on every XTREME language (2 bands of header,
    ten numbers a row with their ± over seeds)."""
    records = [r for r in xtreme_scale_records() if r.unit.task not in ("tatoeba", "bucc")]
    return build(Results(records), "summary")[0]


def _has_siunitx() -> bool:
    return latex.resolve_decimals("auto")


@pytest.mark.parametrize("decimals", ["align", "siunitx"])
@pytest.mark.parametrize("width, env", [("column", "table"), ("page", "table*")])
def test_a_3_model_7_task_summary_is_one_float_at_column_and_page_width(seven_tasks, tmp_path, width, env, decimals):
    """Issue 26 item 6: compiled as it is (no hand-editing), the summary is ONE float, ``table*`` at page width,
    with nothing overfull and no text below 8 pt; siunitx S columns where asked for."""
    if decimals == "siunitx" and not _has_siunitx():
        pytest.skip("siunitx not installed (apt-get install texlive-science)")
    tex = render.render([seven_tasks], "latex", standalone=True, text_width=width, decimals=decimals)
    assert tex.count(rf"\begin{{{env}}}") == 1 and "(continued)" not in tex
    assert (r"\begin{table}" not in tex) if env == "table*" else (r"\begin{table*}" not in tex)
    assert ("S[table-format=2.1]" in tex) == (decimals == "siunitx") and (r"r@{.}l" in tex) == (decimals == "align")
    for header in ("POS", "NER", "XQuAD", "MLQA", "TyDiQA", "XNLI", "PAWS-X"):
        assert header in tex
    pdf, log = _compile(tex, tmp_path)
    assert "Overfull" not in log, re.findall(r"Overfull.*", log)
    assert min(_char_sizes(pdf)) >= 7.9
    fragment = render.render([seven_tasks], "latex", text_width=width, decimals=decimals)
    assert fragment.count(rf"\begin{{{env}}}") == 1 and r"\documentclass" not in fragment


def test_columns_of_tasks_that_never_ran_are_left_out():
    records = transfer_records(A, skip=("tydiqa", "pawsx")) + transfer_records(B, skip=("tydiqa", "pawsx"))
    [summary] = build(Results(records), "summary")
    assert "TyDiQA F1" in summary.mean.columns  # the table keeps its layout; the renderers leave it out
    for fmt in ("latex", "md"):
        text = render.render([summary], fmt)
        assert "TyDiQA" not in text and "PAWS-X" not in text and "Avg (7 tasks) |" not in text
        assert "XQuAD" in text and "XNLI" in text
    assert r"\multicolumn{4}{c}{\begin{tabular}[b]{@{}c@{}}Sentence" not in render.render([summary], "latex")
