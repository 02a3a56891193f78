"""Reading a whole user file as UTF-8 text or JSON, so a bad byte or bad JSON is a ``DataError`` naming the file and
its line (never a ``UnicodeDecodeError`` with a byte offset). A leading BOM is accepted everywhere."""

from __future__ import annotations

import json
from pathlib import Path

from xeval.base.errors import DataError


def read_utf8(path: str | Path, what: str = "text") -> str:
    """The file's text (a leading BOM dropped); a DataError naming the line of the first byte that is not UTF-8."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DataError(path, None, f"expected a readable file, found {err.strerror or err}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise DataError(path, line, f"expected UTF-8 {what}, found byte {raw[err.start]:#04x} at offset "
                                    f"{err.start}") from None


def read_json(path: str | Path, what: str = "JSON") -> tuple[object, str]:
    """(parsed JSON, raw text); a DataError with the line and column of a syntax error."""
    text = read_utf8(path, what)
    try:
        return json.loads(text), text
    except json.JSONDecodeError as err:
        raise DataError(path, err.lineno, f"expected {what}, found invalid JSON ({err.msg}, column {err.colno})") from None


def line_of(text: str, needle: str) -> int | None:
    """1-based line of the first ``needle`` in ``text``; None when absent."""
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else None
