"""Line-level text input shared by the readers: gzip-aware, UTF-8 checked per line, CRLF tolerant.

Files are read as bytes and decoded one line at a time, so a bad byte becomes a ``DataError`` naming its line
instead of a ``UnicodeDecodeError`` with a byte offset. Line numbers are 1-based.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

from xeval.base.errors import DataError


def _open_binary(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return path.open("rb")


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with the line end (``\\n`` or ``\\r\\n``) removed and a leading BOM dropped."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "expected a readable file, found none")
    number = 0
    try:
        with _open_binary(path) as handle:
            for number, raw in enumerate(handle, 1):  # noqa: B007 (number is reported on a gzip error below)
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise DataError(
                        path,
                        number,
                        f"expected UTF-8 text, found byte {raw[err.start]:#04x} at column {err.start + 1}",
                    ) from None
                if number == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                if "\x00" in text:
                    raise DataError(path, number, f"expected text, found a NUL byte at column {text.index(chr(0)) + 1}")
                yield number, text
    except (OSError, EOFError, zlib.error) as err:  # truncated or corrupt gzip stream
        raise DataError(
            path,
            number + 1,
            f"expected a readable {'gzip ' if path.suffix == '.gz' else ''}file, found {err}",
        ) from None


def count_lines(path: str | Path) -> int:
    """Number of lines (a final line without ``\\n`` counts): for error messages about unequal files."""
    count = 0
    for count, _ in iter_lines(path):  # noqa: B007
        pass
    return count
