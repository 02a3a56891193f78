"""The encoding cache: hidden states of a frozen encoder on disk, so a rerun with another head, another layer rule
or another probe option does not encode the same inputs again.

One cache serves everything that encodes through it: the alignment probes' pooled sentence vectors
(``xeval.adapters.probes.base.sentence_vectors``) and the frozen-encoder mode of the fine-tuning tasks
(``xeval.adapters.transfer.probe_mode``: first-subword word vectors, pooled pair vectors, QA token vectors).

An entry is one layer of one encoding: ``<root>/<model>/<spec>.L<k>.npy`` where

- ``<model>`` is the encoder's ``cache_key``: the sha256 of its weight files (or of its in-memory weights, for a
  random-init control) joined with a fingerprint of its tokenizer;
- ``<spec>`` is the sha256 of everything else that decides the vectors: what is read out (``kind``: pooling,
  positions), the inputs themselves (token ids, or the texts with the max length), the storage dtype.

So a changed model, tokenizer, data file, max length or pooling is a different entry (a miss), never a stale hit.
Files are written atomically (temp file, then rename) and read with ``allow_pickle=False``. ``root=None`` disables
the cache (``xeval run --no-cache``); the default root is ``$XEVAL_CACHE`` or ``<run folder>/cache`` (none for a
run kept in memory).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from xeval.base.hashing import hash_json


class EncodingCache:
    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root else None
        self.hits = 0  # layer entries read from disk (what tests and the run log look at)
        self.misses = 0  # layer entries computed (and written, when enabled)

    @classmethod
    def default(cls, out: str | Path | None, disabled: bool = False) -> EncodingCache:
        """The run's cache: off under ``--no-cache``, else ``$XEVAL_CACHE``, else ``<out>/cache``."""
        if disabled:
            return cls(None)
        if os.environ.get("XEVAL_CACHE"):
            return cls(os.environ["XEVAL_CACHE"])
        return cls(None if out is None else Path(out) / "cache")  # a run kept in memory writes no cache either

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def path(self, model_key: str, spec: dict, layer: int) -> Path:
        assert self.root is not None
        return self.root / model_key[:40] / f"{hash_json(spec)[:32]}.L{int(layer)}.npy"

    def layers(self, model_key: str, spec: dict, layers: list[int],
               compute: Callable[[list[int]], np.ndarray]) -> np.ndarray:
        """[len(layers), ...] for ``layers``: read what is stored, compute the rest in ONE call of
        ``compute(missing_layers) -> [len(missing), ...]`` (one forward pass), store it, return all in order."""
        layers = list(layers)
        if not self.enabled:
            self.misses += len(layers)
            return compute(layers)
        paths = {layer: self.path(model_key, spec, layer) for layer in layers}
        missing = [layer for layer in layers if not paths[layer].is_file()]
        fresh = compute(missing) if missing else None
        parts = []
        for layer in layers:
            if layer in missing:
                array = fresh[missing.index(layer)]
                _save(paths[layer], array)
                self.misses += 1
            else:
                array = np.load(paths[layer], allow_pickle=False)
                self.hits += 1
            parts.append(array)
        return np.stack(parts) if parts else np.zeros((0,), dtype=np.float32)

    def describe(self) -> str:
        return f"encoding cache {self.root}" if self.enabled else "encoding cache off"


def _save(path: Path, array: np.ndarray) -> None:
    from xeval.base.atomic import atomic_path

    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
