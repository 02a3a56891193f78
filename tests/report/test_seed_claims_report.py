"""bench/seed_claims.py's table: every claim beside both floors (random-init control or the init model, char
n-gram baseline), and read only where its baseline clears them. A hand-made score table, expected values by hand."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.helpers.bench import load_bench


def test_claims_show_both_floors_and_whether_the_baseline_clears_them(tmp_path):
    sc = load_bench("seed_claims")
    table = {}
    for task in sc.TASKS:
        table[("charngram", task)] = (10.0, None, "no layers", None)
        table[(sc.INIT, task)] = (60.0, 3, "dev", 3)
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
    assert "Every model trains the same fixed number of steps." in text and "time budget buys" not in text
    # InfoXLM: variant (10 + 14) / 2 = 12 ± 2.8, baseline (8 + 12) / 2 = 10 ± 2.8: not above the char n-gram's 10
    infoxlm = text.split("## InfoXLM: XLCO")[1].split("##")[0]
    assert "| tatoeba | 12.0 ± 2.8 | 10.0 ± 2.8 | 3.0 ± 0.0 | 10.0 | no | +2.0 | ✓ (within the seeds' spread) |" in infoxlm
    # from the init: the init model (60) is a reference, not a floor -- continued pre-training lowered both models
    # below it -- so the claim is read where the baseline (54.5) clears the char n-gram's 10
    init = text.split("## InfoXLM from a pretrained init")[1]
    assert "| tatoeba | 56.5 ± 0.7 | 54.5 ± 0.7 | 60.0 (the init model) | 10.0 | yes | +2.0 | ✓ |" in init
    args.steps = None  # on a time budget the steps reached are what a variant and its baseline compare at
    text = sc.write_report(args, table, "cmd").read_text(encoding="utf-8")
    assert "300 s of training per model" in text and "time budget buys fewer steps" in text


def test_commands_fixed_steps_init_and_floors(tmp_path, monkeypatch):
    sc = load_bench("seed_claims")
    calls = []
    monkeypatch.setattr(sc, "sh", lambda cmd, log: calls.append(cmd))
    args = argparse.Namespace(size="tiny", steps=1200, budget=300.0, init="e5/", set=["objectives.xlco.queue_size=128"],
                              data=None, max_eval=300, out=str(tmp_path))
    sc.train(sc.INIT_CLAIM[1], 2, args)
    sc.train(sc.CLAIMS[0][2], 2, args)
    sc.evaluate(tmp_path / "m", args)
    sc.evaluate(Path("e5/"), args, controls="charngram", name=sc.INIT)
    init_run, scratch, model, init = (" ".join(c[2:]) for c in calls)
    assert "--set train.steps=1200" in init_run and "max_seconds" not in init_run and "--init e5/" in init_run
    assert "--init" not in scratch and "--set objectives.xlco=null" in scratch and "--set train.seed=2" in scratch
    assert "--resume" not in init_run and "--resume" not in scratch
    # a sweep-wide setting of XLCO reaches the variant; the baseline's ablation comes after it and wins
    from xeval.engine.config import load_config

    def objectives(cmd):
        sets = [cmd[i + 1] for i, c in enumerate(cmd) if c == "--set"]
        return load_config("infoxlm", "tiny", sets).objectives

    assert objectives(calls[0])["xlco"]["queue_size"] == 128 and "xlco" not in objectives(calls[1])
    assert "--control random-init,charngram" in model and "--tasks tatoeba,flores,heldout" in model
    # the init model: its own floor, no held-out pairs (it was not trained by the engine), stored as "init"
    assert "--control charngram" in init and "--tasks tatoeba,flores " in init and "--name init" in init
    sc.evaluate(tmp_path / "m" / "steps" / "step-0000300", args, controls="", name="m-step300", tasks=sc.CURVE_TASKS)
    curve = " ".join(calls[-1][2:])  # a point of the curve: no controls (step 0 is the model's own init), no heldout
    assert "--tasks tatoeba,flores " in curve and "--control" not in curve and "--name m-step300" in curve


def test_curve_table_reads_the_exported_steps_and_marks_where_the_baseline_clears_the_ngram(tmp_path):
    sc = load_bench("seed_claims")
    for label in ("infoxlm-s0", "mlm+tlm-s0"):
        for step in (0, 150, 300, 600):  # the last export (600) is the final model: the curve reads it from there
            (tmp_path / label / "steps" / f"step-{step:07d}").mkdir(parents=True)
    assert [s for s, _ in sc.series(tmp_path / "infoxlm-s0", 300)] == [0, 300]  # 150: not a multiple of 300
    assert [s for s, _ in sc.series(tmp_path / "infoxlm-s0", 150)] == [0, 150, 300]
    assert sc.curve_name(tmp_path / "infoxlm-s0", 300) == "infoxlm-s0-step300"
    table = {("charngram", task): (10.0, None, "no layers", None) for task in sc.TASKS}
    for name, score in (("infoxlm-s0-step0", 4.0), ("mlm+tlm-s0-step0", 4.0), ("infoxlm-s0-step300", 9.0),
                        ("mlm+tlm-s0-step300", 7.0), ("infoxlm-s0", 14.0), ("mlm+tlm-s0", 11.0)):
        table[(name, "tatoeba")] = (score, 2, "dev", 2)
    args = argparse.Namespace(seeds="0", steps=600, budget=300.0, size="tiny", max_eval=300, init=None,
                              out=str(tmp_path), report=str(tmp_path / "claims.md"), claims="infoxlm", curve=300)
    text = sc.write_report(args, table, "cmd").read_text(encoding="utf-8")
    assert "## XLM-E" not in text and "## VECO" not in text  # --claims infoxlm: that claim alone
    assert "| tatoeba | 0 | 4.0 (1 seed) | 4.0 (1 seed) | 10.0 | no |" in text
    assert "| tatoeba | 300 | 9.0 (1 seed) | 7.0 (1 seed) | 10.0 | no |" in text
    assert "| tatoeba | 600 | 14.0 (1 seed) | 11.0 (1 seed) | 10.0 | yes |" in text
    assert "| flores | 300 | — | — | 10.0 | — |" in text  # no score: a dash, not a zero
    # a continued run's step 0 is the init model: its score is read from the init model's, for both models
    for label in ("infoxlm-init-s0", "mlm+tlm-init-s0"):
        for step in (0, 300, 600):
            (tmp_path / label / "steps" / f"step-{step:07d}").mkdir(parents=True)
    table[(sc.INIT, "tatoeba")] = (80.0, 8, "dev", 8)
    table[("infoxlm-init-s0-step300", "tatoeba")] = (78.0, 8, "dev", 8)
    args.claims, args.init = "init", "e5/"
    text = sc.write_report(args, table, "cmd").read_text(encoding="utf-8")
    assert "| tatoeba | 0 | 80.0 (1 seed) | 80.0 (1 seed) | 10.0 | yes |" in text
    assert "| tatoeba | 300 | 78.0 (1 seed) | — | 10.0 | — |" in text


@pytest.mark.parametrize("claims, message", [("infoxlm,xlco", "--claims: unknown xlco"),
                                             ("veco2-init", "continue a pretrained model: give --init DIR")])
def test_unknown_claim_or_an_init_claim_without_init_is_a_usage_error(tmp_path, capsys, claims, message):
    sc = load_bench("seed_claims")
    with pytest.raises(SystemExit) as exit_:
        sc.main(["--out", str(tmp_path), "--claims", claims])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_model_pins_the_tokenizer_of_the_first_trained_model_that_trained_the_same_one(tmp_path, monkeypatch):
    sc = load_bench("seed_claims")
    calls = []
    monkeypatch.setattr(sc, "sh", lambda cmd, log: calls.append(" ".join(cmd[2:])))
    args = argparse.Namespace(size="tiny", steps=1200, budget=300.0, init=None, set=[], data=None, out=str(tmp_path))
    infoxlm, mlm_tlm = sc.CLAIMS[0][1:]
    sc.train(mlm_tlm, 0, args, earlier=[infoxlm])  # the earlier model is not trained (yet): its own tokenizer
    first = tmp_path / "infoxlm-s0"
    first.mkdir()
    (first / "model.safetensors").write_text("")
    (first / "xeval_pretrain.json").write_text('{"config": {}, "last": {}}')  # still training: its last save
    assert not sc.trained(first)
    sc.train(mlm_tlm, 0, args, earlier=[infoxlm])
    (first / "xeval_pretrain.json").write_text('{"config": {}, "last": {"step": 1200}}')  # finished
    assert sc.trained(first)
    sc.train(mlm_tlm, 0, args, earlier=[infoxlm])
    sc.train(mlm_tlm, 1, args, earlier=[infoxlm])  # seed 1's infoxlm is not trained: its own again
    assert "tokenizer.path" not in calls[0] and "tokenizer.path" not in calls[1] and "tokenizer.path" not in calls[3]
    assert f"--set tokenizer.path={tmp_path / 'infoxlm-s0'}" in calls[2]
    # every claim's presets sample the same lines at tiny (alpha 0.7); general-cpu-4l's BPE at alpha 0.3 does not
    assert sc.same_tokenizer(sc.CLAIMS[1][1], sc.CLAIMS[3][1], 0, args)  # xlm-e and veco2
    assert not sc.same_tokenizer(infoxlm, ("g", "general-cpu-4l", ()), 0, args)
    assert not sc.same_tokenizer(infoxlm, ("v", "infoxlm", ("tokenizer.vocab_size=8000",)), 0, args)


def test_a_model_stopped_part_way_continues_with_resume(tmp_path, monkeypatch):
    """A sweep killed while a model trained: that model's out folder has a saved state but no finished card, and
    the rerun continues it (``xeval pretrain --resume``) instead of failing on a folder that holds a run."""
    sc = load_bench("seed_claims")
    calls = []
    monkeypatch.setattr(sc, "sh", lambda cmd, log: calls.append(cmd))
    args = argparse.Namespace(size="tiny", steps=300, budget=300.0, init="e5/", set=[], data=None, max_eval=300,
                              out=str(tmp_path))
    (tmp_path / "infoxlm-init-s2" / "state").mkdir(parents=True)
    (tmp_path / "infoxlm-init-s2" / "state" / "latest").write_text("step-0000200\n", encoding="utf-8")
    sc.train(sc.INIT_CLAIM[1], 2, args)
    sc.train(sc.INIT_CLAIM[2], 2, args)
    assert "--resume" in calls[0] and "--resume" not in calls[1]
    assert (tmp_path / "infoxlm-init-s2" / "state" / "latest").is_file()  # not finished: its state stays


def test_a_finished_model_drops_its_training_state_and_probes_skip_the_cache(tmp_path, monkeypatch):
    """At e5's size a run's state (weights and AdamW moments) is ~3 GB and its probes' cached vectors ~1.5 GB; a
    three-seed sweep filled the disk with them. A finished run never resumes and each model is probed once."""
    import json

    from xeval.engine.config import load_config

    sc = load_bench("seed_claims")
    calls = []
    args = argparse.Namespace(size="tiny", steps=300, budget=300.0, init="e5/", set=[], data=None, max_eval=300,
                              out=str(tmp_path))
    out = tmp_path / "infoxlm-init-s2"

    def pretrain(cmd, log):  # what xeval pretrain leaves: the model, a finished card, and its last state
        calls.append(cmd)
        (out / "state" / "step-0000300").mkdir(parents=True)
        (out / "state" / "latest").write_text("step-0000300\n", encoding="utf-8")
        (out / "model.safetensors").write_text("")
        config = load_config("infoxlm", "tiny", ["train.seed=2"]).to_dict()
        (out / "xeval_pretrain.json").write_text(json.dumps({"config": config, "finished": True}))

    monkeypatch.setattr(sc, "sh", pretrain)
    assert sc.train(sc.INIT_CLAIM[1], 2, args) == out and sc.trained(out)
    assert not (out / "state").exists() and (out / "model.safetensors").is_file()
    (out / "state").mkdir()  # a finished model of an older sweep that kept its state: dropped when it is reused
    assert sc.train(sc.INIT_CLAIM[1], 2, args) == out and len(calls) == 1 and not (out / "state").exists()
    monkeypatch.setattr(sc, "sh", lambda cmd, log: calls.append(cmd))
    sc.evaluate(out, args)
    assert "--no-cache" in calls[-1]


def test_jobs_run_seeds_side_by_side_each_logged_apart(tmp_path, monkeypatch):
    import threading

    sc = load_bench("seed_claims")
    done, threads, logs = [], set(), []
    started = threading.Barrier(2, timeout=10)  # both seeds must be running at once, or this times out

    def train(variant, seed, args, earlier=()):
        if variant[0] == "infoxlm-init":
            started.wait()
        threads.add(threading.get_ident())
        done.append((variant[0], seed))
        logs.append(sc.log_file(args, "train", seed).name)
        return tmp_path / f"{variant[0]}-s{seed}"

    monkeypatch.setattr(sc, "train", train)
    monkeypatch.setattr(sc, "evaluate", lambda *a, **k: None)
    monkeypatch.setattr(sc, "scores", lambda runs: {})
    monkeypatch.setattr(sc, "write_report", lambda args, table, command: tmp_path / "claims.md")
    assert sc.main(["--size", "tiny", "--steps", "3", "--seeds", "0,1", "--claims", "init", "--init", "e5/",
                    "--jobs", "2", "--out", str(tmp_path)]) == 0
    assert sorted(done) == [(v, s) for v in ("infoxlm-init", "mlm+tlm-init") for s in (0, 1)]
    assert len(threads) == 2 and sorted(set(logs)) == ["train-s0.log", "train-s1.log"]
    # the init claim's variants of one seed run in order (the second pins the first's tokenizer at tiny)
    assert [v for v, s in done if s == 0] == ["infoxlm-init", "mlm+tlm-init"]


def test_veco2_from_the_init_shares_the_continued_baseline_and_never_gets_the_sweeps_xlco(tmp_path, monkeypatch):
    sc = load_bench("seed_claims")
    calls = []
    monkeypatch.setattr(sc, "sh", lambda cmd, log: calls.append(cmd))
    args = argparse.Namespace(size="tiny", steps=300, budget=300.0, init="e5/", data=None, out=str(tmp_path),
                              set=["objectives.xlco.queue_size=128", "objectives.xlco.pooling=mean"])
    sc.train(sc.VECO2_INIT_CLAIM[1], 0, args)
    from xeval.engine.config import load_config

    sets = [calls[0][i + 1] for i, c in enumerate(calls[0]) if c == "--set"]
    assert "--init" in calls[0] and "--config" in calls[0] and calls[0][calls[0].index("--config") + 1] == "veco2"
    objectives = load_config("veco2", "tiny", sets).objectives
    assert sorted(objectives) == ["mlm", "seqcl", "tlm", "tokcl"]  # the sweep's XLCO settings did not add XLCO
    # one baseline for both init claims: the continued MLM+TLM; the veco2 preset without its contrasts is that model
    assert sc.VECO2_INIT_CLAIM[2] is sc.INIT_CLAIM[2]
    base = load_config("infoxlm", "tiny", [*args.set, "objectives.xlco=null"])
    ablated = load_config("veco2", "tiny", [*args.set, "objectives.xlco=null", "objectives.seqcl=null",
                                            "objectives.tokcl=null"])
    import dataclasses

    assert all(getattr(base, f.name) == getattr(ablated, f.name) for f in dataclasses.fields(base) if f.name != "name")
    # the default claims with --init run every init claim; without --init none; by key, the one named
    every = argparse.Namespace(claims=",".join(sc.CLAIM_KEYS), init="e5/")
    assert sc.selected_claims(every)[-4:] == [sc.INIT_CLAIM, sc.VECO2_INIT_CLAIM, sc.TRTD_INIT_CLAIM,
                                              sc.RELPOS_INIT_CLAIM]
    assert sc.selected_claims(argparse.Namespace(claims=every.claims, init=None)) == sc.CLAIMS
    assert sc.selected_claims(argparse.Namespace(claims="veco2-init", init="e5/")) == [sc.VECO2_INIT_CLAIM]


def test_xlm_e_from_the_init_differs_from_each_baseline_by_trtd_or_by_the_relative_bias_alone(tmp_path, monkeypatch):
    sc = load_bench("seed_claims")
    calls = []
    monkeypatch.setattr(sc, "sh", lambda cmd, log: calls.append(cmd))
    args = argparse.Namespace(size="tiny", steps=300, budget=300.0, init="e5/", data=None, out=str(tmp_path),
                              set=["objectives.xlco.queue_size=128"])
    from xeval.engine.config import load_config

    configs = {}
    for variant in (*sc.TRTD_INIT_CLAIM[1:], sc.RELPOS_INIT_CLAIM[2]):
        sc.train(variant, 0, args)
        cmd = calls[-1]
        assert "--init" in cmd
        configs[variant[0]] = load_config(variant[1], "tiny", [cmd[i + 1] for i, c in enumerate(cmd) if c == "--set"])
    xlm_e, no_trtd, no_relpos = configs["xlm-e-init"], configs["xlm-e-no-trtd-init"], configs["xlm-e-no-relpos-init"]
    assert sc.RELPOS_INIT_CLAIM[1] is sc.TRTD_INIT_CLAIM[1]  # one MRTD+TRTD model with the bias serves both claims
    # as from scratch: the gated bias in the TRTD pair (--init adds it at zero beside the absolute positions)
    assert xlm_e.model["relative_attention"] == no_trtd.model["relative_attention"] == "gated"
    assert sorted(xlm_e.objectives) == ["mrtd", "trtd"] and sorted(no_trtd.objectives) == ["mrtd"]
    assert xlm_e.objectives["mrtd"] == no_trtd.objectives["mrtd"] and xlm_e.data == no_trtd.data
    # the bias pair: every section equal but the bias (no sweep-wide XLCO in either)
    assert no_relpos.model == {**xlm_e.model, "relative_attention": "none"}
    assert (no_relpos.objectives, no_relpos.data, no_relpos.train) == (xlm_e.objectives, xlm_e.data, xlm_e.train)


def test_the_veco2_init_claim_reads_against_the_init_model(tmp_path):
    sc = load_bench("seed_claims")
    table = {("charngram", "tatoeba"): (10.0, None, "no layers", None), (sc.INIT, "tatoeba"): (60.0, 8, "dev", 8)}
    for s in (0, 1):
        table[(f"veco2-init-s{s}", "tatoeba")] = (58.0 + 2 * s, 12, "dev", 12)  # 58, 60: 59.0 ± 1.4
        table[(f"mlm+tlm-init-s{s}", "tatoeba")] = (40.0 + 4 * s, 6, "dev", 6)  # 40, 44: 42.0 ± 2.8
    args = argparse.Namespace(seeds="0,1", steps=300, budget=300.0, size="tiny", max_eval=300, init="e5/",
                              out=str(tmp_path), report=str(tmp_path / "claims.md"), claims="veco2-init")
    text = sc.write_report(args, table, "cmd").read_text(encoding="utf-8")
    assert "## InfoXLM" not in text
    veco2 = text.split("## VECO 2.0 from a pretrained init")[1]
    assert "| tatoeba | 59.0 ± 1.4 | 42.0 ± 2.8 | 60.0 (the init model) | 10.0 | yes | +17.0 | ✓ | 12 / 6 |" in veco2


def test_a_score_read_at_its_best_layer_is_marked_wherever_it_is_shown(tmp_path):
    """The held-out set has no dev split, and a probe run without its selection records (interrupted, or older than
    them) falls back to the best layer of the reported split: such cells carry †, in the claim table and over
    training, so an optimistic number never stands unmarked beside a chosen one."""
    sc = load_bench("seed_claims")
    for label in ("veco2-init-s0", "mlm+tlm-init-s0"):
        for step in (0, 200, 300):
            (tmp_path / label / "steps" / f"step-{step:07d}").mkdir(parents=True)
    table = {("charngram", "flores"): (48.0, None, "no layers", None), (sc.INIT, "flores"): (99.5, 12, "dev", 12),
             ("veco2-init-s0", "flores"): (99.0, 12, "dev", 12), ("mlm+tlm-init-s0", "flores"): (64.7, 6, "dev", 6),
             ("veco2-init-s0", "heldout"): (94.4, 12, "best (no dev)", 12),
             ("mlm+tlm-init-s0", "heldout"): (70.6, 6, "best (no dev)", 6),
             ("veco2-init-s0-step200", "flores"): (99.6, 12, "dev", 12),
             ("mlm+tlm-init-s0-step200", "flores"): (69.8, 7, "best (no dev)", 7)}  # its FLORES dev not probed
    args = argparse.Namespace(seeds="0", steps=300, budget=300.0, size="tiny", max_eval=300, init="e5/",
                              out=str(tmp_path), report=str(tmp_path / "claims.md"), claims="veco2-init", curve=200)
    text = sc.write_report(args, table, "cmd").read_text(encoding="utf-8")
    assert "| flores | 99.0 (1 seed) | 64.7 (1 seed) | 99.5 (the init model) | 48.0 | yes | +34.3 | ✓ | 12 / 6 |" in text
    assert "| heldout | 94.4 (1 seed) † | 70.6 (1 seed) † | — | — | — | +23.8 | ✓ | 12 / 6 |" in text
    assert "| flores | 200 | 99.6 (1 seed) | 69.8 (1 seed) † | 48.0 | yes |" in text
    assert "| flores | 300 | 99.0 (1 seed) | 64.7 (1 seed) | 48.0 | yes |" in text
    assert "† = read at its best layer instead" in text


def test_a_model_probed_on_fewer_languages_than_the_others_is_marked(tmp_path, capsys):
    """An interrupted probe run leaves a model with fewer languages than the store's others: its mean is over other
    languages, so the table marks it ‡ and the sweep says which split lacks what."""
    from tests.helpers.report_records import probe_records, write_run

    sc = load_bench("seed_claims")
    whole = probe_records("full-s0@aaaaaaaaaaaa", best_layer=2, dev_best=1)
    cut = [r for r in probe_records("cut-s0@bbbbbbbbbbbb", best_layer=2, dev_best=1)
           if not (r.unit.split == "test" and r.unit.lang == "zh")]
    table = sc.scores(write_run(tmp_path / "runs", whole + cut))
    assert table[("full-s0", "tatoeba")][4] is None
    assert table[("full-s0", "tatoeba")][:3] == (42.0, 1, "dev")  # (52 + 32) / 2 at dev's layer 1, not test's peak
    assert table[("cut-s0", "tatoeba")][4] == "test 1 of 2 languages"
    assert "cut-s0 tatoeba was probed on fewer languages" in capsys.readouterr().err
    assert sc.shown([table[("cut-s0", "tatoeba")]]) == "52.0 (1 seed) ‡"  # de alone: 10 points above the whole
    nodev = [r for r in probe_records("nodev-s0@cccccccccccc", best_layer=2, dev_best=1) if r.unit.split != "dev"]
    table = sc.scores(write_run(tmp_path / "runs", nodev))  # its selection split never probed: † alone says so
    assert table[("nodev-s0", "tatoeba")][2:] == ("best (no dev)", 2, None)
    assert sc.shown([table[("nodev-s0", "tatoeba")]]) == "52.0 (1 seed) †"  # (62 + 42) / 2 at the test peak


def test_the_init_models_held_out_score_comes_from_each_seeds_first_continued_run_at_step_0(tmp_path, monkeypatch):
    """The init folder has no held-out pairs (the engine's corpora define them, sampled by train.seed); a continued
    run's step 0 is the init model with the run's data settings, so the sweep probes it once a seed, as
    ``init-s<seed>``, and the claim table shows the mean over the seeds beside the models of those seeds."""
    sc = load_bench("seed_claims")
    runs = []
    monkeypatch.setattr(sc, "sh", lambda cmd, log: runs.append(cmd))

    def train(variant, seed, args, earlier=()):
        folder = tmp_path / f"{variant[0]}-s{seed}"
        (folder / "steps" / "step-0000000").mkdir(parents=True, exist_ok=True)
        return folder

    monkeypatch.setattr(sc, "train", train)
    monkeypatch.setattr(sc, "scores", lambda runs: {})
    monkeypatch.setattr(sc, "write_report", lambda args, table, command: tmp_path / "claims.md")
    assert sc.main(["--size", "tiny", "--steps", "3", "--seeds", "0,1", "--claims", "init,veco2-init", "--init", "e5/",
                    "--out", str(tmp_path)]) == 0
    named = [(cmd[cmd.index("--name") + 1], cmd[cmd.index("--model") + 1], cmd[cmd.index("--tasks") + 1])
             for cmd in runs if "--name" in cmd and cmd[cmd.index("--name") + 1].startswith(sc.INIT)]
    assert named == [(sc.INIT, "e5", "tatoeba,flores")] + [
        (f"{sc.INIT}-s{s}", str(tmp_path / f"infoxlm-init-s{s}" / "steps" / "step-0000000"), "heldout") for s in (0, 1)]
    table = {(f"{sc.INIT}-s{s}", "heldout"): (80.0 + 2 * s, 12, "best (no dev)", 12) for s in (0, 1)}
    for s in (0, 1):
        table[(f"infoxlm-init-s{s}", "heldout")] = (90.0, 8, "best (no dev)", 8)
        table[(f"mlm+tlm-init-s{s}", "heldout")] = (70.0, 6, "best (no dev)", 6)
    args = argparse.Namespace(seeds="0,1", steps=3, budget=300.0, size="tiny", max_eval=300, init="e5/",
                              out=str(tmp_path), report=str(tmp_path / "claims.md"), claims="init", curve=None)
    text = load_bench("seed_claims").write_report(args, table, "cmd").read_text(encoding="utf-8")  # not patched
    assert "| heldout | 90.0 ± 0.0 † | 70.0 ± 0.0 † | 81.0 ± 1.4 † (the init model) | — | — | +20.0 | ✓ | 8 / 6 |" in text


def test_a_finished_model_is_reused_only_if_it_was_trained_with_the_variants_settings(tmp_path, monkeypatch):
    """``xlm-e-init`` had no relative bias before an init could take one: a model left by that version must not
    enter today's claims under the same label."""
    import json

    from xeval.engine.config import load_config

    sc = load_bench("seed_claims")
    calls = []
    monkeypatch.setattr(sc, "sh", lambda cmd, log: calls.append(cmd))
    args = argparse.Namespace(size="tiny", steps=300, budget=300.0, init="e5/", data=None, out=str(tmp_path),
                              set=["objectives.xlco.queue_size=128"])
    out = tmp_path / "xlm-e-init-s0"
    out.mkdir()
    (out / "model.safetensors").write_text("")
    # the card the earlier version wrote: MRTD + TRTD as today's, seed 0, but no relative bias
    old = load_config("xlm-e", "tiny", ["objectives.xlco=null", "train.seed=0", "model.relative_attention=none"])
    (out / "xeval_pretrain.json").write_text(json.dumps({"config": old.to_dict(), "last": {"step": 300}}))
    with pytest.raises(SystemExit, match="model.relative_attention 'none' -> 'gated'"):
        sc.train(sc.XLM_E_INIT, 0, args)
    today = load_config("xlm-e", "tiny", ["objectives.xlco=null", "train.seed=0", "train.lr=5e-5"])  # lr: not deciding
    (out / "xeval_pretrain.json").write_text(json.dumps({"config": today.to_dict(), "last": {"step": 300}}))
    assert sc.train(sc.XLM_E_INIT, 0, args) == out and calls == []  # the same settings: reused, nothing trained
    (out / "xeval_pretrain.json").write_text('{"last": {"step": 300}}')  # a card edited by hand: one line, no reuse
    with pytest.raises(SystemExit, match="xeval_pretrain.json is unreadable: KeyError"):
        sc.train(sc.XLM_E_INIT, 0, args)
