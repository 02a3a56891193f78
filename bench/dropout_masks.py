"""What faster dropout masks would buy a fine-tuning step: the same QA step (``bench/finetune_step_profile.py``'s
``qa_step``) with Hugging Face's SDPA attention (xeval's fine-tuning today), with its eager attention (written out:
no safe-softmax check; torch's dropout, the same masks as SDPA's math path), and eager with masks drawn as 32-bit
integers against a threshold (a prototype here, not xeval's code: other random masks for the same seed, so not the
same numbers). Three models in one process, interleaved, medians. The masks' kept fraction is printed as a check (0.9 at p = 0.1).

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


def fast_dropout(x, p: float):
    """Dropout with a mask of uniform 32-bit integers against p x 2^31 (keep probability 1 - p to within 2^-31)."""
    import torch

    r = torch.empty(x.shape, dtype=torch.int32, device=x.device).random_()  # uniform over [0, 2^31)
    return torch.where(r >= int(p * 2**31), x * (1.0 / (1.0 - p)), 0.0)


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
    from transformers.models.bert import modeling_bert

    from bench.finetune_step_profile import qa_batch, qa_step
    from xeval.base import allocator

    allocator.retain_freed_memory()
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()

    class FastDropout(torch.nn.Module):
        def __init__(self, p):
            super().__init__()
            self.p = p

        def forward(self, x):
            return fast_dropout(x, self.p) if self.training and self.p > 0 else x

    def eager_fast(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        weights = torch.matmul(query, key.transpose(2, 3)) * scaling  # (B, H, T, T)
        if attention_mask is not None:
            weights = weights + attention_mask[:, :, :, : key.shape[-2]]
        weights = torch.softmax(weights, dim=-1)
        if dropout > 0:
            weights = fast_dropout(weights, dropout)
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), None

    def build(kind):
        torch.manual_seed(0)
        model = transformers.AutoModelForQuestionAnswering.from_pretrained(
            args.model, attn_implementation="sdpa" if kind == "sdpa" else "eager")
        if kind == "eager-fast":
            for module in list(model.modules()):
                for name, child in list(module.named_children()):
                    if isinstance(child, torch.nn.Dropout):
                        setattr(module, name, FastDropout(child.p))
        model.train()
        return model, torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)

    original = modeling_bert.eager_attention_forward
    models = {kind: build(kind) for kind in ("sdpa", "eager", "eager-fast")}
    ids, starts = qa_batch(models["sdpa"][0].config.vocab_size, args.batch, args.length)

    def step(kind):
        model, optimizer = models[kind]
        modeling_bert.eager_attention_forward = eager_fast if kind == "eager-fast" else original
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
    modeling_bert.eager_attention_forward = original
    base = statistics.median(times["sdpa"])
    print(f"fine-tuning step, fp32, batch {args.batch} x {args.length}, {args.threads} thread(s), medians of "
          f"{args.rounds}")
    for kind, seconds in times.items():
        print(f"{kind:11s} {statistics.median(seconds):.3f} s/step   sdpa/this {base / statistics.median(seconds):.2f}x")
    ones = torch.ones(args.batch, models["sdpa"][0].config.num_attention_heads, args.length, args.length)
    print(f"kept fraction of the prototype's masks at p = 0.1: {float((fast_dropout(ones, 0.1) != 0).float().mean()):.4f}")


if __name__ == "__main__":
    main()
