import json

import pytest

from xeval.base.errors import DataError
from xeval.results.store import Record, Store, Unit, load_records


def _record(lang="de", value=50.0, seed=1, layer=None):
    return Record(unit=Unit(model="m@abc", task="udpos", lang=lang, split="test", seed=seed, layer=layer),
                  metrics={"f1": value}, n_examples=10)


def test_roundtrip_and_layout(tmp_path):
    store = Store(tmp_path)
    path = store.put(_record(layer=3))
    assert path == tmp_path / "m_abc" / "udpos" / "de.test.s1.L3.json"
    [back] = store.records()
    assert back.unit == _record(layer=3).unit and back.metrics == {"f1": 50.0}
    assert store.has(back.unit)
    assert not Store(tmp_path, overwrite=True).has(back.unit)


def test_no_temp_files_left(tmp_path):
    Store(tmp_path).put(_record())
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["de.test.s1.json"]


def test_filter_and_load_records(tmp_path):
    store = Store(tmp_path)
    store.put(_record("de"))
    store.put(_record("fr", seed=2))
    assert [r.unit.lang for r in store.records(seed=2)] == ["fr"]
    assert len(load_records([tmp_path])) == 2


def test_bad_record_is_a_data_error(tmp_path):
    bad = tmp_path / "m" / "t" / "x.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(DataError, match="x.json: expected a result record"):
        list(Store(tmp_path).records())


def test_written_files_follow_the_umask(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        path = Store(tmp_path).put(_record())
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
