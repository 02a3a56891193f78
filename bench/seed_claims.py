"""The seed papers' claims, reproduced small: train each ablation pair on a time budget with several seeds, probe
every layer, and write ``reports/seed_claims.md`` -- per claim the small-scale effect with its seed spread, beside
the random-init control, and whether it has the paper's sign.

    python bench/seed_claims.py --size micro --budget 300 --seeds 0,1 --out /tmp/claims   # a few CPU-hours in all
    python bench/seed_claims.py --size micro --budget 20 --seeds 0 --max-eval 100 --out /tmp/claims-smoke

Claims (each a variant against its baseline, same size, budget, data and seed):
- InfoXLM: MLM+TLM+XLCO vs MLM+TLM (``infoxlm`` vs ``infoxlm`` without ``xlco``): retrieval up;
- XLM-E: MRTD+TRTD vs MRTD (``xlm-e`` vs ``xlm-e-no-trtd``): retrieval up; gated relative position bias vs none
  (``xlm-e`` vs ``model.relative_attention=none``): retrieval up;
- VECO 2.0: + sequence contrast + token contrast vs MLM+TLM (``veco2`` vs ``veco2`` without ``seqcl``/``tokcl``):
  retrieval up;
- layers: where each objective's retrieval peaks (XLM-E reports a later peak than MLM).
Retrieval = Tatoeba (XTREME's 36 languages), FLORES-200 devtest and the engine's held-out pairs, each at the layer
chosen on its selection split (FLORES dev; the held-out set has none: its best layer, marked); Tatoeba is never
used to choose anything. Transfer gaps (XNLI-mini), alignment AER and POS/NER transfer are not run here (their
fine-tuning does not fit the budget of a shared CPU); ``--tasks`` adds probe tasks of the ``probes`` suite.

With ``--init DIR`` (a BERT / XLM-R Hugging Face folder, e.g. multilingual-e5-small) four more claims run from
pretrained weights, as InfoXLM starts from XLM-R's: MLM+TLM+XLCO (contrast at the middle layer; key ``init``) and
MLM+TLM + VECO 2.0's sequence and token contrast (key ``veco2-init``), each against MLM+TLM, all continued from DIR
(one baseline model serves both), and XLM-E's two: MRTD+TRTD against MRTD (key ``trtd-init``) and the gated
relative position bias against none (key ``relpos-init``), MRTD+TRTD with the bias serving both (the bias is added
beside the init's absolute positions, its table starting at zero, so the model starts as the init model). Their
reference is the init model itself (evaluated once as
``init``; its held-out score, per seed, from that seed's first continued run's step 0, which is the init model
(equal hidden states, tested) and carries the run's data settings -- the held-out sample depends on the seed --,
so ``train.export_every`` must be set for it), not random weights; it is no floor -- continued pre-training with
a fresh MLM head can lower it -- so
these claims are read where their baseline clears the char n-gram baseline, and the table shows how far each
continued model moved from its init.

``--claims infoxlm,trtd`` runs a subset (keys: infoxlm, trtd, relpos, veco2; init, veco2-init, trtd-init and
relpos-init with ``--init``). ``--curve N`` also probes each model's exported steps at multiples of N (``--set
train.export_every=M``, M dividing N: ``steps/step-NNNNNNN``; step 0 = its initial weights) on Tatoeba and FLORES
(the held-out pairs are left out: they would double the cost), and adds a table per claim of the scores over
training: where a baseline crosses the floors.

``--steps N`` trains a fixed number of steps (the same model on an idle or a busy machine) instead of ``--budget``
seconds. Every score is shown beside both floors: the random-init control and the char n-gram TF-IDF baseline
(string similarity, no network); a claim is only read where its baseline clears both (the init claims: see above).

``--jobs 2`` trains and probes two seeds side by side (one thread each: on a 2-core machine the pair takes about
the time of one seed), each seed's commands logged to its own ``train-s<seed>.log`` / ``eval-s<seed>.log``.

Every run is resume-aware (a finished model is reused -- if its saved objectives, relative bias and seed are the
variant's, else the sweep stops with one line --, one stopped part-way continues from its last saved state with
``xeval pretrain --resume``, stored probe units are skipped), so a stopped sweep continues where it was. A small
model may fail to show an effect: the table then says so with the numbers.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# claim -> (paper's expectation, variant, baseline); a variant = (label, preset, --set overrides)
CLAIMS = [
    ("InfoXLM: XLCO adds cross-lingual alignment (MLM+TLM+XLCO vs MLM+TLM)",
     ("infoxlm", "infoxlm", ()), ("mlm+tlm", "infoxlm", ("objectives.xlco=null",))),
    ("XLM-E: TRTD adds alignment (MRTD+TRTD vs MRTD)",
     ("xlm-e", "xlm-e", ()), ("xlm-e-no-trtd", "xlm-e-no-trtd", ())),
    ("XLM-E: gated relative position bias helps (gated vs none)",
     ("xlm-e", "xlm-e", ()), ("xlm-e-no-relpos", "xlm-e", ("model.relative_attention=none",))),
    ("VECO 2.0: sequence + token contrast add alignment (vs MLM+TLM)",
     ("veco2", "veco2", ()), ("veco2-mlm+tlm", "veco2", ("objectives.seqcl=null", "objectives.tokcl=null"))),
]
# from a pretrained init (--init): InfoXLM continues XLM-R with XLCO at a middle layer (its paper's layer 8 of 12)
INIT_CLAIM = ("InfoXLM from a pretrained init: XLCO at the middle layer adds alignment (vs MLM+TLM, both continued)",
              ("infoxlm-init", "infoxlm", ()),  # the preset's XLCO layer: 2/3 of the depth
              ("mlm+tlm-init", "infoxlm", ("objectives.xlco=null",)))
# VECO 2.0's contrasts continued from the same init, against the same continued MLM+TLM baseline (the veco2 preset
# without seqcl / tokcl is that model: same objectives, data and settings). Its own xlco=null comes after the sweep's
# --set: a sweep-wide objectives.xlco.* (for the claim above) would otherwise add XLCO to this model.
VECO2_INIT_CLAIM = ("VECO 2.0 from a pretrained init: sequence + token contrast add alignment (vs MLM+TLM, both "
                    "continued)", ("veco2-init", "veco2", ("objectives.xlco=null",)), INIT_CLAIM[2])
# XLM-E's two claims continued from the init, as from scratch: MRTD+TRTD with the gated relative position bias (added
# beside the init's absolute positions, its table from zero: xeval/engine/hf_init.py) is the variant of both, one
# model. The generator and the discriminator's head start from train.seed; no sweep-wide XLCO (above).
XLM_E_INIT = ("xlm-e-init", "xlm-e", ("objectives.xlco=null",))
TRTD_INIT_CLAIM = ("XLM-E from a pretrained init: TRTD adds alignment (MRTD+TRTD vs MRTD, both continued)", XLM_E_INIT,
                   ("xlm-e-no-trtd-init", "xlm-e-no-trtd", ("objectives.xlco=null",)))
RELPOS_INIT_CLAIM = ("XLM-E from a pretrained init: the gated relative position bias helps (added at zero beside the "
                     "init's absolute positions, vs none; MRTD+TRTD, both continued)", XLM_E_INIT,
                     ("xlm-e-no-relpos-init", "xlm-e", ("model.relative_attention=none", "objectives.xlco=null")))
CLAIM_KEYS = ("infoxlm", "trtd", "relpos", "veco2")  # --claims names CLAIMS by these, in order
INIT_CLAIMS = {"init": INIT_CLAIM, "veco2-init": VECO2_INIT_CLAIM, "trtd-init": TRTD_INIT_CLAIM,
               "relpos-init": RELPOS_INIT_CLAIM}  # --claims keys of the claims run with --init
TASKS = ("tatoeba", "flores", "heldout")
INIT = "init"  # the store name of the --init model, the floor of the init claim


def sh(cmd: list[str], log: Path) -> None:
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    with open(log, "a", encoding="utf-8") as f:
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    if done.returncode != 0:
        sys.exit(f"seed_claims: {cmd[3]} failed (exit {done.returncode}); see {log}")


def trained(out: Path) -> bool:
    """A finished pre-training run. A run still training has ``model.safetensors`` and a card too (its last save):
    the engine's card says when it finished, read by the same check ``xeval run`` warns with."""
    from xeval.models.files import unfinished_run

    card = out / "xeval_pretrain.json"
    return (out / "model.safetensors").is_file() and card.is_file() and unfinished_run(out) is None


def same_tokenizer(a, b, seed: int, args) -> bool:
    """Whether two variants would train the same tokenizer (same tokenizer section, corpora and seed)."""
    from xeval.engine.config import load_config
    from xeval.engine.setup import tokenizer_settings

    def settings(variant):
        _, preset, sets = variant
        return tokenizer_settings(load_config(preset, args.size, [f"train.seed={seed}", *args.set, *sets]))

    return settings(a) == settings(b)


def train(variant, seed: int, args, earlier=()) -> Path:
    """Pre-train one variant at one seed. ``earlier``: the variants already trained at this seed; this one pins the
    tokenizer of the first that trained the same one (at ``tiny`` every claim's presets do) -- ``tokenizers`` is not
    bit-reproducible (xeval.engine.tokenizer), so the models compared share one tokenizer instead of several that
    differ in their pieces' scores and ids; it also saves the tokenizer's few CPU-minutes a model."""
    label, preset, sets = variant
    out = Path(args.out) / f"{label}-s{seed}"
    if trained(out):  # trained already (resume-aware) -- by this variant's settings, not an older meaning of its label
        differs = settings_differ(out, preset, args, [f"train.seed={seed}", *args.set, *sets])
        if differs:
            sys.exit(f"seed_claims: {out} holds a finished model that is not {label} as this sweep trains it "
                     f"({differs}); move it away or choose another --out")
        drop_state(out)
        return out
    cmd = [sys.executable, "-m", "xeval", "pretrain", "--config", preset, "--size", args.size, "--out", str(out),
           "--set", f"train.seed={seed}"]
    for other in earlier if not label.endswith("-init") else ():  # an init run keeps the init model's tokenizer
        first = Path(args.out) / f"{other[0]}-s{seed}"
        if not other[0].endswith("-init") and trained(first) and same_tokenizer(variant, other, seed, args):
            cmd += ["--set", f"tokenizer.path={first}"]
            break
    if args.steps:  # a fixed number of steps: the same model on an idle or a busy machine
        cmd += ["--set", f"train.steps={args.steps}"]
    else:
        cmd += ["--set", f"train.max_seconds={args.budget}", "--set", "train.steps=1000000"]
    if label.endswith("-init"):
        cmd += ["--init", args.init]
    if (out / "state" / "latest").is_file():  # stopped part-way (a killed sweep): continue from its last state
        cmd += ["--resume"]
    # the sweep-wide --set first, the variant's own after it: an ablation (objectives.xlco=null) must win over a
    # setting of the objective it removes (--set objectives.xlco.queue_size=128 would otherwise bring it back)
    for item in args.set + list(sets):
        cmd += ["--set", item]
    if args.data:
        cmd += ["--data", args.data]
    sh(cmd, log_file(args, "train", seed))
    drop_state(out)
    return out


def drop_state(out: Path) -> None:
    """Remove a finished run's training state: it only serves ``--resume``, which a finished run never needs, and
    from an e5-sized init it is ~3 GB a model (weights and AdamW moments) -- a three-seed sweep filled the disk with
    them (2026-12-08). A run stopped part-way keeps its state."""
    if trained(out):
        shutil.rmtree(out / "state", ignore_errors=True)


def settings_differ(out: Path, preset: str, args, sets: list[str]) -> str | None:
    """What a finished run's saved config holds otherwise than the variant would train (its objectives, its relative
    position bias, its seed), or None. A label can change meaning between versions of this script (``xlm-e-init``
    had no bias before the init could take one): reusing such a model would put it into the wrong claim. Both sides
    go through ``PretrainConfig``, as ``--resume`` compares them, so a key added since compares as its default."""
    import json

    from xeval.base.errors import UserError
    from xeval.engine.config import PretrainConfig, config_diff, load_config

    card = out / "xeval_pretrain.json"
    try:
        saved = PretrainConfig.from_dict(json.loads(card.read_text(encoding="utf-8"))["config"], str(card)).to_dict()
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, UserError) as err:  # edited or cut short
        return f"its xeval_pretrain.json is unreadable: {type(err).__name__} {str(err).splitlines()[0] if str(err) else ''}"
    want = load_config(preset, args.size, sets).to_dict()

    def deciding(c: dict) -> dict:  # the init's shape and the budget settings may differ; these may not
        return json.loads(json.dumps({"objectives": c["objectives"], "train": {"seed": c["train"]["seed"]},
                                      "model": {"relative_attention": c["model"].get("relative_attention", "none")}}))

    return config_diff(deciding(saved), deciding(want)) or None


def log_file(args, kind: str, seed: int | None = None) -> Path:
    """``train.log`` / ``eval.log`` in ``--out``; one per seed under ``--jobs`` (parallel runs' lines would mix)."""
    several = getattr(args, "jobs", 1) > 1 and seed is not None
    return Path(args.out) / (f"{kind}-s{seed}.log" if several else f"{kind}.log")


def evaluate(model: Path, args, controls: str = "random-init,charngram", name: str | None = None,
             tasks: tuple[str, ...] = TASKS, seed: int | None = None) -> None:
    """Retrieval probes at every layer beside the floors (``controls``; the char n-gram baseline is computed once
    per store, whatever the model). Models trained from ``--init`` have the init model as their floor instead."""
    if name == INIT and args.init and Path(model) == Path(args.init):  # the init folder itself has no held-out pairs (see main)
        tasks = [t for t in tasks if t != "heldout"]
    cmd = [sys.executable, "-m", "xeval", "run", "--model", str(model), "--suite", "engine", "--tasks",
           ",".join(tasks), "--layers", "all", "--threads", "1", "--device", "cpu",
           "--out", str(Path(args.out) / "runs"), "--max-eval", str(args.max_eval),
           "--no-cache"]  # each model is probed once: its cached vectors (~1.5 GB from e5's size) are never read again
    if controls:
        cmd += ["--control", controls]
    if name:
        cmd += ["--name", name]
    if args.data:
        cmd += ["--data", args.data]
    sh(cmd, log_file(args, "eval", seed))


CURVE_TASKS = ("tatoeba", "flores")


def series(model: Path, every: int) -> list[tuple[int, Path]]:
    """The exported steps of a trained model (``train.export_every``) at multiples of ``every``, step 0 = its
    initial weights; the last export equals the model itself, so the curve takes every step but the last from here."""
    steps = sorted((int(d.name.split("-")[1]), d) for d in (model / "steps").glob("step-*") if d.is_dir())
    return [(step, d) for step, d in steps[:-1] if step % every == 0]


def curve_name(model: Path, step: int) -> str:
    return f"{model.name}-step{step}"


def scores(runs: Path) -> dict:
    """{(model folder name or its control, task): (score at the chosen layer, chosen layer, rule, peak layer, the
    splits probed on fewer languages than the store's other models, or None)}."""
    from xeval.report.frame import shown_records
    from xeval.results.layers import choose_layers
    from xeval.results.store import Store

    records = shown_records(Store(runs).records())  # one per cell: a rerun with other settings never mixes in
    out = {}
    ngram: dict = {}
    for r in records:  # the char n-gram baseline: no layer, one score per language
        if r.unit.model.startswith("charngram@") and r.unit.split != "dev" and r.metrics:
            ngram.setdefault(r.unit.task, []).append(r.metrics["accuracy"])
    for task, values in ngram.items():
        out[("charngram", task)] = (statistics.mean(values), None, "no layers", None)
    # a model probed on fewer languages than another in the store (an interrupted probe run) is marked: its means
    # are over other languages, and its layer was chosen on a part of the selection split
    langs: dict = {}
    for r in records:
        if not r.unit.model.startswith("charngram@"):
            langs.setdefault((r.unit.task, r.unit.split), {}).setdefault(r.unit.model, set()).add(r.unit.lang)
    probed: dict = {}  # task -> every model with a record of it, whatever the split
    for (task, _), by_model in langs.items():
        probed.setdefault(task, set()).update(by_model)
    missing: dict = {}
    for (task, split), by_model in langs.items():
        most = max(len(v) for v in by_model.values())
        for model in sorted(probed[task]):
            have = len(by_model.get(model, ()))  # none at all: a split the run never reached
            if have < most and not (split == "dev" and have == 0):  # no selection split at all: † says so
                missing.setdefault((model, task), []).append(f"{split} {have} of {most} languages")
    for (model, task), (choice, curve) in choose_layers(records).items():
        if curve is None:
            continue
        layer = choice.layer if choice.rule == "dev" else curve.universal_layer
        rule = "dev" if choice.rule == "dev" else "best (no dev)"
        name = model.split("@")[0]
        short = "; ".join(missing.get((model, task), [])) or None
        if short:
            print(f"seed_claims: {name} {task} was probed on fewer languages than the store's other models "
                  f"({short}): marked ‡; rerun its probe (stored units are reused) to complete it", file=sys.stderr)
        out[(name, task)] = (curve.scores[layer], layer, rule, curve.universal_layer, short)
    return out


def steps_reached(out: Path, label: str, seeds: list[int]) -> str:
    """The optimiser steps each seed's model reached within its time budget (the last ``step`` of its ``log.jsonl``):
    a budget buys fewer steps on a busier machine, so a variant and its baseline compare only at similar counts."""
    import json

    counts = []
    for s in seeds:
        path = out / f"{label}-s{s}" / "log.jsonl"
        if path.is_file():
            steps = [json.loads(line).get("step") for line in path.read_text(encoding="utf-8").splitlines() if line]
            counts.append(str(next((x for x in reversed(steps) if x is not None), "?")))
    return ", ".join(counts) or "—"


def shown(entries: list[tuple]) -> str:
    """``mean_std`` of the entries' scores (``scores`` tuples), marked † where any was read at its best layer
    rather than at the layer its selection split chose: the held-out set (no dev split), or a probe run whose
    selection records are missing (interrupted, or made before they were probed: ``xeval run`` on the same store
    completes it). A best-layer score is optimistic, so it never stands unmarked beside a chosen one. ‡: probed on
    fewer languages than the store's other models (``scores``)."""
    text = mean_std([e[0] for e in entries])
    text += " †" if any(e[2] != "dev" for e in entries) else ""
    return text + " ‡" if any(len(e) > 4 and e[4] for e in entries) else text


def mean_std(values: list[float]) -> str:
    if not values:
        return "—"
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.1f} ± {std:.1f}" if len(values) > 1 else f"{values[0]:.1f} (1 seed)"


def selected_claims(args) -> list:
    keys = set(getattr(args, "claims", ",".join(CLAIM_KEYS)).split(","))
    chosen = [c for key, c in zip(CLAIM_KEYS, CLAIMS) if key in keys]
    every = keys >= set(CLAIM_KEYS)  # the default (every from-scratch claim) adds every claim from the init
    return chosen + [c for key, c in INIT_CLAIMS.items() if args.init and (key in keys or every)]


def curve_rows(args, table: dict, variant, base, seeds: list[int]) -> list[str]:
    """Scores over training (the exported steps, then the final model), variant against baseline, mean over seeds,
    beside the char n-gram baseline: the step at which a baseline clears the string-similarity floor, if any."""
    out = Path(args.out)
    steps = sorted({step for label in (variant[0], base[0]) for s in seeds
                    for step, _ in series(out / f"{label}-s{s}", args.curve)})
    if not steps:
        return []
    final = args.steps or "final"
    rows = ["Over training (mean over seeds; each step's score at the layer its own rule chose):", "",
            "| task | step | variant | baseline | char n-gram | baseline above the char n-gram |",
            "|---|---|---|---|---|---|"]
    for task in CURVE_TASKS:
        ngram = table.get(("charngram", task), (None,))[0]
        for step in steps + [final]:
            def at(label, step=step, task=task):
                if step == 0 and label.endswith("-init"):  # a continued run's step 0 is the init model's weights
                    return [table[(INIT, task)]] if (INIT, task) in table else []
                names = [f"{label}-s{s}" if step == final else f"{label}-s{s}-step{step}" for s in seeds]
                return [table[(n, task)] for n in names if (n, task) in table]

            v, b = at(variant[0]), at(base[0])
            above = "—" if not b or ngram is None else ("yes" if statistics.mean(e[0] for e in b) > ngram else "no")
            rows.append(f"| {task} | {step} | {shown(v)} | {shown(b)} | "
                        f"{'—' if ngram is None else f'{ngram:.1f}'} | {above} |")
    return rows + [""]


def write_report(args, table: dict, command: str) -> Path:
    seeds = [int(s) for s in args.seeds.split(",")]
    training = (f"{args.steps} steps per model (fixed)" if args.steps else
                f"{args.budget:g} s of training per model (train.max_seconds)")
    lines = ["# The seed papers' claims at small scale", "",
             f"Regenerate: `{command}`", "",
             f"Size `{args.size}`, {training}, one thread, seeds "
             f"{seeds}, probes on the first {args.max_eval} sentences per language, every layer; score = top-1 "
             "accuracy en→xx (%) at the layer chosen on the selection split (FLORES dev for Tatoeba and FLORES). "
             "† = read at its best layer instead, which is optimistic: the held-out set (no dev split), or a probe "
             "run whose selection records are missing (`xeval run` on the same store completes it); ‡ = probed on "
             "fewer languages than the other models (an interrupted probe run: a mean over other languages, or a "
             "layer chosen on part of the selection split). "
             "`control` = the random-init model of "
             "the same shape (mean over the runs; for the claims from a pretrained init: the init model itself, a "
             "reference rather than a floor, since continued pre-training may lower it); `char n-gram` = TF-IDF over "
             "character 1-4-grams (no network, no pairs; on the same sentences). A claim is read only where its "
             "baseline clears the floors (`floors cleared`: the control and the char n-gram; for the init claims "
             "the char n-gram). Δ = variant − baseline (mean over seeds); sign ✓ when Δ > 0 (the paper's direction), ✗ "
             "when Δ ≤ 0; with one seed no spread is known. "
             + ("Every model trains the same fixed number of steps." if args.steps else
                "A time budget buys fewer steps on a busier machine: each claim lists the steps its models reached."),
             ""]
    for claim, variant, base in selected_claims(args):
        lines += [f"## {claim}", "",
                  f"Steps reached per seed: {variant[0]} {steps_reached(Path(args.out), variant[0], seeds)}; "
                  f"{base[0]} {steps_reached(Path(args.out), base[0], seeds)}.", "",
                  "| task | variant | baseline | control | char n-gram | floors cleared | Δ | sign | "
                  "peak layer (variant / baseline) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for task in TASKS:
            def entries(label, suffix="", task=task):
                return [table[(f"{label}-s{s}{suffix}", task)] for s in seeds
                        if (f"{label}-s{s}{suffix}", task) in table]

            ve, be = entries(variant[0]), entries(base[0])
            v, b = [e[0] for e in ve], [e[0] for e in be]
            if variant[0].endswith("-init"):  # the init model; its held-out score is per seed (see main)
                ce = [table[(INIT, task)]] if (INIT, task) in table else entries(INIT)
            else:
                ce = entries(variant[0], "-random-init") + entries(base[0], "-random-init")
            c = [e[0] for e in ce]
            ngram = table.get(("charngram", task), (None,))[0]
            init_claim = variant[0].endswith("-init")  # the init model is a reference there, not a floor
            floors = [x for x in (statistics.mean(c) if c and not init_claim else None, ngram) if x is not None]
            cleared = "—" if not b or not floors else ("yes" if statistics.mean(b) > max(floors) else "no")
            peaks = [table[(f"{lab}-s{seeds[0]}", task)][3] if (f"{lab}-s{seeds[0]}", task) in table else "—"
                     for lab in (variant[0], base[0])]
            delta = statistics.mean(v) - statistics.mean(b) if v and b else None
            sign = "—" if delta is None else ("✓" if delta > 0 else "✗")
            spread = sum(statistics.stdev(x) for x in (v, b) if len(x) > 1)
            if delta is not None and len(v) > 1 and len(b) > 1 and abs(delta) <= spread:
                sign += " (within the seeds' spread)"
            floor = (f"{shown(ce).replace(' (1 seed)', '')} (the init model)"
                     if variant[0].endswith("-init") and c else shown(ce))
            lines.append(f"| {task} | {shown(ve)} | {shown(be)} | {floor} | "
                         f"{'—' if ngram is None else f'{ngram:.1f}'} | {cleared} | "
                         f"{'—' if delta is None else f'{delta:+.1f}'} | {sign} | {peaks[0]} / {peaks[1]} |")
        lines.append("")
        if getattr(args, "curve", None):
            lines += curve_rows(args, table, variant, base, seeds)
    lines += ["Not run here: XNLI-mini transfer gap (InfoXLM), alignment AER and POS/NER transfer (VECO 2.0) -- "
              "fine-tuning each model does not fit a shared CPU's budget.", ""]
    path = Path(args.report)
    path.parent.mkdir(parents=True, exist_ok=True)
    from xeval.base.atomic import write_text

    write_text(path, "\n".join(lines))
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="micro", choices=["micro", "tiny"])
    parser.add_argument("--budget", type=float, default=300.0, help="seconds of training per model")
    parser.add_argument("--steps", type=int, default=None,
                        help="train a fixed number of steps per model instead of --budget seconds")
    parser.add_argument("--init", default=None,
                        help="also run the continued pre-training claim from this BERT / XLM-R folder")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--max-eval", type=int, default=300, help="sentences per language and probe")
    parser.add_argument("--out", required=True, help="checkpoints, runs and logs")
    parser.add_argument("--data", default=None)
    parser.add_argument("--set", action="append", default=[], help="extra pretrain --set for every model")
    parser.add_argument("--report", default=str(REPO / "reports" / "seed_claims.md"))
    parser.add_argument("--claims", default=",".join(CLAIM_KEYS),
                        help=f"the claims to run, of {', '.join(CLAIM_KEYS)} (and {', '.join(INIT_CLAIMS)}, "
                             "with --init)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="seeds trained and probed side by side (one thread each; e.g. 2 on a 2-core machine)")
    parser.add_argument("--curve", type=int, default=None, metavar="N",
                        help="also probe each model's exported steps at multiples of N "
                             "(needs --set train.export_every=M, M dividing N)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: expected an integer >= 1, found {args.jobs}")
    unknown = set(args.claims.split(",")) - set(CLAIM_KEYS) - set(INIT_CLAIMS)
    if unknown:
        parser.error(f"--claims: unknown {', '.join(sorted(unknown))}; expected some of "
                     f"{', '.join(CLAIM_KEYS + tuple(INIT_CLAIMS))}")
    if not args.init and set(args.claims.split(",")) & set(INIT_CLAIMS):
        parser.error(f"--claims {args.claims}: {', '.join(INIT_CLAIMS)} continue a pretrained model: give --init DIR")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    claims = selected_claims(args)
    variants = list(dict.fromkeys(v for _, *pair in claims for v in pair))
    if any(c in claims for c in INIT_CLAIMS.values()):  # the init claims' reference: the init model itself
        evaluate(Path(args.init), args, controls="charngram", name=INIT)

    def one_seed(seed: int) -> None:
        heldout_reference = False  # the init model's held-out score of this seed: probed once (below)
        for i, variant in enumerate(variants):
            init_run = variant[0].endswith("-init")
            model = train(variant, seed, args, earlier=variants[:i])
            step0 = model / "steps" / "step-0000000"
            if init_run and step0.is_dir() and not heldout_reference:
                # The init folder has no held-out pairs, but a continued run's step 0 is the init model (equal hidden
                # states, tested) with the run's data settings; the held-out sample depends on train.seed, so the
                # reference is per seed, as the models it is shown beside.
                evaluate(step0, args, controls="", name=f"{INIT}-s{seed}", tasks=("heldout",), seed=seed)
                heldout_reference = True
            evaluate(model, args, controls="" if init_run else "random-init,charngram", seed=seed)
            for step, export in series(model, args.curve) if args.curve else []:
                if init_run and step == 0:
                    continue  # the init model's own weights (a 0-step continued run equals it): evaluated as INIT
                evaluate(export, args, controls="", name=curve_name(model, step), tasks=CURVE_TASKS, seed=seed)

    if args.jobs > 1:  # seeds side by side, one thread each; the shared store locks each unit (computed once)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(one_seed, seeds))  # a failed command's SystemExit comes back here
    else:
        for seed in seeds:  # seed-major: one complete set of variants first, so a stopped sweep has every claim once
            one_seed(seed)
    table = scores(Path(args.out) / "runs")
    command = "python bench/seed_claims.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    print(f"wrote {write_report(args, table, command)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
