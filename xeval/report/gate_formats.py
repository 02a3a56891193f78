"""``xeval compare --format json|junit``: the regression gate's result for CI dashboards.

- ``json`` (schema ``xeval.compare/1``): the verdict, the tolerances, the two models, counts per status and every
  compared entry (baseline entries and new units) with baseline, current, change, tolerance and status; NaN as null.
- ``junit``: JUnit XML as CI systems read test reports (GitLab, Jenkins, GitHub's test-report actions): one
  ``<testsuite>`` per task (and setting), one ``<testcase>`` per compared entry, a ``<failure>`` for each entry that
  regressed or went missing; improved, within-tolerance and new entries pass, with what they are in
  ``<system-out>``.

The exit status is the gate's whatever the format: 1 when anything failed.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

from xeval.report.frame import lower_is_better
from xeval.report.gate import FAILING, Comparison

SCHEMA = "xeval.compare/1"
STATUSES = ("regressed", "missing", "improved", "ok", "new")


def _value(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return float(x)


def _layer(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else int(x)


def entries(result: Comparison) -> list[dict]:
    """Every compared entry, in the gate's order (the baseline's, then new units)."""
    out = []
    for row in result.rows.itertuples(index=False):
        out.append({"task": row.task, "lang": row.lang, "split": row.split, "setting": row.setting,
                    "layer": _layer(row.layer), "metric": row.metric, "baseline": _value(row.baseline),
                    "current": _value(row.current), "change": _value(row.change),
                    "tolerance": _value(row.tolerance), "status": row.status,
                    "lower_is_better": lower_is_better(row.metric)})
    return out


def to_json(result: Comparison) -> str:
    before, after = result.models
    doc = {"schema": SCHEMA, "verdict": "FAIL" if result.failed else "PASS", "failed": result.failed,
           "tolerance": result.tolerance, "metric_tolerances": dict(result.metric_tolerances),
           "models": {"baseline": before, "current": after,
                      "same_weights": None if not (before and after) else before == after},
           "counts": {s: result.count(s) for s in STATUSES}, "entries": entries(result)}
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.2f}"


def _case_name(e: dict) -> str:
    layer = "" if e["layer"] is None else f" L{e['layer']}"
    return f"{e['lang']} {e['split']}{layer} {e['metric']}"


def _message(e: dict) -> str:
    if e["status"] == "new":
        return f"new: {_fmt(e['current'])}, not in the baseline"
    details = ([f"{e['change']:+.2f} points"] if e["change"] is not None else []) + \
              ([f"tolerance {e['tolerance']:g}"] if e["tolerance"] is not None else []) + \
              (["lower is better"] if e["lower_is_better"] else [])
    return (f"{e['status']}: baseline {_fmt(e['baseline'])}, current {_fmt(e['current'])}"
            + (f" ({'; '.join(details)})" if details else ""))


def to_junit(result: Comparison) -> str:
    before, after = result.models
    rows = entries(result)
    failures = sum(e["status"] in FAILING for e in rows)
    root = ET.Element("testsuites", name="xeval compare", tests=str(len(rows)), failures=str(failures),
                      errors="0", skipped="0")
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    suites: dict[tuple, list[dict]] = {}
    for e in rows:
        suites.setdefault((e["task"], e["setting"]), []).append(e)
    for (task, setting), cases in suites.items():
        name = task if setting == "zero-shot" else f"{task} ({setting})"
        suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(cases)),
                              failures=str(sum(e["status"] in FAILING for e in cases)), errors="0", skipped="0",
                              timestamp=stamp)
        props = ET.SubElement(suite, "properties")
        for key, value in (("baseline_model", before), ("current_model", after),
                           ("tolerance", f"{result.tolerance:g}"),
                           *((f"tolerance.{k}", f"{v:g}") for k, v in result.metric_tolerances.items())):
            if value is not None:
                ET.SubElement(props, "property", name=key, value=str(value))
        for e in cases:
            case = ET.SubElement(suite, "testcase", classname=f"xeval.compare.{name}", name=_case_name(e), time="0")
            if e["status"] in FAILING:
                ET.SubElement(case, "failure", type=e["status"], message=_message(e)).text = _message(e)
            else:
                ET.SubElement(case, "system-out").text = _message(e)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


FORMATS = {"json": to_json, "junit": to_junit}  # besides the gate's own Markdown (xeval.report.gate.render)
