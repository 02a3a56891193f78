"""Bad input, broken files and a gate that cannot be fooled (issue 12): every case is one clear line on stderr naming
the file (and its line or position, or the flag), exit status 2, no traceback, nothing new in the store or output
folder, and never exit 0 with a number the input made wrong.

The CLI runs in-process (``xeval.cli.main``); ``capfd`` captures stderr at the file-descriptor level, so a progress
bar printed by a library (transformers' "Loading weights") counts against the one line as a user would see it, and
an exception that escapes ``main`` fails the test (a user would have seen its traceback)."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import one_card_world
from tests.helpers import transfer as helpers_transfer
from tests.helpers.report_records import rec, write_run
from xeval import cli
from xeval.cards.catalog import load_card


def snapshot(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*")}


def one_error(capfd, argv: list[str], status: int = 2) -> str:
    """Run the CLI; assert the exit status, no traceback and exactly one error line; return that line. Under -q, so
    xeval's progress log (stderr, INFO) is not counted: the error is what must be one line."""
    got = cli.main([argv[0], "-q", *argv[1:]])
    out, err = capfd.readouterr()
    assert got == status, f"exit {got}\nstdout: {out[-1500:]}\nstderr: {err[-1500:]}"
    assert "Traceback" not in err
    assert "Loading weights" not in err  # transformers' bar before the error line
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(f"xeval {argv[0]}: error: ")]
    assert len(errors) == 1, err
    if argv[0] == "data" and lines[-1] != errors[0]:  # data check collects every problem, then one summary line
        assert re.fullmatch(r"xeval data: \d+ of \d+ sources failed", lines[-1]) and lines[-2] == errors[0], err
    else:  # progress lines of a run may come before it; the error is the last line
        assert lines[-1] == errors[0], err
    return errors[0]


def names_line(line: str, path: Path) -> None:
    """The error names ``path`` and a line (``path:N:``)."""
    assert re.search(re.escape(str(path)) + r":\d+: ", line), line


# --------------------------------------------------------------------------------------- a small world of data

CARD = """\
name: {name}
type: {type}
format: {format}
languages: [de]
metric: {metric}
eval_split: dev
{labels}
{train}
files:
  shared:
    dev: {files}
citation: test
licence: test
"""

KINDS = {  # kind -> (type, format, metric, label card or None, files)
    "panx": ("tagging", "tagging", "f1", "panx", "xnli_xtreme/panx-{lang}.tsv"),
    "udpos": ("tagging", "tagging", "f1", "udpos", "xnli_xtreme/udpos-{lang}.tsv"),
    "xnli": ("pair_classification", "pairs", "accuracy", "xnli", "xnli_xtreme/xnli-{lang}.tsv"),
    "pawsx": ("pair_classification", "pairs", "accuracy", "pawsx", "xnli_xtreme/pawsx-{lang}.tsv"),
    "squad": ("qa", "squad", "f1", None, "xnli_xtreme/squad-{lang}.json"),
    "mnli": ("pair_classification", "mnli_json", "accuracy", "xnli", "xnli_xtreme/mnli-{lang}.json"),
    "tatoeba": ("retrieval", "tatoeba", "accuracy", None,
                '{src: "xnli_xtreme/tatoeba.deu-eng.deu", tgt: "xnli_xtreme/tatoeba.deu-eng.eng"}'),
}

GOOD = {
    "panx": "Berlin\tB-LOC\nist\tO\n\n",
    "udpos": "Das\tDET\nHaus\tNOUN\n\n",
    "xnli": "Ein Satz\tNoch einer\tneutral\r\n",
    "pawsx": "Ein Satz\tNoch einer\t1\r\n",
}


LABELS = {name: load_card(name).labels for name in ("panx", "udpos", "xnli", "pawsx")}  # the shipped label sets


@pytest.fixture
def world(tmp_path, monkeypatch):
    """``make(kind, text)`` writes a one-card suite 't' ($XEVAL_TASKS) whose de dev file holds ``text`` (bytes or
    str), in a shared-layout data folder; returns (data folder, the file)."""
    tasks, data = one_card_world(tmp_path, monkeypatch)

    def make(kind: str, text, train: bool = False):
        type_, fmt, metric, label_card, files = KINDS[kind]
        labels = f"labels: {json.dumps(LABELS[label_card])}" if label_card else ""
        (tasks / "tiny.yaml").write_text(CARD.format(name="tiny", type=type_, format=fmt, metric=metric,
                                                     labels=labels, files=files,
                                                     train="train: {lang: de, split: dev}" if train else ""))
        if kind == "tatoeba":
            path = data / "xnli_xtreme" / "tatoeba.deu-eng.deu"
            (data / "xnli_xtreme" / "tatoeba.deu-eng.eng").write_bytes(b"" if not text else b"A sentence\n")
        else:
            path = data / files.replace("{lang}", "de")
        path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        return data.resolve(), path.resolve()

    return make


def squad(questions: list[dict]) -> str:
    return json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "Berlin ist eine Stadt.", "qas": questions}]}]},
                      indent=1)


Q_OK = {"id": "q1", "question": "Was?", "answers": [{"text": "Berlin", "answer_start": 0}]}
Q_NONE = {"id": "q2", "question": "Wer?"}

DATA_CASES = {
    # evaluation labels outside the card's label set (scored as wrong predictions before)
    "panx tag Q-LOC": ("panx", "Berlin\tB-LOC\nist\tO\n\nParis\tQ-LOC\n\n", 4),
    "udpos tag NOUNX": ("udpos", "Das\tDET\nHaus\tNOUNX\n\n", 2),
    "xnli label maybe": ("xnli", "a\tb\tneutral\r\nc\td\tmaybe\r\n", 2),
    "pawsx label 2": ("pawsx", "a\tb\t1\r\nc\td\t2\r\n", 2),
    # one question without answers among labelled ones (the file was called label-free before)
    "squad partly unlabelled": ("squad", squad([Q_OK, Q_NONE]), None),
    # empty files ("0 examples ... ok" before; run died in faiss for Tatoeba)
    "empty tatoeba": ("tatoeba", b"", None),
    "empty tagging file": ("panx", b"", None),
    "empty pair file": ("xnli", b"\r\n", None),
    "squad without questions": ("squad", json.dumps({"data": []}), None),
    # bytes and types
    "NUL byte in a line": ("xnli", "a\tb\tneutral\r\nc\x00d\te\tneutral\r\n", 2),
    "tagging bad byte": ("panx", b"Berlin\tB-LOC\n\xff\tO\n", 2),
    "MultiNLI bad byte": ("mnli", b'{"0": {"text_a": "a", "text_b": "b", "label": "neutral"},\n "1": "\xff"}', 2),
    "MultiNLI non-string text": ("mnli", '{"0": {"text_a": "a", "text_b": "b", "label": "neutral"},\n'
                                         ' "1": {"text_a": 7, "text_b": "b", "label": "neutral"}}', 2),
    "MultiNLI label": ("mnli", '{"0": {"text_a": "a", "text_b": "b", "label": "maybe"}}', 1),
    "squad bad byte": ("squad", b'{"data": [\n"\xfe"]}', 2),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_data_check_names_file_and_line(world, capfd, tmp_path, case):
    kind, text, line = DATA_CASES[case]  # (no training split: one source, one error line)
    data, path = world(kind, text)
    before = snapshot(tmp_path)
    error = one_error(capfd, ["data", "check", "--data", str(data), "--suite", "t"])
    if line is not None:
        assert f"{path}:{line}: " in error, error
    elif kind == "squad" and "data" not in text[:12]:
        names_line(error, path)
    else:
        assert str(path) in error, error
    assert snapshot(tmp_path) == before


def test_partly_unlabelled_squad_names_the_question(world, capfd):
    data, path = world("squad", squad([Q_OK, Q_NONE]))
    error = one_error(capfd, ["data", "check", "--data", str(data), "--suite", "t"])
    assert "'q2'" in error and re.search(re.escape(str(path)) + r":\d+: expected answers", error)


def test_fully_label_free_squad_and_bom_json_stay_accepted(world, capfd):
    data, _ = world("squad", squad([{**Q_NONE, "id": "a"}, {**Q_NONE, "id": "b"}]))
    assert cli.main(["data", "check", "--data", str(data), "--suite", "t"]) == 0
    data, _ = world("mnli", b"\xef\xbb\xbf" + b'{"0": {"text_a": "a", "text_b": "b", "label": "neutral"}}')
    assert cli.main(["data", "check", "--data", str(data), "--suite", "t"]) == 0
    for kind, text in GOOD.items():  # the label check lets the real label sets through
        data, _ = world(kind, text)
        assert cli.main(["data", "check", "--data", str(data), "--suite", "t"]) == 0, (kind, capfd.readouterr().err)
    capfd.readouterr()


# ------------------------------------------------------------------------------------------ run: model folders


@pytest.fixture(scope="module")
def tiny(data_root) -> Path:
    return helpers_transfer.tiny_model(data_root)


def broken_model(tiny: Path, tmp_path: Path, how: str) -> tuple[Path, Path]:
    """A copy of the tiny model broken one way; returns (folder, the file the error must name)."""
    folder = tmp_path / "model"
    shutil.copytree(tiny, folder)
    if how == "no tokenizer":
        for p in folder.iterdir():
            if p.name not in ("config.json", "model.safetensors"):
                p.unlink()
        return folder, folder
    if how == "tokenizer.json bad JSON":
        (folder / "tokenizer.json").write_text('{"version": \n')
        return folder, folder / "tokenizer.json"
    if how == "safetensors header not JSON":
        (folder / "model.safetensors").write_bytes((10).to_bytes(8, "little") + b"{not json}" + bytes(64))
        return folder, folder / "model.safetensors"
    if how == "truncated safetensors":
        data = (folder / "model.safetensors").read_bytes()
        (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
        return folder, folder / "model.safetensors"
    config = json.loads((folder / "config.json").read_text())
    if how == "config.json a list":
        (folder / "config.json").write_text("[1, 2]\n")
    elif how == "config.json wrong type":
        config["num_hidden_layers"] = "two"
        (folder / "config.json").write_text(json.dumps(config, indent=2))
    elif how == "config.json bad JSON":
        (folder / "config.json").write_text(json.dumps(config, indent=2)[:-3])
    return folder, folder / "config.json"


@pytest.mark.parametrize("how", ["no tokenizer", "truncated safetensors", "config.json a list",
                                 "config.json wrong type", "config.json bad JSON", "tokenizer.json bad JSON",
                                 "safetensors header not JSON"])
def test_broken_model_folder_is_one_line_before_any_work(world, tiny, tmp_path, capfd, how):
    data, _ = world("panx", GOOD["panx"])
    model, named = broken_model(tiny, tmp_path, how)
    before = snapshot(tmp_path)
    error = one_error(capfd, ["run", "--model", str(model), "--suite", "t", "--data", str(data),
                              "--out", str(tmp_path / "runs")])
    assert str(named) in error and "Loading weights" not in error, error
    if named.name.endswith(".json"):
        names_line(error, named)
    assert snapshot(tmp_path) == before


def test_bad_evaluation_labels_fail_run_and_store_nothing(world, tiny, tmp_path, capfd):
    data, path = world("xnli", "a\tb\tneutral\r\nc\td\tmaybe\r\n", train=True)
    error = one_error(capfd, ["run", "--model", str(tiny), "--suite", "t", "--data", str(data),
                              "--out", str(tmp_path / "runs"), "--max-train", "2", "--epochs", "1"])
    assert f"{path}:2: expected a label of task tiny" in error
    assert not list((tmp_path / "runs").rglob("*.json"))


# ------------------------------------------------------------------------------------------ run: arguments

ARG_CASES = {
    "--batch-size 0": (["--batch-size", "0"], "batch_size"),
    "--learning-rate nan": (["--learning-rate", "nan"], "learning_rate"),
    "--epochs 0": (["--epochs", "0"], "epochs"),
    "--max-eval -5": (["--max-eval", "-5"], "max_eval"),
    "--max-eval 0": (["--max-eval", "0"], "max_eval"),
    "--seeds huge": (["--seeds", "99999999999999999999"], "--seeds"),
    "--seeds list out of range": (["--seeds", "1,99999999999999999999"], "--seeds"),
    "--threads 0": (["--threads", "0"], "--threads"),
    "--control-seed huge": (["--control", "random-init", "--control-seed", str(2**70)], "--control-seed"),
    "--out a file": (["--out", "a-file"], "--out expects a folder"),
    "--export-predictions a file": (["--export-predictions", "a-file"], "--export-predictions expects a folder"),
    "--out under a file": (["--out", "a-file/runs"], "which is a file"),
    "--plot under a file": (["--plot", "a-file/sweep"], "--plot lies under"),
}


@pytest.mark.parametrize("case", list(ARG_CASES))
def test_bad_run_arguments_fail_before_loading(world, tmp_path, capfd, case):
    extra, expected = ARG_CASES[case]
    data, _ = world("panx", GOOD["panx"])
    (tmp_path / "a-file").write_text("x")
    before = snapshot(tmp_path)
    argv = ["run", "--model", str(tmp_path / "no-model-needed"), "--suite", "t", "--data", str(data)]
    if "--out" not in extra:
        argv += ["--out", str(tmp_path / "runs")]
    error = one_error(capfd, argv + extra)
    assert expected in error, error
    assert snapshot(tmp_path) == before


def test_long_model_folder_name_is_shortened_with_a_hash(tmp_path):
    from xeval.results.store import Store, Unit

    name = "m" * 250 + "@0123456789ab"
    path = Store(tmp_path).path(Unit(model=name, task="panx", lang="de", split="dev", seed=1))
    assert len(path.parent.parent.name) <= 120 and path.parent.parent.name.startswith("m" * 50)
    other = Store(tmp_path).path(Unit(model="m" * 251 + "@0123456789ab", task="panx", lang="de", split="dev"))
    assert other.parent.parent.name != path.parent.parent.name  # the hash keeps them apart
    assert Store(tmp_path).put(rec(name, "panx", "de", {"f1": 1.0})).is_file()


# ------------------------------------------------------------------------------------------ compare: the gate


def gate(capfd, tmp_path, base_records, current_records, *extra) -> tuple[int, str]:
    base, cur = write_run(tmp_path / "base", base_records), write_run(tmp_path / "cur", current_records)
    assert cli.main(["report", str(base), "--format", "baseline", "--out", str(tmp_path / "b.json")]) == 0
    status = cli.main(["compare", "--baseline", str(tmp_path / "b.json"), "--current", str(cur), *extra])
    out, err = capfd.readouterr()
    assert "Traceback" not in err
    return status, out


def test_nan_in_the_baseline_is_written_null_and_fails_as_missing(tmp_path, capfd):
    status, out = gate(capfd, tmp_path, [rec("m@1", "xnli", "de", {"accuracy": math.nan})],
                       [rec("m@1", "xnli", "de", {"accuracy": 0.0})])
    doc = json.loads((tmp_path / "b.json").read_text())  # strict JSON: no NaN literal
    assert doc["entries"][0]["value"] is None and "NaN" not in (tmp_path / "b.json").read_text()
    assert status == 1 and out.startswith("FAIL: 0 regressed, 1 missing")


def test_nan_in_one_of_two_seeds_is_flagged_not_dropped(tmp_path, capfd):
    base = [rec("m@1", "xnli", "de", {"accuracy": 26.6}, seed=s) for s in (1, 2)]
    cur = [rec("m@1", "xnli", "de", {"accuracy": 30.0}, seed=1), rec("m@1", "xnli", "de", {"accuracy": math.nan}, seed=2)]
    status, out = gate(capfd, tmp_path, base, cur)
    assert status == 1 and "1 missing" in out and "0 improved" in out


def test_inf_is_not_improved(tmp_path, capfd):
    status, out = gate(capfd, tmp_path, [rec("m@1", "xnli", "de", {"accuracy": 26.6})],
                       [rec("m@1", "xnli", "de", {"accuracy": math.inf})])
    assert status == 1 and "0 improved" in out and "1 missing" in out


@pytest.mark.parametrize("flags", [["--tolerance", "nan"], ["--tolerance", "inf"], ["--metric-tolerances", "accuracy=nan"],
                                   ["--metric-tolerances", "xnli:accuracy=inf"]])
def test_non_finite_tolerances_are_refused(tmp_path, capfd, flags):
    base = write_run(tmp_path / "base", [rec("m@1", "xnli", "de", {"accuracy": 26.6})])
    write_run(tmp_path / "cur", [rec("m@1", "xnli", "de", {"accuracy": 0.0})])
    error = one_error(capfd, ["compare", "--baseline", str(base), "--current", str(tmp_path / "cur"), *flags])
    assert flags[0] in error and "finite" in error


# ------------------------------------------------------------------------------- records and baselines of the wrong shape

RECORD = {"schema": "xeval.result/1", "unit": {"model": "m@1", "task": "xnli", "lang": "de", "split": "dev",
                                               "seed": 1, "layer": None, "setting": "zero-shot"},
          "metrics": {"accuracy": 50.0}, "n_examples": 3}

SHAPE_CASES = {
    "record a JSON list": b"[1, 2]",
    "record list-valued metrics": json.dumps({**RECORD, "metrics": {"accuracy": [1, 2]}}, indent=2).encode(),
    "record non-integer seed": json.dumps({**RECORD, "unit": {**RECORD["unit"], "seed": "one"}}, indent=2).encode(),
    "record metrics a list": json.dumps({**RECORD, "metrics": [50.0]}, indent=2).encode(),
    "record invalid UTF-8": json.dumps(RECORD, indent=2).encode().replace(b'"de"', b'"d\xff"'),
}


@pytest.mark.parametrize("case", list(SHAPE_CASES))
@pytest.mark.parametrize("verb", ["report", "compare"])
def test_wrong_shape_records_name_the_file(tmp_path, capfd, case, verb):
    store = tmp_path / "runs"
    path = store / "m_1" / "xnli" / "de.dev.s1.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(SHAPE_CASES[case])
    argv = ["report", str(store)] if verb == "report" else ["compare", "--baseline", str(store), "--current", str(store)]
    error = one_error(capfd, argv)
    names_line(error, path)


BASELINE_CASES = {
    "baseline a JSON list": b"[]",
    "baseline entries not objects": b'{"schema": "xeval.baseline/1", "entries": [\n  1\n ]}',
    "baseline string value": b'{"schema": "xeval.baseline/1", "entries": [\n  {"task": "xnli", "lang": "de", '
                             b'"split": "dev", "setting": "zero-shot", "layer": null, "metric": "accuracy", '
                             b'"value": "high"}\n ]}',
    "baseline Infinity": b'{"schema": "xeval.baseline/1", "entries": [\n  {"task": "xnli", "lang": "de", '
                         b'"split": "dev", "setting": "zero-shot", "layer": null, "metric": "accuracy", '
                         b'"value": Infinity}\n ]}',
    "baseline invalid UTF-8": b'{"schema": "xeval.baseline/1",\n "model": "\xff", "entries": []}',
}


@pytest.mark.parametrize("case", list(BASELINE_CASES))
def test_wrong_shape_baselines_name_the_file(tmp_path, capfd, case):
    write_run(tmp_path / "cur", [rec("m@1", "xnli", "de", {"accuracy": 50.0}, split="dev")])
    path = tmp_path / "b.json"
    path.write_bytes(BASELINE_CASES[case])
    error = one_error(capfd, ["compare", "--baseline", str(path), "--current", str(tmp_path / "cur")])
    assert str(path) in error and "baseline" in error, error
    if case != "baseline a JSON list":
        names_line(error, path)


@pytest.mark.parametrize("verb", ["report", "compare"])
def test_report_and_compare_out_a_folder_fail_first(tmp_path, capfd, verb):
    run = write_run(tmp_path / "cur", [rec("m@1", "xnli", "de", {"accuracy": 50.0}, split="dev")])
    (tmp_path / "dir").mkdir()
    argv = (["report", str(run)] if verb == "report" else ["compare", "--baseline", str(run), "--current", str(run)])
    error = one_error(capfd, argv + ["--out", str(tmp_path / "dir")])
    assert "--out expects a file name" in error and str(tmp_path / "dir") in error


# ------------------------------------------------------------------------------------------ pretrain and tokenizer


def test_pretrain_config_errors_are_one_line(tmp_path, capfd):
    out = tmp_path / "ckpt"
    error = one_error(capfd, ["pretrain", "--config", "mlm", "--size", "micro", "--out", str(out), "--steps", "-5"])
    assert "train.steps must be an integer >= 0, found -5" in error
    error = one_error(capfd, ["pretrain", "--config", "mlm", "--out", str(out), "--set", "trian.lr=1e-3"])
    assert "unknown section 'trian'" in error
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"name: bad\ntrain:\n  lr: 1e-3 # caf\xe9\n")
    error = one_error(capfd, ["pretrain", "--config", str(bad), "--out", str(out)])
    names_line(error, bad)
    assert f"{bad}:3: expected UTF-8 YAML" in error
    error = one_error(capfd, ["tokenizer", "train", "--corpus", str(tmp_path), "--vocab-size", "10",
                              "--out", str(out)])
    assert "--vocab-size: expected at least 361" in error
    assert not out.exists()


# ------------------------------------------------------------------------------------------ pretrain: leftovers, resume


@pytest.fixture(scope="module")
def engine_root(tmp_path_factory) -> Path:
    from tests.helpers.engine import make_data_root

    return make_data_root(tmp_path_factory.mktemp("engine-data"), n_pairs=120, n_mono=120)


def pretrain_yaml(path: Path, root: Path, tokenizer_dir: Path | None = None, **changes) -> Path:
    """A micro pre-training config file (MLM, 2 x 32) for ``xeval pretrain --config``; ``changes``: section ->
    {key: value} merged over it."""
    import yaml

    from tests.helpers.engine import micro_config

    cfg = micro_config(root, {"mlm": {}}, tokenizer_dir, steps=2, log_every=1).to_dict()
    for section, values in changes.items():
        cfg[section].update(values)
    cfg.pop("size")
    path.write_text(yaml.safe_dump({**cfg, "size": "micro", "sizes": {"micro": {}}}))
    return path


def test_a_failed_pretrain_tokenizer_is_not_reused_by_the_fixed_rerun(engine_root, tmp_path, capfd):
    from xeval.engine.tokenizer import load_tokenizer

    out = tmp_path / "ckpt"
    bad = pretrain_yaml(tmp_path / "bad.yaml", engine_root, tokenizer={"vocab_size": 400},
                        model={"num_attention_heads": 3})  # 32 is not a multiple of 3: fails after the tokenizer
    error = one_error(capfd, ["pretrain", "--config", str(bad), "--out", str(out)])
    assert "num_attention_heads" in error or "hidden_size" in error, error
    assert load_tokenizer(out).get_vocab_size() == 400  # the failed run's tokenizer is still there
    fixed = pretrain_yaml(tmp_path / "fixed.yaml", engine_root, tokenizer={"vocab_size": 450})
    assert cli.main(["pretrain", "--config", str(fixed), "--out", str(out)]) == 0
    capfd.readouterr()
    saved = json.loads((out / "xeval_pretrain.json").read_text())["config"]["tokenizer"]["vocab_size"]
    assert saved == 450 == load_tokenizer(out).get_vocab_size()  # the record and the tokenizer agree
    assert "left by an earlier run with other settings (tokenizer.vocab_size 400 -> 450)" in (out / "train.log").read_text()


@pytest.fixture(scope="module")
def engine_tokenizer(tmp_path_factory, engine_root) -> Path:
    from xeval.engine.tokenizer import build_tokenizer

    out = tmp_path_factory.mktemp("engine-tok")
    build_tokenizer([str(engine_root)], out, vocab_size=400, model="bpe", sample_lines=1000, log=lambda *a: None)
    return out


@pytest.fixture
def interrupted(engine_root, engine_tokenizer, tmp_path, capfd) -> tuple[Path, Path]:
    """(config file, output folder) of a micro run stopped after step 1 (a state to --resume)."""
    config = pretrain_yaml(tmp_path / "run.yaml", engine_root, engine_tokenizer, train={"stop_after": 1})
    out = tmp_path / "ckpt"
    assert cli.main(["pretrain", "--config", str(config), "--out", str(out)]) == 0
    capfd.readouterr()
    assert (out / "state" / "step-0000001" / "state.json").is_file()
    return config, out


def test_resume_with_a_changed_config_refuses_with_a_diff(interrupted, engine_root, engine_tokenizer, tmp_path, capfd):
    _, out = interrupted
    changed = pretrain_yaml(tmp_path / "changed.yaml", engine_root, engine_tokenizer, train={"lr": 0.002})
    before = snapshot(out)
    error = one_error(capfd, ["pretrain", "--config", str(changed), "--out", str(out), "--resume"])
    assert "train.lr 0.001 -> 0.002" in error and "--resume" in error, error
    assert snapshot(out) == before


@pytest.mark.parametrize("broken", ["truncated optimizer state", "state.json bad JSON", "state.json a list"])
def test_broken_state_on_resume_names_the_file(interrupted, capfd, broken):
    config, out = interrupted
    state = out / "state" / "step-0000001"
    if broken == "truncated optimizer state":
        named = state / "optimizer.safetensors"
        named.write_bytes(named.read_bytes()[:100])
    else:
        named = state / "state.json"
        named.write_text(named.read_text()[:-10] if broken == "state.json bad JSON" else "[1]\n")
    error = one_error(capfd, ["pretrain", "--config", str(config), "--out", str(out), "--resume"])
    assert str(named) in error, error
    if named.name == "state.json":
        names_line(error, named)


def test_stale_partial_state_folders_are_removed_on_the_next_start(interrupted, capfd):
    config, out = interrupted
    stale = out / "state" / ".step-0000002-x1y2"  # what a kill during a checkpoint write leaves
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"partial")
    assert cli.main(["pretrain", "--config", str(config), "--out", str(out), "--resume",
                     "--set", "train.stop_after=null"]) == 0
    capfd.readouterr()
    assert not stale.exists() and not list((out / "state").glob(".step-*"))
    assert (out / "state" / "latest").read_text().strip() == "step-0000002"


# ------------------------------------------------------------------------------------------ also


def test_alignment_words_are_split_on_ascii_spaces_only(tmp_path):
    from xeval.data.alignment_gold import read_alignment

    text, gold = tmp_path / "jaen.src-tgt", tmp_path / "jaen.gold"
    # KFTT-derived gold counts the ideographic space U+3000 as a word of its own: 'b' is word 3, not word 2
    text.write_text("a \u3000 b  ||| x y z\n", encoding="utf-8")
    gold.write_text("1-1 3-3 2p2\n", encoding="utf-8")
    (pair,) = read_alignment(text, gold, "ja-en")
    assert pair.src_tokens == ["a", "\u3000", "b"] and pair.sure == {(0, 0), (2, 2)} and pair.possible == {(1, 1)}


@pytest.mark.parametrize("files", ['"../../../../etc/passwd"', '"/etc/passwd"', '"xnli_xtreme/../../outside.tsv"'])
def test_card_paths_stay_inside_the_data_root(world, tmp_path, capfd, files):
    world("xnli", GOOD["xnli"])
    card = tmp_path / "tasks" / "tiny.yaml"
    card.write_text(card.read_text().replace('dev: xnli_xtreme/xnli-{lang}.tsv', f"dev: {files}"))
    (tmp_path / "outside.tsv").write_text(GOOD["xnli"])
    error = one_error(capfd, ["data", "check", "--data", str(tmp_path / "data"), "--suite", "t"])
    assert f"{card}: expected a path inside the data folder" in error, error


def test_task_names_are_not_paths(world, tmp_path, capfd):
    world("xnli", GOOD["xnli"])
    (tmp_path / "tasks" / "suites" / "t.yaml").write_text("name: t\ntasks:\n  - ../tasks/tiny\n")
    error = one_error(capfd, ["data", "check", "--data", str(tmp_path / "data"), "--suite", "t"])
    assert f"{tmp_path / 'tasks' / 'suites' / 't.yaml'}: task name '../tasks/tiny'" in error, error
    from xeval.results.store import slug

    for text in ("..", ".", "../x", "a/../../b", "../.."):
        assert "/" not in slug(text) and slug(text) not in {".", ".."}, text


def test_markdown_output_escapes_html_and_links_in_names(tmp_path, capfd):
    name = "<img src=x onerror=alert(1)>[click](http://evil.example)@0123456789ab"
    run = write_run(tmp_path / "run", [rec(name, "xnli", lang, {"accuracy": 50.0}) for lang in ("en", "de")])
    assert cli.main(["report", str(run), "--format", "md", "--out", str(tmp_path / "r.md")]) == 0
    capfd.readouterr()
    text = re.sub(r"`[^`]*`", "", (tmp_path / "r.md").read_text())  # code spans show their text literally
    assert "<img" not in text and "](http" not in text.replace("\\](http", "") and "&lt;img" in text, text
    write_run(tmp_path / "worse", [rec(name, "xnli", lang, {"accuracy": 10.0}) for lang in ("en", "de")])
    assert cli.main(["compare", "--baseline", str(run), "--current", str(tmp_path / "worse")]) == 1
    out = capfd.readouterr().out
    assert "<img" not in out and "](http" not in out.replace("\\](http", ""), out


def test_a_250_character_model_folder_name_runs_and_stores(world, tiny, tmp_path, capfd):
    data, _ = world("xnli", "a b\tc d\tneutral\r\ne f\tg h\tentailment\r\n", train=True)
    model = tmp_path / ("m" * 250)  # legal on Linux (255 bytes a name); name@hash is not
    shutil.copytree(tiny, model)
    out = tmp_path / "runs"
    assert cli.main(["run", "--model", str(model), "--suite", "t", "--data", str(data), "--out", str(out),
                     "--max-train", "2", "--epochs", "1", "--batch-size", "2",
                     "--export-predictions", str(tmp_path / "export")]) == 0
    capfd.readouterr()
    (stored,) = out.rglob("de.dev.s1*.json")  # the file name carries the config hash (de.dev.s1~<hash>.json)
    assert json.loads(stored.read_text())["unit"]["model"].startswith("m" * 250 + "@")
    assert all(len(p.name) <= 255 for p in out.rglob("*")) and list((tmp_path / "export").rglob("*.tsv"))


def test_a_label_free_language_does_not_hide_the_others_in_the_run_table():
    from xeval.report.console_tables import format_tables

    table = format_tables([rec("m@1", "xquad", "ar", {}), rec("m@1", "xquad", "de", {"f1": 61.5, "exact_match": 40.0})])
    header, *rows = table.splitlines()[1:]
    assert header.split() == ["lang", "split", "n", "f1", "exact_match"]
    assert rows[0].split() == ["ar", "test", "10", "-", "-"] and rows[1].split() == ["de", "test", "10", "61.5", "40.0"]


@pytest.mark.parametrize("flags, expected", [(["--steps", "-1"], "--steps"), (["--threads", "0"], "--threads"),
                                             (["--seed", "-1"], "--seed")])
def test_bad_quickstart_arguments_fail_before_writing(tmp_path, capfd, flags, expected):
    error = one_error(capfd, ["quickstart", "--out", str(tmp_path / "qs"), *flags])
    assert expected in error and not (tmp_path / "qs").exists()


def test_resume_of_a_state_saved_before_a_new_config_key_is_not_a_change(interrupted, capfd):
    config, out = interrupted
    state = out / "state" / "step-0000001" / "state.json"
    doc = json.loads(state.read_text())
    del doc["config"]["train"]["compile"]  # as a run started by an xeval without that key saved it
    state.write_text(json.dumps(doc))
    assert cli.main(["pretrain", "--config", str(config), "--out", str(out), "--resume",
                     "--set", "train.stop_after=null"]) == 0, capfd.readouterr().err
    capfd.readouterr()


@pytest.mark.parametrize("argv", [
    ["pretrain", "--config", "mlm", "--size", "micro", "--steps", "1", "--out", "a-file"],
    ["tokenizer", "train", "--corpus", ".", "--out", "a-file"],
    ["quickstart", "--out", "a-file"],
    ["score", "--predictions", ".", "--labels", ".", "--out", "a-folder"],
    ["report", ".", "--plot", "layers", "--figures", "a-file"],
])
def test_other_verbs_check_their_output_first(tmp_path, monkeypatch, capfd, argv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "a-folder").mkdir()
    before = snapshot(tmp_path)
    error = one_error(capfd, argv)
    assert re.search(r"--(out|figures) expects a", error) and argv[-1] in error, error
    assert snapshot(tmp_path) == before
