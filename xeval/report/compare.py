"""The regression gate behind ``xeval compare``: a baseline file of numbers, and a current run checked against it.

A baseline is JSON (schema ``xeval.baseline/1``) with one entry per (task, lang, split, setting, layer, metric)
holding the mean over seeds. Entries name no model: the CI checkpoint is retrained by each change, so its
weights hash moves while the question stays "is this recipe still as good as it was".

Every baseline entry is checked: the current value is worse by more than the tolerance (absolute, in points;
lower is better for AER and gaps) -> ``regressed``; absent -> ``missing``; both fail. Better by more than the
tolerance -> ``improved`` (reported, passes); otherwise ``ok``. Units the baseline does not know are ``new``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from xeval.controls import control_parents
from xeval.errors import DataError, UserError
from xeval.report.frame import NO_LAYER, long_frame, lower_is_better, seed_stats
from xeval.results import load_records

SCHEMA = "xeval.baseline/1"
KEY = ("task", "lang", "split", "setting", "layer", "metric")
FAILING = ("regressed", "missing")
_EPS = 1e-9  # float noise; a value equal to the baseline is never a regression


def baseline_entries(records, model: str | None = None) -> tuple[list[dict], str]:
    """Seed-averaged entries for one model's records, and that model's key. Sorted, so a refreshed baseline
    diffs cleanly in review. A control's records (``xeval run --control``) are left out unless ``model`` names
    the control."""
    records = list(records)
    stats = seed_stats(long_frame(records))
    models = sorted(stats["model"].unique())
    controls = control_parents(records)
    if model is None:
        models = [m for m in models if m not in controls] or models
    else:
        models = [m for m in models if model in (m, m.split("@", 1)[0])]
        if not models:
            found = ", ".join(sorted(stats["model"].unique()))
            raise UserError(f"no records for model {model!r}; the runs have: {found}")
    if len(models) != 1:
        raise UserError(f"expected the records of one model, found {len(models)}: {', '.join(models)}; "
                        "pick one with --model")
    stats = stats[stats["model"] == models[0]]
    entries = []
    for row in stats.itertuples(index=False):
        entries.append({"task": row.task, "lang": row.lang, "split": row.split, "setting": row.setting,
                        "layer": None if row.layer == NO_LAYER else int(row.layer), "metric": row.metric,
                        "value": float(row.mean), "n_seeds": int(row.n_seeds)})
    entries.sort(key=lambda e: (e["task"], e["split"], e["setting"], -1 if e["layer"] is None else e["layer"],
                                e["lang"], e["metric"]))
    return entries, models[0]


def baseline_document(records, model: str | None = None, sources=()) -> dict:
    """What ``xeval report RUN --format baseline`` writes."""
    entries, key = baseline_entries(records, model)
    return {"schema": SCHEMA, "model": key, "sources": [str(s) for s in sources], "entries": entries}


def dump_baseline(doc: dict) -> str:
    """JSON with one entry per line: valid JSON that reviews as a readable diff when refreshed."""
    head = {k: v for k, v in doc.items() if k != "entries"}
    lines = [json.dumps(e, ensure_ascii=False) for e in doc["entries"]]
    body = json.dumps(head, indent=1, ensure_ascii=False)[:-2]  # drop the closing "\n}"
    return body + ',\n "entries": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def read_baseline(path: str | Path) -> tuple[list[dict], str | None]:
    """Entries (and the model key) from a baseline file, or computed from a run folder given as the baseline."""
    path = Path(path)
    if path.is_dir():
        return baseline_entries(load_records([path]))
    if not path.is_file():
        raise DataError(path, None, "expected a baseline JSON file or a run folder, found nothing there")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(path, err.lineno, f"expected a baseline JSON file, found invalid JSON ({err.msg})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise DataError(path, None, f"expected a baseline with schema {SCHEMA!r}, found {found!r} "
                                    "(write one with: xeval report RUN --format baseline --out FILE)")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise DataError(path, None, "expected an 'entries' list in the baseline")
    for i, entry in enumerate(entries):
        missing = [k for k in (*KEY, "value") if k not in entry]
        if missing:
            raise DataError(path, None, f"entry {i}: expected fields {', '.join(missing)}")
    return entries, doc.get("model")


def parse_tolerances(text: str | None) -> dict[str, float]:
    """``aer=2,acc_mean=0.5`` -> {"aer": 2.0, "acc_mean": 0.5}; a key may also be ``task:metric``."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        name, sep, value = part.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise UserError(f"--metric-tolerances: expected metric=T (e.g. aer=2,f1=0.5), found {part!r}") from None
        if out[name.strip()] < 0:
            raise UserError(f"--metric-tolerances: a tolerance cannot be negative, found {part!r}")
    return out


@dataclass
class Comparison:
    rows: pd.DataFrame  # one row per baseline entry (+ new units): KEY, baseline, current, change, tolerance, status
    tolerance: float
    metric_tolerances: dict = field(default_factory=dict)
    models: tuple = (None, None)  # (baseline model key, current model key), for the report only

    @property
    def failed(self) -> bool:
        return bool(self.rows["status"].isin(FAILING).any())

    def count(self, status: str) -> int:
        return int((self.rows["status"] == status).sum())


def compare(baseline: list[dict], current: list[dict], tolerance: float = 0.0,
            metric_tolerances: dict[str, float] | None = None) -> Comparison:
    """Check every baseline entry against the current entries (both as made by ``baseline_entries``)."""
    metric_tolerances = metric_tolerances or {}
    now = {tuple(e[k] for k in KEY): e for e in current}
    seen = set()
    rows = []
    for entry in baseline:
        key = tuple(entry[k] for k in KEY)
        seen.add(key)
        tol = metric_tolerances.get(f"{entry['task']}:{entry['metric']}",
                                    metric_tolerances.get(entry["metric"], tolerance))
        base = float(entry["value"])
        cur = now.get(key)
        if cur is None or cur.get("value") is None or math.isnan(float(cur["value"])):
            rows.append((*key, base, math.nan, math.nan, tol, "missing"))
            continue
        value = float(cur["value"])
        change = value - base
        better = -change if lower_is_better(entry["metric"]) else change  # > 0: improved
        if better < -(tol + _EPS):
            status = "regressed"
        elif better > tol + _EPS:
            status = "improved"
        else:
            status = "ok"
        rows.append((*key, base, value, change, tol, status))
    for key, entry in now.items():
        if key not in seen:
            rows.append((*key, math.nan, float(entry["value"]), math.nan, math.nan, "new"))
    frame = pd.DataFrame(rows, columns=[*KEY, "baseline", "current", "change", "tolerance", "status"])
    return Comparison(frame, tolerance, metric_tolerances)


def render(result: Comparison, show_ok: bool = False) -> str:
    """A summary line and a Markdown table of what regressed, went missing and improved."""
    counts = {s: result.count(s) for s in ("regressed", "missing", "improved", "ok", "new")}
    extra = "".join(f", {k}={v:g}" for k, v in result.metric_tolerances.items())
    verdict = "FAIL" if result.failed else "PASS"
    lines = [f"{verdict}: {counts['regressed']} regressed, {counts['missing']} missing, {counts['improved']} improved, "
             f"{counts['ok']} within tolerance, {counts['new']} new "
             f"(tolerance {result.tolerance:g} points{extra}; lower is better for AER and gaps)"]
    shown = ["regressed", "missing", "improved"] + (["ok"] if show_ok else [])
    table = result.rows[result.rows["status"].isin(shown)].copy()
    before, after = result.models
    if before and after:
        lines.append(f"models: baseline {before}, current {after}"
                     + (" (same weights)" if before == after else " (weights differ)"))
    if table.empty:
        return "\n".join(lines) + "\n"
    table["order"] = table["status"].map({s: i for i, s in enumerate(shown)})
    table = table.sort_values(["order", "task", "lang", "metric"], kind="stable")
    lines += ["", "| status | task | lang | split | layer | metric | baseline | current | change |",
              "|:---|:---|:---|:---|---:|:---|---:|---:|---:|"]
    for row in table.itertuples(index=False):
        layer = "" if row.layer is None or (isinstance(row.layer, float) and math.isnan(row.layer)) else int(row.layer)
        status = row.status.upper() if row.status in FAILING else row.status
        setting = "" if row.setting == "zero-shot" else f" ({row.setting})"
        lines.append(f"| {status} | {row.task}{setting} | {row.lang} | {row.split} | {layer} | {row.metric} | "
                     f"{_fmt(row.baseline)} | {_fmt(row.current)} | {_fmt(row.change, sign=True)} |")
    return "\n".join(lines) + "\n"


def _fmt(value, sign: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:+.2f}" if sign else f"{value:.2f}"
