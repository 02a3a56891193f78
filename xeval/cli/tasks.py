"""``xeval tasks [NAME]``: list task cards and suites, or show one card / suite."""

from __future__ import annotations

NAME = "tasks"
HELP = "list task cards and suites (or show one)"


def add_arguments(parser) -> None:
    parser.add_argument("name", nargs="?", help="a card or suite to show in full")


def run(args) -> int:
    from xeval.cards.describe import describe, overview

    print(describe(args.name) if args.name else overview())
    return 0
