"""Passes: a step's micro-batches share a forward/backward pass and keep their own loss means (the same gradient)."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import BertConfig, BertModel

from xeval.adapters.transfer.classification import PairClassifier
from xeval.adapters.transfer.fine_tuning import IGNORE_INDEX, fine_tune, trimmed
from xeval.adapters.transfer.passes import grouped_cross_entropy, plan
from xeval.adapters.transfer.qa import SpanExtractor
from xeval.adapters.transfer.recipe import Recipe
from xeval.adapters.transfer.tagging import Tagger
from xeval.base.errors import ConfigError


def test_plan_merges_consecutive_micro_batches_within_the_budget():
    lengths = [10, 12, 9, 11, 30, 8, 5]
    assert plan(lengths, 2, 48) == [(0, 4), (4, 6), (6, 7)]  # 6 x 30 > 48; then 3 x 30 > 48
    assert plan(lengths, 2, 0) == [(0, 2), (2, 4), (4, 6), (6, 7)]
    assert plan(lengths, 2, 10**6) == [(0, 7)]
    assert plan(lengths, 2, 1) == plan(lengths, 2, 0)  # a micro-batch over the budget keeps a pass of its own
    assert plan(lengths, 8, 48) == [(0, 7)]  # one micro-batch: one pass, whatever the budget
    assert plan([], 2, 48) == []


def test_grouped_cross_entropy_is_the_mean_of_group_means_weighted_by_rows():
    # hand-computed: row 0 -> log(1 + e^-2) = 0.126928, row 2 -> log(1 + e^-3) = 0.048587, row 1 ignored
    logits = torch.tensor([[2.0, 0.0], [0.0, 0.0], [0.0, 3.0]])
    labels = torch.tensor([0, IGNORE_INDEX, 1])
    assert float(grouped_cross_entropy(logits, labels, 2, IGNORE_INDEX)) == pytest.approx(2 / 3 * 0.126928 + 0.048587 / 3,
                                                                                        abs=1e-6)
    assert float(grouped_cross_entropy(logits, labels, None, IGNORE_INDEX)) == pytest.approx((0.126928 + 0.048587) / 2,
                                                                                           abs=1e-6)
    assert float(grouped_cross_entropy(logits, labels, 3, IGNORE_INDEX)) == float(
        grouped_cross_entropy(logits, labels, None, IGNORE_INDEX))


def _backbone(dropout: float = 0.1):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=32, attn_implementation="sdpa",
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return BertModel(config)


def _batch(kind: str):
    """7 examples of lengths 4..12 (padded to 12) for one head: micro-batches of 2 leave a last one of 1."""
    generator = torch.Generator().manual_seed(1)
    lengths = [12, 5, 9, 4, 7, 11, 6]
    ids = torch.randint(5, 60, (7, 12), generator=generator)
    mask = torch.zeros(7, 12, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, :n] = 1
    batch = {"input_ids": ids * mask, "attention_mask": mask}
    if kind == "tagging":  # a different number of labelled tokens in each row: the weighting matters
        labels = torch.randint(0, 3, (7, 12), generator=generator)
        labels[mask == 0] = IGNORE_INDEX
        labels[:, 0] = IGNORE_INDEX
        labels[1, 2:] = IGNORE_INDEX  # one labelled token in row 1
        batch["labels"] = labels
    elif kind == "qa":  # answer positions inside each window
        batch["start_positions"] = torch.tensor([n // 2 for n in lengths])
        batch["end_positions"] = torch.tensor([n - 1 for n in lengths])
    else:
        batch["labels"] = torch.randint(0, 3, (7,), generator=generator)
    return batch


def _head(kind: str, dropout: float = 0.1):
    backbone = _backbone(dropout)
    torch.manual_seed(2)
    if kind == "tagging":
        return Tagger(backbone, 3)
    if kind == "qa":
        return SpanExtractor(backbone)
    return PairClassifier(backbone, 3, use_pooler=True)


def _gradients(model) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


@pytest.mark.parametrize("kind", ["tagging", "qa", "classification"])
def test_one_pass_with_loss_groups_gives_the_micro_batches_gradient(kind):
    """Dropout off (eval mode), so only the arithmetic differs: one pass of 7 with loss groups of 2 against micro-
    batches of 2, 2, 2 and 1, each trimmed to its own longest, their losses weighted as fine_tune weighs them."""
    batch = _batch(kind)
    micro = _head(kind).eval()
    for start in range(0, 7, 2):
        chunk = trimmed({k: v[start : start + 2] for k, v in batch.items()})
        (micro(**chunk)[0] * len(chunk["input_ids"]) / 7).backward()
    one = copy.deepcopy(micro)
    one.zero_grad()
    one(**batch, loss_group=2)[0].backward()
    torch.testing.assert_close(_gradients(one), _gradients(micro), rtol=1e-4, atol=1e-6)
    if kind == "tagging":  # a plain mean over the pass's tokens is other maths: the groups are what makes it equal
        plain = copy.deepcopy(micro)
        plain.zero_grad()
        plain(**batch)[0].backward()
        assert not torch.allclose(_gradients(plain), _gradients(micro), rtol=1e-3, atol=1e-5)


def _features(n: int = 23):
    generator = torch.Generator().manual_seed(3)
    out = []
    for i in range(n):
        length = 4 + i % 9
        ids = torch.randint(5, 60, (length,), generator=generator).tolist()
        labels = [IGNORE_INDEX] + torch.randint(0, 3, (length - 1,), generator=generator).tolist()
        out.append({"input_ids": ids, "attention_mask": [1] * length, "labels": labels})
    return out


def _recipe(tokens: int) -> Recipe:
    # 23 examples in steps of 8: micro-batches 3, 3, 2 (and 3, 3, 1 in the epoch's last step)
    return Recipe.build({"batch_size": 8, "per_device_batch_size": 3, "max_steps": 3, "learning_rate": 1e-3,
                         "group_by_length": False, "pass_tokens": tokens})


def test_fine_tune_one_pass_gives_each_steps_micro_batch_gradient(monkeypatch):
    """Dropout 0: the gradient each step clips (before clipping) is the same with one pass a step as with one
    micro-batch a pass, up to float rounding; only the count of passes differs."""
    grads: dict[int, list[torch.Tensor]] = {}
    clip = torch.nn.utils.clip_grad_norm_
    for tokens in (0, 8192):
        seen = grads.setdefault(tokens, [])

        def capture(parameters, *args, _seen=seen, **kwargs):
            parameters = list(parameters)
            _seen.append(torch.cat([p.grad.flatten() for p in parameters if p.grad is not None]))
            return clip(parameters, *args, **kwargs)

        monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", capture)
        report = fine_tune(_head("tagging", dropout=0.0), _features(), _recipe(tokens), seed=1, pad_token_id=0,
                           desc="test")
        assert report.micro_batch == 3 and report.passes == (9 if tokens == 0 else 3)
    assert len(grads[0]) == len(grads[8192]) == 3
    for merged, separate in zip(grads[8192], grads[0], strict=True):
        torch.testing.assert_close(merged, separate, rtol=1e-4, atol=1e-6)


def test_pass_tokens_zero_is_the_old_loop_one_micro_batch_a_pass_seeded_by_its_index():
    """pass_tokens 0 calls the head as xeval did before passes: one micro-batch a call, no loss groups, torch
    seeded per (seed, step, micro-batch)."""
    from xeval.adapters.transfer.fine_tuning import _micro_batch_seed

    calls = []

    class Recording(Tagger):
        def forward(self, input_ids, attention_mask, labels=None, **kwargs):
            calls.append((len(input_ids), kwargs.get("loss_group"), torch.initial_seed()))
            return super().forward(input_ids, attention_mask, labels, **kwargs)

    for tokens in (0, 8192):
        calls.clear()
        fine_tune(Recording(_backbone(), 3), _features(), _recipe(tokens), seed=1, pad_token_id=0, desc="test")
        if tokens == 0:
            assert [rows for rows, _, _ in calls] == [3, 3, 2] * 2 + [3, 3, 1]
            assert all(group is None for _, group, _ in calls)
            assert [s for _, _, s in calls] == [_micro_batch_seed(1, step, i) for step in range(3) for i in range(3)]
        else:
            assert calls == [(8, 3, _micro_batch_seed(1, 0, 0)), (8, 3, _micro_batch_seed(1, 1, 0)),
                             (7, 3, _micro_batch_seed(1, 2, 0))]


def test_pass_tokens_is_validated():
    assert Recipe.build({"pass_tokens": 0}).pass_tokens == 0
    with pytest.raises(ConfigError, match="pass_tokens"):
        Recipe.build({"pass_tokens": -1})
