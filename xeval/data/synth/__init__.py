"""Controlled synthetic languages: a small multilingual world, generated deterministically from one seed.

One grammar and one lexicon (parts of speech, named entities) underlie every language; derived languages differ
from the base language ``qaa`` in vocabulary overlap (0 = disjoint scripts), word order (SVO / SOV / VSO,
adjective before / after the noun) and morphology (plural and accusative suffixes). The world is written in the
formats of the real data (XTREME tsv, SQuAD JSON, Tatoeba, word-alignment gold, MUSE dictionaries, gzipped
corpora), so the same readers, cards and adapters evaluate it. See ``generate_world``.

Research use: the knobs isolate what makes cross-lingual transfer work, as in K et al. (ICLR 2020) and Dufter &
Schuetze (EMNLP 2020).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from xeval.base import atomic
from xeval.base.errors import UserError
from xeval.data.synth.card_files import card_files
from xeval.data.synth.task_files import all_files
from xeval.data.synth.world import Sizes, World, WorldConfig, build_world

SYNTH_FORMAT = 1  # bump whenever the same config would give different bytes
MANIFEST = "world.json"

__all__ = ["MANIFEST", "SYNTH_FORMAT", "Sizes", "World", "WorldConfig", "build_world", "generate_world",
           "world_files"]  # fmt: skip


def world_files(config: WorldConfig) -> tuple[World, dict[str, bytes]]:
    """The world and every file of it (relative path -> bytes), the manifest included; nothing is written."""
    world = build_world(config)
    files = all_files(world)
    files.update({f"tasks/{path}": text.encode("utf-8") for path, text in card_files(world).items()})
    files[MANIFEST] = _manifest(world, files)
    return world, files


def generate_world(out: str | Path, config: WorldConfig, force: bool = False) -> dict:
    """Write the world under ``out`` (each file atomically, the manifest last) and return the manifest.

    ``out`` must be empty, missing, or an earlier world (a folder with ``world.json``); files that the earlier
    world listed and this one does not are removed. ``force`` allows any other folder.
    """
    out = Path(out)
    old = _previous_files(out, force)
    _, files = world_files(config)
    for rel in sorted(files):
        if rel != MANIFEST:
            _write_bytes(out / rel, files[rel])
    for rel in sorted(old - set(files)):
        (out / rel).unlink(missing_ok=True)
    _write_bytes(out / MANIFEST, files[MANIFEST])
    return json.loads(files[MANIFEST])


def _write_bytes(path: Path, data: bytes) -> None:
    with atomic.atomic_path(path) as tmp:
        tmp.write_bytes(data)


def _previous_files(out: Path, force: bool) -> set[str]:
    if not out.exists():
        return set()
    if not out.is_dir():
        raise UserError(f"{out}: expected a folder for the synthetic world, found a file")
    manifest = out / MANIFEST
    if manifest.is_file():
        try:
            listed = json.loads(manifest.read_text(encoding="utf-8"))["files"]
            return {item["path"] for item in listed if ".." not in Path(item["path"]).parts}
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{manifest}: expected a synthetic world manifest, found something else") from None
    if any(out.iterdir()) and not force:
        raise UserError(f"{out}: folder is not empty and holds no {MANIFEST}; pick a new folder or pass --force")
    return set()


def _manifest(world: World, files: dict[str, bytes]) -> bytes:
    config = world.config
    languages = []
    for lang in world.languages:
        languages.append({
            "code": lang.code,
            "role": "base" if lang is world.base else "derived",
            "script": lang.script.name,
            "order": lang.order,
            "adjective": lang.adj,
            "adposition": "postposition" if lang.order == "SOV" else "preposition",
            "morphology": lang.morph,
            "suffixes": {"plural": lang.forms["suf:000.0"] if lang.marks_plural else None,
                         "accusative": lang.forms["suf:001.0"] if lang.marks_case else None},
            "lexemes": len(lang.forms),
            "shared_with_base": len(lang.shared),
            "overlap": round(len(lang.shared) / len(lang.forms), 4),
        })  # fmt: skip
    manifest = {
        "generator": "xeval.data.synth",
        "format": SYNTH_FORMAT,
        "seed": config.seed,
        "parameters": config.as_json(),
        "base": world.base.code,
        "languages": languages,
        "lexicon": {"lexemes": len(world.keys), "concepts": len(world.variants)},
        "files": [
            {"path": rel, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for rel, data in sorted(files.items())
        ],
    }
    return (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
