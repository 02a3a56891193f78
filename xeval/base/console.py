"""What a person at a terminal sees: xeval's log on stderr (the standard ``logging`` module, logger ``xeval``) and
progress bars (tqdm) for every long step.

- Results (tables) go to stdout; the log and the bars go to stderr, so ``xeval run ... > table.txt`` keeps both.
- Bars are drawn only when stderr is a terminal (tqdm's ``disable=None``) and not under ``-q``: a log file or CI
  never fills with carriage returns. Log lines are written through ``tqdm.write`` so they go above a bar.
- ``configure`` is called by the CLI; a library user who never calls it gets Python's default (warnings only).
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger("xeval")
_bars = {"enabled": True}


class _AboveBars(logging.Handler):
    """A stderr handler that prints above any progress bar instead of through it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


def configure(verbose: int = 0) -> None:
    """``verbose`` < 0 (``-q``): warnings and errors only, no bars; 0: progress lines; > 0 (``-v``): debugging."""
    level = logging.WARNING if verbose < 0 else logging.INFO if verbose == 0 else logging.DEBUG
    for handler in [h for h in log.handlers if isinstance(h, _AboveBars)]:
        log.removeHandler(handler)
    handler = _AboveBars()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False
    _bars["enabled"] = verbose >= 0


def bars_enabled() -> bool:
    return _bars["enabled"]


def progress(iterable=None, *, total: int | None = None, desc: str | None = None, unit: str = "it",
             leave: bool = False):
    """A tqdm bar on stderr, drawn only on a terminal and not under ``-q`` (a no-op wrapper otherwise)."""
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, file=sys.stderr, dynamic_ncols=True,
                disable=None if _bars["enabled"] else True)
