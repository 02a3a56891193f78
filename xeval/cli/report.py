"""``xeval report RUN [RUN …]``: paper tables (Markdown, LaTeX, CSV), figures, or a baseline file for compare."""

from __future__ import annotations

import sys
from pathlib import Path

from xeval.base.atomic import check_output, write_text
from xeval.base.errors import UserError
from xeval.cli._args import comma_list
from xeval.report import plots
from xeval.report.build import TABLES, build
from xeval.report.formats import render
from xeval.report.gate import baseline_document, dump_baseline
from xeval.report.tables.base import CHOSEN, Results
from xeval.results.store import load_records

NAME = "report"
HELP = "tables (per language, XTREME summary, transfer gap, layers) and figures from result records"


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run folders (xeval run --out) or record files")
    parser.add_argument("--table", choices=[*TABLES, "all"], default=None,
                        help="which table(s) (ci: 95%% bootstrap confidence intervals per task and language; correlation: Spearman "
                             "between probes and transfer across languages; typology: transfer gap by family, script, "
                             "word order; tokenizer: fertility, unk and byte-fallback rates per language; neutrality: language ID, CKA and centred "
                             "retrieval per layer); default: all that the runs can fill (none when only --plot is given, "
                             "without --out)")
    parser.add_argument("--format", choices=["md", "latex", "csv", "baseline"], default="md",
                        help="md (GitHub Markdown), latex (booktabs floats to \\input into a paper; --standalone for "
                             "a document), csv, or baseline (the JSON that xeval compare checks against)")
    parser.add_argument("--standalone", action="store_true",
                        help="latex: a whole document that pdflatex compiles as is, instead of the floats only")
    parser.add_argument("--text-width", default=None, metavar="column|page|PT",
                        help="latex: the width tables must fit at 9 pt: column (ACL's 219 pt column, a table float), "
                             "page (455 pt, a table* float across both columns) or a width in pt (a table; default "
                             "345, LaTeX article's); a wider table gets its ± under the numbers, is turned or cut into "
                             "pieces stacked in its one float, never shrunk")
    parser.add_argument("--decimals", choices=["align", "siunitx", "auto"], default="align",
                        help="latex: numbers aligned on the point with r@{.}l column pairs (align, default: no "
                             "package), with siunitx S columns (the paper loads siunitx), or auto (siunitx where "
                             "this machine's TeX has it)")
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                        help="row label OLD (or a model key) shown as NEW in tables and figures (repeatable)")
    parser.add_argument("--order", metavar="M1,M2",
                        help="the models' rows in this order (labels or keys; the others follow in store order)")
    parser.add_argument("--out", metavar="FILE", help="write here (atomically) instead of printing")
    parser.add_argument("--plot", action="append", choices=list(plots.KINDS), default=[],
                        help="figure(s) to draw, PNG + PDF: " + " | ".join(plots.KINDS) + " (repeatable)")
    parser.add_argument("--figure-width", choices=sorted(plots.WIDTHS), default="column",
                        help="figures exactly a paper's column (3.3 in, default) or page (6.9 in) wide, text >= 7 pt")
    parser.add_argument("--figure-tasks", metavar="T1,T2",
                        help="figures: only these tasks' panels (names as in the records, or pos, ner, ...)")
    parser.add_argument("--figure-columns", type=int, metavar="N",
                        help="figures: panels a row (default: as many as fit the width, in a grid)")
    parser.add_argument("--figure-titles", action="store_true",
                        help="figures: descriptive titles (default none: the caption belongs to the paper; a "
                             "figure of several panels names each panel's task)")
    parser.add_argument("--figures", metavar="DIR", default=None,
                        help="folder for figures (<DIR>/<kind>.png|pdf); default: beside --out, else figures/")
    parser.add_argument("--split", help="report this split (default: test where present)")
    parser.add_argument("--layer", default=CHOSEN, metavar="K|selection-split",
                        help="probes: the hidden_states index shown in per-language tables, or selection-split "
                             "(default): the layer chosen on the selection split (else the card's fixed layer, else "
                             "the last; never the reported split's best)")
    parser.add_argument("--model", help="baseline: the model to take when the runs hold several")
    parser.add_argument("--baseline-metrics", choices=["all", "headline"], default="all",
                        help="baseline: every metric of every record (default) or the headline metric of each task "
                             "(the one tables show): one entry per task, language, split and layer")
    parser.add_argument("--title", default="xeval report", help="heading of a Markdown report")
    parser.add_argument("--partial", action="store_true",
                        help="report a run whose shards are not all finished (or were run with other settings); "
                             "what is missing is printed as a note instead of failing")


def _renames(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        old, eq, new = item.partition("=")
        if not eq or not old.strip() or not new.strip():
            raise UserError(f"--rename: expected OLD=NEW, found {item!r}")
        out[old.strip()] = new.strip()
    return out


def parse_layer(text: str):
    """--layer of report and compare --significance: a layer index or ``selection-split`` (the layer chosen on the
    selection split); ``best``, its old name, still works with a deprecation line (it never meant the reported
    split's best)."""
    if text == "best":
        print(f"xeval: warning: --layer best is deprecated; use --layer {CHOSEN} (the layer chosen on the selection "
              "split)", file=sys.stderr)
        return CHOSEN
    if text == CHOSEN:
        return CHOSEN
    try:
        return int(text)
    except ValueError:
        raise UserError(f"--layer: expected a layer index or '{CHOSEN}', found {text!r}") from None


def run(args) -> int:
    if args.out:
        check_output(args.out, "--out", folder=False)
    if args.plot and args.figures:
        check_output(args.figures, "--figures", folder=True)
    records = load_records(args.runs, partial=args.partial)
    if args.format == "baseline":
        doc = baseline_document(records, model=args.model, sources=args.runs, metrics=args.baseline_metrics)
        _emit(dump_baseline(doc), args.out)
        return 0
    results = Results(records, split=args.split, layer=parse_layer(args.layer), rename=_renames(args.rename),
                      order=comma_list(args.order) if args.order else None)
    # tables unless only figures were asked for (--plot without --table and without --out)
    which = args.table or ("all" if args.out or not args.plot else None)
    if which:
        built = build(results, which)
        if not built:
            raise UserError("the runs hold nothing any table can show")
        def code(text) -> str:  # a code span: nothing inside is Markdown or HTML, and no backtick can end it
            return "`" + str(text).replace("`", "'") + "`"

        models = ", ".join(code(m) for m in dict.fromkeys(results.long["model"]))
        preamble = [f"Runs: {', '.join(code(r) for r in args.runs)}. Models: {models}.",
                    "Scores in points (%); seeds averaged first, then languages, then tasks."]
        _emit(render.render(built, args.format, heading=args.title if which == "all" else None,
                            preamble=preamble, standalone=args.standalone, text_width=args.text_width,
                            decimals=args.decimals), args.out)
    if args.plot:
        folder = Path(args.figures) if args.figures else (Path(args.out).parent if args.out else Path("figures"))
        for kind in dict.fromkeys(args.plot):
            for path in plots.plot(results, kind, folder / kind, width=args.figure_width,
                                   tasks=comma_list(args.figure_tasks) if args.figure_tasks else None,
                                   columns=args.figure_columns, titles=args.figure_titles):
                print(f"wrote {path}", file=sys.stderr)
    return 0


def _emit(text: str, out: str | None) -> None:
    if out:
        write_text(out, text)
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
