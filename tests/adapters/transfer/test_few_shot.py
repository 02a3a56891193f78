"""Few-shot target-language transfer: shots drawn deterministically from dev, never from test, recorded; the
English weights continued with target-language shots beat zero-shot transfer by far on the tiny model."""

import pytest

from tests.helpers import transfer as helpers_transfer
from xeval.adapters.transfer.few_shot import draw, eligible, parse_shots, text_key
from xeval.base.errors import ConfigError
from xeval.cards.catalog import load_suite
from xeval.cli import main
from xeval.results.store import Store

FAST = ["--max-train", "64", "--max-dev", "16", "--max-eval", "24", "--epochs", "1", "--batch-size", "16",
        "--set", "learning_rate=0.001", "--threads", "1"]


def test_shots_parsing_drawing_and_languages():
    assert parse_shots("100,10") == [10, 100]
    for bad in ("", "0", "10,10", "ten"):
        with pytest.raises(ConfigError):
            parse_shots(bad)
    card = load_suite("few-shot").card("udpos")
    pool = list(range(50))
    ten, hundred = draw(pool, card, "fr", 1, 10), draw(pool, card, "fr", 1, 30)
    assert ten == hundred[:10] and ten == draw(pool, card, "fr", 1, 10)  # nested and deterministic
    assert ten != draw(pool, card, "fr", 2, 10) and ten != draw(pool, card, "de", 1, 10)  # per seed and language
    mini = load_suite("xtreme-mini").card("udpos")
    ok, skipped = eligible(mini, ["en", "fr", "de"])  # en trains; de is scored on dev there (the shot split)
    assert ok == ["fr"] and skipped == ["en", "de"]


@pytest.mark.slow
def test_few_shot_run(tmp_path, data_root, capsys):
    model = helpers_transfer.tiny_model(data_root)
    out = tmp_path / "runs"
    base = ["run", "--model", str(model), "--suite", "few-shot", "--data", str(data_root), "--out", str(out), *FAST]
    assert main([*base, "--tasks", "udpos,xnli", "--langs", "ar,zh,de"]) == 0  # zero-shot rows to compare with
    assert main([*base, "--tasks", "udpos,xnli", "--langs", "ar,zh,de", "--setting", "few-shot",
                 "--shots", "8,64"]) == 0
    records = list(Store(out).records())
    by = {(r.unit.task, r.unit.lang, r.unit.setting): r for r in records}
    assert set(by) == {(t, lang, s) for t, langs in (("udpos", ("ar", "zh")), ("xnli", ("de",)))
                       for lang in langs for s in ("zero-shot", "few-shot-8", "few-shot-64")}
    from xeval.data.sources import load_examples

    suite = load_suite("few-shot")
    for (task, lang, setting), rec in by.items():
        if setting == "zero-shot":
            continue
        shots = rec.config["few_shot"]
        k = int(setting.rsplit("-", 1)[1])
        assert shots["k"] == k and len(shots["ids"]) == k == len(set(shots["ids"])) and shots["source"] == f"{lang}/dev"
        assert rec.unit.split == "test" and rec.config["train"]["lang"] == "en"
        if k == 64:  # the 8 shots are the first 8 of the 64
            assert by[(task, lang, "few-shot-8")].config["few_shot"]["ids"] == shots["ids"][:8]
        card = suite.card(task)
        dev = {f"{ex.source.rsplit('/', 1)[-1]}:{ex.line}": ex for ex in load_examples(card, lang, "dev", _root(data_root))}
        test = {text_key(ex) for ex in load_examples(card, lang, "test", _root(data_root))}
        assert all(i in dev for i in shots["ids"])  # from dev ...
        assert not {text_key(dev[i]) for i in shots["ids"]} & test  # ... and never a test example
    # the tiny model transfers almost nothing zero-shot; 64 target-language sentences teach it the language's tags
    for lang in ("ar", "zh"):
        zero = by[("udpos", lang, "zero-shot")].metrics["token_accuracy"]
        assert by[("udpos", lang, "few-shot-64")].metrics["token_accuracy"] > zero + 10, lang
    # another --shots list reuses what is stored
    capsys.readouterr()
    assert main([*base, "--tasks", "udpos", "--langs", "ar,zh", "--setting", "few-shot", "--shots", "8"]) == 0
    assert "0 units computed, 2 reused" in capsys.readouterr().out
    # a task few-shot cannot run is one clear error
    assert main(["run", "--model", str(model), "--suite", "xtreme-mini", "--data", str(data_root), "--out", str(out),
                 "--tasks", "mlqa", "--langs", "de", "--setting", "few-shot", "--shots", "8", *FAST]) == 2
    assert "few-shot runs tagging and pair classification" in capsys.readouterr().err


def _root(path):
    from xeval.data.sources import DataRoot

    return DataRoot.resolve(str(path))
