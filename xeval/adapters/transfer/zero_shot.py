"""Zero-shot cross-lingual transfer, the part every fine-tuning family shares.

For each seed: fine-tune a fresh copy of the backbone on the card's training set (English, or the target
language's translated training set under ``translate-train``), select on the English dev set, then predict and
score every language's evaluation split and store one record per (task, language, split, seed).

Resume: a seed whose units are all stored is skipped without training; a partly stored seed trains once and
evaluates only the missing languages. Predictions are kept beside the records
(``<out>/<model>/<task>/predictions/<lang>.<split>.s<seed>.<tsv|json>``) so ``--export-predictions`` can lay out
an XTREME submission folder even for units stored by an earlier run.

A family (tagging, classification, QA) supplies a ``Family`` subclass: features, head, prediction, metrics and
the submission file format; this module owns the loop, the records and the files.
"""

from __future__ import annotations

import time
from dataclasses import fields
from pathlib import Path

from torch import nn

from xeval.adapters.transfer import shared_training
from xeval.adapters.transfer.loop import Recipe, TrainReport, backbone_copy, fine_tune, set_seed, subsample
from xeval.base import collectives
from xeval.base.atomic import write_text
from xeval.base.console import log
from xeval.base.errors import ConfigError
from xeval.cards import label_free as unscored
from xeval.cards.compat import RECIPES as COMPAT_RECIPES
from xeval.cards.compat import mode_of as compat_mode
from xeval.results.store import Record, Unit, _slug, stamp

SETTINGS = ("zero-shot", "translate-train", "few-shot")
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
    from xeval.data.sources import load_examples

    key = (card.hash, lang, split, ctx.data)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = load_examples(card, lang, split, ctx.data, seed=0)
    return _CACHE[key]


def data_identity(card, lang: str, split: str, ctx) -> dict:
    from xeval.data.sources import data_identity as identity

    return identity(card, lang, split, ctx.data)


def _train_source(card, setting: str, lang: str) -> tuple[str, str]:
    """(language, split) of the training data for ``lang`` under ``setting``."""
    if not card.train:
        raise ConfigError(f"task {card.name!r} has no training set; it is not a fine-tuning task")
    if setting == "zero-shot":
        return card.train["lang"], card.train["split"]
    return lang, card.train.get("translated", TRANSLATE_SPLIT)


# --------------------------------------------------------------------------------------------------- the loop

RECIPE_FIELDS = frozenset(f.name for f in fields(Recipe))


def run(card, langs: list[str], ctx, family_cls: type[Family]) -> list[Record]:
    mode = ctx.options.get("mode", "finetune")
    if mode == "probe":  # the encoder frozen, a linear head on its features
        from xeval.adapters.transfer import probe_mode

        return probe_mode.run(card, langs, ctx, family_cls)
    if mode != "finetune":
        raise ConfigError(f"unknown mode {mode!r}; expected finetune or probe")
    setting = ctx.options.get("setting", "zero-shot")
    if setting not in SETTINGS:
        raise ConfigError(f"unknown setting {setting!r}; expected one of {', '.join(SETTINGS)}")
    # the command line's overrides that are recipe fields (the others are probe options of the same run, checked
    # by xeval.run.checks before the model loaded)
    overrides = {k: v for k, v in (ctx.options.get("recipe") or {}).items() if k.replace("-", "_") in RECIPE_FIELDS}
    # --compat xtreme sets the recipe fields of XTREME's quirks (selection at save_steps only), under the command line
    recipe = Recipe.build(family_cls.defaults, card.recipe, COMPAT_RECIPES[compat_mode(ctx)], overrides)
    recipe.learning_rate = learning_rate_for(recipe, ctx.encoder.hidden_size, overrides)  # recorded with the recipe
    if setting == "few-shot":  # English fine-tuning, then k target-language examples (xeval/adapters/transfer/few_shot.py)
        from xeval.adapters.transfer import few_shot as fewshot

        return fewshot.run(card, langs, ctx, family_cls, recipe)
    records: list[Record] = []
    for seed in ctx.seeds:
        # zero-shot: one model per seed for all languages; translate-train: one per seed and target language
        groups = [(None, list(langs))] if setting == "zero-shot" else [(lang, [lang]) for lang in langs]
        for train_lang, group in groups:
            records += _run_group(card, group, train_lang, seed, setting, recipe, ctx, family_cls)
    return records


def learning_rate_for(recipe: Recipe, hidden_size: int, overrides: dict) -> float:
    """The recipe's learning rate for a model of this hidden size: ``learning_rate_for_hidden`` where the card names
    the size (XTREME's large-model rates), unless the command line gives ``learning_rate``.

    >>> r = Recipe.build({"learning_rate": 2e-5, "learning_rate_for_hidden": {1024: 3e-5}})
    >>> learning_rate_for(r, 768, {}), learning_rate_for(r, 1024, {}), learning_rate_for(r, 1024, {"learning_rate": 1e-5})
    (2e-05, 3e-05, 2e-05)
    """
    by_hidden = {int(k): float(v) for k, v in (recipe.learning_rate_for_hidden or {}).items()}
    if hidden_size in by_hidden and "learning_rate" not in overrides:
        return by_hidden[hidden_size]
    return recipe.learning_rate


def _unit(card, lang: str, seed: int, setting: str, ctx, config_hash: str | None = None) -> Unit:
    return Unit(model=ctx.encoder.key, task=card.name, lang=lang, split=card.split_for(lang), seed=seed,
                layer=None, setting=setting, config_hash=config_hash)


def _unit_hash(card, lang: str, setting: str, recipe: Recipe, family: Family, train_source, ctx) -> str:
    """The config hash (``xeval.results.identity``) of one language's unit: the resolved recipe and family options, and the
    evaluation, training and selection data it depends on."""
    from xeval.results.identity import config_hash

    data = [data_identity(card, lang, card.split_for(lang), ctx), _train_identity(card, setting, train_source, ctx)]
    if recipe.select == "dev":
        try:
            data.append(data_identity(card, card.train["lang"], "dev", ctx))
        except ConfigError:
            pass  # the card names no dev split: the last weights are kept (see _dev_set)
    config = {"recipe": recipe.to_json(), "setting": setting, **family.config()}
    return config_hash(card, ctx, config, data)


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


def _run_group(card, langs, train_lang, seed, setting, recipe, ctx, family_cls) -> list[Record]:
    joint = ctx.ddp_finetune  # every rank trains this model together (xeval.run.distributed)
    family = family_cls(card, ctx, recipe)
    train_source = _train_source(card, setting, train_lang or (card.train or {}).get("lang"))
    units = {lang: _unit(card, lang, seed, setting, ctx,
                         _unit_hash(card, lang, setting, recipe, family, train_source, ctx)) for lang in langs}
    missing = [lang for lang in langs if not ctx.store.has(units[lang])]
    if joint:
        missing = collectives.broadcast(missing)  # rank 0's view decides: every rank trains, or none
    found = [ctx.store.get(units[lang]) for lang in langs if lang not in missing]
    out: list[Record] = [r for r in found if r is not None]
    if missing:
        lang_t, split_t = train_source
        try:
            train = subsample(load(card, lang_t, split_t, ctx), recipe.max_train)
        except ConfigError as err:
            if setting == "zero-shot":
                raise
            raise _translated_missing(card, setting, train_source, err) from None
        family.setup(train)
        dev = _dev_set(card, recipe, ctx)
        features = family.features(train)
        key = shared_training.training_key(family, features, dev, seed, recipe, joint)
        kept = shared_training.reuse(key, family.encoder.device)
        if kept is None:
            model, report = _train(family, features, dev, seed, recipe, ctx, f"{card.name} s{seed}", joint)
            trained_for = None
        else:
            model, report, trained_for = kept
            log.info(f"{card.name} s{seed}: the model fine-tuned for {trained_for} (the same encoder, seed, recipe, "
                     f"training features and selection), not trained again")
        extra = {"trained_for": trained_for} if trained_for else None
        for lang in collectives.share(missing) if joint else missing:  # joint: the languages split over the ranks
            out.append(_evaluate(family, model, report, units[lang], train, dev, (lang_t, split_t), ctx,
                                 training_extra=extra))
        # one model per seed, the model's and its random-init control's
        shared_training.keep(key, model, report, trained_for or card.name, limit=2 * len(ctx.seeds))
        del model
    if (ctx.export_dir or ctx.options.get("export_labels")) and not (joint and collectives.rank_world()[0]):
        _export(card, langs, units, family, recipe, ctx)
    return out


def _dev_set(card, recipe: Recipe, ctx) -> list:
    """The English dev set used for model selection (XTREME selects on the training language's dev set)."""
    if recipe.select != "dev":
        return []
    lang = card.train["lang"]
    try:
        return load(card, lang, "dev", ctx)[: recipe.max_dev] if recipe.max_dev else load(card, lang, "dev", ctx)
    except ConfigError:
        return []  # the card names no dev split: keep the last weights


def _train(family: Family, features: list[dict], dev: list, seed: int, recipe: Recipe, ctx, desc: str,
           joint: bool = False):
    set_seed(seed)  # the head's initialisation depends on the seed too
    model = family.build_model(backbone_copy(family.encoder))
    metric = family.card.metric
    evaluate = (lambda m: family.score(family.predict(m, dev), dev, family.card.train["lang"])[metric]) if dev else None
    report = fine_tune(model, features, recipe, seed, _pad_id(family.tokenizer), evaluate,
                       device=family.encoder.device, desc=desc, data_parallel=joint)
    return model, report


def _pad_id(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0


def _evaluate(family: Family, model, report: TrainReport, unit: Unit, train, dev, train_source, ctx,
              extra_config: dict | None = None, training_extra: dict | None = None) -> Record:
    card, recipe = family.card, family.recipe
    start = time.perf_counter()
    examples = load(card, unit.lang, unit.split, ctx)
    if recipe.max_eval:
        examples = examples[: recipe.max_eval]
    if not examples:
        raise ConfigError(f"task {card.name!r}: no {unit.split} examples for {unit.lang!r}")
    predictions = family.predict(model, examples)
    labelled = family.labelled(examples)
    metrics = {k: round(float(v), 6) for k, v in family.score(predictions, examples, unit.lang).items()} \
        if labelled else {}
    write_text(_prediction_path(ctx, unit, family.suffix), family.format_predictions(predictions, examples))
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
            **(extra_config or {}),
        },
        provenance=stamp(time.perf_counter() - start),
        extra={"training": {**report.to_json(), **(training_extra or {})},
               **({} if labelled else unscored.extra("the evaluation data has no gold labels"))},
    )
    ctx.store.put(record, family.outcomes(predictions, examples, unit.lang) if labelled else None)
    return record


def _prediction_path(ctx, unit: Unit, suffix: str) -> Path:
    return ctx.store.path(unit).parent / "predictions" / f"{Path(unit.filename()).stem}.{suffix}"


def _export(card, langs, units, family: Family, recipe: Recipe, ctx) -> None:
    """XTREME's submission layout: ``<dir>/<task>/test-<lang>.<tsv|json>`` (``<dir>/s<seed>/...`` when a run has
    several seeds; ``<split>-<lang>`` for a language scored on another split, see ``xeval.submission.writer``), with a
    ``.jsonl`` sidecar of id, gold, prediction and correct per example. ``export_labels`` writes the gold of exactly
    the evaluated examples in the same layout, so a subsampled run can be re-scored with ``xeval score``."""
    from xeval.submission.writer import export_name, provenance_entry, record_exports, write_sidecar

    several = len(ctx.seeds) > 1
    manifest: dict[Path, dict[str, dict]] = {}  # task folder -> {file name: provenance}
    for lang in langs:
        unit = units[lang]
        rel = Path(f"s{unit.seed}" if several else "") / _slug(card.name) / export_name(unit.split, lang,
                                                                                       family.suffix)
        if ctx.export_dir:
            source = _prediction_path(ctx, unit, family.suffix)
            if source.is_file():
                write_text(Path(ctx.export_dir) / rel, source.read_text(encoding="utf-8"))
                write_sidecar(Path(ctx.export_dir) / rel, ctx.store.outcomes_of(unit))
                manifest.setdefault(Path(ctx.export_dir) / rel.parent, {})[rel.name] = provenance_entry(ctx, unit)
        if ctx.options.get("export_labels"):
            examples = load(card, lang, unit.split, ctx)
            if recipe.max_eval:
                examples = examples[: recipe.max_eval]
            if not family.labelled(examples):
                continue
            write_text(Path(ctx.options["export_labels"]) / rel, family.format_gold(examples))
    for folder, entries in manifest.items():
        record_exports(folder, entries)
