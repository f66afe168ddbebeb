"""Twin learning of similarity and clustering (Kang, Peng, Cheng, AAAI 2017): SCSK with one kernel
(Eq. 7, Algorithm 1) and SCMK with multiple kernels (Eq. 18, Algorithm 2).

SCMK minimises, over the similarity Z (n x n), the indicator P (n x c) and the kernel weights w,

    J(Z, P, w) = Tr(K_w - 2 K_w Z + Z' K_w Z) + alpha ||Z||_F^2 + beta Tr(P' L P),          (18)
    s.t. Z'1 = 1, 0 <= Z <= 1, P'P = I, K_w = sum_i w_i K^i, sum_i sqrt(w_i) = 1, w >= 0,

with L = D - (Z + Z')/2 the Laplacian of the symmetrised Z. SCSK (Eq. 7) is the same with one
kernel and no w. Each outer iteration does, as Algorithm 2 lists them,

1. K_w by Eq. 17;
2. the P-step (Eq. 8): P = the c eigenvectors of L with the smallest eigenvalues (Ky Fan, Eq. 6),
   from ``scipy.linalg.eigh`` restricted to those c;
3. the Z-step (Eq. 11 for every column at once, see :func:`z_step`);
4. h by Eq. 20, h_i = Tr(K^i - 2 K^i Z + Z' K^i Z) (one Gram product Z Z' for all kernels);
5. w by Eq. 22, w_i = (h_i sum_j 1/h_j)^(-2), which satisfies sum_i sqrt(w_i) = 1.

Every step minimises J over its block (the Z-step to the tolerance of its own convergence test,
starting from the previous Z, and it never returns a worse point than its start), so J never
increases; the tests check it. ``objective_trace_`` holds J after each outer iteration.

Choices (each tested):

- **Kernels are double-centred** (H K H, H = I - 11'/n) once per fit. On the feasible set (columns
  of Z sum to 1) the reconstruction sum_i ||phi(x_i) - phi(X) z_i||^2 and every h_i are unchanged
  by translating the feature space, so J is the same number; but the Lipschitz constant of the
  Z-step drops from 2 (alpha + lambda_max(K)) to 2 (alpha + lambda_max(HKH)): a nearly constant
  kernel (the Gaussians with t0 = 50, 100 of the 12-kernel bank) has lambda_max(K) ~ n and
  lambda_max(HKH) ~ 1e-5 n. It also removes the cancellation in K_ii - 2 k_i'z + z'Kz.
- **Initialisation**: Z = I and w_i = 1/r, as the authors' code does (github.com/sckangz/AAAI17; the paper
  says "random matrix Z"; ``init="random"`` draws Z's columns uniformly from the simplex with
  ``random_state``). w = 1/r is Algorithm 2's start; it is not feasible for sum sqrt(w) = 1, so the
  first Z-step sees K_w = mean kernel and J is recorded from the first (feasible) w-step on.
- **The first rank term**: with Z = I the Laplacian is 0 and every orthonormal P attains
  Tr(P'LP) = 0, so the first P carries no information. The authors' code uses whatever basis the
  eigensolver returns; for their beta ~ 1e-6 that is harmless, but with beta comparable to alpha
  that arbitrary P decides the partition (isolating a few samples for good). We leave the rank term
  out of the first Z-step (B = 0; the first Z is then the minimiser of Eq. 3 for the start kernel)
  and alternate from there. J is recorded as J(Z_k, P_k+1, w_k) (P_k+1 the P-step on Z_k).
- **h_i = 0** (a kernel Z reconstructs exactly) would take all the weight: h is floored at
  1e-12 max_i h_i.
- **Stopping** as the authors' code: after more than ``min_iter`` (10) outer iterations, stop once
  ||Z - Z_old||_2 / ||Z_old||_2 < ``tol`` (1e-3; spectral norms), at most ``max_iter`` (500).
- **Labels** (``labels``): ``"kmeans"`` (default, the authors' code): scikit-learn's KMeans with
  ``n_init`` (100) restarts on the rows of P, not row-normalised. ``"components"``: the connected
  components of the graph of Z (edges where z_ij + z_ji > 0; the Z-step's simplex projection gives
  exact zeros) when there are exactly c of them, the partition Theorem 1 describes; otherwise the
  k-means labels. ``label_method_`` says which was used, ``n_components_`` how many components Z has.
  P is the P-step on the final Z (the authors' code labels with the P computed from the previous Z;
  the two differ by the last iteration's change of Z, below ``tol`` at convergence).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
import scipy.sparse.linalg
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state

from mkclust.algorithms.base import BaseClusterer, Progress

log = logging.getLogger(__name__)
_ITERATIONS = Progress(log)


# ------------------------------------------------------------------------------------------------
# the Z-step: all n column problems of Eq. 11 at once
# ------------------------------------------------------------------------------------------------


def project_rows_to_simplex(V: np.ndarray, top: int = 64) -> np.ndarray:
    """Exact Euclidean projection of every row of V onto the simplex {z >= 0, sum z = 1} (the box
    z <= 1 is then implied). Sort-based (Held, Wolfe, Crowder 1974; Duchi et al. 2008): with u the
    row sorted descending, rho the last k with u_k - (sum_{j<=k} u_j - 1)/k > 0 and
    theta = (sum_{j<=rho} u_j - 1)/rho, the projection is max(v - theta, 0). Vectorised over rows,
    no loop over rows. Only the ``top`` largest entries of each row are sorted (``np.partition``,
    O(d) a row): the support of the projection lies among them whenever rho < ``top``, which is
    checked; rows where it does not hold are sorted in full."""
    V = np.asarray(V, dtype=np.float64)
    d = V.shape[-1]
    if V.ndim != 2 or top >= d:
        return np.maximum(V - _threshold(-np.sort(-V, axis=-1))[0][..., None], 0.0)
    theta, rho = _threshold(-np.sort(-np.partition(V, d - top, axis=1)[:, d - top:], axis=1))
    bad = np.flatnonzero(rho >= top)  # rho < top: the (top+1)-th entry fails, so every later one does
    if bad.size:
        theta[bad] = _threshold(-np.sort(-V[bad], axis=1))[0]
    return np.maximum(V - theta[:, None], 0.0)


def _threshold(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta and rho of the projection for rows U sorted in descending order."""
    css = np.cumsum(U, axis=-1)
    css -= 1.0
    k = np.arange(1, U.shape[-1] + 1, dtype=np.float64)
    rho = np.count_nonzero(U * k > css, axis=-1)  # the condition holds exactly for k <= rho
    theta = np.take_along_axis(css, (rho - 1)[..., None], axis=-1)[..., 0] / rho
    return theta, rho


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
           polish_rounds: int = 50) -> ZStepResult:
    """Solve all n column problems of Eq. 11 together,

        min_Z  Tr(K - 2 K Z + Z' K Z) + alpha ||Z||_F^2 + <B, Z>   s.t. every column z_i on the simplex,

    with B = (beta / 2) [ ||p_i - p_j||^2 ]_ij (so <B, Z> = beta Tr(P' L P) by Eq. 10), K symmetric
    PSD. Column i is exactly Eq. 11: z'(alpha I + K) z + (beta d_i / 2 - 2 K_i)' z (+ K_ii).

    Method: FISTA (Beck and Teboulle 2009) on the whole matrix, step 1/L with
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

    G = grad(X, XK)
    gap = _fw_gap(G, X)
    Y, YK, GY, t = X, XK, G, 1.0
    it, converged = 0, gap <= tol * f
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
            Xa, XaK, rounds, done = _active_set(X, XK, K, B, alpha, tol, min(polish_rounds, max(max_iter - it, 0)))
            it += rounds
            fa = _z_objective(K, B, alpha, trK, Xa, XaK)
            if rounds and fa <= f:
                X, XK, f = Xa, XaK, fa
                G = grad(X, XK)
                gap = _fw_gap(G, X)
                converged = done or gap <= tol * f
                Y, YK, GY, t, stable = X, XK, G, 1.0, 0   # FISTA resumes from here without momentum
    if not converged:
        log.debug("Z-step stopped after %d iterations with relative gap %.3g > tol %.3g", it, gap / f, tol)
    f = _z_objective(K, B, alpha, trK, X, XK)
    return ZStepResult(np.ascontiguousarray(X.T), f, gap, it, bool(converged))


#: below this fraction of non-zeros, K Z is a sparse-times-dense product (the Z-step's iterates are
#: simplex projections, with exact zeros); measured break-even with BLAS at n = 1404: near 3.5% with
#: two threads, higher with one
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
        supp = Xw > 0
        g_supp = np.where(supp, Gw, np.inf).min(axis=1)
        # on its support's optimum a column's gap is g_supp - min g: a column open by the test above
        # has a coordinate below g_supp - thr (a margin above the rounding of g, ~1e-16 |g|)
        margin = np.maximum(thr, 1e-14 * np.abs(g_supp))
        entering = ~supp & (Gw < (g_supp - margin)[:, None]) & optimal_on_support[work, None]
        cand = _solve_on_sets(supp | entering, work, K, B, alpha, cache)
        # a newly entered coordinate that goes negative at once: add only the most negative one
        redo = np.flatnonzero((entering & (cand < 0)).any(axis=1))
        if redo.size:
            best = np.argmin(np.where(entering[redo], Gw[redo], np.inf), axis=1)
            entering[redo] = False
            entering[redo, best] = True
            cand[redo] = _solve_on_sets(supp[redo] | entering[redo], work[redo], K, B, alpha, cache)
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


def _solve_on_sets(mask: np.ndarray, rows: np.ndarray, K: np.ndarray, B: np.ndarray, alpha: float,
                   cache: dict) -> np.ndarray:
    """For each row r (a column of Z), the minimiser of Eq. 11 on {z : z_j = 0 off mask[r], sum z = 1}
    (rows of the result; NaN where a system is singular). A small set S is solved directly, its KKT
    system [2(alpha I + K_SS), -1; 1', 0] (:func:`_support_kkt`); a large one through its small
    complement T with one inverse shared by all rows (:func:`_complement_kkt`).
    Rows are batched by the size of what is solved, padded to the batch's largest."""
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
    A = np.zeros((r, s + 1, s + 1))
    Kss = K[idx[:, :, None], idx[:, None, :]]
    A[:, :s, :s] = np.where(valid[:, :, None] & valid[:, None, :], 2.0 * Kss, 0.0)
    diag = np.arange(s)
    A[:, diag, diag] = np.where(valid, 2.0 * alpha + 2.0 * Kss[:, diag, diag], 1.0)
    A[:, :s, s] = -valid.astype(np.float64)
    A[:, s, :s] = valid
    lin = np.take_along_axis(B[rows], idx, axis=1) - 2.0 * np.take_along_axis(K[rows], idx, axis=1)
    rhs = np.concatenate([np.where(valid, -lin, 0.0), np.ones((r, 1))], axis=1)
    out = np.zeros((r, K.shape[0]))
    try:
        sol = np.linalg.solve(A, rhs[:, :, None])[:, :s, 0]
    except np.linalg.LinAlgError:
        return np.full_like(out, np.nan)
    np.put_along_axis(out, idx, np.where(valid, sol, 0.0), axis=1)
    return out


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


def _lambda_max(K: np.ndarray) -> float:
    """Largest eigenvalue of a symmetric matrix (Lanczos, deterministic start; dense for small n)."""
    n = K.shape[0]
    if n <= 64:
        return float(scipy.linalg.eigvalsh(K, subset_by_index=[n - 1, n - 1])[0])
    return float(scipy.sparse.linalg.eigsh(K, k=1, which="LA", v0=np.ones(n), return_eigenvectors=False,
                                           tol=1e-6)[0]) * (1.0 + 1e-5)


def _spectral_norm(A: np.ndarray) -> float:
    """Largest singular value (ARPACK from a fixed pseudo-random start: a difference of two column-
    stochastic matrices has 1'A = 0, so the all-ones start would be in the null space)."""
    n = min(A.shape)
    if n <= 64 or not A.any():
        return float(np.linalg.norm(A, 2))
    v0 = np.random.default_rng(0).uniform(-1.0, 1.0, A.shape[0])
    return float(scipy.sparse.linalg.svds(A, k=1, v0=v0, return_singular_vectors=False, tol=1e-6)[0])


# ------------------------------------------------------------------------------------------------
# the P-step and the outer loop
# ------------------------------------------------------------------------------------------------


def laplacian(Z: np.ndarray) -> np.ndarray:
    """L = D - (Z + Z')/2, D_ii = sum_j (z_ij + z_ji)/2 (the paper's definition below Eq. 4)."""
    W = 0.5 * (Z + Z.T)
    L = -W
    L[np.diag_indices_from(L)] += W.sum(axis=1)
    return L


def p_step(Z: np.ndarray, n_clusters: int) -> tuple[np.ndarray, float]:
    """Eq. 8: the c eigenvectors of L(Z) with the smallest eigenvalues, and the sum of those
    eigenvalues (= Tr(P'LP), Ky Fan's Eq. 6)."""
    lam, P = scipy.linalg.eigh(laplacian(Z), subset_by_index=[0, n_clusters - 1])
    return P, float(lam.sum())


def pairwise_sq(P: np.ndarray) -> np.ndarray:
    """d_ij = ||p_i - p_j||^2 for the rows of P (one n x n x c product)."""
    r = np.einsum("ij,ij->i", P, P)
    D = r[:, None] + r[None, :] - 2.0 * (P @ P.T)
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return D


def double_centre(K: np.ndarray) -> np.ndarray:
    """H K H for one kernel (n, n) or each kernel of a bank (m, n, n)."""
    rows = K.mean(axis=-1, keepdims=True)
    cols = K.mean(axis=-2, keepdims=True)
    tot = K.mean(axis=(-2, -1), keepdims=True)
    Kc = K - rows - cols + tot
    return 0.5 * (Kc + np.swapaxes(Kc, -1, -2))


def reconstruction_errors(Kc: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """h of Eq. 20 for every kernel of the bank (m, n, n): Tr(K) - 2 <K, Z> + <K, Z Z'> (K symmetric,
    so Tr(KZ) = <K, Z> and Tr(Z'KZ) = <K, ZZ'>); one product Z Z' and two GEMVs over the bank."""
    m, n, _ = Kc.shape
    flat = Kc.reshape(m, n * n)
    tr = np.einsum("tii->t", Kc)
    return tr - 2.0 * (flat @ Z.ravel()) + flat @ (Z @ Z.T).ravel()


def scmk_weights(h: np.ndarray) -> np.ndarray:
    """Eq. 22: w_i = (h_i sum_j 1/h_j)^(-2), so that sum_i sqrt(w_i) = 1 (h floored at 1e-12 max h)."""
    h = np.asarray(h, dtype=np.float64)
    h = np.maximum(h, 1e-12 * max(float(h.max()), 1e-300))
    return (h * np.sum(1.0 / h)) ** -2.0


@dataclass
class _Fit:
    Z: np.ndarray
    P: np.ndarray
    w: np.ndarray
    objective: float
    trace: list
    n_iter: int
    converged: bool
    z_iters: list
    z_gaps: list
    seconds: list


def twin_learning(Kc: np.ndarray, n_clusters: int, alpha: float, beta: float, learn_weights: bool, Z0: np.ndarray,
                  max_iter: int = 500, min_iter: int = 10, tol: float = 1e-3, z_tol: float = 1e-6,
                  z_max_iter: int = 500) -> _Fit:
    """Algorithm 2 (``learn_weights=True``) or Algorithm 1 (one kernel) on a double-centred bank
    ``Kc`` (m, n, n) from ``Z0``. Returns the final Z, P (the P-step on the final Z), w, J and its
    trace: J(Z_k, P_k+1, w_k) after iteration k, with P_k+1 the P-step on Z_k (so the recorded P
    and Z agree); by the block-minimisations it never increases."""
    m, n, _ = Kc.shape
    w = np.full(m, 1.0 / m) if learn_weights else np.ones(m)
    Z = Z0
    P, _ = p_step(Z, n_clusters)                                 # Eq. 8
    # L(Z0) = 0 (Z0 = I): every P is optimal, none carries information; the rank term is left out of
    # the first Z-step instead of letting the eigensolver's arbitrary basis steer it (module docstring)
    B = np.zeros((n, n)) if not laplacian(Z).any() else (0.5 * beta) * pairwise_sq(P)  # beta/2 d_i, Eq. 9
    # one kernel: K_w never changes, nor does the Z-step's Lipschitz constant
    lipschitz = None if learn_weights else 2.0 * (alpha + _lambda_max(Kc[0]))
    trace, z_iters, z_gaps, seconds = [], [], [], []
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        t0 = time.perf_counter()
        Kw = np.tensordot(w, Kc, axes=1) if learn_weights else Kc[0]   # Eq. 17
        res = z_step(Kw, B, alpha, Z, tol=z_tol, max_iter=z_max_iter, lipschitz=lipschitz)  # Eq. 11
        Z_old, Z = Z, res.Z
        if learn_weights:
            h = reconstruction_errors(Kc, Z)                     # Eq. 20
            w = scmk_weights(h)                                  # Eq. 22
            fit_terms = float(w @ h + alpha * np.vdot(Z, Z))
        else:
            fit_terms = res.objective - float(np.vdot(B, Z))
        P, lam_sum = p_step(Z, n_clusters)                       # Eq. 8, for the next iteration
        B = (0.5 * beta) * pairwise_sq(P)
        J = fit_terms + beta * lam_sum                           # J(Z_k, P_k+1, w_k)
        trace.append(J)
        z_iters.append(res.n_iter)
        z_gaps.append(res.gap / max(res.objective, 1e-300))
        change = _spectral_norm(Z - Z_old) / max(_spectral_norm(Z_old), 1e-300)
        seconds.append(time.perf_counter() - t0)
        _ITERATIONS.info("%s iteration %d: J %.10g, ||dZ||/||Z|| %.3g, Z-step %d iterations (gap %.2g), %.2f s",
                         "SCMK" if learn_weights else "SCSK", it, J, change, res.n_iter, z_gaps[-1], seconds[-1])
        if it > min_iter and change < tol:
            converged = True
            break
    return _Fit(Z, P, w, trace[-1], trace, it, converged, z_iters, z_gaps, seconds)


def graph_components(Z: np.ndarray) -> tuple[int, np.ndarray]:
    """Connected components of the graph with edges where z_ij + z_ji > 0."""
    A = scipy.sparse.csr_matrix((Z + Z.T) > 0)
    return scipy.sparse.csgraph.connected_components(A, directed=False)


class _TwinBase(BaseClusterer):
    """Parameters and fitting shared by SCSK and SCMK (documented on each)."""

    _learn_weights = False

    def __init__(self, n_clusters=8, alpha=1e-5, beta=1e-6, init="identity", max_iter=500, min_iter=10,
                 tol=1e-3, z_tol=1e-6, z_max_iter=500, labels="kmeans", n_init=100, random_state=None):
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.beta = beta
        self.init = init
        self.max_iter = max_iter
        self.min_iter = min_iter
        self.tol = tol
        self.z_tol = z_tol
        self.z_max_iter = z_max_iter
        self.labels = labels
        self.n_init = n_init
        self.random_state = random_state

    def _check_params(self):
        if not float(self.alpha) > 0:
            raise ValueError(f"alpha must be > 0 (Eq. 7 needs it to rule out Z = I), got {self.alpha}")
        if not float(self.beta) >= 0:
            raise ValueError(f"beta must be >= 0, got {self.beta}")
        if self.labels not in ("kmeans", "components"):
            raise ValueError(f"labels must be 'kmeans' or 'components', got {self.labels!r}")
        if self.init not in ("identity", "random"):
            raise ValueError(f"init must be 'identity' or 'random', got {self.init!r}")
        for name in ("max_iter", "n_init", "z_max_iter"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    def _fit_bank(self, K: np.ndarray):
        self._check_params()
        rng = check_random_state(self.random_state)
        m, n, _ = K.shape
        if self.init == "identity":
            Z0 = np.eye(n)
        else:
            Z0 = -np.log(rng.uniform(size=(n, n)))   # exponential draws, normalised: uniform on the simplex
            Z0 /= Z0.sum(axis=0, keepdims=True)
        fit = twin_learning(double_centre(K), self.n_clusters, float(self.alpha), float(self.beta),
                            self._learn_weights, Z0, int(self.max_iter), int(self.min_iter), float(self.tol),
                            float(self.z_tol), int(self.z_max_iter))
        self.Z_, self.embedding_ = fit.Z, fit.P
        self.objective_, self.objective_trace_, self.n_iter_ = fit.objective, fit.trace, fit.n_iter
        self.converged_, self.z_step_iters_, self.z_step_gaps_ = fit.converged, fit.z_iters, fit.z_gaps
        self.iteration_seconds_ = fit.seconds
        if self._learn_weights:
            self.kernel_weights_ = fit.w
        self.n_components_, comp = graph_components(fit.Z)
        if self.labels == "components" and self.n_components_ == self.n_clusters:
            self.labels_ = comp.astype(np.int64)
            self.label_method_ = "components"
        else:
            km = KMeans(n_clusters=self.n_clusters, n_init=int(self.n_init), random_state=rng).fit(fit.P)
            self.labels_ = km.labels_.astype(np.int64)
            self.label_method_ = "kmeans"
        return self


_PARAMS_DOC = """
    alpha : float > 0, the weight of ||Z||_F^2 (the paper's grid: 1e-5 ... 100).
    beta : float >= 0, the weight of the rank term Tr(P'LP) (the paper's grid: 1e-6, 1e-5).
    init : "identity" (Z = I, the authors' code) or "random" (columns uniform on the simplex).
    max_iter, min_iter, tol : outer iterations; stop after more than ``min_iter`` once
        ||Z - Z_old||_2 / ||Z_old||_2 < ``tol`` (the authors' rule), at most ``max_iter``.
    z_tol, z_max_iter : the Z-step's convergence test (relative Frank-Wolfe gap) and its cap.
    labels : "kmeans" (k-means on the rows of P, ``n_init`` restarts; the authors' code) or
        "components" (Z's connected components when there are exactly c, else k-means).
    n_init : k-means restarts on P (the authors' code: 100).
    random_state : seed or RandomState (k-means on P, and Z with ``init="random"``).
"""


class SCSK(_TwinBase):
    __doc__ = """Twin learning of similarity and clustering with a single kernel (Eq. 7, Algorithm 1;
    see the module docstring for the method and the choices made).

    Parameters
    ----------
    n_clusters : int""" + _PARAMS_DOC + """
    Attributes
    ----------
    labels_, Z_ (the learned similarity, columns on the simplex), embedding_ (P, n x c, orthonormal
    columns), objective_ (Eq. 7), objective_trace_ (after each outer iteration, non-increasing),
    n_iter_, converged_, z_step_iters_, z_step_gaps_ and iteration_seconds_ (per outer iteration),
    n_components_ (of Z's graph), label_method_.
    """

    input_kind = "kernel"

    def fit(self, K, y=None):
        return self._fit_bank(self._validate_kernel(K)[None])


class SCMK(_TwinBase):
    __doc__ = """Twin learning of similarity and clustering with multiple kernels (Eq. 18, Algorithm
    2: h by Eq. 20, w by Eq. 22; see the module docstring).

    Parameters
    ----------
    n_clusters : int""" + _PARAMS_DOC + """
    Attributes
    ----------
    As :class:`SCSK`, plus kernel_weights_ (w >= 0, sum_i sqrt(w_i) = 1); objective_ is Eq. 18.
    """

    input_kind = "kernels"
    _learn_weights = True

    def fit(self, K, y=None):
        return self._fit_bank(self._validate_kernel(K))
