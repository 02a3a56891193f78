"""Resume: a multi-unit loop interrupted after its second unit, rerun, stores each unit exactly once with the
values an uninterrupted run gets. The loop is the one every adapter runs (see xeval/adapters/__init__.py)."""

from __future__ import annotations

import hashlib

import pytest

from xeval.cards.catalog import load_suite
from xeval.results.store import Record, Store, Unit, stamp

LANGS = ["de", "fr", "zh"]
SEEDS = [1, 2]


class Interrupted(Exception):
    pass


def _score(unit: Unit) -> dict[str, float]:
    """A deterministic stand-in for train-and-evaluate."""
    digest = hashlib.sha256(f"{unit.task}/{unit.lang}/{unit.seed}".encode()).digest()
    return {"accuracy": round(100 * digest[0] / 255, 4), "f1": round(100 * digest[1] / 255, 4)}


def run_units(store: Store, card, computed: list, fail_after: int | None = None) -> list[Record]:
    out = []
    for seed in SEEDS:
        for lang in LANGS:
            unit = Unit(model="tiny@0123456789ab", task=card.name, lang=lang, split=card.split_for(lang), seed=seed)
            if store.has(unit):
                out.append(store.get(unit))
                continue
            if fail_after is not None and len(computed) == fail_after:
                raise Interrupted(unit)
            computed.append(unit)
            record = Record(unit=unit, metrics=_score(unit), n_examples=200, card=card.identity(),
                            data={"layout": "shared", "subsample": card.subsample}, provenance=stamp(0.0))
            store.put(record)
            out.append(record)
    return out


@pytest.fixture
def card():
    return load_suite("xtreme-mini").card("xnli")


def test_interrupted_run_resumes_each_unit_once(tmp_path, card):
    store = Store(tmp_path / "runs")
    first: list[Unit] = []
    with pytest.raises(Interrupted):
        run_units(store, card, first, fail_after=2)
    assert len(first) == 2 and len(list(store.records())) == 2
    kept = {store.path(u): store.path(u).stat().st_mtime_ns for u in first}

    second: list[Unit] = []
    records = run_units(store, card, second)
    assert len(second) == len(LANGS) * len(SEEDS) - 2 and not set(first) & set(second)  # nothing recomputed
    assert {store.path(u): store.path(u).stat().st_mtime_ns for u in first} == kept  # nor rewritten

    stored = list(store.records())
    units = [r.unit for r in stored]
    assert len(units) == len(set(units)) == len(LANGS) * len(SEEDS)
    files = sorted(p.name for p in (tmp_path / "runs").rglob("*") if p.is_file())
    assert len(files) == len(units) and not [f for f in files if f.startswith(".") or f.endswith(".tmp")]

    # identical values to an uninterrupted run
    clean = Store(tmp_path / "clean")
    run_units(clean, card, [])
    assert {r.unit: r.metrics for r in stored} == {r.unit: r.metrics for r in clean.records()}
    assert {r.unit: r.metrics for r in records} == {r.unit: r.metrics for r in stored}
    assert all(r.card == {"name": "xnli", "hash": card.hash, "suite": "xtreme-mini"} for r in stored)

    # a third run computes nothing; --overwrite recomputes everything
    third: list[Unit] = []
    run_units(store, card, third)
    assert third == []
    redo: list[Unit] = []
    run_units(Store(tmp_path / "runs", overwrite=True), card, redo)
    assert len(redo) == len(LANGS) * len(SEEDS) and len(list(store.records())) == len(units)
