"""What a sentence-transformers folder's Pooling module says about pooling (``modules.json`` -> the module's
``config.json``), read in one place for the probes (``xeval.models.sentence_modules``, which pool as the model was
trained) and the engine (``xeval.engine.hf_init``, which warns when a sentence objective pools otherwise than its
init model). Both the current key (``pooling_mode``: a name or a list) and the older booleans are read."""

from __future__ import annotations

import json
from pathlib import Path

LEGACY_MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean",
                "pooling_mode_max_tokens": "max", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}


def pooling_modes(config: dict) -> list[str]:
    """The modes a Pooling config names, in sentence-transformers' order (several are concatenated); [] for none."""
    modes = config.get("pooling_mode")
    if modes is None:
        modes = [mode for key, mode in LEGACY_MODES.items() if config.get(key)]
    return [modes] if isinstance(modes, str) else [str(m) for m in modes or []]


def pooling_config(root: Path) -> dict | None:
    """The Pooling module's config of a sentence-transformers folder; None for another folder or an unreadable one."""
    try:
        entries = json.loads((Path(root) / "modules.json").read_text(encoding="utf-8"))
        folder = next(Path(root) / e["path"] for e in entries
                      if str(e.get("type", "")).rsplit(".", 1)[-1] == "Pooling")
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, StopIteration, KeyError, TypeError, AttributeError):
        return None
    return config if isinstance(config, dict) else None
