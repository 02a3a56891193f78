"""A run in a log file (issue 26, item 2): timestamps on every line and a heartbeat line at a fixed interval while
anything runs, with the unit, progress, rate and elapsed time; none on a terminal (bars there), none under -q."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import datetime

import pytest

from tests.helpers.transfer import tiny_model
from xeval.base.heartbeat import Activity, Monitor, duration, interval_from_env

STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (.*)$")


def test_an_activity_says_progress_rate_elapsed_and_eta():
    steps = Activity("fine-tune udpos", total=500, unit="step")
    steps.started, steps.n = 100.0, 120
    steps.set_postfix(loss="0.412")
    # 120 steps in 65 s: 1.846 steps/s; 380 left / 1.846 = 205.8 s
    assert steps.describe(now=165.0) == \
        "fine-tune udpos: 120/500 steps (24%), 1.85 steps/s, 1m05s, eta 3m25s, loss=0.412"
    steps.n = 1  # slower than one a second: seconds per step, as tqdm says it
    assert steps.describe(now=125.2) == "fine-tune udpos: 1/500 steps (0%), 25.2 s/step, 25s, eta 3h29m, loss=0.412"
    batches = Activity("encode 1000 sentences", unit="batch")  # no total: a count
    batches.started, batches.n = 0.0, 3
    assert batches.describe(now=2.0) == "encode 1000 sentences: 3 batches, 1.5 batches/s, 2s"
    run = Activity("xeval run", total=46, unit="work item", rate=False)  # items of unequal cost: counts only
    run.started, run.n = 0.0, 2
    assert run.describe(now=635.0) == "xeval run: 2/46 work items (4%), 10m35s"
    item = Activity("udpos (de, seed 1)")  # a label: what runs, for how long
    item.started = 0.0
    assert item.describe(now=130.0) == "udpos (de, seed 1) 2m10s"
    assert [duration(s) for s in (0, 59.9, 60, 3599, 3600, 7440)] == ["0s", "59s", "1m00s", "59m59s", "1h00m", "2h04m"]


def test_a_resumed_progress_counts_its_earlier_steps_but_not_in_its_rate():
    from xeval.base import console

    steps = console.progress(total=6260, desc="panx s1", unit="step", initial=2000)  # not a terminal: an Activity
    steps.started = 0.0
    steps.update(100)
    # 100 steps in 150 s since the resume: 1.5 s/step, 4160 left = 1h44m; 2100 of 6260 done
    assert steps.describe(now=150.0) == "panx s1: 2100/6260 steps (34%), 1.5 s/step, 2m30s, eta 1h44m"
    steps.close()  # off the process's heartbeat: later tests' lines must not show it
    assert steps not in console.monitor.stack


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("XEVAL_HEARTBEAT", raising=False)
    assert interval_from_env() == (30.0, None)
    monkeypatch.setenv("XEVAL_HEARTBEAT", "2.5")
    assert interval_from_env() == (2.5, None)
    monkeypatch.setenv("XEVAL_HEARTBEAT", "0")
    assert interval_from_env() == (0.0, None)  # off
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv("XEVAL_HEARTBEAT", bad)
        seconds, warning = interval_from_env()
        assert seconds == 30.0 and "XEVAL_HEARTBEAT: expected seconds between progress lines" in warning
        assert repr(bad) in warning


def test_the_monitor_writes_while_something_runs_and_stops_after(monkeypatch):
    lines: list[str] = []
    monitor = Monitor(lines.append, interval=0.2)
    monitor.enabled = True
    outer = Activity("xeval run", total=2, unit="work item", monitor=monitor)
    inner = Activity("predict 64", total=4, unit="batch", monitor=monitor)
    inner.update(3)
    deadline = time.monotonic() + 10
    while len(lines) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(lines) >= 2, lines
    assert lines[0].startswith("heartbeat: xeval run: 0/2 work items (0%)")
    assert " > predict 64: 3/4 batches (75%)" in lines[0]
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert monitor.line().startswith("heartbeat [rank 1/2]: xeval run: ")  # torchrun: whose line it is
    outer.close()  # closes what was started inside it and left open (an exception out of its loop)
    assert monitor.stack == [] and monitor.line() is None
    count = len(lines)
    time.sleep(0.6)
    assert len(lines) == count  # nothing runs: no line
    monitor.enabled = False


def test_a_push_wakes_a_thread_asleep_on_an_earlier_longer_interval():
    """The CI race of the API heartbeat test: an earlier run left the thread in a 1 s sleep (interval 30 s); a run of
    well under a second with a 0.01 s interval must still beat, not wait out the old sleep."""
    lines: list[str] = []
    monitor = Monitor(lines.append, interval=30.0)
    monitor.enabled = True
    first = Activity("earlier run", monitor=monitor)
    time.sleep(0.05)  # the thread is now asleep for min(1 s, 30 s / 4)
    first.close()
    monitor.interval = 0.01
    started = time.monotonic()
    with Activity("short run", total=2, unit="work item", monitor=monitor):
        while not lines and time.monotonic() - started < 0.5:
            time.sleep(0.01)
    monitor.enabled = False
    assert lines and lines[0].startswith("heartbeat: short run: 0/2 work items"), lines


def _run_to_file(tmp_path, model, data_root, interval: str, *extra) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1", "XEVAL_HEARTBEAT": interval}
    tmp_path.mkdir(parents=True, exist_ok=True)
    log, out = tmp_path / "run.log", tmp_path / "run.out"
    with open(log, "w") as err_file, open(out, "w") as out_file:  # as under nohup or SLURM: files, no terminal
        proc = subprocess.run([sys.executable, "-m", "xeval", "run", "--model", str(model), "--data", str(data_root),
                               "--out", str(tmp_path / "runs"), "--threads", "1", *extra],
                              stdout=out_file, stderr=err_file, env=env, timeout=600)
    return proc.returncode, log.read_text(), out.read_text()


def _stamped(log: str) -> list[tuple[datetime, str]]:
    lines = [line for line in log.splitlines() if line.strip()]
    bad = [line for line in lines if not STAMP.match(line)]
    assert not bad, f"lines without a timestamp: {bad}"
    return [(datetime.strptime(STAMP.match(line)[1], "%Y-%m-%d %H:%M:%S"), STAMP.match(line)[2]) for line in lines]


def test_a_fine_tuning_run_redirected_to_a_file_has_timestamps_and_a_heartbeat(data_root, tmp_path):
    model = tiny_model(data_root)
    rc, log, out = _run_to_file(tmp_path, model, data_root, "0.1", "--suite", "xtreme-mini", "--tasks", "pawsx",
                                "--langs", "de", "--seeds", "2", "--max-train", "128", "--max-dev", "16",
                                "--max-eval", "32", "--epochs", "1", "--batch-size", "16")
    assert rc == 0, log
    lines = _stamped(log)
    assert any(text.startswith("xeval run: tiny@") for _, text in lines)
    beats = [(when, text) for when, text in lines if text.startswith("heartbeat: ")]
    assert len(beats) >= 2, log
    # the whole run's progress first, then the work item (unit) running now, then what it is doing
    assert all(re.match(r"heartbeat: xeval run: [012]/2 work items \(\d+%\), \d+s >", text) for _, text in beats), log
    assert any(re.search(r" > pawsx \(de, seed [12]\) \d+s", text) for _, text in beats), log
    # every line at most the interval after the one before (timestamps in whole seconds; a busy machine's slack)
    first = lines.index(beats[0])
    gaps = [(b[0] - a[0]).total_seconds() for a, b in zip(lines[first:], lines[first + 1:])]
    assert max(gaps, default=0) <= 3, log
    assert "pawsx (zero-shot; 2 seeds)" in out and "heartbeat" not in out  # tables on stdout, progress on stderr
    assert "\r" not in log  # no bar in a file


def test_configure_turns_the_heartbeat_on_for_a_log_only(monkeypatch, capsys):
    from xeval.base import console

    saved = console.state()
    try:
        monkeypatch.setattr(console, "on_terminal", lambda: False)  # pytest's capture: no terminal either way
        monkeypatch.setenv("XEVAL_HEARTBEAT", "7")
        console.configure(0)
        assert console.monitor.enabled and console.monitor.interval == 7
        console.log.info("a line")
        assert STAMP.match(capsys.readouterr().err.strip())[2] == "a line"  # a log line says when
        console.configure(-1)  # -q: warnings only, no heartbeat
        assert not console.monitor.enabled
        monkeypatch.setenv("XEVAL_HEARTBEAT", "0")
        console.configure(0)
        assert not console.monitor.enabled
        monkeypatch.setenv("XEVAL_HEARTBEAT", "often")
        console.configure(0)  # a bad value: one warning, the default
        assert console.monitor.enabled and console.monitor.interval == 30
        assert "XEVAL_HEARTBEAT: expected seconds" in capsys.readouterr().err
        monkeypatch.setattr(console, "on_terminal", lambda: True)
        monkeypatch.delenv("XEVAL_HEARTBEAT")
        console.configure(0)  # a terminal: bars instead, lines without a clock
        assert not console.monitor.enabled
        console.log.info("a line")
        assert capsys.readouterr().err.strip() == "a line"
    finally:
        console.restore(saved)


@pytest.mark.slow
def test_a_real_model_run_in_a_file_has_no_load_report_and_beats_while_encoding(e5_dir, data_root, tmp_path):
    rc, log, out = _run_to_file(tmp_path, e5_dir, data_root, "1", "--suite", "probes", "--tasks", "tatoeba",
                                "--langs", "de", "--layers", "12", "--max-eval", "300")
    assert rc == 0, log
    lines = _stamped(log)  # no line of transformers' LOAD REPORT table (MISSING pooler weights) either
    assert "LOAD REPORT" not in log and "pooler" not in log and "MISSING" not in log
    assert lines[0][1].startswith("xeval run: e5-small-"), log  # xeval's line comes first
    assert any(re.search(r" > tatoeba \(de\) \d+.* > encode 600 sentences: \d+/\d+ batches", text)
               for _, text in lines), log
    assert "tatoeba" in out


def test_pretraining_in_a_log_reports_to_the_heartbeat(monkeypatch):
    from types import SimpleNamespace

    from xeval.base import console
    from xeval.engine.runlog import progress_bar

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    progress = progress_bar(SimpleNamespace(max_seconds=None, steps=100), start=40, elapsed0=12.0, rank=0)
    try:
        assert progress in console.monitor.stack  # a resumed run: 40 steps done before, not part of the rate
        progress.update(6)
        assert progress.describe(now=progress.started + 3.0) == "pretrain: 46/100 steps (46%), 2 steps/s, 3s, eta 27s"
        with progress.external_write_mode():  # the run log's lines go through it as through a bar
            pass
    finally:
        progress.close()
    assert progress not in console.monitor.stack
    assert progress_bar(SimpleNamespace(max_seconds=None, steps=100), start=0, elapsed0=0.0, rank=1) is None
