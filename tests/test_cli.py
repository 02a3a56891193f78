import subprocess
import sys

from xeval.cli import main
from xeval.errors import DataError


def test_help_lists_verbs(capsys):
    proc = subprocess.run([sys.executable, "-m", "xeval", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "VERB" in proc.stdout


def test_data_error_message_names_file_and_line():
    err = DataError("a/b.tsv", 7, "expected 2 tab-separated fields, found 3")
    assert str(err) == "a/b.tsv:7: expected 2 tab-separated fields, found 3"


def test_no_verb_prints_help_and_exits_2(capsys):
    assert main([]) == 2
