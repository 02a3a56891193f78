"""``xeval run --mode probe``: a fine-tuning task with the encoder frozen and only a small head trained.

For every layer at once (``--layers``, default all: one forward pass yields every ``hidden_states[k]``):

- tagging (UD-POS, PAN-X): the hidden state of each word's first subword (XTREME's labelling scheme, the same
  word windows as fine-tuning, so no word is truncated), a linear softmax head (``LogisticRegression``);
- pair classification (XNLI, PAWS-X): the pooled pair representation (``probe_pooling``: mean over all tokens of
  ``[CLS] a [SEP] b [SEP]``, special tokens included, or the first token), a ``LogisticRegression`` head;
- QA (XQuAD, MLQA, TyDiQA): every token of every window, a linear start/end head (torch), decoded exactly as the
  fine-tuned model is (``xeval.adapters.transfer.spans.best_span``).

The training set is the fine-tuning one (same card, same subsample). Regularisation (C) is chosen per layer on a
selection set, and the reported layer is chosen on it too (``xeval.results.layers.chosen_layers``): the English dev
set, unless that set is trained on (PAWS-X in the shared data) or reported (XNLI's English dev in xtreme-mini), in
which case every fifth example of the English training subset is held out for selection and the head trains on the
rest.

Features are read out by ``xeval.adapters.transfer.readouts`` through the run's encoding cache
(``xeval.models.encoding_cache``): train, selection and evaluation features of tagging and pair classification,
and the QA training features, are stored per layer (float16 for word and token
vectors, float32 for pooled pairs), so a rerun with another head or layer rule does not encode again. QA evaluation
features (every token of every window of every language: gigabytes) are not stored: each language is encoded once
and every layer's head is applied in that pass.

``--export-predictions DIR`` writes XTREME's submission layout per layer (``DIR/layer-<k>/<task>/test-<lang>.*``;
``DIR/<task>/`` when one layer is probed), as the alignment probes do.

Records: one per (language, layer), unit ``mode="probe"`` and seed 0 (nothing is random), never averaged with
fine-tuning numbers; ``config`` holds the head, its chosen C and every C's selection score, the readout and the
selection set; ``extra.probe_selection`` the selection score that picks the layer; ``extra.trained_for`` the task
whose QA heads were reused (MLQA answers with the heads XQuAD fitted on the same windows, as fine-tuning shares one
model: ``xeval.adapters.transfer.shared_training``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from xeval.adapters.limits import limit_config, limited
from xeval.adapters.transfer import probe_heads, shared_training
from xeval.adapters.transfer.backbone import accepts_token_types
from xeval.adapters.transfer.base import data_identity, load, prediction_path, training_examples
from xeval.adapters.transfer.fine_tuning import collate
from xeval.adapters.transfer.probe_heads import (
    ClassifierHead,
    SpanHead,
    fit_classifier,
    fit_each,
    fit_span_head,
)
from xeval.adapters.transfer.readouts import READOUTS, Readout, cached_rows, encoding_autocast
from xeval.adapters.transfer.recipe import Recipe
from xeval.adapters.transfer.spans import best_span
from xeval.base.atomic import write_text
from xeval.base.console import log
from xeval.base.errors import ConfigError
from xeval.cards.types import task_type
from xeval.results.identity import config_hash
from xeval.results.store import PROBE_MODE, Record, Unit, stamp

MODE = PROBE_MODE
PROBE_SEED = 0
HOLD_OUT_EVERY = 5  # held-out selection: every fifth training example
MAX_SELECTION = 1000  # selection examples when the recipe sets no max_dev (PAN-X English dev has 10,000)
# the recipe fields a probe's numbers depend on; the fine-tuning ones (learning rate, epochs, batch size, warm-up)
# do not, so a changed fine-tuning recipe neither re-runs nor relabels probe units
PROBE_RECIPE_FIELDS = ("max_train", "max_dev", "max_eval", "max_length", "probe_pooling", "eval_batch_size",
                       "doc_stride", "max_query_length", "max_answer_length", "n_best_size")


def _unit(card, lang: str, layer: int, ctx, config_hash: str | None) -> Unit:
    return Unit(model=ctx.encoder.key, task=card.name, lang=lang, split=card.split_for(lang), seed=PROBE_SEED,
                layer=layer, setting="zero-shot", config_hash=config_hash, mode=MODE)


def _unit_hash(card, lang: str, recipe: Recipe, family, ctx, held_out: str | None) -> str:
    """The config hash (``xeval.results.identity``) of one language's probe units: the recipe, the heads' settings, the
    selection rule and the evaluation, training and selection data."""
    lang_t, split_t = card.train["lang"], card.train["split"]
    data = [data_identity(card, lang, card.split_for(lang), ctx),
            data_identity(card, lang_t, split_t, ctx)]
    if held_out is None:
        data.append(data_identity(card, lang_t, "dev", ctx))
    config = {"mode": MODE, "recipe": probe_recipe(recipe), "selection": held_out or "dev", "heads": head_settings(),
              **family.config()}
    return config_hash(card, ctx, config, data)


def head_settings() -> dict:
    # "threads": each fit on one thread (probe_heads.fit_each): an unconverged fit's numbers used to depend on the
    # machine's core count (BLAS), so units from before have another identity
    return {"C_grid": list(probe_heads.C_GRID), "max_iter": probe_heads.MAX_ITER, "tol": probe_heads.TOL,
            "span_iterations": probe_heads.SPAN_ITERATIONS, "hold_out_every": HOLD_OUT_EVERY,
            "max_selection": MAX_SELECTION, "threads": "one per fit"}


def probe_recipe(recipe: Recipe) -> dict:
    """The probe-relevant part of ``recipe`` (``PROBE_RECIPE_FIELDS``): what a probe unit is keyed on and records;
    ``precision`` (the frozen encoder's forward pass under bf16 autocast) only where not float32, so float32 units
    keep the identity they had before the option existed."""
    out = {k: getattr(recipe, k) for k in PROBE_RECIPE_FIELDS}
    if recipe.precision != "fp32":
        out["precision"] = recipe.precision
    return out


def probe_layers(ctx) -> list[int]:
    return list(ctx.layers) if ctx.layers is not None else list(range(ctx.encoder.num_layers + 1))


# ------------------------------------------------------------------------------------------------- the loop


class CpuTally:
    """CPU seconds (``time.process_time``: every thread of the process) and wall seconds per phase of one task's
    probe run, logged at its end: CPU seconds say where the work goes, their ratio to the wall clock whether both
    cores worked."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)

    @contextmanager
    def phase(self, name: str):
        start, wall = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.process_time() - start
            self.wall[name] += time.perf_counter() - wall

    def describe(self) -> str:
        parts = [f"{name} {s:.1f}" + (f" in {self.wall[name]:.1f}" if name in self.wall else "")
                 for name, s in self.seconds.items()]
        return f"{sum(self.seconds.values()):.1f} CPU s ({', '.join(parts)}; CPU s in wall s)"


@dataclass
class Fitted:
    layer: int
    head: ClassifierHead | SpanHead
    selection_score: float


def run(card, langs: list[str], ctx, family_cls, recipe: Recipe) -> list[Record]:
    """Zero-shot only (``xeval.adapters.transfer.dispatch`` checked the setting and built ``recipe``)."""
    layers = probe_layers(ctx)
    family = family_cls(card, ctx, recipe)
    held_out = held_out_reason(card, ctx)
    hashes = {lang: _unit_hash(card, lang, recipe, family, ctx, held_out) for lang in langs}
    units = {(lang, layer): _unit(card, lang, layer, ctx, hashes[lang]) for lang in langs for layer in layers}
    found = {key: ctx.store.get(u) for key, u in units.items() if ctx.store.has(u)}
    todo = [lang for lang in langs if any((lang, layer) not in found for layer in layers)]
    records = [r for r in found.values() if r is not None]
    if not todo:
        return records
    tally = CpuTally()
    task_cpu = time.process_time()
    with tally.phase("data"):
        train = training_examples(card, "zero-shot", (card.train["lang"], card.train["split"]), recipe, ctx)
        family.setup(train)
        fit_examples, selection, selection_info = selection_split(card, recipe, train, ctx, held_out)
    start = time.perf_counter()
    readout = task_type(card.type).probe_readout
    if readout == "span":
        # what the heads and their selection answers depend on beside the family, the windows and the selection
        # set: not the evaluation's size (MLQA and XQuAD evaluate different numbers of questions)
        settings = {"recipe": {k: v for k, v in probe_recipe(recipe).items() if k != "max_eval"},
                    "heads": head_settings()}
        probe = _SpanProbe(family, ctx, tally, settings)
    else:
        probe = _ClassifierProbe(READOUTS[readout](family), ctx, tally)
    fitted = probe.fit(fit_examples, selection, layers)
    fit_s = time.perf_counter() - start
    for lang in todo:
        missing = [layer for layer in layers if (lang, layer) not in found]
        t0 = time.perf_counter()
        with tally.phase("data"):
            examples = limited(load(card, lang, card.split_for(lang), ctx), recipe.max_eval, ctx.tasks.limit)
        if not examples:
            raise ConfigError(f"task {card.name!r}: no {card.split_for(lang)} examples for {lang!r}")
        predictions = probe.predict(examples, {layer: fitted[layer] for layer in missing})
        each = (time.perf_counter() - t0 + fit_s / len(todo)) / len(missing)
        labelled = family.labelled(examples)
        scoring = time.process_time()
        for layer in missing:
            unit = units[(lang, layer)]
            metrics = {k: round(float(v), 6) for k, v in family.score(predictions[layer], examples, lang).items()} \
                if labelled else {}
            record = Record(
                unit=unit, metrics=metrics, n_examples=len(examples), model=ctx.encoder.identity(),
                data=data_identity(card, lang, unit.split, ctx), card=card.identity(),
                config={
                    "mode": MODE,
                    "layer_convention": "hidden_states[k]: 0 = embeddings, k = transformer layer k",
                    "recipe": probe_recipe(recipe),
                    "readout": probe.readout_name,
                    "head": fitted[layer].head.describe(),
                    "train": {"lang": card.train["lang"], "split": card.train["split"],
                              "n_examples": len(fit_examples), "subsample_of": len(train),
                              "data": data_identity(card, card.train["lang"], card.train["split"], ctx)},
                    "selection": selection_info,
                    **family.config(),
                    **limit_config(ctx),
                },
                provenance=stamp(each),
                extra={"probe_selection": {"on": selection_info["on"], "metric": card.metric,
                                           "score": round(fitted[layer].selection_score, 4)},
                       **({"trained_for": probe.trained_for} if getattr(probe, "trained_for", None) else {}),
                       **({} if labelled else {"unscored": "the evaluation data has no gold labels"})},
            )
            text = family.format_predictions(predictions[layer], examples)
            write_text(prediction_path(ctx, unit, family.suffix), text)
            if ctx.export_dir is not None:  # as the probes do: <dir>/<task>/ for one layer, else <dir>/layer-<k>/<task>/
                root = Path(ctx.export_dir) if len(layers) == 1 else Path(ctx.export_dir) / f"layer-{layer}"
                write_text(root / card.name / f"test-{lang}.{family.suffix}", text)
            ctx.store.put(record, family.outcomes(predictions[layer], examples, lang) if labelled else None)
            records.append(record)
        tally.seconds["score+store"] += time.process_time() - scoring
    tally.seconds["other"] = time.process_time() - task_cpu - sum(tally.seconds.values())
    log.info(f"{card.name} probe: {tally.describe()}")
    return records


def held_out_reason(card, ctx) -> str | None:
    """None when the English dev set selects (it exists, is not trained on and is not one of the card's reported
    units); else why part of the training data is held out instead."""
    lang = card.train["lang"]
    if lang in card.languages and card.split_for(lang) == "dev":
        return f"{lang}/dev is a reported set"
    try:
        dev = {f.get("sha256") or f.get("path") for f in data_identity(card, lang, "dev", ctx)["files"]}
    except ConfigError:
        return f"the task has no {lang}/dev split"
    train = {f.get("sha256") or f.get("path")
             for f in data_identity(card, lang, card.train["split"], ctx)["files"]}
    return f"{lang}/dev is the training data" if dev & train else None


def selection_split(card, recipe: Recipe, train: list, ctx, reason: str | None) -> tuple[list, list, dict]:
    """(examples the head trains on, selection examples, what the records say about the selection): the English
    dev set (``reason`` None), else every ``HOLD_OUT_EVERY``-th example of the training subset (the head trains on
    the others)."""
    lang = card.train["lang"]
    limit = recipe.max_dev or MAX_SELECTION
    if reason is None:
        dev = load(card, lang, "dev", ctx)[:limit]
        if dev:
            return train, dev, {"on": f"{lang}/dev", "n_examples": len(dev), "metric": card.metric}
        reason = f"{lang}/dev is empty"
    held_idx = set(list(range(HOLD_OUT_EVERY - 1, len(train), HOLD_OUT_EVERY))[:limit])
    held = [ex for i, ex in enumerate(train) if i in held_idx]
    kept = [ex for i, ex in enumerate(train) if i not in held_idx]
    return kept, held, {"on": f"{lang}/{card.train['split']} held out", "n_examples": len(held),
                        "rule": f"every {HOLD_OUT_EVERY}th example of the training subset ({reason})",
                        "metric": card.metric}


class _ClassifierProbe:
    def __init__(self, readout: Readout, ctx, tally: CpuTally):
        self.readout, self.ctx, self.tally = readout, ctx, tally
        self.family = readout.family
        self.readout_name = readout.name

    def fit(self, train: list, selection: list, layers: list[int]) -> dict[int, Fitted]:
        with self.tally.phase("encode"):
            x, keys = self.readout.rows(train, layers, self.ctx)
            sx, skeys = self.readout.rows(selection, layers, self.ctx)
        y = self.readout.labels(train, keys)
        metric = self.family.card.metric
        lang = self.family.card.train["lang"]

        def fit(row: int) -> ClassifierHead:
            def score(head):
                preds = self.readout.predictions(selection, skeys, head.predict(sx[row]))
                return self.family.score(preds, selection, lang)[metric]

            return fit_classifier(x[row], y, score)

        with self.tally.phase("heads"):  # the fits and their selection-set scores
            heads = fit_each(fit, len(layers))
        return {layer: Fitted(layer, head, head.scores[head.C]) for layer, head in zip(layers, heads)}

    def predict(self, examples: list, fitted: dict[int, Fitted]) -> dict[int, list]:
        layers = sorted(fitted)
        with self.tally.phase("encode"):
            x, keys = self.readout.rows(examples, layers, self.ctx)
        with self.tally.phase("predict"):
            return {layer: self.readout.predictions(examples, keys, fitted[layer].head.predict(x[row]))
                    for row, layer in enumerate(layers)}


class _SpanProbe:
    """QA: a linear start/end head per layer over the token features of every window."""

    readout_name = "every token of every window (question + context, as fine-tuning sees them)"

    def __init__(self, family, ctx, tally: CpuTally, settings: dict):
        self.family, self.ctx, self.tally = family, ctx, tally
        self.settings = settings  # the probe's settings beside the family's (what ``_unit_hash`` hashes)
        self.trained_for: str | None = None  # the task whose heads were reused, if any

    def fit(self, train: list, selection: list, layers: list[int]) -> dict[int, Fitted]:
        """One head per layer on the training windows, scored on the selection questions; the heads and answers
        of an earlier task that fitted on the same windows and selection (MLQA on XQuAD's) are reused
        (``xeval.adapters.transfer.shared_training.probe_key``), and scored with this task's metric."""
        card = self.family.card
        with self.tally.phase("encode"):
            feats = self.family.features(train)  # windows with gold start/end ([CLS] when not in the window)
        key = shared_training.probe_key(self.family, feats, selection, layers, self.settings)
        kept = shared_training.reuse_probe(key)
        if kept is not None:
            (heads, answers), self.trained_for = kept
            log.info(f"{card.name} probe: the heads fitted for {self.trained_for} (the same encoder, training "
                     "windows, selection questions and settings), scored with this task's metric")
        else:
            heads = self._fit_heads(feats, layers)
            answers = self.predict(selection, {layer: Fitted(layer, h, 0.0) for layer, h in heads.items()})
            shared_training.keep_probe(key, (heads, answers), card.name)
        lang, metric = card.train["lang"], card.metric
        return {layer: Fitted(layer, heads[layer], self.family.score(answers[layer], selection, lang)[metric])
                for layer in layers}

    def _fit_heads(self, feats: list[dict], layers: list[int]) -> dict[int, SpanHead]:
        with self.tally.phase("encode"):
            lengths = [len(f["input_ids"]) for f in feats]
            positions = [list(range(n)) for n in lengths]
            states = cached_rows(self.ctx, feats, layers, positions, np.float16,  # [L, sum(lengths), H]
                                 self.family.recipe.precision)
        starts = [int(f["start_positions"]) for f in feats]
        ends = [int(f["end_positions"]) for f in feats]
        with self.tally.phase("heads"):
            fitted = fit_each(lambda row: fit_span_head(states[row], lengths, starts, ends), len(layers))
        return dict(zip(layers, fitted))

    @torch.inference_mode()
    def predict(self, examples: list, fitted: dict[int, Fitted]) -> dict[int, list]:
        """Every layer's answers from one forward pass per batch of windows (not cached: see the module doc)."""
        family, encoder = self.family, self.ctx.encoder
        layers = sorted(fitted)
        wins = family.windows(examples)
        best: dict[int, dict[int, tuple[float, str]]] = {layer: {} for layer in layers}
        pad = family.tokenizer.pad_token_id or 0
        token_types = accepts_token_types(encoder.model)
        size = family.recipe.eval_batch_size
        order = sorted(range(len(wins)), key=lambda k: len(wins[k].input_ids))
        for begin in range(0, len(order), size):
            chunk = order[begin : begin + size]
            feats = [{"input_ids": wins[k].input_ids, "attention_mask": wins[k].attention_mask,
                      **({"token_type_ids": wins[k].token_type_ids} if wins[k].token_type_ids is not None else {})}
                     for k in chunk]
            batch = collate(feats, pad)
            extra = {"token_type_ids": batch["token_type_ids"].to(encoder.device)} \
                if token_types and "token_type_ids" in batch else {}
            with self.tally.phase("encode"), encoding_autocast(encoder, family.recipe.precision):
                states = encoder.model(input_ids=batch["input_ids"].to(encoder.device),
                                       attention_mask=batch["attention_mask"].to(encoder.device),
                                       output_hidden_states=True, return_dict=True, **extra).hidden_states
            decoding = time.process_time()
            for layer in layers:
                head: SpanHead = fitted[layer].head  # type: ignore[assignment]
                logits = head.logits(states[layer].float().cpu())  # [B, T, 2]
                for row, k in enumerate(chunk):
                    n = len(wins[k].input_ids)
                    found = best_span(wins[k], logits[row, :n, 0].tolist(), logits[row, :n, 1].tolist(),
                                      family.recipe.n_best_size, family.recipe.max_answer_length)
                    if found is not None:
                        ex, (score, (a, b), _) = wins[k].example, found  # (score, chars, tokens)
                        if ex not in best[layer] or score > best[layer][ex][0]:
                            best[layer][ex] = (score, examples[ex].context[a:b])
            self.tally.seconds["decode"] += time.process_time() - decoding
        return {layer: [best[layer][i][1] if i in best[layer] else "" for i in range(len(examples))]
                for layer in layers}
