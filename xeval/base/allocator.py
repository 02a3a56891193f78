"""Keep freed memory in the process: a training step's large buffers are reused, not faulted in anew every step.

Why: glibc serves every block above its mmap threshold (at most 32 MiB) with a fresh ``mmap`` and returns it to the
kernel on ``free``. A fine-tuning step of a 250k-vocabulary encoder (multilingual-e5-small) frees and reallocates
the embedding's 384 MB gradient and, whenever the batch's shape changes, its large activations, so every step
faults their pages in again (4 KiB at a time, zero-filled by the kernel): on e5 at batch 8 and 2 threads, 110,000+
page faults and 0.2 s of system time a step of 1.27 s. With ``M_MMAP_MAX = 0`` glibc takes large blocks from its
heap, and with a high ``M_TRIM_THRESHOLD`` it keeps what is freed for the next step (docs/measurements.md,
"Fine-tuning speed": 1.87x a step at batch 8 and 2 threads; the whole xtreme-mini on e5 63:39 -> 46:25; probe
mode 1.26x). The price is peak memory: glibc's heap settles at a few times the largest buffer (0.2 GB more at a
fine-tuning step, 0.8 GB more over probe-mode UD-POS + XNLI). Where memory comes from is not arithmetic: no number
changes.

Pre-training keeps only blocks up to 32 MiB (``retain_freed_memory(mmap_above=PRETRAIN_MMAP_ABOVE)``; a verb
module's ``MMAP_ABOVE``). Its largest buffers change size every step (a varying count of masked positions times the
vocabulary), and a heap that keeps everything fragments: continuing multilingual-e5-small (250k x 384) it held 9.7
GB by step 25 (14.8 GB by step 80 in another run) where blocks above 32 MiB mapped afresh each step keep it at 5.2 GB,
at 1.27x the step time; at the engine's own sizes, whose buffers stay under 32 MiB or near it, the two are as fast
(docs/measurements.md, "Pre-training memory"; ``bench/pretrain_allocator.py``). 32 MiB is the largest threshold
glibc accepts.

The command line calls ``retain_freed_memory()`` first (``xeval.cli.main``), and so does ``xeval.evaluate`` (a
Python-API run under glibc's default fine-tuned e5 on XNLI in 214 s against 114 s: the setting is most of what
makes xeval's loop fast, so a notebook user gets it too; it is a process setting and stays after the call). A user
who set any of glibc's malloc variables keeps them: this function then does nothing (so ``MALLOC_MMAP_MAX_=65536``
before starting Python restores glibc's default behaviour). ``describe()`` says which of these holds; every
``results.json`` records it (``host.allocator``).
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_MAX = -4
M_MMAP_THRESHOLD = -3
TRIM_THRESHOLD = 1 << 30  # a freed top of the heap up to 1 GiB stays with the process
PRETRAIN_MMAP_ABOVE = 32 << 20  # glibc's largest mmap threshold (HEAP_MAX_SIZE / 2 on 64-bit)
USER_VARIABLES = ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")
RETAINED = "freed memory kept (glibc mallopt: M_MMAP_MAX 0, M_TRIM_THRESHOLD 1 GiB)"
RETAINED_UP_TO = "freed memory kept up to {mib} MiB a block (glibc mallopt: M_MMAP_THRESHOLD {mib} MiB, M_TRIM_THRESHOLD 1 GiB)"

_state = "not set by xeval"  # what the last retain_freed_memory() found or did (describe())


def retain_freed_memory(mmap_above: int | None = None) -> bool:
    """Tell glibc to serve large blocks from its heap and keep freed ones; True when the setting took effect
    (Linux with glibc, none of glibc's malloc variables set by the user). ``mmap_above``: blocks larger than this
    many bytes (at most 32 MiB) are still mapped on their own and returned on ``free`` (pre-training). Calling it
    again is harmless; the first call of a process decides."""
    global _state
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        _state = "the platform's allocator (not glibc: left as it is)"
        return False
    user = sorted(name for name in USER_VARIABLES if name in os.environ)
    if user:
        _state = "glibc, the user's " + ", ".join(f"{name}={os.environ[name]}" for name in user)
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        _state = "glibc's default (mallopt not found)"
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if _state.startswith("freed memory kept"):
        return True  # set already: a mallopt cannot be undone to glibc's dynamic default, so the first call holds
    if mmap_above is None:
        took = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        state = RETAINED
    else:
        took = bool(mallopt(M_MMAP_THRESHOLD, mmap_above)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        state = RETAINED_UP_TO.format(mib=f"{mmap_above / (1 << 20):g}")
    _state = state if took else "glibc's default (mallopt refused the setting)"
    return took


def describe() -> str:
    """How the process's allocator was left by ``retain_freed_memory`` (what a run's ``host.allocator`` says)."""
    return _state
