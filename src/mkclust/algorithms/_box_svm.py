"""The SVM dual without a bias, max_{0 <= a <= C} e'a - 1/2 a'Qa: dual coordinate descent, and a primal
active-set method for where coordinate descent crawls (``box_svm(method=...)``).

LG-MMC's inner SVM (:mod:`mkclust.algorithms.lgmmc`) is this problem with Q = K o W, solved about a
thousand times per fit with Q changing little from one solve to the next, so every solve starts from
the previous one's alpha. No scipy, scikit-learn or cvxpy solver takes a warm start for a
precomputed kernel without a bias (libsvm's ``SVC`` has the bias and no warm start; cvxpy's
interior-point solvers take no start), so both parts are written here.

**The active-set method** (:mod:`mkclust.algorithms._active_set`, compiled, its free block's Cholesky
factor updated as coordinates join and leave) moves every free coordinate at once by a Newton step
on the free block; its cost is set by how many coordinates change sides, not by how
ill-conditioned the free block is, which is what slows coordinate descent: on sick (n = 2,643, a
Gaussian kernel, C = 100, one SVM of LG-MMC's round 8) the free block's condition number was about
6e5, and coordinate descent took 4,832 sweeps (0.75 s) where the active-set method took 66 steps
(0.16 s in its first, uncompiled form) to a higher dual value.

**Coordinate descent** (``method="dcd"``, this function's default; LG-MMC's until 2026-12-01) is the
solver alone; under "auto" it runs
first (at most ``first_sweeps``), then, if it has not stopped, the active-set method, and then
coordinate descent again from the active-set method's point (one sweep when that point already meets
the stop), or from before the steps if the active-set method did not finish in its step budget:
dual coordinate descent with shrinking (Hsieh, Chang, Lin, Keerthi, Sathiya, ICML 2008,
Algorithm 3: the solver of LIBLINEAR's L1-loss SVM dual), its loop compiled with numba
(``cache=True``: one compilation per machine, not per process). One coordinate step: G_i = (Qa)_i -
1; a_i <- min(max(a_i - G_i / Q_ii, 0), C); the gradient g = Qa - e is updated with the row Q_i (Q
is symmetric) times the step. Coordinates are visited in index order (deterministic). Shrinking: a
coordinate at a bound whose gradient points out of the box beyond the previous sweep's largest
projected-gradient violation leaves the active set; the solver stops when the projected gradient's
spread max PG - min PG over the active set is at most ``tol``, and then checks every coordinate
once more (LIBLINEAR's rule), so the returned point satisfies the stop on all of them. A coordinate
with Q_ii <= 0 (a zero row of a centred kernel) is never moved. Coordinate descent is the stop's
judge under every method, so each returns a point that meets the same stop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mkclust.algorithms._active_set import _active_set


@njit(cache=True)
def _dcd(Q, alpha, grad, C, tol, max_sweeps):   # pragma: no cover - compiled; its py_func is tested
    """Dual coordinate descent in place on ``alpha`` and ``grad`` (= Q alpha - e on entry).
    Returns (sweeps, final spread of the projected gradient)."""
    n = Q.shape[0]
    active = np.arange(n)
    n_active = n
    pg_max_old = np.inf
    pg_min_old = -np.inf
    spread = np.inf
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        pg_max = -np.inf
        pg_min = np.inf
        s = 0
        while s < n_active:
            i = active[s]
            g = grad[i]
            pg = 0.0
            if alpha[i] <= 0.0:
                if g > pg_max_old:
                    n_active -= 1
                    active[s] = active[n_active]
                    active[n_active] = i
                    continue
                if g < 0.0:
                    pg = g
            elif alpha[i] >= C:
                if g < pg_min_old:
                    n_active -= 1
                    active[s] = active[n_active]
                    active[n_active] = i
                    continue
                if g > 0.0:
                    pg = g
            else:
                pg = g
            if pg > pg_max:
                pg_max = pg
            if pg < pg_min:
                pg_min = pg
            qii = Q[i, i]
            if pg != 0.0 and qii > 0.0:
                old = alpha[i]
                new = old - g / qii
                if new < 0.0:
                    new = 0.0
                elif new > C:
                    new = C
                d = new - old
                if d != 0.0:
                    alpha[i] = new
                    for j in range(n):
                        grad[j] += d * Q[i, j]
            s += 1
        if n_active == 0:
            pg_max = 0.0
            pg_min = 0.0
        spread = pg_max - pg_min
        if spread <= tol:
            if n_active == n:
                break
            n_active = n                       # check every coordinate once more before stopping
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    return sweeps, spread


def _null_step(Q, alpha, grad, C):
    """Where coordinate descent stalls: on a rank-deficient Q (a linear kernel of d features and more
    than d free coordinates) the free block Q_FF is singular and Q_FF a_F = -g_F + Q_FF a_F has no
    solution, so the sweeps drift along the null space of Q_FF without reaching a bound. Along a
    null direction d the objective is linear, slope -g_F'd; step along the ascent direction until the
    first coordinate reaches a bound (exact). Returns True if a step was taken."""
    free = np.flatnonzero((alpha > 0.0) & (alpha < C))
    if free.size < 2:
        return False
    w, V = np.linalg.eigh(Q[np.ix_(free, free)])
    null = V[:, w <= 1e-10 * max(float(w[-1]), 1e-300)]
    if null.shape[1] == 0:
        return False
    d = null @ (null.T @ -grad[free])             # the ascent direction in the null space
    if not np.linalg.norm(d) > 1e-12 * max(1.0, np.linalg.norm(grad[free])):
        return False
    a = alpha[free]
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = np.where(d > 0, (C - a) / d, np.where(d < 0, -a / d, np.inf))
    t = float(steps.min())
    if not np.isfinite(t) or t <= 0.0:
        return False
    new = np.clip(a + t * d, 0.0, C)
    new[np.argmin(steps)] = C if d[np.argmin(steps)] > 0 else 0.0
    delta = new - a
    alpha[free] = new
    grad += Q[:, free] @ delta
    return True


def box_svm(Q: np.ndarray, C: float, alpha0: np.ndarray | None = None, tol: float = 1e-4,
            max_sweeps: int = 100_000, stall_sweeps: int = 1000, method: str = "dcd", first_sweeps: int = 100,
            ) -> tuple[np.ndarray, int, float, int]:
    """argmax_{0 <= a <= C} e'a - 1/2 a'Qa for a symmetric positive semi-definite ``Q`` (C-ordered
    float64), from ``alpha0`` (clipped to the box) or zero. Returns (alpha, sweeps, spread, steps):
    the coordinate-descent sweeps over the active coordinates, the projected gradient's final spread
    (at most ``tol`` unless ``max_sweeps`` ran out) and the active-set method's steps.

    ``method``: "dcd" (default): coordinate descent alone; "auto": coordinate descent for at most
    ``first_sweeps`` sweeps (a warm start near the optimum of a well-conditioned Q stops there), then,
    if the stop is not met, the active-set method from that point (at most 4 n steps), then
    coordinate descent to the stop; "active-set": the active-set method first. Every
    ``stall_sweeps`` sweeps without a stop, one exact step along the null space of the free block
    (:func:`_null_step`) ends the drift of a rank-deficient Q."""
    if method not in ("auto", "active-set", "dcd"):
        raise ValueError(f"method must be 'auto', 'active-set' or 'dcd', got {method!r}")
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    n = Q.shape[0]
    alpha = np.zeros(n) if alpha0 is None else np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, float(C))
    grad = (Q @ alpha - 1.0) if alpha.any() else np.full(n, -1.0)
    done, spread, steps = 0, np.inf, 0
    if method == "auto":
        done, spread = _dcd(Q, alpha, grad, float(C), float(tol), int(min(first_sweeps, max_sweeps)))
        done = int(done)
        if spread <= tol:
            return alpha, done, float(spread), 0
    if method != "dcd":
        start = alpha.copy()
        steps, solved, _ = _active_set(Q, alpha, grad, float(C), float(tol), 4 * n, np.empty(0))
        if not solved:                                   # coordinate descent from before the steps instead
            alpha = start
        grad = Q @ alpha - 1.0                           # afresh: no drift from the steps' updates
    while done < max_sweeps:
        sweeps, spread = _dcd(Q, alpha, grad, float(C), float(tol), int(min(stall_sweeps, max_sweeps - done)))
        done += int(sweeps)
        if spread <= tol:
            break
        _null_step(Q, alpha, grad, float(C))
    return alpha, int(done), float(spread), int(steps)
