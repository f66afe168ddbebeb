"""The primal active-set method for the bias-free SVM dual max_{0 <= a <= C} e'a - 1/2 a'Qa, compiled
with numba, its free block's Cholesky factor updated (not recomputed) as coordinates join and leave.

Used by :func:`mkclust.algorithms._box_svm.box_svm` (``method="auto"`` and ``"active-set"``), whose
docstring says when. Nocedal and Wright, Numerical Optimization, 2nd ed., Algorithm 16.3, for the box:

- The working set W holds coordinates strictly inside the box whose block Q_WW has a Cholesky
  factor L (L L' = Q_WW); the others sit at a bound, or, inside the box, are *parked*: held where
  they are because their column of Q depends on W's (Q_WW would turn singular).
- A step on W is the Newton step d = -Q_WW^{-1} g_W (g = Qa - e, the gradient of the minimised form),
  taken whole if it stays in the box, else up to the first bound, whose coordinates leave W. A
  whole step leaves g_W = 0 up to rounding; where the factor's rounding leaves more than tol / 2,
  the Newton step is repeated (iterative refinement, at most 3 times), then the factor is rebuilt.
- Optimal on W, the coordinate off W whose projected gradient is the largest in magnitude (g < 0 at
  0, g > 0 at C, any g when parked) joins W: its row of L is one triangular solve, l = L^{-1} Q_Wk,
  with diagonal sqrt(Q_kk - l'l). Where Q_kk - l'l <= 1e-10 Q_kk, Q_{W+k} is singular: along its
  null vector v = (-Q_WW^{-1} Q_Wk, 1) the objective is linear with slope -g_k (g_W = 0), so the
  step goes along v in the ascent direction to the first bound (exact), and the coordinate that
  reaches it leaves. None beyond tol / 2: solved.
- A coordinate leaves W by deleting its row of L and restoring the triangle with Givens rotations
  of neighbouring columns (Golub and Van Loan, Matrix Computations, 4th ed., Section 6.5.4).

Every step raises the objective (a Newton step on a concave quadratic, cut short on the segment to
its maximiser; a null step along a direction of positive slope). A step costs O(|W|^2) for the
factor and O(n |W|) for the gradient, where refactoring Q_WW at every step costs O(|W|^3). No
library offers this: scipy's and cvxpy's QP solvers take no warm start from the previous SVM of a
fit and refactor at each step.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _add_rows(Q, rows, weights, out):   # pragma: no cover - compiled; its py_func is tested
    """out += weights @ Q[rows] without copying the rows (Q symmetric: the gradient's change when the
    coordinates ``rows`` of alpha move by ``weights``)."""
    n = Q.shape[1]
    for r in range(rows.size):
        w = weights[r]
        if w != 0.0:
            i = rows[r]
            for j in range(n):
                out[j] += w * Q[i, j]


@njit(cache=True)
def _forward(L, m, b, out):   # pragma: no cover - compiled; its py_func is tested
    """out[:m] = L[:m, :m]^{-1} b[:m] (L lower triangular)."""
    for i in range(m):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * out[j]
        out[i] = s / L[i, i]


@njit(cache=True)
def _backward(L, m, y, out):   # pragma: no cover - compiled; its py_func is tested
    """out[:m] = L[:m, :m]^{-T} y[:m], by rows of L (contiguous)."""
    for i in range(m):
        out[i] = y[i]
    for i in range(m - 1, -1, -1):
        out[i] /= L[i, i]
        di = out[i]
        for j in range(i):
            out[j] -= L[i, j] * di


@njit(cache=True)
def _try_add(Q, L, W, m, k, row):   # pragma: no cover - compiled; its py_func is tested
    """L's would-be row for coordinate k joining W[:m] in ``row[:m]``; returns Q_kk - l'l (the
    squared diagonal; small against Q_kk: singular)."""
    col = np.empty(m)
    for r in range(m):
        col[r] = Q[k, W[r]]                       # Q symmetric: row k is contiguous
    _forward(L, m, col, row)
    d2 = Q[k, k]
    for r in range(m):
        d2 -= row[r] * row[r]
    return d2


@njit(cache=True)
def _join(Q, L, W, pos, m, k, row):   # pragma: no cover - compiled; its py_func is tested
    """Coordinate k joins W[:m] where its column is independent of theirs (Q_kk - l'l > 1e-10 Q_kk):
    returns m + 1; else m, W and L unchanged (``row[:m]`` holds l = L^{-1} Q_Wk either way)."""
    d2 = _try_add(Q, L, W, m, k, row)
    if not (d2 > 0.0 and d2 > 1e-10 * Q[k, k]):
        return m
    L[m, :m] = row[:m]
    L[m, m] = np.sqrt(d2)
    W[m] = k
    pos[k] = m
    return m + 1


@njit(cache=True)
def _delete(L, W, pos, m, p):   # pragma: no cover - compiled; its py_func is tested
    """Remove position p from W[:m] and its row from L, restoring the triangle by Givens rotations."""
    pos[W[p]] = -1
    for i in range(p, m - 1):
        W[i] = W[i + 1]
        pos[W[i]] = i
        for j in range(i + 2):
            L[i, j] = L[i + 1, j]
    for j in range(p, m - 1):
        a = L[j, j]
        b = L[j, j + 1]
        if b == 0.0:
            continue
        r = np.hypot(a, b)
        c = a / r
        s = b / r
        for i in range(j, m - 1):
            x = L[i, j]
            y = L[i, j + 1]
            L[i, j] = c * x + s * y
            L[i, j + 1] = c * y - s * x
        L[j, j + 1] = 0.0


@njit(cache=True)
def _drop_bounded(L, W, pos, m, alpha, C):   # pragma: no cover - compiled; its py_func is tested
    """Delete from W[:m] (and L) every coordinate a step has put at a bound. Returns the new |W|."""
    for r in range(m - 1, -1, -1):
        if alpha[W[r]] <= 0.0 or alpha[W[r]] >= C:
            _delete(L, W, pos, m, r)
            m -= 1
    return m


@njit(cache=True)
def _build(Q, alpha, C, L, W, pos):   # pragma: no cover - compiled; its py_func is tested
    """Factor the block of the coordinates inside the box, in index order, parking those whose column
    depends on the ones before. Returns |W|."""
    n = Q.shape[0]
    m = 0
    row = np.empty(n)
    pos[:] = -1
    for k in range(n):
        if alpha[k] > 0.0 and alpha[k] < C:
            m = _join(Q, L, W, pos, m, k, row)
    return m


@njit(cache=True)
def _objective(alpha, grad):   # pragma: no cover - compiled; its py_func is tested
    """e'a - 1/2 a'Qa = 1/2 a'(e - g) for g = Qa - e."""
    s = 0.0
    for i in range(alpha.size):
        s += alpha[i] * (1.0 - grad[i])
    return 0.5 * s


@njit(cache=True)
def _move(Q, alpha, grad, C, rows, d, k_max):   # pragma: no cover - compiled; its py_func is tested
    """Step ``alpha[rows] += t d`` with t the largest in (0, k_max] keeping the box; coordinates that
    reach a bound are set to it exactly. Returns t (inf: no bound and no cap)."""
    t = k_max
    for r in range(rows.size):
        a = alpha[rows[r]]
        if d[r] > 0.0:
            t = min(t, (C - a) / d[r])
        elif d[r] < 0.0:
            t = min(t, -a / d[r])
    if not np.isfinite(t):
        return t
    step = np.empty(rows.size)
    for r in range(rows.size):
        i = rows[r]
        a = alpha[i]
        new = a + t * d[r]
        if d[r] > 0.0 and (C - a) / d[r] <= t:
            new = C
        elif d[r] < 0.0 and -a / d[r] <= t:
            new = 0.0
        new = min(max(new, 0.0), C)
        step[r] = new - a
        alpha[i] = new
    _add_rows(Q, rows, step, grad)
    return t


@njit(cache=True)
def _active_set(Q, alpha, grad, C, tol, max_steps, trace):   # pragma: no cover - compiled; py_func tested
    """The active-set method (module docstring) in place on ``alpha`` and ``grad`` (= Q alpha - e on
    entry). Returns (steps, solved, null steps): solved when the point is optimal on W and no
    coordinate off W has a projected gradient beyond tol / 2. ``trace`` (length max_steps + 1, or 0
    to skip) receives the objective before the first step and after each."""
    n = Q.shape[0]
    L = np.empty((n, n))
    W = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    m = _build(Q, alpha, C, L, W, pos)
    y = np.empty(n)
    d = np.empty(n)
    row = np.empty(n)
    refine = 0
    nulls = 0
    record = trace.size > 0
    if record:
        trace[0] = _objective(alpha, grad)
    for step in range(1, max_steps + 1):
        if m > 0:
            big = 0.0
            for r in range(m):
                y[r] = -grad[W[r]]
                big = max(big, abs(y[r]))
            if big > tol / 2 or refine == 0:
                _forward(L, m, y, row)
                _backward(L, m, row, d)
                slope = 0.0
                for r in range(m):
                    slope += y[r] * d[r]
                if not slope > 0.0 and big > 0.0:      # the factor has lost the block: rebuild it
                    m = _build(Q, alpha, C, L, W, pos)
                    refine = 0
                    if record:
                        trace[step] = _objective(alpha, grad)
                    continue
                if big > 0.0:
                    t = _move(Q, alpha, grad, C, W[:m], d[:m], 1.0)
                    left = _drop_bounded(L, W, pos, m, alpha, C)
                    hit = left < m
                    m = left
                    if hit or t < 1.0:
                        refine = 0
                        if record:
                            trace[step] = _objective(alpha, grad)
                        continue
                    refine += 1
                    big = 0.0
                    for r in range(m):
                        big = max(big, abs(grad[W[r]]))
                    if big > tol / 2:
                        if refine > 3:                 # refinement does not settle: a fresh factor
                            m = _build(Q, alpha, C, L, W, pos)
                            refine = 0
                        if record:
                            trace[step] = _objective(alpha, grad)
                        continue
        refine = 0
        k = -1
        worst = tol / 2
        for j in range(n):
            if pos[j] >= 0:
                continue
            g = grad[j]
            pg = g
            if alpha[j] <= 0.0:
                pg = min(g, 0.0)
            elif alpha[j] >= C:
                pg = max(g, 0.0)
            if abs(pg) > worst:
                worst = abs(pg)
                k = j
        if k < 0:
            if record:
                trace[step] = _objective(alpha, grad)
            return step, True, nulls
        joined = _join(Q, L, W, pos, m, k, row)
        if joined > m:
            m = joined
            if record:
                trace[step] = _objective(alpha, grad)
            continue
        nulls += 1                                     # Q_{W+k} singular: the null step
        _backward(L, m, row, d)
        rows = np.empty(m + 1, dtype=np.int64)
        v = np.empty(m + 1)
        sign = 1.0 if grad[k] < 0.0 else -1.0
        for r in range(m):
            rows[r] = W[r]
            v[r] = -sign * d[r]
        rows[m] = k
        v[m] = sign
        t = _move(Q, alpha, grad, C, rows, v, np.inf)
        if not np.isfinite(t):
            return step, False, nulls
        m = _drop_bounded(L, W, pos, m, alpha, C)
        if record:
            trace[step] = _objective(alpha, grad)
    return max_steps, False, nulls
