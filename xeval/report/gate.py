"""The regression gate behind ``xeval compare``: a baseline file of numbers, and a current run checked against it.

A baseline is JSON (schema ``xeval.baseline/1``) with one entry per (task, lang, split, setting, layer, metric)
holding the mean over seeds, and how that number was obtained: ``n_seeds``, ``n_examples`` (per seed) and the
model's ``dtype``. ``setting`` already names the mode (``probe``) and compat mode (``zero-shot, compat xtreme``), so
those never meet a number of another kind. Entries name no model: the CI checkpoint is retrained by each change, so
its weights hash moves while the question stays "is this recipe still as good as it was". ``metrics: headline``
(``xeval report --format baseline --baseline-metrics headline``) keeps one metric per task (the one tables show:
F1 for tagging and QA, accuracy for classification and Tatoeba, AER for alignment) instead of every variant.

Every baseline entry is checked: the current value is worse by more than the tolerance (absolute, in points;
lower is better for AER and gaps) -> ``regressed``; absent, NaN (in any seed) or infinite, or null in the baseline
-> ``missing`` (the reason says where the current run has it instead: another split or setting); obtained on another
number of examples, seeds or dtype -> ``unlike`` (unless ``allow`` names that difference, e.g. ``compare
--allow-different seeds``): all three fail. Better by more than the tolerance -> ``improved`` (reported, passes);
otherwise ``ok``. Units the baseline does not know are ``new``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from xeval.base.errors import DataError, UserError, did_you_mean
from xeval.base.textfile import read_json
from xeval.report.formats.markdown import md_escape
from xeval.report.frame import (
    NO_LAYER,
    headline_metric,
    long_frame,
    lower_is_better,
    seed_stats,
    setting_label,
    shown_records,
)
from xeval.results.controls import control_parents
from xeval.results.store import load_records

SCHEMA = "xeval.baseline/1"
KEY = ("task", "lang", "split", "setting", "layer", "metric")
FAILING = ("regressed", "missing", "unlike")
# how a number was obtained, per entry: what --allow-different may name, and the entry field it reads
CONDITIONS = {"examples": "n_examples", "seeds": "n_seeds", "dtype": "dtype"}
METRIC_SETS = ("all", "headline")
_EPS = 1e-9  # float noise; a value equal to the baseline is never a regression


def baseline_entries(records, model: str | None = None, metrics: str = "all") -> tuple[list[dict], str]:
    """Seed-averaged entries for one model's records, and that model's key. Sorted, so a refreshed baseline
    diffs cleanly in review. A control's records (``xeval run --control``) are left out unless ``model`` names
    the control. ``metrics``: "all" (every metric a record has) or "headline" (one per task)."""
    if metrics not in METRIC_SETS:
        raise UserError(f"--baseline-metrics: expected one of {', '.join(METRIC_SETS)}, found {metrics!r}")
    records = shown_records(records)
    stats = seed_stats(long_frame(records, shown=True))
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
    if metrics == "headline":
        keep = {task: headline_metric(task, group["metric"]) for task, group in stats.groupby("task", sort=False)}
        stats = stats[[keep[t] == m for t, m in zip(stats["task"], stats["metric"])]]
    obtained = _how_obtained(r for r in records if r.unit.model == models[0])
    entries = []
    for row in stats.itertuples(index=False):
        entry = {"task": row.task, "lang": row.lang, "split": row.split, "setting": row.setting,
                 "layer": None if row.layer == NO_LAYER else int(row.layer), "metric": row.metric,
                 "value": float(row.mean) if math.isfinite(row.mean) else None,  # never NaN in JSON
                 "n_seeds": int(row.n_seeds)}
        entry.update(obtained.get((row.task, row.lang, row.split, row.setting, int(row.layer)), {}))
        entries.append(entry)
    entries.sort(key=lambda e: (e["task"], e["split"], e["setting"], -1 if e["layer"] is None else e["layer"],
                                e["lang"], e["metric"]))
    return entries, models[0]


def _how_obtained(records) -> dict[tuple, dict]:
    """(task, lang, split, setting, layer) -> {"n_examples": N, "dtype": ...} over the cell's seeds (a list where
    seeds differ; dtype only where the records name it)."""
    seen: dict[tuple, dict[str, list]] = {}
    for rec in records:
        u = rec.unit
        key = (u.task, u.lang, u.split, setting_label(u), NO_LAYER if u.layer is None else int(u.layer))
        cell = seen.setdefault(key, {"n_examples": [], "dtype": []})
        cell["n_examples"].append(int(rec.n_examples))
        cell["dtype"].append((rec.model or {}).get("dtype"))
    out = {}
    for key, cell in seen.items():
        values = {}
        for name, found in cell.items():
            distinct = sorted(set(found), key=str)
            if distinct != [None]:
                values[name] = distinct[0] if len(distinct) == 1 else distinct
        out[key] = values
    return out


def baseline_document(records, model: str | None = None, sources=(), metrics: str = "all") -> dict:
    """What ``xeval report RUN --format baseline`` writes."""
    entries, key = baseline_entries(records, model, metrics)
    return {"schema": SCHEMA, "model": key, "metrics": metrics, "sources": [str(s) for s in sources],
            "entries": entries}


def dump_baseline(doc: dict) -> str:
    """JSON with one entry per line: valid JSON that reviews as a readable diff when refreshed."""
    head = {k: v for k, v in doc.items() if k != "entries"}
    lines = [json.dumps(e, ensure_ascii=False) for e in doc["entries"]]
    body = json.dumps(head, indent=1, ensure_ascii=False)[:-2]  # drop the closing "\n}"
    return body + ',\n "entries": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def read_baseline(path: str | Path) -> tuple[list[dict], str | None, str]:
    """Entries, the model key and the metric set ("all" or "headline") of a baseline file, or computed from a run
    folder given as the baseline."""
    path = Path(path)
    if path.is_dir():
        return (*baseline_entries(load_records([path])), "all")
    if not path.is_file():
        raise DataError(path, None, "expected a baseline JSON file or a run folder, found nothing there")
    doc, text = read_json(path, "a baseline JSON file")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise DataError(path, None, f"expected a baseline with schema {SCHEMA!r}, found {found!r} "
                                    "(write one with: xeval report RUN --format baseline --out FILE)")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise DataError(path, None, "expected an 'entries' list in the baseline")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise DataError(path, _entry_line(text, i), f"entry {i}: expected an object, found {type(entry).__name__}")
        missing = [k for k in (*KEY, "value") if k not in entry]
        if missing:
            raise DataError(path, _entry_line(text, i), f"entry {i}: expected fields {', '.join(missing)}")
        value = entry["value"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or math.isinf(value)):
            raise DataError(path, _entry_line(text, i),
                            f"entry {i}: expected a finite number or null as value, found {value!r}")
        layer = entry["layer"]
        if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int)):
            raise DataError(path, _entry_line(text, i), f"entry {i}: expected an integer or null as layer, "
                                                        f"found {layer!r}")
        for name in ("task", "lang", "split", "setting", "metric"):
            if not isinstance(entry[name], str):
                raise DataError(path, _entry_line(text, i), f"entry {i}: expected a string as {name}, "
                                                            f"found {entry[name]!r}")
    metrics = doc.get("metrics", "all")
    if metrics not in METRIC_SETS:
        raise DataError(path, None, f"expected 'metrics' to be one of {', '.join(METRIC_SETS)}, found {metrics!r}")
    return entries, doc.get("model"), metrics


def _entry_line(text: str, index: int) -> int:
    """Line of the index-th entry in a baseline as ``dump_baseline`` writes it (one entry a line), else 1."""
    lines = text.splitlines()
    try:
        start = next(n for n, line in enumerate(lines) if line.strip().startswith('"entries"'))
    except StopIteration:
        return 1
    return start + 2 + index if start + 1 + index < len(lines) else 1


def parse_tolerances(text: str | None, baseline: list[dict] | None = None) -> dict[str, float]:
    """``aer=2,acc_mean=0.5`` -> {"aer": 2.0, "acc_mean": 0.5}; a key may also be ``task:metric``. With the
    ``baseline`` entries, a key that names no metric (or task:metric) of the baseline is an error: a misspelt
    metric would otherwise leave its default tolerance in place without a word."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        name, sep, value = part.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise UserError(f"--metric-tolerances: expected metric=T (e.g. aer=2,f1=0.5), found {part!r}") from None
        check_tolerance(out[name.strip()], f"--metric-tolerances {part}")
    if baseline is not None:
        metrics = {e["metric"] for e in baseline}
        pairs = {f"{e['task']}:{e['metric']}" for e in baseline}
        for name in out:
            if name not in metrics | pairs:
                raise UserError(f"--metric-tolerances: {name!r} is no metric of the baseline"
                                f"{did_you_mean(name, pairs if ':' in name else metrics)}; it has "
                                f"{', '.join(sorted(metrics))}")
    return out


def check_tolerance(value: float, what: str) -> None:
    """A tolerance is a finite number of points >= 0: NaN would make every comparison "within tolerance"."""
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{what}: expected a finite tolerance >= 0 (points), found {value:g}")


@dataclass
class Comparison:
    rows: pd.DataFrame  # one row per baseline entry (+ new units): KEY, baseline, current, change, tolerance, status,
    # reason (why a row is missing or unlike; an allowed difference)
    tolerance: float
    metric_tolerances: dict = field(default_factory=dict)
    models: tuple = (None, None)  # (baseline model key, current model key), for the report only
    unchecked: list = field(default_factory=list)  # conditions the baseline does not record (an older xeval wrote it)
    allowed: list = field(default_factory=list)  # conditions --allow-different lets differ
    tolerance_examples: float = 0.0  # --tolerance-examples: what many examples of an entry weigh, in points

    @property
    def failed(self) -> bool:
        return bool(self.rows["status"].isin(FAILING).any())

    def count(self, status: str) -> int:
        return int((self.rows["status"] == status).sum())


def _differences(entry: dict, cur: dict) -> dict[str, str]:
    """Condition name -> "3 examples (baseline 200)" for each way the two numbers were obtained differently."""
    out = {}
    for name, key in CONDITIONS.items():
        if key in entry and key in cur and entry[key] != cur[key]:
            unit = {"examples": " examples", "seeds": " seed(s)", "dtype": ""}[name]
            label = "dtype " if name == "dtype" else ""
            out[name] = f"{label}{cur[key]}{unit} (baseline {entry[key]})"
    return out


def _elsewhere(entry: dict, current: list[dict]) -> str:
    """Where the current run has a missing entry's number instead (another split or setting), or ""."""
    same = [e for e in current if all(e[k] == entry[k] for k in ("task", "lang", "layer", "metric"))]
    splits = sorted({e["split"] for e in same if e["split"] != entry["split"]})
    settings = sorted({e["setting"] for e in same if e["setting"] != entry["setting"]})
    parts = ([f"current has it on split {', '.join(splits)}"] if splits else []) + \
            ([f"current has it in setting {', '.join(settings)}"] if settings else [])
    return "; ".join(parts)


def compare(baseline: list[dict], current: list[dict], tolerance: float = 0.0,
            metric_tolerances: dict[str, float] | None = None, allow=(), tolerance_examples: float = 0.0) -> Comparison:
    """Check every baseline entry against the current entries (both as made by ``baseline_entries``); ``allow``:
    conditions of ``CONDITIONS`` that may differ (the row then says so and is judged on its value).
    ``tolerance_examples`` K: an entry may also move by what K of its examples weigh, 100 * K / n_examples points
    (one Tatoeba query of 200 is 0.5; one of 50 XNLI pairs 2), the granularity at which float drift between machines
    shows (docs/gate.md)."""
    metric_tolerances = metric_tolerances or {}
    unknown = sorted(set(allow) - set(CONDITIONS))
    if unknown:
        raise UserError(f"--allow-different: expected some of {', '.join(CONDITIONS)}, found {', '.join(unknown)}")
    now = {tuple(e[k] for k in KEY): e for e in current}
    seen = set()
    rows = []
    for entry in baseline:
        key = tuple(entry[k] for k in KEY)
        seen.add(key)
        tol = metric_tolerances.get(f"{entry['task']}:{entry['metric']}",
                                    metric_tolerances.get(entry["metric"], tolerance))
        n = entry.get("n_examples")
        if tolerance_examples and isinstance(n, int) and n > 0:
            tol = max(tol, 100.0 * tolerance_examples / n)
        cur = now.get(key)
        if entry["value"] is None or not math.isfinite(float(entry["value"])):
            # the baseline has no number here (NaN written as null): nothing to be "within tolerance" of
            rows.append((*key, math.nan, math.nan if cur is None or cur.get("value") is None else float(cur["value"]),
                         math.nan, tol, "missing", "the baseline has no number"))
            continue
        base = float(entry["value"])
        if cur is None or cur.get("value") is None or not math.isfinite(float(cur["value"])):
            # NaN (one seed's NaN included) or inf: never within tolerance, never "improved"
            value = math.nan if cur is None or cur.get("value") is None else float(cur["value"])
            reason = _elsewhere(entry, current) if cur is None else "not a finite number (in some seed)"
            rows.append((*key, base, value, math.nan, tol, "missing", reason))
            continue
        value = float(cur["value"])
        change = value - base
        better = -change if lower_is_better(entry["metric"]) else change  # > 0: improved
        differences = _differences(entry, cur)
        refused = [text for name, text in differences.items() if name not in allow]
        if refused:
            status, reason = "unlike", "obtained otherwise: " + "; ".join(refused)
        else:
            status = "regressed" if better < -(tol + _EPS) else "improved" if better > tol + _EPS else "ok"
            reason = ("allowed: " + "; ".join(differences.values())) if differences else ""
        rows.append((*key, base, value, change, tol, status, reason))
    for key, entry in now.items():
        if key not in seen:
            rows.append((*key, math.nan, math.nan if entry["value"] is None else float(entry["value"]),
                         math.nan, math.nan, "new", ""))
    frame = pd.DataFrame(rows, columns=[*KEY, "baseline", "current", "change", "tolerance", "status", "reason"])
    unchecked = [name for name, k in CONDITIONS.items() if baseline and any(k not in e for e in baseline)
                 and any(k in e for e in current)]
    return Comparison(frame, tolerance, metric_tolerances, unchecked=unchecked, allowed=sorted(allow),
                      tolerance_examples=tolerance_examples)


def render(result: Comparison, show_ok: bool = False) -> str:
    """A summary line and a Markdown table of what regressed, went missing, was obtained otherwise and improved."""
    counts = {s: result.count(s) for s in ("regressed", "missing", "unlike", "improved", "ok", "new")}
    extra = "".join(f", {k}={v:g}" for k, v in result.metric_tolerances.items())
    if result.tolerance_examples:
        extra += f", or {result.tolerance_examples:g} example(s) of each number"
    verdict = "FAIL" if result.failed else "PASS"
    unlike = f", {counts['unlike']} unlike (other examples, seeds or dtype)" if counts["unlike"] else ""
    lines = [f"{verdict}: {counts['regressed']} regressed, {counts['missing']} missing, {counts['improved']} improved, "
             f"{counts['ok']} within tolerance, {counts['new']} new{unlike} "
             f"(tolerance {result.tolerance:g} points{extra}; lower is better for AER and gaps)"]
    if result.unchecked:
        lines.append(f"note: the baseline does not record {', '.join(CONDITIONS[c] for c in result.unchecked)} "
                     "(an older xeval wrote it): not compared; refresh it with xeval report RUN --format baseline")
    if result.allowed:
        lines.append(f"note: --allow-different {','.join(result.allowed)}: such differences do not fail")
    shown = ["regressed", "missing", "unlike", "improved"] + (["ok"] if show_ok else [])
    table = result.rows[result.rows["status"].isin(shown)].copy()
    before, after = result.models
    if before and after:
        lines.append(f"models: baseline {md_escape(before)}, current {md_escape(after)}"
                     + (" (same weights)" if before == after else " (weights differ)"))
    if table.empty:
        return "\n".join(lines) + "\n"
    table["order"] = table["status"].map({s: i for i, s in enumerate(shown)})
    table = table.sort_values(["order", "task", "lang", "metric"], kind="stable")
    reasons = bool(table["reason"].astype(bool).any())
    lines += ["", "| status | task | lang | split | layer | metric | baseline | current | change |"
              + (" why |" if reasons else ""),
              "|:---|:---|:---|:---|---:|:---|---:|---:|---:|" + (":---|" if reasons else "")]
    for row in table.itertuples(index=False):
        layer = "" if row.layer is None or (isinstance(row.layer, float) and math.isnan(row.layer)) else int(row.layer)
        status = row.status.upper() if row.status in FAILING else row.status
        setting = "" if row.setting == "zero-shot" else f" ({row.setting})"
        task, lang, split, metric = (md_escape(x) for x in (row.task, row.lang, row.split, row.metric))
        lines.append(f"| {status} | {task}{md_escape(setting)} | {lang} | {split} | {layer} | {metric} | "
                     f"{_fmt(row.baseline)} | {_fmt(row.current)} | {_fmt(row.change, sign=True)} |"
                     + (f" {md_escape(row.reason)} |" if reasons else ""))
    return "\n".join(lines) + "\n"


def _fmt(value, sign: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:+.2f}" if sign else f"{value:.2f}"
