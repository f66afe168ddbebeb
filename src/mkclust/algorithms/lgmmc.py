"""LG-MMC (Li, Tsang, Kwok, Zhou, AISTATS 2009): maximum margin clustering by label generation, two
clusters; a baseline of the ODMC paper's Table 2.

**Problem.** The minimax relaxation of MMC: min over mu in the simplex of

    J(mu) = max_{alpha in A} e'alpha - 1/2 alpha' (sum_k mu_k K o y_k y_k') alpha,

one "label kernel" K o y_k y_k' per labelling y_k of the generated set B, so that the inner problem
is an SVM with the multiple kernels of B. Its solution is found by **label generation**: solve the
multiple-kernel SVM for the current B, then add the most violated labelling

    y* = argmax_{y balanced} (alpha o y)' K (alpha o y)

(the label kernel whose SVM dual value is the largest at the current alpha; balanced: -beta <= e'y
<= beta), until y* is violated by at most ``epsilon`` of the objective: 1/2 ((alpha o y*)'K(alpha o
y*) - sum_k mu_k (alpha o y_k)'K(alpha o y_k)) <= epsilon J (moving all of mu onto y* would lower the
dual value at alpha by the left side), or |B| reaches ``max_labels``. y* is found as for
ODMC (:func:`mkclust.algorithms._labels._most_violated`: the balanced thresholding of the leading
eigenvector of diag(alpha) K diag(alpha), then improving swaps).

**The multiple-kernel SVM**: for the current mu, the SVM dual on K o sum_k mu_k y_k y_k' over the box
A = {0 <= alpha <= C}, warm-started from the fit's previous SVM
(:func:`mkclust.algorithms._box_svm.box_svm`, ``svm_solver="auto"``: dual coordinate descent for 100
sweeps, then, where it has not stopped, a compiled active-set method; ``"dcd"``: coordinate descent
alone, the default until 2026-12-01), gives alpha_j and the value
J(mu), an upper bound of min J. mu is updated by the group-lasso fixed
point of l1-MKL (Xu et al. 2010), mu_k proportional to ||w_k|| = mu_k sqrt(q_jk), q_jk = (alpha_j o
y_k)'K(alpha_j o y_k). Each alpha_j is also a cut of the semi-infinite linear program (SILP,
Sonnenburg et al. 2006), theta >= e'alpha_j - 1/2 sum_k mu_k q_jk, and the linear program min theta
over mu in the simplex (scipy's HiGHS) is a lower bound of min J; the MKL stops when 1 - lower /
upper <= ``mkl_tol``. (Kelley's SILP steps themselves, tried first, needed 50-100 SVMs per round on
100 points.) The fixed point nears the optimum fast, then creeps while its cuts leave the lower
bound where it is (on german, 7 of 50 rounds ended at the 100-SVM cap with a 2-4% gap); once an
SVM lowers the upper bound by less than a tenth of ``mkl_tol``, the round continues with steps of
the level method (Xu, Jin, King, Lyu 2008): mu is projected onto the level set of the cutting-plane
model at lower + 0.9 (upper - lower), a small QP (Clarabel). Measured on german (n = 1000,
three fits): 413-548 SVMs per fit instead of 983-1270, every round certified. The cuts of
earlier rounds stay valid when B grows (their q columns for a new label are one product), so the
lower bound starts from them; a new label enters mu with mass 1/|B|.

Choices the paper leaves to us (documented, tested):

- **No bias.** The SVM is w'phi(x) without a bias, A the box alone: the minimax relaxation shares one
  alpha across every labelling y_k of B, so an equality constraint y_k'alpha = 0 cannot hold for
  each of them, and on the centred kernel (below) the bias is not needed; the ODMC paper's own
  model, whose baseline this is, has none either (h(x) = w'phi(x), its Eq. 1-3). Until 2026-11-27
  the SVM was libsvm's (``SVC``) with a bias, i.e. the extra constraint s'alpha = 0 for s the start
  y_1, which is not the paper's problem. (The bias was not what kept the labels at the start: on
  heart-statlog's linear kernel they equal it in 9 of 10 seeds either way, and no fit there stops by
  the criterion before ``max_labels`` = 50; docs/papers.md, ODMC.)
- **Start**: B = {y_1}, y_1 the kernel k-means labelling (two random centres, ``random_state``)
  made balanced by :func:`~mkclust.algorithms._labels.balanced_signs`.
- **Labels**: sign(sum_k mu_k y_k), the mu-weighted vote of B, as ODMC labels from its relaxation
  (ties +1; cluster 0 is +1); each generated y is oriented to agree with y_1 (y and -y give one
  label kernel).
- **Centring**: the kernel is centred (H K H) unless ``center=False``, as for ODMC and GMMC.

One iteration (``seconds_per_iteration_``, the ODMC paper's Figure 2) is one label-generation
round: the multiple-kernel SVM and the most violated labelling.
"""

from __future__ import annotations

import logging
import time

import clarabel
import numpy as np
import scipy.sparse
from scipy.optimize import linprog
from sklearn.utils import check_random_state

from mkclust.algorithms.base import (
    BaseClusterer, COMMON_CONSTRAINTS, Cost, NONNEG, POSITIVE, POSITIVE_INT, Progress, SharedStartBatch,
    StrOptions, default_params,
)
from mkclust.algorithms._labels import _most_violated, abs_maxima, kkm_signs, orient
from mkclust.kernels import center_kernel

log = logging.getLogger(__name__)
_ROUNDS = Progress(log)


def label_kernel_values(K: np.ndarray, alphas: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """q[j, k] = (alpha_j o y_k)' K (alpha_j o y_k) for every row alpha_j of ``alphas`` and y_k of
    ``Y``: one GEMM."""
    A = np.atleast_2d(alphas)[:, None, :] * np.atleast_2d(Y)[None, :, :]     # (J, |B|, n)
    flat = A.reshape(-1, A.shape[-1])
    return np.einsum("rn,rn->r", flat @ K, flat).reshape(A.shape[:2])


def silp_step(values: np.ndarray, sums: np.ndarray) -> tuple[np.ndarray, float]:
    """The SILP master problem: min theta over mu in the simplex subject to theta >= sums_j - 1/2
    values[j] @ mu for every cut j. Returns (mu, theta)."""
    J, B = values.shape
    c = np.zeros(B + 1)
    c[-1] = 1.0
    A_ub = np.hstack([-0.5 * values, -np.ones((J, 1))])                      # -q/2 mu - theta <= -sum alpha
    A_eq = np.hstack([np.ones((1, B)), np.zeros((1, 1))])
    res = linprog(c, A_ub=A_ub, b_ub=-sums, A_eq=A_eq, b_eq=[1.0],
                  bounds=[(0, None)] * B + [(None, None)], method="highs")
    if res.status != 0:
        raise RuntimeError(f"SILP master problem failed: {res.message}")
    mu = np.maximum(res.x[:B], 0.0)
    return mu / mu.sum(), float(res.x[-1])


def level_step(values: np.ndarray, sums: np.ndarray, mu: np.ndarray, level: float) -> np.ndarray | None:
    """The level method's next point (Xu, Jin, King, Lyu, NIPS 2008): the Euclidean projection of
    ``mu`` onto the level set {m in the simplex : sums_j - 1/2 values[j] @ m <= level for every cut
    j}, a small QP (|B| variables) solved by Clarabel through its own interface: it runs once per
    SVM in a stalled round, where cvxpy's canonicalisation cost four times Clarabel's solve (10 of
    every 25 ms at n = 176). The cuts that hold at the level on the whole simplex are left out (the
    set is the same). None if the solver fails."""
    live = sums - 0.5 * values.min(axis=1) > level
    values, sums = values[live], sums[live]
    B = len(mu)
    P = scipy.sparse.identity(B, format="csc") * 2.0                  # ||m - mu||^2 = m'm - 2 mu'm + c
    A = scipy.sparse.csc_matrix(np.vstack([np.ones((1, B)), -np.eye(B), -0.5 * values]))
    b = np.concatenate([[1.0], np.zeros(B), level - sums])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    sol = clarabel.DefaultSolver(P, -2.0 * np.asarray(mu, dtype=np.float64), A, b,
                                 [clarabel.ZeroConeT(1), clarabel.NonnegativeConeT(B + len(sums))], settings).solve()
    if sol.status not in (clarabel.SolverStatus.Solved, clarabel.SolverStatus.AlmostSolved):
        return None
    x = np.maximum(np.asarray(sol.x, dtype=np.float64), 0.0)
    return x / x.sum() if x.sum() > 0 else None


class LGMMC(SharedStartBatch, BaseClusterer):
    """LG-MMC on one precomputed kernel (see the module docstring).

    Parameters
    ----------
    n_clusters : int, default=2
        Must be 2.
    C : float, default=1.0
        The SVM's loss weight (the paper's grid: {1, 10, 100, 1000}).
    balance : float or None, default=None
        beta; None means 0.03 n.
    epsilon : float, default=0.01
        Relative tolerance of the label-generation stop.
    max_labels : int, default=50
        The largest |B| (label-generation rounds).
    mkl_tol : float, default=0.01
        The SILP's relative gap.
    max_mkl_iter : int, default=100
        The SILP's iteration cap per round.
    svm_tol : float, default=1e-4
        Each SVM's stop: the spread of its projected gradient (max - min over the coordinates).
    center : bool, default=True
        Centre the kernel (H K H) first.
    svm_solver : {"auto", "dcd"}, default="auto"
        The SVM's solver (:func:`~mkclust.algorithms._box_svm.box_svm`): "auto", coordinate descent
        for 100 sweeps and then the active-set method, or "dcd", coordinate descent alone. Both meet
        the same stop (``svm_tol``) but end at different points within it, and so at different fits.
        Coordinate descent crawls where the free blocks are ill-conditioned (large C, Gaussian
        kernels, as on sick); elsewhere the two cost about the same (measurements:
        workflow/configs/README.md, "LG-MMC's SVM solver"). "dcd" was the default until 2026-12-01.
    start_n_init : int, default=1
        Kernel k-means starts of the first labelling y_1, the one with the lowest kernel k-means
        objective kept. 1 is the paper's (and its code's) single start; the benchmark gives every
        method with random starts 10 (docs/benchmark.md, "Protocol").
    random_state : int, RandomState instance or None, default=None
        Seed of the k-means start.

    Attributes
    ----------
    labels_, decision_ (sum_k mu_k y_k), mu_, alpha_, labels_pool_ (B, (|B|, n) of +-1), objective_
    (J(mu) at the end), n_iter_ (rounds), mkl_iterations_ (per round), mkl_gap_ (the last SILP's
    relative gap), converged_ (no violated label left before max_labels), svm_sweeps_ (coordinate-descent
    sweeps over every SVM of the fit), svm_steps_ (their active-set steps), seconds_per_iteration_,
    shared_fit_ (True where :meth:`fit_batch` copied the fit of another run with the same start).

    ``fit_batch`` (:class:`~mkclust.algorithms.base.SharedStartBatch`): ``random_state`` enters a
    fit only through y_1, so runs of one kernel that reach the same y_1 (sign included) are computed
    once. On the paper configuration's kernels the 10 seeds reach 2-8 starts per kernel counting y
    and -y as one (german, n = 1000: 4-8; heart-h: 2-5); measured, one thread: german kernel 0,
    C = 10: 6 computations, 53.7 s instead of 89.9 s; heart-h kernel 1, C = 100: 7 computations.
    """

    # measured at n = 1000: 7.8-17.5 s (german, 50 rounds)
    cost = Cost(work_n2=10, seconds_at_1000=30, exponent=2, typical_at_1000=2.16)

    @classmethod
    def fit_seconds(cls, n: int, params: dict, typical: bool = False, input_rank: int | None = None) -> float:
        """The typical time grows with the label-generation rounds: ``typical_at_1000`` was calibrated
        on fits capped at 20 labels (the default run's ``max_labels``), and a fit stopped by the cap
        costs about ``max_labels`` / 20 times that (measured at the default cap of 50: 40 s on splice's
        linear kernel, n = 3175, and 5 s on german's, n = 1000, 1.8 and 2.3 times the 20-label model)."""
        seconds = super().fit_seconds(n, params, typical, input_rank)
        if typical:
            seconds *= int(params.get("max_labels", default_params(cls)["max_labels"])) / 20
        return seconds

    @classmethod
    def load_compiled(cls) -> None:
        """The SVM's coordinate descent and active-set method, and the label generation's swap search
        (numba)."""
        from mkclust.algorithms import _box_svm, _swap
        _box_svm.box_svm(np.eye(2), 1.0, method="active-set")
        _swap.load()

    _parameter_constraints = {**COMMON_CONSTRAINTS, "C": [POSITIVE], "balance": [NONNEG, None], "epsilon": [POSITIVE],
                              "max_labels": [POSITIVE_INT], "max_mkl_iter": [POSITIVE_INT], "mkl_tol": [NONNEG],
                              "svm_tol": [POSITIVE], "center": ["boolean"], "svm_solver": [StrOptions({"dcd", "auto"})],
                              "start_n_init": [POSITIVE_INT]}

    two_class_only = True
    budget = "max_labels"
    PREPARE_KEY = ("center", "balance", "n_clusters")

    def __init__(self, n_clusters=2, C=1.0, balance=None, epsilon=1e-2, max_labels=50, mkl_tol=1e-2,
                 max_mkl_iter=100, svm_tol=1e-4, center=True, svm_solver="auto", start_n_init=1, random_state=None):
        self.n_clusters = n_clusters
        self.C = C
        self.balance = balance
        self.epsilon = epsilon
        self.max_labels = max_labels
        self.mkl_tol = mkl_tol
        self.max_mkl_iter = max_mkl_iter
        self.svm_tol = svm_tol
        self.center = center
        self.svm_solver = svm_solver
        self.start_n_init = start_n_init
        self.random_state = random_state

    def _svm(self, K, Y, mu, alpha0):
        """alpha of the SVM on sum_k mu_k K o y_k y_k' without a bias (module docstring), by
        :func:`~mkclust.algorithms._box_svm.box_svm` from ``alpha0``, the
        previous SVM of the same fit (None: from zero). Q = K o W costs one GEMM (W) and one product
        written in place."""
        from mkclust.algorithms._box_svm import box_svm   # numba: imported by the fits that need it
        W = (Y * mu[:, None]).T @ Y                                  # sum_k mu_k y_k y_k'
        np.multiply(K, W, out=W)
        alpha, sweeps, spread, steps = box_svm(W, float(self.C), alpha0, tol=float(self.svm_tol),
                                               method=self.svm_solver)
        self.svm_sweeps_ += sweeps
        self.svm_steps_ += steps
        if spread > float(self.svm_tol):
            log.warning("LG-MMC: an SVM stopped after %d sweeps with projected-gradient spread %.3g > svm_tol",
                        sweeps, spread)
        return alpha

    @staticmethod
    def _silp_lower(cuts, threshold):
        """The SILP's lower bound after the newest cut, solving the linear program only when its value
        can reach ``threshold`` (the value that certifies the gap) and is not already known.

        Exact shortcuts, given the last LP's optimum (mu*, theta*) and U = max_j f_j(mu*) over every
        cut since (f_j(mu) = e'alpha_j - 1/2 q_j'mu): the LP's value lies in [theta*, U] (more cuts
        only raise it; mu* stays feasible). If U = theta*, no later cut is violated at mu*, which
        stays optimal: the value is theta*. If U < threshold, the value cannot certify: theta* (a
        valid, weaker bound) is returned without solving. Either way the stop decision equals that
        of solving the LP at every iteration (measured: 1060 LPs took 73% of a fit on hepatitis)."""
        q, total = cuts["values"][-1], float(cuts["alphas"][-1].sum())
        lp = cuts.get("lp")
        if lp is not None:
            mu_lp, theta, upper = lp
            upper = max(upper, total - 0.5 * float(q @ mu_lp))
            cuts["lp"] = (mu_lp, theta, upper)
            if upper <= theta or upper < threshold:
                return theta
        mu_lp, theta = silp_step(cuts["values"], np.sum(cuts["alphas"], axis=1))
        cuts["lp"] = (mu_lp, theta, theta)
        return theta

    def _mkl(self, K, Y, mu, cuts, alpha0=None):
        """The multiple-kernel SVM from ``mu``, each SVM warm-started from the previous one (the first
        from ``alpha0``): returns (mu, alpha, J, gap, iterations).

        Steps (module docstring): the group-lasso fixed point while each SVM lowers the upper bound by
        at least a tenth of ``mkl_tol`` (relative; a test free of the SILP bound, so the bound's
        shortcuts change no decision); once it stalls, level-method steps for the rest of the round
        (:func:`level_step`, on the exact SILP bound)."""
        best, gap, prev, level, alpha = None, np.inf, np.inf, False, alpha0
        for it in range(1, int(self.max_mkl_iter) + 1):
            alpha = self._svm(K, Y, mu, alpha)
            q = label_kernel_values(K, alpha, Y)[0]
            J = float(alpha.sum() - 0.5 * mu @ q)                    # the SVM dual value at mu: >= min J
            cuts["alphas"].append(alpha)
            cuts["values"] = np.vstack([cuts["values"].reshape(-1, len(Y)), q])   # (0, .) when no cut yet
            if best is None or J < best[2]:
                best = (mu, alpha, J)
            if len(Y) == 1 or best[2] <= 0:
                return best + (0.0, it)
            if not level:
                lower = self._silp_lower(cuts, (1.0 - float(self.mkl_tol)) * best[2])
                gap = max(1.0 - lower / best[2], 0.0)
                if gap <= float(self.mkl_tol):
                    return best + (gap, it)
                level = prev - best[2] < 0.1 * float(self.mkl_tol) * best[2]   # the fixed point has stalled
                if not level:
                    # the group-lasso fixed point of l1-MKL: mu_k proportional to ||w_k|| = mu_k sqrt(q_k)
                    w = mu * np.sqrt(np.maximum(q, 0.0))
                    mu = w / w.sum() if w.sum() > 0 else np.full(len(Y), 1.0 / len(Y))
                    prev = best[2]
                    continue
            sums = np.sum(cuts["alphas"], axis=1)                   # a level-method step, on the exact
            mu_lp, lower = silp_step(cuts["values"], sums)          # SILP bound
            cuts["lp"] = (mu_lp, lower, lower)
            gap = max(1.0 - lower / best[2], 0.0)
            if gap <= float(self.mkl_tol):
                return best + (gap, it)
            nxt = level_step(cuts["values"], sums, best[0], lower + 0.9 * (best[2] - lower))
            mu = mu_lp if nxt is None else nxt
        lp = cuts.get("lp")
        if lp is not None and lp[2] > lp[1]:                       # the last bound skipped cuts: make it exact
            gap = max(1.0 - silp_step(cuts["values"], np.sum(cuts["alphas"], axis=1))[1] / best[2], 0.0)
        log.warning("LG-MMC: the multiple-kernel SVM stopped at max_mkl_iter=%d with relative gap %.3g",
                    self.max_mkl_iter, gap)
        return best + (gap, it)

    def _prepare(self, K):
        """The checked (and centred) kernel, beta, and for the label generation K's C-ordered
        transpose and absolute maxima (shared by every fit of a batch)."""
        K = self._validate_kernel(K)
        if self.center:
            K = center_kernel(K)
        beta = 0.03 * K.shape[0] if self.balance is None else float(self.balance)
        return K, beta, np.ascontiguousarray(K.T), abs_maxima(K)

    def _start(self, prepared):
        """y_1: the kernel k-means labelling from two random centres, balanced."""
        K, beta = prepared[:2]
        return kkm_signs(K, beta, check_random_state(self.random_state), int(self.start_n_init))

    def _fit_from(self, prepared, y1, start_seconds=0.0):
        """The fit from the start y1 on the prepared kernel; ``start_seconds`` (y1's) count in
        ``seconds_per_iteration_``."""
        K, beta, KT, kmax = prepared
        n = K.shape[0]
        t0 = time.perf_counter() - start_seconds
        Y = y1[None, :].astype(np.float64)
        mu, alpha = np.ones(1), None
        cuts = {"alphas": [], "values": np.zeros((0, 1))}   # the SILP's cuts: alpha_j and q_jk
        self.mkl_iterations_, self.svm_sweeps_, self.svm_steps_, converged = [], 0, 0, False
        for rnd in range(1, int(self.max_labels) + 1):
            mu, alpha, J, gap, its = self._mkl(K, Y, mu, cuts, alpha)
            self.mkl_iterations_.append(its)
            q = label_kernel_values(K, alpha, Y)[0]
            ynew = _most_violated(K, alpha, beta, KT=KT, kmax=kmax)
            ynew = orient(ynew, Y[0])
            qnew = float(label_kernel_values(K, alpha, ynew)[0, 0])
            known = bool((np.abs(Y @ ynew) == n).any())              # y or -y already in B: one label kernel
            _ROUNDS.info("LG-MMC round %d: |B| = %d, J %.6g, SILP gap %.2g (%d SVMs), new label value %.6g vs %.6g",
                         rnd, len(Y), J, gap, its, qnew, q.max())
            if known or 0.5 * (qnew - mu @ q) <= float(self.epsilon) * abs(J):
                converged = True
                break
            if rnd == int(self.max_labels):
                break
            Y = np.vstack([Y, ynew])
            mu = np.append(mu * (len(Y) - 1) / len(Y), 1.0 / len(Y))   # the new label enters with mass 1/|B|
            new_col = label_kernel_values(K, np.array(cuts["alphas"]), ynew)      # earlier cuts, new label
            cuts["values"] = np.hstack([cuts["values"], new_col])
            cuts["lp"] = None                                      # a new mu coordinate: solve afresh
        if not converged:
            log.warning("LG-MMC stopped at max_labels=%d with a violated label left", self.max_labels)
        self.mu_, self.alpha_, self.labels_pool_ = mu, alpha, Y.astype(np.int8)
        self.decision_ = mu @ Y
        self.labels_ = (self.decision_ < 0).astype(np.int64)
        self.objective_, self.mkl_gap_, self.converged_ = J, gap, converged
        self.n_iter_ = rnd
        self.seconds_per_iteration_ = (time.perf_counter() - t0) / rnd
        self.shared_fit_ = False
        return self
