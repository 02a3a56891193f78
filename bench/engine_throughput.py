"""Training-step throughput of xeval's engine against Hugging Face ``BertForMaskedLM`` of the same size, same batches.

Every variant runs a full training step (forward, loss, backward, AdamW step) on the same token batches
(B rows x T tokens, 15 % masked with 80/10/10, seeded). Variants run interleaved (round-robin, a warm-up step each
first), ``--repeats`` timed rounds of ``--steps`` steps; medians are compared.

- ``hf-bert``: ``BertForMaskedLM`` (SDPA attention; its MLM head projects every position, HF's usual recipe), with
  torch's default (foreach) AdamW; ``hf-bert-fused``: the same with fused AdamW, the default optimiser of HF's
  Trainer since torch 2.8 (the "vs hf-bert-fused" column);
- ``xeval``: the engine's MLM (head on masked positions only), fp32, with biases -- same shape as hf-bert;
  ``xeval-fused``: + fused AdamW, the fp32 step ``xeval pretrain`` runs;
- ``xeval-nobias``: no biases in Linear / LayerNorm; ``xeval-bf16``: + bf16 autocast; ``xeval-bf16-fused``: + the
  fused AdamW ``xeval pretrain`` uses (the other variants step with torch's default foreach AdamW);
  ``xeval-bf16-weights``: + bf16 weights with fp32 masters in the optimiser, what ``train.bf16_weights`` runs;
  ``xeval-bf16-sfc64``: ``xeval-bf16-fused`` with dropout masks from numpy's SFC64 (``train.dropout_rng: sfc64``:
  the same dropout, other masks; the attention written out as SDPA's math path);
  ``xeval-compile`` (``--compile``): the same + ``torch.compile`` of the encoder;
  ``xeval-bf16-noattndrop``: ``xeval-bf16-fused`` with ``model.attention_probs_dropout_prob: 0`` (no random
  attention masks; on a CPU SDPA's math path in training), ``xeval-bf16-nodrop``: + ``hidden_dropout_prob: 0`` (no
  dropout masks); opt-ins that change the maths; ``xeval-bf16w-nodrop``: ``xeval-bf16-nodrop`` on bf16 weights.
- ``xlm-e``: an MRTD step (generator with 1/3 of the layers + discriminator) on the same rows;
  ``mlm+xlco``: the MLM step plus InfoXLM's XLCO on translation "pairs" made of each row's two halves (queue full:
  query pass to layer round(2/3 L) with gradients, momentum key pass without), i.e. contrast over the same text;
  ``mlm+xlco-ref``: the same with the unilm reference's projection (EMA key copy) and raw dot product;
  all reported relative to ``xeval`` (same dtype, same biases);
- ``xlm`` (MLM + TLM) and ``infoxlm`` (+ XLCO on the TLM pairs): what XLCO adds to the recipe it belongs to.

Executed-FLOP utilisation = FLOPs actually run by one step (``torch.utils.flop_counter``: matmuls, attention) /
median step time / matmul peak measured in this run (n x n x n products, same dtype and threads).

    python bench/engine_throughput.py                      # tiny (4 x 256, 16k vocab), 1 CPU thread
    python bench/engine_throughput.py --batch 32 --seq 128 --threads 2 --compile --device cuda
    python bench/engine_throughput.py --layers 12 --hidden 384 --heads 12 --batch 32 --seq 128 --no-recipes \
        --only xeval-bf16-nodrop --ceiling xeval-bf16-nodrop  # the step's products alone (bench/matmul_ceiling.py)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402


def make_batches(n: int, batch: int, seq: int, vocab: int, seed: int = 0):
    from xeval.engine.objectives.base import TokenInfo, mask_tokens

    tokens = TokenInfo(vocab_size=vocab, pad=1, bos=0, eos=2, unk=3, mask=vocab - 1, first_normal=4)
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(tokens.first_normal, vocab - 1, (batch, seq), generator=g)
        ids[:, 0], ids[:, -1] = tokens.bos, tokens.eos
        inputs, labels = mask_tokens(ids, tokens, 0.15, g)
        out.append((ids, inputs, labels))
    return tokens, out


class Variant:
    """One training step on batch i: ``step(i)``; ``flops`` counted once."""

    def __init__(self, name, model, step_fn, amp: bool, device, fused: bool = False, bf16_weights: bool = False):
        from xeval.engine.precision import BF16Weights

        self.name, self.model, self.step_fn, self.amp, self.device = name, model, step_fn, amp, device
        self.opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, betas=(0.9, 0.98),
                                     fused=fused)
        self.weights = BF16Weights(model, self.opt) if bf16_weights else None  # as xeval pretrain's train.bf16_weights
        self.times: list[float] = []
        self.flops = None

    def step(self, batch) -> None:
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
            loss = self.step_fn(batch)
        loss.backward()
        if self.weights is not None:
            self.weights.grads_to_masters()
        torch.nn.utils.clip_grad_norm_(self.weights.masters if self.weights else self.model.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if self.weights is not None:
            self.weights.masters_to_weights()

    def count_flops(self, batch) -> None:
        counter = FlopCounterMode(display=False)
        with counter:
            self.step(batch)
        self.flops = counter.get_total_flops()


def build_variants(args, tokens, device):
    from transformers import BertConfig, BertForMaskedLM

    from xeval.engine.dropout import use_sfc64
    from xeval.engine.model import XevalConfig
    from xeval.engine.objectives import PretrainModel, StepContext
    from xeval.engine.objectives.xlco import XLCO

    L, H, V = args.layers, args.hidden, tokens.vocab_size
    shape = dict(hidden_size=H, num_hidden_layers=L, num_attention_heads=args.heads, intermediate_size=4 * H,
                 max_position_embeddings=512, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)  # fmt: skip
    variants = []

    def hf(name, fused=False):
        torch.manual_seed(0)
        bert = BertForMaskedLM(BertConfig(vocab_size=V, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1,
                                          **shape)).to(device).train()  # fmt: skip

        def hf_step(b):
            ids, inputs, labels = (t.to(device) for t in b)
            return bert(input_ids=inputs, attention_mask=torch.ones_like(inputs), labels=labels).loss

        variants.append(Variant(name, bert, hf_step, False, device, fused))

    hf("hf-bert")  # the peer of the "vs hf-bert" column: torch's default (foreach) AdamW
    hf("hf-bert-fused", fused=True)  # the optimiser HF's Trainer picks by default since torch 2.8 (adamw_torch_fused)

    def engine(name, objectives, bias=True, amp=False, compile_=False, fused=False, bf16_weights=False, sfc64=False,
               **dropout):
        torch.manual_seed(0)
        cfg = XevalConfig(vocab_size=V, bias=bias, pad_token_id=1, **{**shape, **dropout})
        model = PretrainModel(cfg, objectives, tokens).to(device).train()
        if sfc64:  # train.dropout_rng: sfc64 (xeval/engine/dropout.py)
            use_sfc64(model)
        if compile_:
            model.encoder.compile()
        for obj in model.objectives.values():
            if isinstance(obj, XLCO):  # a full queue, so the step includes the contrast
                obj.queue.push(torch.nn.functional.normalize(torch.randn(obj.queue.keys.shape), dim=-1).to(device))

        def step(b):
            ids, inputs, labels = (t.to(device) for t in b)
            attention = torch.ones_like(ids)
            x = {}
            for name in ("mlm", "tlm"):  # TLM: the row stands for a concatenated pair of two half-rows
                if name in objectives:
                    x[name] = {"input_ids": inputs, "attention_mask": attention, "labels": labels,
                               "n_total": (labels != -100).sum()}  # fmt: skip
            if "mrtd" in objectives:
                x["mrtd"] = {"original": ids, "input_ids": inputs, "attention_mask": attention, "labels": labels,
                             "uniform": torch.rand(ids.shape, device=device),
                             "n_total": (labels != -100).sum(), "n_tokens": attention.sum()}  # fmt: skip
            if "xlco" in objectives:
                half = ids.shape[1] // 2
                q, k = ids[:, :half].clone(), ids[:, half:].clone()
                q[:, 0], k[:, 0] = tokens.bos, tokens.bos
                x["xlco"] = {"q_ids": q, "q_mask": torch.ones_like(q), "k_ids": k, "k_mask": torch.ones_like(k),
                             "n_total": torch.tensor(len(q))}  # fmt: skip
            loss, _ = model(x, StepContext(step=0, seed=0, device=device))
            return loss

        variants.append(Variant(name, model, step, amp, device, fused, bf16_weights))

    engine("xeval", {"mlm": {}})
    engine("xeval-fused", {"mlm": {}}, fused=True)  # what xeval pretrain runs in fp32 (its default)
    engine("xeval-nobias", {"mlm": {}}, bias=False)
    if not args.no_bf16:
        engine("xeval-bf16", {"mlm": {}}, bias=False, amp=True)
        engine("xeval-bf16-fused", {"mlm": {}}, bias=False, amp=True, fused=True)  # the optimiser xeval pretrain uses
        # + bf16 weights, fp32 masters in the optimiser: xeval pretrain's train.bf16_weights
        engine("xeval-bf16-weights", {"mlm": {}}, bias=False, amp=True, fused=True, bf16_weights=True)
        # the same dropout with SFC64 masks (train.dropout_rng: sfc64): other masks, the same maths
        engine("xeval-bf16-sfc64", {"mlm": {}}, bias=False, amp=True, fused=True, sfc64=True)
        # opt-ins that change the model's maths (docs/engine.md, "Options"): without attention dropout no random
        # attention masks (a CPU trains through SDPA's math path); without any dropout no random masks at all
        engine("xeval-bf16-noattndrop", {"mlm": {}}, bias=False, amp=True, fused=True,
               attention_probs_dropout_prob=0.0)
        engine("xeval-bf16-nodrop", {"mlm": {}}, bias=False, amp=True, fused=True,
               attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)
        engine("xeval-bf16w-nodrop", {"mlm": {}}, bias=False, amp=True, fused=True, bf16_weights=True,
               attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)  # both: no casts of weights, no masks
    if args.compile:
        engine("xeval-compile", {"mlm": {}}, bias=False, amp=not args.no_bf16, compile_=True, fused=True,
               bf16_weights=not args.no_bf16)
    engine("xlm-e", {"mrtd": {}})
    engine("mlm+xlco", {"mlm": {}, "xlco": {"queue_size": 1024}})
    # the reference's options: projection (EMA-copied to the key side) and raw dot product
    engine("mlm+xlco-ref", {"mlm": {}, "xlco": {"queue_size": 1024, "projection": True, "similarity": "dot"}})
    if not args.no_recipes:
        engine("xlm", {"mlm": {}, "tlm": {}})
        engine("infoxlm", {"mlm": {}, "tlm": {}, "xlco": {"queue_size": 1024}})
    if args.only:
        keep = set(args.only.split(",")) | {"hf-bert"}  # the peer of the ratios
        variants = [v for v in variants if v.name in keep]
    return variants


def profile(variant, batches, rows: int = 18) -> None:
    """torch.profiler over ``len(batches)`` steps of one variant: operators by self CPU time (forward, backward and
    the optimiser step), with the share of the step each takes."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches:
            variant.step(batch)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    calls = sum(e.count for e in events) / len(batches)  # on a shared CPU each call also pays a thread hand-off
    print(f"\nprofile {variant.name}: {len(batches)} steps, self CPU time by operator ({total / 1e3 / len(batches):.0f} "
          f"ms a step, {calls:.0f} operator calls a step)")
    print(f"{'operator':42s} {'calls/step':>10s} {'ms/step':>8s} {'share':>6s}")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:rows]:
        print(f"{e.key[:42]:42s} {e.count / len(batches):10.0f} {e.self_cpu_time_total / 1e3 / len(batches):8.1f} "
              f"{100 * e.self_cpu_time_total / total:5.1f}%")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=16000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=2, help="timed steps per variant per round")
    ap.add_argument("--repeats", type=int, default=5, help="timed rounds (medians over rounds)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", action="store_true", help="add a torch.compile variant (slow to start)")
    ap.add_argument("--no-bf16", action="store_true", help="skip the bf16 variant")
    ap.add_argument("--no-recipes", action="store_true", help="skip the xlm / infoxlm recipe steps")
    ap.add_argument("--only", metavar="V1,V2", help="time only these variants (hf-bert always), e.g. "
                    "xeval,xeval-bf16-weights")
    ap.add_argument("--ceiling", metavar="V1,V2", help="also replay each of these variants' matrix products alone "
                    "(bench/matmul_ceiling.py): how near the peak its products can run and what share of the step "
                    "they are")
    ap.add_argument("--profile", metavar="V1,V2", help="also print torch.profiler's table of where a step's time goes "
                    "for these variants (e.g. hf-bert,xeval-bf16), measured after the timed rounds")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    from xeval.engine.runlog import measure_peak

    peaks = [measure_peak(device, torch.float32), measure_peak(device, torch.bfloat16)]
    tokens, batches = make_batches(args.repeats * args.steps + 2, args.batch, args.seq, args.vocab)
    variants = build_variants(args, tokens, device)
    unknown = {n for n in f"{args.profile or ''},{args.ceiling or ''}".split(",") if n} - {v.name for v in variants}
    if unknown:  # before minutes of timing, not after
        ap.error(f"--profile / --ceiling: {', '.join(sorted(unknown))} not among the variants timed "
                 f"({', '.join(v.name for v in variants)})")
    for v in variants:  # warm-up (and compilation), then one counted step
        v.step(batches[0])
        v.count_flops(batches[1])
    i = 2
    for _ in range(args.repeats):
        for v in variants if _ % 2 == 0 else reversed(variants):  # interleaved, alternating order
            for k in range(args.steps):
                if device.type == "cuda":
                    torch.cuda.synchronize()
                t = time.perf_counter()
                v.step(batches[i + k])
                if device.type == "cuda":
                    torch.cuda.synchronize()
                v.times.append(time.perf_counter() - t)
        i += args.steps
    # the best matmul rate seen before and after (the CPU is shared: a contended measurement understates the peak)
    peak32 = max(peaks[0], measure_peak(device, torch.float32))
    peak16 = max(peaks[1], measure_peak(device, torch.bfloat16)) if not args.no_bf16 else peak32
    tokens_per_step = args.batch * args.seq
    med = {v.name: statistics.median(v.times) for v in variants}
    print(f"engine throughput: {args.layers} x {args.hidden}, vocab {args.vocab}, batch {args.batch} x {args.seq}, "
          f"{args.threads} thread(s) on {device}; matmul peak fp32 {peak32 / 1e9:.1f} GFLOP/s, bf16 "
          f"{peak16 / 1e9:.1f} GFLOP/s; medians of {args.repeats} rounds x {args.steps} steps")  # fmt: skip
    fused = f" {'vs hf-bert-fused':>13s}" if "hf-bert-fused" in med else ""
    print(f"{'variant':22s} {'s/step':>8s} {'tokens/s':>10s} {'vs hf-bert':>10s}{fused} {'GFLOP/step':>11s} "
          f"{'util':>6s}")
    for v in variants:
        t = med[v.name]
        peak = peak16 if v.amp else peak32
        fused = f" {med['hf-bert-fused'] / t:12.2f}x" if "hf-bert-fused" in med else ""
        print(f"{v.name:22s} {t:8.3f} {tokens_per_step / t:10,.0f} {med['hf-bert'] / t:9.2f}x{fused} "
              f"{v.flops / 1e9:11.2f} {100 * v.flops / t / peak:5.1f}%")  # fmt: skip
    if "xlm-e" in med and "mlm+xlco" in med:
        print(f"step cost relative to the engine's MLM step (same batch, fp32, biases): xlm-e "
              f"{med['xlm-e'] / med['xeval']:.2f}x (target <= 1.5x), mlm+xlco {med['mlm+xlco'] / med['xeval']:.2f}x "
              f"(target <= 1.3x), mlm+xlco-ref {med['mlm+xlco-ref'] / med['xeval']:.2f}x"
              + (f"; infoxlm step / xlm step {med['infoxlm'] / med['xlm']:.2f}x"
              if "xlm" in med else ""))  # fmt: skip
    for name in (args.profile or "").split(","):
        if name:
            profile(next(v for v in variants if v.name == name), batches[2 : 2 + args.steps])
    for name in (args.ceiling or "").split(","):
        if name:
            from bench import matmul_ceiling

            v = next(v for v in variants if v.name == name)
            dtype = torch.bfloat16 if v.amp else torch.float32
            rows = matmul_ceiling.replay(matmul_ceiling.product_calls(v.step, batches[2]), dtype)
            matmul_ceiling.report(name, med[name], v.flops, rows, peak16 if v.amp else peak32)
    flops = {v.name: v.flops for v in variants}
    if "xlm-e" in flops and "mlm+xlco" in flops:
        print(f"executed FLOPs relative to the MLM step: xlm-e {flops['xlm-e'] / flops['xeval']:.2f}x, mlm+xlco "
              f"{flops['mlm+xlco'] / flops['xeval']:.2f}x" + (f", infoxlm / xlm {flops['infoxlm'] / flops['xlm']:.2f}x"
              if "xlm" in flops else ""))  # fmt: skip


if __name__ == "__main__":
    main()
