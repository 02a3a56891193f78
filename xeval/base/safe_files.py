"""A safetensors file checked before anything reads it: a truncated or foreign file is one clear line naming it."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from xeval.base.errors import DataError


def check_safetensors(path: Path) -> None:
    """The safetensors layout: 8-byte little-endian header length, a JSON header, then the tensor bytes."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            raise DataError(path, None, f"expected a safetensors file (8-byte header length), found {size} bytes")
        (length,) = struct.unpack("<Q", head)
        if length > size - 8:
            raise DataError(path, None, f"expected a {length}-byte header after byte 8, found a file of {size} bytes "
                                        f"(truncated download?)")
        try:
            header = json.loads(handle.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise DataError(path, None, "expected a JSON safetensors header, found unreadable bytes") from None
    if not isinstance(header, dict):
        raise DataError(path, None, "expected a JSON object as safetensors header")
    end = max((int(t["data_offsets"][1]) for k, t in header.items()
               if k != "__metadata__" and isinstance(t, dict) and "data_offsets" in t), default=0)
    if 8 + length + end > size:
        raise DataError(path, None, f"expected {8 + length + end} bytes (header and tensors), found {size} "
                                    f"(truncated file)")
