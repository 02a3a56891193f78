"""Write files so that a crash never leaves a half-written result: temp file in the same folder, then rename."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; on success it is renamed over ``path``, on error removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; results should be as readable as any other
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def locked_folder(folder: str | Path):
    """Hold an exclusive OS lock on ``folder`` itself (``flock`` on the directory) while the block runs, so a
    read-merge-write of a file in it by several processes never loses one's update; nothing is left in the folder.
    The lock goes with the process (a killed writer never blocks the next)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX: a lock file beside the folder
        from filelock import FileLock

        with FileLock(str(folder.parent / f".{folder.name}.lock")):
            yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def check_output(path: str | Path, what: str, *, folder: bool) -> None:
    """Before any computing: ``path`` can be created as a folder (``folder``) or a file, and written. A UserError
    otherwise, so a bad ``--out`` fails in the first second instead of after the whole run."""
    from xeval.base.errors import UserError

    path = Path(path)
    if path.exists() and folder and not path.is_dir():
        raise UserError(f"{path}: {what} expects a folder, found a file there")
    if path.exists() and not folder and path.is_dir():
        raise UserError(f"{path}: {what} expects a file name, found a folder there")
    for name in (path.name, *(p.name for p in path.parents)):
        if len(name.encode("utf-8")) > 255:
            raise UserError(f"{path}: {what}: the name {name[:40]!r}... is longer than a file system allows "
                            f"(255 bytes)")
    # a file that exists is replaced (a rerun of report --out): what must be a writable folder is above it
    parent = next(p for p in ((path, *path.parents) if folder else path.parents) if p.exists())
    if not parent.is_dir():
        raise UserError(f"{path}: {what} lies under {parent}, which is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{path}: {what}: cannot write under {parent} (permission denied)")
