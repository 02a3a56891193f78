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

The command line calls ``retain_freed_memory()`` first (``xeval.cli.main``); a library user may call it or set
glibc's own variables before starting Python. A user who set any of glibc's malloc variables keeps them: this
function then does nothing (so ``MALLOC_MMAP_MAX_=65536`` restores glibc's default behaviour).
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_MAX = -4
TRIM_THRESHOLD = 1 << 30  # a freed top of the heap up to 1 GiB stays with the process
USER_VARIABLES = ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")


def retain_freed_memory() -> bool:
    """Tell glibc to serve large blocks from its heap and keep freed ones; True when the setting took effect
    (Linux with glibc, none of glibc's malloc variables set by the user)."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    if any(name in os.environ for name in USER_VARIABLES):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
