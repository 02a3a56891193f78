"""Argument parsing only. Each verb is a module of this package (``xeval/cli/<verb>.py``) exposing

    NAME: str                      the verb as typed on the command line
    HELP: str                      one line for ``python -m xeval --help``
    add_arguments(parser) -> None
    run(args) -> int               calls one library function; returns the exit status
    MMAP_ABOVE: int (optional)     blocks above this many bytes are not kept by the allocator (xeval.base.allocator)

Verbs are discovered, so adding one never touches this file.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from xeval._version import __version__
from xeval.base import allocator, console
from xeval.base.errors import UserError
from xeval.cli._args import use_formatter


def _verb_modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"xeval.cli.{info.name}")
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
        _console_options(verb, default=0)
        module.add_arguments(verb)
        verb.set_defaults(_run=module.run, _mmap_above=getattr(module, "MMAP_ABOVE", None))
        for nested in _subparsers(verb):  # align score, data check, tokenizer train: -q/-v after them too
            _console_options(nested, default=argparse.SUPPRESS)
    use_formatter(parser)
    return parser


def _console_options(parser: argparse.ArgumentParser, default) -> None:
    """-q/-v of every verb: the level of xeval's log on stderr (results go to stdout whatever the level). A nested
    verb's default is SUPPRESS so that it does not reset what was given before it."""
    group = parser.add_argument_group("console")
    group.add_argument("-q", "--quiet", action="count", default=default,
                       help="only warnings and errors on stderr, no progress bars")
    group.add_argument("-v", "--verbose", action="count", default=default, help="also debugging details on stderr")


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    return [p for a in parser._actions if isinstance(a, argparse._SubParsersAction)
            for p in dict.fromkeys(a.choices.values())]


def main(argv: list[str] | None = None) -> int:
    status = _main(argv)
    if _torchrun_rank():
        _leave(status)
    return status


def _torchrun_rank() -> bool:
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        return False


def _leave(status: int) -> None:
    """End a torchrun rank without interpreter finalisation. There, gloo's worker threads can abort the process
    (SIGABRT, "terminate called without an active exception": about 1 rank exit in 10 on a loaded machine, after
    every result was written), which torchrun reports as a failed job. By now the rank has left its process group
    and its files are written (atomically), so only the streams and log handlers need flushing."""
    import logging

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(status)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    allocator.retain_freed_memory(args._mmap_above)  # before the verb allocates (xeval.base.allocator: why)
    console.configure(verbose=args.verbose - args.quiet)
    args._argv = list(sys.argv[1:] if argv is None else argv)  # the command as typed, for results.json
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
