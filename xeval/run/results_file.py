"""``results.json``: one machine-readable summary per run (schema ``xeval.results/1``, documented in
``docs/results.md``), written atomically into the ``--out`` folder when the run ends.

It holds what a dashboard, a paper script or a tracker needs without reading the store: the command and its
settings, the models, versions and git commit, timings, every unit of the run with its metrics and headline metric,
and per (model, task, setting, split, layer) the headline metric's mean over seeds for each language and over the
languages. The per-unit records in the store stay the source of truth; this file is a summary of one run and is
replaced by the next run into the same folder (``xeval report`` still reads every record there).
"""

from __future__ import annotations

import json
import math
import os
import platform
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from xeval.base import allocator
from xeval.base.atomic import write_json
from xeval.report.frame import headline_metric
from xeval.results import provenance

SCHEMA = "xeval.results/1"
FILE = "results.json"


def file_name(shard: tuple[int, int] | None = None) -> str:
    """``results.json``; a shard of a run (``--shard I/N``) writes ``results.shard-I-of-N.json`` beside the others."""
    return FILE if shard is None or shard[1] <= 1 else f"results.shard-{shard[0]}-of-{shard[1]}.json"


def _number(value):
    """JSON has no NaN or infinity: null instead."""
    return None if value is None or not math.isfinite(float(value)) else float(value)


def _after(timestamp: str | None, started: datetime) -> bool:
    try:
        return datetime.fromisoformat(str(timestamp)) >= started
    except ValueError:
        return False


def unit_entry(rec, out: Path | None, started: datetime) -> dict:
    """One unit of the run: its identity, all its metrics, the headline metric, and how it came to be."""
    entry = asdict(rec.unit)
    entry["compat"] = (rec.config or {}).get("compat", "none")
    entry["metrics"] = {name: _number(value) for name, value in rec.metrics.items()}
    entry["headline"] = headline_metric(rec.unit.task, rec.metrics) if rec.metrics else None
    entry["n_examples"] = rec.n_examples
    stamp = (rec.provenance or {}).get("timestamp")
    entry["computed"] = _after(stamp, started)  # False: found in the store (resume)
    entry["duration_s"] = (rec.provenance or {}).get("duration_s")
    entry["timestamp"] = stamp
    if (rec.extra or {}).get("unscored"):
        entry["unscored"] = rec.extra["unscored"]
    source = rec.source
    entry["record"] = None if source is None or out is None else os.path.relpath(source, out)
    return entry


def summary(units: list[dict]) -> list[dict]:
    """Per (model, task, setting, mode, compat, split, layer): the headline metric's mean over seeds per language and
    the unweighted mean over languages (null when a language's value is missing) and the seeds it is over. One entry
    per split: a mean never mixes dev and test numbers."""
    groups: dict[tuple, dict] = {}
    for u in units:
        if u["headline"] is None:
            continue
        key = (u["model"], u["task"], u["setting"], u["mode"], u["compat"], u["split"], u["layer"])
        group = groups.setdefault(key, {"metric": u["headline"], "values": {}, "seeds": set()})
        group["values"].setdefault(u["lang"], []).append(u["metrics"].get(group["metric"]))
        group["seeds"].add(u["seed"])
    out = []
    for key, group in groups.items():
        model, task, setting, mode, compat, split, layer = key
        languages = {lang: (None if any(v is None for v in vals) else _number(sum(vals) / len(vals)))
                     for lang, vals in group["values"].items()}
        values = list(languages.values())
        mean = None if not values or any(v is None for v in values) else _number(sum(values) / len(values))
        out.append({"model": model, "task": task, "setting": setting, "mode": mode, "compat": compat, "split": split,
                    "layer": layer,
                    "metric": group["metric"], "mean": mean, "languages": languages,
                    "seeds": sorted(group["seeds"])})
    return out


def document(records, opts, seconds: float, started: datetime, computed: int, reused: int,
             command: list[str] | None = None) -> dict:
    """The ``xeval.results/1`` document of a run over ``records`` (its units, stored or computed now)."""
    import torch

    out = Path(opts.out) if opts.out is not None else None
    units = [unit_entry(rec, out, started) for rec in records]
    models: dict[str, dict] = {}
    for rec in records:
        models.setdefault(rec.unit.model, {"key": rec.unit.model, **(rec.model or {})})
    per_task: dict[str, float] = {}
    for u in units:
        if u["computed"] and u["duration_s"] is not None:
            per_task[u["task"]] = round(per_task.get(u["task"], 0.0) + float(u["duration_s"]), 3)
    run = json.loads(json.dumps(asdict(opts), default=str))  # the run's options as given (tuples -> lists)
    return {
        "schema": SCHEMA,
        "created": provenance.timestamp(),
        "started": started.isoformat(timespec="milliseconds"),
        "command": command,
        "models": list(models.values()),
        "run": run,
        "versions": provenance.versions(),
        "git_commit": provenance.git_commit(),
        "host": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                 "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
                 "allocator": allocator.describe()},
        "timings": {"wall_s": round(seconds, 3), "units_computed": computed, "units_reused": reused,
                    "computed_s_by_task": per_task},
        "summary": summary(units),
        "units": units,
    }


def write(doc: dict, out: str | Path, shard: tuple[int, int] | None = None) -> Path:
    path = Path(out) / file_name(shard)
    write_json(path, doc)  # a temporary file, then a rename: a reader never sees half a file
    return path


def now() -> datetime:
    """The run's start, as records' timestamps are written (UTC), so a unit computed by this run can be told apart."""
    return datetime.now(timezone.utc)


def write_run(records, opts, run_summary, started: datetime, command: list[str] | None = None) -> tuple[Path, dict] | None:
    """Write the run's ``results.json`` into ``opts.out`` (nothing for a run kept in memory): (its path, the document)."""
    if opts.out is None:
        return None
    doc = document(records, opts, (now() - started).total_seconds(), started, run_summary.computed,
                   run_summary.reused, command)
    return write(doc, opts.out, opts.shard), doc
