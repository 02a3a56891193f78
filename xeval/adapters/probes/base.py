"""What the four alignment probes (Tatoeba, BUCC, word alignment, lexicon induction) share.

- which layers to probe (``probe_layers``): ``ctx.layers`` when given, else the card's ``recipe.layers``, else all;
- resume: one result unit per (probe, language, layer); stored units are skipped (``pending``), so a sweep that
  stopped half-way re-encodes only for the missing layers;
- one record builder (``make_record``) so every probe records model, data, card, config and provenance alike;
- options from the card's recipe overridden by the command line (``probe_options``);
- pooled sentence vectors through the run's encoding cache (``sentence_vectors``, ``xeval.models.encoding_cache``), keyed by the
  model's content hash and tokenizer, layer, pooling, special-token choice, max length and the texts' hash;
- an input prefix (option ``prefix``, ``resolve_prefix``): e5's ``query: ``, as MTEB gives models their prompts. By
  default the model folder's own (``config_sentence_transformers.json``'s prompts, ``SentencePipeline.probe_prompt``),
  ``--set prefix=TEXT`` over it, ``--set prefix=`` for none. The sentence probes put it before every sentence, word
  alignment before every sentence's words (its subwords left out of the links); a prefix is recorded in the
  config (``prefix_config``), so it is in the unit's hash, and the prefixed texts key the encoding cache. Fine-tuning
  (and ``--mode probe``) reads no prefix.

Probes are deterministic (no training, no sampling): their units carry seed 0.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xeval.adapters.limits import limit_config, limited
from xeval.base.atomic import write_text
from xeval.base.errors import ConfigError, DataError, UserError
from xeval.base.hashing import hash_json
from xeval.cards.compat import mode_of
from xeval.data import sources
from xeval.models.encoding_cache import EncodingCache
from xeval.results.identity import config_hash
from xeval.results.layers import SELECTION_SPLIT, choose_layers
from xeval.results.store import Record, Unit, slug, stamp
from xeval.submission.writer import (
    MANIFEST,
    provenance_entry,
    read_manifest,
    record_exports,
    renamed_for_split,
    write_sidecar,
)

PROBE_SEED = 0

# Options a probe card's recipe (or the run, ``ctx.tasks.probe``) may set, with their defaults.
DEFAULTS = {
    "pooling": "mean",  # Tatoeba/BUCC: mean (XTREME) or cls
    "include_special": True,  # mean over all tokens incl. <s>/</s> as XTREME does, or word tokens only
    "batch_size": 32,
    "max_length": None,  # None: the encoder's limit
    "cache_dir": None,  # encoding cache folder (None: the run's cache, see xeval.models.encoding_cache)
    "prefix": None,  # text before each input; None: the model folder's own prompt (resolve_prefix), "": none
}


def probe_layers(card, ctx) -> list[int]:
    """Hidden-state indices to probe (0 = embeddings, k = transformer layer k; negatives count from the top).

    ``ctx.layers`` when given ("all" or a list); else the card's default for this model depth (``recipe.layers``,
    ``recipe.layer_for_depth[num_layers]`` or ``recipe.layer``, read as hidden_states indices); else every layer
    (also when the card's default does not exist in this model, e.g. layer 7 of a 4-layer model).
    """
    if not getattr(ctx.encoder, "layered", True):  # the char n-gram baseline has no hidden states
        return [None]
    n = ctx.encoder.num_layers
    spec = ctx.layers
    if spec is None:
        spec = _card_default(card.recipe or {}, n)
    if spec == "all" or spec == ["all"]:
        return list(range(n + 1))
    layers = [spec] if isinstance(spec, int) else list(spec)
    out = []
    for layer in layers:
        if isinstance(layer, bool) or not isinstance(layer, int) or not -(n + 1) <= layer <= n:
            raise UserError(f"layer {layer!r} out of range: {ctx.encoder.spec} has hidden states 0..{n}")
        layer = layer % (n + 1)
        if layer not in out:
            out.append(layer)
    return out


def default_layer(card, ctx) -> int | None:
    """The card's fixed layer for this model's depth (``layer_for_depth`` / ``layer``), None when it names none (or
    the encoder has no layers)."""
    if not getattr(ctx.encoder, "layered", True):
        return None
    spec = _card_default({k: v for k, v in (card.recipe or {}).items() if k != "layers"}, ctx.encoder.num_layers)
    return spec[0] if isinstance(spec, list) else None


def _card_default(recipe: dict, n: int):
    if "layers" in recipe:
        return recipe["layers"]
    by_depth = {int(k): v for k, v in (recipe.get("layer_for_depth") or {}).items()}
    layer = by_depth.get(n, recipe.get("layer"))
    if isinstance(layer, int) and 0 <= layer <= n:
        return [layer]
    return "all"


def max_length(options: dict, encoder) -> int:
    """The option's max length, never above what the model can take (nor, pooling as a sentence-transformers
    folder says, above its ``max_seq_length``)."""
    limit = options.get("max_length")
    cap = encoder.max_length
    pipeline = getattr(encoder, "sentence_pipeline", None)
    if options.get("pooling") == "model" and pipeline is not None and pipeline.max_seq_length:
        cap = min(cap, int(pipeline.max_seq_length))
    return cap if not limit else min(int(limit), cap)


def probe_options(card, ctx, extra: dict | None = None) -> dict:
    """The card's recipe over the defaults (``DEFAULTS`` and the probe's ``extra``), overridden by the run's typed
    probe options (``ctx.tasks.probe``: ``--set key=value``, ``--batch-size``, ``--eval-batch-size``, ``--max-length``),
    with the run's encoding cache under ``"cache"``."""
    defaults = {**DEFAULTS, **(extra or {})}
    pipeline = getattr(getattr(ctx, "encoder", None), "sentence_pipeline", None)
    out = resolve_options(card.recipe or {}, ctx.tasks.probe, defaults, where=card.name, sentence_pipeline=pipeline)
    out["cache"] = getattr(ctx, "cache", None)  # the run's encoding cache (None outside a run)
    out["prefix"] = resolve_prefix(out.get("prefix"), pipeline)
    return out


def sentence_config(options: dict, encoder) -> dict:
    """The config entries of how a sentence probe makes its vectors: pooling, special tokens, max length and prefix
    for a model; for the char n-gram baseline (``xeval.models.charngram``) its vectorizer and what it is fitted on."""
    if not getattr(encoder, "layered", True):
        return encoder.probe_config()
    return {"pooling": options["pooling"], "include_special": bool(options["include_special"]),
            "max_length": max_length(options, encoder), **prefix_config(options)}


def resolve_prefix(given: str | None, sentence_pipeline=None) -> str:
    """The text put before each probe input: ``given`` (``--set prefix=...``, a card's ``prefix``), else the
    sentence-transformers folder's prompt (``SentencePipeline.probe_prompt``), else none. A prefix that does not end
    in whitespace gets one space (``--set`` values are stripped, so ``prefix=query:`` means ``query: ``)."""
    text = given if given is not None else (sentence_pipeline.probe_prompt() if sentence_pipeline is not None else "")
    text = str(text or "")
    return text if not text or text[-1].isspace() else text + " "


def prefix_config(options: dict) -> dict:
    """The config entry of a probe's prefix (none: no entry, so the units of prefix-less runs keep their hash)."""
    return {"prefix": options["prefix"]} if options.get("prefix") else {}


def with_prefix(texts: list[str], options: dict) -> list[str]:
    prefix = options.get("prefix") or ""
    return [prefix + t for t in texts] if prefix else list(texts)


def resolve_options(card_recipe: dict, given: dict, defaults: dict, where: str, sentence_pipeline=None) -> dict:
    """The options a probe runs with: each default, else the card's value, else the run's ``given`` value, each of
    its default's type; a sentence-transformers folder (``sentence_pipeline``) pools as its modules say unless the
    run names a pooling. A value no probe accepts is a ConfigError naming ``where``."""
    out = {k: card_recipe.get(k, v) for k, v in defaults.items()}
    out.update({k: v for k, v in given.items() if k in defaults and v is not None})
    for key, default in defaults.items():
        out[key] = as_option_type(key, out[key], default, where)
    if sentence_pipeline is not None and "pooling" not in given:
        out["pooling"] = "model"
    if out["pooling"] not in {"mean", "cls", "model"}:
        raise ConfigError(f"{where}: pooling must be 'mean', 'cls' or 'model' (a sentence-transformers "
                          f"folder's own), found {out['pooling']!r}")
    return out


def as_option_type(key: str, value, default, task: str):
    """Command-line strings to the type of the option's default (None defaults: max_length int, else str)."""
    kind = int if key == "max_length" else type(default)
    if not isinstance(value, str) or kind in (str, type(None)):
        return value
    try:
        if kind is bool:
            if value.lower() not in {"1", "true", "yes", "0", "false", "no"}:
                raise ValueError(value)
            return value.lower() in {"1", "true", "yes"}
        if kind is list:
            return [x.strip() for x in value.split(",") if x.strip()]
        return kind(value)
    except ValueError:
        raise ConfigError(f"{task}: option {key}={value!r}: expected a {kind.__name__}") from None


def pending(card, lang: str, split: str, ctx, layers: list[int], config_hash: str | None = None
            ) -> tuple[list[Record], list[int]]:
    """Records already stored for this language (in layer order) and the layers still to compute."""
    found, todo = [], []
    for layer in layers:
        unit = unit_for(card, lang, split, ctx, layer, config_hash)
        if ctx.store.has(unit):
            found.append(ctx.store.get(unit))
        else:
            todo.append(layer)
    return found, todo


def unit_for(card, lang: str, split: str, ctx, layer: int, config_hash: str | None = None) -> Unit:
    return Unit(model=ctx.encoder.key, task=card.name, lang=lang, split=split, seed=PROBE_SEED, layer=layer,
                config_hash=config_hash)


def unit_hash(card, lang: str, split: str, ctx, config: dict) -> str:
    """The config hash of this probe's units for one language (``xeval.results.identity``)."""
    return config_hash(card, ctx, config, [data_identity(card, lang, split, ctx)])


def card_identity(card) -> dict:
    ident = getattr(card, "identity", None)
    return ident() if callable(ident) else {"name": card.name}


def data_identity(card, lang: str, split: str, ctx) -> dict:
    """The ``data`` block of a record (``xeval.data.sources.data_identity``)."""
    return sources.data_identity(card, lang, split, ctx.data)


def make_record(card, lang: str, split: str, ctx, layer: int, metrics: dict, n_examples: int, config: dict,
                duration_s: float, extra: dict | None = None, outcomes=None,
                config_hash: str | None = None, data: dict | None = None) -> Record:
    record = Record(
        unit=unit_for(card, lang, split, ctx, layer, config_hash),
        metrics={k: float(v) for k, v in metrics.items()},
        n_examples=int(n_examples),
        model=ctx.encoder.identity(),
        data=data if data is not None else data_identity(card, lang, split, ctx),
        card=card_identity(card),
        # a record without a layer (the char n-gram baseline) has no hidden states to name
        config={**({} if layer is None else {"layer_convention": "hidden_states[k]: 0 = embeddings, k = transformer "
                                                                 "layer k"}), **config},
        provenance=stamp(duration_s),
        extra=extra or {},
    )
    ctx.store.put(record, outcomes)
    return record


@dataclass
class LayerResult:
    """What a probe computed for one layer of one language."""

    layer: int
    metrics: dict[str, float]
    n_examples: int
    files: dict[str, str] = field(default_factory=dict)  # prediction files: name -> text, under <export>/<task>/
    gold_files: dict[str, str] = field(default_factory=dict)  # the same layout's gold, for --export-labels
    extra: dict = field(default_factory=dict)
    outcomes: object = None  # per-example outcomes (xeval.results.outcomes.Outcomes), stored beside the record


# XTREME's submission folder of a probe whose card has another name
SUBMISSION_FOLDER = {"bucc": "bucc2018"}


def selection_split(card, ctx, lang: str, layers: list[int], always: bool = False) -> str | None:
    """``dev`` when it is a selection split for ``lang`` here: several layers are probed (or ``always``: BUCC's
    threshold), the card has a dev source in this layout, the language is not itself reported on dev, and its dev
    file is there (FLORES-200 dev covers 18 of Tatoeba's languages)."""
    if (len(layers) < 2 and not always) or card.split_for(lang) == SELECTION_SPLIT or ctx.data.layout == "hub":
        return None
    if SELECTION_SPLIT not in (card.files.get(ctx.data.layout) or {}):
        return None
    try:
        sources.resolve(card, lang, SELECTION_SPLIT, ctx.data)
    except DataError:
        return None
    return SELECTION_SPLIT


def sweep(card, langs, ctx, config: dict, evaluate: Callable[[str, list, list[int]], Iterable[LayerResult]],
          always_select: bool = False) -> list:
    """The probes' ``run``: for each language, skip stored layers, load the examples once, let ``evaluate`` compute
    every missing layer from one encoding, store one record per layer and write its prediction files.

    With several layers, the selection split (``selection_split``) runs first for each language: its records choose
    the reported layer (``xeval.results.layers.choose_layers``), its predictions are not exported.

    Prediction files go to ``<export>/<task>/`` when one layer is probed, else to ``<export>/layer-<k>/<task>/``
    (each folder a complete submission layout of its own) and the chosen layer's also to ``<export>/<task>/``,
    with the ``.jsonl`` sidecar of ``xeval.submission.writer``; gold files (``--export-labels``) to ``<labels>/<task>/``. Both
    are kept in the store beside the record too, so a resumed run exports its stored units as well as the new ones
    (as fine-tuning does).
    """
    layers = probe_layers(card, ctx)
    if config.get("pooling") == "model":  # what "model" pooling is for this folder (recorded, and in the hash)
        config = {**config, "sentence_pooling": ctx.encoder.sentence_pipeline.describe()}
    config = {**config, "default_layer": default_layer(card, ctx), "compat": mode_of(ctx)}
    folder = slug(SUBMISSION_FOLDER.get(card.name, card.name))
    limit = ctx.tasks.max_eval
    used = {**config, "max_eval": limit} if limit and card.format != "bucc" else config
    used = {**used, **limit_config(ctx)} if card.format != "bucc" else used
    records = []
    for lang in langs:
        select = selection_split(card, ctx, lang, layers, always_select)
        for split in ([select] if select else []) + [card.split_for(lang)]:
            chash = unit_hash(card, lang, split, ctx, config)
            found, todo = pending(card, lang, split, ctx, layers, chash)
            records.extend(found)
            if split != select:  # the selection split's predictions are not exported
                for rec in found:
                    _export(ctx, rec.unit, len(layers), folder)
            if not todo:
                continue
            start = time.perf_counter()
            examples = load_examples(card, lang, split, ctx)
            if card.format != "bucc":  # the first N (--max-eval) or a fraction (--limit); BUCC stays whole
                examples = limited(examples, limit, ctx.tasks.limit)
            results = list(evaluate(lang, examples, todo))
            each = (time.perf_counter() - start) / len(todo)  # one shared forward pass: its cost split evenly
            for res in results:
                record = make_record(card, lang, split, ctx, res.layer, res.metrics, res.n_examples, used, each,
                                     res.extra, res.outcomes, config_hash=chash)
                _keep_files(ctx, record.unit, res)
                if split != select:
                    _export(ctx, record.unit, len(layers), folder)
                records.append(record)
    if ctx.export_dir is not None and len(layers) > 1:
        export_chosen_layer(records, Path(ctx.export_dir), folder)
    return records


def export_chosen_layer(records: list, export: Path, folder: str) -> None:
    """Copy the chosen layer's submission files (``layer-<k>/<task>/``) to ``<export>/<task>/``."""
    if not records:
        return
    layer = choose_layers(records)[(records[0].unit.model, records[0].unit.task)][0].layer
    source = export / f"layer-{layer}" / folder
    if source.is_dir():
        for path in sorted(source.iterdir()):
            if path.name != MANIFEST:  # merged below, never copied over the task folder's own
                write_text(export / folder / path.name, path.read_text(encoding="utf-8"))
        record_exports(export / folder, read_manifest(source) or {})


def _kept(ctx, unit) -> Path:
    """Where a unit's prediction (and gold) files are kept in the store: beside its record."""
    return ctx.store.path(unit).parent / "predictions" / Path(ctx.store.path(unit).name).stem


def _keep_files(ctx, unit, res: LayerResult) -> None:
    for folder, files in ((_kept(ctx, unit), res.files), (_kept(ctx, unit) / "gold", res.gold_files)):
        for name, text in files.items():
            write_text(folder / slug(name), text)


def _export(ctx, unit, n_layers: int, folder: str) -> None:
    """Copy a unit's kept files into ``--export-predictions`` (with the sidecar) and ``--export-labels``, named
    after the split they hold (``xeval.submission.writer``)."""
    labels = ctx.export_labels
    if ctx.export_dir is None and not labels:
        return
    kept = _kept(ctx, unit)
    if ctx.export_dir is not None and kept.is_dir():
        root = Path(ctx.export_dir) if n_layers == 1 else Path(ctx.export_dir) / f"layer-{unit.layer}"
        files = sorted(p for p in kept.iterdir() if p.is_file())
        for i, path in enumerate(files):
            target = root / folder / renamed_for_split(path.name, unit.split)  # never outside the export folder
            write_text(target, path.read_text(encoding="utf-8"))
            if i == 0:
                write_sidecar(target, ctx.store.outcomes_of(unit))
        record_exports(root / folder, {renamed_for_split(p.name, unit.split): provenance_entry(ctx, unit) for p in files})
    if labels and (kept / "gold").is_dir():
        for path in sorted(p for p in (kept / "gold").iterdir() if p.is_file()):
            write_text(Path(labels) / folder / renamed_for_split(path.name, unit.split),
                       path.read_text(encoding="utf-8"))


def load_examples(card, lang: str, split: str, ctx) -> list:
    """The card's examples for one language, through the data layer (``xeval.data.sources``)."""
    return sources.load_examples(card, lang, split, ctx.data)


# ------------------------------------------------------------------ sentence vectors (through the encoding cache)


def encoding_cache(options: dict):
    """The cache to encode through: ``cache_dir`` when given, else the run's (``options["cache"]``), else
    ``$XEVAL_CACHE``, else none."""
    if options.get("cache_dir"):
        return EncodingCache(options["cache_dir"])
    if options.get("cache") is not None:
        return options["cache"]
    return EncodingCache(os.environ.get("XEVAL_CACHE"))


def side_vectors(encoder, sides: list[list[str]], layers: list, options: dict) -> list[list]:
    """Per layer, one vector matrix per side (a probe's query and candidate sentences): a model encodes all sides in
    one pass (``sentence_vectors``: dense [N, H] float32, not normalised); the char n-gram baseline (``layers`` is
    [None]) gives sparse TF-IDF rows, each side's IDF fitted on that side alone (``CharNgramModel.side_vectors``)."""
    if not getattr(encoder, "layered", True):
        return [encoder.side_vectors(sides)]
    vectors = sentence_vectors(encoder, [t for side in sides for t in side], layers, options)  # [L, sum N, H]
    bounds = np.cumsum([0] + [len(side) for side in sides])
    return [[vectors[row, a:b] for a, b in zip(bounds[:-1], bounds[1:])] for row in range(len(layers))]


def sentence_vectors(encoder, texts: list[str], layers: list[int], options: dict) -> np.ndarray:
    """float32 [len(layers), len(texts), H] pooled vectors from one forward pass per batch, via the cache if any.

    Not normalised: callers L2-normalise (retrieval) as they need. ``options["prefix"]`` goes before every text (the
    prefixed texts are what the cache key hashes).
    """
    texts = with_prefix(texts, options)
    limit = max_length(options, encoder)  # a card's 512 on a small model is the model's limit
    kwargs = {"pooling": options["pooling"], "include_special": bool(options["include_special"]),
              "batch_size": int(options["batch_size"]), "max_length": limit}
    settings = getattr(encoder, "settings", None)  # e.g. a sentence-transformers folder's own pooling
    spec = {"kind": "sentence", **kwargs, "batch_size": None, "texts": hash_json(texts),
            "encoder": settings() if callable(settings) else {}}
    out = encoding_cache(options).layers(
        encoder.cache_key, spec, layers, lambda todo: encoder.sentence_embeddings(texts, layers=todo, **kwargs))
    return out.reshape(len(layers), len(texts), encoder.hidden_size)
