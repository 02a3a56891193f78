"""Where a fine-tuning step's large buffers come from: glibc's default, xeval's default (freed memory kept in the
process, ``xeval.base.allocator``) and PyTorch's transparent huge pages (``THP_MEM_ALLOC_ENABLE=1``).

Each setting acts once per process, so each measurement is a fresh worker process: the same model, batches and
optimiser steps under each setting, interleaved (the order rotated every repeat), one warm-up step each; the median
step time of each worker, then the median over workers. The step is the one xeval's fine-tuning loop takes,
written out (forward, backward, clipping at 1.0, fused AdamW, ``zero_grad(set_to_none=True)``), of a
token-classification head on FLORES-200 English sentences, each batch padded to its longest (so shapes vary from
step to step, as in a real fine-tune; random labels: timing only). Minor page faults and system (kernel) seconds per
step are counted too (what the settings change), and each worker's peak resident memory.

    python bench/allocator.py --model $E5 --batch-size 8 --steps 6 --repeats 3 --threads 2
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

SETTINGS = ("glibc", "retain", "huge-pages")


def worker(args) -> None:
    import resource
    import time

    if args.setting == "retain":
        from xeval.base.allocator import retain_freed_memory

        if not retain_freed_memory():
            sys.exit("bench/allocator.py: glibc's mallopt is not available here")
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from bench.flores_batches import flores_batches

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForTokenClassification.from_pretrained(args.model, num_labels=17).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, fused=True)
    batches = flores_batches(tok, args.data, args.steps + 1, args.batch_size)
    times, faults, system = [], [], []
    for i, batch in enumerate(batches):
        u0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        model(**batch).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i:  # the first step is the warm-up
            u1 = resource.getrusage(resource.RUSAGE_SELF)
            times.append(time.perf_counter() - t0)
            faults.append(u1.ru_minflt - u0.ru_minflt)
            system.append(u1.ru_stime - u0.ru_stime)
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(json.dumps({"step_s": statistics.median(times), "faults": statistics.median(faults),
                      "system_s": statistics.median(system), "peak_gb": peak_gb}))


def measure(args, setting: str) -> dict:
    from xeval.base.allocator import USER_VARIABLES  # glibc's own variables: none may leak into a worker

    env = {k: v for k, v in os.environ.items() if k not in ("THP_MEM_ALLOC_ENABLE", *USER_VARIABLES)}
    env["OMP_NUM_THREADS"] = str(args.threads)
    if setting == "huge-pages":
        env["THP_MEM_ALLOC_ENABLE"] = "1"
    cmd = [sys.executable, __file__, "--worker", "--setting", setting, "--model", args.model,
           "--batch-size", str(args.batch_size), "--steps", str(args.steps), "--threads", str(args.threads)]
    out = subprocess.run(cmd + (["--data", args.data] if args.data else []), capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="local Hugging Face folder (e.g. multilingual-e5-small)")
    parser.add_argument("--data", help="../shared/data layout folder (default: XEVAL_DATA or ../shared/data)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6, help="timed optimiser steps per worker (after one warm-up)")
    parser.add_argument("--repeats", type=int, default=3, help="workers per setting")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, of {', '.join(SETTINGS)}")
    parser.add_argument("--setting", choices=SETTINGS, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    settings = [s for s in args.settings.split(",") if s]
    if unknown := set(settings) - set(SETTINGS):
        sys.exit(f"bench/allocator.py: --settings: unknown {', '.join(sorted(unknown))} (expected {', '.join(SETTINGS)})")
    runs: dict[str, list[dict]] = {s: [] for s in settings}
    for r in range(args.repeats):
        for setting in settings[r % len(settings):] + settings[:r % len(settings)]:
            runs[setting].append(measure(args, setting))
    print(f"batch {args.batch_size}, {args.threads} thread(s), {args.repeats} workers x {args.steps} steps each")
    base = statistics.median(x["step_s"] for x in runs[settings[0]])
    for setting, rows in runs.items():
        step = statistics.median(x["step_s"] for x in rows)
        print(f"{setting:<11} {step:.3f} s/step  {statistics.median(x['faults'] for x in rows):>8.0f} page faults/step"
              f"  {statistics.median(x['system_s'] for x in rows):.3f} s system/step"
              f"  peak {max(x['peak_gb'] for x in rows):.2f} GB  {settings[0]}/this {base / step:.2f}x")


if __name__ == "__main__":
    main()
