"""Chance and majority-class baselines from a record's own per-example outcomes, on hand-counted examples."""

from __future__ import annotations

import pytest

from xeval.results.baselines import baselines
from xeval.results.outcomes import classification_outcomes, tagging_outcomes
from xeval.results.store import Record, Store, Unit


def _stored(tmp_path, task, fmt, metrics, outcomes=None, n=4, config=None):
    record = Record(Unit("m@1", task, "de", "test", 1), metrics, n, data={"format": fmt}, config=config or {})
    Store(tmp_path).put(record, outcomes)
    return record


def test_classification_chance_and_majority(tmp_path):
    gold, predicted = ["0", "1", "1", "1"], ["1", "1", "1", "1"]
    rec = _stored(tmp_path, "pawsx", "pairs", {"accuracy": 75.0}, classification_outcomes(list("abcd"), gold, predicted),
                  config={"labels": ["0", "1"]})
    assert baselines(rec) == {"chance": 50.0, "majority": 75.0}  # the model's 75.0 is the majority class: nothing learnt


def test_tagging_majority_is_the_chunk_f1_of_the_most_frequent_tag(tmp_path):
    # most frequent gold tag NOUN; tagging every token NOUN finds the chunk NOUN(0-1) of the first sentence and
    # predicts NOUN(0) where the second has VERB(0): precision 1/2, recall 1/2, F1 50
    gold = [["NOUN", "NOUN"], ["VERB"]]  # the model is perfect (its outcomes are bound to its F1 100)
    rec = _stored(tmp_path, "udpos", "tagging", {"f1": 100.0}, tagging_outcomes(["s1", "s2"], gold, gold), n=2)
    assert baselines(rec) == {"majority": pytest.approx(50.0)}
    ner = [["B-PER", "I-PER", "O", "O"]]  # O is the majority: no chunk, F1 0
    rec = _stored(tmp_path / "ner", "panx", "tagging", {"f1": 100.0}, tagging_outcomes(["s"], ner, ner), n=1)
    assert baselines(rec) == {"majority": 0.0}


def test_retrieval_chance_and_tasks_without_a_baseline(tmp_path):
    assert baselines(Record(Unit("m@1", "tatoeba", "de", "test", 0, 8), {"accuracy": 90.0}, 200,
                            data={"format": "tatoeba"})) == {"chance": 0.5}  # one of 200 candidates
    assert baselines(Record(Unit("m@1", "xquad", "de", "test", 1), {"f1": 50.0}, 100, data={"format": "squad"})) == {}
    assert baselines(Record(Unit("m@1", "alignment", "de-en", "test", 0, 8), {"aer": 30.0}, 100,
                            data={"format": "alignment"})) == {}
