"""What a person at a terminal, or a log file, sees: xeval's log on stderr (the standard ``logging`` module, logger
``xeval``), progress bars (tqdm) on a terminal and heartbeat lines in a log.

- Results (tables) go to stdout; the log, the bars and the heartbeat go to stderr, so ``xeval run ... > table.txt``
  keeps both.
- On a terminal: bars for every long step (tqdm's ``disable=None``), log lines written through ``tqdm.write`` so
  they go above a bar.
- Not on a terminal (SLURM, nohup, CI, a notebook): no bars (a log never fills with carriage returns); every log
  line starts with a timestamp, and while anything runs a ``heartbeat:`` line says what, how far, how fast and for
  how long, every ``$XEVAL_HEARTBEAT`` seconds (default 30; 0: none). See ``xeval.base.heartbeat``.
- ``-q``: warnings and errors only, no bars, no heartbeat.
- ``configure`` is called by the CLI (and by ``xeval.evaluate(verbose=True)``); a library user who never calls it gets
  Python's default (warnings only, no heartbeat).
"""

from __future__ import annotations

import logging
import sys

from xeval.base.heartbeat import Activity, Monitor, interval_from_env

log = logging.getLogger("xeval")
_bars = {"enabled": True}
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
monitor = Monitor(emit=log.info)


class _AboveBars(logging.Handler):
    """A stderr handler that prints above any progress bar instead of through it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


def on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def configure(verbose: int = 0) -> None:
    """``verbose`` < 0 (``-q``): warnings and errors only, no bars; 0: progress lines; > 0 (``-v``): debugging."""
    level = logging.WARNING if verbose < 0 else logging.INFO if verbose == 0 else logging.DEBUG
    for handler in [h for h in log.handlers if isinstance(h, _AboveBars)]:
        log.removeHandler(handler)
    handler = _AboveBars()
    terminal = on_terminal()
    # a log file has no clock of its own: each line says when it was written
    handler.setFormatter(logging.Formatter("%(message)s" if terminal else "%(asctime)s %(message)s", TIME_FORMAT))
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False
    _bars["enabled"] = verbose >= 0
    monitor.interval, problem = interval_from_env()
    monitor.enabled = verbose >= 0 and not terminal and monitor.interval > 0
    if problem:
        log.warning(problem)


def state() -> tuple:
    """What ``configure`` changes, for ``restore`` (a library call that logs for a while, then leaves it as it was)."""
    return list(log.handlers), log.level, log.propagate, dict(_bars), monitor.enabled, monitor.interval


def restore(saved: tuple) -> None:
    handlers, level, propagate, bars, enabled, interval = saved
    log.handlers[:] = handlers
    log.setLevel(level)
    log.propagate = propagate
    _bars.update(bars)
    monitor.enabled, monitor.interval = enabled, interval


def bars_enabled() -> bool:
    return _bars["enabled"]


def progress(iterable=None, *, total: int | None = None, desc: str | None = None, unit: str = "it",
             leave: bool = False, initial: int = 0):
    """A tqdm bar on stderr, drawn only on a terminal and not under ``-q``. Elsewhere an ``Activity`` with the same
    methods, which the heartbeat reports (nothing is drawn). ``initial``: counted before this process (a resumed
    run), shown but not part of the rate or the estimate."""
    if _bars["enabled"] and on_terminal():
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, file=sys.stderr, dynamic_ncols=True,
                    initial=initial)
    if total is None and iterable is not None:
        try:
            total = len(iterable)
        except TypeError:
            total = None
    tracked = Activity(desc or "working", total=total, unit=unit, monitor=monitor)
    tracked.n = tracked.initial = initial
    return tracked if iterable is None else tracked.wrap(iterable)


def activity(label: str, total: int | None = None, unit: str | None = None, rate: bool = True) -> Activity:
    """Something that runs, for the heartbeat only (never a bar): ``with console.activity("udpos (de)"): ...``;
    with ``total`` and ``unit``, call ``update()`` as it advances; ``rate=False`` shows counts without a rate or an
    estimate (units of very unequal cost)."""
    return Activity(label, total=total, unit=unit, monitor=monitor, rate=rate)
