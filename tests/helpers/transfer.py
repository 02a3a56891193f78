"""Shared fixtures for the transfer tests: a tiny BERT whose WordPiece vocabulary is trained on a few hundred
real lines (English POS sentences, XNLI premises in several scripts, Chinese and Thai XQuAD text), so subword
splits look like a real multilingual model's, and small cards built from the shipped task cards."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.conftest import require_file
from tests.helpers.tiny import make_tiny_bert


def real_lines(root: Path) -> list[str]:
    lines: list[str] = []
    words: list[str] = []
    for line in require_file(root, "udpos_xtreme/train-en.tsv").read_text(encoding="utf-8").splitlines()[:6000]:
        if line.strip():
            words.append(line.split("\t")[0])
        elif words:
            lines.append(" ".join(words))
            words = []
    for lang in ("de", "zh", "th", "ar", "ru", "es"):
        path = require_file(root, f"xnli_xtreme/dev-{lang}.tsv")
        lines += [row.split("\t")[0] for row in path.read_text(encoding="utf-8").splitlines()[:60:3]]
    for lang in ("zh", "th"):
        data = json.loads(require_file(root, f"xquad/xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
        lines += [p["context"] for p in data[0]["paragraphs"][:10]]
    return lines


_MODEL: dict[str, Path] = {}


def tiny_model(data_root: Path) -> Path:
    """A local tiny BERT folder (2 layers x 32, max 128 positions, WordPiece vocabulary of 1,000), built once per
    test process and shared by every test module that asks for it."""
    if "path" not in _MODEL:
        folder = Path(tempfile.mkdtemp(prefix="xeval-tiny-transfer-")) / "tiny"
        _MODEL["path"] = make_tiny_bert(folder, texts=real_lines(data_root), vocab_size=1000)
    return _MODEL["path"]


def tiny_encoder(data_root: Path):
    from xeval.models.encoder import Encoder

    return Encoder(tiny_model(data_root))


# Fast recipe overrides for tests: a handful of examples, one short epoch.
FAST = {"max_train": 64, "max_dev": 16, "max_eval": 16, "epochs": 1, "batch_size": 16, "learning_rate": 1e-3}


def context(encoder, data_root, out: Path, seeds=(1,), recipe=None, max_eval=None, **settings):
    """A RunContext as ``xeval run`` builds one: ``recipe`` over ``FAST`` typed like the command line's overrides
    (``max_eval`` there is the fine-tuning recipe's; ``max_eval=`` limits the probes too); ``settings`` are
    RunContext fields (setting, mode, compat, shots, export_dir, export_labels)."""
    from dataclasses import replace

    from xeval.adapters.context import RunContext
    from xeval.data.sources import DataRoot
    from xeval.results.store import Store
    from xeval.run.options import task_options

    tasks = replace(task_options({**FAST, **(recipe or {})}), max_eval=max_eval)
    if "shots" in settings:
        settings["shots"] = tuple(settings["shots"])
    return RunContext(encoder=encoder, data=DataRoot.resolve(str(data_root)), store=Store(out), seeds=list(seeds),
                      tasks=tasks, **settings)
