"""In-domain retrieval on the engine's own held-out pairs: the signal that works at tiny scale.

The engine sets aside a fixed ~1 % of every corpus's cleaned lines (by a hash of the text, ``xeval.engine.corpus.
is_heldout``) and never trains on them. For a model xeval trained (its folder has the engine's
``xeval_pretrain.json``, as every engine checkpoint and every step of a series has), this probe reads those pairs
again with the run's own data settings (corpora, cleaning, languages) and scores them as Tatoeba: mean-pooled
layer, cosine nearest neighbour, top-1 accuracy both directions, every layer from one forward pass, plus xsim. A
random-init control of such a model (``--control random-init``) reads the same pairs. Any other model has no
held-out corpus: one line, exit 2.

There is no dev split: the held-out lines are one set; the table reports every layer (or the card's rule).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from xeval.adapters.probes import base as probes
from xeval.adapters.probes.retrieval import tatoeba_layers
from xeval.base.errors import UserError
from xeval.results.identity import config_hash


def engine_config(encoder) -> dict:
    """The resolved pre-training config of an engine-trained model (``xeval_pretrain.json``)."""
    folder = Path(str(encoder.spec))
    card = folder / "xeval_pretrain.json"
    if not card.is_file():
        raise UserError(f"heldout: {folder} was not trained by xeval's engine (no xeval_pretrain.json): the probe "
                        f"reads the held-out lines of the run's own corpora")
    try:
        config = json.loads(card.read_text(encoding="utf-8"))["config"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise UserError(f"{card}: expected the engine's JSON with a 'config' object") from None
    return config


_PAIRS: dict[str, dict[str, list[tuple[str, str]]]] = {}  # one process's reads: a model and its control (or a
# checkpoint series) share their data settings, and finding the held-out 1 % cleans every line of the pool


def heldout_pairs(config: dict, max_pairs: int) -> dict[str, list[tuple[str, str]]]:
    """{language: [(English, xx)]} of the run's held-out pairs (en-xx keys), at most ``max_pairs`` each (read once
    per process for each data setting)."""
    key = json.dumps([{k: config["data"].get(k) for k in sorted(config["data"])}, config["train"].get("seed"),
                      max_pairs], sort_keys=True, default=str)
    if key not in _PAIRS:
        _PAIRS[key] = _read_heldout_pairs(config, max_pairs)
    return _PAIRS[key]


def _read_heldout_pairs(config: dict, max_pairs: int) -> dict[str, list[tuple[str, str]]]:
    # imported here: the engine's data and training modules pull torch, which the probes do not need to load
    from xeval.engine.cleaning import CleanConfig
    from xeval.engine.config import PretrainConfig
    from xeval.engine.corpus import data_root, load_corpora

    cfg = PretrainConfig.from_dict(config, "xeval_pretrain.json")
    dc = cfg.data
    # pairs only: the monolingual corpora's held-out lines are never scored here, and cleaning them all costs minutes
    held = load_corpora(data_root(dc), dc.parallel, (), dc.languages, CleanConfig(**dc.clean),
                        max_lines=max_pairs, split="heldout", seed=cfg.train.seed, layout=dc.layout)
    out = {}
    for key, rows in held.pairs.items():
        a, b = key.split("-")
        if a == "en":
            out[b] = rows
        elif b == "en":
            out[a] = [(y, x) for x, y in rows]
    return out


def run(card, langs, ctx) -> list:
    options = probes.probe_options(card, ctx)
    config = engine_config(ctx.encoder)
    limit = int(ctx.tasks.max_eval or (card.recipe or {}).get("max_pairs", 500))
    pairs = heldout_pairs(config, limit)
    layers = probes.probe_layers(card, ctx)
    probe_config = {
        "probe": "heldout", **probes.sentence_config(options, ctx.encoder), "max_pairs": limit,
        "similarity": "cosine: inner product of L2-normalised float32 vectors",
        "xsim": "xsim_* = error rate (%) of LASER's ratio-margin nearest neighbour, k=4",
        "official_direction": "en->xx (English queries, xx indexed)",
    }
    data = {k: config["data"].get(k) for k in ("root", "layout", "parallel", "monolingual", "languages", "clean")}
    records = []
    for lang in langs:
        rows = pairs.get(lang)
        if not rows:
            continue  # the run had no pairs of this language
        block = {"source": "engine held-out pairs (1 % by text hash, never trained on)", "lang": lang,
                 "n": len(rows), "corpora": data, "seed": config["train"].get("seed")}
        chash = config_hash(card, ctx, probe_config, [block])
        found, todo = probes.pending(card, lang, "heldout", ctx, layers, chash)
        records.extend(found)
        if not todo:
            continue
        start = time.perf_counter()
        en, xx = [r[0] for r in rows], [r[1] for r in rows]
        got = list(tatoeba_layers(ctx.encoder, xx, en, todo, {**options, "center": False, "xsim": True}))
        each = (time.perf_counter() - start) / len(todo)
        for res in got:
            records.append(probes.make_record(card, lang, "heldout", ctx, res.layer, res.metrics, len(rows),
                                              probe_config, each, outcomes=res.outcomes, config_hash=chash,
                                              data=block))
    return records
