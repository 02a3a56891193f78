"""bf16 asked on a CPU without bf16 matrix instructions: one warning a process and option, none where they exist."""

from __future__ import annotations

import logging

import pytest

from xeval.base import bf16_support


@pytest.fixture(autouse=True)
def _fresh():
    bf16_support.warn_slow_bf16.cache_clear()
    yield
    bf16_support.warn_slow_bf16.cache_clear()


def test_the_probe_answers_a_bool():
    assert isinstance(bf16_support.slow_bf16_cpu(), bool)


def test_one_warning_per_option_where_bf16_is_slow(monkeypatch, caplog):
    monkeypatch.setattr(bf16_support, "slow_bf16_cpu", lambda: True)
    with caplog.at_level(logging.WARNING, logger="xeval"):
        assert bf16_support.warn_slow_bf16("--dtype bfloat16") is True
        bf16_support.warn_slow_bf16("--dtype bfloat16")
        bf16_support.warn_slow_bf16("train.bf16")
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 2
    assert lines[0].startswith("--dtype bfloat16 on a CPU without bf16 matrix instructions")
    assert "float32 is the faster choice" in lines[0]


def test_no_warning_where_bf16_is_fast(monkeypatch, caplog):
    monkeypatch.setattr(bf16_support, "slow_bf16_cpu", lambda: False)
    with caplog.at_level(logging.WARNING, logger="xeval"):
        assert bf16_support.warn_slow_bf16("train.bf16") is False
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_a_cpu_fine_tune_in_bf16_warns(monkeypatch, caplog):
    """The fine-tuning loop is one of the call sites: a recipe with precision bf16 on the CPU warns once."""
    import torch

    from tests.adapters.transfer.test_passes import _features, _head
    from xeval.adapters.transfer.fine_tuning import fine_tune
    from xeval.adapters.transfer.recipe import Recipe

    monkeypatch.setattr(bf16_support, "slow_bf16_cpu", lambda: True)
    recipe = Recipe.build({"batch_size": 8, "max_steps": 1, "precision": "bf16"})
    with caplog.at_level(logging.WARNING, logger="xeval"):
        fine_tune(_head("tagging"), _features(), recipe, seed=1, pad_token_id=0, desc="test", device=torch.device("cpu"))
    assert any("recipe precision=bf16 on a CPU" in r.getMessage() for r in caplog.records)
