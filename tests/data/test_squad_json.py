"""SQuAD-format reader on XQuAD, MLQA, TyDiQA-GoldP, SQuAD v1.1 and on malformed JSON."""

from __future__ import annotations

import json
import re
import warnings

import pytest

from tests.conftest import require_file
from xeval.base.errors import DataError
from xeval.data.squad_json import mlqa_filename, read_squad


def count_questions(path) -> tuple[int, int]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    qas = [qa for art in doc["data"] for par in art["paragraphs"] for qa in par["qas"]]
    return len(qas), sum(len(qa["answers"]) for qa in qas)


@pytest.mark.parametrize(
    "rel, lang, split, n",
    [
        ("xquad/xquad.de.json", "de", "test", 1190),
        ("xquad/xquad.zh.json", "zh", "test", 1190),
        ("mlqa_v1/dev/" + mlqa_filename("en", "en", "dev"), "en", "dev", 1148),
        ("mlqa_v1/dev/" + mlqa_filename("ar", "ar", "dev"), "ar", "dev", 517),
        ("tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-train/tydiqa.goldp.en.train.json", "en", "train", 3696),
        ("tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-dev/tydiqa.goldp.fi.dev.json", "fi", "dev", 782),
    ],
)
def test_real_files(data_root, rel, lang, split, n):
    path = require_file(data_root, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no answer_start mismatch in the official files
        examples = read_squad(path, lang, split)
    assert len(examples) == n == count_questions(path)[0]
    assert sum(len(e.answers) for e in examples) == count_questions(path)[1]
    for e in examples:
        for a in e.answers:
            assert e.context[a.start : a.start + len(a.text)] == a.text
    assert examples[0].lang == lang and examples[0].line == 0 and examples[-1].line == n - 1


def test_squad_dev_multiple_answers(data_root):
    examples = read_squad(require_file(data_root, "squad_v1.1/dev-v1.1.json"), "en", "dev")
    assert len(examples) == 10570
    assert sum(len(e.answers) for e in examples) == 34726  # all answers kept, duplicates included
    assert examples[0].title == "Super_Bowl_50"


def test_mlqa_filename():
    assert mlqa_filename("de", "en", "test") == "test-context-de-question-en.json"


def write(tmp_path, doc) -> object:
    path = tmp_path / "qa.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False))
    return path


def squad(qas, context="Paris is in France."):
    return {"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": context, "qas": qas}]}]}


def test_mismatch_policies(tmp_path):
    path = write(
        tmp_path,
        squad([{"id": "q1", "question": "Where?", "answers": [{"text": "France", "answer_start": 3}]}]),
    )
    with pytest.warns(UserWarning, match="1 answer_start"):
        assert read_squad(path, "en", "dev")[0].answers[0].start == 3
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:\d+: expected answer 'France'"):
        read_squad(path, "en", "dev", on_mismatch="error")


def test_missing_start_and_no_answers(tmp_path):
    path = write(tmp_path, squad([{"id": "a", "question": "?", "answers": [{"text": "Paris"}]}]))
    (a,) = read_squad(path, "en", "test")
    assert a.answers[0].start == -1
    path = write(tmp_path, squad([{"id": "a", "question": "?"}, {"id": "b", "question": "?", "answers": []}]))
    assert [q.answers for q in read_squad(path, "en", "test")] == [[], []]  # label-free: every question
    path = write(
        tmp_path,
        squad([{"id": "a", "question": "?", "answers": [{"text": "Paris"}]}, {"id": "b", "question": "?"}]),
    )
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:\d+: expected answers for question 'b'"):
        read_squad(path, "en", "test")  # partly unlabelled: an error naming the question


def test_duplicate_ids(tmp_path):
    qas = [{"id": "q", "question": "?", "answers": []}, {"id": "q", "question": "!", "answers": []}]
    path = write(tmp_path, squad(qas))
    assert len(read_squad(path, "en", "train")) == 2  # TyDiQA-GoldP train repeats ids
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:\d+: expected unique question ids"):
        read_squad(path, "en", "dev")


@pytest.mark.parametrize(
    "doc, line",
    [
        ('{"data": [', 1),  # truncated JSON
        ("[1, 2]", 1),  # not an object
        ({"data": [{"title": "T"}]}, "any"),  # article without paragraphs: the line of its title
        (squad([{"question": "?", "answers": []}]), "any"),  # question without id
        (squad([{"id": "q9", "question": 3, "answers": []}]), None),  # question not a string: line of "q9"
        (squad([{"id": "q9", "question": "?", "answers": [{"text": "x", "answer_start": "4"}]}]), None),
    ],
)
def test_malformed(tmp_path, doc, line):
    if isinstance(doc, str):
        path = tmp_path / "qa.json"
        path.write_text(doc)
    else:
        path = write(tmp_path, doc)
    if line is None:  # points at the offending question's id
        line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if '"q9"' in text)
    where = r"\d+" if line == "any" else line
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:{where}: expected"):
        read_squad(path, "en", "dev")
