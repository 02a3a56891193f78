"""What a person at a terminal sees (issue 17, item 3): progress bars on a terminal only, each task's table as soon
as the task ends, the final "N units computed, M reused, in T s" line, -q/-v, the compact probe table."""

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

from tests.helpers.transfer import tiny_model
from xeval.cli import main


def _probe_args(model, data_root, out, *extra):
    return ["run", "--model", str(model), "--suite", "probes", "--tasks", "tatoeba", "--langs", "de,fr",
            "--data", str(data_root), "--out", str(out), "--layers", "0,1", "--max-eval", "40", "--threads", "1",
            *extra]


def _read_all(fd: int, proc: subprocess.Popen) -> bytes:
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    return b"".join(chunks)


def test_a_terminal_sees_the_encoding_progress_bar_and_a_pipe_does_not(data_root, tmp_path):
    model = tiny_model(data_root)
    # a heartbeat as often as it can: a terminal still gets none (its bars say the same)
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1", "COLUMNS": "120", "XEVAL_HEARTBEAT": "0.01"}
    cmd = [sys.executable, "-m", "xeval", *_probe_args(model, data_root, tmp_path / "tty")]
    leader, follower = pty.openpty()
    # a terminal 120 columns wide (a fresh pty reports 0 x 0, and tqdm draws nothing in 0 columns)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    terminal = _read_all(leader, proc).decode("utf-8", "replace")
    out = proc.stdout.read().decode()
    assert proc.wait() == 0, terminal
    os.close(leader)
    # tqdm's bar, drawn on the terminal: 40 de + 40 en sentences of Tatoeba in one encoding (every layer at once)
    assert "encode 80 sentences" in terminal and "batch" in terminal
    assert "heartbeat" not in terminal and not re.search(r"^\d{4}-\d\d-\d\d ", terminal, re.M)  # no clock either
    assert "tatoeba (zero-shot; accuracy by layer" in out  # tables on stdout, not mixed into the bar
    piped = subprocess.run([sys.executable, "-m", "xeval", *_probe_args(model, data_root, tmp_path / "pipe")],
                           capture_output=True, text=True, env=env)
    assert piped.returncode == 0, piped.stderr
    assert "\r" not in piped.stderr and "█" not in piped.stderr  # no bar in a log file: heartbeat lines instead
    assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d heartbeat: .* > encode 80 sentences: ", piped.stderr, re.M)
    assert "- tatoeba (retrieval): de, fr" in piped.stderr  # the progress lines still are


def test_tables_per_task_and_the_final_count_line(data_root, tmp_path, capsys):
    model = tiny_model(data_root)
    args = _probe_args(model, data_root, tmp_path / "runs")
    assert main(args) == 0
    out = capsys.readouterr().out
    # one compact table for a probe over two layers: a row per language, a column per layer
    table = out[out.index("tatoeba (zero-shot; accuracy by layer"):].splitlines()
    assert table[1].split() == ["lang", "split", "0", "1"]
    rows = [row.split()[:2] for row in table[2:8]]
    # the reported split and its avg, then FLORES-200 dev (the split that chose the layer) and its avg
    assert rows[:2] == [["de", "test"], ["fr", "test"]] and rows[2][0] == "avg"
    assert rows[3:5] == [["de", "dev"], ["fr", "dev"]] and table[7].split()[:3] == ["avg", "(dev,", "FLORES-200)"]
    assert table[5].split()[1:3] == ["dev", "(FLORES-200)"]  # Tatoeba's dev rows are FLORES-200, and say so
    assert "reported at layer" in table[0] and "chosen on dev" in table[0]
    assert "8 units computed, 0 reused, in" in out  # 2 languages x 2 layers, on test and on the selection split
    assert main([*args, "--layers", "0,1,2"]) == 0  # resume: only layer 2 is new
    assert "4 units computed, 8 reused, in" in capsys.readouterr().out


def test_quiet_silences_the_log_and_verbose_is_accepted(data_root, tmp_path, capsys):
    model = tiny_model(data_root)
    assert main(_probe_args(model, data_root, tmp_path / "runs", "-q")) == 0
    captured = capsys.readouterr()
    assert "- tatoeba (retrieval)" not in captured.err and "accuracy by layer" in captured.out
    assert main(_probe_args(model, data_root, tmp_path / "runs", "-v")) == 0
    assert "- tatoeba (retrieval)" in capsys.readouterr().err
