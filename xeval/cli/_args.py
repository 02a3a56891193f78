"""Argument helpers shared by the verbs: one spelling per concept, old spellings kept as hidden aliases.

The spellings every verb uses (``python -m xeval <verb> --help`` shows only these):

    --out PATH          where a verb writes (a folder for run/pretrain/synth/quickstart/tokenizer, a file for
                        report/compare/score)
    --predictions PATH  predictions to score (score, align score)
    --langs L1,L2       a comma-separated list of language codes (run, tokenizer train)
    --num-langs N       a number of languages (synth, quickstart)

An old spelling (``--output``, ``--pred``, ``--languages``) still works but is left out of ``--help`` and prints
one deprecation line on stderr.
"""

from __future__ import annotations

import argparse
import sys


def comma_list(text: str) -> list[str]:
    """``"de, fr,,es"`` -> ``["de", "fr", "es"]``."""
    return [part.strip() for part in str(text).split(",") if part.strip()]


class _StoreWithAliases(argparse._StoreAction):
    """``store``, plus one warning when the value came through an old spelling (``deprecated``)."""

    def __init__(self, option_strings, dest, deprecated=(), **kwargs):
        self.deprecated = tuple(deprecated)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string in self.deprecated:
            print(f"xeval: warning: {option_string} is deprecated; use {self.option_strings[0]}", file=sys.stderr)
        super().__call__(parser, namespace, values, option_string)


class Deprecated(argparse.Action):
    """A hidden option of its own (an old spelling whose values read differently): stores and warns."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"xeval: warning: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def option(parser, name: str, *, old: tuple[str, ...] = (), **kwargs):
    """``parser.add_argument(name, ...)`` that also accepts the hidden old spellings ``old``."""
    return parser.add_argument(name, *old, action=_StoreWithAliases, deprecated=old, **kwargs)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter without the deprecated spellings (usage already shows the first, current one)."""

    def _format_action_invocation(self, action):
        hidden = getattr(action, "deprecated", ())
        if not hidden:
            return super()._format_action_invocation(action)
        kept = [s for s in action.option_strings if s not in hidden]
        original, action.option_strings = action.option_strings, kept
        try:
            return super()._format_action_invocation(action)
        finally:
            action.option_strings = original


def use_formatter(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` and all its sub-parsers (nested verbs such as ``align score``) ``HelpFormatter``."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                use_formatter(sub)
