"""How long this process has run: the wall seconds since it started (the interpreter and every import included, as
a stopwatch started with the command would read), for the time a command reports about itself."""

from __future__ import annotations

import os
import time

_IMPORTED = time.perf_counter()  # the fallback origin: when xeval's base was first imported


def process_seconds() -> float:
    """Wall seconds since this process started: from ``/proc`` on Linux (its start time in clock ticks after boot),
    elsewhere since xeval was first imported (which follows the interpreter's start by a fraction of a second)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            # the command name (field 2) may hold spaces: the fields after its closing ")" are fixed
            fields = handle.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of proc(5), the 20th after the name
        return max(0.0, uptime - started)
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED
