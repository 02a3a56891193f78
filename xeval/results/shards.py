"""Which parts of a run a store holds: the manifests ``xeval run`` leaves in ``<out>/.runs/``, and the check that the
parts ``xeval report`` joins are one partition of one run.

A run is a list of work items (``xeval.run.distributed``) decided by its settings: the model, the tasks and
languages, seeds, setting, mode, compat, recipe and probe options, ``--max-eval``, layers, dtype, the data. The
settings hash to a run id. Every command that finishes writes ``<out>/.runs/<run id>.<i>-of-<N>.manifest`` (JSON:
the settings, all items of the run, the items this command computed, ``done``); a sharded command (``--shard i/N``)
writes it when it starts too, with ``done: false``. Records stay where they always were; the manifests only say what
was meant to be there.

``check_runs(folders)`` then says, for every run of every model in the given store folders, which of its items no
finished command computed: a shard that never ran or never finished (``--shard 0/2`` without ``1/2``), a second
partition that does not cover the first's gaps (``0/2`` then ``2/3``), or shards of one model run with other
settings (``--max-eval 100`` on one, ``50`` on the other: two runs, each incomplete, and the settings that differ).
Items of one run id are the same whatever N, so any mix of finished commands that covers them all is complete.
"""

from __future__ import annotations

import json
from pathlib import Path

from xeval.base.atomic import write_json
from xeval.base.hashing import hash_json
from xeval.results.provenance import timestamp

FOLDER = ".runs"
SCHEMA = "xeval.run-manifest/1"
SUFFIX = ".manifest"  # not .json: the store and its readers glob for records by that suffix


def run_id(model: str, settings: dict) -> str:
    return hash_json({"model": model, "settings": settings})[:12]


def manifest_path(root: str | Path, run: str, shard: int, shards: int) -> Path:
    return Path(root) / FOLDER / f"{run}.{shard}-of-{shards}{SUFFIX}"


def write_manifest(root: str | Path, model: str, settings: dict, items: list[dict], mine: list[str],
                   shard: int = 0, shards: int = 1, done: bool = True) -> Path:
    """Record that this command (shard ``shard`` of ``shards``) started or finished the items ``mine`` (their
    keys) of the run ``items`` (dicts with ``key``, ``task``, ``langs``, ``seeds``)."""
    settings = json.loads(json.dumps(settings, default=str))  # what JSON keeps, so ids agree after a round trip
    run = run_id(model, settings)
    path = manifest_path(root, run, shard, shards)
    write_json(path, {"schema": SCHEMA, "model": model, "run": run, "shard": shard, "shards": shards, "done": done,
                      "timestamp": timestamp(), "settings": settings, "items": items, "mine": list(mine)})
    return path


def _manifests(folders) -> list[dict]:
    found = []
    for folder in folders:
        for path in sorted((Path(folder) / FOLDER).glob(f"*{SUFFIX}")):
            try:
                body = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a manifest cut short by a kill: as if that command never finished
            if isinstance(body, dict) and body.get("schema") == SCHEMA and isinstance(body.get("items"), list):
                found.append({**body, "path": str(path)})
    return found


def _item_text(item: dict) -> str:
    langs = item.get("langs") or []
    seeds = item.get("seeds") or []
    where = langs[0] if len(langs) == 1 else f"{len(langs)} languages"
    return f"{item.get('task')} ({where}{', seed ' + ','.join(map(str, seeds)) if item.get('fine_tuning') else ''})"


def _settings_diff(a: dict, b: dict) -> str:
    keys = sorted(set(a) | set(b))
    return "; ".join(f"{k} {json.dumps(a.get(k))} -> {json.dumps(b.get(k))}" for k in keys if a.get(k) != b.get(k))


def check_runs(folders) -> list[str]:
    """One line per incomplete run in the store ``folders`` (empty: every run there is whole)."""
    by_run: dict[tuple[str, str], list[dict]] = {}
    for body in _manifests(folders):
        by_run.setdefault((body.get("model"), body.get("run")), []).append(body)
    problems = []
    for (model, run), parts in by_run.items():
        items = {item["key"]: item for item in parts[0]["items"] if isinstance(item, dict) and "key" in item}
        covered = {key for part in parts if part.get("done") for key in part.get("mine", [])}
        missing = [item for key, item in items.items() if key not in covered]
        if not missing:
            continue
        done = sorted(f"{p['shard']}/{p['shards']}" for p in parts if p.get("done"))
        unfinished = sorted(f"{p['shard']}/{p['shards']}" for p in parts if not p.get("done"))
        line = (f"{Path(parts[0]['path']).parent.parent}: run {run} of {model} is incomplete: {len(missing)} of "
                f"{len(items)} work items were computed by no finished command (finished: "
                f"{', '.join(done) or 'none'}" + (f"; started, not finished: {', '.join(unfinished)}" if unfinished
                                                  else "")
                + f"); missing {', '.join(_item_text(i) for i in missing[:4])}" + (", ..." if len(missing) > 4 else ""))
        others = [body for (m, r), bodies in by_run.items() if m == model and r != run for body in bodies[:1]]
        if others:
            line += (f"; another run of this model in the store has other settings "
                     f"({_settings_diff(parts[0]['settings'], others[0]['settings'])})")
        shards = sorted({p["shards"] for p in parts})
        if len(shards) > 1:
            line += f"; its shards were cut {' and '.join(f'into {n}' for n in shards)} parts"
        problems.append(line)
    return problems
