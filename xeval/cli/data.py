"""``xeval data check [--data DIR] [--suite S] [--tasks T,..]``: validate every file a suite needs."""

from __future__ import annotations

import sys

NAME = "data"
HELP = "check the data a suite needs (every file read and validated; a table of example counts)"


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="data_verb", metavar="SUBVERB", required=True)
    check = sub.add_parser("check", help="read every file a suite needs and print a table of example counts")
    check.add_argument("--data", default=None, metavar="DIR|hub",
                       help="data folder (an XTREME download or the shared layout), 'hub', or 'hub:DIR' "
                            "(default: $XEVAL_DATA, else a shared/data folder beside the working directory)")
    check.add_argument("--suite", default="xtreme-mini", metavar="NAME|FILE",
                       help="suite name or suite YAML file to check (default: xtreme-mini)")
    check.add_argument("--tasks", default=None, metavar="T1,T2", help="comma-separated subset of the suite's tasks")
    check.add_argument("--seed", type=int, default=0, metavar="SEED", help="subsampling seed (default 0, as runs use)")


def run(args) -> int:
    from xeval.cards.catalog import load_suite
    from xeval.data.check import check_suite, format_table
    from xeval.data.sources import DataRoot

    suite = load_suite(args.suite)
    root = DataRoot.resolve(args.data)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    report = check_suite(suite, root, tasks=tasks, seed=args.seed)
    print(f"suite {suite.name}: data {root.describe()}")
    print(format_table(report))
    errors = report.errors
    n = len(report.rows)
    if errors:
        for row in errors:
            print(f"xeval data: error: {row.error}", file=sys.stderr)
        print(f"xeval data: {len(errors)} of {n} sources failed", file=sys.stderr)
        return 2
    print(f"ok: {n} sources, {sum(r.examples or 0 for r in report.rows)} examples")
    return 0
