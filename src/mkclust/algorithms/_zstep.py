"""The Z-step of SCSK and SCMK (Eq. 11): all n column problems, min_z ||phi(x_i) - Phi z||^2 +
alpha ||z||^2 over the probability simplex, solved at once by an active-set method with its KKT
certificate (see :mod:`mkclust.algorithms.scmk` for the method and the choices made)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse

from mkclust.algorithms._simplex import project_rows_to_simplex
from mkclust.algorithms._spectra import _lambda_max

log = logging.getLogger(__name__)


@dataclass
class ZStepResult:
    Z: np.ndarray          # (n, n), columns on the simplex
    objective: float       # J(Z) of Eq. 7 for the given K and B (including Tr K)
    gap: float             # the Frank-Wolfe duality gap at Z, an upper bound on J(Z) - min J
    n_iter: int
    converged: bool


def _z_objective(K: np.ndarray, B: np.ndarray, alpha: float, trK: float, X: np.ndarray, XK: np.ndarray) -> float:
    # rows of X are the columns of Z; K and B are symmetric, so Tr(KZ) = <K, X> and <B, Z> = <B, X>
    return float(trK + alpha * np.vdot(X, X) + np.vdot(X, XK) - 2.0 * np.vdot(K, X) + np.vdot(B, X))


def _fw_gap(G: np.ndarray, X: np.ndarray) -> float:
    """sum_i (g_i'x_i - min_j g_ij): the Frank-Wolfe gap of the simplex-constrained problem, an upper
    bound on the suboptimality of X for a convex objective with gradient rows G."""
    return float(np.vdot(G, X) - G.min(axis=1).sum())


def z_step(K: np.ndarray, B: np.ndarray, alpha: float, Z0: np.ndarray, tol: float = 1e-6,
           max_iter: int = 500, lipschitz: float | None = None, polish_every: int = 10,
           polish_rounds: int = 50, columns: bool = True) -> ZStepResult:
    """Solve all n column problems of Eq. 11 together,

        min_Z  Tr(K - 2 K Z + Z' K Z) + alpha ||Z||_F^2 + <B, Z>   s.t. every column z_i on the simplex,

    with B = (beta / 2) [ ||p_i - p_j||^2 ]_ij (so <B, Z> = beta Tr(P' L P) by Eq. 10), K symmetric
    PSD. Column i is exactly Eq. 11: z'(alpha I + K) z + (beta d_i / 2 - 2 K_i)' z (+ K_ii).

    Method, first (``columns=True``): every column solved on its own by a compiled primal active-set
    method from Z0's column (:mod:`mkclust.algorithms._zcolumns`), to a Frank-Wolfe gap of at most
    tol / 10 times its share of J; the columns it leaves unsolved (an optimal support above
    :data:`MAX_FREE` coordinates, a rounding-bound column) and a total gap still above tol J go on to
    the whole-matrix method below, from its point. For the papers' alpha the optimal supports are a
    few coordinates (mean 3.7 on fourclass's first Z-step, n = 862, alpha = 1e-5) and the column
    route costs O(n |F|) a step: SCMK's benchmark fit there took 8 CPU s, 476 s with the whole-matrix
    method alone, the same labels and J to 3e-14 (optdigits 80 -> 7 s, COIL20 281 -> 16 s; one thread).
    ``columns=False`` skips it.

    Then: FISTA (Beck and Teboulle 2009) on the whole matrix, step 1/L with
    L = 2 (alpha + lambda_max(K)), every column projected exactly onto the simplex
    (:func:`project_rows_to_simplex`), warm-started from ``Z0``. One product K Z per iteration, at the new point
    (sparse times dense when Z has few non-zeros, :func:`_times`), from which K Y at the
    extrapolated point follows by linearity; the change of J is computed from the step itself. Function-
    value restart (O'Donoghue and Candes 2015): a step that raises J is discarded and the momentum
    reset, so J never increases and the result is never worse than ``Z0``.

    Active-set finish (:func:`_active_set`): once the support of Z has not changed for 2 iterations
    (or after ``5 polish_every`` iterations without a finish), and at most every ``polish_every``
    iterations, up to ``polish_rounds`` rounds of a primal active-set method solve each column
    exactly on a working set grown from and pruned to its support. It never raises a column's
    objective; if it does not meet the convergence test, FISTA resumes from its point with the
    momentum reset. Projected-gradient steps identify the optimal support long before they reach
    the optimum on it: for the papers' alpha ~ 1e-5 the condition number lambda_max(K) / alpha is
    1e4-1e8 (measured on TR41's (x'y)^2 kernel, n = 878, from Z = I, one thread: FISTA alone left a
    relative gap of 0.012 after 500 iterations; with the finish, 7.7e-8 after 140 iterations and
    rounds, 21.6 s). ``polish_every=0`` turns it
    off. ``n_iter`` counts FISTA iterations and active-set rounds together (both capped by
    ``max_iter``).

    Convergence test: the Frank-Wolfe gap sum_i (g_i'z_i - min_j g_ij) <= tol * J(Z); the gap bounds
    J(Z) - min J from above, so the relative suboptimality is at most ``tol``. A plain projected-
    gradient step (no momentum) that raises J means J cannot decrease above rounding error any more;
    that also counts as converged (the gap, recorded, is then of the order sqrt(rounding)). Returns a
    :class:`ZStepResult`.
    """
    alpha = float(alpha)
    if lipschitz is None:
        lipschitz = 2.0 * (alpha + _lambda_max(K))
    step = 1.0 / lipschitz
    trK = float(np.trace(K))
    twoK_minus_B = 2.0 * K - B
    X = np.ascontiguousarray(Z0.T, dtype=np.float64)  # rows = columns of Z
    XK = _times(X, K)
    f = _z_objective(K, B, alpha, trK, X, XK)

    def grad(Y, YK):
        return 2.0 * alpha * Y + 2.0 * YK - twoK_minus_B

    it = rounds = 0
    if columns:
        X, XK, f, rounds = _by_columns(X, XK, f, K, B, alpha, trK, tol)
    G = grad(X, XK)
    gap = _fw_gap(G, X)
    Y, YK, GY, t = X, XK, G, 1.0
    converged = gap <= tol * f
    stable, polished = 0, -polish_every
    while not converged and it < max_iter:
        it += 1
        Xn = project_rows_to_simplex(Y - step * GY)
        XnK = _times(Xn, K)
        # J(Xn) - J(X) from the step itself (no cancellation between the large terms of J)
        D, DK = Xn - X, XnK - XK
        delta = float(np.vdot(D, G) + alpha * np.vdot(D, D) + np.vdot(D, DK))
        if delta > 0.0:
            if t > 1.0:  # the momentum overshot: restart with a plain projected-gradient step from X
                Y, YK, GY, t = X, XK, G, 1.0
                continue
            converged = True  # a plain step from X raised J: no decrease is left above rounding
            break
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        mom = (t - 1.0) / tn
        Y = Xn + mom * D
        YK = XnK + mom * DK
        stable = stable + 1 if np.array_equal(Xn > 0, X > 0) else 0
        X, XK, f, t = Xn, XnK, f + delta, tn
        G = grad(X, XK)
        GY = grad(Y, YK) if mom else G
        gap = _fw_gap(G, X)
        converged = gap <= tol * f
        if (not converged and polish_every and it - polished >= polish_every
                and (stable >= 2 or it - polished >= 5 * polish_every)):
            polished = it
            finish = _finish(X, XK, f, K, B, alpha, trK, tol, min(polish_rounds, max(max_iter - it, 0)))
            it += finish.rounds
            if finish.improved:
                X, XK, f = finish.X, finish.XK, finish.f
                G = grad(X, XK)
                gap = _fw_gap(G, X)
                converged = finish.done or gap <= tol * f
                Y, YK, GY, t, stable = X, XK, G, 1.0, 0   # FISTA resumes from here without momentum
    if not converged:
        log.debug("Z-step stopped after %d iterations with relative gap %.3g > tol %.3g", it, gap / f, tol)
    f = _z_objective(K, B, alpha, trK, X, XK)
    return ZStepResult(np.ascontiguousarray(X.T), f, gap, rounds + it, bool(converged))


#: the column route's largest free set: a column whose optimum has more positive coordinates is
#: left to FISTA, whose iterations cost O(n^2) whatever the support (a step of the column method
#: costs O(n |F|), and it takes about |F| steps to build F)
MAX_FREE = 256


def _by_columns(X, XK, f: float, K, B, alpha: float, trK: float, tol: float):
    """The column route of :func:`z_step` from rows X (columns of Z) of objective f: (X, XK, f, steps),
    unchanged where it found no lower J (it never does by more than rounding: every column's
    objective decreases)."""
    from mkclust.algorithms._zcolumns import SOLVED, solve_columns   # numba: imported by the fits that use it
    n = X.shape[0]
    Xc, state, steps, _ = solve_columns(K, B, alpha, X, 0.1 * tol, min(n, MAX_FREE), 4 * MAX_FREE + 64)
    Xc /= Xc.sum(axis=1, keepdims=True)
    XcK = _times(Xc, K)
    fc = _z_objective(K, B, alpha, trK, Xc, XcK)
    rounds = int(steps.max(initial=0))
    log.debug("Z-step by columns: %d of %d solved, at most %d steps, J %.10g -> %.10g", int((state == SOLVED).sum()),
              n, rounds, f, fc)
    return (Xc, XcK, fc, rounds) if fc <= f else (X, XK, f, rounds)


@dataclass
class _Finish:
    """What an active-set finish left (:func:`_finish`)."""

    X: np.ndarray
    XK: np.ndarray
    f: float
    rounds: int
    done: bool        # its convergence test met
    improved: bool    # it took at least one round and did not raise J: FISTA continues from its point


def _finish(X, XK, f: float, K, B, alpha: float, trK: float, tol: float, max_rounds: int) -> _Finish:
    """The active-set finish (:func:`_active_set`) from FISTA's point (X, XK) of objective f, with
    its objective J recomputed whole."""
    Xa, XaK, rounds, done = _active_set(X, XK, K, B, alpha, tol, max_rounds)
    fa = _z_objective(K, B, alpha, trK, Xa, XaK)
    return _Finish(Xa, XaK, fa, rounds, done, bool(rounds and fa <= f))


#: below this fraction of non-zeros, K Z is a sparse-times-dense product (the iterates are simplex
#: projections, with exact zeros); break-even with BLAS at n = 1404: near 3.5% on two threads, more on one
SPARSE_DENSITY = 0.03


def _times(X: np.ndarray, K: np.ndarray) -> np.ndarray:
    """X @ K, through scipy.sparse when X is sparse enough."""
    nnz = np.count_nonzero(X)
    if nnz < SPARSE_DENSITY * X.size:
        return np.asarray(scipy.sparse.csr_matrix(X) @ K)
    return X @ K


#: the padded KKT systems of one batch hold at most this many entries (memory per batch: 8x bytes)
BATCH_ENTRIES = 16_000_000


def _row_objectives(X: np.ndarray, XK: np.ndarray, K: np.ndarray, B: np.ndarray, alpha: float) -> np.ndarray:
    """Each column's objective of Eq. 11 without its constant K_ii (rows of X are columns of Z)."""
    return np.einsum("ij,ij->i", X, alpha * X + XK - 2.0 * K + B)


def _active_set(X: np.ndarray, XK: np.ndarray, K: np.ndarray, B: np.ndarray, alpha: float, tol: float,
                max_rounds: int):
    """A primal active-set finish (Nocedal and Wright 2006, Sect. 16.5) for every column at once,
    from a feasible X (rows = columns of Z), typically the FISTA iterate whose support is nearly
    the optimal one. Each round, for every column whose Frank-Wolfe gap is not yet negligible:

    1. its working set W is its support, plus, where the column is already optimal on its support,
       the coordinates whose gradient lies below the support's (they would enter the optimum);
    2. the column's problem is solved exactly on the affine set {z_W' 1 = 1, z_rest = 0}
       (:func:`_solve_on_sets`, one batched KKT solve);
    3. the column moves towards that solution as far as it stays non-negative (ratio test); the
       coordinates that block the step leave the support. If a newly entered coordinate blocks at
       once, the column instead adds only its most negative one (which a strictly convex QP then
       keeps positive).

    Every step moves along a segment towards the minimiser of a convex function over a set that
    holds the current point, so no column's objective increases (checked: a column whose computed
    objective rises, by rounding in an ill-conditioned solve, keeps its old value). Projected-
    gradient steps find the optimal support quickly but crawl to the optimum for the papers'
    alpha ~ 1e-5, where lambda_max(K) / alpha is 1e4-1e8; this finish costs one batched solve per
    round, on the columns still open. Returns (X, XK, rounds, converged) with converged meaning the
    total Frank-Wolfe gap is <= tol * J."""
    n = X.shape[0]
    lin = B - 2.0 * K                     # gradient rows: 2 alpha x + 2 x K + lin
    trK = float(np.trace(K))
    optimal_on_support = np.zeros(n, dtype=bool)
    stuck = np.zeros(n, dtype=bool)       # a step rejected: left to FISTA until the next finish
    cache: dict = {}
    X, XK = X.copy(), XK.copy()           # updated row by row below; the caller's arrays stay as they are
    for rnd in range(max_rounds + 1):
        G = 2.0 * alpha * X + 2.0 * XK + lin
        row_gap = np.einsum("ij,ij->i", G, X) - G.min(axis=1)
        obj = _row_objectives(X, XK, K, B, alpha)
        f = trK + float(obj.sum())
        if row_gap.sum() <= tol * f:
            return X, XK, rnd, True
        if rnd == max_rounds:
            break
        thr = 0.1 * tol * f / n
        work = np.flatnonzero((row_gap > thr) & ~stuck)   # the others sum to <= tol f / 10
        if work.size == 0:
            break
        Xw, Gw, Kw, Bw = X[work], G[work], K[work], B[work]
        cand, entering = _set_solutions(Xw, Gw, work, optimal_on_support[work], thr, K, B, alpha, cache)
        Xn, t = _ratio_step(Xw, cand)
        XnK = _times(Xn, K)
        # a rise beyond rounding (relative to the magnitude of the terms that cancel in the objective)
        slack = 1e-13 * np.einsum("ij,ij->i", Xw, np.abs(XK[work]) + 2.0 * np.abs(Kw) + np.abs(Bw))
        change = _row_objectives(Xn, XnK, Kw, Bw, alpha) - obj[work]
        worse = change > slack
        keep = ~worse
        # rejected, or a full step on an unchanged set that gains nothing above rounding: the
        # column is at the precision of its solve; FISTA takes it from here
        stuck[work] = worse | ((t >= 1.0) & ~entering.any(axis=1) & (change > -slack))
        X[work[keep]], XK[work[keep]] = Xn[keep], XnK[keep]
        optimal_on_support[work] = keep & (t >= 1.0)
        log.debug("active set round %d: relative gap %.3g, %d open columns, %d entering, %d blocked, %d kept",
                  rnd + 1, row_gap.sum() / f, work.size, int(entering.any(axis=1).sum()), int((t < 1).sum()),
                  int(worse.sum()))
    return X, XK, rnd, False


def _set_solutions(Xw, Gw, work, optimal, thr: float, K, B, alpha: float, cache: dict):
    """Steps 1 and 2 of :func:`_active_set` for the open columns ``work`` (rows ``Xw`` of X, their
    gradients ``Gw``; ``optimal``: which are optimal on their support): each one's working set and
    the minimiser on it, ``(cand, entering)``. A newly entered coordinate that goes negative at once
    is replaced by the column's most negative entering one alone."""
    supp = Xw > 0
    g_supp = np.where(supp, Gw, np.inf).min(axis=1)
    # on its support's optimum a column's gap is g_supp - min g: a column open by the gap test has a
    # coordinate below g_supp - thr (a margin above the rounding of g, ~1e-16 |g|)
    margin = np.maximum(thr, 1e-14 * np.abs(g_supp))
    entering = ~supp & (Gw < (g_supp - margin)[:, None]) & optimal[:, None]
    cand = _solve_on_sets(supp | entering, work, K, B, alpha, cache)
    redo = np.flatnonzero((entering & (cand < 0)).any(axis=1))
    if redo.size:
        best = np.argmin(np.where(entering[redo], Gw[redo], np.inf), axis=1)
        entering[redo] = False
        entering[redo, best] = True
        cand[redo] = _solve_on_sets(supp[redo] | entering[redo], work[redo], K, B, alpha, cache)
    return cand, entering


def _ratio_step(Xw: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 3 of :func:`_active_set`: each row of ``Xw`` moved towards its ``cand`` as far as it stays
    non-negative (``t`` <= 1; 0 where ``cand`` is not finite), the blocking coordinates set to 0, the
    row renormalised onto the simplex. Returns (the new rows, t)."""
    D = cand - Xw
    block = cand < 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(block, Xw / (Xw - cand), np.inf)
    t = np.minimum(1.0, ratio.min(axis=1))
    t[~np.isfinite(cand).all(axis=1)] = 0.0
    Xn = Xw + t[:, None] * D
    Xn[block & (ratio <= t[:, None])] = 0.0             # the blocking coordinates leave
    np.maximum(Xn, 0.0, out=Xn)
    Xn /= Xn.sum(axis=1, keepdims=True)
    return Xn, t


def _solve_on_sets(mask: np.ndarray, rows: np.ndarray, K: np.ndarray, B: np.ndarray, alpha: float,
                   cache: dict) -> np.ndarray:
    """For each row r (a column of Z), the minimiser of Eq. 11 on {z : z_j = 0 off mask[r], sum z = 1}
    (rows of the result; NaN where a system is singular). A small set S is solved directly, its KKT
    system [2(alpha I + K_SS), -1; 1', 0] (:func:`_support_kkt`); a large one through its small
    complement T with one inverse shared by all rows (:func:`_complement_kkt`).
    Rows are batched by the size of what is solved, padded to the batch's largest (batches of like
    sizes pad less, 2.5x faster at n = 400, but change LU's rounding: archived SCSK on AR moved 0.02)."""
    n = K.shape[0]
    size = mask.sum(axis=1)
    small = size <= n - size
    out = np.full((rows.size, n), np.nan)
    for idx, solver, dim in ((np.flatnonzero(small), _support_kkt, size),
                             (np.flatnonzero(~small), _complement_kkt, n - size)):
        idx = idx[np.argsort(dim[idx], kind="stable")]
        start = 0
        while start < idx.size:  # a loop over batches of rows, each solved in one call
            stop = start + 1
            while stop < idx.size and (stop - start + 1) * (int(dim[idx[stop]]) + 1) ** 2 <= BATCH_ENTRIES:
                stop += 1
            sel = idx[start:stop]
            out[sel] = solver(mask[sel], rows[sel], K, B, alpha, cache)
            start = stop
    return out


def _padded_sets(mask: np.ndarray):
    """Per row the indices of its set first, then padding up to the largest set (at least one
    column), and the flags telling set entries from padding."""
    s = int(mask.sum(axis=1).max())
    idx = np.argsort(~mask, axis=1, kind="stable")[:, :max(s, 1)]
    return idx, np.take_along_axis(mask, idx, axis=1)


def _support_kkt(mask, rows, K, B, alpha, cache):
    """Minimisers on small sets: one padded batch of KKT systems (padding rows solve z = 0)."""
    idx, valid = _padded_sets(mask)
    r, s = idx.shape
    A = _support_systems(idx, valid, K, alpha)
    lin = np.take_along_axis(B[rows], idx, axis=1) - 2.0 * np.take_along_axis(K[rows], idx, axis=1)
    rhs = np.concatenate([np.where(valid, -lin, 0.0), np.ones((r, 1))], axis=1)
    out = np.zeros((r, K.shape[0]))
    try:
        sol = np.linalg.solve(A, rhs[:, :, None])[:, :s, 0]
    except np.linalg.LinAlgError:
        return np.full_like(out, np.nan)
    np.put_along_axis(out, idx, np.where(valid, sol, 0.0), axis=1)
    return out


def _support_systems(idx, valid, K, alpha):
    """KKT matrices [2(alpha I + K_SS), -1; 1', 0] of padded sets (:func:`_padded_sets`: set first;
    padding as the identity), 2 K_SS gathered in place and only the padding cleared: bit for bit
    what masking the whole batch gives, in one pass, not five (building had cost more than solving)."""
    r, s = idx.shape
    A = np.empty((r, s + 1, s + 1))
    top = A[:, :s, :s]
    np.multiply(K[idx[:, :, None], idx[:, None, :]], 2.0, out=top)
    count = valid.sum(axis=1)
    for i in np.flatnonzero(count < s):      # a row's set comes first, its padding after (_padded_sets)
        top[i, count[i]:, :] = 0.0
        top[i, :, count[i]:] = 0.0
    diag = np.arange(s)
    A[:, diag, diag] = np.where(valid, 2.0 * alpha + top[:, diag, diag], 1.0)
    A[:, :s, s] = -valid.astype(np.float64)
    A[:, s, :s] = valid
    A[:, s, s] = 0.0
    return A


def _complement_kkt(mask, rows, K, B, alpha, cache):
    """Minimisers on large sets S through their complements T (z_T = 0): with M = 2 (alpha I + K +
    gamma 11') (gamma changes the objective on sum z = 1 by a constant only),
    a = M^-1 (2K - B)_r and u = M^-1 1, the solution is z = a + nu u + M^-1[:, T] mu where
    [[M^-1_TT, u_T], [u_T', 1'u]] [mu; nu] = [-a_T; 1 - 1'a] (|T| + 1 unknowns per row; T empty
    is the whole affine hull). M^-1 is formed once per Z-step (``cache``)."""
    n = K.shape[0]
    if "Minv" not in cache:
        # on {1'z = 1} the objective with K + gamma 11' differs by a constant; gamma = tr(K) / n^2
        # lifts the direction 1 (a null vector of a double-centred K, where M has only 2 alpha) to
        # the mean eigenvalue, so M^-1 holds no 1 / alpha-sized multiple of 11' to cancel
        M = 2.0 * (K + max(float(np.trace(K)), 1e-300) / n**2)
        M[np.diag_indices(n)] += 2.0 * alpha
        try:
            cho = scipy.linalg.cho_factor(M, check_finite=False)
        except np.linalg.LinAlgError:
            cache["Minv"] = None
        else:
            Minv = scipy.linalg.cho_solve(cho, np.eye(n), check_finite=False)
            cache["Minv"] = 0.5 * (Minv + Minv.T)
            cache["u"] = cache["Minv"].sum(axis=1)
    Minv = cache["Minv"]
    if Minv is None:
        return np.full((rows.size, n), np.nan)
    u = cache["u"]
    a = (2.0 * K[rows] - B[rows]) @ Minv                    # rows of a, M^-1 symmetric
    idx, valid = _padded_sets(~mask)
    r, t = idx.shape
    if not valid.any():                                      # T empty: the whole affine hull
        return a + ((1.0 - a.sum(axis=1)) / u.sum())[:, None] * u[None, :]
    A = np.zeros((r, t + 1, t + 1))
    Mtt = Minv[idx[:, :, None], idx[:, None, :]]
    A[:, :t, :t] = np.where(valid[:, :, None] & valid[:, None, :], Mtt, 0.0)
    diag = np.arange(t)
    A[:, diag, diag] = np.where(valid, Mtt[:, diag, diag], 1.0)
    uT = np.where(valid, u[idx], 0.0)
    A[:, :t, t] = uT
    A[:, t, :t] = uT
    A[:, t, t] = u.sum()
    rhs = np.concatenate([np.where(valid, -np.take_along_axis(a, idx, axis=1), 0.0),
                          (1.0 - a.sum(axis=1))[:, None]], axis=1)
    try:
        sol = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        return np.full((r, n), np.nan)
    mu, nu = np.where(valid, sol[:, :t], 0.0), sol[:, t]
    z = a + nu[:, None] * u[None, :] + np.einsum("rtn,rt->rn", Minv[idx], mu)
    np.put_along_axis(z, idx, np.where(valid, 0.0, np.take_along_axis(z, idx, axis=1)), axis=1)
    return z
