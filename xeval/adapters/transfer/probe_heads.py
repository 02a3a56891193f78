"""The small heads of the frozen-encoder mode (``xeval.adapters.transfer.probe_mode``), trained on cached features.

- ``fit_classifier``: scikit-learn ``LogisticRegression`` (multinomial, lbfgs) on standardised features, its inverse
  regularisation strength C chosen from ``C_GRID`` by the task's metric on a selection set (English dev, or a
  held-out part of the English training data). Used for tagging (one row per word: its first subword) and pair
  classification (one row per pair: the pooled pair representation).
- ``SpanHead``: a linear start/end layer over token features (as ``BertForQuestionAnswering``'s ``qa_outputs``),
  trained with full-batch L-BFGS in torch on every window's tokens: the loss is a softmax over the positions of each
  window, which scikit-learn has no estimator for.

Both are deterministic: lbfgs has no randomness, and the span head starts from zeros. ``fit_each`` fits one head per
layer, as many at once as the run has threads, each on ONE thread (BLAS, OpenMP and torch): a head's numbers then do
not depend on ``--threads``, and the two cores of a small machine both work (one fit on two threads left half of one
idle: the fits stream a skinny matrix, not a product that splits well).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import torch

T = TypeVar("T")

MAX_PARALLEL_FITS = 4  # fits at once, whatever --threads says: each holds its own float32 copy of the features
C_GRID = (0.001, 0.01, 0.1, 1.0)  # tried in this order, each fit warm-started from the previous (more regularised) one
MAX_ITER = 150
TOL = 1e-3


@dataclass
class ClassifierHead:
    """A fitted ``StandardScaler`` + ``LogisticRegression`` and how it was chosen."""

    scaler: object
    model: object
    C: float
    scores: dict[float, float] = field(default_factory=dict)  # C -> selection score
    iterations: int = 0

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Label indices [N] (the indices ``fit_classifier`` was given as ``labels``)."""
        if len(features) == 0:
            return np.zeros((0,), dtype=np.int64)
        return self.model.predict(self.scaler.transform(np.asarray(features, dtype=np.float32)))

    def describe(self) -> dict:
        return {"type": "sklearn LogisticRegression (multinomial)", "solver": "lbfgs", "C": self.C,
                "C_grid": list(C_GRID), "selection_scores": {str(c): round(s, 4) for c, s in self.scores.items()},
                "standardise": "StandardScaler fitted on the training features", "max_iter": MAX_ITER, "tol": TOL,
                "n_iter": int(self.iterations)}


def fit_classifier(features: np.ndarray, labels: np.ndarray, select: Callable[[ClassifierHead], float] | None,
                   grid=C_GRID) -> ClassifierHead:
    """Fit one head per C in ``grid`` (warm-started in order) and keep the one ``select(head)`` scores highest
    (the first on ties); without ``select`` the last C is kept. features [N, H], labels [N] int."""
    import copy

    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x = np.asarray(features, dtype=np.float32)
    y = np.asarray(labels)
    scaler = StandardScaler().fit(x)
    xs = scaler.transform(x)
    model = LogisticRegression(solver="lbfgs", max_iter=MAX_ITER, tol=TOL, warm_start=True)
    best: ClassifierHead | None = None
    best_score = float("-inf")
    scores: dict[float, float] = {}
    for c in grid:
        model.set_params(C=float(c))
        model.fit(xs, y)  # not converging is recorded (n_iter), the warning silenced by ``fit_each``
        head = ClassifierHead(scaler, copy.deepcopy(model), float(c), scores, int(np.max(model.n_iter_)))
        score = float(select(head)) if select is not None else 0.0
        scores[float(c)] = score
        if select is None or best is None or score > best_score:
            best, best_score = head, score
    assert best is not None
    return best


def fit_each(fit: Callable[[int], T], count: int, workers: int | None = None) -> list[T]:
    """[fit(0), ..., fit(count - 1)], ``workers`` fits at a time in threads (default: torch's thread count, i.e. the
    run's ``--threads``; numpy, scikit-learn's loss and torch release the GIL), every BLAS / OpenMP / torch pool held
    to one thread meanwhile. Each fit is independent and single-threaded whatever ``workers`` is, so the results do
    not depend on it."""
    import warnings

    import sklearn.linear_model  # noqa: F401  loaded (with its OpenMP runtime) before the limits are taken
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    def one_thread(i: int) -> T:
        # OpenMP's thread count belongs to the calling thread (a new thread starts from the default): limit it in
        # the thread that fits. BLAS's and torch's belong to the process: limited once, below.
        with threadpool_limits(limits=1, user_api="openmp"):
            return fit(i)

    threads = torch.get_num_threads()
    workers = threads if workers is None else workers
    torch.set_num_threads(1)
    try:
        # the warnings filters are the process's: set once here, not in each thread (the iteration count is recorded)
        with threadpool_limits(limits=1), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if workers <= 1 or count <= 1:
                return [one_thread(i) for i in range(count)]
            with ThreadPoolExecutor(max_workers=min(workers, count, MAX_PARALLEL_FITS)) as pool:
                return list(pool.map(one_thread, range(count)))
    finally:
        torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------------------- QA


SPAN_ITERATIONS = 60  # L-BFGS iterations (the loss is convex in the head's weights)


@dataclass
class SpanHead:
    """start/end logits = standardised token features @ weight + bias; weight [H, 2]."""

    mean: torch.Tensor  # [H]
    scale: torch.Tensor  # [H]
    weight: torch.Tensor  # [H, 2]
    bias: torch.Tensor  # [2]
    final_loss: float = 0.0

    def logits(self, states: torch.Tensor) -> torch.Tensor:
        """states [..., H] -> [..., 2] (start, end)."""
        return ((states.float() - self.mean) / self.scale) @ self.weight + self.bias

    def describe(self) -> dict:
        return {"type": "linear start/end layer (torch)", "optimiser": "L-BFGS (strong Wolfe), full batch",
                "max_iter": SPAN_ITERATIONS, "init": "zeros", "standardise": "per dimension over training tokens",
                "loss": "cross-entropy over each window's positions, start and end averaged",
                "final_loss": round(self.final_loss, 6)}


def fit_span_head(tokens: np.ndarray, lengths: list[int], starts: list[int], ends: list[int]) -> SpanHead:
    """tokens [sum(lengths), H]: every window's token features, windows one after another; starts/ends: the gold
    start/end position in each window (0, the [CLS] token, when the window does not hold the answer).

    The loss's gradient is written out (``SpanLoss``) instead of taken by autograd: the same numbers (to float
    rounding) at half the cost, since this fit is bound by reading the large (~150k tokens x H) feature matrix and
    the two products it needs run about twice as fast with the layout chosen for each."""
    x = torch.from_numpy(np.array(tokens, dtype=np.float32))  # a copy, standardised in place below
    scale, mean = torch.std_mean(x, 0)
    scale = scale.clamp(min=1e-6)
    x.sub_(mean).div_(scale)
    objective = SpanLoss(x, lengths, starts, ends)
    weight = torch.zeros(x.shape[1], 2)
    bias = torch.zeros(2)
    optimiser = torch.optim.LBFGS([weight, bias], lr=1.0, max_iter=SPAN_ITERATIONS, history_size=20,
                                  line_search_fn="strong_wolfe")
    losses: list[float] = []

    def closure():
        loss, weight.grad, bias.grad = objective(weight, bias)
        losses.append(float(loss))
        return loss

    optimiser.step(closure)
    return SpanHead(mean, scale, weight, bias, losses[-1])


class SpanLoss:
    """Cross-entropy over each window's positions, start and end averaged over the windows, and its gradient.

    x [N_tok, H] (windows one after another). ``x @ weight`` is computed as ``weight.T @ x.T`` on a contiguous
    copy of ``x.T`` and the weight gradient as ``g.T @ x``: both then stream their matrix row by row (measured
    ~2x faster than ``x @ weight`` and ``x.T @ g`` on 150k x 384 at one thread)."""

    def __init__(self, x: torch.Tensor, lengths: list[int], starts: list[int], ends: list[int]):
        self.x, self.xt = x, x.T.contiguous()
        self.n, self.width = len(lengths), max(lengths)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self.window = torch.from_numpy(np.repeat(np.arange(self.n), lengths))  # [N_tok]: window of each token
        self.position = torch.from_numpy(np.arange(len(x)) - np.repeat(offsets, lengths))  # [N_tok]: its position
        self.start = torch.tensor(starts, dtype=torch.long)
        self.end = torch.tensor(ends, dtype=torch.long)
        self.rows = torch.arange(self.n)

    def __call__(self, weight: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(loss, d loss / d weight [H, 2], d loss / d bias [2])."""
        logits = (weight.T @ self.xt).T + bias  # [N_tok, 2]
        grid = torch.full((self.n, self.width, 2), float("-inf")).index_put((self.window, self.position), logits)
        log_p = torch.log_softmax(grid, dim=1)  # [windows, width, 2]; -inf past each window's end
        norm = 2.0 * self.n
        loss = -(log_p[self.rows, self.start, 0].sum() + log_p[self.rows, self.end, 1].sum()) / norm
        d = log_p.exp()  # d loss / d logit: (softmax - one-hot gold) / norm
        d[self.rows, self.start, 0] -= 1.0
        d[self.rows, self.end, 1] -= 1.0
        g = d[self.window, self.position] / norm  # [N_tok, 2]
        return loss, (g.T @ self.x).T.contiguous(), g.sum(0)
