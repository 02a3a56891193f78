"""Chooses how a fine-tuning task runs: the mode (``--mode finetune`` or ``probe``) and the setting (``--setting
zero-shot``, ``translate-train`` or ``few-shot``), builds the mode's ``Recipe`` and hands over to the mode's module
(``zero_shot``, ``few_shot``, ``probe_mode``). The families' ``run(card, langs, ctx)`` call ``run`` here."""

from __future__ import annotations

from xeval.adapters.transfer import few_shot, probe_mode, zero_shot
from xeval.adapters.transfer.base import Family
from xeval.adapters.transfer.recipe import Recipe, learning_rate_for
from xeval.base.errors import ConfigError
from xeval.cards.compat import RECIPES as COMPAT_RECIPES
from xeval.cards.compat import mode_of as compat_mode
from xeval.results.store import Record

SETTINGS = ("zero-shot", "translate-train", "few-shot")


def run(card, langs: list[str], ctx, family_cls: type[Family]) -> list[Record]:
    mode, setting = ctx.mode, ctx.setting
    if mode == "probe":  # the encoder frozen, a linear head on its features
        if setting != "zero-shot":
            raise ConfigError(f"--mode probe: only --setting zero-shot is implemented (found {setting!r})")
        # a probe's numbers read only PROBE_RECIPE_FIELDS: no compat recipe, no learning rate by hidden size
        return probe_mode.run(card, langs, ctx, family_cls, Recipe.build(family_cls.defaults, card.recipe,
                                                                         ctx.tasks.recipe))
    if mode != "finetune":
        raise ConfigError(f"unknown mode {mode!r}; expected finetune or probe")
    if setting not in SETTINGS:
        raise ConfigError(f"unknown setting {setting!r}; expected one of {', '.join(SETTINGS)}")
    overrides = ctx.tasks.recipe  # typed Recipe fields (xeval.run.options.task_options)
    # --compat xtreme sets the recipe fields of XTREME's quirks (selection at save_steps only), under the command line
    recipe = Recipe.build(family_cls.defaults, card.recipe, COMPAT_RECIPES[compat_mode(ctx)], overrides)
    recipe.learning_rate = learning_rate_for(recipe, ctx.encoder.hidden_size, overrides)  # recorded with the recipe
    if setting == "few-shot":  # English fine-tuning, then k target-language examples
        return few_shot.run(card, langs, ctx, family_cls, recipe)
    return zero_shot.run(card, langs, ctx, family_cls, recipe, setting)

