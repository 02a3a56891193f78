"""What xeval's SFC64 dropout masks (the recipe's ``dropout_rng``, ``xeval.engine.dropout``) buy a fine-tuning step:
the same QA step (``bench/finetune_step_profile.py``'s ``qa_step``) with Hugging Face's SDPA attention and torch's
masks (``dropout_rng=torch``), with its eager attention (written out: no safe-softmax check; torch's dropout, the
same masks as SDPA's math path), and as xeval fine-tunes by default (``use_masks(model, "sfc64")``: eager attention
in training, SFC64 masks everywhere: other random masks for the same seed, so not the same numbers). Three models in
one process, interleaved, medians. The masks' kept fraction is printed as a check (0.9 at p = 0.1).

    python bench/dropout_masks.py --model $E5 --batch 8 --length 256 --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()

    import torch
    import transformers

    from bench.finetune_step_profile import qa_batch, qa_step
    from xeval.adapters.transfer.dropout_masks import use_masks
    from xeval.base import allocator
    from xeval.engine.dropout import dropout

    allocator.retain_freed_memory()
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()

    def build(kind):
        torch.manual_seed(0)
        model = transformers.AutoModelForQuestionAnswering.from_pretrained(
            args.model, attn_implementation="eager" if kind == "eager" else "sdpa")
        if kind == "sfc64":
            use_masks(model, "sfc64")
        model.train()
        return model, torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)

    models = {kind: build(kind) for kind in ("sdpa", "eager", "sfc64")}
    ids, starts = qa_batch(models["sdpa"][0].config.vocab_size, args.batch, args.length)

    def step(kind):
        model, optimizer = models[kind]
        qa_step(model, optimizer, ids, starts)

    for kind in models:
        step(kind)
        step(kind)
    times = {kind: [] for kind in models}
    for r in range(args.rounds):
        for kind in list(models) if r % 2 == 0 else list(reversed(list(models))):
            start = time.perf_counter()
            step(kind)
            times[kind].append(time.perf_counter() - start)
    base = statistics.median(times["sdpa"])
    print(f"fine-tuning step, fp32, batch {args.batch} x {args.length}, {args.threads} thread(s), medians of "
          f"{args.rounds}")
    for kind, seconds in times.items():
        print(f"{kind:11s} {statistics.median(seconds):.3f} s/step   sdpa/this {base / statistics.median(seconds):.2f}x")
    ones = torch.ones(args.batch, models["sdpa"][0].config.num_attention_heads, args.length, args.length)
    print(f"kept fraction of SFC64 masks at p = 0.1: {float((dropout(ones, 0.1) != 0).float().mean()):.4f}")


if __name__ == "__main__":
    main()
