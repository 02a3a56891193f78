"""The small heads of the frozen-encoder mode (``xeval.adapters.probe_mode``), trained on cached features.

- ``fit_classifier``: scikit-learn ``LogisticRegression`` (multinomial, lbfgs) on standardised features, its inverse
  regularisation strength C chosen from ``C_GRID`` by the task's metric on a selection set (English dev, or a
  held-out part of the English training data). Used for tagging (one row per word: its first subword) and pair
  classification (one row per pair: the pooled pair representation).
- ``SpanHead``: a linear start/end layer over token features (as ``BertForQuestionAnswering``'s ``qa_outputs``),
  trained with full-batch L-BFGS in torch on every window's tokens: the loss is a softmax over the positions of each
  window, which scikit-learn has no estimator for.

Both are deterministic: lbfgs has no randomness, and the span head starts from zeros.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

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
    import warnings

    from sklearn.exceptions import ConvergenceWarning
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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the iteration count is recorded instead
            model.fit(xs, y)
        head = ClassifierHead(scaler, copy.deepcopy(model), float(c), scores, int(np.max(model.n_iter_)))
        score = float(select(head)) if select is not None else 0.0
        scores[float(c)] = score
        if select is None or best is None or score > best_score:
            best, best_score = head, score
    assert best is not None
    return best


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
    start/end position in each window (0, the [CLS] token, when the window does not hold the answer)."""
    x = torch.from_numpy(np.asarray(tokens, dtype=np.float32))
    mean, scale = x.mean(0), x.std(0).clamp(min=1e-6)
    x = (x - mean) / scale
    n, width = len(lengths), max(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    window = torch.from_numpy(np.repeat(np.arange(n), lengths))  # [N_tok]: window of each token
    position = torch.from_numpy(np.arange(len(x)) - np.repeat(offsets, lengths))  # [N_tok]: position in window
    start = torch.tensor(starts, dtype=torch.long)
    end = torch.tensor(ends, dtype=torch.long)
    weight = torch.zeros(x.shape[1], 2, requires_grad=True)
    bias = torch.zeros(2, requires_grad=True)
    optimiser = torch.optim.LBFGS([weight, bias], lr=1.0, max_iter=SPAN_ITERATIONS, history_size=20,
                                  line_search_fn="strong_wolfe")
    losses: list[float] = []

    def closure():
        optimiser.zero_grad()
        flat = x @ weight + bias  # [N_tok, 2]
        grid = torch.full((n, width, 2), float("-inf")).index_put((window, position), flat)  # -inf past the end
        loss = (F.cross_entropy(grid[..., 0], start) + F.cross_entropy(grid[..., 1], end)) / 2
        loss.backward()
        losses.append(float(loss.detach()))
        return loss

    optimiser.step(closure)
    loss = torch.tensor(losses[-1])
    return SpanHead(mean, scale, weight.detach(), bias.detach(), float(loss.detach()))
