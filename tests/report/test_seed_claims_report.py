"""bench/seed_claims.py's table: every claim beside both floors (random-init control or the init model, char
n-gram baseline), and read only where its baseline clears them. A hand-made score table, expected values by hand."""

from __future__ import annotations

import argparse
from pathlib import Path

from tests.helpers.bench import load_bench


def test_claims_show_both_floors_and_whether_the_baseline_clears_them(tmp_path):
    sc = load_bench("seed_claims")
    table = {}
    for task in sc.TASKS:
        table[("charngram", task)] = (10.0, None, "no layers", None)
        table[(sc.INIT, task)] = (50.0, 3, "dev", 3)
        for s in (0, 1):
            for label, _, _ in [v for _, *pair in sc.CLAIMS for v in pair]:
                # baselines 8 and 12 (mean 10: not above the char n-gram's 10), variants 2 points higher
                score = (8.0 if s == 0 else 12.0) + (2.0 if label in {"infoxlm", "xlm-e", "veco2"} else 0.0)
                table[(f"{label}-s{s}", task)] = (score, 2, "dev", 2)
                table[(f"{label}-s{s}-random-init", task)] = (3.0, 0, "dev", 0)
            table[(f"infoxlm-init-s{s}", task)] = (56.0 + s, 8, "dev", 8)
            table[(f"mlm+tlm-init-s{s}", task)] = (54.0 + s, 8, "dev", 8)
    args = argparse.Namespace(seeds="0,1", steps=2000, budget=300.0, size="tiny", max_eval=300, init="e5/",
                              out=str(tmp_path), report=str(tmp_path / "claims.md"))
    text = sc.write_report(args, table, "cmd").read_text(encoding="utf-8")
    assert "Size `tiny`, 2000 steps per model (fixed)" in text
    # InfoXLM: variant (10 + 14) / 2 = 12 ± 2.8, baseline (8 + 12) / 2 = 10 ± 2.8: not above the char n-gram's 10
    infoxlm = text.split("## InfoXLM: XLCO")[1].split("##")[0]
    assert "| tatoeba | 12.0 ± 2.8 | 10.0 ± 2.8 | 3.0 ± 0.0 | 10.0 | no | +2.0 | ✓ (within the seeds' spread) |" in infoxlm
    # from the init: floor = the init model (50), baseline 54.5 clears it and the char n-gram's 10
    init = text.split("## InfoXLM from a pretrained init")[1]
    assert "| tatoeba | 56.5 ± 0.7 | 54.5 ± 0.7 | 50.0 (the init model) | 10.0 | yes | +2.0 | ✓ |" in init


def test_commands_fixed_steps_init_and_floors(tmp_path, monkeypatch):
    sc = load_bench("seed_claims")
    calls = []
    monkeypatch.setattr(sc, "sh", lambda cmd, log: calls.append(cmd))
    args = argparse.Namespace(size="tiny", steps=1200, budget=300.0, init="e5/", set=[], data=None, max_eval=300,
                              out=str(tmp_path))
    sc.train(sc.INIT_CLAIM[1], 2, args)
    sc.train(sc.CLAIMS[0][2], 2, args)
    sc.evaluate(tmp_path / "m", args)
    sc.evaluate(Path("e5/"), args, controls="charngram", name=sc.INIT)
    init_run, scratch, model, init = (" ".join(c[2:]) for c in calls)
    assert "--set train.steps=1200" in init_run and "max_seconds" not in init_run and "--init e5/" in init_run
    assert "--init" not in scratch and "--set objectives.xlco=null" in scratch and "--set train.seed=2" in scratch
    assert "--control random-init,charngram" in model and "--tasks tatoeba,flores,heldout" in model
    # the init model: its own floor, no held-out pairs (it was not trained by the engine), stored as "init"
    assert "--control charngram" in init and "--tasks tatoeba,flores " in init and "--name init" in init
