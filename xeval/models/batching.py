"""Which sentences share a forward pass: the encoder's batches, cut from the order of subword counts.

A batch pads every sentence to the longest of its batch, and the forward pass pays for the padded shape (every
matrix product, GELU and layer norm runs on padding; attention on its square). Two choices keep that shape close
to the real tokens, neither of which changes a vector beyond float rounding (padding is masked):

- sort by subword count, not by characters (what sentence-transformers' ``encode`` does): a character costs 0.25
  (German) to 0.65 (Japanese) subwords in e5's XLM-R vocabulary, so character-sorted batches of 32 of Tatoeba
  de/fr/ja/sw are ~65 % real tokens, subword-sorted ones ~93 %. The counts come from one extra fast-tokenizer call
  over all texts (well under 1 % of the forward pass);
- a token budget: at most ``batch_size`` sentences, and at most ``batch_size`` x the median subword count of all
  inputs in padded tokens. Batches below the median length are full; the long tail (a 159-subword sentence among
  15-subword ones) is cut into smaller batches, so one long sentence no longer pads 31 others to its length. The
  work of one forward pass stays about constant, which also bounds its memory. Both together: 99 % real tokens.

docs/measurements.md ("probe encoding speed") has the measurement.
"""

from __future__ import annotations


def length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices of the inputs, grouped into batches: ascending subword count (stable: ties keep the input order),
    each batch at most ``batch_size`` inputs and at most ``batch_size`` x median(lengths) padded tokens (a batch
    always takes its first input, however long)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, found {batch_size}")
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    if not order:
        return []
    middle = len(order) // 2
    median = lengths[order[middle]] if len(order) % 2 else (lengths[order[middle - 1]] + lengths[order[middle]]) / 2
    budget = batch_size * max(1.0, median)
    batches: list[list[int]] = [[]]
    for i in order:  # ascending: the input being added is the batch's longest
        current = batches[-1]
        if current and (len(current) == batch_size or (len(current) + 1) * lengths[i] > budget):
            batches.append(current := [])
        current.append(i)
    return batches
