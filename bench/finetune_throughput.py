"""Fine-tuning throughput of xeval's adapters against a plain Hugging Face loop, measured in the same run.

For tagging (UD-POS English) and pair classification (MultiNLI subset), the same training examples go through

- xeval: the adapter's features (word windows, first-subword labels / pair encoding) and ``training.fine_tune``
  (AdamW, linear schedule, clipping, seeded shuffle, no dev evaluation), with the adapter's head;
- HF: ``AutoModelForTokenClassification`` / ``AutoModelForSequenceClassification`` from the same folder, the
  tokenizer's standard encoding, a ``DataLoader`` with transformers' data collator, AdamW + linear schedule +
  clipping in a hand-written loop.

Both run the same number of optimiser steps with the same batch size. Throughput = training examples per
second of the training loop (features and models are prepared outside the timer, for both). Repeats are interleaved (xeval,
HF, HF, xeval, ...) after one warm-up of each; medians are compared. Ratio = xeval / HF (1.0 = as fast).

    python bench/finetune_throughput.py                   # tiny BERT (4 x 128) built on the fly, CPU
    python bench/finetune_throughput.py --model ckpt/ --steps 30 --repeats 5 --batch-size 16 --device cuda
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def data_root(arg: str | None) -> Path:
    from tests.conftest import find_data_root

    root = Path(arg) if arg else find_data_root()
    if root is None or not (root / "udpos_xtreme").is_dir():
        sys.exit("bench/finetune_throughput.py: no data: pass --data DIR (the ../shared/data layout) or set XEVAL_DATA")
    return root


def tiny_model(root: Path, folder: Path, layers: int, hidden: int) -> Path:
    from tests.helpers_tiny import make_tiny_bert
    from tests.helpers_transfer import real_lines

    return make_tiny_bert(folder, texts=real_lines(root), vocab_size=4000, layers=layers, hidden=hidden)


def context(encoder, root: Path, recipe: dict):
    from xeval.adapters import RunContext
    from xeval.data.sources import DataRoot
    from xeval.results import Store

    return RunContext(encoder=encoder, data=DataRoot.resolve(str(root)), store=Store(tempfile.mkdtemp()),
                      options={"recipe": recipe})


# ------------------------------------------------------------------------------------------------ the two loops


def xeval_runner(family, features, recipe, device):
    from xeval.adapters import training

    def prepare():
        training.set_seed(1)
        model = family.build_model(training.backbone_copy(family.encoder))
        return lambda: training.fine_tune(model, features, recipe, seed=1, device=device, desc="xeval",
                                          pad_token_id=family.tokenizer.pad_token_id or 0)

    return prepare


def hf_runner(auto_cls, folder, num_labels, dataset, collator, recipe, device):
    import torch
    from torch.utils.data import DataLoader

    from xeval.adapters.training import linear_schedule

    def prepare():
        torch.manual_seed(1)
        model = auto_cls.from_pretrained(folder, num_labels=num_labels, use_safetensors=True).to(device).train()
        return lambda: train(model)

    def train(model):
        optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, eps=recipe.adam_epsilon)
        scheduler = linear_schedule(optimizer, 0, recipe.max_steps)
        loader = DataLoader(dataset, batch_size=recipe.batch_size, shuffle=True, collate_fn=collator,
                            generator=torch.Generator().manual_seed(1))
        step = 0
        while step < recipe.max_steps:
            for batch in loader:
                loss = model(**{k: v.to(device) for k, v in batch.items()}).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                if step >= recipe.max_steps:
                    break

    return prepare


def adapter_side(card_name: str, family_cls, encoder, root, recipe_overrides):
    """The adapter's family, recipe, training examples and features for one card's English training set."""
    from xeval.adapters import finetune
    from xeval.adapters.training import Recipe
    from xeval.tasks import load_card

    card = load_card(card_name)
    ctx = context(encoder, root, recipe_overrides)
    recipe = Recipe.build(card.recipe, recipe_overrides)
    family = family_cls(card, ctx, recipe)
    examples = finetune.load(card, "en", "train", ctx)[: recipe.max_train]
    family.setup(examples)
    return family, recipe, examples, family.features(examples)


def tagging_pair(encoder, root, recipe_overrides, device):
    from transformers import AutoModelForTokenClassification, DataCollatorForTokenClassification

    from xeval.adapters.tagging import Tagging

    family, recipe, examples, features = adapter_side("udpos", Tagging, encoder, root, recipe_overrides)
    # the usual Hugging Face recipe: tokenise with truncation, label the first subword of each word
    tok = encoder.tokenizer
    enc = tok([ex.tokens for ex in examples], is_split_into_words=True, truncation=True, max_length=recipe.max_length)
    dataset = []
    for i, ex in enumerate(examples):
        labels, previous = [], None
        for w in enc.word_ids(i):
            labels.append(-100 if w is None or w == previous else family.index[ex.tags[w]])
            previous = w
        dataset.append({"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i], "labels": labels})
    hf = hf_runner(AutoModelForTokenClassification, encoder.spec, len(family.labels), dataset,
                   DataCollatorForTokenClassification(tok), recipe, device)
    return xeval_runner(family, features, recipe, device), hf


def classification_pair(encoder, root, recipe_overrides, device):
    from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding

    from xeval.adapters.classification import PairClassification

    family, recipe, examples, features = adapter_side("xnli", PairClassification, encoder, root, recipe_overrides)
    tok = encoder.tokenizer
    enc = tok([ex.text_a for ex in examples], [ex.text_b for ex in examples], truncation=True,
              max_length=recipe.max_length, return_token_type_ids=True)
    dataset = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
                "token_type_ids": enc["token_type_ids"][i], "labels": family.index[ex.label]}
               for i, ex in enumerate(examples)]
    hf = hf_runner(AutoModelForSequenceClassification, encoder.spec, len(family.labels), dataset,
                   DataCollatorWithPadding(tok), recipe, device)
    return xeval_runner(family, features, recipe, device), hf


# ------------------------------------------------------------------------------------------------ measurement


def timed(prepare) -> float:
    """Seconds of the training loop alone (model construction and loading happen before the clock starts)."""
    train = prepare()
    start = time.perf_counter()
    train()
    return time.perf_counter() - start


def compare(name: str, runs: dict, examples_per_run: int, repeats: int) -> float:
    for prepare in runs.values():
        prepare()()  # warm-up: imports, allocator, first kernels
    times: dict[str, list[float]] = {k: [] for k in runs}
    keys = list(runs)
    for r in range(repeats):
        for key in keys if r % 2 == 0 else keys[::-1]:
            times[key].append(timed(runs[key]))
    rate = {k: examples_per_run / statistics.median(v) for k, v in times.items()}
    ratio = rate["xeval"] / rate["hf"]
    print(f"{name:<16} xeval {rate['xeval']:8.1f} ex/s   HF {rate['hf']:8.1f} ex/s   ratio {ratio:.2f}   "
          f"(medians of {repeats}, {examples_per_run} examples a run)")
    return ratio


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="local model folder (default: a tiny BERT built on the fly)")
    parser.add_argument("--data", help="../shared/data layout folder")
    parser.add_argument("--steps", type=int, default=20, help="optimiser steps per run")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tasks", default="tagging,classification")
    args = parser.parse_args(argv)

    import torch
    import transformers

    from xeval.encoders import Encoder

    root = data_root(args.data)  # (imports tests.conftest, which sets torch's thread count: set ours after it)
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()  # the head-initialisation load reports are expected here
    folder = Path(args.model) if args.model else tiny_model(root, Path(tempfile.mkdtemp()) / "tiny", args.layers,
                                                            args.hidden)
    encoder = Encoder(folder, device=args.device)
    n = args.steps * args.batch_size
    recipe = {"max_steps": args.steps, "batch_size": args.batch_size, "max_train": n, "select": "last",
              "learning_rate": 5e-5, "per_device_batch_size": args.batch_size}
    print(f"model {encoder.key} ({encoder.num_layers} x {encoder.hidden_size}), device {args.device}, "
          f"{args.threads} thread(s), {args.steps} steps x {args.batch_size}")
    builders = {"tagging": tagging_pair, "classification": classification_pair}
    for name in args.tasks.split(","):
        xeval_run, hf_run = builders[name](encoder, root, recipe, args.device)
        compare(name, {"xeval": xeval_run, "hf": hf_run}, n, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
