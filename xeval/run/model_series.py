"""``--model`` as a series: a glob (``ckpt/steps/*``) or a folder of checkpoints (an engine run's ``steps/``) names
several models, each evaluated under its own model key."""

from __future__ import annotations

import glob
from pathlib import Path

from xeval.base.errors import UserError

GLOB_CHARS = set("*?[")


def expand_models(spec: str) -> list[str]:
    """``--model``: one model, or the checkpoints of a series -- a glob (``ckpt/steps/*``) or a folder without a
    ``config.json`` of its own whose subfolders have one (an engine run's ``steps/``) -- sorted by name (the
    series' ``step-NNNNNNN`` names sort by step). A glob or folder that names no checkpoint is one line, exit 2."""
    if GLOB_CHARS & set(spec):
        hits = sorted(p for p in glob.glob(spec) if (Path(p) / "config.json").is_file())
        if not hits:
            raise UserError(f"--model {spec}: the pattern matches no checkpoint folder (one with a config.json)")
        return hits
    folder = Path(spec)
    if folder.is_dir() and not (folder / "config.json").is_file():
        hits = sorted(str(p) for p in folder.iterdir()
                      if not p.name.startswith(".") and (p / "config.json").is_file())  # not a write under way
        if hits:
            return hits
    return [spec]
