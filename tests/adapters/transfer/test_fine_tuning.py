"""Length-grouped training batches (seeded, each padded to its own longest) and micro-batch trimming."""

from __future__ import annotations

import torch

from xeval.adapters.transfer.fine_tuning import MEGA_BATCH, batches, length_grouped_order, trimmed
from xeval.adapters.transfer.recipe import Recipe


def udpos_lengths(data_root) -> list[int]:
    """Words per sentence of the real English UD-POS training file (a stand-in for feature lengths)."""
    from xeval.cards.catalog import load_card
    from xeval.data.sources import DataRoot, load_examples

    examples = load_examples(load_card("udpos"), "en", "train", DataRoot.resolve(str(data_root)))
    return [len(ex.tokens) for ex in examples[:3000]]


def padding(order: list[int], lengths: list[int], size: int) -> int:
    """Pad positions when consecutive batches of ``size`` are each padded to their longest."""
    total = 0
    for start in range(0, len(order), size):
        batch = [lengths[i] for i in order[start : start + size]]
        total += max(batch) * len(batch) - sum(batch)
    return total


def test_length_grouped_order_is_a_seeded_permutation_with_little_padding(data_root):
    lengths = udpos_lengths(data_root)
    size = 32
    order = length_grouped_order(lengths, size, torch.Generator().manual_seed(1))
    assert sorted(order) == list(range(len(lengths)))  # every example once per epoch
    assert order == length_grouped_order(lengths, size, torch.Generator().manual_seed(1))  # deterministic
    assert order != length_grouped_order(lengths, size, torch.Generator().manual_seed(2))
    assert max(lengths[i] for i in order[:size]) == max(lengths)  # the longest batch comes first
    shuffled = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(1)).tolist()
    # sorting windows of 50 batches leaves a small fraction of the padding a plain shuffle needs
    assert padding(order, lengths, size) < 0.2 * padding(shuffled, lengths, size)
    # batches are not in length order through the epoch: steps of different lengths alternate
    maxima = [max(lengths[i] for i in order[s : s + size]) for s in range(0, len(order), size)]
    assert maxima != sorted(maxima, reverse=True) and len(maxima) > MEGA_BATCH


def test_batches_group_only_when_asked():
    feats = [{"input_ids": [1] * n, "attention_mask": [1] * n} for n in (5, 1, 4, 2, 3, 6)]
    plain = [b["input_ids"].shape for b in batches(feats, 2, 0, torch.Generator().manual_seed(0))]
    grouped = list(batches(feats, 2, 0, torch.Generator().manual_seed(0), group_by_length=True))
    # lengths 6,5 | 4,3 | 2,1 (in some order of the batches): no batch pads more than one position
    assert sorted(int(b["attention_mask"].sum()) for b in grouped) == [3, 7, 11]
    assert all(b["attention_mask"].shape[1] - int(b["attention_mask"].sum(1).min()) == 1 for b in grouped)
    assert [b["input_ids"].shape for b in batches(feats, 2, 0)] == [(2, 5), (2, 4), (2, 6)]  # no generator: in order
    assert len(plain) == 3
    assert Recipe.build({"group_by_length": "false"}).group_by_length is False
    assert Recipe().group_by_length is True


def test_trimmed_drops_only_columns_no_example_uses():
    batch = {"input_ids": torch.tensor([[5, 6, 0, 0], [7, 0, 0, 0]]),
             "attention_mask": torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]]),
             "labels": torch.tensor([[1, 2, -100, -100], [3, -100, -100, -100]]),
             "start_positions": torch.tensor([0, 1])}
    out = trimmed(batch)
    assert out["input_ids"].tolist() == [[5, 6], [7, 0]] and out["labels"].tolist() == [[1, 2], [3, -100]]
    assert out["start_positions"].tolist() == [0, 1]
    full = {k: v[:1] for k, v in batch.items()}
    full["attention_mask"] = torch.ones(1, 4, dtype=torch.long)
    assert trimmed(full) is full
