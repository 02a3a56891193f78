"""The regression gate: a worse run fails naming the regressed rows, an equal run passes, improvements show."""

import json

import pytest

from tests.helpers.report_records import A, B, probe_records, transfer_records, write_run
from xeval.base.errors import UserError
from xeval.cli import main
from xeval.report.gate import baseline_entries, compare, parse_tolerances


def _entries(records):
    return baseline_entries(records)[0]


def _worse(records):
    """xnli/de down 3 points, alignment AER up 2 (worse), pawsx/zh up 2 (better), panx/zh gone."""
    out = []
    for r in records:
        r.metrics = dict(r.metrics)
        if r.unit.task == "xnli" and r.unit.lang == "de":
            r.metrics["accuracy"] -= 3
        if r.unit.task == "alignment":
            r.metrics["aer"] += 2
        if r.unit.task == "pawsx" and r.unit.lang == "zh":
            r.metrics["accuracy"] += 2
        if not (r.unit.task == "panx" and r.unit.lang == "zh"):
            out.append(r)
    return out


def _records():
    return transfer_records(A, seeds=(1, 2)) + probe_records(A)


def test_equal_set_passes():
    result = compare(_entries(_records()), _entries(_records()))
    assert not result.failed
    assert set(result.rows["status"]) == {"ok"}


def test_worse_set_fails_naming_rows_and_reports_improvements():
    result = compare(_entries(_records()), _entries(_worse(_records())), tolerance=0.5)
    assert result.failed
    rows = result.rows.set_index(["task", "lang", "metric", "layer"])["status"]
    assert rows[("xnli", "de", "accuracy", None)] == "regressed"
    assert rows[("panx", "zh", "f1", None)] == "missing"  # a missing unit is a regression
    assert rows[("pawsx", "zh", "accuracy", None)] == "improved"
    assert rows[("alignment", "de-en", "aer", 2)] == "regressed"  # AER: higher is worse
    assert rows[("xnli", "en", "accuracy", None)] == "ok"


def test_tolerances_global_and_per_metric():
    base, worse = _entries(_records()), _entries(_worse(_records()))
    assert compare(base, worse, tolerance=1.0).count("regressed") == 5  # xnli/de and the four AER layers
    assert compare(base, worse, tolerance=1.0, metric_tolerances={"aer": 2}).count("regressed") == 1
    assert compare(base, worse, tolerance=1.0, metric_tolerances={"alignment:aer": 2.5}).count("regressed") == 1
    assert compare(base, worse, tolerance=3.0).count("regressed") == 0
    assert parse_tolerances("aer=2, f1=0.5") == {"aer": 2.0, "f1": 0.5}
    with pytest.raises(UserError, match="metric=T"):
        parse_tolerances("aer")


def test_lower_is_better_improvement():
    base = _entries(probe_records(A))
    better = probe_records(A)
    for r in better:
        if r.unit.task == "alignment":
            r.metrics = {**r.metrics, "aer": r.metrics["aer"] - 5}
    result = compare(base, _entries(better), tolerance=1.0)
    assert not result.failed and result.count("improved") == 4


def test_cli_baseline_roundtrip_and_exit_codes(tmp_path, capsys):
    good = write_run(tmp_path / "good", _records())
    bad = write_run(tmp_path / "bad", _worse(_records()))
    baseline = tmp_path / "baselines" / "ci.json"
    assert main(["report", str(good), "--format", "baseline", "--out", str(baseline)]) == 0
    doc = json.loads(baseline.read_text())
    assert doc["schema"] == "xeval.baseline/1" and doc["model"] == A and len(doc["entries"]) > 10
    capsys.readouterr()

    assert main(["compare", "--baseline", str(baseline), "--current", str(good)]) == 0
    assert capsys.readouterr().out.startswith("PASS: 0 regressed, 0 missing")

    report = tmp_path / "cmp.md"
    assert main(["compare", "--baseline", str(baseline), "--current", str(bad), "--tolerance", "0.5",
                 "--out", str(report)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL: 5 regressed, 1 missing, 1 improved")
    assert "| REGRESSED | xnli | de | test |  | accuracy | 75.00 | 72.00 | -3.00 |" in out
    assert "| MISSING | panx | zh | test |  | f1 | 60.00 | — | — |" in out
    assert "| improved | pawsx | zh | test |  | accuracy | 75.00 | 77.00 | +2.00 |" in out
    assert report.read_text() == out

    # a run folder works as the baseline too; several models need --model
    assert main(["compare", "--baseline", str(good), "--current", str(good)]) == 0
    other = write_run(tmp_path / "other", transfer_records(B))
    assert main(["compare", "--baseline", str(baseline), "--current", str(good), str(other)]) == 2
    assert "pick one with --model" in capsys.readouterr().err
    assert main(["compare", "--baseline", str(baseline), "--current", str(good), str(other), "--model", "alpha"]) == 0


def test_bad_baseline_file_is_a_user_error(tmp_path, capsys):
    run = write_run(tmp_path / "run", _records())
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something else"}')
    assert main(["compare", "--baseline", str(bad), "--current", str(run)]) == 2
    assert "expected a baseline with schema" in capsys.readouterr().err
    bad.write_text("{not json")
    assert main(["compare", "--baseline", str(bad), "--current", str(run)]) == 2
    assert "bad.json:1: expected a baseline JSON file" in capsys.readouterr().err
