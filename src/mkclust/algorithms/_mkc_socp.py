"""MKC's convex pieces and labellings: the SOCP of one CCCP step (two-class (2.7) and multi-class
(4.34) with per-kernel cones), the objective at fixed labels (a diagnostic of where a gap comes
from), the most violated multi-class cut, and the count-balanced labelling by an exact
transportation LP (see :mod:`mkclust.algorithms.mkc` for the method and the choices made)."""

from __future__ import annotations

import logging
import time

import numpy as np

from mkclust._lazy import lazy_import

cp = lazy_import("cvxpy")  # loaded at its first use: most jobs never solve a cone program

log = logging.getLogger(__name__)


class MKCSolverError(RuntimeError):
    """The SOCP could not be solved by Clarabel nor by the ECOS fallback."""


#: bytes of cvxpy's DPP tensor per rows x width^2 of a working-set SOCP (rows cuts of ``width``
#: columns: D, or D m for m classes), measured with cvxpy 1.9 at width 600: 648 MB at 16 rows, 2.59
#: GB at 64, 4.04 GB at 100 (benchmarks/bench_mkc.py, ``socp_memory``)
DPP_BYTES_PER_ROW_WIDTH2 = 118
#: the largest DPP tensor a fit builds; beyond it each solve canonicalises at the values instead
DPP_MAX_MB = 128


def compiles_once(rows: int, width: int) -> bool:
    """Whether a working-set SOCP of ``rows`` cuts of ``width`` columns is solved through cvxpy's DPP
    tensor (compiled at its first solve, then 1-5 ms of canonicalisation a solve) rather than
    canonicalised at its Parameters' values at each solve (8-50 ms a solve, no tensor). The tensor
    grows as rows x width^2 (:data:`DPP_BYTES_PER_ROW_WIDTH2`) and so does its compile (8.9 s at
    100 rows of width 600, where a solve at the values takes 0.29 s): it pays for one kernel (width
    50: MMC's many rounds of cheap solves), not for the benchmark's 12 kernels (width 600) nor the
    multi-class problems (D m)."""
    return rows * width ** 2 * DPP_BYTES_PER_ROW_WIDTH2 <= DPP_MAX_MB * 2 ** 20


def _solve(prob: cp.Problem, where: str, dpp: bool = True) -> tuple[float, str]:
    """Solve with Clarabel, falling back to ECOS once; returns (seconds, solver used). ``dpp``
    (:func:`compiles_once`): through cvxpy's DPP tensor, else canonicalised at the Parameters'
    values (``ignore_dpp``); the problem handed to the solver is the same either way, and the fits
    equal each other to about 1e-12."""
    t0 = time.perf_counter()
    statuses = []
    for solver in (cp.CLARABEL, cp.ECOS):
        try:
            prob.solve(solver=solver, ignore_dpp=not dpp)
        except cp.error.SolverError as exc:
            statuses.append(f"{solver}: {exc}")
            continue
        if prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            return time.perf_counter() - t0, solver
        statuses.append(f"{solver}: {prob.status}")
        log.warning("%s: %s returned %s; trying the fallback", where, solver, prob.status)
    raise MKCSolverError(f"{where}: the SOCP was not solved ({'; '.join(statuses)})")


def kernel_cones(t, beta, v, sizes: list[int], m: int | None = None) -> list:
    """The cones ||[2 v_k; t_k - beta_k]|| <= t_k + beta_k of (2.14), one per kernel k over its
    block of ``sizes[k]`` rows of v (for m > 2, v is (D, m) and the block holds every class's
    v_k^p): t_k >= ||v_k||^2 / beta_k."""
    cones, start = [], 0
    for k, Dk in enumerate(sizes):
        block = v[start:start + Dk] if m is None else cp.vec(v[start:start + Dk, :], order="F")
        cones.append(cp.SOC(t[k] + beta[k], cp.hstack([2 * block, t[k] - beta[k]])))
        start += Dk
    return cones


def capacity(rounds: int, current: int, max_rounds: int) -> int:
    """The rows a working-set SOCP is built with: the current capacity while it holds ``rounds``
    constraints, else doubled (at least 8, at most ``max_rounds``, never below ``rounds``). The
    problem is built (and, where :func:`compiles_once`, compiled) once per capacity, O(log rounds)
    times a fit instead of once per round; the rows beyond the working set hold zeros and read
    0 <= xi, which xi >= 0 already states."""
    if rounds <= current:
        return current
    return max(rounds, min(max(2 * current, 8), int(max_rounds)))


def binary_socp(Phi: np.ndarray, sizes: list[int], rows: int, C: float, l: float, g: np.ndarray | None = None):
    """The SOCP (2.14) for a working set Omega of up to ``rows`` constraints, with the data as
    Parameters, so that it is built once and each CCCP step and each round only sets values: per
    constraint A = (1/n) sum_i c_i z_i Phi(x_i), s = (1/n) sum_i c_i z_i and r = (1/n) sum_i c_i
    (zeros in the rows beyond Omega: :func:`capacity`). Returns (problem, (A, s, r), (v, b, beta, xi))."""
    n, D = Phi.shape
    g = Phi.sum(axis=0) if g is None else g
    A, s, r = cp.Parameter((rows, D)), cp.Parameter(rows), cp.Parameter(rows)
    v, b = cp.Variable(D), cp.Variable()
    beta, t = cp.Variable(len(sizes), nonneg=True), cp.Variable(len(sizes))
    xi = cp.Variable(nonneg=True)
    cons = [r <= xi + A @ v + cp.multiply(s, b), cp.norm(beta, 2) <= 1, g @ v + n * b <= l, g @ v + n * b >= -l,
            *kernel_cones(t, beta, v, sizes)]
    return cp.Problem(cp.Minimize(0.5 * cp.sum(t) + C * xi), cons), (A, s, r), (v, b, beta, xi)


def multiclass_socp(Phi: np.ndarray, sizes: list[int], m: int, rows: int, C: float, l: float):
    """The SOCP (4.34) for up to ``rows`` constraints as Parameters (see :func:`binary_socp`):
    per constraint a' vec(V) + c >= size - xi (:func:`multiclass_cut`; zeros beyond Omega). Returns
    (problem, (A, c, size), (V, beta, xi))."""
    n, D = Phi.shape
    g = Phi.sum(axis=0)
    A, cst, size = cp.Parameter((rows, D * m)), cp.Parameter(rows), cp.Parameter(rows)
    V = cp.Variable((D, m))
    beta, t = cp.Variable(len(sizes), nonneg=True), cp.Variable(len(sizes))
    xi = cp.Variable(nonneg=True)
    u = V.T @ g
    cons = [A @ cp.vec(V, order="F") + cst >= size - xi, cp.norm(beta, 2) <= 1, cp.max(u) - cp.min(u) <= l,
            *kernel_cones(t, beta, V, sizes, m)]
    return cp.Problem(cp.Minimize(0.5 * cp.sum(t) + C * xi), cons), (A, cst, size), (V, beta, xi)


def multiclass_slacks(F: np.ndarray, R: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """size - LHS of each constraint of (4.34) in ``R`` ((|Omega|, n) runner-up classes, -1 inactive) at
    the scores ``F`` (n, m) and labels ``y`` (default: their own, argmax F): (1/n) sum over active i
    of (1 - [r_i = y_i] - (f_{i y_i} - f_{i r_i}))."""
    n = F.shape[0]
    y = np.argmax(F, axis=1) if y is None else y
    act = R >= 0
    ftop = F[np.arange(n), y]
    frun = np.take_along_axis(F, np.where(act, R, 0).T, axis=1).T       # (|Omega|, n)
    lhs = np.where(act, ftop[None, :] - frun + (R == y[None, :]), 0.0)
    return (act.sum(axis=1) - lhs.sum(axis=1)) / n


def fixed_label_objective(Phi: np.ndarray, sizes: list[int], labels, C: float, l: float, tol: float = 1e-4) -> float:
    """The MKC objective of one labelling: problem (2.6) (two clusters) or (4.30)/(4.31) (more) with
    the labels fixed, i.e. the multiple-kernel SVM on the features ``Phi`` (n, sum(sizes)), solved
    exactly as one SOCP (an n-slack form; at the optimum (C/n) sum_i xi_i equals the C xi of the
    1-slack problems (2.7) and (4.34)):

        min 1/2 sum_k sum_p ||v_k^p||^2 / beta_k + (C/n) sum_i xi_i,  beta >= 0, ||beta||_2 <= 1,
        two clusters: y_i (sum_k v_k' Phi_k(x_i) + b) >= 1 - xi_i, -l <= sum_i f_i <= l, y = +1 / -1;
        m > 2: f_{i y_i} - f_{ir} + [r = y_i] >= 1 - xi_i for every r, |u_p - u_q| <= l (u = summed scores).

    Computed at MKC's labels and at the true labels with the same features, C and l, it says whether
    the model prefers the true labelling (then a gap is the optimiser's) or another (the model's).
    Two clusters: the n-slack SOCP directly. m > 2 (n (m - 1) margin constraints, too many for one
    SOCP): the 1-slack cutting plane of Algorithm 3 with the labels held fixed, until the most
    violated constraint exceeds xi by at most ``tol``; the value returned is the objective at the
    final V (an upper bound within C tol of the optimum)."""
    labels = np.asarray(labels)
    n = Phi.shape[0]
    classes = np.unique(labels)
    if classes.size > 2:
        return _multiclass_fixed_objective(Phi, sizes, np.searchsorted(classes, labels), classes.size, C, l, tol)
    yy = np.where(labels == classes[0], 1.0, -1.0)
    v, b, xi = cp.Variable(Phi.shape[1]), cp.Variable(), cp.Variable(n, nonneg=True)
    beta, t = cp.Variable(len(sizes), nonneg=True), cp.Variable(len(sizes))
    cons = [cp.multiply(yy, Phi @ v + b) >= 1 - xi, cp.abs(Phi.sum(axis=0) @ v + n * b) <= l,
            cp.norm(beta, 2) <= 1, *kernel_cones(t, beta, v, sizes)]
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum(t) + C * cp.sum(xi) / n), cons)
    _solve(prob, "MKC objective at fixed labels")
    return float(prob.value)


def multiclass_cut(Phi: np.ndarray, y: np.ndarray, R: np.ndarray, m: int) -> tuple[np.ndarray, float]:
    """One constraint of (4.34) at labels y with runner-ups R (-1: inactive) as (a, c): its left
    side is a' vec(V) + c, a = (1/n) vec(Phi' W) with W_{i y_i} = 1, W_{i r_i} = -1 over the active
    i (one GEMM), and c = (1/n) |{active i: r_i = y_i}| (the delta term)."""
    n = Phi.shape[0]
    act = R >= 0
    rows = np.nonzero(act)[0]
    W = np.zeros((n, m))
    W[rows, y[act]] += 1.0
    W[rows, R[act]] -= 1.0
    return (Phi.T @ W / n).ravel(order="F"), np.count_nonzero(act & (R == y)) / n


def _multiclass_fixed_objective(Phi, sizes, y, m, C, l, tol) -> float:
    """:func:`fixed_label_objective` for m > 2 clusters (labels y coded 0..m-1)."""
    n, D = Phi.shape
    g = Phi.sum(axis=0)
    V = cp.Variable((D, m))
    beta, t = cp.Variable(len(sizes), nonneg=True), cp.Variable(len(sizes))
    xi = cp.Variable(nonneg=True)
    u = V.T @ g
    base = [cp.norm(beta, 2) <= 1, cp.max(u) - cp.min(u) <= l, *kernel_cones(t, beta, V, sizes, m)]
    rows_A, consts = [], []
    R = (y + 1) % m  # at V = 0 every sample violates
    for _ in range(500):
        a_row, c = multiclass_cut(Phi, y, R, m)
        rows_A.append(a_row)
        consts.append(c - np.count_nonzero(R >= 0) / n)
        A = np.array(rows_A)
        cuts = A @ cp.vec(V, order="F") + np.array(consts) >= -xi
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum(t) + C * xi), base + [cuts])
        _solve(prob, "MKC objective at fixed labels")
        second, margin = runner_up(Phi @ V.value, y)
        loss = float(np.maximum(0.0, 1 - margin).sum() / n)
        if loss <= float(xi.value) + tol:
            break
        R = np.where(margin < 1, second, -1)
    return float(0.5 * np.sum(t.value) + C * loss)


def runner_up(F: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 4.3 at labels y: each sample's runner-up (the best class other than y_i) and its
    margin f_{i y_i} - f_{i r_i}."""
    rows = np.arange(F.shape[0])
    Fo = F.copy()
    Fo[rows, y] = -np.inf
    second = np.argmax(Fo, axis=1)
    return second, F[rows, y] - Fo[rows, second]


def count_bounds(n: int, m: int, l: float) -> tuple[int, int]:
    """The cluster sizes the label balance allows: n/m - l/2 <= n_p <= n/m + l/2, widened to the
    nearest integers (floor, ceil) so that a labelling always exists. The box implies the pairwise
    bound |n_p - n_q| <= l, the count form of (4.34)'s balance and, for m = 2, exactly the balance
    -l <= sum_i y_i <= l of problem (2.2)."""
    return int(np.floor(n / m - l / 2)), int(np.ceil(n / m + l / 2))


def _transport(F: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """The size-constrained assignment LP on the rows of F (HiGHS; see :func:`balanced_labels`):
    (labels, prices lambda) or None when infeasible. The prices are the duals of the size bounds:
    each label is an argmax of F_ip - lambda_p (complementary slackness)."""
    import scipy.optimize
    import scipy.sparse as sp

    n, m = F.shape
    if n == 0:
        return (np.zeros(0, dtype=np.int64), np.zeros(m)) if (lo <= 0).all() else None
    # x in row-major order: x[i * m + p]
    A_eq = sp.csr_matrix((np.ones(n * m), (np.repeat(np.arange(n), m), np.arange(n * m))), shape=(n, n * m))
    A_cls = sp.csr_matrix((np.ones(n * m), (np.tile(np.arange(m), n), np.arange(n * m))), shape=(m, n * m))
    res = scipy.optimize.linprog(-F.ravel(), A_ub=sp.vstack([A_cls, -A_cls]).tocsr(),
                                 b_ub=np.concatenate([hi, -lo]).astype(np.float64), A_eq=A_eq, b_eq=np.ones(n),
                                 bounds=(0, 1), method="highs-ipm")
    if res.status == 2:
        return None
    if res.status != 0:
        raise RuntimeError(f"balanced labelling: HiGHS returned status {res.status} ({res.message})")
    mu = res.ineqlin.marginals
    return np.argmax(res.x.reshape(n, m), axis=1), mu[m:] - mu[:m]


def _argmax_under(F, prices, y, tol) -> np.ndarray:
    """Rows whose label y is (within tol) an argmax of F_ip - prices_p."""
    G = F - prices[None, :]
    return G[np.arange(len(y)), y] >= G.max(axis=1) - tol


def balanced_labels(F: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """argmax over labellings y with lo <= |{i: y_i = p}| <= hi of sum_i F[i, y_i].

    The argmax labels when they satisfy the bounds (no solve). Otherwise a transportation LP (x_ip
    in [0, 1], sum_p x_ip = 1, lo <= sum_i x_ip <= hi) by HiGHS: its constraint matrix is totally
    unimodular, so the vertex it returns is a labelling. Prices from a few sweeps of size balancing
    pick the rows near a label change; the LP runs on those with the others fixed at their argmax
    under the prices, and the reduced LP's duals (prices) certify the whole labelling: every fixed
    row must still be an argmax of F_ip - lambda_p, or the candidate set grows (at worst to all
    rows). Written here because scikit-learn and scipy have no size-constrained assignment;
    ``linear_sum_assignment`` would need an n x n cost matrix."""
    n, m = F.shape
    if not np.isfinite(F).all():
        raise ValueError("balanced labelling: the scores are not finite")
    top = float(np.abs(F).max()) if F.size else 0.0
    if top > 0 and not 2.0 ** -20 <= top <= 2.0 ** 20:
        # the labelling is that of any positive multiple of F, and HiGHS needs numbers near 1 (scores of
        # 1e150 gave "status 4"); a power of 2 scales exactly, and scores in range are left as they are
        F = F * 2.0 ** -np.round(np.log2(top))
    y = np.argmax(F, axis=1)
    counts = argmax_counts = np.bincount(y, minlength=m)
    if counts.min() >= lo and counts.max() <= hi:
        return y
    if not lo * m <= n <= hi * m:
        raise ValueError(f"no labelling of {n} samples into {m} clusters has sizes in [{lo}, {hi}]")
    tol = 1e-9 * max(float(np.abs(F).max()), 1.0)
    prices = np.zeros(m)
    for _ in range(20 * m):  # size balancing: move each class's price until its count fits
        G = F - prices
        y = np.argmax(G, axis=1)
        counts = np.bincount(y, minlength=m)
        if counts.min() >= lo and counts.max() <= hi:
            break
        p = int(np.argmax(np.maximum(counts - hi, lo - counts)))
        Go = G.copy()
        Go[:, p] = -np.inf
        gap = G[:, p] - Go.max(axis=1)  # > 0 for the rows in p
        if counts[p] > hi:
            prices[p] += np.sort(gap[y == p])[counts[p] - hi - 1] + tol
        else:
            prices[p] -= np.sort(-gap[y != p])[lo - counts[p] - 1] - tol
    G = F - prices
    top2 = np.sort(G, axis=1)[:, -2:]
    gap = top2[:, 1] - top2[:, 0]
    size = min(n, max(2000, 4 * int(np.abs(argmax_counts - (lo + hi) / 2).sum())))
    while True:
        cand = np.zeros(n, dtype=bool)
        cand[np.argsort(gap, kind="stable")[:size]] = True
        fixed = np.argmax(G[~cand], axis=1)
        fixed_counts = np.bincount(fixed, minlength=m)
        sol = _transport(F[cand], np.maximum(lo - fixed_counts, 0), hi - fixed_counts)
        if sol is not None:
            lab, lam = sol
            out = np.empty(n, dtype=np.int64)
            out[cand], out[~cand] = lab, fixed
            if (_argmax_under(F[~cand], lam, fixed, tol * 10).all()
                    and _argmax_under(F[cand], lam, lab, tol * 10).all()):
                return out
        if size >= n:
            break
        size = min(n, 4 * size)
    lab, _ = _transport(F, np.full(m, lo), np.full(m, hi))  # the whole LP (feasible: checked above)
    return lab
