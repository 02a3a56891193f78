"""Loading models the way users have them: --device mistakes and missing folders as one line before anything
loads; --dtype, --revision and --trust-remote-code recorded; sentence-transformers folders pooled as their modules
say."""

from __future__ import annotations

import pytest
import torch

from tests.helpers_transfer import tiny_model
from xeval import cli
from xeval.results import Store

PROBE = ["--suite", "xtreme-mini", "--tasks", "tatoeba", "--langs", "de", "--layers", "2", "--max-eval", "30"]


def _one_line(capfd, argv) -> str:
    rc = cli.main(argv)
    err = capfd.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("device, expected", [
    ("gpu", "--device gpu: unknown device (did you mean 'cuda'?)"),
    ("banana", "--device banana: unknown device; expected auto, cpu, cuda, cuda:N or mps"),
    ("cuda", "--device cuda: "),
    ("cuda:7", "--device cuda:7: "),
])
def test_device_mistakes_are_one_line_before_loading(device, expected, tmp_path, capfd):
    if device.startswith("cuda") and torch.cuda.is_available() and (device == "cuda" or torch.cuda.device_count() > 7):
        pytest.skip("this machine has the CUDA device")
    err = _one_line(capfd, ["run", "--model", str(tmp_path / "absent"), *PROBE, "--device", device,
                            "--out", str(tmp_path / "runs")])
    assert expected in err and "absent" not in err  # the device fails first, before the model is looked for
    if device.startswith("cuda") and not torch.cuda.is_available():
        assert "use --device cpu or auto" in err


def test_missing_local_folder_is_one_line(tmp_path, capfd):
    err = _one_line(capfd, ["run", "--model", str(tmp_path / "no" / "such"), *PROBE, "--out", str(tmp_path / "r")])
    assert f"{tmp_path / 'no' / 'such'}: no such model folder" in err and "Repo id" not in err


def test_dtype_is_recorded_and_part_of_the_identity(data_root, tmp_path, capfd):
    model, out = tiny_model(data_root), tmp_path / "runs"
    base = ["run", "--model", str(model), "--data", str(data_root), "--out", str(out), "--device", "cpu", *PROBE]
    assert cli.main(base) == 0 and cli.main([*base, "--dtype", "bfloat16"]) == 0
    records = list(Store(out).records())
    assert sorted(r.model["dtype"] for r in records) == ["bfloat16", "float32"]
    assert len({r.unit.config_hash for r in records}) == 2 and len({r.unit.model for r in records}) == 1
    capfd.readouterr()
