"""``xeval score``: score an XTREME submission folder against a label folder, as XTREME's official scorer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from xeval.cli._args import option

NAME = "score"
HELP = (
    "score predictions in XTREME's submission layout (<task>/test-<lang>.tsv|json) like XTREME's evaluate.py"
)


def add_arguments(parser) -> None:
    parser.add_argument("--predictions", required=True, type=Path, metavar="DIR",
                        help="folder with <task>/test-<lang>.tsv|json")
    parser.add_argument("--labels", required=True, type=Path, metavar="DIR", help="gold labels in the same layout")
    parser.add_argument(
        "--benchmark",
        choices=("xtreme", "xtreme-r"),
        default="xtreme",
        help="task and language lists and groups (default xtreme)",
    )
    option(parser, "--out", old=("--output",), type=Path, default=None, metavar="FILE",
           help="write the scorer's JSON here ('-' prints it to stdout instead of the table)")
    parser.add_argument(
        "--partial",
        action="store_true",
        help="score only the languages that have a label file; such tasks are left out of the "
        "group and overall scores",
    )


def run(args) -> int:
    from xeval.base.atomic import check_output, write_json
    from xeval.submission.scorer import format_report, score_submission

    if args.out is not None:
        check_output(args.out, "--out", folder=False)

    report = score_submission(args.predictions, args.labels, args.benchmark, partial=args.partial)
    for line in report.warnings:
        print(f"xeval score: warning: {line}", file=sys.stderr)
    for task, langs in report.skipped.items():
        print(f"xeval score: note: {task}: no labels for {', '.join(langs)} (skipped)", file=sys.stderr)
    if args.out is not None and str(args.out) == "-":
        print(json.dumps(report.result, indent=2, ensure_ascii=False))
        return 0
    print(format_report(report))
    if args.out is not None:
        write_json(args.out, report.result)
        print(f"wrote {args.out}")
    return 0
