"""Bootstrap intervals and paired significance tests, on hand-made outcomes and on a real model against its control."""

import numpy as np
import pytest
from scipy import stats as sps

from xeval.cli import main
from xeval.report import stats as st
from xeval.results.outcomes import MetricOutcomes


def mean_outcomes(scores) -> MetricOutcomes:
    return MetricOutcomes("mean", {"score": np.asarray(scores, dtype=np.float64)})


def test_holm_by_hand():
    # sorted p: 0.01 (x3) = 0.03, 0.03 (x2) = 0.06, 0.04 (x1) = 0.04 -> monotone: 0.06
    assert st.holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert st.holm([0.5, 0.9]) == [1.0, 1.0]
    assert st.holm([0.001]) == [0.001]


def test_permutation_matches_scipy_on_a_mean_metric():
    rng = np.random.default_rng(3)
    a = 100.0 * (rng.random(120) < 0.55)
    b = 100.0 * (rng.random(120) < 0.70)
    diff, p = st.paired_permutation(mean_outcomes(a), mean_outcomes(b), n_perm=20_000)
    assert diff == pytest.approx(b.mean() - a.mean())
    ref = sps.permutation_test((a, b), lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis),
                               permutation_type="samples", n_resamples=20_000, vectorized=True, random_state=0)
    assert p == pytest.approx(ref.pvalue, abs=0.01)


def test_same_outcomes_are_never_significant_and_ratio_metrics_are_tested_as_defined():
    a = MetricOutcomes("f1", {"correct": np.array([3., 1, 0, 2]), "predicted": np.array([4., 2, 1, 2]),
                              "gold": np.array([3., 2, 2, 2])})
    assert st.paired_permutation(a, a) == (0.0, 1.0)
    # b finds every chunk: F1 100 against a's 2*6/(9+9) = 66.7. Exact p by enumerating all 2^4 swap patterns.
    b = MetricOutcomes("f1", {"correct": a.stats["gold"].copy(), "predicted": a.stats["gold"].copy(),
                              "gold": a.stats["gold"].copy()})
    diff, p = st.paired_permutation(a, b, n_perm=8000)
    assert diff == pytest.approx(100 - 200 * 6 / 18)

    def f1(x):
        return 200 * x["correct"].sum() / (x["predicted"].sum() + x["gold"].sum())

    hits = 0
    for pattern in range(16):
        swap = np.array([(pattern >> i) & 1 for i in range(4)], dtype=bool)
        x = {k: np.where(swap, b.stats[k], a.stats[k]) for k in a.stats}
        y = {k: np.where(swap, a.stats[k], b.stats[k]) for k in a.stats}
        hits += abs(f1(y) - f1(x)) >= abs(diff) - 1e-9
    assert p == pytest.approx(hits / 16, abs=0.02)
    assert 0.1 < hits / 16 < 1  # small samples cannot be significant, and the swap does change the score


def test_bootstrap_interval_covers_the_score_and_narrows_with_more_examples():
    rng = np.random.default_rng(0)
    small = mean_outcomes(100.0 * (rng.random(50) < 0.6))
    large = mean_outcomes(100.0 * (rng.random(2000) < 0.6))
    lo_s, hi_s, basis = st.bootstrap_ci([small])
    lo_l, hi_l, _ = st.bootstrap_ci([large])
    assert basis == "examples" and lo_s <= small.value() <= hi_s and lo_l <= large.value() <= hi_l
    assert (hi_l - lo_l) < (hi_s - lo_s) / 4  # width ~ 1/sqrt(n): sqrt(40) ≈ 6.3
    # binomial standard error at n=2000, p=0.6: 1.1 points; the 95 % interval is about ±2.1
    assert (hi_l - lo_l) == pytest.approx(2 * 1.96 * 100 * np.sqrt(0.6 * 0.4 / 2000), rel=0.15)
    assert st.bootstrap_ci([small, small, small])[2] == "seeds and examples"
    assert st.bootstrap_ci([small]) == st.bootstrap_ci([small])  # fixed seed: the same interval every time


@pytest.mark.slow
def test_minilm_against_its_random_init_and_itself_on_tatoeba(tmp_path, minilm_dir, data_root, capsys):
    out = tmp_path / "runs"
    assert main(["run", "--model", str(minilm_dir), "--suite", "probes", "--tasks", "tatoeba", "--langs",
                 "de,fr,es,pt", "--layers", "6", "--max-eval", "200", "--control", "random-init", "--threads", "1",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    # far ahead of the control (MiniLM ~20 points, random init ~5 on these Latin-script languages): most significant
    assert main(["compare", str(out), str(out), "--baseline-model", "all-MiniLM-L6-v2-random-init",
                 "--significance"]) == 0
    text = capsys.readouterr().out
    first = text.splitlines()[0]
    better = int(first.split("better on ")[1].split(" of ")[0])
    assert " of 4 (task, language) cells" in first and better >= 3, text
    assert "| de* |" in text or "| fr* |" in text
    # the model against itself: nothing significant, every p = 1
    assert main(["compare", str(out), str(out), "--significance"]) == 0
    text = capsys.readouterr().out
    assert "better on 0 of 4" in text and "worse on 0" in text and "*" not in text.split("significant after")[1]
    assert text.count("| 1.0000 | 1.0000 |") == 4
    # report --table ci: an interval around every score, one seed each
    assert main(["report", str(out), "--table", "ci", "--format", "csv"]) == 0
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 8
    for row in rows:
        assert float(row["95% CI low"]) <= float(row["score"]) <= float(row["95% CI high"]), row
        assert row["seeds"] == "1" and row["examples"] == "200"


def test_intervals_and_tests_read_the_outcomes_of_the_record_the_table_shows(tmp_path, capsys):
    """A rerun with other settings stores a second record per cell; the table shows the newest, so its interval and
    its paired test must come from the newest record's outcomes too, not from whichever file was read last (the
    old config's interval used to be printed around the new score: 34.4 with a CI of 50.0 to 81.2)."""
    import csv
    import io

    from xeval.results.outcomes import Outcomes
    from xeval.results.store import Record, Store, Unit

    store = Store(tmp_path / "runs")
    ids = [str(i) for i in range(8)]
    # config "aaa" (all wrong) is the newer one; "bbb" (all right) sorts and is read after it
    for config, stamp, score in (("aaa", "2026-12-01T11:00:00", 0.0), ("bbb", "2026-12-01T10:00:00", 100.0)):
        for model in ("m@1", "n@2"):
            unit = Unit(model, "pawsx", "de", "dev", seed=1, config_hash=config)
            outcomes = Outcomes(ids, [1] * 8, [1] * 8).add("accuracy", "mean", score=[score] * 8)
            store.put(Record(unit, {"accuracy": score}, 8, provenance={"timestamp": stamp}), outcomes)
    assert main(["report", str(tmp_path / "runs"), "--table", "ci", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    cells = [tuple(float(r[k]) for k in ("score", "95% CI low", "95% CI high")) for r in rows]
    assert cells == [(0.0, 0.0, 0.0)] * 2
