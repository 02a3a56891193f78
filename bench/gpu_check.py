"""Helpers of ``bench/gpu_check.sh``: build its encoder, compare its stores, print its summary.

    python bench/gpu_check.py model --out DIR --suite S --task T --data D [--size base|toy]
    python bench/gpu_check.py summary --work DIR
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SIZES = {  # a random-init encoder of the base shape (BERT/XLM-R base) or a toy for --dry-run
    "base": {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072, "max_positions": 512, "vocab": 16000},
    "toy": {"layers": 2, "hidden": 64, "heads": 2, "intermediate": 128, "max_positions": 128, "vocab": 2000},
}


def build_model(args) -> None:
    """A random-init BERT of the chosen size with a WordPiece vocabulary trained on the task's training text."""
    from tests.helpers.tiny import make_tiny_bert
    from xeval.cards.catalog import load_suite
    from xeval.data.sources import DataRoot, load_examples

    card = load_suite(args.suite).card(args.task)
    examples = load_examples(card, card.train["lang"], card.train["split"], DataRoot.resolve(args.data), seed=0)
    texts = [" ".join(e.tokens) for e in examples]
    size = SIZES[args.size]
    make_tiny_bert(Path(args.out), texts=texts, vocab_size=size["vocab"], layers=size["layers"],
                   hidden=size["hidden"], heads=size["heads"], intermediate=size["intermediate"],
                   max_positions=size["max_positions"])
    print(f"built a random-init {args.size} encoder ({size['layers']} x {size['hidden']}) in {args.out}")


def _records(store: Path) -> dict:
    from xeval.results.store import Store

    return {r.unit: r for r in Store(store).records()} if store.is_dir() else {}


def _mean(values) -> float:
    values = list(values)
    return statistics.fmean(values) if values else float("nan")


def summary(args) -> None:
    work = Path(args.work)
    lines = []
    status = json.loads((work / "status.json").read_text()) if (work / "status.json").is_file() else {}
    lines.append(f"device: {(work / 'device.txt').read_text().strip() if (work / 'device.txt').is_file() else '?'}")

    # 1. engine
    text = (work / "engine.log").read_text() if (work / "engine.log").is_file() else ""
    head = next((line for line in text.splitlines() if line.startswith("engine throughput")), None)
    if head:
        peak = re.search(r"bf16 ([\d.]+) GFLOP/s", head)
        lines.append(f"engine ({head.split(':', 1)[1].split(';')[0].strip()}): measured bf16 matmul peak "
                     f"{float(peak.group(1)) / 1000:.1f} TFLOP/s" if peak else head)
        for name in ("hf-bert", "xeval", "xeval-bf16", "xeval-compile"):
            row = next((line.split() for line in text.splitlines() if line.split()[:1] == [name]), None)
            if row:
                lines.append(f"  {name:13s} {row[2]:>10s} tokens/s  {row[1]} s/step  MFU {row[-1]}")
    lines.append(f"  [{status.get('engine', 'not run')}]")

    # 2. fine-tuning fp32 vs bf16
    lines.append("fine-tuning (same seed, steps and data):")
    for precision in ("fp32", "bf16"):
        recs = _records(work / f"ft-{precision}")
        if not recs:
            lines.append(f"  {precision}: no records [{status.get('ft-' + precision, 'not run')}]")
            continue
        training = next(iter(recs.values())).extra.get("training", {})
        metric = next(iter(next(iter(recs.values())).metrics))
        per_lang = {u.lang: r.metrics.get(metric) for u, r in recs.items()}
        steps, seconds = training.get("steps"), training.get("duration_s")
        rate = f"{steps / seconds:.2f} steps/s" if steps and seconds else "?"
        lines.append(f"  {precision}: {metric} mean {_mean(per_lang.values()):.2f} over {len(per_lang)} languages "
                     f"({', '.join(f'{k} {v:.1f}' for k, v in sorted(per_lang.items()))}); {steps} steps in "
                     f"{seconds} s = {rate}; final loss {training.get('final_loss')} [{status.get('ft-' + precision)}]")
    a, b = _records(work / "ft-fp32"), _records(work / "ft-bf16")
    if a and b:
        keyed = {(u.task, u.lang): r for u, r in b.items()}
        gaps = [abs(r.metrics[m] - keyed[(u.task, u.lang)].metrics[m]) for u, r in a.items()
                if (u.task, u.lang) in keyed for m in r.metrics]
        lines.append(f"  |fp32 - bf16| per metric: max {max(gaps):.2f}, mean {_mean(gaps):.2f} points")

    # 3. all-layer probe sweep, 4. end to end, 5. torchrun
    sweep = _records(work / "probe")
    if sweep:
        by_layer: dict = {}
        for u, r in sweep.items():
            by_layer.setdefault(u.layer, []).append(next(iter(r.metrics.values())))
        best = max(by_layer, key=lambda k: _mean(by_layer[k]))
        seconds = sum(r.provenance.get("duration_s", 0) for r in sweep.values())
        lines.append(f"probe sweep: {len(by_layer)} layers x {len(sweep) // len(by_layer)} languages in "
                     f"{seconds:.1f} s; best layer {best} ({_mean(by_layer[best]):.1f}) [{status.get('probe')}]")
    else:
        lines.append(f"probe sweep: no records [{status.get('probe', 'not run')}]")
    e2e = _records(work / "e2e")
    lines.append(f"end to end --device cuda: {len(e2e)} units over {len({u.task for u in e2e})} tasks "
                 f"[{status.get('e2e', 'not run')}]")
    ranks = _records(work / "torchrun")
    if ranks and sweep:
        gaps = [abs(r.metrics[m] - sweep[u].metrics[m]) for u, r in ranks.items() if u in sweep for m in r.metrics]
        same = len([u for u in ranks if u in sweep])
        lines.append(f"torchrun 2 ranks on the device: {len(ranks)} units, {same} also in the one-process sweep, "
                     f"max |diff| {max(gaps, default=float('nan')):.4f} [{status.get('torchrun')}]")
    else:
        lines.append(f"torchrun 2 ranks on the device: no records [{status.get('torchrun', 'not run')}]")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="verb", required=True)
    model = sub.add_parser("model")
    for flag in ("--out", "--suite", "--task", "--data"):
        model.add_argument(flag, required=True)
    model.add_argument("--size", choices=list(SIZES), default="base")
    sub.add_parser("summary").add_argument("--work", required=True)
    args = parser.parse_args()
    build_model(args) if args.verb == "model" else summary(args)


if __name__ == "__main__":
    main()
