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

with cvxpy and SCS. M is the dual variable of the matrix inequality; the labels are the balanced
thresholding (:func:`~mkclust.algorithms._labels.balanced_signs`) of M's leading eigenvector.

**Budget.** The SDP's cost grows as n^3 per SCS iteration (an eigendecomposition of an n x n
matrix), so as in the ODMC paper (GMMC "did not return results on some data sets in two days") it
runs only where it finishes: at most ``max_iter`` SCS iterations per SDP (an iteration budget, not
seconds, so that whether a cell is N/A does not depend on the machine or its load), and ``max_n`` to
decline larger sets without trying. Either raises :class:`~mkclust.algorithms.base.NotFinished`, which the experiment
runner records as an N/A cell with the reason. :meth:`GMMC.fit_batch` solves a kernel's C grid as one
path of warm-started SDPs.

The kernel is centred (H K H) unless ``center=False``: the formulation has no bias.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from mkclust._lazy import lazy_import
from mkclust.algorithms.base import (
    BaseClusterer, batch_groups, COMMON_CONSTRAINTS, Cost, leading_eigenvectors, NONNEG, NotFinished, POSITIVE,
    POSITIVE_INT,
)
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
        beta; None means 0.03 n.
    max_iter : int or None, default=None
        The SCS iterations an SDP may take (None: SCS's own limit, 100 000); an SDP that uses them
        all raises NotFinished.
    max_n : int or None, default=None
        The largest n attempted (None: any); above it the fit raises NotFinished at once.
    eps : float, default=0.0001
        SCS's absolute and relative tolerance.
    center : bool, default=True
        Centre the kernel (H K H) first.
    random_state : None, default=None
        Unused (the SDP is deterministic); kept for the common interface.

    Attributes
    ----------
    labels_, decision_ (M's leading eigenvector), M_ (the relaxed yy'), z_, objective_ (the SDP
    value), solver_status_, solver_seconds_, n_iter_ (SCS iterations), rank_one_ratio_ (the share of
    M's trace in its leading eigenvalue: 1 for an exact labelling).
    """

    cost = Cost(work_n2=40, seconds_at_1000=2700, exponent=3, typical_at_1000=1010)
    _parameter_constraints = {**COMMON_CONSTRAINTS, "C": [POSITIVE], "balance": [NONNEG, None], "eps": [POSITIVE],
                              "max_n": [POSITIVE_INT, None], "max_iter": [POSITIVE_INT, None], "center": ["boolean"]}

    #: seconds of one SCS iteration at n = 250 on one core (measured: about 6 ms on ringnorm_250), n^3 beyond
    ITERATION_SECONDS_AT_250 = 0.006

    @classmethod
    def declines(cls, n: int, params: dict) -> bool:
        """A set above ``max_n`` is declined without trying (NotFinished): no time, no memory."""
        return n > int(params.get("max_n", n))

    @classmethod
    def fit_seconds(cls, n: int, params: dict, typical: bool = False, input_rank: int | None = None) -> float:
        """The n ** 3 estimate, capped by ``max_iter`` SCS iterations (plus 5 % of the estimate for the rest)."""
        seconds = super().fit_seconds(n, params, typical, input_rank)
        if params.get("max_iter"):
            budget = int(params["max_iter"]) * cls.ITERATION_SECONDS_AT_250 * (n / 250) ** 3
            seconds = min(seconds, budget + 0.05 * seconds)
        return seconds

    two_class_only = True

    def __init__(self, n_clusters=2, C=1.0, balance=None, max_iter=None, max_n=None, eps=1e-4, center=True,
                 random_state=None):
        self.n_clusters = n_clusters
        self.C = C
        self.balance = balance
        self.max_iter = max_iter
        self.max_n = max_n
        self.eps = eps
        self.center = center
        self.random_state = random_state

    def fit(self, K, y=None):
        K, beta = self._prepare(K)
        sdp = _DualSdp(K.shape[0], beta)
        self._solve(sdp, K, beta, warm=False)
        return self

    @classmethod
    def fit_batch(cls, estimators, K) -> list:
        """Fit several GMMC estimators on one kernel K; returns them, each fitted or, where its
        SDP did not finish (``max_n``, ``max_iter``), with ``not_finished_`` holding the
        :class:`~mkclust.algorithms.base.NotFinished` that ``fit`` would have raised.

        The estimators that share the SDP's shape (``balance``, ``center``, ``max_n``) are solved
        along their C path in increasing C, each SDP warm-started from the previous one's solution
        (the paper's grid C in {1, 10, 100, 1000} on one kernel). The first of each path is solved
        cold, as ``fit`` solves it, and equals ``fit``; the others reach the same SDP optimum to
        SCS's tolerance ``eps`` from a nearer start. SCS's iterations grow steeply with C (A's
        spectrum reaches C on K's null space); from the previous C's solution they fall, e.g. on
        hepatitis (n = 155, Gaussian kernel 1 of the raw features) from 5075, 25800, 80925 to
        1675, 550, 3375 for C = 10, 100, 1000, and on house (n = 232, linear kernel of the raw
        features) from 23400 to 3600 for C = 10.
        ``solver_seconds_`` and ``n_iter_`` are each SDP's own.
        """
        estimators, paths = batch_groups(cls, estimators, ("balance", "center", "max_n", "n_clusters"))
        for e in estimators:
            e.not_finished_ = None
        for path in paths:
            try:
                Kp, beta = path[0]._prepare(K)
            except NotFinished as exc:
                for e in path:
                    e.not_finished_ = exc
                continue
            sdp = _DualSdp(Kp.shape[0], beta)
            for i, e in enumerate(sorted(path, key=lambda e: float(e.C))):
                try:
                    e._solve(sdp, Kp, beta, warm=i > 0)
                except NotFinished as exc:
                    e.not_finished_ = exc
        return estimators

    def _prepare(self, K):
        """The (centred) kernel and beta; raises NotFinished above max_n."""
        K = self._validate_kernel(K)
        n = K.shape[0]
        if self.max_n is not None and n > int(self.max_n):
            raise NotFinished(f"GMMC not run: n = {n} > max_n = {int(self.max_n)} (the n x n SDP would not "
                              "finish within its budget)")
        if self.center:
            K = center_kernel(K)
        return K, 0.03 * n if self.balance is None else float(self.balance)

    def _solve(self, sdp: _DualSdp, K, beta: float, warm: bool) -> None:
        n, C = K.shape[0], float(self.C)   # > 0 (_parameter_constraints)
        A = np.linalg.inv(K + np.eye(n) / C)
        A = 0.5 * (A + A.T)
        z, _, M, status, value, secs, iters = sdp.solve(A, self.max_iter, float(self.eps), warm)
        log.info("GMMC: C = %g, SCS %s in %.1f s (%s iterations%s), value %.6g", C, status, secs, iters,
                 ", warm start" if warm else "", value)
        if self.max_iter and iters is not None and iters >= int(self.max_iter):
            raise NotFinished(f"GMMC did not finish: SCS used its budget of max_iter = {int(self.max_iter)} "
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
        self.rank_one_ratio_ = float(lam[0] / max(np.trace(M), 1e-300))
