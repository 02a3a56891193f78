"""Statistics over per-example outcomes (``xeval.results.outcomes``): bootstrap confidence intervals and paired tests.

- ``bootstrap_ci``: percentile bootstrap, 95 % by default, 1,000 replicates from a fixed seed (the same interval
  on every rerun). Examples are resampled with replacement, the same draw for every seed of the unit (they score
  the same examples), and the seed-mean recomputed per replicate. With three seeds or more the seeds are
  resampled too (two-level bootstrap: seeds, then examples), so the interval also covers fine-tuning variance;
  with one or two seeds it covers example sampling only, and the table says which.
- ``paired_permutation``: two systems scored on the same examples; under the null hypothesis the two outcomes of
  an example are exchangeable, so each example's pair is swapped at random (10,000 draws) and the difference of
  the aggregate metric recomputed. Two-sided p = (1 + #{|Δ*| ≥ |Δ|}) / (1 + draws). Swapping works on the
  additive statistics the metric is built from, so corpus-level F1 and AER are tested as they are defined (a
  per-example mean would not be seqeval's F1); for mean metrics it is the test ``scipy.stats.permutation_test``
  runs with ``permutation_type="samples"`` (checked in the tests). With several seeds each example's statistics
  are averaged over seeds first.
- ``holm``: Holm–Bonferroni adjusted p-values (step-down; controls the family-wise error rate), applied across
  the languages of one task.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xeval.results.outcomes import MetricOutcomes, aggregate

N_BOOTSTRAP = 1000
N_PERMUTATIONS = 10_000
RANDOM_SEED = 0


def _check_same_examples(runs: Sequence[MetricOutcomes]) -> int:
    sizes = {len(m) for m in runs}
    if len(sizes) != 1:
        raise ValueError(f"outcomes of one unit differ in size across seeds: {sorted(sizes)}")
    if len({m.aggregate for m in runs}) != 1:
        raise ValueError("outcomes of one unit use different aggregates across seeds")
    return sizes.pop()


def bootstrap_ci(runs: Sequence[MetricOutcomes], level: float = 0.95, n_boot: int = N_BOOTSTRAP,
                 seed: int = RANDOM_SEED) -> tuple[float, float, str]:
    """(low, high, basis) of the seed-mean metric; ``runs`` = the unit's outcomes, one per seed."""
    n = _check_same_examples(runs)
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n, size=(n_boot, n))  # [B, N]: one draw of examples per replicate, shared by seeds
    values = np.stack([m.value(index) for m in runs])  # [S, B]
    if len(runs) >= 3:
        pick = rng.integers(0, len(runs), size=(n_boot, len(runs)))  # [B, S]: seeds drawn per replicate
        replicates = values[pick, np.arange(n_boot)[:, None]].mean(axis=1)
        basis = "seeds and examples"
    else:
        replicates = values.mean(axis=0)
        basis = "examples"
    alpha = (1 - level) / 2
    low, high = np.quantile(replicates, [alpha, 1 - alpha])
    return float(low), float(high), basis


def seed_average(runs: Sequence[MetricOutcomes]) -> MetricOutcomes:
    """Per-example statistics averaged over seeds (the aggregate of the averages is the pooled metric)."""
    _check_same_examples(runs)
    stats = {k: np.mean([m.stats[k] for m in runs], axis=0) for k in runs[0].stats}
    return MetricOutcomes(runs[0].aggregate, stats)


def paired_permutation(a: MetricOutcomes, b: MetricOutcomes, n_perm: int = N_PERMUTATIONS,
                       seed: int = RANDOM_SEED, chunk: int = 1000) -> tuple[float, float]:
    """(Δ = metric(b) − metric(a), two-sided p) for two systems' outcomes on the same examples, in order."""
    n = _check_same_examples([a, b])
    observed = float(b.value() - a.value())
    delta = {k: b.stats[k] - a.stats[k] for k in a.stats}  # what a swap moves from b to a, per example
    if all(not np.any(d) for d in delta.values()):
        return observed, 1.0  # identical outcomes: every swap gives Δ* = 0
    sum_a = {k: a.stats[k].sum() for k in a.stats}
    sum_b = {k: b.stats[k].sum() for k in b.stats}
    rng = np.random.default_rng(seed)
    extreme, done = 0, 0
    tol = 1e-9 * max(1.0, abs(observed))  # float noise must not decide a tie
    while done < n_perm:
        size = min(chunk, n_perm - done)
        swap = rng.random((size, n)) < 0.5  # [R, N]
        moved = {k: swap @ d for k, d in delta.items()}  # [R]
        diff = (aggregate(b.aggregate, {k: sum_b[k] - moved[k] for k in sum_b}, n)
                - aggregate(a.aggregate, {k: sum_a[k] + moved[k] for k in sum_a}, n))
        extreme += int(np.sum(np.abs(diff) >= abs(observed) - tol))
        done += size
    return observed, (1 + extreme) / (1 + n_perm)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return [round(float(x), 12) for x in adjusted]
