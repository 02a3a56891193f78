"""Every objective under 1 and 2 processes: the same losses and gradients (tests/engine/test_ddp.py).

``run(name, rank, world)`` builds a micro PretrainModel with one objective on a hand-made vocabulary (English and
German word pieces, a small en-de dictionary for the token contrast), takes 2 SGD steps on fixed global batches
(so XLCO's queue fills in step 1; XLCO also with the reference's options and the contrast runs in step 2) and returns the loss and gradients of each step.
Under ``torchrun --nproc_per_node 2 tests/helpers/ddp_objectives.py OUT`` each rank trains its slice through DDP (gloo) as
the trainer does, and rank 0 writes OUT/<case>.safetensors; the test compares them with a one-process run.
"""

from __future__ import annotations

import os
import sys

import torch

WORDS = [("cat", "katze"), ("dog", "hund"), ("house", "haus"), ("tree", "baum"), ("water", "wasser"),
         ("book", "buch"), ("child", "kind"), ("city", "stadt"), ("red", "rote"), ("small", "kleine")]  # fmt: skip
CASES = {"mlm": ("mlm", {}), "tlm": ("tlm", {}), "mrtd": ("mrtd", {}), "trtd": ("trtd", {}),
         "xlco": ("xlco", {"queue_size": 8, "momentum": 0.9}),
         "xlco-reference": ("xlco", {"queue_size": 4, "momentum": 0.9, "projection": True, "similarity": "dot",
                                     "mixup": True, "temperature": 0.25}),
         "seqcl": ("seqcl", {}), "tokcl": ("tokcl", {"max_links": 4}),
         "tokcl-concat": ("tokcl", {"max_links": 4, "concat": True, "synonyms": True})}  # fmt: skip
GLOBAL_BATCH = 8  # rows per stream and step, split over the processes


def vocabulary() -> list[str]:
    pieces = ["<s>", "<pad>", "</s>", "<unk>"]
    for en, de in WORDS:
        pieces += ["\u2581" + en, "\u2581" + de.capitalize()]
    pieces += ["\u2581the", "\u2581die", "s", "en", "<mask>"]
    return pieces


def batches(step: int):
    from xeval.engine.streams import PairBatch

    pieces = vocabulary()
    index = {p: i for i, p in enumerate(pieces)}
    g = torch.Generator().manual_seed(100 + step)
    src, tgt, swapped = [], [], []
    for b in range(GLOBAL_BATCH):
        n = 2 + int(torch.randint(0, 4, (1,), generator=g))
        words = [WORDS[int(i)] for i in torch.randperm(len(WORDS), generator=g)[:n]]
        en = [index["\u2581the"]] + [index["\u2581" + w[0]] for w in words]
        de = [index["\u2581die"]] + [index["\u2581" + w[1].capitalize()] for w in words] + [index["en"]] * (b % 2)
        flip = b % 3 == 0
        src.append(de if flip else en)
        tgt.append(en if flip else de)
        swapped.append(flip)
    pairs = PairBatch(src, tgt, ["en-de"] * GLOBAL_BATCH, swapped, [("", "")] * GLOBAL_BATCH)
    mono = torch.randint(4, len(pieces) - 1, (GLOBAL_BATCH, 12), generator=g)
    mono[:, 0], mono[:, -1] = 0, 2
    return {"mono": (mono, ["en"] * GLOBAL_BATCH), "pairs": pairs}


def build(case: str):
    from xeval.engine.model import XevalConfig
    from xeval.engine.objectives import PretrainModel
    from xeval.engine.objectives.base import TokenInfo

    pieces = vocabulary()
    tokens = TokenInfo(len(pieces), pad=1, bos=0, eos=2, unk=3, mask=len(pieces) - 1, first_normal=4)
    cfg = XevalConfig(vocab_size=len(pieces), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=64, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)  # fmt: skip
    dictionary = {"en-de": {en: {de} for en, de in WORDS}}
    torch.manual_seed(0)
    name, options = CASES[case]
    return PretrainModel(cfg, {name: options}, tokens, pieces, dictionary)


def run(case: str, rank: int = 0, world: int = 1) -> dict[str, torch.Tensor]:
    """{"loss.<step>": global loss, "<step>.<param>": gradient} over 2 SGD steps."""
    import torch.distributed as dist

    from xeval.engine.objectives import StepContext, slice_inputs

    model = build(case)
    net = model
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False, find_unused_parameters=True)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    out = {}
    for step in range(2):
        inputs = model.prepare(batches(step), lambda n, s=step: torch.Generator().manual_seed(1000 * s + 7))
        inputs = slice_inputs(inputs, rank, world)
        loss, stats = net(inputs, StepContext(step=step, seed=0, rank=rank, world=world))
        if loss.requires_grad:
            loss.backward()
        total = loss.detach().clone().reshape(1)
        if world > 1:  # each rank's loss is its share of the global mean (as the trainer logs it)
            dist.all_reduce(total)
            total /= world
        out[f"loss.{step}"] = total
        for k, p in model.named_parameters():
            if p.grad is not None:
                out[f"{step}.{k}"] = p.grad.detach().clone()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return out


if __name__ == "__main__":
    import torch.distributed as dist
    from safetensors.torch import save_file

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    for case in CASES:
        result = run(case, rank, world)
        if rank == 0:
            save_file(result, os.path.join(sys.argv[1], f"{case}.safetensors"))
    # leave together: a rank that tears gloo down while rank 0 still writes can abort at exit (SIGABRT, ~1 run in 8)
    dist.barrier()
    dist.destroy_process_group()
    # and skip interpreter finalisation, where gloo's threads can still abort a rank (as xeval.cli does under torchrun)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
