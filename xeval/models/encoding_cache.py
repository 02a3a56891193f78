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
run kept in memory). A root that is a file (or lies under one) is a ``UserError`` when the cache is made, before
anything is encoded.

Nothing read from the cache is trusted unchecked: each entry has a sidecar ``<entry>.npy.meta`` (JSON) written after it
with the array's SHA-256 (of its dtype, shape and bytes), shape, dtype and whether every value is finite. A read
checks all four; an entry that fails (replaced by another array of the same shape, zeros, NaN, truncated, another
shape, no sidecar) is recomputed and rewritten, and one warning per call names the entries and why, so a poisoned
cache never changes a number.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from xeval.base.console import log
from xeval.base.errors import UserError
from xeval.base.hashing import hash_json

META_SUFFIX = ".meta"  # <entry>.npy.meta (JSON; not .json, which the store globs for records): the entry's checksum, shape, dtype and finiteness


class EncodingCache:
    def __init__(self, root: str | Path | None, what: str = "encoding cache"):
        self.root = Path(root) if root else None
        if self.root is not None:
            _check_root(self.root, what)
        self.hits = 0  # layer entries read from disk (what tests and the run log look at)
        self.misses = 0  # layer entries computed (and written, when enabled)

    @classmethod
    def default(cls, out: str | Path | None, disabled: bool = False) -> EncodingCache:
        """The run's cache: off under ``--no-cache``, else ``$XEVAL_CACHE``, else ``<out>/cache``."""
        if disabled:
            return cls(None)
        if os.environ.get("XEVAL_CACHE"):
            return cls(os.environ["XEVAL_CACHE"], "$XEVAL_CACHE")
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
        stored, bad = {}, []
        for layer in layers:
            if paths[layer].is_file():
                array, problem = _load_checked(paths[layer])
                if problem is None:
                    stored[layer] = array
                else:
                    bad.append(f"{paths[layer]} ({problem})")
        shapes = {a.shape for a in stored.values()}
        if len(shapes) > 1:  # every layer of one encoding has one shape: the odd ones out are not this encoding
            common = max(shapes, key=lambda shape: sum(a.shape == shape for a in stored.values()))
            for layer in [k for k, a in stored.items() if a.shape != common]:
                bad.append(f"{paths[layer]} (shape {stored.pop(layer).shape}, the other layers {common})")
        if bad:
            log.warning(f"encoding cache: {len(bad)} bad entr{'y' if len(bad) == 1 else 'ies'} recomputed: "
                        + "; ".join(bad[:3]) + ("; ..." if len(bad) > 3 else ""))
        missing = [layer for layer in layers if layer not in stored]
        fresh = compute(missing) if missing else None
        parts = []
        for layer in layers:
            if layer in missing:
                array = fresh[missing.index(layer)]
                _save(paths[layer], array)
                self.misses += 1
            else:
                array = stored[layer]
                self.hits += 1
            parts.append(array)
        return np.stack(parts) if parts else np.zeros((0,), dtype=np.float32)

    def describe(self) -> str:
        return f"encoding cache {self.root}" if self.enabled else "encoding cache off"


def _check_root(root: Path, what: str) -> None:
    """The cache's root must be (or become) a folder: a file there would fail only after all the encoding."""
    for path in (root, *root.parents):
        if path.exists():
            if not path.is_dir():
                where = "is a file" if path == root else f"lies under {path}, which is a file"
                raise UserError(f"{root}: {what} expects a folder, but it {where}")
            return


def _checksum(array: np.ndarray) -> str:
    digest = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _describe(array: np.ndarray) -> dict:
    return {"sha256": _checksum(array), "shape": list(array.shape), "dtype": array.dtype.str,
            "finite": bool(np.isfinite(array).all()) if array.dtype.kind in "fc" else True}


def _load_checked(path: Path) -> tuple[np.ndarray | None, str | None]:
    """(array, None) for an entry that matches what was recorded when it was written, else (None, why not)."""
    meta_path = path.with_name(path.name + META_SUFFIX)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
            raise ValueError
    except (OSError, ValueError):
        return None, f"no readable {meta_path.name} recording its checksum"
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        return None, f"unreadable: {str(err)[:80]}"
    if list(array.shape) != meta.get("shape"):
        return None, f"shape {list(array.shape)}, written as {meta.get('shape')}"
    if array.dtype.str != meta.get("dtype"):
        return None, f"dtype {array.dtype.str}, written as {meta.get('dtype')}"
    described = _describe(array)
    if described["finite"] != meta.get("finite"):
        return None, "non-finite values that were not there when written"
    if described["sha256"] != meta["sha256"]:
        return None, "checksum differs from the one recorded when written"
    return array, None


def _save(path: Path, array: np.ndarray) -> None:
    """The entry, then its sidecar: an entry without a sidecar (a write cut short) is recomputed, never trusted."""
    from xeval.base.atomic import atomic_path, write_json

    array = np.ascontiguousarray(array)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            np.save(handle, array, allow_pickle=False)
    write_json(path.with_name(path.name + META_SUFFIX), _describe(array))
