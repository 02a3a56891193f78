"""Controls: a model's scores read against the same architecture with random weights.

A probe score alone does not say how much of it pre-training earned: identical strings (names, numbers,
cognates) are retrieved and aligned by any encoder that maps equal tokens to equal vectors, trained or not
(a first measurement on UI-string corpora: a random-init model scored 4.0 % on Tatoeba where MLM-only scored
1.2 %).
``xeval run --control random-init`` therefore also evaluates ``Encoder.random_init(model, seed)`` and stores its
records under their own model key, ``<name>-random-init@<hash of the random weights>``, whose ``Record.model``
block carries ``control: random-init``, ``control_seed`` and the parent model's key, id and hash.

``--control charngram`` (``xeval.models.charngram``) is the other floor, a string-similarity baseline with no neural
network at all: TF-IDF over character n-grams, scored by the sentence-retrieval probes only (Tatoeba, FLORES, BUCC,
heldout). Its key, ``charngram@<hash of the vectorizer's configuration>``, names no model (its numbers do not depend
on one, so one store reuses them for every model); ``Record.model`` carries ``control: charngram``, the vectorizer
and the model it was run beside (``parent``). Its records have no layer.

``--control random-init,charngram`` runs both.

This module tells reports which stored model is whose control; everything else treats a control as one more model.
"""

from __future__ import annotations

from collections.abc import Iterable

from xeval.base.errors import ConfigError

CONTROL_RANDOM_INIT = "random-init"
CONTROL_CHARNGRAM = "charngram"
CONTROLS = (CONTROL_RANDOM_INIT, CONTROL_CHARNGRAM)
LABELS = {CONTROL_RANDOM_INIT: "random init", CONTROL_CHARNGRAM: "char n-gram TF-IDF"}  # how tables and plots name it
# controls that owe nothing to their parent model: their rows are labelled by the control alone, not "<model> (...)"
MODEL_FREE = frozenset({CONTROL_CHARNGRAM})
NOTES = {  # the line a table prints under its rows when a control of this kind is among them
    CONTROL_RANDOM_INIT: "(random init) = the same architecture and tokenizer with random weights (xeval run "
                         "--control random-init): the score a model gets without pre-training",
    CONTROL_CHARNGRAM: "char n-gram TF-IDF = cosine over TF-IDF vectors of character 1-4-grams, each side's IDF "
                       "fitted on that side's own sentences, never on a pair (xeval run --control charngram): "
                       "the score of string similarity alone",
}


def check_controls(spec: str | None) -> tuple[str, ...]:
    """The controls a ``--control`` value names (comma-separated, in order, each once); an unknown one is a
    ConfigError (before any model is loaded)."""
    if spec is None:
        return ()
    names = [part.strip() for part in str(spec).split(",")]
    for name in names:
        if name not in CONTROLS:
            raise ConfigError(f"unknown control {name!r}; expected one of {', '.join(CONTROLS)} "
                              "(several: comma-separated)")
    return tuple(dict.fromkeys(names))


def check_control(name: str | None) -> str | None:
    """The ``--control`` value normalised (``random-init,charngram``), or None; an unknown name is a ConfigError."""
    return ",".join(check_controls(name)) or None


def control_kind(record) -> str | None:
    """``random-init`` for a control's record, None for a model's."""
    kind = (record.model or {}).get("control")
    return kind if kind in CONTROLS else None


def control_parents(records: Iterable) -> dict[str, tuple[str, str]]:
    """{control's model key: (parent's model key, control kind)} over the records that are controls."""
    out: dict[str, tuple[str, str]] = {}
    for rec in records:
        kind = control_kind(rec)
        if kind is not None:
            parent = (rec.model.get("parent") or {}).get("key")
            out.setdefault(rec.unit.model, (parent, kind))
    return out
