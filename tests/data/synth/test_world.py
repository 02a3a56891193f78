"""The synthetic world as files: deterministic bytes, gold consistent with the sentences, real-data formats."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from xeval.cli import main
from xeval.data.alignment_gold import read_alignment
from xeval.data.corpora import iter_monolingual, iter_parallel_tsv
from xeval.data.dictionaries import read_dictionary
from xeval.data.squad_json import read_squad
from xeval.data.synth import MANIFEST, Sizes, WorldConfig, build_world, generate_world
from xeval.data.synth.card_files import card_files
from xeval.data.synth.words import NAME_CATEGORIES, category, concept, upos
from xeval.data.xtreme_tsv import read_pairs, read_tagging

REPO = Path(__file__).resolve().parents[3]
TINY = Sizes(mono=150, parallel=60, train=40, dev=12, test=24, tatoeba=25, alignment=25)
CONFIG = WorldConfig(seed=3, languages=3, sizes=TINY)


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world")
    generate_world(out, CONFIG)
    return out


@pytest.fixture(scope="module")
def world():
    return build_world(CONFIG)


def test_same_seed_gives_byte_identical_files(world_dir, tmp_path):
    generate_world(tmp_path / "again", CONFIG)
    first, second = _digests(world_dir), _digests(tmp_path / "again")
    assert first == second
    assert len(first) > 50
    assert not any(name.endswith(".tmp") or "/." in name for name in first)  # no temp files left behind


def test_manifest_lists_every_file_with_its_hash(world_dir):
    manifest = json.loads((world_dir / MANIFEST).read_text())
    listed = {item["path"]: item["sha256"] for item in manifest["files"]}
    on_disk = _digests(world_dir)
    on_disk.pop(MANIFEST)
    assert listed == on_disk
    assert manifest["seed"] == 3 and manifest["base"] == "qaa"
    assert [lang["code"] for lang in manifest["languages"]] == ["qaa", "qab", "qac"]


def test_different_seed_gives_different_files(world_dir, tmp_path):
    generate_world(tmp_path / "other", WorldConfig(seed=4, languages=3, sizes=TINY))
    first, second = _digests(world_dir), _digests(tmp_path / "other")
    assert first.keys() == second.keys()
    data = [name for name in first if not name.startswith("tasks/") and name != "panx/labels.txt"]
    assert all(first[name] != second[name] for name in data)


def test_gold_alignments_link_translations(world_dir, world):
    base = world.base
    for lang in world.derived:
        stem = world_dir / "word_alignment" / f"{lang.code}-{base.code}"
        pairs = read_alignment(f"{stem}.src-tgt", f"{stem}.gold", f"{lang.code}-{base.code}", gold_base=1)
        assert len(pairs) == TINY.alignment
        dictionary = set(read_dictionary(world_dir / "dictionaries" / f"{base.code}-{lang.code}.txt"))
        for pair in pairs:
            # every word of both sides is linked exactly once (each abstract word has one form per language)
            assert sorted(i for i, _ in pair.sure) == list(range(len(pair.src_tokens)))
            assert sorted(j for _, j in pair.sure) == list(range(len(pair.tgt_tokens)))
            for i, j in pair.sure:
                src, src_pl, _ = lang.analyse(pair.src_tokens[i])
                tgt, tgt_pl, _ = base.analyse(pair.tgt_tokens[j])
                assert concept(src) == concept(tgt)
                if category(src) not in ("punct",):
                    assert (base.forms[tgt], lang.forms[src]) in dictionary
                if lang.marks_plural and base.marks_plural:
                    assert src_pl == tgt_pl  # the same abstract number


def test_tags_consistent_with_words(world_dir, world):
    for lang in world.languages:
        for split in ("dev", "test"):
            sentences = read_tagging(world_dir / "panx" / f"{split}-{lang.code}.tsv", lang.code, split)
            pos = read_tagging(world_dir / "udpos" / f"{split}-{lang.code}.tsv", lang.code, split)
            assert len(sentences) == getattr(TINY, split) and len(pos) == getattr(TINY, split)
            for sentence in sentences:
                previous = "O"
                for word, tag in zip(sentence.tokens, sentence.tags):
                    lexeme = lang.analyse(word)[0]
                    is_name = category(lexeme) in NAME_CATEGORIES
                    assert (tag != "O") == is_name, (word, tag)  # every entity word tagged, nothing else
                    assert tag == "O" or tag[:2] in ("B-", "I-") and tag[2:] in ("PER", "ORG", "LOC")
                    if tag.startswith("I-"):
                        assert previous[2:] == tag[2:], sentence.tokens  # IOB2: I-X continues an X
                    previous = tag
                assert any(t != "O" for t in sentence.tags)
            for sentence in pos:
                for word, tag in zip(sentence.tokens, sentence.tags):
                    lexeme = lang.analyse(word)[0]
                    assert tag == upos(lexeme)
                    assert (tag == "PROPN") == (category(lexeme) in NAME_CATEGORIES)


def test_qa_answers_are_substrings_at_answer_start(world_dir, world):
    for lang in world.languages:
        for split in ("train", "dev", "test") if lang is world.base else ("dev", "test"):
            path = world_dir / "qa" / f"{split}-{lang.code}.json"
            examples = read_squad(path, lang.code, split, on_mismatch="error")
            assert len(examples) == getattr(TINY, split)
            for ex in examples:
                (answer,) = ex.answers
                assert answer.text and ex.context[answer.start : answer.start + len(answer.text)] == answer.text
                assert ex.question.split()[-1] == lang.forms["punct:001.0"]
    # the evaluation sets are parallel: same ids in every language
    ids = [[q["id"] for a in json.loads((world_dir / "qa" / f"test-{c}.json").read_text())["data"]
            for p in a["paragraphs"] for q in p["qas"]] for c in ("qaa", "qab")]  # fmt: skip
    assert ids[0] == ids[1]


def test_pairs_balanced_and_readable(world_dir, world):
    raw = (world_dir / "pawsx" / "test-qab.tsv").read_bytes()
    assert raw.endswith(b"\r\n") and raw.count(b"\r\n") == TINY.test
    for lang in world.languages:
        pairs = read_pairs(world_dir / "pawsx" / f"test-{lang.code}.tsv", lang.code, "test")
        labels = [p.label for p in pairs]
        assert labels.count("1") == labels.count("0") == TINY.test // 2
        assert all(p.text_a != p.text_b for p in pairs)


def test_corpora_and_retrieval_sets(world_dir, world):
    base = world.base
    mono = {lang.code: list(iter_monolingual(world_dir / "monolingual" / f"{lang.code}.txt.gz")) for lang in world.languages}
    assert all(len(rows) == TINY.mono for rows in mono.values())
    with gzip.open(world_dir / "monolingual" / "qaa.txt.gz", "rb") as handle:
        assert handle.read().count(b"\n") == TINY.mono
    corpus = set(mono[base.code])
    for lang in world.derived:
        pairs = list(iter_parallel_tsv(world_dir / "parallel" / f"{base.code}-{lang.code}.tsv.gz"))
        assert len(pairs) == TINY.parallel
        corpus |= {p.src for p in pairs}
        stem = world_dir / "tatoeba" / f"tatoeba.{lang.code}-{base.code}"
        xx = Path(f"{stem}.{lang.code}").read_text().splitlines()
        pivot = Path(f"{stem}.{base.code}").read_text().splitlines()
        assert len(xx) == len(pivot) == TINY.tatoeba
        assert len(set(pivot)) == len(pivot)  # one right answer per query
    for lang in world.derived:
        pivot = (world_dir / "tatoeba" / f"tatoeba.{lang.code}-{base.code}.{base.code}").read_text().splitlines()
        assert not corpus & set(pivot)  # never pre-train on evaluation text


def test_every_card_loads_through_the_data_sources(world_dir, monkeypatch):
    from xeval.cards.catalog import load_suite
    from xeval.data.sources import DataRoot, load_examples

    monkeypatch.setenv("XEVAL_TASKS", str(world_dir / "tasks"))
    root = DataRoot.resolve(str(world_dir))
    suite = load_suite("synthetic")
    assert {c.name for c in suite.cards} >= {"synth_udpos", "synth_qa", "synth_tatoeba", "synth_alignment"}
    for card in suite.cards:
        for lang in card.languages:
            assert load_examples(card, lang, card.split_for(lang), root)
        if card.train:
            assert load_examples(card, card.train["lang"], "train", root)
            assert load_examples(card, card.train["lang"], "dev", root)


def test_committed_cards_are_the_default_worlds():
    """tasks/synth_*.yaml and tasks/suites/synthetic.yaml are what the default world writes (regenerate with
    ``python -m xeval synth`` and copy <world>/tasks/ when the generator changes)."""
    for rel, text in card_files(build_world(WorldConfig())).items():
        assert (REPO / "tasks" / rel).read_text(encoding="utf-8") == text, rel


def test_cli_writes_a_world_and_rejects_bad_options(tmp_path, capsys):
    sizes = ["--mono", "20", "--parallel", "10", "--train", "6", "--dev", "4", "--test", "4", "--tatoeba", "5",
             "--alignment", "5"]  # fmt: skip
    assert main(["synth", "--out", str(tmp_path / "w"), "--num-langs", "2", "--overlap", "0", *sizes]) == 0
    out = capsys.readouterr().out
    assert "qab   derived  Greek" in out and (tmp_path / "w" / MANIFEST).is_file()
    # rerunning into the same world with fewer languages removes the files it no longer has
    assert main(["synth", "--out", str(tmp_path / "w"), "--num-langs", "1", *sizes]) == 0
    assert not (tmp_path / "w" / "tatoeba").exists() or not any((tmp_path / "w" / "tatoeba").iterdir())
    assert main(["synth", "--out", str(tmp_path / "w"), "--order", "OVS"]) == 2
    assert "--order" in capsys.readouterr().err
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    assert main(["synth", "--out", str(tmp_path / "other"), *sizes]) == 2
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_bytes_do_not_depend_on_the_hash_seed():
    """Set/dict order must never leak into the files: two interpreters with different PYTHONHASHSEED agree."""
    import os
    import subprocess
    import sys

    code = ("import hashlib; from xeval.data.synth import Sizes, WorldConfig, world_files; "
            "_, f = world_files(WorldConfig(sizes=Sizes(mono=30, parallel=20, train=10, dev=5, test=6, tatoeba=5, "
            "alignment=5))); print(hashlib.sha256(f['world.json']).hexdigest())")  # fmt: skip
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout  # fmt: skip
        for seed in ("1", "2")
    }
    assert len(digests) == 1
