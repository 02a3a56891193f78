"""POT's log-stabilised Sinkhorn (``ot.sinkhorn(..., method="sinkhorn_stabilized")``), run on many problems at once.

A word-alignment sweep solves one entropic OT problem per sentence pair and layer. Calling POT once per problem pays
~15 dispatched array operations per iteration on a ~50×50 matrix, so a 13-layer sweep cost 13× one layer. Here every
(pair, layer) problem of a chunk is padded into one stack [P, N, M] and iterated together; each problem follows
POT's own schedule step by step (same updates, same absorption into the dual potentials when a scaling exceeds
``tau``, the marginal error checked every 20th iteration, the same stopping iteration), so the plans agree with
POT's to rounding (summation order inside the products differs) and the links drawn from them are identical
(tests/adapters/probes/test_alignment.py checks this on real sentence pairs for every layer).

Padding: rows and columns beyond a problem's own (n, m) carry zero mass, zero kernel and zero scaling, so they add
exact zeros to every product and never reach a real entry. Problems that stop are taken out of the stack (it is
compacted at each check), so the long-running few do not keep paying for the many that converged early.
"""

from __future__ import annotations

import numpy as np

GROUP = 64  # problems iterated together: enough to amortise each step's dispatch, few enough to pad little
CHECK_EVERY = 20  # POT's print_period: the marginal error (and so the stop) is evaluated every 20th iteration


def _padded(costs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """costs (n_k × m_k) -> cost [P, N, M] (pads 0), row mask [P, N], column mask [P, M]."""
    n_max = max(c.shape[0] for c in costs)
    m_max = max(c.shape[1] for c in costs)
    cost = np.zeros((len(costs), n_max, m_max))
    rows = np.zeros((len(costs), n_max), dtype=bool)
    cols = np.zeros((len(costs), m_max), dtype=bool)
    for k, c in enumerate(costs):
        cost[k, : c.shape[0], : c.shape[1]] = c
        rows[k, : c.shape[0]] = True
        cols[k, : c.shape[1]] = True
    return cost, rows, cols


def _log0(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """log x on the real entries, 0 on the pads (keeps the pads' potentials finite)."""
    return np.log(x, out=np.zeros_like(x), where=mask)


def sinkhorn_stabilized_many(costs: list[np.ndarray], reg: float, num_iter_max: int = 2000, tau: float = 1e3,
                             stop_thr: float = 1e-9) -> list[np.ndarray]:
    """Transport plans (n_k × m_k, float64) between uniform marginals for each cost, as POT's sinkhorn_stabilized."""
    plans: list[np.ndarray | None] = [None] * len(costs)
    todo = [k for k, c in enumerate(costs) if c.size]
    for k, c in enumerate(costs):
        if not c.size:
            plans[k] = np.zeros(c.shape)
    if not todo:
        return plans  # type: ignore[return-value]
    # Similar shapes together: less padding in each stack.
    todo.sort(key=lambda k: costs[k].shape)
    for start in range(0, len(todo), GROUP):
        group = todo[start : start + GROUP]
        for k, plan in zip(group, _solve([costs[k] for k in group], reg, num_iter_max, tau, stop_thr)):
            plans[k] = plan
    return plans  # type: ignore[return-value]


def _solve(costs, reg, num_iter_max, tau, stop_thr):
    cost, rows, cols = _padded(costs)
    sizes = [c.shape for c in costs]
    a = rows / rows.sum(axis=1, keepdims=True)  # [P, N]: 1/n on real rows, 0 on pads
    b = cols / cols.sum(axis=1, keepdims=True)  # [P, M]
    mask = rows[:, :, None] & cols[:, None, :]  # [P, N, M]
    alpha, beta = np.zeros_like(a), np.zeros_like(b)
    u, v = a.copy(), b.copy()  # POT: ones / dim
    ids = np.arange(len(costs))  # which problem each row of the working stack is
    out: list[np.ndarray | None] = [None] * len(costs)

    def kernel(cost, alpha, beta, mask):
        return np.where(mask, np.exp(-(cost - alpha[:, :, None] - beta[:, None, :]) / reg), 0.0)

    def gamma(cost, alpha, beta, u, v, mask):
        with np.errstate(divide="ignore"):
            log_u, log_v = np.log(u), np.log(v)  # pads: -inf, so exp(...) is 0 there
        exponent = -(cost - alpha[:, :, None] - beta[:, None, :]) / reg + log_u[:, :, None] + log_v[:, None, :]
        return np.where(mask, np.exp(exponent), 0.0)

    def finish(which, plans):
        for row, plan in zip(which, plans):
            k = ids[row]
            n, m = sizes[k]
            out[k] = plan[:n, :m].copy()

    K = kernel(cost, alpha, beta, mask)
    for ii in range(num_iter_max):
        u_prev, v_prev = u, v
        # sinkhorn update: v = b / Kᵀu, u = a / Kv (pads: 0)
        ktu = np.matmul(u[:, None, :], K)[:, 0, :]
        v = np.divide(b, ktu, out=np.zeros_like(b), where=cols)
        kv = np.matmul(K, v[:, :, None])[:, :, 0]
        u = np.divide(a, kv, out=np.zeros_like(a), where=rows)
        # absorb large scalings into the potentials (per problem, as POT does on each one)
        with np.errstate(invalid="ignore"):
            absorb = (np.abs(u).max(axis=1) > tau) | (np.abs(v).max(axis=1) > tau)
        if absorb.any():
            alpha[absorb] += reg * _log0(u[absorb], rows[absorb])
            beta[absorb] += reg * _log0(v[absorb], cols[absorb])
            u[absorb], v[absorb] = a[absorb], b[absorb]
            K[absorb] = kernel(cost[absorb], alpha[absorb], beta[absorb], mask[absorb])
        done = np.zeros(len(ids), dtype=bool)
        if ii % CHECK_EVERY == 0:
            plan = gamma(cost, alpha, beta, u, v, mask)
            err = np.linalg.norm(plan.sum(axis=1) - b, axis=1)
            done = err <= stop_thr
            finish(np.flatnonzero(done), plan[done])
        # machine precision reached (NaN scalings): POT goes back to the previous scalings and stops
        nan = ~done & (np.isnan(u).any(axis=1) | np.isnan(v).any(axis=1))
        if nan.any():
            u, v = np.where(nan[:, None], u_prev, u), np.where(nan[:, None], v_prev, v)
            finish(np.flatnonzero(nan), gamma(cost[nan], alpha[nan], beta[nan], u[nan], v[nan], mask[nan]))
            done = done | nan
        if done.any():
            keep = ~done
            if not keep.any():
                return out
            # the rest, trimmed to their own largest shape (real entries are a prefix; the cut pads are zeros)
            n, m = int(rows[keep].sum(axis=1).max()), int(cols[keep].sum(axis=1).max())
            cost, K, mask = cost[keep, :n, :m], K[keep, :n, :m], mask[keep, :n, :m]
            rows, a, alpha, u = rows[keep, :n], a[keep, :n], alpha[keep, :n], u[keep, :n]
            cols, b, beta, v = cols[keep, :m], b[keep, :m], beta[keep, :m], v[keep, :m]
            ids = ids[keep]
    # iteration budget spent (POT warns "did not converge" and returns the last plan)
    finish(range(len(ids)), gamma(cost, alpha, beta, u, v, mask))
    return out
