"""The head's dropout is read from the backbone's config as Hugging Face's task heads read it."""

from __future__ import annotations

from types import SimpleNamespace

from torch import nn

from xeval.adapters.transfer.backbone import hidden_dropout


def _backbone(**config) -> nn.Module:
    module = nn.Linear(1, 1)
    module.config = SimpleNamespace(**config)
    return module


def test_head_dropout_follows_the_config_zero_included():
    assert hidden_dropout(_backbone(hidden_dropout_prob=0.0)) == 0.0  # trained without dropout: none in the head
    assert hidden_dropout(_backbone(hidden_dropout_prob=0.1, classifier_dropout=0.3)) == 0.3
    assert hidden_dropout(_backbone(hidden_dropout_prob=0.2, classifier_dropout=None)) == 0.2
    assert hidden_dropout(_backbone(dropout=0.05)) == 0.05
    assert hidden_dropout(_backbone()) == 0.1
