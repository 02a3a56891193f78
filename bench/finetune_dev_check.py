"""A longer fine-tune than ``bench/finetune_throughput.py``'s, with the dev score: XNLI English through
``transformers.Trainer`` (its defaults for the task, the bench's peer) and through xeval's loop, the same examples
and recipe (the first ``--train`` English pairs, ``--steps`` steps of ``--batch-size`` at ``--lr``, no warm-up,
last weights), then each model's accuracy on the first ``--dev`` English dev pairs and each training's seconds.
One run each (``--seed``, default 1): the two accuracies should agree within the binomial noise of the dev set.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1073741824 python bench/finetune_dev_check.py --model $E5 --threads 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", default=None)
    parser.add_argument("--steps", type=int, default=125)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--dev", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pass-tokens", type=int, default=None,
                        help="xeval's recipe pass_tokens (default: the recipe's; 0: one micro-batch a pass)")
    args = parser.parse_args()

    import torch
    import transformers

    from bench import finetune_throughput as bench
    from xeval.adapters.transfer import fine_tuning
    from xeval.adapters.transfer.base import fresh_model, load
    from xeval.adapters.transfer.classification import PairClassification
    from xeval.models.encoder import Encoder

    root = bench.data_root(args.data)  # imports tests.conftest, which sets torch's thread count: set ours after it
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    encoder = Encoder(args.model, device="cpu")
    overrides = {"max_steps": args.steps, "batch_size": args.batch_size, "max_train": args.train, "select": "last",
                 "learning_rate": args.lr, "warmup_ratio": 0.0, "warmup_steps": 0, "pass_tokens": args.pass_tokens}
    peers = bench.classification_pair(encoder, root, overrides, "cpu", seed=args.seed)
    family, recipe, _, features = bench.adapter_side("xnli", PairClassification, encoder, root, overrides)
    dev = load(family.card, "en", "dev", bench.context(encoder, root, overrides))[: args.dev]

    start = time.perf_counter()
    train = peers["trainer"]()
    train()
    trained = {"trainer": (train.__self__.model, time.perf_counter() - start)}  # train is Trainer.train, bound
    start = time.perf_counter()
    model, _ = fresh_model(family, recipe, args.seed)  # as xeval run builds it (its dropout masks included)
    fine_tuning.fine_tune(model, features, recipe, seed=args.seed, device="cpu", desc="xeval",
                          pad_token_id=family.tokenizer.pad_token_id or 0)
    trained["xeval"] = (model, time.perf_counter() - start)

    tok = encoder.tokenizer
    for name, (model, seconds) in trained.items():
        model.eval()
        if name == "xeval":
            predictions = family.predict(model, dev)
        else:  # the Trainer's model on inputs encoded as its training set was (bench.classification_pair)
            predictions = []
            with torch.inference_mode():
                for i in range(0, len(dev), 32):
                    chunk = dev[i : i + 32]
                    enc = tok([e.text_a for e in chunk], [e.text_b for e in chunk], truncation=True,
                              max_length=recipe.max_length, padding=True, return_tensors="pt",
                              return_token_type_ids=True)
                    predictions += [family.labels[int(k)] for k in model(**enc).logits.argmax(-1)]
        accuracy = 100 * sum(p == e.label for p, e in zip(predictions, dev)) / len(dev)
        print(f"{name:8s} English XNLI dev accuracy {accuracy:.1f} on {len(dev)} pairs; training {seconds:.0f} s")


if __name__ == "__main__":
    main()
