"""What ``--export-predictions DIR`` / ``--export-labels DIR`` write besides XTREME's fixed files.

- **File names** follow the split: ``<task>/test-<lang>.<tsv|json>`` for a test split, as XTREME's submission layout
  wants, and ``<task>/<split>-<lang>...`` for any other split, so a language scored on dev (xtreme-mini's
  substitutions) is never passed off as a test submission (``xeval score`` reads ``test-`` files only).
- **A JSON-lines sidecar** beside each prediction file, ``<task>/<split>-<lang>.jsonl``: one line per example,
  ``{"id", "input", "gold", "prediction", "correct"}`` from the unit's stored per-example outcomes
  (``xeval.results.outcomes``; ``input``: the example's text, in units stored since outcomes keep it),
  where XTREME's own layout has only predictions in a fixed order. ``correct`` is the example's headline outcome:
  the label (classification), exact match (QA), every tag (tagging), the top-1 en→xx retrieval (Tatoeba). Units
  without outcomes (label-free test files, BUCC) get no sidecar.
- **A manifest** per task folder, ``<task>/xeval-manifest.json``: for each exported file the run that wrote it
  (model key, run hash, the unit's config hash, seed, layer, mode, compat), merged on each export. Exporting a second
  run into the same folder replaces only that run's languages, so ``xeval score`` refuses a task folder whose files
  come from different models, run configurations or seeds (``check_manifest``). The unit's config hash differs per
  language (it hashes the evaluation data), so the comparison uses the run hash: the run-wide options that decide
  numbers (recipe overrides, setting, mode, compat, ...), the layers asked for and the encoder's settings.
  Each entry also holds the file's SHA-256 when it was exported: a listed file edited or replaced since, or a file
  the manifest does not list (copied in from elsewhere), makes ``xeval score`` refuse the folder rather than score a
  mixture under the run's name; an entry without its SHA-256 counts as unlisted (nothing says the file is the one
  exported). A folder assembled by hand on purpose is scored once its manifest is deleted. The manifest's
  read-merge-write holds an OS lock on the task folder (``xeval.base.atomic.locked_folder``; no lock file is left
  in the submission), so workers exporting into one folder at once (shards, torchrun ranks) never drop each
  other's entries.
- ``--export-predictions`` and ``--export-labels`` must name two separate folders (neither inside the other): gold
  and predictions share file names, so one would overwrite the other (``check_export_folders``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from xeval.base.atomic import locked_folder, write_json, write_text
from xeval.base.errors import DataError, UserError
from xeval.base.hashing import hash_json
from xeval.base.textfile import read_json
from xeval.results.identity import HASH_LENGTH, METRIC_VERSION
from xeval.results.store import slug

MANIFEST = "xeval-manifest.json"
_MANIFEST_SCHEMA = "xeval.export-manifest/1"
# what must agree between the files of one task folder (layer, mode and compat are recorded; a sweep's chosen
# layer may differ per language by design, and mode and compat are already in the run hash)
_SAME_RUN = ("model", "run_hash", "seed")

# the per-example statistic that says "this example is right", per headline metric ("mean" aggregates: 100 or 0)
_CORRECT = ("exact_match", "accuracy", "accuracy_en_xx")


def export_name(split: str, lang: str, suffix: str) -> str:
    """``test-de.tsv`` for the test split, ``dev-de.tsv`` for dev (XTREME's layout names test files only)."""
    return f"{slug(split)}-{slug(lang)}.{suffix}"


def renamed_for_split(name: str, split: str) -> str:
    """An adapter's ``test-<lang>...`` file name under the split it really holds."""
    return f"{split}-{name[len('test-'):]}" if name.startswith("test-") and split != "test" else name


def sidecar_text(outcomes) -> str | None:
    """The JSON-lines sidecar of a unit's outcomes (None without outcomes)."""
    if outcomes is None:
        return None
    correct = _correct(outcomes)
    inputs = getattr(outcomes, "inputs", None)
    lines = []
    for i, (ident, gold, prediction) in enumerate(zip(outcomes.ids, outcomes.gold, outcomes.prediction)):
        line = {"id": ident, **({"input": inputs[i]} if inputs is not None else {}), "gold": gold,
                "prediction": prediction, "correct": None if correct is None else bool(correct[i])}
        lines.append(json.dumps(line, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def _correct(outcomes) -> list[bool] | None:
    for name in _CORRECT:
        metric = outcomes.metrics.get(name)
        if metric is not None and metric.aggregate == "mean":
            return [float(v) >= 100.0 - 1e-9 for v in metric.stats["score"]]
    if any(m.aggregate == "f1" for m in outcomes.metrics.values()):  # tagging: the whole sentence right
        return [list(g) == list(p) for g, p in zip(outcomes.gold, outcomes.prediction)]
    return None


def write_sidecar(path: str | Path, outcomes) -> Path | None:
    """``<path without suffix>.jsonl`` beside an exported prediction file."""
    text = sidecar_text(outcomes)
    if text is None:
        return None
    target = Path(path).with_suffix(".jsonl")
    write_text(target, text)
    return target


def run_hash(ctx) -> str:
    """12 hex naming a run's number-deciding run-wide inputs, the same for every language of the run."""
    options = {**ctx.identity_options(), "recipe": {**ctx.tasks.probe, **ctx.tasks.recipe}}
    settings = getattr(ctx.encoder, "settings", None)
    spec = {"options": options, "layers": ctx.layers, "encoder": settings() if callable(settings) else {},
            "metric_version": METRIC_VERSION}
    return hash_json(spec)[:HASH_LENGTH]


def provenance_entry(ctx, unit) -> dict:
    """One exported file's manifest entry."""
    return {"model": unit.model, "run_hash": run_hash(ctx), "config_hash": unit.config_hash, "seed": unit.seed,
            "layer": unit.layer, "mode": unit.mode, "compat": ctx.compat}


def read_manifest(folder: str | Path) -> dict[str, dict] | None:
    """``{file name: entry}`` of a task folder's manifest, None where the folder has none."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    body, _ = read_json(path, MANIFEST)
    files = body.get("files") if isinstance(body, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise DataError(path, None, f'expected {{"schema": "{_MANIFEST_SCHEMA}", "files": {{name: entry}}}}')
    return files


def record_exports(folder: str | Path, entries: dict[str, dict]) -> None:
    """Merge ``{file name: entry}`` into the task folder's manifest (written atomically)."""
    if not entries:
        return
    # the bytes as exported (files are written before they are recorded): check_manifest compares them
    entries = {name: {**entry, "sha256": _sha256(Path(folder) / name)} if (Path(folder) / name).is_file() else entry
               for name, entry in entries.items()}
    with locked_folder(folder):  # another worker's merge must not be lost between our read and write
        files = {**(read_manifest(folder) or {}), **entries}
        write_json(Path(folder) / MANIFEST, {"schema": _MANIFEST_SCHEMA, "files": dict(sorted(files.items()))})


def check_export_folders(predictions: str | Path | None, labels: str | Path | None) -> None:
    """``--export-predictions`` and ``--export-labels`` in two separate folders: the same file names inside, so in
    one folder (or one inside the other) gold would replace predictions or the reverse."""
    if not predictions or not labels:
        return
    a, b = Path(predictions).resolve(), Path(labels).resolve()
    if a == b or a in b.parents or b in a.parents:
        how = "the same folder" if a == b else "one folder inside the other"
        raise UserError(f"--export-predictions {predictions} and --export-labels {labels} name {how}: gold and "
                        "predictions share file names and would overwrite each other; give two separate folders")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _describe(entry: dict) -> str:
    return f"model {entry.get('model')}, run {entry.get('run_hash')}, seed {entry.get('seed')}"


def check_manifest(folder: str | Path, names: list[str]) -> None:
    """A task folder's files ``names`` must come from one run, unchanged since xeval exported them, where the folder
    has a manifest (a folder without one, from another tool or assembled by hand, is not checked). Every failure is
    an error, never a warning: a mixed folder would score under the wrong run's name."""
    files = read_manifest(folder)
    if files is None:
        return
    first: tuple[str, dict] | None = None
    for name in names:
        entry = files.get(name)
        if entry is None:
            raise UserError(
                f"{Path(folder) / name}: not in {Path(folder) / MANIFEST}, so not from the run that exported this "
                f"folder; export the task from one run into an empty folder, or delete {MANIFEST} to score files "
                "assembled by hand")
        digest = entry.get("sha256")
        if not isinstance(digest, str):
            raise UserError(
                f"{Path(folder) / name}: listed in {Path(folder) / MANIFEST} without its SHA-256, so nothing says it is "
                "the file the run exported; export again, or delete the manifest to score files assembled by hand")
        if _sha256(Path(folder) / name) != digest:
            raise UserError(
                f"{Path(folder) / name}: changed since xeval exported it ({_describe(entry)}; SHA-256 differs from "
                f"{MANIFEST}); export again, or delete {MANIFEST} to score files edited by hand")
        if first is None:
            first = (name, entry)
        elif any(entry.get(k) != first[1].get(k) for k in _SAME_RUN):
            raise UserError(
                f"{folder}: predictions from two runs: {first[0]} ({_describe(first[1])}) and {name} "
                f"({_describe(entry)}); export the task from one run into an empty folder")
