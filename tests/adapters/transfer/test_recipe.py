"""The fine-tuning recipe (xeval.adapters.transfer.recipe): what ``Recipe.build`` refuses."""

from __future__ import annotations

import pytest

from xeval.adapters.transfer.recipe import Recipe
from xeval.base.errors import ConfigError


def test_only_first_subword_labelling_is_supported():
    with pytest.raises(ConfigError, match="label_first_subword"):
        Recipe.build({"label_first_subword": False})
    with pytest.raises(ConfigError, match="unknown recipe field"):
        Recipe.build({"epoch": 3})
