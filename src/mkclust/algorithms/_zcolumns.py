"""The Z-step's column problems (Eq. 11) solved one by one, exactly, by a primal active-set method
compiled with numba: the route :func:`mkclust.algorithms._zstep.z_step` takes first.

Column i of Z solves

    min_z  q(z) = z'(alpha I + K) z + c'z   s.t.  z >= 0, 1'z = 1,        c = b_i - 2 k_i,

a strictly convex QP (alpha > 0) on the simplex with gradient g = H z + c, H = 2 (alpha I + K). Its
optimal support is small for the papers' alpha (measured on fourclass, n = 300, alpha = 1e-5: 3
coordinates, where the whole-matrix FISTA's iterates carry 85-92), so a method that grows the
support from the start column's one and moves only on it costs O(n |F|) a step where the
whole-matrix methods cost O(n^2) an iteration for every column. Nocedal and Wright, Numerical
Optimization, 2nd ed., Algorithm 16.3, for the simplex:

- The free set F holds the coordinates allowed to be positive, starting from the start column's
  support (Z0's column is feasible; the first Z-step starts from Z = I, one coordinate); the
  Cholesky factor L of H_FF is built once and then updated as coordinates join and leave
  (:mod:`mkclust.algorithms._active_set`'s helpers, written for the SVM's box).
- The step on F is the minimiser of q on {z_F + d : 1'd = 0}: d = mu H_FF^-1 1 - H_FF^-1 g_F with
  mu = 1'H_FF^-1 g_F / 1'H_FF^-1 1 (two triangular solves of each right-hand side). It is taken
  whole if z stays non-negative, else up to the first coordinate that reaches 0 (ratio test), which
  leaves F. A whole step leaves g_F constant (= the multiplier nu of 1'z = 1) up to rounding; where
  the spread of g_F is still above the threshold the step is repeated (iterative refinement, at
  most 3 times), then the factor is rebuilt once; still not settled: the column is returned
  unsolved.
- Optimal on F, the column's Frank-Wolfe gap is g'z - min_j g_j; at most ``thr`` times its share of
  J it is solved. Otherwise the coordinate with the smallest gradient (the most negative multiplier
  g_j - nu) joins F, which for a strictly convex QP the next step keeps positive.

Every step decreases q (a step towards the minimiser of a convex quadratic on an affine set holding
z); the gradient is updated from the step itself, O(n |F|). A column whose F would exceed ``max_free``
coordinates, whose join is numerically singular, or which takes more than ``max_steps`` steps is
returned unsolved at its last (feasible, never worse) point, for the whole-matrix method to finish.
No library solves many small simplex QPs with warm starts and factor updates: cvxpy and scipy
refactor per problem and a Python-level loop over n columns is the cost this module removes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mkclust.algorithms._active_set import _backward, _delete, _forward

#: a column's state on return (:func:`solve_columns`)
SOLVED, TOO_LARGE, SINGULAR, NOT_SETTLED, OUT_OF_STEPS = 0, 1, 2, 3, 4


@njit(cache=True)
def _join_h(K, alpha, L, F, pos, m, k, row):   # pragma: no cover - compiled; its py_func is tested
    """Coordinate k joins F[:m]: L's new row from H = 2 (alpha I + K). Returns m + 1, or m where
    H_{F+k} is numerically singular (F and L unchanged)."""
    col = np.empty(m)
    for r in range(m):
        col[r] = 2.0 * K[k, F[r]]
    _forward(L, m, col, row)
    hkk = 2.0 * (alpha + K[k, k])
    d2 = hkk
    for r in range(m):
        d2 -= row[r] * row[r]
    if not (d2 > 0.0 and d2 > 1e-12 * hkk):
        return m
    for r in range(m):
        L[m, r] = row[r]
    L[m, m] = np.sqrt(d2)
    F[m] = k
    pos[k] = m
    return m + 1


@njit(cache=True)
def _build_h(K, alpha, z, L, F, pos, row):   # pragma: no cover - compiled; its py_func is tested
    """F = the support of z in index order, L its factor. Returns |F|, or -1 if singular."""
    pos[:] = -1
    m = 0
    for k in range(z.size):
        if z[k] > 0.0:
            joined = _join_h(K, alpha, L, F, pos, m, k, row)
            if joined == m:
                return -1
            m = joined
    return m


@njit(cache=True)
def _add_step(K, alpha, F, m, delta, g):   # pragma: no cover - compiled; its py_func is tested
    """g += H[:, F] delta[:m] (H = 2 (alpha I + K), K symmetric: rows of K are contiguous)."""
    n = K.shape[0]
    for r in range(m):
        w = delta[r]
        if w != 0.0:
            i = F[r]
            g[i] += 2.0 * alpha * w
            for j in range(n):
                g[j] += 2.0 * w * K[i, j]


@njit(cache=True)
def _newton(L, F, m, g, a, u, tmp, d):   # pragma: no cover - compiled; its py_func is tested
    """d[:m] = the step to the minimiser of q on {z_F + d : 1'd = 0}: mu u - a with a = H_FF^-1 g_F,
    u = H_FF^-1 1 and mu = 1'a / 1'u."""
    for r in range(m):
        tmp[r] = g[F[r]]
    _forward(L, m, tmp, a)
    _backward(L, m, a, tmp)
    for r in range(m):
        a[r] = tmp[r]
        tmp[r] = 1.0
    _forward(L, m, tmp, u)
    _backward(L, m, u, tmp)
    sa = 0.0
    su = 0.0
    for r in range(m):
        u[r] = tmp[r]
        sa += a[r]
        su += u[r]
    mu = sa / su
    for r in range(m):
        d[r] = mu * u[r] - a[r]


@njit(cache=True)
def _column(K, c, kii, alpha, tol_rel, max_free, max_steps, z, g,
            L, F, pos, row, a, u, tmp, d, delta):   # pragma: no cover - compiled; its py_func is tested
    """The active-set method (module docstring) for one column, in place on z (feasible on entry) and
    g (its gradient, computed here). Returns (state, steps, gap, objective share J_i = K_ii + q(z))."""
    n = K.shape[0]
    m = 0
    for k in range(n):
        g[k] = c[k]
        if z[k] > 0.0:
            F[m] = k
            delta[m] = z[k]
            m += 1
    _add_step(K, alpha, F, m, delta, g)
    built = False                                      # L is factored at the first step (none if solved)
    refine = 0
    rebuilt = False
    steps = 0
    while True:
        gz = 0.0
        cz = 0.0
        for r in range(m):
            gz += g[F[r]] * z[F[r]]
            cz += c[F[r]] * z[F[r]]
        share = kii + 0.5 * (gz + cz)                  # K_ii + z'(alpha I + K) z + c'z
        thr = tol_rel * max(share, 0.0)
        gmin = np.inf
        k = -1
        for j in range(n):
            if g[j] < gmin:
                gmin = g[j]
                k = j
        gap = gz - gmin
        if gap <= thr:
            return SOLVED, steps, gap, share
        lo = np.inf
        hi = -np.inf
        for r in range(m):
            v = g[F[r]]
            lo = min(lo, v)
            hi = max(hi, v)
        if steps >= max_steps:
            return OUT_OF_STEPS, steps, gap, share
        if not built:
            m = _build_h(K, alpha, z, L, F, pos, row)
            if m < 0:
                return SINGULAR, steps, gap, share
            built = True
        steps += 1
        if hi - lo > 0.5 * thr and m > 1:              # not optimal on F: the step on F
            if refine >= 3:
                if rebuilt:
                    return NOT_SETTLED, steps, gap, share
                m = _build_h(K, alpha, z, L, F, pos, row)
                if m < 0:
                    return SINGULAR, steps, gap, share
                rebuilt = True
                refine = 0
                continue
            _newton(L, F, m, g, a, u, tmp, d)
            t = 1.0
            for r in range(m):
                if d[r] < 0.0:
                    t = min(t, -z[F[r]] / d[r])
            for r in range(m):
                i = F[r]
                new = z[i] + t * d[r]
                if d[r] < 0.0 and -z[i] / d[r] <= t:
                    new = 0.0                          # the blocking coordinates leave exactly
                new = max(new, 0.0)
                delta[r] = new - z[i]
                z[i] = new
            _add_step(K, alpha, F, m, delta, g)
            if t < 1.0:
                refine = 0
                for r in range(m - 1, -1, -1):
                    if z[F[r]] <= 0.0:
                        _delete(L, F, pos, m, r)
                        m -= 1
            else:
                refine += 1
            continue
        # optimal on F: the coordinate with the smallest gradient joins (the gap test put it off F)
        if pos[k] >= 0 or m >= max_free:
            return TOO_LARGE if m >= max_free else NOT_SETTLED, steps, gap, share
        joined = _join_h(K, alpha, L, F, pos, m, k, row)
        if joined == m:
            return SINGULAR, steps, gap, share
        m = joined
        refine = 0


@njit(cache=True)
def _columns(K, C, kdiag, alpha, tol_rel, max_free, max_steps, X, state, steps, gaps, shares):
    # pragma: no cover - compiled; its py_func is tested
    """Every row of X (a column of Z, feasible) through :func:`_column` with linear term C[i]; once
    more than half the rows so far (and at least 16) have needed more than ``max_free`` coordinates,
    the remaining rows are left as they are (state :data:`TOO_LARGE`, 0 steps)."""
    n = K.shape[0]
    g = np.empty(n)
    L = np.empty((max_free + 1, max_free + 1))
    F = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    row = np.empty(max_free + 1)
    a = np.empty(max_free + 1)
    u = np.empty(max_free + 1)
    tmp = np.empty(max_free + 1)
    d = np.empty(max_free + 1)
    delta = np.empty(n)
    large = 0
    for i in range(X.shape[0]):
        z = X[i]
        if np.count_nonzero(z) > max_free or (large >= 16 and 2 * large > i):
            # more than half the columns so far (at least 16) need a larger F: the rest are left too
            large += 1
            state[i] = TOO_LARGE
            steps[i] = 0
            gaps[i] = np.inf
            shares[i] = np.inf
            continue
        s, k, gp, sh = _column(K, C[i], kdiag[i], alpha, tol_rel, max_free, max_steps, z, g,
                               L, F, pos, row, a, u, tmp, d, delta)
        if s == TOO_LARGE:
            large += 1
        state[i] = s
        steps[i] = k
        gaps[i] = gp
        shares[i] = sh


def solve_columns(K: np.ndarray, B: np.ndarray, alpha: float, X0: np.ndarray, tol_rel: float,
                  max_free: int, max_steps: int):
    """Each row of ``X0`` (the columns of Z, on the simplex) solved by the active-set method (module
    docstring) with linear term b_i - 2 k_i, until its Frank-Wolfe gap is at most ``tol_rel`` times
    its share K_ii + q(z) of J (the shares sum to J, so the gaps sum to at most ``tol_rel`` J).
    Returns (X, state, steps, gaps): X the new rows (a copy), per row its state (:data:`SOLVED`, or
    why not), its steps and its gap."""
    K = np.ascontiguousarray(K, dtype=np.float64)
    C = np.ascontiguousarray(B - 2.0 * K, dtype=np.float64)   # B, K symmetric: row i is column i
    X = np.array(X0, dtype=np.float64, order="C")
    r = X.shape[0]
    state = np.empty(r, dtype=np.int64)
    steps = np.empty(r, dtype=np.int64)
    gaps = np.empty(r)
    shares = np.empty(r)
    _columns(K, C, np.ascontiguousarray(np.diag(K)), float(alpha), float(tol_rel), int(max_free), int(max_steps),
       X, state, steps, gaps, shares)
    return X, state, steps, gaps

