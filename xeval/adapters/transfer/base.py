"""The shared base of the fine-tuning modes (zero-shot, translate-train, few-shot) and of probe mode: what a
family supplies (``Family``) and what every mode does with it.

A family (tagging, classification, QA) supplies a ``Family`` subclass: features, head, prediction, metrics and
the submission file format. This module reads the card's data (``load``, ``data_identity``, ``training_examples``),
names and hashes result units (``unit_for``, ``unit_hash``), fine-tunes a fresh copy of the backbone with dev-set
selection (``dev_set``, ``train_model``), and evaluates, stores and keeps the predictions of one unit
(``evaluate_unit``, ``prediction_path``). The modes (``zero_shot``, ``few_shot``, ``probe_mode``) own their loops;
``xeval.adapters.transfer.dispatch`` chooses one.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from torch import nn

from xeval.adapters.limits import limit_config, limited
from xeval.adapters.transfer import training_state as saved_state
from xeval.adapters.transfer.backbone import backbone_copy
from xeval.adapters.transfer.dropout_masks import use_masks
from xeval.adapters.transfer.fine_tuning import TrainReport, fine_tune, set_seed
from xeval.adapters.transfer.recipe import Recipe
from xeval.base.atomic import write_text
from xeval.base.console import log
from xeval.base.errors import ConfigError
from xeval.cards import label_free as unscored
from xeval.cards.compat import mode_of as compat_mode
from xeval.data import sources
from xeval.results.identity import config_hash
from xeval.results.store import Record, Unit, slug, stamp

TRANSLATE_SPLIT = "translate-train"  # the split a card names for translated training data (per target language)


class Family:
    """What a fine-tuning family supplies. ``predict`` returns one prediction per example, in order."""

    suffix = "tsv"  # XTREME submission file type: "tsv" (tags, labels) or "json" (QA)
    defaults: dict = {}  # recipe defaults of the family, under the card's recipe and the command line

    def __init__(self, card, ctx, recipe: Recipe):
        self.card, self.ctx, self.recipe = card, ctx, recipe
        self.encoder = ctx.encoder
        self.tokenizer = ctx.encoder.tokenizer
        self.max_length = min(recipe.max_length, ctx.encoder.max_length)
        self.compat = compat_mode(ctx)  # "xtreme": reproduce the published pipeline's quirks (xeval.cards.compat)

    def setup(self, train_examples: list) -> None:
        """Learn what the family needs from the training data (e.g. the label set)."""

    def build_model(self, backbone: nn.Module) -> nn.Module:
        raise NotImplementedError

    def features(self, examples: list) -> list[dict]:
        raise NotImplementedError

    def predict(self, model: nn.Module, examples: list) -> list:
        raise NotImplementedError

    def labelled(self, examples: list) -> bool:
        """Whether the examples carry gold labels (XTREME's official test files do not: their predictions are
        stored and exported unscored, for ``xeval score`` or the official scorer)."""
        raise NotImplementedError

    def score(self, predictions: list, examples: list, lang: str) -> dict[str, float]:
        raise NotImplementedError

    def warnings(self, predictions: list, examples: list) -> list[str]:
        """What a reader of the score should know about these predictions (kept in the record's
        ``extra.warnings`` and logged), e.g. a classifier that answered one class for every example."""
        return []

    def outcomes(self, predictions: list, examples: list, lang: str):
        """Per-example outcomes of labelled examples (``xeval.results.outcomes.Outcomes``), or None."""
        return None

    def format_predictions(self, predictions: list, examples: list) -> str:
        raise NotImplementedError

    def format_gold(self, examples: list) -> str:
        raise NotImplementedError

    def config(self) -> dict:
        """Family options that decide the numbers (recorded in every result's ``config``)."""
        return {"max_length": self.max_length, "compat": self.compat}

    def training_config(self, selects_on_dev: bool) -> dict:
        """The options that decide the trained weights (``xeval.adapters.transfer.shared_training``): all of ``config()``
        here; a family whose config also holds prediction-only options leaves them out when no dev score selects
        the weights."""
        return self.config()


# --------------------------------------------------------------------------------------------------- data access


_CACHE: dict[tuple, list] = {}
_CACHE_SIZE = 6  # a run reads train, dev and each test split; training sets are read again for every seed


def load(card, lang: str, split: str, ctx) -> list:
    """The card's examples (with its deterministic subsampling), kept for a while: a multi-seed or
    translate-train run reads the same training file many times."""
    key = (card.hash, lang, split, ctx.data)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = sources.load_examples(card, lang, split, ctx.data, seed=0)
    return _CACHE[key]


def data_identity(card, lang: str, split: str, ctx) -> dict:
    return sources.data_identity(card, lang, split, ctx.data)


def subsample(items: list, n: int | None, seed: int = 0) -> list:
    """The first ``n`` items of a fixed shuffle (the same for every fine-tuning seed), order preserved."""
    if n is None or n >= len(items):
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), n))
    return [items[i] for i in keep]


def training_source(card, setting: str, lang: str) -> tuple[str, str]:
    """(language, split) of the training data for ``lang`` under ``setting``."""
    if not card.train:
        raise ConfigError(f"task {card.name!r} has no training set; it is not a fine-tuning task")
    if setting == "zero-shot":
        return card.train["lang"], card.train["split"]
    return lang, card.train.get("translated", TRANSLATE_SPLIT)


def training_examples(card, setting: str, source: tuple[str, str], recipe: Recipe, ctx) -> list:
    """The training examples of ``source`` (language, split), subsampled to the recipe's ``max_train``."""
    try:
        return subsample(load(card, *source, ctx), recipe.max_train)
    except ConfigError as err:
        if setting == "zero-shot":
            raise
        raise _translated_missing(card, setting, source, err) from None


def _translated_missing(card, setting: str, train_source, err: ConfigError) -> ConfigError:
    return ConfigError(f"--setting {setting}: task {card.name!r} names no translated training data for "
                       f"{train_source[0]!r} (a {train_source[1]!r} split in its files): {err}")


def _train_identity(card, setting: str, train_source, ctx) -> dict:
    try:
        return data_identity(card, *train_source, ctx)
    except ConfigError as err:
        if setting == "zero-shot":
            raise
        raise _translated_missing(card, setting, train_source, err) from None


def dev_set(card, recipe: Recipe, ctx) -> list:
    """The English dev set used for model selection (XTREME selects on the training language's dev set)."""
    if recipe.select != "dev":
        return []
    lang = card.train["lang"]
    try:
        return load(card, lang, "dev", ctx)[: recipe.max_dev] if recipe.max_dev else load(card, lang, "dev", ctx)
    except ConfigError:
        return []  # the card names no dev split: keep the last weights


# --------------------------------------------------------------------------------------------------- result units


def unit_for(card, lang: str, seed: int, setting: str, ctx, config_hash: str | None = None) -> Unit:
    """The result unit of one fine-tuned (task, language, seed) under ``setting``."""
    return Unit(model=ctx.encoder.key, task=card.name, lang=lang, split=card.split_for(lang), seed=seed,
                layer=None, setting=setting, config_hash=config_hash)


def unit_hash(card, lang: str, setting: str, recipe: Recipe, family: Family, train_source, ctx) -> str:
    """The config hash (``xeval.results.identity``) of one language's unit: the resolved recipe and family options, and the
    evaluation, training and selection data it depends on."""
    data = [data_identity(card, lang, card.split_for(lang), ctx), _train_identity(card, setting, train_source, ctx)]
    if recipe.select == "dev":
        try:
            data.append(data_identity(card, card.train["lang"], "dev", ctx))
        except ConfigError:
            pass  # the card names no dev split: the last weights are kept (see dev_set)
    config = {"recipe": recipe.to_json(), "setting": setting, **family.config()}
    return config_hash(card, ctx, config, data)


# --------------------------------------------------------------------------------------------------- train, evaluate


def train_model(family: Family, features: list[dict], dev: list, seed: int, recipe: Recipe, ctx, desc: str,
                joint: bool = False, state: saved_state.TrainingState | None = None):
    """A fresh copy of the backbone with the family's head, fine-tuned on ``features`` (selected on ``dev`` when
    given): (model, ``TrainReport``). ``state``: where a long fine-tune keeps its state (``training_state``)."""
    model, masks = fresh_model(family, recipe, seed)
    metric = family.card.metric
    evaluate = (lambda m: family.score(family.predict(m, dev), dev, family.card.train["lang"])[metric]) if dev else None
    report = fine_tune(model, features, recipe, seed, pad_id(family.tokenizer), evaluate,
                       device=family.encoder.device, desc=desc, data_parallel=joint, auto_batch=ctx.tasks.auto_batch,
                       state=state)
    report.dropout_masks = masks
    return model, report


def fresh_model(family: Family, recipe: Recipe, seed: int):
    """The family's model on a fresh copy of the backbone, its head drawn from ``seed``, drawing dropout masks as
    the recipe says: (model, what draws the masks)."""
    set_seed(seed)  # the head's initialisation depends on the seed too
    model = family.build_model(backbone_copy(family.encoder))
    return model, use_masks(model, recipe.dropout_rng)


def training_state(card, ctx, key: str, seed: int) -> saved_state.TrainingState | None:
    """Where a fine-tune of ``card`` keeps its training state: beside the task's records
    (``<out>/<model>/<task>/training/``); None for a run without a store on disk."""
    root = getattr(ctx.store, "root", None)
    if root is None or not getattr(ctx.store, "persistent", True):
        return None
    return saved_state.TrainingState(Path(root) / slug(ctx.encoder.key) / slug(card.name) / "training", key, seed,
                         every_s=saved_state.SAVE_EVERY_S)


def pad_id(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0


def evaluate_unit(family: Family, model, report: TrainReport, unit: Unit, train, dev, train_source, ctx,
                  extra_config: dict | None = None, training_extra: dict | None = None) -> Record:
    """Predict and score ``unit``'s evaluation split with ``model``, keep the predictions beside the record
    (``prediction_path``) and store the record."""
    card, recipe = family.card, family.recipe
    start = time.perf_counter()
    examples = limited(load(card, unit.lang, unit.split, ctx), recipe.max_eval, ctx.tasks.limit)
    if not examples:
        raise ConfigError(f"task {card.name!r}: no {unit.split} examples for {unit.lang!r}")
    predictions = family.predict(model, examples)
    labelled = family.labelled(examples)
    metrics = {k: round(float(v), 6) for k, v in family.score(predictions, examples, unit.lang).items()} \
        if labelled else {}
    write_text(prediction_path(ctx, unit, family.suffix), family.format_predictions(predictions, examples))
    warnings = family.warnings(predictions, examples)
    for warning in warnings:
        log.warning(f"{card.name} {unit.lang} seed {unit.seed}: {warning}")
    record = Record(
        unit=unit,
        metrics=metrics,
        n_examples=len(examples),
        model=ctx.encoder.identity(),
        data=data_identity(card, unit.lang, unit.split, ctx),
        card=card.identity(),
        config={
            "recipe": recipe.to_json(),
            "setting": unit.setting,
            "train": {"lang": train_source[0], "split": train_source[1], "n_examples": len(train),
                      "data": data_identity(card, train_source[0], train_source[1], ctx)},
            "selection": {"on": f"{card.train['lang']}/dev", "metric": card.metric, "n_examples": len(dev)}
            if dev else {"on": "last"},
            **family.config(),
            **limit_config(ctx),
            **(extra_config or {}),
        },
        provenance=stamp(time.perf_counter() - start),
        extra={"training": {**report.to_json(), **(training_extra or {})},
               **({"warnings": warnings} if warnings else {}),
               **({} if labelled else unscored.extra("the evaluation data has no gold labels"))},
    )
    ctx.store.put(record, family.outcomes(predictions, examples, unit.lang) if labelled else None)
    return record


def prediction_path(ctx, unit: Unit, suffix: str) -> Path:
    """Where a unit's predictions are kept: ``<out>/<model>/<task>/predictions/<lang>.<split>.s<seed>.<tsv|json>``,
    beside the records, so ``--export-predictions`` can lay out a submission from units an earlier run stored."""
    return ctx.store.path(unit).parent / "predictions" / f"{Path(unit.filename()).stem}.{suffix}"
