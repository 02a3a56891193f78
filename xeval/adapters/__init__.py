"""Task types: one adapter module per task type, chosen by a task card's ``type`` through its record in
``xeval/cards/types.py`` (``TaskType.adapter`` names the module; the record also says whether the type fine-tunes,
runs few-shot and what probe mode reads out).

Every adapter module exposes

    run(card, langs, ctx) -> list[Record]

which evaluates ``card`` on ``langs`` for every seed in ``ctx.seeds`` (and every layer in ``ctx.layers`` for
probes), skips units that ``ctx.store.has(unit)`` already holds (resume), puts each record into ``ctx.store`` as
soon as it is computed, and returns the records it produced or found. ``ctx`` is a
``xeval.adapters.context.RunContext``. The fine-tuning types live in ``xeval/adapters/transfer/`` (tagging,
classification, qa), the alignment probes in ``xeval/adapters/probes/``.
"""

from __future__ import annotations

import importlib

from xeval.cards.types import task_type


def get_adapter(name: str):
    """The adapter module of task type ``name`` (its record in ``xeval.cards.types`` names it), imported now."""
    return importlib.import_module(task_type(name).adapter)
