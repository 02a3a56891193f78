"""The task types: one record per ``type:`` a card may name, read by every place that treats types differently.

A task type is the generic code a card runs on (MTEB's task types, lm-evaluation-harness's output types): the
card says which data, languages and metric; the type says how the encoder is evaluated on them. Each record names
its adapter module lazily (a string, imported on first use by ``xeval.adapters.get_adapter``), so reading cards
never imports torch or any adapter.

Who reads what:

- ``adapter``: ``xeval.adapters.get_adapter`` (the module exposes ``run(card, langs, ctx) -> list[Record]``);
- ``fine_tunes``: the run plan (``xeval.run``: one work item per task and seed holding every test language), the
  ``--set`` checks (a fine-tuning type reads the ``Recipe`` fields, a probe the probe options), ``--mode probe``;
- ``joint``: the run plan (a probe that reads all its languages in one call is one work item);
- ``sentence_retrieval``: the run plan (``--control charngram``, a string-similarity baseline, runs these only);
- ``few_shot``: ``--setting few-shot`` (``xeval.adapters.transfer.few_shot``);
- ``probe_readout``: ``--mode probe`` (``xeval.adapters.transfer.probe_mode``): how a frozen encoder's features
  are read for a linear head (``words``: the first subword of each word; ``pair``: the pooled pair; ``span``:
  start and end scores over a window's tokens);
- the card loader (``xeval.cards.catalog``): a card naming no type of this table is an error.

Adding a task type (the steps of docs/architecture.md): a module under ``xeval/adapters/transfer/`` (a
``Family`` subclass) or ``xeval/adapters/probes/`` (a probe on ``probes.base``) exposing ``run``; a record here;
a card in ``tasks/``; its metric in ``xeval/metrics/`` when it needs a new one; tests in ``tests/adapters/``.
The reader of its data is chosen by the card's ``format`` (``xeval.data.sources.FORMATS``), and the hub columns
by that format too (``xeval.data.hub``): the data layer knows example types, not task types.
"""

from __future__ import annotations

from dataclasses import dataclass

from xeval.base.errors import ConfigError, did_you_mean


@dataclass(frozen=True)
class TaskType:
    name: str
    adapter: str  # the module that runs it (``run(card, langs, ctx)``), imported on first use
    description: str
    fine_tunes: bool = False  # a model fine-tuned per task and seed, shared by the test languages; else a probe
    joint: bool = False  # a probe that reads all its languages in one call (one work item, not one per language)
    few_shot: bool = False  # ``--setting few-shot`` runs it (k target-language examples after English)
    probe_readout: str | None = None  # ``--mode probe``: "words", "pair" or "span"; None: no probe mode
    sentence_retrieval: bool = False  # scores sentence vectors by cosine search: the char n-gram baseline runs it


_TRANSFER = "xeval.adapters.transfer"
_PROBES = "xeval.adapters.probes"

TASK_TYPES: dict[str, TaskType] = {t.name: t for t in (
    TaskType("tagging", f"{_TRANSFER}.tagging", "token tagging: UD-POS, PAN-X", fine_tunes=True, few_shot=True,
             probe_readout="words"),
    TaskType("pair_classification", f"{_TRANSFER}.classification", "sentence-pair classification: XNLI, PAWS-X",
             fine_tunes=True, few_shot=True, probe_readout="pair"),
    TaskType("qa", f"{_TRANSFER}.qa", "extractive QA: XQuAD, MLQA, TyDiQA-GoldP", fine_tunes=True,
             probe_readout="span"),
    TaskType("retrieval", f"{_PROBES}.retrieval", "sentence retrieval: Tatoeba, FLORES-200",
             sentence_retrieval=True),
    TaskType("heldout_retrieval", f"{_PROBES}.heldout", "retrieval on the engine's own held-out pairs",
             sentence_retrieval=True),
    TaskType("bitext_mining", f"{_PROBES}.mining", "bitext mining: BUCC 2018", sentence_retrieval=True),
    TaskType("alignment", f"{_PROBES}.alignment", "word alignment by optimal transport, scored by AER"),
    TaskType("lexicon", f"{_PROBES}.lexicon", "bilingual lexicon induction: MUSE"),
    TaskType("tokenizer_stats", f"{_PROBES}.tokenization", "tokenizer diagnostics per language: FLORES-200"),
    TaskType("neutrality", f"{_PROBES}.neutrality", "language ID probe and CKA per layer: FLORES-200", joint=True),
)}


def task_type(name: str, where: str = "") -> TaskType:
    """The record of ``name``; a ConfigError naming ``where`` (a card file) and the closest type otherwise."""
    try:
        return TASK_TYPES[name]
    except (KeyError, TypeError):
        raise ConfigError(f"{where}{': ' if where else ''}unknown task type {name!r}{did_you_mean(name, TASK_TYPES)}; "
                          f"expected one of {', '.join(TASK_TYPES)}") from None
