"""Result records and the on-disk store.

One record per unit = (model, task, language, split, seed, layer). A record is a JSON file:

    {
      "schema": "xeval.result/1",
      "unit":   {"model": "tiny-bert@3f2a9c1d0b7e", "task": "udpos", "lang": "de", "split": "test",
                 "seed": 1, "layer": null, "setting": "zero-shot", "mode": "finetune", "config_hash": "9f2c1ab0e4d1"},
      "metrics": {"f1": 71.3, "token_accuracy": 84.0},          # percentages, as XTREME reports them
      "n_examples": 977,
      "model":  {"id": "ckpt/tiny", "kind": "hf" | "engine", "hash": "<sha256 of weights>", "revision": null},
      "data":   {"layout": "shared" | "xtreme" | "hub", "root": "...", "files": [...], "revision": "...",
                 "subsample": {"n": 500, "seed": 0} | null},
      "card":   {"name": "udpos", "hash": "<sha256 of the task card>"},
      "config": {...},                                          # recipe and options that decide the number
      "provenance": {"versions": {...}, "git_commit": "...", "timestamp": "...", "duration_s": 12.3},
      "extra":  {...}                                           # anything task-specific (e.g. per-direction details)
    }

Fields in ``unit`` name the unit; everything else describes it. ``layer`` is None for fine-tuning tasks and
``hidden_states[k]``'s k for probes. ``mode`` is "finetune" (XTREME's protocol, and the alignment probes, which
train nothing) or "probe" (a fine-tuning task with the encoder frozen and a linear head on its features; never
averaged with fine-tuning numbers). ``config_hash`` (``xeval.results.identity``) hashes everything else that changes the
number: the resolved recipe or probe options, subsample sizes, the data files' hashes, the card, the setting and
run-wide options (e.g. compat mode), the encoder's settings (dtype, pooling) and the metric-code version. The model
key covers the weights, config and tokenizer files. The store lays records out as
``<out>/<model>/<task>/<lang>.<split>.s<seed>[.L<layer>][.<setting>][.probe]~<config_hash>.json`` and writes each
atomically, so an interrupted run leaves only whole records, a rerun skips what is already there (resume) unless
``overwrite``, and a rerun with other settings writes new records beside the old ones (``Store.recomputed`` counts
them). Records written before config hashes existed (``<...>.json``, no ``~hash``) are read as before, with a
one-line notice; a run never reuses them. Two files holding one unit are an error naming both (a stray copy such as
``de.test.s1.old.json`` must not silently win).
"""

from __future__ import annotations

import glob
import hashlib
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from xeval.base.atomic import write_json
from xeval.base.console import log
from xeval.base.errors import DataError, UserError
from xeval.base.textfile import read_json
from xeval.results import provenance
from xeval.results.outcomes import outcomes_path, read_outcomes, write_outcomes
from xeval.results.shards import check_runs

SCHEMA = "xeval.result/1"
PROBE_MODE = "probe"  # Unit.mode of the fine-tuning tasks run with the encoder frozen (xeval.adapters.transfer.probe_mode)


@dataclass(frozen=True)
class Unit:
    model: str  # a stable model key: "<name>@<first 12 hex of the content hash>"
    task: str
    lang: str
    split: str
    seed: int = 0
    layer: int | None = None
    setting: str = "zero-shot"
    config_hash: str | None = None  # xeval.results.identity.config_hash; None: a record written before config hashes
    mode: str = "finetune"  # "finetune" or "probe" (frozen encoder + linear head); records before it: finetune

    def stem(self) -> str:
        """The file name without the config hash: the same for every config of this unit."""
        layer = "" if self.layer is None else f".L{self.layer}"
        setting = "" if self.setting == "zero-shot" else f".{slug(self.setting)}"
        mode = "" if self.mode == "finetune" else f".{slug(self.mode)}"
        return f"{slug(self.lang)}.{slug(self.split)}.s{self.seed}{layer}{setting}{mode}"

    def filename(self) -> str:
        config = "" if self.config_hash is None else f"~{slug(self.config_hash)}"
        return f"{self.stem()}{config}.json"

    def cell(self) -> tuple:
        """The unit without its config hash: what a table cell (per seed) shows. Every other field counts, so a
        field added to the unit later separates cells too."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "config_hash")


@dataclass
class Record:
    unit: Unit
    metrics: dict[str, float]
    n_examples: int
    model: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    card: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    source: Path | None = field(default=None, repr=False, compare=False)  # the file it was read from (not stored)

    def to_json(self) -> dict:
        body = asdict(self)
        body.pop("source")
        return {"schema": SCHEMA, **body}

    def outcomes(self):
        """Its per-example outcomes (``xeval.results.outcomes``), or None: never stored, or a record not read from a
        file. ``UnboundOutcomes`` where the file beside it is not this record's (checked against the record as stored:
        reports relabel units in memory, e.g. the compat setting)."""
        if self.source is None:
            return None
        return read_outcomes(self.source, Store._load(self.source))

    @classmethod
    def from_json(cls, obj: dict, path: str | Path = "<record>", text: str = "") -> Record:
        if not isinstance(obj, dict):
            raise DataError(path, 1, f"expected a result record (a JSON object), found a JSON {type(obj).__name__}")
        if obj.get("schema") != SCHEMA:
            raise DataError(path, None, f"expected a result record with schema {SCHEMA!r}, found {obj.get('schema')!r}")
        _check_shape(obj, path, text)
        try:
            unit = Unit(**obj["unit"])
            return cls(
                unit=unit,
                metrics={k: float(v) for k, v in obj["metrics"].items()},
                n_examples=int(obj["n_examples"]),
                model=obj.get("model", {}),
                data=obj.get("data", {}),
                card=obj.get("card", {}),
                config=obj.get("config", {}),
                provenance=obj.get("provenance", {}),
                extra=obj.get("extra", {}),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise DataError(path, None, f"expected a complete result record, found a bad field ({err})") from None


_UNIT_TYPES = {"model": str, "task": str, "lang": str, "split": str, "seed": int, "layer": (int, type(None)),
               "setting": str, "config_hash": (str, type(None))}


def _check_shape(obj: dict, path, text: str = "") -> None:
    """Types of the fields a record is keyed and scored by, so a wrong one is named here (with its line in
    ``text``, the raw file), not met as a traceback in a report."""
    def fail(key: str, message: str):
        at = text.find(f'"{key}":')
        raise DataError(path, text.count("\n", 0, at) + 1 if at >= 0 else None, message)

    unit, metrics = obj.get("unit"), obj.get("metrics")
    if not isinstance(unit, dict):
        fail("unit", f"expected 'unit' to be an object, found {type(unit).__name__}")
    for key, kind in _UNIT_TYPES.items():
        if key in unit and (isinstance(unit[key], bool) or not isinstance(unit[key], kind)):
            fail(key, f"expected unit.{key} to be {getattr(kind, '__name__', 'an integer or null')}, "
                      f"found {unit[key]!r:.60}")
    if not isinstance(metrics, dict):
        fail("metrics", f"expected 'metrics' to map names to numbers, found {type(metrics).__name__}")
    for name, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            fail(name, f"expected metrics.{name} to be a number, found {value!r:.60}")
    if isinstance(obj.get("n_examples"), bool) or not isinstance(obj.get("n_examples"), int):
        fail("n_examples", f"expected n_examples to be an integer, found {obj.get('n_examples')!r:.60}")


_MAX_NAME = 120  # characters of a slug; file systems hold 255 bytes a name, and the store adds suffixes


def slug(text: str) -> str:
    """A file-name-safe form of ``text``; a long one keeps its start and gets a hash of the whole (names stay
    distinct and within what the file system holds)."""
    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", str(text)).strip("_") or "_"
    if slug in {".", ".."}:
        slug = slug.replace(".", "_")
    if len(slug) > _MAX_NAME:
        slug = f"{slug[:_MAX_NAME - 13]}-{hashlib.sha256(str(text).encode()).hexdigest()[:12]}"
    return slug


def stamp(duration_s: float | None = None) -> dict:
    """The provenance block every record carries."""
    out = {"versions": provenance.versions(), "git_commit": provenance.git_commit(), "timestamp": provenance.timestamp()}
    if duration_s is not None:
        out["duration_s"] = round(duration_s, 3)
    return out


class Store:
    """Result records under one folder (``--out``, default ``runs/``)."""
    def __init__(self, root: str | Path = "runs", overwrite: bool = False):
        self.root = Path(root)
        self.overwrite = overwrite
        self.written = 0  # records put by this object (xeval run's "N units computed")
        # units a run computes although the store holds the same unit under another config (or none):
        # {"config changed": n, "stored without a config hash": m}; see ``recomputed_summary``
        self.recomputed: dict[str, int] = {}

    def path(self, unit: Unit) -> Path:
        return self.root / slug(unit.model) / slug(unit.task) / unit.filename()

    def has(self, unit: Unit) -> bool:
        """True when the unit is stored under the same config and should be skipped (always False under
        ``overwrite``). A miss while the store holds the unit under another config counts in ``recomputed``."""
        if self.overwrite:
            return False
        path = self.path(unit)
        if path.is_file():
            return True
        stem = unit.stem()
        others = [p for p in path.parent.glob(f"{glob.escape(stem)}~*.json") if p != path]
        if others:
            self.recomputed["config changed"] = self.recomputed.get("config changed", 0) + 1
        elif (path.parent / f"{stem}.json").is_file():
            self.recomputed["stored without a config hash"] = \
                self.recomputed.get("stored without a config hash", 0) + 1
        return False

    def recomputed_summary(self) -> str | None:
        """"12 units recomputed: config changed (the old records stay beside the new ones)", or None."""
        if not self.recomputed:
            return None
        parts = [f"{n} unit{'s' * (n != 1)} recomputed: {why}" for why, n in self.recomputed.items()]
        return "; ".join(parts) + f" (the old records stay beside the new ones in {self.root})"

    def get(self, unit: Unit) -> Record | None:
        path = self.path(unit)
        return self._load(path) if path.is_file() else None

    def put(self, record: Record, outcomes=None) -> Path:
        """Write the record (and its per-example outcomes first, so a stored record never lacks the ones it had)."""
        path = self.path(record.unit)
        if outcomes is not None:
            write_outcomes(path, outcomes, record)
        else:
            outcomes_path(path).unlink(missing_ok=True)  # an overwritten record keeps no stale outcomes
        write_json(path, record.to_json())
        record.source = path
        self.written += 1
        return path

    def outcomes_of(self, unit: Unit):
        """The per-example outcomes stored with ``unit`` (``xeval.results.outcomes``), or None; checked against the
        unit's record (``Record.outcomes``)."""
        record = self.get(unit)
        return record.outcomes() if record is not None else None

    def records(self, **where) -> Iterator[Record]:
        """All stored records, optionally filtered on unit fields, e.g. ``records(task="udpos", seed=1)``.

        Two files that hold the same unit (config hash included) are a ``DataError`` naming both: a copy such as
        ``de.test.s1.old.json`` must not silently stand in for the record. Records without a config hash
        (written before xeval recorded one) are read as before, with a one-line notice on stderr."""
        seen: dict[Unit, Path] = {}
        legacy = 0
        for path in sorted(self.root.glob("*/*/*.json")):
            record = self._load(path)
            if record.unit in seen:
                raise DataError(path, None, f"holds the same result unit as {seen[record.unit]} "
                                            f"({_describe(record.unit)}); remove one of the two files")
            seen[record.unit] = path
            legacy += record.unit.config_hash is None
            if all(getattr(record.unit, k) == v for k, v in where.items()):
                yield record
        if legacy:
            log.info(f"note: {self.root}: {legacy} record{'s' * (legacy != 1)} without a config hash (written by an "
                     "older xeval) read as before; a rerun recomputes them beside the old files")

    @staticmethod
    def _load(path: Path) -> Record:
        obj, text = read_json(path, "a JSON result record")
        record = Record.from_json(obj, path, text)
        record.source = path
        return record


def _describe(unit: Unit) -> str:
    layer = "" if unit.layer is None else f" layer {unit.layer}"
    return f"{unit.model} {unit.task} {unit.lang} {unit.split} seed {unit.seed}{layer} {unit.setting}"


def load_records(paths, partial: bool = False) -> list[Record]:
    """Records from run folders and/or single record files (what ``report`` and ``compare`` take). The run folders
    must hold whole runs: a run split into shards (``xeval run --shard i/N``) of which some part never finished, or
    whose parts were run with other settings, is a UserError saying what is missing (``xeval.results.shards``);
    ``partial`` makes it a warning instead."""
    out: list[Record] = []
    folders = []
    for path in map(Path, paths):
        if path.is_dir():
            out.extend(Store(path).records())
            folders.append(path)
        elif path.is_file():
            out.append(Store._load(path))
        else:
            raise DataError(path, None, "expected a run folder or a result record, found nothing there")
    problems = check_runs(folders)
    if problems and not partial:
        raise UserError(problems[0] + (f" (and {len(problems) - 1} more run(s))" if len(problems) > 1 else "")
                        + "; run the missing parts with the same settings (xeval run ... --shard I/N), or pass "
                          "--partial to report what is there")
    for problem in problems:
        log.warning(f"note: {problem}")
    return out



