"""Zero-shot cross-lingual transfer and translate-train.

For each seed: fine-tune a fresh copy of the backbone on the card's training set (English, or the target
language's translated training set under ``translate-train``), select on the English dev set, then predict and
score every language's evaluation split and store one record per (task, language, split, seed).

Resume: a seed whose units are all stored is skipped without training; a partly stored seed trains once and
evaluates only the missing languages; a fine-tune stopped half-way continues from its last saved state (every 30
minutes of training, ``xeval.adapters.transfer.training_state``), removed once the seed's units are stored.
Predictions are kept beside the records (``xeval.adapters.transfer.base.prediction_path``) so
``--export-predictions`` can lay out an XTREME submission folder even for units stored by an earlier run.
"""

from __future__ import annotations

from pathlib import Path

from xeval.adapters.limits import limited
from xeval.adapters.transfer import shared_training
from xeval.adapters.transfer.base import (
    Family,
    dev_set,
    evaluate_unit,
    load,
    prediction_path,
    train_model,
    training_examples,
    training_source,
    training_state,
    unit_for,
    unit_hash,
)
from xeval.adapters.transfer.recipe import Recipe
from xeval.base import collectives
from xeval.base.atomic import write_text
from xeval.base.console import log
from xeval.results.store import Record, slug
from xeval.submission.writer import export_name, provenance_entry, record_exports, write_sidecar


def run(card, langs: list[str], ctx, family_cls: type[Family], recipe: Recipe, setting: str) -> list[Record]:
    """``setting`` "zero-shot" or "translate-train" (``xeval.adapters.transfer.dispatch`` checked it)."""
    records: list[Record] = []
    for seed in ctx.seeds:
        # zero-shot: one model per seed for all languages; translate-train: one per seed and target language
        groups = [(None, list(langs))] if setting == "zero-shot" else [(lang, [lang]) for lang in langs]
        for train_lang, group in groups:
            records += _run_group(card, group, train_lang, seed, setting, recipe, ctx, family_cls)
    return records


def _run_group(card, langs, train_lang, seed, setting, recipe, ctx, family_cls) -> list[Record]:
    joint = ctx.ddp_finetune  # every rank trains this model together (xeval.run.distributed)
    family = family_cls(card, ctx, recipe)
    train_source = training_source(card, setting, train_lang or (card.train or {}).get("lang"))
    units = {lang: unit_for(card, lang, seed, setting, ctx,
                            unit_hash(card, lang, setting, recipe, family, train_source, ctx)) for lang in langs}
    missing = [lang for lang in langs if not ctx.store.has(units[lang])]
    if joint:
        missing = collectives.broadcast(missing)  # rank 0's view decides: every rank trains, or none
    found = [ctx.store.get(units[lang]) for lang in langs if lang not in missing]
    out: list[Record] = [r for r in found if r is not None]
    if missing:
        train = training_examples(card, setting, train_source, recipe, ctx)
        family.setup(train)
        dev = dev_set(card, recipe, ctx)
        features = family.features(train)
        key = shared_training.training_key(family, features, dev, seed, recipe, joint)
        kept = shared_training.reuse(key, family.encoder.device)
        state = None if joint else training_state(card, ctx, key, seed)  # a stopped run continues from it
        if kept is None:
            model, report = train_model(family, features, dev, seed, recipe, ctx, f"{card.name} s{seed}", joint,
                                        state)
            trained_for = None
        else:
            model, report, trained_for = kept
            log.info(f"{card.name} s{seed}: the model fine-tuned for {trained_for} (the same encoder, seed, recipe, "
                     f"training features and selection), not trained again")
        extra = {"trained_for": trained_for} if trained_for else None
        for lang in collectives.share(missing) if joint else missing:  # joint: the languages split over the ranks
            out.append(evaluate_unit(family, model, report, units[lang], train, dev, train_source, ctx,
                                     training_extra=extra))
        if state is not None:
            state.clear()  # every unit of this fine-tune is stored
        # one model per seed, the model's and its random-init control's
        shared_training.keep(key, model, report, trained_for or card.name, limit=2 * len(ctx.seeds))
        del model
    if (ctx.export_dir or ctx.export_labels) and not (joint and collectives.rank_world()[0]):
        _export(card, langs, units, family, recipe, ctx)
    return out


def _export(card, langs, units, family: Family, recipe: Recipe, ctx) -> None:
    """XTREME's submission layout: ``<dir>/<task>/test-<lang>.<tsv|json>`` (``<dir>/s<seed>/...`` when a run has
    several seeds; ``<split>-<lang>`` for a language scored on another split, see ``xeval.submission.writer``), with a
    ``.jsonl`` sidecar of id, gold, prediction and correct per example. ``export_labels`` writes the gold of exactly
    the evaluated examples in the same layout, so a subsampled run can be re-scored with ``xeval score``."""
    several = len(ctx.seeds) > 1
    manifest: dict[Path, dict[str, dict]] = {}  # task folder -> {file name: provenance}
    for lang in langs:
        unit = units[lang]
        rel = Path(f"s{unit.seed}" if several else "") / slug(card.name) / export_name(unit.split, lang,
                                                                                       family.suffix)
        if ctx.export_dir:
            source = prediction_path(ctx, unit, family.suffix)
            if source.is_file():
                write_text(Path(ctx.export_dir) / rel, source.read_text(encoding="utf-8"))
                write_sidecar(Path(ctx.export_dir) / rel, ctx.store.outcomes_of(unit))
                manifest.setdefault(Path(ctx.export_dir) / rel.parent, {})[rel.name] = provenance_entry(ctx, unit)
        if ctx.export_labels:
            examples = limited(load(card, lang, unit.split, ctx), recipe.max_eval, ctx.tasks.limit)
            if not family.labelled(examples):
                continue
            write_text(Path(ctx.export_labels) / rel, family.format_gold(examples))
    for folder, entries in manifest.items():
        record_exports(folder, entries)
