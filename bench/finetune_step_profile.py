"""Where one fine-tuning step of a Hugging Face encoder goes: its time, FLOPs, matrix products replayed alone
(``bench/matmul_ceiling.py``) and torch.profiler's operators.

The step is what xeval's fine-tuning runs for a QA task (``BertForQuestionAnswering``-style head; random token ids and
answer positions of a fixed shape): forward, loss, backward, gradient clipping at 1.0, fused AdamW, in fp32 with
the model's own dropout, under xeval's allocator setting (``xeval.base.allocator``). Medians of ``--steps`` steps
after two warm-up steps.

    python bench/finetune_step_profile.py --model $E5 --batch 8 --length 256 --threads 2   # xtreme-mini's QA shape
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def qa_batch(vocab_size: int, batch: int, length: int):
    """Random token ids [batch, length] (above the special ids) and answer positions [batch], seeded."""
    import torch

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab_size, (batch, length), generator=generator)
    return ids, torch.randint(0, length, (batch,), generator=generator)


def qa_step(model, optimizer, ids, starts) -> None:
    """One training step of a ``…ForQuestionAnswering`` model as xeval's fine-tuning runs it: forward and loss,
    backward, clipping at 1.0, the optimiser's step."""
    import torch

    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), start_positions=starts, end_positions=starts)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a Hugging Face folder (e.g. tests/helpers/e5.py's)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5, help="timed steps (median)")
    ap.add_argument("--rows", type=int, default=20, help="operators in the profile's table")
    args = ap.parse_args()

    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    from bench import matmul_ceiling
    from xeval.base import allocator
    from xeval.engine.runlog import measure_peak

    allocator.retain_freed_memory()
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    model = transformers.AutoModelForQuestionAnswering.from_pretrained(args.model)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids, starts = qa_batch(model.config.vocab_size, args.batch, args.length)

    def step(_=None):
        qa_step(model, optimizer, ids, starts)

    for _ in range(2):
        step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    with FlopCounterMode(display=False) as counter:
        step()
    flops = counter.get_total_flops()
    peak = measure_peak(torch.device("cpu"), torch.float32)
    print(f"fine-tuning step, fp32, batch {args.batch} x {args.length}, {args.threads} thread(s): {seconds:.3f} s "
          f"(median of {args.steps}), {flops / 1e9:.0f} GFLOP, {100 * flops / seconds / peak:.1f} % of the measured "
          f"fp32 peak ({peak / 1e9:.0f} GFLOP/s)")
    rows = matmul_ceiling.replay(matmul_ceiling.product_calls(step, None), torch.float32)
    matmul_ceiling.report("fine-tuning step", seconds, flops, rows, peak)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))


if __name__ == "__main__":
    main()
