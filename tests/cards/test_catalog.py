"""Task cards and suites: every card and suite loads, hashes are stable, bad cards fail with the file named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xeval import cli
from xeval.base.errors import ConfigError
from xeval.cards.card import card_from_dict
from xeval.cards.catalog import list_cards, list_suites, load_card, load_suite, tasks_dir
from xeval.cards.types import TASK_TYPES

XTREME_TASKS = ["udpos", "panx", "xnli", "pawsx", "xquad", "mlqa", "tydiqa", "tatoeba", "bucc"]


@pytest.mark.parametrize("name", list_cards())
def test_every_card_loads(name):
    card = load_card(name)
    assert card.type in TASK_TYPES
    assert card.languages and card.metric and card.citation and card.licence
    assert set(card.eval_splits) <= set(card.languages)
    assert len(card.hash) == 64 and card.hash == load_card(name).hash
    for lang, split in card.eval_units():
        assert any(split in splits for splits in card.files.values()), (name, lang, split)
    if card.train:  # fine-tuning cards carry XTREME's recipe
        assert {"epochs", "learning_rate", "batch_size", "max_length"} <= set(card.recipe)
    if card.hub:
        assert len(card.hub["revision"]) == 40


def test_expected_cards_and_suites_exist():
    assert set(XTREME_TASKS + ["alignment", "lexicon"]) <= set(list_cards())
    assert {"xtreme", "xtreme-mini", "probes"} <= set(list_suites())


@pytest.mark.parametrize("name", list_suites())
def test_every_suite_loads(name):
    suite = load_suite(name)
    assert suite.cards and all(card.suite == name for card in suite.cards)
    for card in suite.cards:
        assert card.languages


def test_xtreme_suite_is_the_official_benchmark():
    suite = load_suite("xtreme")
    assert [c.name for c in suite.cards] == XTREME_TASKS
    counts = {name: len(langs) for name, langs in suite.langs.items()}
    assert counts == {"udpos": 33, "panx": 40, "xnli": 15, "pawsx": 7, "xquad": 11, "mlqa": 7, "tydiqa": 9,
                      "tatoeba": 36, "bucc": 4}
    for card in suite.cards:
        assert card.content() == {**load_card(card.name).content(), "suite": "xtreme"}  # cards used as they are
        assert all(split == "test" for _, split in card.eval_units())
        if card.train:
            assert card.train == {"lang": "en", "split": "train"}
    assert load_card("xnli").files["xtreme"]["train"] == "xnli/train-{lang}.tsv"  # MultiNLI
    assert load_card("xquad").files["xtreme"]["train"] == "squad/train-v1.1.json"


def test_mini_suite_narrows_cards_and_changes_their_hash():
    mini = load_suite("xtreme-mini")
    names = [c.name for c in mini.cards]
    assert names == ["udpos", "panx", "xnli", "pawsx", "xquad", "mlqa", "tydiqa", "tatoeba", "alignment"]
    udpos = mini.card("udpos")
    assert udpos.split_for("th") == "test" and udpos.split_for("de") == "dev"
    assert udpos.subsample == {"train": 2000, "eval": 200}
    assert udpos.recipe["epochs"] == 2 and udpos.recipe["learning_rate"] == 1.0e-4  # the suite's
    assert udpos.recipe["batch_size"] == 32 and udpos.recipe["eval_every"] == 500  # the card's: merged, not replaced
    assert udpos.hash != load_card("udpos").hash
    assert len(mini.card("tatoeba").languages) == 36
    assert mini.card("alignment").languages == ["de-en", "en-fr", "ro-en"]
    assert "en" not in mini.card("pawsx").languages  # English dev is the training set
    assert all(c.notes for c in mini.cards if c.name in ("xnli", "pawsx", "xquad", "mlqa"))


def test_card_hash_changes_with_content():
    card = load_card("xnli")
    before = card.hash
    card.recipe["epochs"] = 6
    assert card.hash != before


def test_card_hash_ignores_prose():
    # notes, description, citation and licence change no number, so editing them keeps stored units current
    card = load_card("xnli")
    before = card.hash
    card.notes = [*card.notes, "a corrected sentence"]
    card.description, card.citation, card.licence = "another description", "another citation", "another licence"
    assert card.hash == before
    card.subsample = {"train": 10}
    assert card.hash != before


def test_unknown_task_and_suite_name_the_folder():
    with pytest.raises(ConfigError, match=r"unknown task 'nope'.*nope\.yaml.*known tasks: .*udpos"):
        load_card("nope")
    with pytest.raises(ConfigError, match=r"unknown suite 'nope'.*known suites: .*xtreme-mini"):
        load_suite("nope")


@pytest.fixture
def task_folder(tmp_path, monkeypatch):
    folder = tmp_path / "tasks"
    (folder / "suites").mkdir(parents=True)
    shutil.copy(tasks_dir() / "pawsx.yaml", folder / "pawsx.yaml")
    monkeypatch.setenv("XEVAL_TASKS", str(folder))
    return folder


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace("type: pair_classification", "type: ranking"), r"pawsx\.yaml: unknown task type 'ranking'"),
        (lambda t: t + "\nlanguagez: [de]\n", r"pawsx\.yaml: unknown card field\(s\) languagez"),
        (lambda t: t.replace("name: pawsx", "name: paws"), r"pawsx\.yaml: expected 'name: pawsx'"),
        (lambda t: t.replace("format: pairs", "format: csv"), r"pawsx\.yaml: unknown format 'csv'"),
        (lambda t: t.replace("metric: accuracy\n", ""), r"pawsx\.yaml: card is missing required field\(s\) metric"),
        (lambda t: t + "\nnotes: [unclosed\n", r"pawsx\.yaml:\d+: expected valid YAML"),
    ],
)
def test_bad_card_names_file_and_expectation(task_folder, edit, message):
    path = task_folder / "pawsx.yaml"
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_card("pawsx")


def test_bad_suite_entry(task_folder):
    (task_folder / "suites" / "s.yaml").write_text("name: s\ntasks:\n  - card: pawsx\n    epochs: 3\n")
    with pytest.raises(ConfigError, match=r"s\.yaml: task 'pawsx': unknown field\(s\) epochs"):
        load_suite("s")
    (task_folder / "suites" / "s.yaml").write_text("name: s\ntasks:\n  - card: missing\n")
    with pytest.raises(ConfigError, match="unknown task 'missing'"):
        load_suite("s")


def test_card_from_dict_rejects_eval_splits_outside_languages():
    card = load_card("pawsx").content()
    card = {k: v for k, v in card.items() if k != "suite"}
    card["eval_splits"] = {"xx": "dev"}
    with pytest.raises(ConfigError, match="eval_splits names languages not in 'languages': xx"):
        card_from_dict(card, Path("x.yaml"))


def test_tasks_verb_lists_cards_and_suites(capsys):
    assert cli.main(["tasks"]) == 0
    out = capsys.readouterr().out
    for name in list_cards() + list_suites():
        assert name in out
    assert "pair_classification" in out and "PAN-X.{lang}" in out


def test_tasks_verb_shows_one(capsys):
    assert cli.main(["tasks", "xtreme-mini"]) == 0
    out = capsys.readouterr().out
    assert "udpos [tagging, f1] train en/train; test: ar bg" in out and "note:" in out
    assert cli.main(["tasks", "udpos"]) == 0
    assert load_card("udpos").hash in capsys.readouterr().out
    assert cli.main(["tasks", "nope"]) == 2
    assert "unknown task or suite 'nope'" in capsys.readouterr().err


def test_xeval_tasks_adds_cards_to_the_built_in_ones(tmp_path, monkeypatch):
    """$XEVAL_TASKS adds a folder of cards (issue 17): the built-in cards stay, a card of the same name wins."""
    folder = tmp_path / "mine"
    (folder / "suites").mkdir(parents=True)
    card = (tasks_dir() / "pawsx.yaml").read_text(encoding="utf-8")
    (folder / "pawsx2.yaml").write_text(card.replace("name: pawsx", "name: pawsx2"), encoding="utf-8")
    (folder / "pawsx.yaml").write_text(card.replace("languages: [de, ", "languages: ["), encoding="utf-8")
    (folder / "suites" / "mine.yaml").write_text("name: mine\ntasks:\n  - pawsx2\n  - udpos\n", encoding="utf-8")
    builtin = set(list_cards())
    monkeypatch.setenv("XEVAL_TASKS", str(folder))
    assert set(list_cards()) == builtin | {"pawsx2"}
    assert "xtreme" in list_suites() and "mine" in list_suites()
    assert "de" not in load_card("pawsx").languages  # the user's card replaces the built-in one
    assert [c.name for c in load_suite("mine").cards] == ["pawsx2", "udpos"]  # own and built-in cards mixed


def test_suite_given_as_a_yaml_path(tmp_path, monkeypatch):
    """--suite accepts a suite file; its cards are looked up beside it (and in the parent of a suites/ folder)."""
    monkeypatch.delenv("XEVAL_TASKS", raising=False)
    (tmp_path / "suites").mkdir()
    card = (tasks_dir() / "pawsx.yaml").read_text(encoding="utf-8")
    (tmp_path / "mycard.yaml").write_text(card.replace("name: pawsx", "name: mycard"), encoding="utf-8")
    suite = tmp_path / "suites" / "small.yaml"
    suite.write_text("name: small\ntasks:\n  - card: mycard\n    languages: [en, de]\n  - xnli\n", encoding="utf-8")
    loaded = load_suite(str(suite))
    assert loaded.name == "small" and loaded.path == str(suite)
    assert [(c.name, c.languages) for c in loaded.cards][0] == ("mycard", ["en", "de"])
    assert loaded.cards[1].name == "xnli"
    with pytest.raises(ConfigError, match=r"--suite .*nothere\.yaml: no such suite file"):
        load_suite(str(tmp_path / "nothere.yaml"))


def test_a_card_with_a_key_twice_is_an_error_naming_its_line(tmp_path):
    """PyYAML keeps the last of two equal keys silently: a card with ``languages:`` twice would lose the first list."""
    from xeval.base.errors import ConfigError
    from xeval.cards.catalog import read_yaml

    card = tmp_path / "t.yaml"
    card.write_text("name: t\nlanguages: [de]\nmetric: f1\nlanguages: [fr]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"t\.yaml:4: expected valid YAML, found duplicate key 'languages'"):
        read_yaml(card)
    card.write_text("name: t\nlr: 2e-5\ncount: 010\n", encoding="utf-8")  # everything else reads as safe_load does
    assert read_yaml(card) == {"name": "t", "lr": "2e-5", "count": 8}
