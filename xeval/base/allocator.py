"""Large CPU buffers on transparent huge pages: a training step's big gradient is faulted in 2 MiB at a time, not 4 KiB.

Why: torch frees and reallocates a parameter's gradient every step (``zero_grad(set_to_none=True)``), and glibc
serves such a large block with a fresh ``mmap``, so its pages are faulted in again on every step. For the 250k x 384
embedding of XLM-R's vocabulary (multilingual-e5-small) that gradient is 384 MB, ~94,000 pages of 4 KiB a step;
with huge pages a step at batch 8 took 1.11 s instead of 1.26 s, at batch 32 no difference was measurable
(bench/huge_pages.py; docs/measurements.md, "Fine-tuning speed").
PyTorch's ``THP_MEM_ALLOC_ENABLE=1`` aligns allocations of 2 MiB and more and asks the kernel for huge pages
(``madvise``), 512 times fewer faults. Where the memory comes from is not arithmetic: the numbers do not change.

(Keeping freed blocks in glibc's heap instead, ``mallopt(M_MMAP_MAX, 0)``, was tried and rejected: torch's aligned
allocations do not fit back into the block they freed, so the heap grew by the buffer's size on most steps.)

torch reads the variable once, at its first allocation, so this must run before ``import torch``: the command line
calls it first (``xeval.cli.main``); a library user sets the variable before starting Python. A value already set
(``THP_MEM_ALLOC_ENABLE=0``) is left as it is.
"""

from __future__ import annotations

import os
import sys

ENV = "THP_MEM_ALLOC_ENABLE"
KERNEL_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"


def kernel_allows_huge_pages() -> bool:
    """The kernel's THP mode is ``always`` or ``madvise`` (the one in brackets), so torch's ``madvise`` is honoured."""
    try:
        with open(KERNEL_SETTING, encoding="ascii") as handle:
            mode = handle.read()
    except OSError:
        return False
    return "[always]" in mode or "[madvise]" in mode


def prefer_huge_pages() -> bool:
    """Ask torch for huge pages on large CPU allocations, unless the variable is already set; True when torch will
    use them in this process (Linux, the kernel allows them, torch not yet imported, the variable 1)."""
    if not sys.platform.startswith("linux"):
        return False
    os.environ.setdefault(ENV, "1")
    return os.environ[ENV] == "1" and "torch" not in sys.modules and kernel_allows_huge_pages()
