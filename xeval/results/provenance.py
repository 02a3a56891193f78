"""What every result records about where it came from: versions, git commit, content hashes."""

from __future__ import annotations

import platform
import subprocess
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from xeval._version import __version__

_TRACKED_PACKAGES = ("torch", "transformers", "datasets", "tokenizers", "numpy", "faiss-cpu", "pot", "seqeval")


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    found = {"xeval": __version__, "python": platform.python_version()}
    for name in _TRACKED_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the xeval checkout (with ``-dirty`` when it has local changes), or None outside git."""
    repo = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "") if commit else None


def timestamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")  # orders reruns within a second



