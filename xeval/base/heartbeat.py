"""Progress for a log file: while anything runs, one ``heartbeat:`` line every ``XEVAL_HEARTBEAT`` seconds (30 by
default) naming what runs, outermost first, with its progress, rate, elapsed time and estimate (the run itself:
progress and elapsed time only, its work items being of very unequal cost):

    2026-01-05 14:03:30 heartbeat: xeval run: 2/7 work items (29%), 6m40s > udpos (en, seed 1) 2m10s
        > fine-tune udpos: 120/500 steps (24%), 1.85 steps/s, 1m05s, eta 3m25s, loss=0.412

An ``Activity`` is one thing that runs (a work item, a fine-tuning loop, an encoding pass). Activities nest: they
form a stack, and each line describes the whole stack. A daemon thread writes the lines, so a step that takes longer
than the interval (one large batch, a Sinkhorn solve) still gets its line on time.

The lines are for logs only: ``xeval.base.console`` turns them on when stderr is not a terminal (SLURM, nohup, CI,
a notebook) and not under ``-q``; on a terminal the progress bars say the same.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

ENV = "XEVAL_HEARTBEAT"
DEFAULT_INTERVAL = 30.0


def interval_from_env() -> tuple[float, str | None]:
    """Seconds between lines from ``$XEVAL_HEARTBEAT`` (0 = off), and a warning when its value is no such number."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_INTERVAL, None
    try:
        seconds = float(text)
        if not seconds >= 0 or seconds == float("inf"):
            raise ValueError
    except ValueError:
        return DEFAULT_INTERVAL, (f"{ENV}: expected seconds between progress lines (e.g. 30; 0 = none), found "
                                  f"{text!r}; using {DEFAULT_INTERVAL:g}")
    return seconds, None


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h04m``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _plural(unit: str, n: float) -> str:
    return unit if n == 1 or unit.endswith("s") else f"{unit}{'es' if unit.endswith(('ch', 'sh', 'x')) else 's'}"


def _rank() -> str:
    """`` [rank R/W]`` under torchrun (each rank writes its own lines), else nothing."""
    world = os.environ.get("WORLD_SIZE", "1")
    return f" [rank {os.environ.get('RANK', '?')}/{world}]" if world.isdigit() and int(world) > 1 else ""


class Activity:
    """One thing that runs: a label, optionally a count of ``unit`` out of ``total``, and a postfix (e.g. the loss).
    The same few methods as a tqdm bar (``update``, ``set_postfix``, ``set_postfix_str``, ``close``, ``n``,
    ``total``), so code written for a bar reports here unchanged."""

    def __init__(self, label: str, total: int | None = None, unit: str | None = None, monitor: Monitor | None = None,
                 rate: bool = True):
        self.label, self.total, self.unit = label, total, unit
        self.show_rate = rate  # False: counts only, no rate or eta (units of very unequal cost)
        self.n = 0
        self.initial = 0  # counted before this process started (a resumed run): not part of the rate
        self.postfix = ""
        self.started = time.monotonic()
        self._monitor = monitor
        if monitor is not None:
            monitor.push(self)

    # -- the tqdm-like surface
    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(self, ordered_dict=None, refresh: bool = True, **kwargs) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = str(text)

    def close(self) -> None:
        if self._monitor is not None:
            self._monitor.pop(self)
            self._monitor = None

    @contextlib.contextmanager
    def external_write_mode(self):  # tqdm's: nothing is drawn here, so there is nothing to clear
        yield

    def __enter__(self) -> Activity:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def wrap(self, iterable):
        """Iterate ``iterable``, counting one ``unit`` per item; closed when the loop ends or is left."""
        try:
            for item in iterable:
                yield item
                self.n += 1
        finally:
            self.close()

    # -- what a line says
    def describe(self, now: float | None = None) -> str:
        elapsed = (time.monotonic() if now is None else now) - self.started
        if self.unit is None:  # a label only: what runs and for how long
            return f"{self.label} {duration(elapsed)}"
        unit = _plural(self.unit, 2)
        parts = [f"{self.n}/{self.total} {unit} ({100 * self.n / self.total:.0f}%)" if self.total
                 else f"{self.n} {_plural(self.unit, self.n)}"]
        rate = (self.n - self.initial) / elapsed if elapsed > 0 and self.show_rate else 0.0
        if rate >= 1:
            parts.append(f"{rate:.3g} {unit}/s")
        elif rate > 0:
            parts.append(f"{1 / rate:.3g} s/{self.unit}")
        parts.append(duration(elapsed))
        if self.total and rate > 0 and self.n < self.total:
            parts.append(f"eta {duration((self.total - self.n) / rate)}")
        if self.postfix:
            parts.append(self.postfix)
        return f"{self.label}: {', '.join(parts)}"


class Monitor:
    """The stack of running activities and the thread that writes a line every ``interval`` seconds while the stack
    is not empty (the first one ``interval`` seconds after it stopped being empty). ``emit(text)`` writes a line."""

    def __init__(self, emit, interval: float = DEFAULT_INTERVAL):
        self.emit, self.interval = emit, interval
        self.enabled = False
        self.stack: list[Activity] = []
        self.lines = 0  # lines written (for tests and the curious)
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._thread: threading.Thread | None = None
        # wakes a thread asleep on an earlier (longer) interval: a push must not wait out a sleep begun before it
        self._wake = threading.Event()

    def push(self, activity: Activity) -> None:
        with self._lock:
            if not self.stack:
                self._last = time.monotonic()
            self.stack.append(activity)
        self._wake.set()
        if self.enabled and self.interval > 0 and (self._thread is None or not self._thread.is_alive()):
            self._thread = threading.Thread(target=self._run, name="xeval-heartbeat", daemon=True)
            self._thread.start()

    def pop(self, activity: Activity) -> None:
        """Remove ``activity`` and whatever was started inside it and never closed (an exception left its loop)."""
        with self._lock:
            if activity in self.stack:
                for inner in self.stack[self.stack.index(activity) + 1:]:
                    inner._monitor = None
                del self.stack[self.stack.index(activity):]

    def line(self) -> str | None:
        with self._lock:
            stack = list(self.stack)
        if not stack:
            return None
        now = time.monotonic()
        return f"heartbeat{_rank()}: " + " > ".join(a.describe(now) for a in stack)

    def _run(self) -> None:
        while self.enabled and self.interval > 0:
            self._wake.wait(min(1.0, self.interval / 4))
            self._wake.clear()
            now = time.monotonic()
            if now - self._last < self.interval:
                continue
            text = self.line()
            if text is None:
                continue
            self._last = now
            try:
                self.emit(text)
                self.lines += 1
            except Exception:  # noqa: BLE001 - a progress line must never end a run
                pass
