"""``xeval compare --baseline FILE --current RUN``: exit 1 when a number fell below its baseline (CI's gate)."""

from __future__ import annotations

import sys

from xeval.atomic import write_text
from xeval.errors import UserError
from xeval.report.compare import baseline_entries, compare, parse_tolerances, read_baseline, render
from xeval.results import load_records

NAME = "compare"
HELP = "check a run against a baseline: exit 1 and list what regressed or went missing"


def add_arguments(parser) -> None:
    parser.add_argument("--baseline", required=True, metavar="FILE",
                        help="baseline JSON (xeval report RUN --format baseline) or a run folder")
    parser.add_argument("--current", required=True, nargs="+", metavar="RUN", help="run folder(s) or record files")
    parser.add_argument("--tolerance", type=float, default=0.0, metavar="T",
                        help="allowed drop in points before a value counts as regressed (default 0)")
    parser.add_argument("--metric-tolerances", metavar="M=T,…",
                        help="per-metric tolerances overriding --tolerance, e.g. aer=2,acc_mean=1 "
                             "(a key may be task:metric)")
    parser.add_argument("--model", help="the model to check when the current runs hold several")
    parser.add_argument("--out", metavar="FILE", help="also write the comparison (Markdown) here")
    parser.add_argument("--show-ok", action="store_true", help="list the values within tolerance too")


def run(args) -> int:
    if args.tolerance < 0:
        raise UserError(f"--tolerance cannot be negative, found {args.tolerance:g}")
    baseline, baseline_model = read_baseline(args.baseline)
    current, current_model = baseline_entries(load_records(args.current), model=args.model)
    result = compare(baseline, current, args.tolerance, parse_tolerances(args.metric_tolerances))
    result.models = (baseline_model, current_model)
    text = render(result, show_ok=args.show_ok)
    sys.stdout.write(text)
    if args.out:
        write_text(args.out, text)
    return 1 if result.failed else 0
