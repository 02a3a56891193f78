"""Errors a user can cause. The CLI prints them as one line on stderr and exits with status 2."""

from __future__ import annotations

import difflib
from pathlib import Path


class UserError(Exception):
    """Something the user can fix: a bad file, an unknown task, missing data, a bad config."""


class DataError(UserError):
    """A malformed input file: carries ``path:line: what was expected, what was found``."""

    def __init__(self, path: str | Path, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ConfigError(UserError):
    """A bad task card, suite or pre-training config."""


def did_you_mean(name: str, choices) -> str:
    """`` (did you mean 'pooling'?)`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(str(name), sorted(set(map(str, choices))), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
