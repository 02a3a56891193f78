"""``docs/cli.md``, rendered from the parsers themselves (every verb's and sub-verb's ``--help``), so the CLI
reference cannot drift from the code. ``tests/test_docs.py`` fails when the committed page is stale.

    python -m xeval.cli.reference --write docs/cli.md     # regenerate after changing a parser
    python -m xeval.cli.reference                         # print it

Not a verb (no ``NAME``): the verbs' discovery skips it.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from xeval.base import atomic
from xeval.cli import _subparsers, build_parser

# A fixed width, so the page does not depend on the terminal that rendered it.
WIDTH = 110
REGENERATE = "python -m xeval.cli.reference --write docs/cli.md"


def _fixed_width(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = functools.partial(parser.formatter_class, width=WIDTH, max_help_position=30)
    for sub in _subparsers(parser):
        _fixed_width(sub)


def _verbs(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every verb, in the order ``--help`` lists them."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in action._choices_actions}
    return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell (``|`` ends a cell; ``<task>`` would be read as an HTML tag)."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _block(text: str) -> list[str]:
    return ["```text", text.rstrip("\n"), "```", ""]


def render() -> str:
    parser = build_parser()
    _fixed_width(parser)
    verbs = _verbs(parser)
    lines = [
        "# CLI reference",
        "",
        f"<!-- Generated from xeval's parsers by `{REGENERATE}`; do not edit by hand. -->",
        "",
        "Every verb runs as `python -m xeval VERB` (or `xeval VERB` where the package is installed). Each takes",
        "`-q` (only warnings and errors on stderr) and `-v` (debugging details); results go to stdout, progress and",
        "errors to stderr; a user's mistake is one line on stderr and exit status 2.",
        "",
        "| verb | what |",
        "|---|---|",
        *[f"| [`{name}`](#xeval-{name}) | {_cell(help_)} |" for name, help_, _ in verbs],
        "",
        "## `python -m xeval`",
        "",
        *_block(parser.format_help()),
    ]
    for name, _, sub in verbs:
        lines += [f"## `xeval {name}`", "", *_block(sub.format_help())]
        for nested in _subparsers(sub):
            nested_name = nested.prog.split()[-1]
            lines += [f"### `xeval {name} {nested_name}`", "", *_block(nested.format_help())]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xeval.cli.reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="FILE", type=Path, help="write the page to FILE instead of stdout")
    args = parser.parse_args(argv)
    text = render()
    if args.write is None:
        sys.stdout.write(text)
        return 0
    atomic.write_text(args.write, text)
    print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
