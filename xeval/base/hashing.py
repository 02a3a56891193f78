"""Content hashes of JSON-able specifications and of files: the identities results, caches and cards are keyed on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def hash_json(obj) -> str:
    """sha256 of a canonical JSON rendering (sorted keys): stable across runs and machines."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_files(paths, chunk: int = 1 << 20) -> str:
    """sha256 over the names and bytes of files, in the given order (used for model weights)."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path)
        digest.update(path.name.encode("utf-8") + b"\0")
        with path.open("rb") as handle:
            while block := handle.read(chunk):
                digest.update(block)
    return digest.hexdigest()
