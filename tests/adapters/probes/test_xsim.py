"""LASER's xsim (ratio-margin nearest neighbour error rate), on a hand-computed 2-D case where cosine fails."""

from __future__ import annotations

import numpy as np
import pytest


def _unit(deg: float) -> list[float]:
    return [np.cos(np.radians(deg)), np.sin(np.radians(deg))]


# English queries at 0° and 40°, their translations at 10° and 75°. By cosine, the 40° query is closer to 10° (30°
# apart) than to its translation (35° apart). The margin divides by the neighbourhoods' mean similarity: with k = 1,
# margin(q1, d0) = cos30 / ((cos30 + cos10) / 2) = 0.936 < margin(q1, d1) = cos35 / ((cos30 + cos35) / 2) = 0.972;
# with k = 4 (clipped to the 2 rows there are) 0.980 < 1.186. So margin retrieval is right where cosine is not.
EN = np.array([_unit(0), _unit(40)], dtype=np.float32)
XX = np.array([_unit(10), _unit(75)], dtype=np.float32)


@pytest.mark.parametrize("k", [1, 4])
def test_margin_fixes_the_hub_cosine_gets_wrong(k):
    from xeval.adapters.probes.retrieval import margin_predictions, top1

    assert top1(EN, XX).tolist() == [0, 0]  # cosine: both English lines pick the 10° sentence
    assert margin_predictions(EN, XX, k=k).tolist() == [0, 1]


def test_xsim_scores_both_directions():
    from xeval.adapters.probes.retrieval import bidirectional_scores, xsim_scores

    scores = xsim_scores(XX, EN)
    assert scores == {"xsim": 0.0, "xsim_en_xx": 0.0, "xsim_xx_en": 0.0, "xsim_mean": 0.0}
    cosine, _ = bidirectional_scores(XX, EN)
    assert cosine["accuracy_en_xx"] == 50.0 and cosine["accuracy_xx_en"] == 100.0


def test_xsim_error_is_complement_of_margin_accuracy_on_shuffled_rows():
    from xeval.adapters.probes.retrieval import xsim_scores

    # translations in the wrong order: every margin neighbour is the identical row, so every query is an error
    x = np.eye(3, dtype=np.float32)
    assert xsim_scores(x[[1, 2, 0]], x)["xsim_mean"] == 100.0
    assert xsim_scores(x, x)["xsim_mean"] == 0.0


@pytest.mark.slow
def test_flores_probe_reports_xsim_on_devtest_and_dev(tmp_path, data_root):
    from tests.helpers import transfer as helpers_transfer
    from xeval.cli import main
    from xeval.results.store import Store

    model = helpers_transfer.tiny_model(data_root)
    out = tmp_path / "runs"
    assert main(["run", "--model", str(model), "--suite", "probes", "--tasks", "flores", "--langs", "de",
                 "--data", str(data_root), "--out", str(out), "--max-eval", "40", "--threads", "1"]) == 0
    records = [r for r in Store(out).records() if r.unit.task == "flores"]
    assert {r.unit.split for r in records} == {"dev", "devtest"}  # dev runs first: it chooses the layer
    assert {r.unit.layer for r in records} == {0, 1, 2}  # every hidden state of the 2-layer model
    for r in records:
        assert 0.0 <= r.metrics["xsim_en_xx"] <= 100.0 and r.metrics["xsim"] == r.metrics["xsim_en_xx"]
        assert r.metrics["xsim_mean"] == (r.metrics["xsim_en_xx"] + r.metrics["xsim_xx_en"]) / 2
        assert "margin" in r.config["xsim"]
