"""Controlled-language study: how zero-shot transfer depends on shared vocabulary and word order.

Runs the quickstart (same world size, model and step count) on worlds that differ in one knob and prints one table:
fine-tuning tasks as "mean over the derived languages" (trained on qaa only; the qaa score beside it), probes at
their best layer. Conditions:

- ``overlap``: 50 % of the lexicon shared with the base language, every language SVO (only the lexicon differs);
- ``overlap0``: nothing shared (disjoint scripts), every language SVO;
- ``order``: 50 % shared, word orders SVO / SOV / VSO (the quickstart's default world);
- ``random``: the ``overlap`` world with an untrained (random-init) model of the same shape: the floor that the
  shared word forms alone give; ``random0`` likewise on the ``overlap0`` world.

    python bench/quickstart_transfer.py [--seeds 1] [--steps 400] [--out runs/study] [--conditions a,b]

Every run is a quickstart folder (reused when rerun); the table goes to stdout and ``<out>/study.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xeval.base.atomic import write_text  # noqa: E402
from xeval.run.quickstart import FINETUNE, PROBES, STEPS, Options, quickstart  # noqa: E402

CONDITIONS = {
    "overlap": {"overlap": (0.5,), "order": ("SVO",)},
    "overlap0": {"overlap": (0.0,), "order": ("SVO",)},
    "order": {"overlap": (0.5,), "order": ("SVO", "SOV", "VSO")},
    "random": {"overlap": (0.5,), "order": ("SVO",), "max_steps": 0},
    "random0": {"overlap": (0.0,), "order": ("SVO",), "max_steps": 0},
}
METRICS = {"synth_udpos": "f1", "synth_panx": "f1", "synth_pawsx": "accuracy", "synth_qa": "f1",
           "synth_tatoeba": "accuracy", "synth_alignment": "aer", "synth_lexicon": "precision_at_1"}  # fmt: skip
BASE = "qaa"


def scores(records) -> dict[str, tuple[float, float | None]]:
    """task -> (mean over derived languages, base-language score or None); probes at their best layer."""
    by_task = defaultdict(list)
    for rec in records:
        by_task[rec.unit.task].append(rec)
    out = {}
    for task, recs in by_task.items():
        metric = METRICS[task]
        if task in PROBES:
            by_layer = defaultdict(list)
            for r in recs:
                by_layer[r.unit.layer].append(r.metrics[metric])
            means = {layer: statistics.fmean(v) for layer, v in by_layer.items()}
            best = (min if metric == "aer" else max)(means, key=means.get)
            out[task] = (means[best], None)
        else:
            derived = [r.metrics[metric] for r in recs if r.unit.lang != BASE]
            base = [r.metrics[metric] for r in recs if r.unit.lang == BASE]
            out[task] = (statistics.fmean(derived), statistics.fmean(base) if base else None)
    return out


def table(results: dict[str, list[dict]]) -> str:
    tasks = [t for t in FINETUNE + PROBES if any(t in s for runs in results.values() for s in runs)]
    header = ["condition", "seeds"] + [f"{t.removeprefix('synth_')} {METRICS[t]}" for t in tasks]
    rows = []
    for cond, runs in results.items():
        cells = [cond, str(len(runs))]
        for task in tasks:
            derived = [s[task][0] for s in runs if task in s]
            base = [s[task][1] for s in runs if task in s and s[task][1] is not None]
            text = f"{statistics.fmean(derived):.1f}"
            if len(derived) > 1:
                text += f" ± {statistics.stdev(derived):.1f}"
            if base:
                text += f" (qaa {statistics.fmean(base):.1f})"
            cells.append(text)
        rows.append(cells)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None, help="pre-training steps (default: the quickstart's)")
    parser.add_argument("--out", default="runs/study")
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    results: dict[str, list[dict]] = {}
    for cond in [c.strip() for c in args.conditions.split(",") if c.strip()]:
        spec = dict(CONDITIONS[cond])
        for seed in range(args.seeds):
            steps = spec.get("max_steps", STEPS if args.steps is None else args.steps)
            opts = Options(out=str(Path(args.out) / f"{cond}-s{seed}"), steps=steps, seed=seed,
                           overlap=spec["overlap"], order=spec["order"])  # fmt: skip
            print(f"== {cond} seed {seed}", flush=True)
            result = quickstart(opts, echo=lambda text: print(f"   {text}", flush=True))
            from xeval.results.store import load_records

            records = [r for r in load_records([Path(opts.out) / "results"]) if r.unit.model == result["model"]]
            results.setdefault(cond, []).append(scores(records))
            print(table(results), flush=True)
    text = table(results)
    note = ("Fine-tuning: mean over the derived languages (zero-shot from qaa), qaa in brackets; probes: mean over "
            "the derived languages at the best layer (AER: lower is better).")  # fmt: skip
    write_text(Path(args.out) / "study.md", f"{text}\n\n{note}\n")
    print(text)
    print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
