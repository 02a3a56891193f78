"""Checks of ``xeval run``'s options that need the suite but no model, so a typo fails in a second, before any
model loads, with the closest valid names (difflib).

- ``--set KEY=VALUE`` (and the recipe flags): a key no task reads is an error: a fine-tuning ``Recipe`` field for
  tagging, classification and QA; a probe option (``probes.DEFAULTS`` and the adapter's ``EXTRA_OPTIONS``) for the
  probes. A real option that none of the selected tasks reads gets a warning (the run-wide sizes of ``RUN_WIDE``
  none). Values are checked the way the tasks will read them.
- ``--tasks`` and ``--langs``: names the suite does not have.
- suites: see ``xeval.cards.catalog.load_suite``.
"""

from __future__ import annotations

from dataclasses import fields
from types import SimpleNamespace

from xeval.base.console import log
from xeval.base.errors import ConfigError, did_you_mean
from xeval.cards.types import task_type

# Options every probe reads besides its DEFAULTS: the first N examples per language (--max-eval).
# --eval-batch-size: the sentences encoded per forward pass (the probes' batch_size).
PROBE_RUN_OPTIONS = ("max_eval", "eval_batch_size")


# The recipe options with flags of their own (xeval run --max-train ...): a run applies each to the tasks that read
# it, so giving one to a run of probes only is no mistake.
RUN_WIDE = frozenset({"max_train", "max_dev", "max_eval", "epochs", "max_steps", "learning_rate", "batch_size",
                      "max_length", "eval_every", "eval_batch_size"})



def recipe_fields() -> set[str]:
    from xeval.adapters.transfer.recipe import Recipe

    return {f.name for f in fields(Recipe)}


def option_keys(type_name: str) -> set[str]:
    """The ``--set`` keys a task type reads."""
    from xeval.adapters import get_adapter
    from xeval.adapters.probes import base as probes

    if task_type(type_name).fine_tunes:
        return recipe_fields()

    extra = getattr(get_adapter(type_name), "EXTRA_OPTIONS", {})
    return set(probes.DEFAULTS) | set(extra) | set(PROBE_RUN_OPTIONS)


def check_overrides(chosen, overrides: dict) -> None:
    """Every key is read by some selected task; every value is one its tasks accept (ConfigError otherwise)."""
    by_type = {card.type for card, _ in chosen}
    known = {t: option_keys(t) for t in by_type}
    everything = set().union(*known.values()) if known else set()
    for key in overrides:
        norm = key.replace("-", "_")
        if norm in everything:
            continue
        tasks = ", ".join(card.name for card, _ in chosen)
        anywhere = recipe_fields() | option_keys("retrieval") | option_keys("alignment")
        hint = did_you_mean(norm, everything) or did_you_mean(norm, anywhere)
        if norm in anywhere:
            # a real option the selected tasks do not read: the run-wide sizes (--max-train ...) apply to whichever
            # tasks read them; any other is said, since it changes nothing here
            if norm not in RUN_WIDE:
                log.warning(f"--set {key}: none of the selected tasks ({tasks}) reads this option; it changes nothing")
            continue
        raise ConfigError(f"--set {key}: unknown option{hint}; the selected tasks ({tasks}) read: "
                          f"{', '.join(sorted(everything))}")
    _check_values(chosen, overrides)


def _check_values(chosen, overrides: dict) -> None:
    from xeval.adapters import get_adapter
    from xeval.adapters.probes import base as probes
    from xeval.adapters.transfer.recipe import Recipe

    names = recipe_fields()
    Recipe.build({k: v for k, v in overrides.items() if k.replace("-", "_") in names})
    ctx = SimpleNamespace(options={"recipe": dict(overrides)})
    for card, _ in chosen:
        if not task_type(card.type).fine_tunes:
            probes.probe_options(card, ctx, extra=getattr(get_adapter(card.type), "EXTRA_OPTIONS", None))


def check_langs(suite, cards, langs: list[str] | None) -> None:
    """A language no selected task has is an error naming the closest ones."""
    if not langs:
        return
    have = {lang for card in cards for lang in card.languages}
    unknown = [lang for lang in langs if lang not in have]
    if unknown:
        first = unknown[0]
        raise ConfigError(f"--langs {first}: no selected task of suite {suite.name!r} has this language"
                          f"{did_you_mean(first, have)}; they have {', '.join(sorted(have))}")
