"""Few-shot target-language transfer (``xeval run --setting few-shot --shots 10,100``): fine-tune on English as
zero-shot transfer does, then continue from those English weights with k labelled examples of each target
language, and score that language's test set (Lauscher et al. 2020, "From Zero to Hero").

- Tasks: tagging (UD-POS, PAN-X) and pair classification (XNLI, PAWS-X), for the languages whose card evaluates
  them on ``test`` while a labelled ``dev`` split exists: shots are drawn from dev, scores come from test, never the
  same examples (a dev example whose text also occurs in the test set is left out of the pool; how many is
  recorded). Languages evaluated on dev in a suite (no labelled test there) are skipped and named.
- Shots: a deterministic permutation of the pool per (task, language, seed), ``random.Random("few-shot/<task>/
  <lang>/s<seed>")``; the k shots are its first k, so 10 shots are within the 100. The shots' ids are recorded.
- Recipe: the English fine-tuning's recipe, continued for ``FEW_SHOT_EPOCHS`` epochs over the shots with batches of
  at most ``FEW_SHOT_BATCH`` examples, no warm-up, the last weights kept (the shot language has no selection set).
- One result unit per (language, k): setting ``few-shot-<k>``, so tables show a row per k beside zero-shot.
"""

from __future__ import annotations

import copy
import random
from dataclasses import replace

from xeval.adapters.limits import limited
from xeval.adapters.transfer.base import (
    data_identity,
    dev_set,
    evaluate_unit,
    load,
    pad_id,
    train_model,
    training_examples,
    training_source,
    unit_for,
    unit_hash,
)
from xeval.adapters.transfer.fine_tuning import fine_tune
from xeval.base.console import log
from xeval.base.errors import ConfigError
from xeval.cards.types import TASK_TYPES, task_type
from xeval.results.identity import config_hash
from xeval.results.outcomes import example_id
from xeval.results.store import Record

SETTING = "few-shot"
SHOT_SPLIT = "dev"
FEW_SHOT_EPOCHS = 10
FEW_SHOT_BATCH = 16


def parse_shots(value) -> list[int]:
    """``"10,100"`` (or a list) -> [10, 100]; each a positive integer, no repeats."""
    items = value if isinstance(value, list | tuple) else str(value or "").split(",")
    try:
        shots = [int(str(x).strip()) for x in items if str(x).strip()]
    except ValueError:
        raise ConfigError(f"--shots: expected counts like 10,100, found {value!r}") from None
    if not shots or any(k < 1 for k in shots) or len(set(shots)) != len(shots):
        raise ConfigError(f"--shots: expected positive counts without repeats, found {value!r}")
    return sorted(shots)


def setting_name(k: int) -> str:
    return f"{SETTING}-{k}"


def text_key(example) -> str:
    """What makes two examples the same sentence(s): tokens for tagging, the two texts for pairs."""
    tokens = getattr(example, "tokens", None)
    if tokens is not None:
        return " ".join(tokens)
    return f"{example.text_a}\t{example.text_b}"


def shot_pool(card, lang: str, ctx, test: list) -> tuple[list, int]:
    """The target language's labelled dev examples that do not repeat a test example, and how many did."""
    pool = load(card, lang, SHOT_SPLIT, ctx)
    seen = {text_key(ex) for ex in test}
    kept = [ex for ex in pool if text_key(ex) not in seen]
    return kept, len(pool) - len(kept)


def draw(pool: list, card, lang: str, seed: int, k: int) -> list:
    order = list(range(len(pool)))
    random.Random(f"few-shot/{card.name}/{lang}/s{seed}").shuffle(order)
    return [pool[i] for i in order[:k]]


def eligible(card, langs: list[str]) -> tuple[list[str], list[str]]:
    """(languages few-shot can run on, those it cannot: the training language, and any scored on the shot split)."""
    train_lang = (card.train or {}).get("lang")
    ok = [lang for lang in langs if lang != train_lang and card.split_for(lang) != SHOT_SPLIT]
    return ok, [lang for lang in langs if lang not in ok]


def run(card, langs: list[str], ctx, family_cls, recipe) -> list[Record]:
    if not task_type(card.type).few_shot:
        runs = ", ".join(t.name for t in TASK_TYPES.values() if t.few_shot)
        raise ConfigError(f"--setting few-shot: task {card.name!r} ({card.type}) is not supported; few-shot runs "
                          f"tagging and pair classification ({runs})")
    shots = parse_shots(list(ctx.shots))
    targets, skipped = eligible(card, langs)
    if skipped:
        log.info(f"{card.name}: few-shot skips {', '.join(skipped)} (the training language, or scored on "
                     f"{SHOT_SPLIT}, where the shots come from)")
    if not targets:
        raise ConfigError(f"--setting few-shot: no language of {card.name!r} is scored on a labelled test set with "
                          f"a {SHOT_SPLIT} set to draw shots from (skipped: {', '.join(skipped)})")
    records: list[Record] = []
    for seed in ctx.seeds:
        records += _run_seed(card, targets, seed, shots, recipe, ctx, family_cls)
    return records


def _few_shot_recipe(recipe, k: int):
    return replace(recipe, epochs=float(FEW_SHOT_EPOCHS), max_steps=None, batch_size=min(FEW_SHOT_BATCH, k),
                   gradient_accumulation=None, per_device_batch_size=None, warmup_steps=0, warmup_ratio=0.0,
                   select="last", model_selection=None, max_train=None, eval_every=None)


def _shot_config(card, lang: str, k: int, recipe, chosen: list | None, overlap: int | None, ctx) -> dict:
    block = {"k": k, "source": f"{lang}/{SHOT_SPLIT}", "sampling": f"random.Random('few-shot/{card.name}/{lang}/"
             "s<seed>').shuffle, first k", "epochs": FEW_SHOT_EPOCHS, "batch_size": min(FEW_SHOT_BATCH, k),
             "select": "last", "data": data_identity(card, lang, SHOT_SPLIT, ctx)}
    if chosen is not None:
        block["ids"] = [example_id(ex) for ex in chosen]
        block["left_out_as_in_test"] = overlap
    return block


def _run_seed(card, langs, seed, shots, recipe, ctx, family_cls) -> list[Record]:
    family = family_cls(card, ctx, recipe)
    source = training_source(card, "zero-shot", card.train["lang"])
    units = {}
    for lang in langs:
        english_hash = unit_hash(card, lang, "zero-shot", recipe, family, source, ctx)
        for k in shots:
            extra = {"english": english_hash, "few_shot": _shot_config(card, lang, k, recipe, None, None, ctx)}
            chash = config_hash(card, ctx, extra, [])
            units[(lang, k)] = unit_for(card, lang, seed, setting_name(k), ctx, chash)
    found = {key: ctx.store.get(u) for key, u in units.items() if ctx.store.has(u)}
    out = list(found.values())
    if len(found) == len(units):
        return out
    train = training_examples(card, "zero-shot", source, recipe, ctx)
    family.setup(train)
    dev = dev_set(card, recipe, ctx)
    english, report = train_model(family, family.features(train), dev, seed, recipe, ctx,
                                  f"{card.name} s{seed} (English)")
    pad = pad_id(family.tokenizer)
    for lang in langs:
        if all((lang, k) in found for k in shots):
            continue
        test = limited(load(card, lang, card.split_for(lang), ctx), recipe.max_eval, ctx.tasks.limit)
        try:
            pool, overlap = shot_pool(card, lang, ctx, test)
        except ConfigError as err:
            raise ConfigError(f"--setting few-shot: task {card.name!r} has no labelled {SHOT_SPLIT} split for "
                              f"{lang!r} to draw shots from: {err}") from None
        if not family.labelled(pool):
            raise ConfigError(f"--setting few-shot: {card.name} {lang}/{SHOT_SPLIT} carries no labels to learn from")
        for k in shots:
            if (lang, k) in found:
                continue
            if k > len(pool):
                raise ConfigError(f"--shots {k}: {card.name} {lang}/{SHOT_SPLIT} has only {len(pool)} examples "
                                  "that are not in its test set")
            chosen = draw(pool, card, lang, seed, k)
            model = copy.deepcopy(english)
            fs_recipe = _few_shot_recipe(recipe, k)
            fine_tune(model, family.features(chosen), fs_recipe, seed, pad, None, device=family.encoder.device,
                      desc=f"{card.name} {lang} {k} shots s{seed}")
            shot_block = _shot_config(card, lang, k, fs_recipe, chosen, overlap, ctx)
            out.append(evaluate_unit(family, model, report, units[(lang, k)], train, dev, source, ctx,
                                     extra_config={"few_shot": shot_block}))
            del model
    return out
