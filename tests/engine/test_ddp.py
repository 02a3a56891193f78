"""Every objective gives the same losses and gradients with 1 and 2 processes (gloo, DDP as the trainer wraps it):
the per-rank slices, the global normalisations, the gathered negatives (seqcl, with gradients; XLCO's queue) and the
global sampling of MRTD/TRTD must together reproduce the one-process step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers import ddp_objectives
from tests.helpers.engine import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_process(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ddp-objectives")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
           str(free_port()), str(REPO / "tests" / "helpers" / "ddp_objectives.py"), str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    written = {p.stem for p in out.glob("*.safetensors")}
    # gloo's worker threads can abort a rank at interpreter exit after every collective has finished (upstream
    # teardown race: "terminate called without an active exception", ~1 run in 8 before the script's final barrier).
    # Only that, with every result written, is accepted: the tests below still compare every number.
    exit_abort = "terminate called without an active exception" in proc.stderr and written == set(ddp_objectives.CASES)
    assert proc.returncode == 0 or exit_abort, proc.stderr[-3000:]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", list(ddp_objectives.CASES))
def test_objective_is_the_same_with_one_and_two_processes(case, two_process):
    one = ddp_objectives.run(case)
    two = load_file(str(two_process / f"{case}.safetensors"))
    assert set(one) == set(two)
    assert one["loss.1"].item() > 0  # every objective has a loss at step 2 (XLCO: the queue filled in step 1)
    assert sum(k.startswith("1.") for k in one) > 0  # and gradients
    for k in one:
        assert torch.allclose(one[k], two[k], rtol=1e-4, atol=1e-6), (k, (one[k] - two[k]).abs().max())
