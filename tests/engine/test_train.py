"""Engine trainer: falling loss, checkpoint loading (AutoModel and xeval's Encoder), exact resume, 2-process DDP."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from tests.helpers.engine import free_port, micro_config
from xeval.models.files import unfinished_run

REPO = Path(__file__).resolve().parents[2]


def losses(out: Path, key: str = "loss") -> list[float]:
    return [json.loads(line)[key] for line in (out / "log.jsonl").read_text().splitlines()]


def test_micro_mlm_trains_and_checkpoint_loads_everywhere(tmp_path, fake_root, tokenizer_dir):
    from transformers import AutoModel, AutoTokenizer

    import xeval.engine  # noqa: F401
    from xeval.engine.model import XevalModel
    from xeval.engine.train import pretrain
    from xeval.models.encoder import Encoder

    out = tmp_path / "run"
    cfg = micro_config(fake_root, {"mlm": {}, "tlm": {}}, tokenizer_dir, steps=30, lr=3e-3, log_every=10)
    summary = pretrain(cfg, out)
    assert summary["step"] == 30
    curve = losses(out)
    assert curve[-1] < curve[0] - 0.5, curve  # the synthetic language is easy: the loss falls fast
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (out / name).is_file()
    assert not list(out.glob("*.bin")) and not list(out.rglob("*.pt"))  # nothing pickled
    log = (out / "train.log").read_text()
    assert "clean pairs en-de" in log and "iso_catalog 1" in log and "tok/s" in log and "% of peak" in log
    # our forward == AutoModel's == the Encoder's, on the same tokenised batch
    ours = XevalModel.from_pretrained(out).eval()
    hf = AutoModel.from_pretrained(out, output_hidden_states=True).eval()
    tok = AutoTokenizer.from_pretrained(out)
    batch = tok(["the cat sleeps", "die Katze schläft im Haus"], padding=True, return_tensors="pt")
    assert batch["input_ids"][0, 0].item() == 0 and tok.convert_ids_to_tokens(2) == "</s>"
    with torch.no_grad():
        a = ours(batch["input_ids"], batch["attention_mask"], output_hidden_states=True).hidden_states
        b = hf(**batch).hidden_states
    assert len(b) == 3 and all(torch.equal(x, y) for x, y in zip(a, b))
    enc = Encoder(str(out))
    with torch.no_grad():
        c = enc.model(**{k: v for k, v in batch.items()}, output_hidden_states=True).hidden_states
    assert all(torch.equal(x, y) for x, y in zip(a, c))


def test_resume_is_bit_exact(tmp_path, fake_root, tokenizer_dir):
    from xeval.engine.train import pretrain

    objectives = {"mlm": {}, "tlm": {}, "xlco": {"queue_size": 8}}
    full, part = tmp_path / "full", tmp_path / "part"
    pretrain(micro_config(fake_root, objectives, tokenizer_dir, steps=6), full)
    pretrain(micro_config(fake_root, objectives, tokenizer_dir, steps=6, stop_after=3), part)
    assert (part / "state" / "step-0000003").is_dir()
    # the card says whether the weights beside it are the run's end (xeval run warns about those that are not)
    assert json.loads((part / "xeval_pretrain.json").read_text())["finished"] is False
    assert unfinished_run(part) and not unfinished_run(full)
    pretrain(micro_config(fake_root, objectives, tokenizer_dir, steps=6), part, resume=True)
    assert json.loads((part / "xeval_pretrain.json").read_text())["finished"] is True and not unfinished_run(part)
    a = load_file(str(full / "state" / "step-0000006" / "model.safetensors"))
    b = load_file(str(part / "state" / "step-0000006" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:  # encoder, heads, momentum encoder and queue
        assert torch.equal(a[k], b[k]), k
    oa = load_file(str(full / "state" / "step-0000006" / "optimizer.safetensors"))
    ob = load_file(str(part / "state" / "step-0000006" / "optimizer.safetensors"))
    assert all(torch.equal(oa[k], ob[k]) for k in oa)
    assert losses(full)[3:] == losses(part)[3:]


def test_bf16_trains_bf16_weights_saves_fp32_masters_and_resumes_bit_exact(tmp_path, fake_root, tokenizer_dir):
    from xeval.engine.train import pretrain

    objectives = {"mlm": {}, "tlm": {}}
    bf16 = {"bf16": True, "bf16_weights": True, "accumulate": 2}  # 2 micro-batches: summed in the fp32 masters
    full, part, fp32 = tmp_path / "full", tmp_path / "part", tmp_path / "fp32"
    pretrain(micro_config(fake_root, objectives, tokenizer_dir, steps=6, **bf16), full)
    pretrain(micro_config(fake_root, objectives, tokenizer_dir, steps=6, stop_after=3, **bf16), part)
    pretrain(micro_config(fake_root, objectives, tokenizer_dir, steps=6, **bf16), part, resume=True)
    pretrain(micro_config(fake_root, objectives, tokenizer_dir, steps=6, accumulate=2), fp32)
    a = load_file(str(full / "state" / "step-0000006" / "model.safetensors"))
    b = load_file(str(part / "state" / "step-0000006" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # the checkpoint and the export hold the fp32 masters, not bf16-rounded weights
    exported = load_file(str(full / "model.safetensors"))
    assert all(v.dtype == torch.float32 for v in [*a.values(), *exported.values()])
    assert any(not torch.equal(v, v.bfloat16().float()) for v in exported.values())
    oa = load_file(str(full / "state" / "step-0000006" / "optimizer.safetensors"))
    ob = load_file(str(part / "state" / "step-0000006" / "optimizer.safetensors"))
    assert oa.keys() == ob.keys() and all(torch.equal(oa[k], ob[k]) for k in oa)
    assert losses(full)[3:] == losses(part)[3:]
    # the same training as fp32 up to bf16 rounding: close, not equal
    assert losses(full) != losses(fp32) and losses(full) == pytest.approx(losses(fp32), abs=0.05)


def test_removed_objective_is_neither_trained_nor_recorded(tmp_path, fake_root, tokenizer_dir):
    from xeval.engine.train import pretrain

    cfg = micro_config(fake_root, {"mlm": {}, "tlm": {"weight": 0}, "seqcl": None}, tokenizer_dir, steps=2)
    pretrain(cfg, tmp_path, echo=lambda text: None)
    first = (tmp_path / "train.log").read_text().splitlines()[0]
    assert first == "pretrain test size micro: objectives mlm (weight 1)", first
    assert list(json.loads((tmp_path / "xeval_pretrain.json").read_text())["config"]["objectives"]) == ["mlm"]
    state = json.loads((tmp_path / "state" / "step-0000002" / "state.json").read_text())
    assert list(state["config"]["objectives"]) == ["mlm"]
    assert "tlm" not in json.loads((tmp_path / "log.jsonl").read_text().splitlines()[-1])


def test_accumulate_takes_several_batches_per_optimizer_step(tmp_path, fake_root, tokenizer_dir):
    from xeval.engine.train import pretrain

    runs = {}
    for k in (1, 3):
        out = tmp_path / f"acc{k}"
        pretrain(micro_config(fake_root, {"mlm": {}, "tlm": {}}, tokenizer_dir, steps=2, accumulate=k), out,
                 echo=lambda text: None)  # fmt: skip
        runs[k] = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in runs[3]] == [1, 2]  # optimizer steps, not batches
    # mono rows are packed to a fixed length: each step reads exactly three times the tokens
    one, three = runs[1][0], runs[3][0]
    assert three["tokens_per_s"] * three["s_per_step"] > 2.5 * one["tokens_per_s"] * one["s_per_step"]


def test_existing_run_needs_resume(tmp_path, fake_root, tokenizer_dir):
    from xeval.base.errors import UserError
    from xeval.engine.train import pretrain

    cfg = micro_config(fake_root, {"mlm": {}}, tokenizer_dir, steps=1)
    pretrain(cfg, tmp_path)
    with pytest.raises(UserError, match="--resume"):
        pretrain(cfg, tmp_path)


@pytest.mark.slow
def test_two_process_gloo_ddp_matches_one_process(tmp_path, fake_root, tokenizer_dir):
    # XLCO: keys gathered from both ranks; seqcl: negatives gathered; tokcl: links counted over both ranks
    objectives = {"mlm": {}, "tlm": {}, "xlco": {"queue_size": 8}, "seqcl": {}, "tokcl": {}}
    cfg = micro_config(fake_root, objectives, tokenizer_dir, steps=5, accumulate=2).to_dict()  # DDP's no_sync
    cfg["model"]["hidden_dropout_prob"] = 0.0  # dropout streams differ per rank; masking is global and identical
    config = tmp_path / "ddp.yaml"
    config.write_text(yaml.safe_dump({k: v for k, v in cfg.items() if k != "size"} | {"size": "micro",
                      "sizes": {"micro": {}}}))  # fmt: skip
    from xeval.base.allocator import USER_VARIABLES

    env = {**{k: v for k, v in os.environ.items() if k not in USER_VARIABLES}, "OMP_NUM_THREADS": "1"}
    runs = {}
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(n), "--master_port",
               str(free_port()), "-m", "xeval", "pretrain", "--config", str(config), "--out",
               str(out)]  # fmt: skip
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[n] = out
    assert "2 process(es)" in (runs[2] / "train.log").read_text()
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":  # the verb's own allocator setting
        assert "allocator: freed memory kept up to 32 MiB a block" in (runs[1] / "train.log").read_text()
    one, two = losses(runs[1]), losses(runs[2])
    assert len(one) == len(two) == 5
    assert losses(runs[2], "xlco")[-1] > 0  # the queue filled (with both ranks' keys) and the contrast ran
    assert one == pytest.approx(two, rel=1e-4, abs=1e-5)
    for key in ("seqcl", "tokcl", "tokcl_acc", "tokcl_links"):  # tokcl_links is a count: summed, not averaged
        assert losses(runs[1], key) == pytest.approx(losses(runs[2], key), rel=1e-4, abs=1e-5), key
    assert min(losses(runs[1], "tokcl_links")) > 0
    assert "token contrast coverage (first 200 pairs): en-de" in (runs[2] / "train.log").read_text()
    w1 = load_file(str(runs[1] / "model.safetensors"))
    w2 = load_file(str(runs[2] / "model.safetensors"))
    assert all(torch.allclose(w1[k], w2[k], atol=1e-5) for k in w1)


def test_time_budget_schedule_decays_to_zero_over_the_budget():
    from xeval.engine.config import TrainConfig
    from xeval.engine.setup import lr_at

    tc = TrainConfig(steps=1000, lr=1e-3, warmup=10, max_seconds=100.0)
    assert lr_at(0, tc, 0.0) == pytest.approx(1e-4)  # warm-up ramp in steps
    assert lr_at(10, tc, 50.0) == pytest.approx(5e-4)  # then linear in the budget's elapsed share
    assert lr_at(10, tc, 99.0) == pytest.approx(1e-5)
    assert lr_at(10, tc, 120.0) == 0.0
    assert lr_at(900, tc, 0.0) == pytest.approx(1e-4)  # train.steps stays a cap: progress is the larger share
    plain = TrainConfig(steps=100, lr=1e-3, warmup=10)
    assert [lr_at(s, plain, 1e9) for s in range(100)] == [lr_at(s, plain) for s in range(100)]  # no budget: steps


def test_a_head_warmup_runs_at_its_own_rate_then_the_schedule_starts_over():
    from xeval.engine.config import TrainConfig
    from xeval.engine.setup import lr_at

    tc = TrainConfig(steps=110, lr=1e-4, warmup=10, head_warmup=10, head_warmup_lr=1e-3)
    assert [lr_at(s, tc) for s in range(10)] == [1e-3] * 10  # the head alone, at its rate, constant
    # then the encoder's own warm-up and decay over the remaining 100 steps, as a run of 100 steps without one
    plain = TrainConfig(steps=100, lr=1e-4, warmup=10)
    assert [lr_at(s, tc) for s in range(10, 110)] == [lr_at(s, plain) for s in range(100)]
    assert lr_at(10, tc) == pytest.approx(1e-5) and lr_at(19, tc) == pytest.approx(1e-4)
    assert lr_at(3, TrainConfig(steps=110, lr=1e-4, warmup=10, head_warmup=10)) == 1e-4  # default: train.lr


def test_time_budget_stops_decays_and_checkpoint_loads(tmp_path, fake_root, tokenizer_dir):
    from transformers import AutoModel

    import xeval.engine  # noqa: F401
    from xeval.engine.train import pretrain
    from xeval.models.encoder import Encoder

    out = tmp_path / "timed"
    cfg = micro_config(fake_root, {"mlm": {}, "tlm": {}}, tokenizer_dir, steps=100_000, max_seconds=3.0, lr=1e-3,
                       warmup=2, log_every=100_000, save_every=100_000)  # fmt: skip
    summary = pretrain(cfg, out, echo=lambda text: None)
    steps = summary["step"]
    assert 2 <= steps < 100_000 and summary["elapsed_s"] >= 3.0 and summary["tokens"] > 0
    assert summary["lr"] < 0.2 * 1e-3  # the last step's rate: the schedule ran down with the budget
    state = json.loads((out / "state" / f"step-{steps:07d}" / "state.json").read_text())
    assert state["step"] == steps and state["elapsed_s"] >= 3.0  # the steps actually done
    assert "3 s budget" in (out / "train.log").read_text()
    assert Encoder(str(out)).num_layers == 2 and AutoModel.from_pretrained(out) is not None
    # --resume with a larger budget continues the same clock (the saved elapsed time counts)
    more = pretrain(micro_config(fake_root, {"mlm": {}, "tlm": {}}, tokenizer_dir, steps=100_000, max_seconds=4.0,
                                 lr=1e-3, warmup=2, log_every=100_000), out, resume=True, echo=lambda text: None)  # fmt: skip
    assert more["step"] > steps and 4.0 <= more["elapsed_s"] < 8.0
