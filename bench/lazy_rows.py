"""A fine-tuning step with AdamW over every embedding row against xeval's default, which steps only the rows the
fine-tune has looked up (``xeval.adapters.transfer.lazy_rows``; the same weights bit for bit).

One process, two copies of the model and their optimisers (``torch.optim.AdamW(fused=True)`` and
``LazyRowsAdamW``), stepped in turn on the same batches (the order alternating each step), so both meet the same
machine state; the medians of the step times after one warm-up step each. The step is the one xeval's fine-tuning
loop takes, written out (forward, backward, clipping at 1.0, the optimiser, ``zero_grad(set_to_none=True)``), of a
token-classification head on FLORES-200 English sentences, each batch padded to its longest (random labels: timing
only). At the end the two models' weights are compared bit for bit.

    python bench/lazy_rows.py --model $E5 --batch-size 8 --steps 20 --threads 2
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a local Hugging Face folder (e.g. multilingual-e5-small)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", default=None, help="the shared data root (default: found as the tests find it)")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from bench.flores_batches import flores_batches
    from xeval.adapters.transfer.lazy_rows import LazyRowsAdamW, lazy_embedding
    from xeval.base.allocator import retain_freed_memory

    retain_freed_memory()  # as the command line does
    torch.set_num_threads(args.threads)
    tok = AutoTokenizer.from_pretrained(args.model)
    peers = {}
    for name in ("dense", "lazy"):
        torch.manual_seed(0)
        model = AutoModelForTokenClassification.from_pretrained(args.model, num_labels=17).train()
        groups = [{"params": list(model.parameters()), "weight_decay": 0.0}]
        if name == "lazy":
            embedding = lazy_embedding(model, groups, 5e-5)
            if embedding is None:
                sys.exit("bench/lazy_rows.py: this model's input embedding cannot be stepped lazily")
            optimizer = LazyRowsAdamW(groups, embedding, lr=5e-5, fused=True)
        else:
            optimizer = torch.optim.AdamW(groups, lr=5e-5, fused=True)
        peers[name] = (model, optimizer)
    batches = flores_batches(tok, args.data, args.steps + 1, args.batch_size)
    times: dict[str, list[float]] = {name: [] for name in peers}
    for i, batch in enumerate(batches):
        order = list(peers) if i % 2 == 0 else list(reversed(peers))
        for name in order:
            model, optimizer = peers[name]
            torch.manual_seed(i)  # the same dropout masks for both
            start = time.perf_counter()
            model(**batch).loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if i > 0:  # the first step of each is its warm-up
                times[name].append(time.perf_counter() - start)
    dense, lazy = (statistics.median(times[name]) for name in ("dense", "lazy"))
    same = all(torch.equal(a, b) for a, b in zip(peers["dense"][0].state_dict().values(),
                                                 peers["lazy"][0].state_dict().values()))
    rows = int(peers["lazy"][1].touched.sum())
    print(f"batch {args.batch_size}, {args.threads} thread(s), {args.steps} steps each, interleaved; "
          f"{rows} of {peers['lazy'][1].touched.numel()} embedding rows looked up")
    print(f"dense  {dense:.3f} s/step")
    print(f"lazy   {lazy:.3f} s/step   dense/lazy {dense / lazy:.2f}x   weights identical: {same}")


if __name__ == "__main__":
    main()
