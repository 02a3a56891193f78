"""Every metric module's docstring examples are tests (huggingface/evaluate style)."""

import doctest
import importlib

import pytest

MODULES = ["accuracy", "bucc", "chunk_f1", "mlqa", "ranking", "squad", "token_accuracy", "xtreme"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"xeval.metrics.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"xeval.metrics.{name} has no examples"
    assert result.failed == 0
