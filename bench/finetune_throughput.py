"""Fine-tuning throughput: XTREME's own recipe, a plain Hugging Face loop and xeval, measured in the same run.

For tagging (UD-POS English) and pair classification (MultiNLI subset), the same training examples go through

- (a) xtreme: ``AutoModelForTokenClassification`` / ``AutoModelForSequenceClassification`` as XTREME's
  ``run_tag.py`` / ``run_classify.py`` feed it: every batch padded to ``max_seq_length`` 128, 8 examples a pass
  and 4 passes of gradient accumulation a step (scripts/train_udpos.sh, train_xnli.sh), no sorting;
- (b) hf: the same models in a plain hand-written loop: the collator pads each batch to its longest, the whole
  step in one pass;
- (c) trainer: the same models through ``transformers.Trainer`` with its defaults for the task (what a user
  writing a fine-tuning script would run): the same collator (dynamic padding), ``per_device_train_batch_size``
  = the whole step in one pass, fused AdamW (its default optimiser), linear schedule, clipping at 1.0, no
  logging, saving or evaluation inside the timed loop;
- (d) xeval: the adapter's features (word windows, first-subword labels / pair encoding) and
  ``training.fine_tune`` with the card's recipe (XTREME's 8 x 4 loss maths: each micro-batch of 8 keeps its own
  loss mean, the four sharing one pass up to ``pass_tokens``; batches grouped by length, each pass trimmed to its own
  longest), with the adapter's head; ``--pass-tokens 0`` gives each micro-batch its own pass.

All run the same number of optimiser steps of the same 32 examples (AdamW, linear schedule, clipping), so they
compute the same training maths: padding is masked (no attention, no loss), accumulation sums the same gradient;
what differs is the batch composition of the shuffle (a different, equally random order) and float rounding.
Throughput = training examples per second of the training loop (features and models are prepared outside the
timer). Repeats are interleaved (order reversed every other repeat) after one warm-up of each; medians compared.

    python bench/finetune_throughput.py                   # tiny BERT (4 x 128) built on the fly, CPU
    python bench/finetune_throughput.py --model ckpt/ --steps 30 --repeats 5 --batch-size 16 --device cuda
"""

from __future__ import annotations

import argparse
import importlib.util
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
    from tests.helpers.tiny import make_tiny_bert
    from tests.helpers.transfer import real_lines

    return make_tiny_bert(folder, texts=real_lines(root), vocab_size=4000, layers=layers, hidden=hidden)


def context(encoder, root: Path, recipe: dict):
    from xeval.adapters.context import RunContext
    from xeval.data.sources import DataRoot
    from xeval.results.store import Store
    from xeval.run.options import task_options

    return RunContext(encoder=encoder, data=DataRoot.resolve(str(root)), store=Store(tempfile.mkdtemp()),
                      tasks=task_options(recipe))


# ------------------------------------------------------------------------------------------------ the loops


def xeval_runner(family, features, recipe, device, seed: int = 1):
    from xeval.adapters.transfer import fine_tuning as training
    from xeval.adapters.transfer.base import fresh_model

    def prepare():
        model, _ = fresh_model(family, recipe, seed)  # as xeval run builds it (its dropout masks included)
        return lambda: training.fine_tune(model, features, recipe, seed=seed, device=device, desc="xeval",
                                          pad_token_id=family.tokenizer.pad_token_id or 0)

    return prepare


def hf_runner(auto_cls, folder, num_labels, dataset, collator, recipe, device, accumulation=1):
    """A hand-written Hugging Face loop: ``DataLoader`` (shuffled) + collator, AdamW, linear schedule, clipping;
    ``accumulation`` micro-batches of batch_size / accumulation per optimiser step (XTREME: 8 x 4)."""
    import torch
    from torch.utils.data import DataLoader

    from xeval.adapters.transfer.fine_tuning import linear_schedule

    def prepare():
        torch.manual_seed(1)
        model = auto_cls.from_pretrained(folder, num_labels=num_labels, use_safetensors=True).to(device).train()
        return lambda: train(model)

    def train(model):
        optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, eps=recipe.adam_epsilon)
        scheduler = linear_schedule(optimizer, 0, recipe.max_steps)
        loader = DataLoader(dataset, batch_size=recipe.batch_size // accumulation, shuffle=True, collate_fn=collator,
                            generator=torch.Generator().manual_seed(1))
        step, micro = 0, 0
        while step < recipe.max_steps:
            for batch in loader:
                loss = model(**{k: v.to(device) for k, v in batch.items()}).loss
                (loss / accumulation).backward()
                micro += 1
                if micro % accumulation:
                    continue
                torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                if step >= recipe.max_steps:
                    break

    return prepare


def trainer_runner(auto_cls, folder, num_labels, dataset, collator, recipe, device, seed: int = 1):
    """``transformers.Trainer`` with its defaults for this task; only what would make it log, save, evaluate or
    report inside the timed loop is switched off."""
    import torch
    from transformers import Trainer, TrainingArguments

    def prepare():
        torch.manual_seed(seed)
        model = auto_cls.from_pretrained(folder, num_labels=num_labels, use_safetensors=True)
        args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=recipe.batch_size,
                                 max_steps=recipe.max_steps, learning_rate=recipe.learning_rate,
                                 adam_epsilon=recipe.adam_epsilon, max_grad_norm=recipe.max_grad_norm,
                                 warmup_steps=0, seed=seed, report_to="none", save_strategy="no",
                                 logging_strategy="no", eval_strategy="no", disable_tqdm=True,
                                 use_cpu=str(device) == "cpu")
        trainer = Trainer(model=model, args=args, train_dataset=dataset, data_collator=collator)
        return trainer.train

    return prepare


def hf_pair(auto_cls, folder, num_labels, dataset, collator_cls, tok, recipe, device, seed: int = 1):
    """(a) XTREME's recipe: every batch padded to max_seq_length 128, 8 examples x 4 accumulation per step
    (scripts/train_udpos.sh, train_xnli.sh for base models), unsorted; (b) a plain HF loop: dynamic padding by
    the collator, the whole step in one pass."""
    xtreme = hf_runner(auto_cls, folder, num_labels, dataset,
                       collator_cls(tok, padding="max_length", max_length=recipe.max_length), recipe, device,
                       accumulation=4)
    plain = hf_runner(auto_cls, folder, num_labels, dataset, collator_cls(tok), recipe, device)
    runs = {"xtreme": xtreme, "hf": plain}
    if importlib.util.find_spec("accelerate") is None:  # Trainer needs it: pip install -e ".[bench]"
        print("(no trainer peer: transformers.Trainer needs accelerate, pip install -e '.[bench]')", flush=True)
    else:
        runs["trainer"] = trainer_runner(auto_cls, folder, num_labels, dataset, collator_cls(tok), recipe, device,
                                         seed)
    return runs


def adapter_side(card_name: str, family_cls, encoder, root, recipe_overrides):
    """The adapter's family, recipe, training examples and features for one card's English training set."""
    from xeval.adapters.transfer.base import load
    from xeval.adapters.transfer.recipe import Recipe
    from xeval.cards.catalog import load_card

    card = load_card(card_name)
    ctx = context(encoder, root, recipe_overrides)
    recipe = Recipe.build(card.recipe, recipe_overrides)
    family = family_cls(card, ctx, recipe)
    examples = load(card, "en", "train", ctx)[: recipe.max_train]
    family.setup(examples)
    return family, recipe, examples, family.features(examples)


def with_passes_ab(runs: dict, family, features, recipe, device, seed: int = 1) -> dict:
    """The peers plus ``xeval-pass0``: xeval's loop with one micro-batch a forward/backward pass (``pass_tokens``
    0, xeval before passes), to time what sharing a pass buys in the same process."""
    from dataclasses import replace

    return {**runs, "xeval-pass0": xeval_runner(family, features, replace(recipe, pass_tokens=0), device, seed)}


def tagging_pair(encoder, root, recipe_overrides, device, passes_ab: bool = False):
    from transformers import AutoModelForTokenClassification, DataCollatorForTokenClassification

    from xeval.adapters.transfer.tagging import Tagging

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
    hf = hf_pair(AutoModelForTokenClassification, encoder.spec, len(family.labels), dataset,
                 DataCollatorForTokenClassification, tok, recipe, device)
    runs = {**hf, "xeval": xeval_runner(family, features, recipe, device)}
    return with_passes_ab(runs, family, features, recipe, device) if passes_ab else runs


def classification_pair(encoder, root, recipe_overrides, device, seed: int = 1, passes_ab: bool = False):
    from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding

    from xeval.adapters.transfer.classification import PairClassification

    family, recipe, examples, features = adapter_side("xnli", PairClassification, encoder, root, recipe_overrides)
    tok = encoder.tokenizer
    enc = tok([ex.text_a for ex in examples], [ex.text_b for ex in examples], truncation=True,
              max_length=recipe.max_length, return_token_type_ids=True)
    dataset = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
                "token_type_ids": enc["token_type_ids"][i], "labels": family.index[ex.label]}
               for i, ex in enumerate(examples)]
    hf = hf_pair(AutoModelForSequenceClassification, encoder.spec, len(family.labels), dataset,
                 DataCollatorWithPadding, tok, recipe, device, seed)
    runs = {**hf, "xeval": xeval_runner(family, features, recipe, device, seed)}
    return with_passes_ab(runs, family, features, recipe, device, seed) if passes_ab else runs


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
    ratios = "".join(f"   xeval/{k} {rate['xeval'] / rate[k]:.2f}" for k in keys if k != "xeval")
    print(f"{name:<16} " + "   ".join(f"{k} {rate[k]:7.1f} ex/s" for k in keys) + ratios
          + f"   (medians of {repeats}, {examples_per_run} examples a run)", flush=True)
    return rate['xeval'] / rate['xtreme'] if "xtreme" in rate else 0.0


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
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32", help="xeval's recipe precision")
    parser.add_argument("--pass-tokens", type=int, default=None,
                        help="xeval's recipe pass_tokens (default: the recipe's; 0: one micro-batch a pass)")
    parser.add_argument("--passes-ab", action="store_true",
                        help="add the peer xeval-pass0 (xeval with one micro-batch a pass) to time what a shared pass buys")
    parser.add_argument("--peers", default=None,
                        help="comma list of the other peers to time (xtreme, hf, trainer; default all; xeval always)")
    args = parser.parse_args(argv)

    import torch
    import transformers

    from xeval.models.encoder import Encoder

    root = data_root(args.data)  # (imports tests.conftest, which sets torch's thread count: set ours after it)
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()  # the head-initialisation load reports are expected here
    folder = Path(args.model) if args.model else tiny_model(root, Path(tempfile.mkdtemp()) / "tiny", args.layers,
                                                            args.hidden)
    encoder = Encoder(folder, device=args.device)
    n = args.steps * args.batch_size
    # xeval: the card's own recipe (8 x 4 loss maths in one pass, length-grouped, dynamic padding) over these fields
    recipe = {"max_steps": args.steps, "batch_size": args.batch_size, "max_train": n, "select": "last",
              "learning_rate": 5e-5, "precision": args.precision, "pass_tokens": args.pass_tokens}
    print(f"model {encoder.key} ({encoder.num_layers} x {encoder.hidden_size}), device {args.device}, "
          f"{args.threads} thread(s), {args.steps} steps x {args.batch_size}")
    builders = {"tagging": tagging_pair, "classification": classification_pair}
    for name in args.tasks.split(","):
        runs = builders[name](encoder, root, recipe, args.device, passes_ab=args.passes_ab)
        if args.peers:
            keep = {*args.peers.split(","), "xeval", "xeval-pass0"}  # xeval's own peers stay (the ratios' base)
            runs = {k: v for k, v in runs.items() if k in keep}
        compare(name, runs, n, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
