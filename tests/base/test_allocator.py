"""xeval.base.allocator: freed large blocks stay with the process, so reusing them faults no pages in."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from xeval.base import allocator

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only"
)

# A 64 MiB tensor allocated, written and freed forty times, as training steps do with a large gradient; the page
# faults of the last six rounds. With the setting, glibc's heap grows over the first rounds (torch's 64-byte-aligned
# blocks do not fit back into the exact hole they left: the heap settles at a few times the buffer) and then
# serves every round from pages it already has.
PROBE = """
import json, resource, sys
from xeval.base import allocator
took = allocator.retain_freed_memory() if sys.argv[1] == "on" else False
import torch
faults, resident_mb = [], []
for _ in range(40):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buffer = torch.empty(16 * 1024 * 1024).fill_(1.0)
    del buffer
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    resident_mb.append(int(open("/proc/self/statm").read().split()[1]) * 4096 >> 20)
print(json.dumps({"resident_mb": resident_mb[19::20], "took": took, "faults": faults[-6:]}))
"""


def _probe(mode: str, **env) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in allocator.USER_VARIABLES}
    done = subprocess.run([sys.executable, "-c", PROBE, mode], env={**clean, **env}, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_freed_blocks_are_reused_without_page_faults():
    pages = 64 * 1024 * 1024 // 4096  # 16,384 pages of 4 KiB
    default = _probe("off")
    retained = _probe("on")
    assert retained["took"] is True
    assert min(default["faults"]) > pages // 2  # glibc's default: a fresh mmap, every page faulted in again
    assert sum(retained["faults"]) < pages  # kept in the heap: the same pages serve the next rounds (default: 6 x)
    after_20, after_40 = retained["resident_mb"]
    assert after_40 <= after_20 + 64  # the heap has settled: it does not grow by a buffer every round


def test_a_users_malloc_variable_is_left_alone():
    result = _probe("on", MALLOC_MMAP_MAX_="65536")
    assert result["took"] is False
    assert min(result["faults"]) > 64 * 1024 * 1024 // 4096 // 2


DESCRIBE = """
from xeval.base import allocator
before = allocator.describe()
allocator.retain_freed_memory()
print(before + "|" + allocator.describe())
"""


@pytest.mark.parametrize("env, expected", [({}, allocator.RETAINED),
                                           ({"MALLOC_MMAP_MAX_": "65536"}, "glibc, the user's MALLOC_MMAP_MAX_=65536")])
def test_describe_says_what_the_setting_did(env, expected):
    clean = {k: v for k, v in os.environ.items() if k not in allocator.USER_VARIABLES}
    done = subprocess.run([sys.executable, "-c", DESCRIBE], env={**clean, **env}, capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == f"not set by xeval|{expected}"


# Pre-training's pattern: a large buffer whose size grows a little every step, freed, while something small and
# long-lived is allocated after it (the step's statistics, a queue, optimiser state made on first use). A heap that
# keeps every block cannot reuse the hole (the next buffer is larger) nor trim it (the small block sits above it):
# it grows by a buffer a round. With blocks above 32 MiB mapped on their own, each buffer goes back on ``free``.
FRAGMENT = """
import json, sys
from xeval.base import allocator
took = allocator.retain_freed_memory(None if sys.argv[1] == "all" else allocator.PRETRAIN_MMAP_ABOVE)
import torch
kept, resident_mb = [], []
for i in range(12):
    buffer = torch.empty((40 << 20) // 4 + i * (1 << 18)).fill_(1.0)  # 40 MiB, 41 MiB, ... 51 MiB
    kept.append(torch.empty(1 << 16).fill_(1.0))  # 256 KiB, allocated after the buffer and kept
    del buffer
    resident_mb.append(int(open("/proc/self/statm").read().split()[1]) * 4096 >> 20)
print(json.dumps({"took": took, "state": allocator.describe(), "resident_mb": resident_mb}))
"""


def test_pretraining_keeps_blocks_up_to_32_mib_so_growing_buffers_do_not_pile_up():
    clean = {k: v for k, v in os.environ.items() if k not in allocator.USER_VARIABLES}

    def run(mode):
        done = subprocess.run([sys.executable, "-c", FRAGMENT, mode], env=clean, capture_output=True, text=True,
                              check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    everything, bounded = run("all"), run("bounded")
    assert everything["took"] is True and bounded["took"] is True
    assert bounded["state"] == ("freed memory kept up to 32 MiB a block (glibc mallopt: M_MMAP_THRESHOLD 32 MiB, "
                                "M_TRIM_THRESHOLD 1 GiB)")
    grown = everything["resident_mb"][-1] - everything["resident_mb"][0]
    assert grown > 8 * 40  # kept: a hole of ~40-51 MiB left behind every round
    assert bounded["resident_mb"][-1] - bounded["resident_mb"][0] < 16  # mapped and returned: 12 x 256 KiB kept


def test_the_first_setting_of_a_process_holds():
    done = subprocess.run([sys.executable, "-c", "from xeval.base import allocator as a; a.retain_freed_memory(); "
                           "print(a.retain_freed_memory(a.PRETRAIN_MMAP_ABOVE), a.describe())"],
                          env={k: v for k, v in os.environ.items() if k not in allocator.USER_VARIABLES},
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"True {allocator.RETAINED}"
