"""What transparent huge pages do for a fine-tuning step (PyTorch's ``THP_MEM_ALLOC_ENABLE``; off by default, as in torch).

torch reads the setting once per process, so each measurement is a fresh worker process: the same model, batches
and optimiser steps with the setting on and off, interleaved (on, off, off, on, ...), one warm-up step each; the
median step time of each worker, then the median over workers. The step is the one xeval's
fine-tuning loop takes, written out (forward, backward, clipping at 1.0, fused AdamW,
``zero_grad(set_to_none=True)``), of a token-classification head on FLORES-200 English sentences (random labels:
timing only), so the embedding's gradient is reallocated every step as in a real fine-tune. The minor page faults per step are counted too (what the setting changes).

    python bench/huge_pages.py --model $E5 --batch-size 8 --steps 6 --repeats 3 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def worker(args) -> None:
    import resource
    import time

    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from tests.conftest import find_data_root

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    root = Path(args.data) if args.data else find_data_root()
    lines = (root / "flores200" / "devtest" / "eng_Latn.devtest").read_text(encoding="utf-8").splitlines()
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForTokenClassification.from_pretrained(args.model, num_labels=17).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, fused=True)
    batches = []
    for i in range(args.steps + 1):
        enc = tok(lines[i * args.batch_size:(i + 1) * args.batch_size], truncation=True, max_length=128,
                  padding=True, return_tensors="pt")
        enc["labels"] = torch.randint(0, 17, enc["input_ids"].shape, generator=torch.Generator().manual_seed(i))
        batches.append(enc)
    times, faults = [], []
    for i, batch in enumerate(batches):
        f0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
        model(**batch).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i:  # the first step is the warm-up
            times.append(time.perf_counter() - t0)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    print(json.dumps({"step_s": statistics.median(times), "faults": statistics.median(faults)}))


def measure(args, on: bool) -> dict:
    env = dict(os.environ, THP_MEM_ALLOC_ENABLE="1" if on else "0", OMP_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, __file__, "--worker", "--model", args.model, "--batch-size", str(args.batch_size),
           "--steps", str(args.steps), "--threads", str(args.threads)] + (["--data", args.data] if args.data else [])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="local Hugging Face folder (e.g. multilingual-e5-small)")
    parser.add_argument("--data", help="../shared/data layout folder (default: XEVAL_DATA or ../shared/data)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6, help="timed optimiser steps per worker (after one warm-up)")
    parser.add_argument("--repeats", type=int, default=3, help="workers per setting")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    from xeval.base.allocator import kernel_allows_huge_pages

    if not kernel_allows_huge_pages():
        sys.exit("bench/huge_pages.py: the kernel's transparent huge pages are off: nothing to measure")
    runs: dict[bool, list[dict]] = {True: [], False: []}
    for r in range(args.repeats):
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            runs[on].append(measure(args, on))
    med = {on: statistics.median(x["step_s"] for x in runs[on]) for on in runs}
    flt = {on: statistics.median(x["faults"] for x in runs[on]) for on in runs}
    print(f"batch {args.batch_size}, {args.threads} thread(s), {args.repeats} workers x {args.steps} steps each")
    print(f"huge pages off  {med[False]:.3f} s/step  {flt[False]:>8.0f} page faults/step")
    print(f"huge pages on   {med[True]:.3f} s/step  {flt[True]:>8.0f} page faults/step   off/on {med[False] / med[True]:.2f}x")


if __name__ == "__main__":
    main()
