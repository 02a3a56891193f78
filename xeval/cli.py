"""Argument parsing only. Each verb is a module in ``xeval/commands/`` exposing

    NAME: str                      the verb as typed on the command line
    HELP: str                      one line for ``python -m xeval --help``
    add_arguments(parser) -> None
    run(args) -> int               calls one library function; returns the exit status

Verbs are discovered, so adding one never touches this file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from xeval import __version__, commands
from xeval.errors import UserError


def _verb_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"xeval.commands.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            yield module


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m xeval",
        description="Evaluate and analyse cross-lingual encoders (XTREME, alignment probes, pre-training).",
    )
    parser.add_argument("--version", action="version", version=f"xeval {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for module in _verb_modules():
        verb = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(verb)
        verb.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except UserError as err:
        print(f"xeval {args.verb}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"xeval {args.verb}: interrupted; finished units are stored, rerun to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
