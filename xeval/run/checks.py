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
    """Every key is read by some selected task (ConfigError otherwise, naming the closest keys); a real option that
    none of them reads is a warning. The values are typed and checked by ``xeval.run.options.task_options``."""
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


def select_cards(suite, tasks: list[str] | None, langs: list[str] | None) -> list[tuple[object, list[str]]]:
    """(card, languages) pairs the run covers, in suite order; unknown tasks are an error, languages a card does
    not have are skipped for that card (and an error when no card has any of them)."""
    cards = suite.cards
    if tasks:
        names = [c.name for c in cards]
        unknown = [t for t in tasks if t not in names]
        if unknown:
            raise ConfigError(f"suite {suite.name!r} has no task {', '.join(unknown)}"
                              f"{did_you_mean(unknown[0], names)}; it has {', '.join(names)}")
        cards = [c for c in cards if c.name in tasks]
    check_langs(suite, cards, langs)
    chosen = []
    for card in cards:
        card_langs = [lang for lang in card.languages if langs is None or lang in langs]
        if card_langs:
            chosen.append((card, card_langs))
    if not chosen:
        raise ConfigError(f"no task of suite {suite.name!r} covers the languages {', '.join(langs or [])}")
    return chosen


def check_files(chosen, data, setting: str = "zero-shot") -> tuple[list, list[str], list[str]]:
    """What a file layout can run: (card, languages) pairs whose files are there, notes on languages skipped because
    their evaluation file is not in the folder (a partial XTREME download), and one error per missing training file
    (naming it and the tasks it stops). The hub (and anything but a missing file) is left to the adapters."""
    from xeval.base.errors import DataError
    from xeval.data.sources import resolve

    if data.layout == "hub":
        return chosen, [], []

    def missing(card, lang, split):
        try:
            resolve(card, lang, split, data)
        except DataError as err:
            if err.message.startswith("missing file"):
                return err
            raise
        except ConfigError:
            return None  # the card names no such split here: the adapter says so (or does without, e.g. dev)
        return None

    runnable, notes, lost_train = [], [], {}
    for card, langs in chosen:
        if card.train and setting in ("zero-shot", "few-shot"):
            err = missing(card, card.train["lang"], card.train["split"])
            if err is not None:
                lost_train.setdefault(err.path, []).append(card.name)
                continue
        skipped = [lang for lang in langs if missing(card, lang, card.split_for(lang)) is not None]
        kept = [lang for lang in langs if lang not in skipped]
        if skipped:
            notes.append(f"{card.name}: {len(skipped)} of {len(langs)} languages have no evaluation file in "
                         f"{data.path}, not run: {', '.join(skipped)}")
        if kept:
            runnable.append((card, kept))
    errors = [f"{path}: missing file: the training set of {', '.join(tasks)}; "
              f"{'that task was' if len(tasks) == 1 else 'those tasks were'} not run"
              for path, tasks in lost_train.items()]
    return runnable, notes, errors
