import subprocess
import sys

from xeval.base.errors import DataError
from xeval.cli import main


def test_help_lists_verbs(capsys):
    proc = subprocess.run([sys.executable, "-m", "xeval", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "VERB" in proc.stdout


def test_data_error_message_names_file_and_line():
    err = DataError("a/b.tsv", 7, "expected 2 tab-separated fields, found 3")
    assert str(err) == "a/b.tsv:7: expected 2 tab-separated fields, found 3"


def test_no_verb_prints_help_and_exits_2(capsys):
    assert main([]) == 2


# ------------------------------------------------------------------ one spelling per concept (issue 17, item 5)


def _help_texts() -> dict[str, str]:
    """``--help`` of every verb and nested verb (align score, data check, tokenizer train)."""
    import argparse

    from xeval.cli import build_parser

    out = {}

    def walk(parser, name):
        out[name] = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for verb, sub in action.choices.items():
                    walk(sub, f"{name} {verb}".strip())

    walk(build_parser(), "")
    return out


def test_every_help_uses_one_spelling_per_concept():
    import re

    helps = _help_texts()
    assert {"run", "report", "compare", "score", "align score", "tokenizer train", "synth", "quickstart"} <= set(helps)
    for verb, text in helps.items():
        options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))
        # old spellings are hidden: --output (now --out), --pred (now --predictions), --languages (a list is
        # --langs L1,L2; a count is --num-langs N)
        assert not options & {"--output", "--pred", "--pred-base", "--languages"}, (verb, options)
        assert not verb or ("-q, --quiet" in text and "-v, --verbose" in text), verb
        # metavars are readable words, not argparse's upper-cased dest (e.g. RECIPE_MAX_TRAIN)
        assert not re.findall(r"--[a-z-]+ ([A-Z]+_[A-Z_]+)", text), verb


def test_old_spellings_still_work_with_a_warning(tmp_path, capsys):
    gold = tmp_path / "g.txt"
    gold.write_text("1-1 2p2\n", encoding="utf-8")
    pred = tmp_path / "p.txt"
    pred.write_text("0-0\n", encoding="utf-8")
    assert main(["align", "score", "--gold", str(gold), "--pred", str(pred), "--pred-base", "0", "--json"]) == 0
    captured = capsys.readouterr()
    assert "--pred is deprecated; use --predictions" in captured.err
    assert '"aer": 0.0' in captured.out  # the one predicted link is the sure one
    assert main(["align", "score", "--gold", str(gold), "--predictions", str(pred), "--json"]) == 0
    assert "deprecated" not in capsys.readouterr().err


def test_a_required_option_missing_in_both_spellings_is_a_usage_error(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit) as info:
        main(["align", "score", "--gold", str(tmp_path / "g.txt")])
    assert info.value.code == 2
    assert "--predictions" in capsys.readouterr().err


def test_pretraining_keeps_only_blocks_up_to_32_mib_every_other_verb_all_of_them():
    from xeval.base.allocator import PRETRAIN_MMAP_ABOVE
    from xeval.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["pretrain", "--config", "xlm", "--out", "x"])._mmap_above == PRETRAIN_MMAP_ABOVE == 32 << 20
    assert parser.parse_args(["run", "--model", "m", "--suite", "xtreme"])._mmap_above is None
