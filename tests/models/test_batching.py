"""The encoder's batches (xeval.models.batching): every input once, ascending subword count, at most batch_size
inputs and batch_size x median padded tokens, so a long tail is cut into smaller batches."""

import random

import pytest

from xeval.models.batching import length_batches


def _check(lengths, batches, batch_size):
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))  # every input exactly once
    assert [lengths[i] for i in flat] == sorted(lengths)  # ascending subword count
    assert all(1 <= len(b) <= batch_size for b in batches)


def test_uniform_lengths_give_full_batches_in_input_order():
    batches = length_batches([7] * 70, 32)
    assert [len(b) for b in batches] == [32, 32, 6]
    assert [i for b in batches for i in b] == list(range(70))  # stable: ties keep the input order


def test_one_long_sentence_does_not_pad_the_others():
    lengths = [15] * 31 + [159]
    batches = length_batches(lengths, 32)
    _check(lengths, batches, 32)
    assert batches == [list(range(31)), [31]]  # 31 x 15 + 1 x 159 padded tokens instead of 32 x 159


def test_token_budget_on_a_long_tail():
    rng = random.Random(0)
    lengths = [int(rng.lognormvariate(2.7, 0.6)) + 3 for _ in range(1000)]
    batches = length_batches(lengths, 32)
    _check(lengths, batches, 32)
    median = sorted(lengths)[499:501]
    budget = 32 * sum(median) / 2
    assert all(len(b) * max(lengths[i] for i in b) <= budget or len(b) == 1 for b in batches)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    assert sum(lengths) / padded > 0.9  # fixed batches of 32 in this order pad far more in the tail


def test_edge_cases():
    assert length_batches([], 8) == []
    assert length_batches([500, 3, 3, 3], 8) == [[1, 2, 3], [0]]  # over the budget (8 x 3): a batch of its own
    with pytest.raises(ValueError):
        length_batches([1], 0)
