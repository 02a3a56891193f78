"""Data sources: root resolution, layout detection, the same card read from either layout, deterministic
subsampling, data identity, and the hub path through a local mirror."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from xeval.base.errors import ConfigError, DataError, UserError
from xeval.cards.catalog import load_card, load_suite
from xeval.data import hub as hub_source
from xeval.data.sources import DataRoot, data_identity, detect_layout, load_examples

TAGGED = "Das\tDET\nHaus\tNOUN\n\nEin\tDET\nBaum\tNOUN\n.\tPUNCT\n\n"


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_layout_detection(tmp_path):
    _write(tmp_path / "a", "udpos_xtreme/dev-de.tsv", TAGGED)
    _write(tmp_path / "b", "udpos/dev-de.tsv", TAGGED)
    (tmp_path / "c").mkdir()
    assert detect_layout(tmp_path / "a") == "shared"
    assert detect_layout(tmp_path / "b") == "xtreme"
    with pytest.raises(UserError, match="expected an XTREME download folder .* found neither"):
        detect_layout(tmp_path / "c")


def test_resolve_precedence(tmp_path, monkeypatch):
    _write(tmp_path / "a", "udpos_xtreme/dev-de.tsv", TAGGED)
    _write(tmp_path / "b", "udpos/dev-de.tsv", TAGGED)
    monkeypatch.setenv("XEVAL_DATA", str(tmp_path / "b"))
    assert DataRoot.resolve(str(tmp_path / "a")) == DataRoot("shared", (tmp_path / "a").resolve())
    assert DataRoot.resolve(None) == DataRoot("xtreme", (tmp_path / "b").resolve())
    monkeypatch.delenv("XEVAL_DATA")
    workdir = tmp_path / "repo"
    workdir.mkdir()
    _write(tmp_path / "shared" / "data", "panx_xtreme/dev-de.tsv", TAGGED)
    assert DataRoot.resolve(None, cwd=workdir).path == (tmp_path / "shared" / "data").resolve()
    assert DataRoot.resolve("hub") == DataRoot("hub", None)
    with pytest.raises(UserError, match="nothing there"):
        DataRoot.resolve(str(tmp_path / "missing"))


def test_same_card_reads_both_layouts(tmp_path):
    card = load_card("udpos")
    shared = _write(tmp_path / "s", "udpos_xtreme/dev-de.tsv", TAGGED)
    _write(tmp_path / "x", "udpos/dev-de.tsv", TAGGED)
    a = load_examples(card, "de", "dev", DataRoot.resolve(tmp_path / "s"))
    b = load_examples(card, "de", "dev", DataRoot.resolve(tmp_path / "x"))
    assert [s.tokens for s in a] == [s.tokens for s in b] == [["Das", "Haus"], ["Ein", "Baum", "."]]
    assert a[1].tags == ["DET", "NOUN", "PUNCT"] and a[0].source == str(shared)


def test_missing_file_names_path_task_lang_split(tmp_path):
    _write(tmp_path, "udpos_xtreme/dev-de.tsv", TAGGED)
    root = DataRoot.resolve(tmp_path)
    with pytest.raises(DataError) as err:
        load_examples(load_card("udpos"), "fr", "dev", root)
    assert str(err.value) == f"{tmp_path.resolve()}/udpos_xtreme/dev-fr.tsv: missing file: task udpos needs it for language fr, split dev"
    with pytest.raises(ConfigError, match="task 'bucc' has no 'test' split in the 'shared' layout"):
        load_examples(load_card("bucc"), "zh", "test", root)


def test_subsampling_is_deterministic_in_file_order_and_recorded(tmp_path):
    lines = "".join(f"premise {i}\thypothesis {i}\tneutral\r\n" for i in range(50))
    path = _write(tmp_path, "xnli_xtreme/dev-de.tsv", lines)
    root = DataRoot.resolve(tmp_path)
    card = load_card("xnli")
    card.subsample = {"eval": 10, "train": 5}
    first = load_examples(card, "de", "dev", root)
    again = load_examples(card, "de", "dev", root)
    other = load_examples(card, "de", "dev", root, seed=1)
    assert len(first) == 10 and [e.line for e in first] == [e.line for e in again]
    assert [e.line for e in first] == sorted(e.line for e in first)
    assert [e.line for e in first] != [e.line for e in other]
    ident = data_identity(card, "de", "dev", root)
    assert ident["layout"] == "shared" and ident["root"] == str(tmp_path.resolve())
    assert ident["files"] == [{"path": "xnli_xtreme/dev-de.tsv", "size": path.stat().st_size,
                               "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}]
    assert ident["subsample"]["n"] == 10 and ident["subsample"]["seed"] == 0
    card.subsample = {}
    assert len(load_examples(card, "de", "dev", root)) == 50
    assert data_identity(card, "de", "dev", root)["subsample"] is None


def test_mnli_json_training_subset(tmp_path):
    body = '{"0": {"text_a": "A man.", "text_b": "A person.", "label": "entailment"}, "1": {"text_a": "x", "text_b": "y", "label": "neutral"}}'
    _write(tmp_path, "multinli_train_subset/glue_pretrain_MNLI/train.json", body)
    _write(tmp_path, "multinli_train_subset/glue_pretrain_MNLI/dev.json", "{}")
    _write(tmp_path, "xnli_xtreme/dev-en.tsv", "a\tb\tneutral\r\n")
    examples = load_examples(load_card("xnli"), "en", "train", DataRoot.resolve(tmp_path))
    assert [(e.text_a, e.label) for e in examples] == [("A man.", "entailment"), ("x", "neutral")]
    _write(tmp_path, "multinli_train_subset/glue_pretrain_MNLI/dev.json", '{"0": {"text_a": "a", "text_b": "b", "label": "maybe"}}')
    with pytest.raises(DataError, match=r"dev\.json:1: example '0': expected a label in"):
        load_examples(load_card("xnli"), "en", "train", DataRoot.resolve(tmp_path))


def test_squad_training_set_drops_xquad_paragraphs(tmp_path):
    def squad(*contexts):
        paragraphs = ",".join(
            f'{{"context": "{c}", "qas": [{{"id": "{c}", "question": "q?", "answers": [{{"text": "{c[:3]}", "answer_start": 0}}]}}]}}'
            for c in contexts)
        return f'{{"version": "1.1", "data": [{{"title": "t", "paragraphs": [{paragraphs}]}}]}}'

    _write(tmp_path, "tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-train/tydiqa.goldp.en.train.json", squad("tydi one"))
    _write(tmp_path, "squad_v1.1/dev-v1.1.json", squad("kept para", "xquad para"))
    _write(tmp_path, "xquad/xquad.en.json", squad("xquad para"))
    examples = load_examples(load_card("xquad"), "en", "train", DataRoot.resolve(tmp_path))
    assert [e.context for e in examples] == ["tydi one", "kept para"]


# ---------------------------------------------------------------------------------------------------- hub


def _hub_rows():
    datasets = pytest.importorskip("datasets")  # the hub extra

    tags = datasets.ClassLabel(names=["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"])
    features = datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                  "ner_tags": datasets.Sequence(tags), "langs": datasets.Sequence(datasets.Value("string"))})
    return datasets.Dataset.from_dict(
        {"tokens": [["Angela", "Merkel", "spricht"], ["in", "Berlin"]], "ner_tags": [[1, 2, 0], [0, 5]],
         "langs": [["de"] * 3, ["de"] * 2]}, features=features)


def test_hub_without_the_datasets_package_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # what `import datasets` meets where it is not installed
    (tmp_path / "PAN-X.de").mkdir()
    with pytest.raises(UserError, match=r"^--data hub needs the Hugging Face datasets package.*pip install 'xeval\[hub\]'$"):
        load_examples(load_card("panx"), "de", "test", DataRoot.resolve(f"hub:{tmp_path}"))


def test_hub_mirror_parquet_maps_class_labels(tmp_path):
    (tmp_path / "PAN-X.de").mkdir()
    _hub_rows().to_parquet(str(tmp_path / "PAN-X.de" / "test-00000-of-00001.parquet"))  # the hub's file naming
    root = DataRoot.resolve(f"hub:{tmp_path}")
    examples = load_examples(load_card("panx"), "de", "test", root)
    assert [e.tokens for e in examples] == [["Angela", "Merkel", "spricht"], ["in", "Berlin"]]
    assert examples[0].tags == ["B-PER", "I-PER", "O"] and examples[1].tags == ["O", "B-LOC"]
    assert examples[0].source.startswith("hf://google/xtreme@b6419ab")
    ident = data_identity(load_card("panx"), "de", "test", root)
    assert ident["hub"] == {"path": "google/xtreme", "config": "PAN-X.de", "split": "test",
                            "revision": load_card("panx").hub["revision"]}
    with pytest.raises(DataError, match="missing hub mirror data for task panx, language de, split dev"):
        load_examples(load_card("panx"), "de", "dev", root)


def test_hub_mirror_save_to_disk_with_filter(tmp_path):
    datasets = pytest.importorskip("datasets")  # the hub extra

    rows = datasets.Dataset.from_dict({
        "language": ["de", "fr", "de"], "sentence1": ["a", "b", "c"], "sentence2": ["x", "y", "z"],
        "gold_label": ["neutral", "entailment", "contradiction"]})
    datasets.DatasetDict({"validation": rows}).save_to_disk(str(tmp_path / "XNLI"))
    examples = load_examples(load_card("xnli"), "de", "dev", DataRoot.resolve(f"hub:{tmp_path}"))
    assert [(e.text_a, e.text_b, e.label, e.lang) for e in examples] == [("a", "x", "neutral", "de"),
                                                                         ("c", "z", "contradiction", "de")]


def test_hub_online_call_uses_pinned_revision(monkeypatch):
    datasets = pytest.importorskip("datasets")  # the hub extra

    calls = []

    def fake_load_dataset(path, name=None, revision=None, split=None):
        calls.append((path, name, revision, split))
        return datasets.Dataset.from_dict({
            "id": ["english-1-0", "arabic-2-0"], "title": ["t", "t"], "context": ["Paris is big", "x"],
            "question": ["what?", "y"], "answers": [{"text": ["Paris"], "answer_start": [0]}, {"text": ["x"], "answer_start": [0]}]})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    card = load_card("tydiqa")
    examples = load_examples(card, "en", "test", DataRoot.resolve("hub"))
    assert calls == [("google/xtreme", "tydiqa", card.hub["revision"], "validation")]
    assert [(e.id, e.answers[0].text, e.answers[0].start) for e in examples] == [("english-1-0", "Paris", 0)]

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(UserError, match="cannot load google/xtreme config tydiqa split validation at revision"):
        load_examples(card, "en", "test", DataRoot.resolve("hub"))


def test_hub_refuses_cards_without_hub_source():
    with pytest.raises(ConfigError, match="task 'alignment' has no hub source"):
        hub_source.identity(load_card("alignment"), "de-en", "test")


def test_mini_suite_real_data_identity(data_root):
    card = load_suite("xtreme-mini").card("xquad")
    ident = data_identity(card, "en", "train", DataRoot.resolve(data_root))
    assert [f["path"] for f in ident["files"]] == [
        "tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-train/tydiqa.goldp.en.train.json", "squad_v1.1/dev-v1.1.json",
        "xquad/xquad.en.json"]
    # the squad dev file is byte-identical to the official one (its PROVENANCE gives this sha256)
    assert ident["files"][1]["sha256"] == "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9"
    assert ident["subsample"]["n"] == 1000 and ident["options"] == {"exclude_contexts_from": "xquad/xquad.en.json"}
