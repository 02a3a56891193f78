"""xeval compare --format json|junit (issue 26, item 5): the gate's result for CI dashboards, the same verdict and
exit status as the Markdown, one JUnit testcase per compared entry and a failure per regression."""

import json
import xml.etree.ElementTree as ET

from tests.helpers.report_records import A, write_run
from tests.report.test_gate import (  # the gate's own cases: one regressed, missing, improved each
    _records,
    _worse,
)
from xeval.cli import main
from xeval.report.gate import baseline_entries, compare
from xeval.report.gate_formats import to_json, to_junit


def _strict_json(text):
    def refuse(token):
        raise AssertionError(f"{token} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_cli_formats_carry_the_same_verdict_and_exit_status(tmp_path, capsys):
    good = write_run(tmp_path / "good", _records())
    bad = write_run(tmp_path / "bad", _worse(_records()))
    baseline = tmp_path / "ci.json"
    assert main(["report", str(good), "--format", "baseline", "--out", str(baseline)]) == 0
    capsys.readouterr()
    args = ["compare", "--baseline", str(baseline), "--current", str(bad), "--tolerance", "0.5"]

    assert main([*args, "--format", "json", "--out", str(tmp_path / "cmp.json")]) == 1
    out = capsys.readouterr().out
    doc = _strict_json(out)
    assert (tmp_path / "cmp.json").read_text() == out
    assert doc["schema"] == "xeval.compare/1" and doc["verdict"] == "FAIL" and doc["failed"] is True
    assert doc["counts"] == {"regressed": 5, "missing": 1, "improved": 1, "ok": doc["counts"]["ok"], "new": 0}
    assert doc["models"] == {"baseline": A, "current": A, "same_weights": True} and doc["tolerance"] == 0.5
    by_key = {(e["task"], e["lang"], e["metric"], e["layer"]): e for e in doc["entries"]}
    assert by_key[("xnli", "de", "accuracy", None)] == {
        "task": "xnli", "lang": "de", "split": "test", "setting": "zero-shot", "layer": None, "metric": "accuracy",
        "baseline": 75.0, "current": 72.0, "change": -3.0, "tolerance": 0.5, "status": "regressed",
        "lower_is_better": False}
    missing = by_key[("panx", "zh", "f1", None)]
    assert missing["status"] == "missing" and missing["current"] is None and missing["change"] is None
    aer = by_key[("alignment", "de-en", "aer", 2)]
    assert aer["status"] == "regressed" and aer["lower_is_better"] and aer["change"] == 2.0
    assert len(doc["entries"]) == sum(doc["counts"].values())

    assert main([*args, "--format", "junit"]) == 1
    root = ET.fromstring(capsys.readouterr().out)
    cases = root.findall("testsuite/testcase")
    assert root.tag == "testsuites" and int(root.get("tests")) == len(cases) == len(doc["entries"])
    assert int(root.get("failures")) == 6 == len(root.findall("testsuite/testcase/failure"))
    suite = next(s for s in root.findall("testsuite") if s.get("name") == "xnli")
    assert suite.get("failures") == "1" and {c.get("name") for c in suite} >= {"de test accuracy"}
    (xnli_de,) = [c for c in suite.findall("testcase") if c.get("name") == "de test accuracy"]
    failure = xnli_de.find("failure")
    assert failure.get("type") == "regressed" and xnli_de.get("classname") == "xeval.compare.xnli"
    assert failure.get("message") == "regressed: baseline 75.00, current 72.00 (-3.00 points; tolerance 0.5)"
    (layer2,) = [c for c in root.iter("testcase") if c.get("name") == "de-en test L2 aer"]
    assert layer2.find("failure").get("message").endswith("(+2.00 points; tolerance 0.5; lower is better)")
    (pawsx_zh,) = [c for c in root.iter("testcase") if c.get("classname") == "xeval.compare.pawsx"
                   and c.get("name") == "zh test accuracy"]
    assert pawsx_zh.find("failure") is None and pawsx_zh.find("system-out").text.startswith("improved: ")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props == {"baseline_model": A, "current_model": A, "tolerance": "0.5"}

    assert main(["compare", "--baseline", str(baseline), "--current", str(good), "--format", "junit"]) == 0
    passing = ET.fromstring(capsys.readouterr().out)
    assert passing.get("failures") == "0" and not list(passing.iter("failure"))


def test_new_units_pass_and_significance_has_no_such_format(tmp_path, capsys):
    records = _records()
    baseline = [e for e in baseline_entries(records)[0] if not (e["task"] == "xnli" and e["lang"] == "en")]
    result = compare(baseline, baseline_entries(_records())[0])
    doc = _strict_json(to_json(result))
    assert doc["verdict"] == "PASS" and doc["counts"]["new"] == 1
    (new,) = [e for e in doc["entries"] if e["status"] == "new"]
    assert (new["task"], new["lang"], new["baseline"], new["current"]) == ("xnli", "en", None, 85.0)
    (case,) = [c for c in ET.fromstring(to_junit(result)).iter("testcase")
               if c.get("classname") == "xeval.compare.xnli" and c.get("name") == "en test accuracy"]
    assert case.find("failure") is None and case.find("system-out").text == "new: 85.00, not in the baseline"
    run = write_run(tmp_path / "run", records)
    assert main(["compare", "--significance", str(run), str(run), "--format", "json"]) == 2
    assert "--format json: for the regression gate only" in capsys.readouterr().err
