"""Per-example outcomes: every task family stores them beside its records, and they reproduce the stored number."""

import gzip

import numpy as np
import pytest

from tests.helpers import transfer as helpers_transfer
from xeval.cli import main
from xeval.results.outcomes import Outcomes, aggregate, outcomes_path, read_outcomes
from xeval.results.store import Store

FAST = ["--max-train", "32", "--max-dev", "8", "--max-eval", "24", "--epochs", "1", "--batch-size", "16",
        "--set", "learning_rate=0.001", "--threads", "1"]


def test_aggregates_by_hand():
    # f1: 2 * 3 / (4 + 5) = 66.67; aer: 1 - (2 + 3) / (4 + 4) = 37.5
    assert aggregate("f1", {"correct": 3, "predicted": 4, "gold": 5}, 2) == pytest.approx(200 / 3)
    assert aggregate("aer", {"predicted_sure": 2, "predicted_possible": 3, "predicted": 4, "sure": 4}, 1) == 37.5
    assert aggregate("f1", {"correct": 0, "predicted": 0, "gold": 0}, 1) == 0.0  # seqeval: zero division gives 0
    out = Outcomes(["a", "b", "c"], [1, 0, 1], [1, 1, 1]).add("accuracy", "mean", score=[100, 0, 100])
    m = out.metrics["accuracy"]
    assert m.value() == pytest.approx(200 / 3)
    # rows [0, 0, 0] and [1, 1, 2]: replicates of the mean
    assert m.value(np.array([[0, 0, 0], [1, 1, 2]])).tolist() == [100.0, pytest.approx(100 / 3)]
    with pytest.raises(ValueError):
        out.add("f1", "f1", score=[1, 2, 3])


@pytest.mark.slow
def test_every_family_stores_outcomes_that_reproduce_its_metric(tmp_path, data_root):
    model = helpers_transfer.tiny_model(data_root)
    out = tmp_path / "runs"
    assert main(["run", "--model", str(model), "--suite", "xtreme-mini", "--data", str(data_root), "--out", str(out),
                 "--tasks", "udpos,xnli,mlqa,tatoeba,alignment", "--langs", "en,de,zh,de-en", "--layers", "0,2",
                 *FAST]) == 0
    records = list(Store(out).records())
    assert {r.unit.task for r in records} == {"udpos", "xnli", "mlqa", "tatoeba", "alignment"}
    for rec in records:
        outcomes = rec.outcomes()
        assert outcomes is not None, rec.unit
        assert len(outcomes) == rec.n_examples
        assert len(set(outcomes.ids)) == len(outcomes.ids), rec.unit
        for name, m in outcomes.metrics.items():
            assert float(m.value()) == pytest.approx(rec.metrics[name], abs=1e-6), (rec.unit, name)  # records round to 1e-6
    # the file is gzipped JSON beside the record, byte-identical when written again
    path = outcomes_path(next(iter(records)).source)
    assert path.name.endswith(".outcomes.json.gz") and gzip.open(path).read(1) == b"{"
    # an overwritten record without outcomes drops the stale file; old records without one still load
    rec = records[0]
    Store(out, overwrite=True).put(rec)
    assert read_outcomes(rec.source) is None and rec.outcomes() is None
    assert len(list(Store(out).records())) == len(records)
