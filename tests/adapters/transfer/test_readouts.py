"""What --mode probe reads out of the frozen encoder (xeval.adapters.transfer.readouts) through the encoding cache
it shares with the alignment probes."""

from __future__ import annotations

import numpy as np
import pytest


def test_encoding_cache_hit_on_rerun_and_invalidated_by_model_or_data(tiny_encoder, tmp_path, monkeypatch):
    from xeval.adapters.context import RunContext
    from xeval.adapters.transfer import readouts
    from xeval.models.encoder import Encoder
    from xeval.models.encoding_cache import EncodingCache

    cache = EncodingCache(tmp_path / "cache")
    ctx = RunContext(encoder=tiny_encoder, data=None, store=None, cache=cache)
    ids = tiny_encoder.tokenizer(["the dog sleeps", "a cat"])["input_ids"]
    feats = [{"input_ids": i, "attention_mask": [1] * len(i)} for i in ids]
    first = readouts.cached_rows(ctx, feats, [0, 2], "mean", np.float32)
    assert (cache.hits, cache.misses) == (0, 2) and len(list((tmp_path / "cache").rglob("*.npy"))) == 2

    real = readouts.hidden_rows
    monkeypatch.setattr(readouts, "hidden_rows", lambda *a, **k: pytest.fail("re-encoded a cached input"))
    again = readouts.cached_rows(ctx, feats, [2, 0], "mean", np.float32)
    assert np.array_equal(again, first[::-1]) and cache.hits == 2
    calls = []
    monkeypatch.setattr(readouts, "hidden_rows", lambda *a, **k: calls.append(a[2]) or real(*a, **k))

    readouts.cached_rows(ctx, feats[:1], [0], "mean", np.float32)  # other data
    twin = RunContext(encoder=Encoder.random_init(tiny_encoder, seed=7), data=None, store=None, cache=cache)
    other_model = readouts.cached_rows(twin, feats, [0, 2], "mean", np.float32)  # other model
    readouts.cached_rows(ctx, feats, [0], "cls", np.float32)  # other readout
    assert calls == [[0], [0, 2], [0]]
    assert not np.array_equal(other_model, first)
    assert np.array_equal(readouts.cached_rows(ctx, feats, [0, 2], "mean", np.float32), first)  # still stored

    off = EncodingCache(None)  # --no-cache: computes, writes nothing
    readouts.cached_rows(RunContext(encoder=tiny_encoder, data=None, store=None, cache=off), feats, [0], "mean",
                         np.float32)
    assert off.misses == 1 and len(list((tmp_path / "cache").rglob("*.npy"))) == 6


def test_cache_key_ignores_the_tokenizers_truncation_state(tiny_encoder):
    """A call with truncation=True changes the fast tokenizer's serialised state; the cache key must not follow."""
    from xeval.models.encoder import Encoder

    fresh = Encoder(tiny_encoder.spec)
    before = fresh.cache_key
    fresh._cache_key = None
    fresh.tokenizer(["a b c d e f"], truncation=True, max_length=3)
    assert fresh.cache_key == before
