"""The quickstart runs its probes beside the random-init control: a ``control`` column in the printed summary,
"(random init)" rows in report.md, the control's records under their own key; fine-tuning tasks get none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.run.test_quickstart import tiny_options
from xeval.results.store import Record, Store, Unit
from xeval.run.quickstart import FINETUNE, PROBES, headline, quickstart


@pytest.mark.slow
def test_quickstart_probes_with_control(tmp_path):
    lines: list[str] = []
    opts = replace(tiny_options(tmp_path / "qs"), tasks=PROBES + FINETUNE[:1])
    result = quickstart(opts, echo=lines.append)
    stored = list(Store(tmp_path / "qs" / "results").records())
    controls = {r.unit.model for r in stored if r.model.get("control") == "random-init"}
    assert len(controls) == 1 and result["model"] not in controls
    [control] = controls
    assert control.startswith("model-random-init@")
    assert {r.unit.task for r in stored if r.unit.model == control} == set(PROBES)  # probes only
    assert all(r.model["parent"]["key"] == result["model"] for r in stored if r.unit.model == control)
    head = result["headline"]
    assert head[0].split()[:5] == ["task", "metric", "qaa", "others", "control"]
    rows = {line.split()[0]: line for line in head[1:]}
    assert set(rows) == set(PROBES) | {FINETUNE[0]}
    assert rows[FINETUNE[0]].split()[4] == "-"  # task, metric, qaa, others, control: none for fine-tuning
    assert rows["synth_tatoeba"].split()[6] != "-"  # task, "accuracy (layer k)", qaa, others, control
    report = (tmp_path / "qs" / "report.md").read_text(encoding="utf-8")
    assert "| model (random init) | synth_tatoeba |" in report
    assert (tmp_path / "qs" / "figures" / "layers.png").is_file()


def test_headline_control_column_from_records():
    def rec(model, lang, layer, value, control=False):
        block = {"control": "random-init", "parent": {"key": "m@1"}} if control else {}
        return Record(Unit(model, "synth_tatoeba", lang, "test", 0, layer), {"accuracy": value}, 10, model=block)

    records = [rec("m@1", "qab", 0, 40.0), rec("m@1", "qab", 1, 60.0), rec("m@1", "qac", 1, 80.0),
               rec("m@1", "qac", 0, 20.0),
               rec("m-random-init@2", "qab", 0, 30.0, True), rec("m-random-init@2", "qac", 0, 10.0, True),
               rec("m-random-init@2", "qab", 1, 5.0, True), rec("m-random-init@2", "qac", 1, 5.0, True)]
    head = headline(records, "qaa")
    assert head[0].split()[4] == "control"
    # no selection split in these records: each at its last layer (1), never the best test layer; the model's
    # others 70.0, the control's 5.0 (its test-best layer 0 would show 20.0)
    assert head[1].split()[:6] == ["synth_tatoeba", "accuracy", "(layer", "1)", "-", "70.0"]
    assert head[1].split()[6] == "5.0"
    # without a control, the summary is as before (no column)
    plain = headline([r for r in records if not r.model], "qaa")
    # (chance and majority: "-" here, the records carry no data block to tell the task's format)
    assert "control" not in plain[0] and plain[1].split()[:6] == head[1].split()[:6] and len(plain[1].split()) == 12
    assert plain[0].split()[4:6] == ["chance", "majority"] and plain[1].split()[6:8] == ["-", "-"]
