"""``xeval compare --baseline FILE --current RUN``: exit 1 when a number fell below its baseline (CI's gate)."""

from __future__ import annotations

import sys

from xeval.base.atomic import check_output, write_text
from xeval.base.errors import UserError
from xeval.cli.report import parse_layer
from xeval.report.gate import (
    baseline_entries,
    check_tolerance,
    compare,
    parse_tolerances,
    read_baseline,
    render,
)
from xeval.report.gate_formats import FORMATS
from xeval.report.tables.base import Results
from xeval.report.tables.uncertainty import render_significance, significance
from xeval.results.store import load_records

NAME = "compare"
HELP = ("check a run against a baseline: exit 1 and list what regressed or went missing; or, with "
        "--significance, a paired test per task and language between two models' runs")


def add_arguments(parser) -> None:
    parser.add_argument("pair", nargs="*", metavar="A B",
                        help="with --significance: the runs of model A and of model B (or give --baseline/--current)")
    parser.add_argument("--baseline", metavar="FILE",
                        help="baseline JSON (xeval report RUN --format baseline) or a run folder")
    parser.add_argument("--current", nargs="+", metavar="RUN", help="run folder(s) or record files")
    parser.add_argument("--significance", action="store_true",
                        help="paired permutation test per (task, language) on the stored per-example outcomes, "
                             "Holm-Bonferroni across each task's languages; marks significant cells, exit 0")
    parser.add_argument("--alpha", type=float, default=0.05, help="--significance: level after correction (0.05)")
    parser.add_argument("--baseline-model", metavar="MODEL", help="--significance: the model of A when A's runs hold several")
    parser.add_argument("--layer", default="selection-split",
                        help="--significance, probes: the layer to test (default: the one chosen on the selection "
                             "split)")
    parser.add_argument("--tolerance", type=float, default=0.0, metavar="T",
                        help="allowed drop in points before a value counts as regressed (default 0)")
    parser.add_argument("--tolerance-examples", type=float, default=0.0, metavar="K",
                        help="also allow each number to move by what K of its examples weigh (100*K/n points): "
                             "1 holds across machines and thread counts for the CI checkpoint (docs/gate.md)")
    parser.add_argument("--metric-tolerances", metavar="M=T,…",
                        help="per-metric tolerances overriding --tolerance, e.g. aer=2,acc_mean=1 "
                             "(a key may be task:metric; one the baseline does not have is an error)")
    parser.add_argument("--allow-different", metavar="WHAT,…", default="",
                        help="let these differ from the baseline's without failing: examples (another number of "
                             "evaluated examples), seeds, dtype; by default a number obtained otherwise fails "
                             "as 'unlike' (docs/gate.md)")
    parser.add_argument("--model", help="the model to check when the current runs hold several")
    parser.add_argument("--out", metavar="FILE", help="also write the comparison (in --format) here")
    parser.add_argument("--format", default="markdown", choices=["markdown", "json", "junit"],
                        help="the gate's output: markdown (default), json (schema xeval.compare/1) or junit (JUnit "
                             "XML, a testcase per compared entry, a failure per regression) for CI dashboards")
    parser.add_argument("--show-ok", action="store_true", help="list the values within tolerance too")


def run(args) -> int:
    if args.out:
        check_output(args.out, "--out", folder=False)
    if args.significance:
        return _significance(args)
    if args.pair:
        raise UserError("positional runs A B are for --significance; the regression gate takes --baseline and --current")
    if not args.baseline or not args.current:
        raise UserError("expected --baseline FILE and --current RUN (or --significance A B)")
    check_tolerance(args.tolerance, "--tolerance")
    check_tolerance(args.tolerance_examples, "--tolerance-examples")
    allow = [x.strip() for x in args.allow_different.split(",") if x.strip()]
    baseline, baseline_model, metrics = read_baseline(args.baseline)
    tolerances = parse_tolerances(args.metric_tolerances, baseline)
    # a headline baseline is checked against the current run's headline metrics (the others are not "new")
    current, current_model = baseline_entries(load_records(args.current), model=args.model, metrics=metrics)
    result = compare(baseline, current, args.tolerance, tolerances, allow=allow,
                     tolerance_examples=args.tolerance_examples)
    result.models = (baseline_model, current_model)
    text = render(result, show_ok=args.show_ok) if args.format == "markdown" else FORMATS[args.format](result)
    sys.stdout.write(text)
    if args.out:
        write_text(args.out, text)
    return 1 if result.failed else 0


def _significance(args) -> int:
    if args.format != "markdown":
        raise UserError(f"--format {args.format}: for the regression gate only; --significance writes Markdown")
    runs_a = [args.baseline] if args.baseline else args.pair[:1]
    runs_b = args.current or args.pair[1:]
    if len(args.pair) > 2 or not runs_a or not runs_b:
        raise UserError("--significance: expected two runs, A B (or --baseline A --current B)")
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha: expected a level between 0 and 1, found {args.alpha:g}")
    layer = parse_layer(args.layer)
    records_a, records_b = load_records(runs_a), load_records(runs_b)
    _, model_a = baseline_entries(records_a, model=args.baseline_model)
    _, model_b = baseline_entries(records_b, model=args.model)
    result = significance(Results(records_a, layer=layer), model_a, Results(records_b, layer=layer), model_b,
                          alpha=args.alpha)
    text = render_significance(result)
    sys.stdout.write(text)
    if args.out:
        write_text(args.out, text)
    return 0
