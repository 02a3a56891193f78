"""Controls: a model's scores read against the same architecture with random weights.

A probe score alone does not say how much of it pre-training earned: identical strings (names, numbers,
cognates) are retrieved and aligned by any encoder that maps equal tokens to equal vectors, trained or not
(a first measurement on UI-string corpora: a random-init model scored 4.0 % on Tatoeba where MLM-only scored
1.2 %).
``xeval run --control random-init`` therefore also evaluates ``Encoder.random_init(model, seed)`` and stores its
records under their own model key, ``<name>-random-init@<hash of the random weights>``, whose ``Record.model``
block carries ``control: random-init``, ``control_seed`` and the parent model's key, id and hash.

This module tells reports which stored model is whose control; everything else treats a control as one more model.
"""

from __future__ import annotations

from collections.abc import Iterable

from xeval.base.errors import ConfigError

CONTROL_RANDOM_INIT = "random-init"
CONTROLS = (CONTROL_RANDOM_INIT,)
LABELS = {CONTROL_RANDOM_INIT: "random init"}  # how tables and plots name a control


def check_control(name: str | None) -> str | None:
    """The control's name, or None; an unknown one is a ConfigError (before any model is loaded)."""
    if name is None or name in CONTROLS:
        return name
    raise ConfigError(f"unknown control {name!r}; expected one of {', '.join(CONTROLS)}")


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
