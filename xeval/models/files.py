"""Checks of a local model folder before transformers reads it, so a broken folder is one clear line naming the file
instead of a traceback (or, worse, a silent substitute):

- ``config.json`` must be a UTF-8 JSON object whose sizes are positive integers (a JSON list or ``"six"`` layers
  otherwise fails deep inside transformers);
- a tokenizer must be there: without one, transformers builds a 5-token ``BertTokenizer`` from the config alone,
  every word becomes ``[UNK]`` and the numbers are stored as if nothing were wrong;
- every ``*.safetensors`` file must hold its whole header and every tensor the header announces (a truncated
  download otherwise surfaces as "incomplete metadata").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from xeval.base.errors import DataError, UserError
from xeval.base.safe_files import check_safetensors
from xeval.base.textfile import line_of, read_json

# Any one of these is a tokenizer transformers can build a fast tokenizer from.
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model", "spiece.model",
                   "tokenizer.model", "sentencepiece.model")
_SIZES = ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size", "intermediate_size",
          "max_position_embeddings")


# A hub repository id: "name" or "org/name" (what is neither, and is no folder, is a missing local path).
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def locate_model(spec: str) -> Path | None:
    """The local folder ``spec`` names, or None for a hub id; one line when it is neither, or a folder without
    ``config.json``. Reads no file, so ``xeval run`` checks the model this way before it looks for the data (a
    mistyped model folder is reported as such on a machine without the data, too)."""
    local = Path(spec).expanduser()
    if not local.exists():
        if not HUB_ID.fullmatch(spec):
            raise UserError(f"{spec}: no such model folder (and not a hub id like 'org/name')")
        return None
    if not (local / "config.json").is_file():
        raise UserError(f"{local}: expected a model directory with config.json, found none")
    return local


def check_model_folder(folder: Path) -> None:
    read_config(folder / "config.json")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise DataError(folder, None, f"expected tokenizer files in the model folder (one of "
                                      f"{', '.join(TOKENIZER_FILES)}), found none")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (folder / name).is_file():
            read_json(folder / name, f"{name} (JSON)")  # a broken one is named with its line, not "cannot load"
    for path in sorted(folder.glob("*.safetensors")):
        check_safetensors(path)


def unfinished_run(folder: Path) -> str | None:
    """A warning when ``folder`` is an engine run that has not finished: its ``xeval_pretrain.json`` says
    ``finished`` only at the end, while ``model.safetensors`` is rewritten at every save -- so a run still training,
    or one stopped before its end (``train.stop_after``), loads as the weights of its last save. A member of the
    checkpoint series (``steps/step-N``, the card has ``step``) is a finished export and gets no warning."""
    card = folder / "xeval_pretrain.json"
    if not card.is_file():
        return None
    try:
        obj = json.loads(card.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # the engine's own loaders name a broken card where they read it
    if not isinstance(obj, dict) or "step" in obj or obj.get("finished") is True:
        return None
    if "finished" not in obj and obj.get("last"):
        return None  # a card written before ``finished`` existed: its last step's statistics mark the end
    return (f"{folder}: its pre-training has not finished (xeval_pretrain.json: still training, or stopped before "
            "its end): these are the weights of its last save")


def read_config(path: Path) -> dict:
    """config.json as a dict; a DataError naming the line when it is no JSON object or a size is not an integer."""
    obj, text = read_json(path, "a JSON object of model settings")
    if not isinstance(obj, dict):
        raise DataError(path, 1, f"expected a JSON object of model settings, found a JSON {type(obj).__name__}")
    for key in _SIZES:
        value = obj.get(key)
        if key in obj and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise DataError(path, line_of(text, json.dumps(key)) or 1, f"expected a positive integer for {key!r}, found {value!r}")
    return obj


