"""A result unit's config hash: everything besides the unit's own fields (model key, task, language, split, seed,
layer, setting) that changes its number.

Two runs reuse each other's records only when this hash is equal; any difference gives a new record beside the
old one (``xeval.results.store.Store``). What goes in:

- ``config``: what the adapter resolved from the card's recipe, its own defaults and the command line (the
  fine-tuning ``Recipe`` with the family's options; a probe's options such as pooling and max length);
- ``data``: the ``data`` block of every split the number depends on (evaluation, and for fine-tuning the training
  and selection splits): file hashes, format options, subsample sizes and seeds, the hub revision; not the data
  root's absolute path (moving a data folder changes no number);
- ``card``: the task card's content hash;
- ``options``: the run-wide settings of ``RunContext.identity_options()`` (setting, mode, compat mode,
  ``--max-eval``); the recipe overrides are already resolved into ``config``, and what only says where files go
  (export folders, caches) or lists several units' choices at once (the shots) is left out;
- ``encoder``: the encoder's number-deciding settings (``Encoder.settings()``: dtype, the sentence pooling a
  sentence-transformers folder asks for);
- ``metric_version``: ``METRIC_VERSION`` below.

The hash is computed before anything is evaluated, from the specification, so resume costs no evaluation.
"""

from __future__ import annotations

from xeval.base.hashing import hash_json

# Bump when scoring or adapter code changes the numbers it produces for an unchanged specification, so stores
# written by the older code are recomputed rather than reused.
METRIC_VERSION = 1

# Run-wide options that decide no number: where predictions, gold files and caches go.
# "shots": the list of --shots counts; each few-shot unit hashes its own k (xeval/adapters/transfer/few_shot.py), so adding a
# count to the list reuses the units already stored.
NOT_DECIDING = frozenset({"recipe", "export_labels", "export_predictions", "cache_dir", "threads", "shots"})

HASH_LENGTH = 12


def _data(block: dict) -> dict:
    return {k: v for k, v in (block or {}).items() if k != "root"}


def config_hash(card, ctx, config: dict, data: list[dict]) -> str:
    """12 hex of the sha256 of the unit's specification (see the module docstring)."""
    options = ctx.identity_options()
    settings = getattr(ctx.encoder, "settings", None)
    spec = {
        "config": config,
        "data": [_data(block) for block in data],
        "card": getattr(card, "hash", None) or card.name,
        "options": options,
        "encoder": settings() if callable(settings) else {},
        "metric_version": METRIC_VERSION,
    }
    return hash_json(spec)[:HASH_LENGTH]
