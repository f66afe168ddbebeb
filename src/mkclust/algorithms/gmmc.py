"""GMMC (Valizadegan and Jin, NIPS 2006): generalized maximum margin clustering, the SDP relaxation
with n variables instead of n^2; two clusters; a baseline of the ODMC paper's Table 2.

**Derivation** (our reading; the ODMC paper cites GMMC without restating it). Without the bias, the
2-norm soft-margin SVM on labels y has the dual max_{alpha >= 0} e'alpha - 1/2 alpha'(D_y K D_y +
I / C) alpha. GMMC's change of variables gamma = D_y alpha, with the sign constraint alpha >= 0
dropped, makes the labels appear linearly: max_gamma y'gamma - 1/2 gamma'(K + I / C) gamma =
1/2 y'A y with A = (K + I / C)^-1. MMC under the balance constraint (e'y)^2 <= beta^2 becomes the
Boolean quadratic program min_y y'A y, whose SDP relaxation over M = yy' (M PSD, diag M = e,
<ee', M> <= beta^2) has n^2 variables. GMMC solves its **dual**, which has n + 1:

    max_{z, t >= 0}  e'z - beta^2 t   subject to   A - Diag(z) + t ee' PSD,

by a primal-dual interior-point method written for its structure
(``solver="ipm"``, :mod:`mkclust.algorithms._gmmc_ipm`: 11-35 Newton steps of O(n^3) each to a
relative duality gap of 1e-7; 0.6 CPU s at n = 270, 7-11 s at n = 958), or with cvxpy and SCS
(``solver="scs"``, first order, the choice before 2026-11-27: on the ODMC paper's centred kernels it
stalls at large C, "inaccurate" after 20,000 iterations on heart-statlog at C = 1000 with its value
28.09 against the optimum 27.70). M is the primal X (for SCS, the dual variable of the matrix
inequality); the labels are the balanced thresholding
(:func:`~mkclust.algorithms._labels.balanced_signs`) of M's leading eigenvector.

**Stop and budget.** An SDP ends when it reaches its tolerance ``eps`` (IPM: relative duality gap and
primal residual; SCS: its eps_abs = eps_rel). ``max_iter`` is a guard (IPM: Newton steps, default 100;
SCS: its iterations, default SCS's own), and a fit that uses it all raises
:class:`~mkclust.algorithms.base.NotFinished`, which the experiment runner records as an N/A cell with
the reason; so does a set above ``max_n``, declined without trying (the ODMC paper's GMMC "did not
return results on some data sets in two days"). :meth:`GMMC.fit_batch` solves a kernel's C grid as
one path (with SCS, each SDP warm-started from the previous one).

The kernel is centred (H K H) unless ``center=False``: the formulation has no bias.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from mkclust._lazy import lazy_import
from mkclust.algorithms.base import (
    BaseClusterer, batch_groups, COMMON_CONSTRAINTS, Cost, leading_eigenvectors, NONNEG, NotFinished, POSITIVE,
    POSITIVE_INT, StrOptions,
)
from mkclust.algorithms._gmmc_ipm import gmmc_ipm
from mkclust.algorithms._labels import balanced_signs
from mkclust.kernels import center_kernel

cp = lazy_import("cvxpy")  # loaded at its first use: most jobs never solve a cone program

log = logging.getLogger(__name__)


class _DualSdp:
    """The dual SDP of the module docstring for one n and beta, with A a cvxpy Parameter: one problem
    compiled once and re-solved for each A (each C of a path), warm-started from the last solution
    when asked (SCS takes cvxpy's previous x, y, s as its starting point)."""

    def __init__(self, n: int, beta: float):
        self.A = cp.Parameter((n, n), symmetric=True)
        self.z, self.t = cp.Variable(n), cp.Variable(nonneg=True)
        lmi = self.A - cp.diag(self.z) + self.t * np.ones((n, n))
        self.con = [(lmi + lmi.T) / 2 >> 0]
        self.prob = cp.Problem(cp.Maximize(cp.sum(self.z) - beta**2 * self.t), self.con)

    def solve(self, A: np.ndarray, max_iter: int | None = None, eps: float = 1e-4, warm: bool = False):
        """(z, t, M, status, value, seconds, iterations) of the SDP with this A, in at most ``max_iter``
        SCS iterations (None: SCS's own limit)."""
        self.A.value = A
        opts = {"eps_abs": eps, "eps_rel": eps}
        if max_iter:
            opts["max_iters"] = int(max_iter)
        t0 = time.perf_counter()
        self.prob.solve(solver=cp.SCS, warm_start=warm, **opts)
        secs = time.perf_counter() - t0
        iters = getattr(self.prob.solver_stats, "num_iters", None)
        return self.z.value, self.t.value, self.con[0].dual_value, self.prob.status, self.prob.value, secs, iters


def gmmc_sdp(A: np.ndarray, beta: float, max_iter: int | None = None, eps: float = 1e-4):
    """Solve the dual SDP of the module docstring with SCS from a cold start. Returns (z, t, M,
    status, value, seconds, iterations)."""
    return _DualSdp(A.shape[0], beta).solve(0.5 * (A + A.T), max_iter, eps)


class GMMC(BaseClusterer):
    """GMMC on one precomputed kernel (see the module docstring).

    Parameters
    ----------
    n_clusters : int, default=2
        Must be 2.
    C : float, default=1.0
        The loss weight (the paper's grid: {1, 10, 100, 1000}).
    balance : float or None, default=None
        beta > 0; None means 0.03 n.
    solver : {"ipm", "scs"}, default="ipm"
        The SDP solver: the interior-point method of :mod:`mkclust.algorithms._gmmc_ipm`, or SCS
        through cvxpy (first order; stalls at large C, see the module docstring).
    max_iter : int or None, default=None
        A guard on the solver's iterations (None: 100 Newton steps for "ipm", SCS's own limit,
        100 000, for "scs"); an SDP that uses them all raises NotFinished.
    max_n : int or None, default=None
        The largest n attempted (None: any); above it the fit raises NotFinished at once.
    eps : float or None, default=None
        The tolerance the SDP ends at (None: 1e-7 relative duality gap for "ipm", 1e-4 for "scs").
    center : bool, default=True
        Centre the kernel (H K H) first.
    random_state : None, default=None
        Unused (the SDP is deterministic); kept for the common interface.

    Attributes
    ----------
    labels_, decision_ (M's leading eigenvector), M_ (the relaxed yy'), z_, objective_ (the SDP
    value), solver_status_, solver_seconds_, n_iter_ (the solver's iterations), relative_gap_ (the
    duality gap over 1 + |primal| + |dual| at the end; "ipm" only, NaN for "scs"), rank_one_ratio_
    (the share of M's trace in its leading eigenvalue: 1 for an exact labelling).
    """

    #: measured with "ipm" on one core (2026-11-27): 7-11 s per SDP at n = 958 (tic-tac-toe), 3-8 s at
    #: n = 653 (credit-a), the most Newton steps (35) at C = 1000; about 20 n x n matrices at a time
    cost = Cost(work_n2=20, seconds_at_1000=60, exponent=3, typical_at_1000=12)
    _parameter_constraints = {**COMMON_CONSTRAINTS, "C": [POSITIVE], "balance": [POSITIVE, None],
                              "solver": [StrOptions({"ipm", "scs"})], "eps": [POSITIVE, None],
                              "max_n": [POSITIVE_INT, None], "max_iter": [POSITIVE_INT, None], "center": ["boolean"]}

    #: the cost of an SDP by SCS (its time to the end grows with C; calibrated before 2026-11-27)
    SCS_COST = Cost(work_n2=40, seconds_at_1000=2700, exponent=3, typical_at_1000=1010)
    #: seconds of one SCS iteration at n = 250 on one core (measured: about 6 ms on ringnorm_250), n^3 beyond
    ITERATION_SECONDS_AT_250 = 0.006
    #: an IPM that stalls (rounding) with its relative gap within this factor of ``eps`` ends
    #: "optimal_inaccurate" (haberman, Gaussian kernel 4, C = 1000: 1.1e-7)
    INACCURATE_FACTOR = 100.0
    #: the defaults of ``eps`` and ``max_iter`` per solver (None: the solver's own)
    SOLVER_DEFAULTS = {"ipm": (1e-7, 100), "scs": (1e-4, None)}

    @classmethod
    def declines(cls, n: int, params: dict) -> bool:
        """A set above ``max_n`` is declined without trying (NotFinished): no time, no memory."""
        return n > int(params.get("max_n", n))

    @classmethod
    def fit_seconds(cls, n: int, params: dict, typical: bool = False, input_rank: int | None = None) -> float:
        """The n ** 3 estimate of the IPM's cost; with SCS, of ``SCS_COST`` capped by ``max_iter`` SCS
        iterations (plus 5 % of the estimate for the rest)."""
        if params.get("solver", "ipm") != "scs":
            return super().fit_seconds(n, params, typical, input_rank)
        if cls.declines(n, params):
            return 0.0
        cost = cls.SCS_COST
        seconds = (cost.typical_at_1000 if typical else cost.seconds_at_1000) * (n / 1000) ** cost.exponent
        if params.get("max_iter"):
            budget = int(params["max_iter"]) * cls.ITERATION_SECONDS_AT_250 * (n / 250) ** 3
            seconds = min(seconds, budget + 0.05 * seconds)
        return seconds

    two_class_only = True

    def __init__(self, n_clusters=2, C=1.0, balance=None, solver="ipm", max_iter=None, max_n=None, eps=None,
                 center=True, random_state=None):
        self.n_clusters = n_clusters
        self.C = C
        self.balance = balance
        self.solver = solver
        self.max_iter = max_iter
        self.max_n = max_n
        self.eps = eps
        self.center = center
        self.random_state = random_state

    def fit(self, K, y=None):
        K, beta = self._prepare(K)
        self._solve(self._sdp(K.shape[0], beta), K, beta, warm=False)
        return self

    @classmethod
    def fit_batch(cls, estimators, K) -> list:
        """Fit several GMMC estimators on one kernel K; returns them, each fitted or, where its
        SDP did not finish (``max_n``, ``max_iter``), with ``not_finished_`` holding the
        :class:`~mkclust.algorithms.base.NotFinished` that ``fit`` would have raised.

        The estimators that share the SDP's shape (``balance``, ``center``, ``max_n``, ``solver``) are
        solved along their C path in increasing C. The IPM solves each from its own start, as ``fit``
        does. With SCS each SDP after the first is warm-started from the previous one's solution (the
        first equals ``fit``; the others reach the same optimum to SCS's tolerance from a nearer
        start): SCS's iterations grow steeply with C (A's spectrum reaches C on K's null space);
        from the previous C's solution they fall, e.g. on hepatitis (n = 155, Gaussian kernel 1 of the
        raw features) from 5075, 25800, 80925 to 1675, 550, 3375 for C = 10, 100, 1000.
        ``solver_seconds_`` and ``n_iter_`` are each SDP's own.
        """
        estimators, paths = batch_groups(cls, estimators, ("balance", "center", "max_n", "n_clusters", "solver"))
        for e in estimators:
            e.not_finished_ = None
        for path in paths:
            try:
                Kp, beta = path[0]._prepare(K)
            except NotFinished as exc:
                for e in path:
                    e.not_finished_ = exc
                continue
            sdp = path[0]._sdp(Kp.shape[0], beta)
            for i, e in enumerate(sorted(path, key=lambda e: float(e.C))):
                try:
                    e._solve(sdp, Kp, beta, warm=i > 0)
                except NotFinished as exc:
                    e.not_finished_ = exc
        return estimators

    def _sdp(self, n: int, beta: float):
        """SCS's compiled problem (re-solved along a C path), or None for the IPM."""
        return _DualSdp(n, beta) if self.solver == "scs" else None

    def _prepare(self, K):
        """The (centred) kernel and beta; raises NotFinished above max_n."""
        K = self._validate_kernel(K)
        n = K.shape[0]
        if self.max_n is not None and n > int(self.max_n):
            raise NotFinished(f"GMMC not run: n = {n} > max_n = {int(self.max_n)} (declined without trying)")
        if self.center:
            K = center_kernel(K)
        return K, 0.03 * n if self.balance is None else float(self.balance)

    def _solve(self, sdp, K, beta: float, warm: bool) -> None:
        n, C = K.shape[0], float(self.C)   # > 0 (_parameter_constraints)
        A = np.linalg.inv(K + np.eye(n) / C)
        A = 0.5 * (A + A.T)
        eps, max_iter = self.SOLVER_DEFAULTS[self.solver]
        eps = eps if self.eps is None else float(self.eps)
        max_iter = max_iter if self.max_iter is None else int(self.max_iter)
        if sdp is None:
            sol = gmmc_ipm(A, beta, tol=eps, max_iter=max_iter)
            z, M, value, secs, iters = sol.z, sol.X, sol.dual, sol.seconds, sol.iterations
            gap = sol.relative_gap
            # stalled by rounding within INACCURATE_FACTOR x eps: accepted and marked, as SCS's and
            # Clarabel's "inaccurate" / "almost solved" results are
            inaccurate = sol.stalled and gap <= self.INACCURATE_FACTOR * eps
            status = "optimal" if sol.converged else "optimal_inaccurate" if inaccurate else "not converged"
            log.info("GMMC: C = %g, interior point %s in %.1f s (%d steps), value %.8g, relative gap %.1e",
                     C, status, secs, iters, value, gap)
            if status == "not converged":
                why = (f"stalled (its gap did not halve in 5 steps) after {iters} steps" if sol.stalled
                       else f"used its budget of max_iter = {max_iter} Newton steps")
                raise NotFinished(f"GMMC did not finish: the interior point {why} (n = {n}, relative gap "
                                  f"{gap:.1e} > {self.INACCURATE_FACTOR:g} x eps = {eps:g})")
        else:
            z, _, M, status, value, secs, iters = sdp.solve(A, max_iter, eps, warm)
            gap = float("nan")
            log.info("GMMC: C = %g, SCS %s in %.1f s (%s iterations%s), value %.6g", C, status, secs, iters,
                     ", warm start" if warm else "", value)
            if max_iter and iters is not None and iters >= max_iter:
                raise NotFinished(f"GMMC did not finish: SCS used its budget of max_iter = {max_iter} "
                                  f"iterations (n = {n}, status {status})")
            if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or M is None:
                raise NotFinished(f"GMMC: SCS returned status {status} after {secs:.1f} s (n = {n})")
        M = 0.5 * (M + M.T)
        lam, vec = leading_eigenvectors(None, n, 1, dense=lambda: M, dense_limit=n)   # eigh, with its fallback
        v = vec[:, 0] * (1.0 if vec[np.argmax(np.abs(vec[:, 0])), 0] >= 0 else -1.0)
        yy = balanced_signs(v, beta)
        self.M_, self.z_, self.decision_ = M, z, v
        self.labels_ = (yy < 0).astype(np.int64)
        self.objective_ = float(value)
        self.solver_status_, self.solver_seconds_, self.n_iter_ = status, secs, iters
        self.relative_gap_ = float(gap)
        self.rank_one_ratio_ = float(lam[0] / max(np.trace(M), 1e-300))
