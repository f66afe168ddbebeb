"""Robust (multiple) kernel k-means with the l2,1-norm (Du et al., IJCAI 2015); the paper's MKKM
baseline is :mod:`mkclust.algorithms.mkkm`.

RMKKM minimises Eq. 7,

    J(Z, A, w) = sum_i sqrt( sum_t w_t e_it ),   e_it = k^t_ii - 2 a_j' k^t_i + a_j' K^t a_j  (j = z_i),

over the hard partition Z, the centre coefficients A and the kernel weights w >= 0 with
sum_t w_t^gamma = 1 (0 < gamma < 1). Algorithm 1 alternates

- A by Eq. 12: a_ij = z_ij D_ii / sum_i z_ij D_ii (the D-weighted mean of each cluster);
- Z by Eq. 15: every sample to the centre nearest in the combined kernel sum_t w_t K^t;
- w by Eq. 20: w_t proportional to h_t^(1/(gamma-1)), scaled so that sum_t w_t^gamma = 1, with
  h_t = sum_i e_it / (2 sqrt(sum_t' w_t' e_it')) (Eq. 19);
- D by Eq. 13: D_ii = 1 / (2 sqrt(sum_t w_t e_it)).

Each step is a majorise-minimise step of J (sqrt is concave, so sqrt(u) <= sqrt(u0) + (u - u0) /
(2 sqrt(u0)), tight at u0): the A-step minimises the majoriser sum_i D_ii ||phi(x_i) - v_{z_i}||^2,
the Z-step is exact, and the w-step minimises the majoriser w'h over {sum_t w_t^gamma >= 1}, a convex
set (gamma < 1) on whose boundary the minimum lies. Hence J(Z_k, A_k, w_k) never increases; the
tests check it to a relative 1e-10.

Choices where the paper is silent (each tested):

- **Initial weights**: Algorithm 1 starts from w_t = 1/m, which does not satisfy sum w^gamma = 1;
  we start from the uniform feasible point w_t = m^(-1/gamma). The scale of w does not change the
  first A and Z steps (argmin and weighted means are scale-free).
- **D_ii at a zero distance** (a sample on its centre): u is floored at 1e-12 times the mean u, so D
  stays finite; the weights D are then divided by their maximum (as the authors' code does; the
  weighted means do not change).
- **Empty clusters** after the Z-step: the sample farthest from its centre moves into the empty
  cluster, whose centre becomes that sample (its distance 0), which cannot raise J.
- **A kernel with h_t = 0** (constant in feature space) would take all the weight; h_t is floored at
  1e-12 max_t h_t.
- **Stopping**: relative decrease of J below ``tol`` (default 1e-6), or ``max_iter`` iterations.

Cost per iteration: one batched product K (m, n, n) x A (n, c), O(n^2 c m) time; memory one centred
copy of the bank (see :func:`robust_mkkm`) plus O(n c m); no O(n^3) step and no loop over samples.
On a low-rank bank (:class:`mkclust.lowrank.LowRankBank`) the products go through the factors,
O(n R c), and the centring is a constant per kernel (:class:`_ShiftedBank`), no copy.
"""

from __future__ import annotations

from numbers import Real

import logging

import numpy as np

from mkclust.algorithms._matlab import replay
from mkclust.algorithms.base import (
    BaseClusterer, COMMON_CONSTRAINTS, Cost, Interval, NONNEG, POSITIVE_INT, StrOptions, default_params,
)
from mkclust.algorithms._rmkkm_authors import _seeded_robust_kkm
from mkclust.algorithms.kmeans import (  # centre_matrix: A of Eq. 12
    _reseed_empty, centre_matrix, kernel_product, nearest_centres, sample_centres,
)
from mkclust.lowrank import LowRankBank

log = logging.getLogger(__name__)


class _ShiftedBank:
    """A low-rank bank less a constant per kernel, K_t - s_t 11' (:func:`_centred` on factors): its
    products and diagonal, no n x n matrix."""

    def __init__(self, low: LowRankBank):
        self.low = low                     # a bank (m, n, n), or one combined kernel taken as a bank of one
        n = low.n_samples
        shift = np.array([float(np.sum(np.asarray(F.sum(axis=0), dtype=np.float64) ** 2)) / n**2
                          for F in low.factors])
        self.shift = shift if low.ndim == 3 else np.array([low.weights @ shift])
        self.shape = (self.shift.size, n, n)

    def product(self, A: np.ndarray) -> np.ndarray:
        P = self.low.product(A)
        return (P if P.ndim == 3 else P[None]) - self.shift[:, None, None] * A.sum(axis=0)[None, None, :]

    def diagonal(self) -> np.ndarray:
        d = self.low.diagonal()
        return (d if d.ndim == 2 else d[None]) - self.shift[:, None]


def kernel_distances(K, diags: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Squared distances (m, n, c) of every sample to every centre sum_i a_ij phi_t(x_i), in every
    kernel t: k^t_ii - 2 (K^t A)_ij + (A' K^t A)_jj. One batched BLAS product (dense, or through the
    factors of a :class:`_ShiftedBank`)."""
    P = K.product(A) if isinstance(K, _ShiftedBank) else kernel_product(K, A)
    within = np.einsum("ic,tic->tc", A, P)
    dist = diags[:, :, None] - 2.0 * P + within[:, None, :]
    return np.maximum(dist, 0.0, out=dist)


def _centred(K):
    """Each kernel minus the mean of its entries (feature-space distances to centres unchanged); a
    low-rank bank as a :class:`_ShiftedBank` (the mean of F F' is ||F'1||^2 / n^2)."""
    if isinstance(K, LowRankBank):
        return _ShiftedBank(K)
    return K - K.mean(axis=(1, 2), keepdims=True)


def rmkkm_weights(h: np.ndarray, gamma: float) -> np.ndarray:
    """Eq. 20: w_t = h_t^(1/(gamma-1)) / (sum_t h_t^(gamma/(gamma-1)))^(1/gamma), so that
    sum_t w_t^gamma = 1 (computed in logs; h floored at 1e-12 max h). When every h_t is 0 (every
    sample at its centre in every kernel: constant kernels, or n = n_clusters) Eq. 20 is 0/0 and
    every kernel fits equally well: the weights are equal, m^(-1/gamma)."""
    h = np.asarray(h, dtype=np.float64)
    if not h.max() > 0:
        return np.full(h.size, float(h.size) ** (-1.0 / gamma))
    h = np.maximum(h, 1e-12 * h.max())
    logw = np.log(h) / (gamma - 1.0)
    logw -= np.logaddexp.reduce(gamma * logw) / gamma
    return np.exp(logw)


def _rmkkm_objective(e: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
    u = e @ w  # (n,) combined squared distance of each sample to its centre
    return float(np.sqrt(u).sum()), u


def _sample_weights(u: np.ndarray) -> np.ndarray:
    """Eq. 13, D_ii = 1 / (2 sqrt(u_i)), floored and divided by its maximum (module docstring)."""
    floor = 1e-12 * max(float(u.mean()), 1e-300)
    D = 0.5 / np.sqrt(np.maximum(u, floor))
    return D / D.max()


def robust_mkkm(K: np.ndarray, labels: np.ndarray, n_clusters: int, gamma: float | None, max_iter: int = 100,
                tol: float = 1e-6, centred: bool = False):
    """Algorithm 1 from an initial partition. ``gamma=None`` keeps w fixed at 1 (RKKM, Eq. 4, one
    kernel). ``centred=True`` says K is already :func:`_centred` (restarts centre once). Returns
    (labels, w, D, objective, trace, n_iter)."""
    m, n, _ = K.shape
    c = n_clusters
    # Distances to centres (columns of A sum to 1) do not change when a constant is added to a kernel;
    # centring each kernel's entries removes the cancellation in k_ii - 2 a'k_i + a'Ka for nearly
    # constant kernels (the Gaussians with t0 = 50, 100 vary by 1e-5), which otherwise adds 1e-10
    # relative noise to the objective. One copy of the bank: O(n^2 m) memory.
    K = K if centred else _centred(K)
    diags = K.diagonal() if isinstance(K, _ShiftedBank) else np.einsum("tii->ti", K).copy()
    idx = np.arange(n)
    w = np.ones(m) if gamma is None else np.full(m, float(m) ** (-1.0 / gamma))
    labels = np.asarray(labels, dtype=np.int64)
    D = np.ones(n)
    # J_0 at the initial partition with the D = I centres (Algorithm 1's start)
    A = centre_matrix(labels, c, D)
    dist = kernel_distances(K, diags, A)
    empty = np.bincount(labels, minlength=c) == 0
    if empty.any():
        labels = _reseed_empty(labels, np.where(empty[None, :], np.inf, np.tensordot(w, dist, 1)), c)
        A = centre_matrix(labels, c, D)
        dist = kernel_distances(K, diags, A)
    e = dist[:, idx, labels].T  # (n, m)
    obj, u = _rmkkm_objective(e, w)
    D = _sample_weights(u)
    trace = [obj]
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        A = centre_matrix(labels, c, D)                      # Eq. 12
        dist = kernel_distances(K, diags, A)                 # (m, n, c)
        comb = np.tensordot(w, dist, axes=1)                 # (n, c), combined kernel distances
        new = np.argmin(comb, axis=1)                        # Eq. 15
        counts = np.bincount(new, minlength=c)
        e = dist[:, idx, new].T
        if (counts == 0).any():
            new = _reseed_empty(new, comb, c)
            moved = np.flatnonzero(counts[new] == 0)         # samples now alone in a re-seeded cluster
            e[moved] = 0.0                                   # their centre is the sample itself
            log.debug("iteration %d: re-seeded %d empty cluster(s)", n_iter, moved.size)
        labels = new
        if gamma is not None:                                # Eq. 19 and 20
            u = np.maximum(e @ w, 1e-300)
            h = (e / (2.0 * np.sqrt(u))[:, None]).sum(axis=0)
            w = rmkkm_weights(h, gamma)
        obj, u = _rmkkm_objective(e, w)
        D = _sample_weights(u)                               # Eq. 13
        trace.append(obj)
        rel = (trace[-2] - obj) / max(abs(trace[-2]), 1e-300)
        log.debug("RMKKM iteration %d: objective %.12g (relative decrease %.3g)", n_iter, obj, rel)
        if rel < tol:
            break
    return labels, w, D, trace[-1], trace, n_iter


def authors_search(K: np.ndarray, n_clusters: int, gamma: float, rng, n_outer: int = 50, inner_n_init: int = 10,
                   inner_max_iter: int = 30, centred: bool = False):
    """RMKKM as the authors' public code searches (github.com/csliangdu/RMKKM; see :class:`RMKKM`).

    Every outer iteration restarts the inner robust kernel k-means on the current combined kernel
    sum_t w_t K^t from scratch (:func:`_seeded_robust_kkm`, ``inner_n_init`` starts of at most
    ``inner_max_iter`` iterations, the best by Eq. 4) instead of continuing from the last partition,
    then updates w by Eq. 19-20 at that partition and its D-weighted centres. The outer loop runs
    exactly ``n_outer`` iterations: the code's stopping test compares the labels with a reference it
    never updates, so it never fires. The result is the last iteration's, not the best one's.

    Unlike Algorithm 1 the objective is not monotone (each outer iteration starts afresh); the trace
    records Eq. 7 after every outer iteration. Returns (labels, w, D, objective, trace, n_outer).
    """
    m, n, _ = K.shape
    K = K if centred else _centred(K)
    diags = np.einsum("tii->ti", K).copy()
    idx = np.arange(n)
    w = np.full(m, float(m) ** (-1.0 / gamma))  # the code starts at 1/m; the scale changes no step
    trace = []
    for it in range(1, n_outer + 1):
        Ka = np.tensordot(w, K, axes=1)
        labels, sw = _seeded_robust_kkm(Ka, n_clusters, inner_n_init, inner_max_iter, rng)
        dist = kernel_distances(K, diags, centre_matrix(labels, n_clusters, sw))
        e = dist[:, idx, labels].T                           # (n, m) at the inner search's centres
        u = np.maximum(e @ w, 1e-300)
        w = rmkkm_weights((e / (2.0 * np.sqrt(u))[:, None]).sum(axis=0), gamma)   # Eq. 19-20
        obj, u = _rmkkm_objective(e, w)
        trace.append(obj)
        log.debug("RMKKM (authors' search) outer iteration %d: objective %.12g", it, obj)
    return labels, w, _sample_weights(u), trace[-1], trace, n_outer


class _RobustBase(BaseClusterer):
    takes_low_rank = True   # every step a product with the centre matrix and the diagonal (_ShiftedBank)
    def _restarts(self, K, gamma):
        Kc = _centred(K)  # once for all restarts

        init = getattr(self, "init", "random-partition")
        sample = init in ("sample", "matlab")
        if isinstance(K, LowRankBank):           # the summed kernel as factors: its columns and diagonal
            Ks = (K if K.ndim == 2 else K.combine(np.ones(K.n_kernels))) if sample else None
            diag = Ks.diagonal() if sample else None
        else:
            Ks = K.sum(axis=0) if sample else None   # the summed kernel (one kernel: itself)
            diag = np.diag(Ks).copy() if sample else None
        n, c = K.shape[1], self.n_clusters
        stream = None
        if init == "matlab":   # the authors' repeat random_state: its n_init draws of randsample(n, c)
            stream = replay(self.random_state, lambda s: s.randsample(n, c), self.n_init)

        def run_once(rng):  # from a random initial partition, or from sampled single-point centres
            if sample:
                centres = rng.randsample(n, c) if init == "matlab" else sample_centres(n, c, rng)
                labels0 = nearest_centres(Ks, diag, centres)
            else:
                labels0 = rng.randint(c, size=n)
            return robust_mkkm(Kc, labels0, c, gamma, int(self.max_iter), float(self.tol), centred=True)

        best = self._best_restart(run_once, lambda r: r[3], rng=stream)
        (self.labels_, self.kernel_weights_, self.sample_weights_, self.objective_, self.objective_trace_,
         self.n_iter_) = best
        return self


class RMKKM(_RobustBase):
    """Robust multiple kernel k-means (Du et al. 2015, Eq. 7, Algorithm 1; see the module docstring).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    gamma : float in (0, 1), default=0.3
        The kernel-weight exponent of Eq. 7 (the paper states 0.3; the authors' stored results that
        equal the published Table 2 used 0.4, except BA's).
    search : {"algorithm1", "authors"}, default="algorithm1"
        ``"algorithm1"``: the paper's Algorithm 1 from one random partition, stopping when Eq. 7's
        relative decrease falls below ``tol`` or after ``max_iter`` iterations.
        ``"authors"``: the search of the authors' public code (:func:`authors_search`): every one
        of exactly ``max_iter`` outer iterations (the code: 50) runs robust kernel k-means afresh on
        the current combined kernel from ``inner_n_init`` random starts (10) of at most
        ``inner_max_iter`` iterations (30), keeps the best by Eq. 4, then updates w (Eq. 19-20).
        ``tol`` is not used. About ``max_iter * inner_n_init`` times the work of one kernel k-means.
    n_init : int, default=1
        Independent runs; the one with the lowest Eq. 7 objective is kept.
    max_iter : int, default=100
        Iterations of Algorithm 1, or outer iterations of the authors' search.
    tol : float, default=1e-06
        Relative decrease of Eq. 7 below which Algorithm 1 stops.
    inner_n_init : int, default=10
        The authors' search: robust kernel k-means restarts per outer iteration.
    inner_max_iter : int, default=30
        The authors' search: iterations of each of those restarts.
    random_state : int, RandomState instance or None, default=None
        Seed of the random starts.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    kernel_weights_ : ndarray of shape (n_kernels,)
        w, with sum w^gamma = 1.
    sample_weights_ : ndarray of shape (n_samples,)
        D of Eq. 13, divided by its maximum.
    objective_ : float
        Eq. 7 at the kept run's end.
    objective_trace_ : list of float
        Eq. 7 per iteration of the kept run (non-increasing for ``"algorithm1"``).
    n_iter_ : int
    """

    cost = Cost(work_n2=6, seconds_at_1000=10, exponent=2, typical_at_1000=0.398, restarts=True)
    _parameter_constraints = {**COMMON_CONSTRAINTS, "gamma": [Interval(Real, 0, 1, closed="neither")],
                              "search": [StrOptions({"algorithm1", "authors"})], "n_init": [POSITIVE_INT],
                              "max_iter": [POSITIVE_INT], "tol": [NONNEG], "inner_n_init": [POSITIVE_INT],
                              "inner_max_iter": [POSITIVE_INT]}

    input_kind = "kernels"
    SEARCHES = ("algorithm1", "authors")

    @classmethod
    def low_rank_refusal(cls, params: dict) -> str | None:
        if params.get("search", default_params(cls).get("search")) == "authors":
            return "needs the n x n kernels with search='authors' (the combined kernel every outer iteration)"
        return None

    def __init__(self, n_clusters=8, gamma=0.3, search="algorithm1", n_init=1, max_iter=100, tol=1e-6,
                 inner_n_init=10, inner_max_iter=30, random_state=None):
        self.n_clusters = n_clusters
        self.gamma = gamma
        self.search = search
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.inner_n_init = inner_n_init
        self.inner_max_iter = inner_max_iter
        self.random_state = random_state

    #: floating-point rates (FLOP/s, one core) of the authors' search's inner products, calibrated
    #: (2026-11-26, one thread, the other core busy): 5 outer iterations on COIL20 (n = 1440, c = 20)
    #: 4.6 s, on BA (n = 1404, c = 36) 6.7 s, i.e. 27 and 32 GFLOP/s of :meth:`authors_flops`; the
    #: bound is a tenth of the typical rate
    AUTHORS_RATE = 3e10
    AUTHORS_RATE_BOUND = 3e9

    @classmethod
    def authors_flops(cls, n: int, params: dict) -> float:
        """The floating-point work of one run of the authors' search: per outer iteration,
        ``inner_max_iter`` products of the combined kernel (n x n) with the batched centre matrices
        of all ``inner_n_init`` starts (n x inner_n_init c), 2 n^2 inner_n_init c each."""
        d = default_params(cls)
        get = lambda k: int(params.get(k) or d[k])   # noqa: E731
        return 2.0 * n * n * get("max_iter") * get("inner_max_iter") * get("inner_n_init") * get("n_clusters")

    @classmethod
    def fit_seconds(cls, n: int, params: dict, typical: bool = False, input_rank: int | None = None) -> float:
        """Algorithm 1: the class's n^2 model. The authors' search: its work (:meth:`authors_flops`,
        which grows with the number of clusters: AR's 120 cost about 46 s a run) at
        :attr:`AUTHORS_RATE` (typical) or :attr:`AUTHORS_RATE_BOUND` (the bound), times ``n_init``."""
        if params.get("search", "algorithm1") != "authors":
            return super().fit_seconds(n, params, typical, input_rank)
        restarts = int(params.get("n_init") or 1)
        return restarts * cls.authors_flops(n, params) / (cls.AUTHORS_RATE if typical else cls.AUTHORS_RATE_BOUND)

    def fit(self, K, y=None):
        K = self._validate_kernel(K)
        if self.search == "algorithm1":
            return self._restarts(K, float(self.gamma))
        if isinstance(K, LowRankBank):
            raise ValueError("RMKKM's search='authors' forms the combined n x n kernel every outer iteration: "
                             "on a low-rank bank use search='algorithm1', or pass K.dense() where it fits")
        Kc = _centred(K)
        best = self._best_restart(
            lambda rng: authors_search(Kc, self.n_clusters, float(self.gamma), rng, int(self.max_iter),
                                       int(self.inner_n_init), int(self.inner_max_iter), centred=True),
            lambda r: r[3])
        (self.labels_, self.kernel_weights_, self.sample_weights_, self.objective_, self.objective_trace_,
         self.n_iter_) = best
        return self


class RKKM(_RobustBase):
    """Robust kernel k-means on one kernel (Du et al. 2015, Eq. 4): Algorithm 1 without the kernel
    weights (A by Eq. 12, Z by Eq. 15, D by Eq. 13).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    n_init : int, default=1
        Independent runs; the one with the lowest Eq. 4 objective is kept.
    max_iter : int, default=100
        Iterations per run.
    tol : float, default=1e-06
        Relative decrease of the objective below which a run stops.
    init : {"random-partition", "sample", "matlab"}, default="random-partition"
        "random-partition": uniformly random labels; "sample": n_clusters random samples as
        single-point centres, each sample to the nearest (how the authors' ``L21KKM.m`` starts, as
        their ``KernelKmeans.m`` does); "matlab": the "sample" start their script drew in repeat
        ``random_state`` (:class:`mkclust.algorithms.kmeans.KernelKMeans`).
    random_state : int, RandomState instance or None, default=None
        Seed of the random starts (with ``init="matlab"``: the authors' repeat number, an int >= 0).

    Attributes
    ----------
    labels_, sample_weights_, objective_, objective_trace_, n_iter_
        As :class:`RMKKM` (objective_ is Eq. 4).
    kernel_weights_ : ndarray of shape (1,)
        [1.0].
    """

    cost = Cost(work_n2=4, seconds_at_1000=5, exponent=2, typical_at_1000=0.0296, restarts=True)
    _parameter_constraints = {
        **COMMON_CONSTRAINTS, "n_init": [POSITIVE_INT], "max_iter": [POSITIVE_INT], "tol": [NONNEG],
        "init": [StrOptions({"random-partition", "sample", "matlab"})],
    }

    input_kind = "kernel"

    def __init__(self, n_clusters=8, n_init=1, max_iter=100, tol=1e-6, init="random-partition", random_state=None):
        self.init = init
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, K, y=None):
        K = self._validate_kernel(K)
        return self._restarts(K if isinstance(K, LowRankBank) else K[None], None)
