"""Greedy unsupervised multiple kernel learning (GUMKL; Tzortzis and Likas, SETN 2012).

The composite kernel is K~ = sum_v w_v^p K_v with w >= 0, sum_v w_v = 1, p >= 1 (Eq. 4), and the
objective the intra-cluster variance in its feature space around medoids (Eq. 5, 6):

    E(C, w) = sum_v w_v^p E_v(C),   E_v(C) = sum_i ||phi_v(x_i) - phi_v(m_{c(i)})||^2.

Algorithm 1, from uniform weights: build K~; pick M medoids greedily (Sect. 2.2, Eq. 3); run kernel
k-medoids (Eq. 2) from them; update the weights by Eq. 7 (p > 1) or Eq. 8 (p = 1); stop when E
changes by less than ``tol`` relative to its value (the paper's |E^(t) - E^(t-1)| < epsilon) or after
``max_iter`` iterations. The medoids are re-initialised greedily at every iteration, as the paper
does, so E can rise from one iteration to the next (the paper says so); that is reported with a
:class:`GUMKLObjectiveIncrease` warning and recorded in ``objective_increases_``, never an error.
``p = inf`` is the paper's uniform baseline: one pass with w_v = 1/V, no weight update. The result is
the iteration with the lowest E (``best_iteration_``): with re-initialised medoids the last one
need not be the best, and on our data the iterations can cycle until ``max_iter`` (our choice; the
paper returns the last).

Refinement (Sect. 3.2, used for every reported result): kernel k-means on the final composite
kernel, started from GUMKL's partition. ``labels_`` are the refined labels when ``refine=True``
(default) and GUMKL's own otherwise; both are kept (``labels_unrefined_``).

Greedy initialisation, vectorised: with d_i the squared distance of x_i to its current medoid and
Dm the (n, n) squared feature-space distances, the gain of every candidate j at once is
b = sum_i max(d_i - Dm_ij, 0) (Eq. 3), O(n^2) per added medoid. The first medoid is the data set's
medoid, argmin_j sum_i Dm_ij. Ties go to the lowest index, so the result is deterministic.
"""

from __future__ import annotations

from numbers import Real

import logging
import math
import warnings

import numpy as np

from mkclust.algorithms.base import (
    BaseClusterer, COMMON_CONSTRAINTS, Cost, Interval, NONNEG, POSITIVE_INT, StrOptions,
)
from mkclust.algorithms.kmeans import kernel_kmeans

log = logging.getLogger(__name__)


class GUMKLObjectiveIncrease(RuntimeWarning):
    """Algorithm 1's objective rose between iterations (possible: medoids are re-initialised)."""


def sq_distances(K: np.ndarray) -> np.ndarray:
    """Squared feature-space distances K_ii - 2 K_ij + K_jj (Eq. 1), clipped at 0."""
    d = np.diag(K)
    Dm = d[:, None] - 2.0 * K + d[None, :]
    return np.maximum(Dm, 0.0, out=Dm)


def greedy_medoids(Dm: np.ndarray, n_clusters: int) -> np.ndarray:
    """Sect. 2.2: the data set's medoid, then repeatedly the point of largest gain b_j (Eq. 3)."""
    n = Dm.shape[0]
    medoids = [int(np.argmin(Dm.sum(axis=0)))]
    d = Dm[:, medoids[0]].copy()
    for _ in range(1, n_clusters):
        gain = np.maximum(d[:, None] - Dm, 0.0).sum(axis=0)
        gain[medoids] = -1.0  # a chosen medoid is never chosen again (its gain is 0 anyway)
        j = int(np.argmax(gain))
        medoids.append(j)
        np.minimum(d, Dm[:, j], out=d)
    if len(set(medoids)) != n_clusters or n < n_clusters:
        raise ValueError(f"cannot pick {n_clusters} distinct medoids from {n} points")
    return np.asarray(medoids)


def kernel_kmedoids(Dm: np.ndarray, medoids: np.ndarray, max_iter: int = 100):
    """k-medoids on squared distances (Eq. 2): assign to the nearest medoid, then make each
    cluster's medoid the member with the least total distance to the other members (one GEMM
    Dm Z gives every candidate's cost for every cluster). Returns (labels, medoids, trace)."""
    n, c = Dm.shape[0], medoids.size
    medoids = medoids.copy()
    labels = np.argmin(Dm[:, medoids], axis=1)
    labels[medoids] = np.arange(c)  # a medoid belongs to its own cluster (ties with duplicates)
    trace = [float(Dm[np.arange(n), medoids[labels]].sum())]
    for _ in range(max_iter):
        Z = np.zeros((n, c))
        Z[np.arange(n), labels] = 1.0
        cost = Dm @ Z  # cost[j, k] = sum of distances from j to the members of cluster k
        cost[Z == 0] = np.inf  # a medoid is a member of its cluster
        new_medoids = np.argmin(cost, axis=0)
        new_labels = np.argmin(Dm[:, new_medoids], axis=1)
        new_labels[new_medoids] = np.arange(c)
        obj = float(Dm[np.arange(n), new_medoids[new_labels]].sum())
        if np.array_equal(new_medoids, medoids) and np.array_equal(new_labels, labels):
            break
        medoids, labels = new_medoids, new_labels
        trace.append(obj)
    return labels, medoids, trace


def intra_cluster_variances(K: np.ndarray, labels: np.ndarray, medoids: np.ndarray) -> np.ndarray:
    """E_v of Eq. 6 for every kernel v: sum_i K^v_ii - 2 K^v_{i,l} + K^v_{l,l}, l = medoid of i."""
    n = labels.size
    m = medoids[labels]
    diag = np.einsum("vii->vi", K)
    return diag.sum(axis=1) - 2.0 * K[:, np.arange(n), m].sum(axis=1) + diag[:, m].sum(axis=1)


def gumkl_weights(E: np.ndarray, p: float) -> np.ndarray:
    """Eq. 7 (p > 1): w_v = 1 / sum_v' (E_v / E_v')^(1/(p-1)); Eq. 8 (p = 1): all weight on the
    kernel of least intra-cluster variance; p = inf: uniform."""
    V = E.size
    if math.isinf(p):
        return np.full(V, 1.0 / V)
    if p == 1.0:
        w = np.zeros(V)
        w[int(np.argmin(E))] = 1.0
        return w
    E = np.maximum(E, 1e-300)
    ratios = (E[:, None] / E[None, :]) ** (1.0 / (p - 1.0))
    return 1.0 / ratios.sum(axis=1)


def mixing_coefficients(w: np.ndarray, p: float) -> np.ndarray:
    """The coefficients w_v^p of Eq. 4 scaled to sum 1 (p = inf: w itself), computed in logs:
    w_v^p underflows for large p (0.2^500 = 0 in float64), while its normalised form stays exact.
    The scale does not change any partition (medoids, k-medoids and kernel k-means are invariant to
    a positive factor on the composite kernel).

    As p grows, Eq. 7's w tends to uniform, but the coefficients do not: with a = 1 / (p - 1),
    log w_v = -log V - a (log E_v - mean log E) + O(a^2), so p log w_v tends to a constant minus
    log E_v and the coefficients tend to (1 / E_v) / sum_v' (1 / E_v'): large-p GUMKL weights each
    kernel by its inverse intra-cluster variance, not uniformly (the paper's p = inf baseline)."""
    if math.isinf(p):
        return np.asarray(w, dtype=np.float64)
    with np.errstate(divide="ignore"):
        logc = p * np.log(np.asarray(w, dtype=np.float64))
    logc -= logc.max()
    c = np.exp(logc)
    return c / c.sum()


def log_objective(w: np.ndarray, E: np.ndarray, p: float) -> float:
    """log of E(C, w) = sum_v w_v^p E_v (Eq. 5), without forming w_v^p (see :func:`mixing_coefficients`)."""
    with np.errstate(divide="ignore"):
        terms = (np.log(w) if math.isinf(p) else p * np.log(w)) + np.log(np.maximum(E, 1e-300))
    top = terms.max()
    return float(top + np.log(np.exp(terms - top).sum()))


class GUMKL(BaseClusterer):
    """Greedy unsupervised MKL (see the module docstring).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    p : float >= 1 or "inf", default=2.0
        The weight exponent; ``float("inf")`` or ``"inf"``: uniform weights, one pass.
    refine : bool, default=True
        Run kernel k-means on the final composite kernel (the paper's reported results).
    max_iter : int, default=30
        Algorithm 1's iteration cap.
    tol : float, default=1e-06
        Algorithm 1 stops when |E_t - E_{t-1}| <= tol |E_{t-1}|.
    kmedoids_max_iter : int, default=100
        Iterations of each k-medoids run.
    random_state : None, default=None
        Accepted for the common interface; GUMKL is deterministic.

    Attributes
    ----------
    labels_, labels_unrefined_ : ndarray of shape (n_samples,)
        With and without the final kernel k-means.
    kernel_weights_ : ndarray of shape (n_kernels,)
        w, summing to 1.
    mixing_weights_ : ndarray of shape (n_kernels,)
        w^p scaled to sum 1: the composite kernel's coefficients (:func:`mixing_coefficients`).
    medoids_ : ndarray of shape (n_clusters,)
    objective_ : float
        E of Eq. 5 at the kept iteration's clusters and weights (it underflows to 0 for very large p).
    log_objective_ : float
        Its log, always finite.
    best_iteration_, n_iter_ : int
    objective_trace_ : list of float
        Per Algorithm 1 iteration.
    kmedoids_trace_ : list of float
        Of the last k-medoids run (non-increasing).
    objective_increases_ : int
    intra_cluster_variances_ : ndarray of shape (n_kernels,)
        E_v per kernel.
    """

    cost = Cost(work_n2=6, seconds_at_1000=10, exponent=2, typical_at_1000=0.0942)
    _parameter_constraints = {**COMMON_CONSTRAINTS, "p": [Interval(Real, 1, None, closed="both"), StrOptions({"inf"})],
                              "max_iter": [POSITIVE_INT], "kmedoids_max_iter": [POSITIVE_INT], "tol": [NONNEG],
                              "refine": ["boolean"]}

    input_kind = "kernels"

    def __init__(self, n_clusters=8, p=2.0, refine=True, max_iter=30, tol=1e-6, kmedoids_max_iter=100,
                 random_state=None):
        self.n_clusters = n_clusters
        self.p = p
        self.refine = refine
        self.max_iter = max_iter
        self.tol = tol
        self.kmedoids_max_iter = kmedoids_max_iter
        self.random_state = random_state

    def fit(self, K, y=None):
        K = self._validate_kernel(K)
        p = float(self.p)   # >= 1 or inf (_parameter_constraints)
        V = K.shape[0]

        w = np.full(V, 1.0 / V)
        trace, log_trace, increases, best = [], [], 0, None
        n_iter = 0
        for n_iter in range(1, 1 + (1 if math.isinf(p) else int(self.max_iter))):
            Dm = sq_distances(np.tensordot(mixing_coefficients(w, p), K, axes=1))
            medoids = greedy_medoids(Dm, self.n_clusters)
            labels, medoids, km_trace = kernel_kmedoids(Dm, medoids, int(self.kmedoids_max_iter))
            E = intra_cluster_variances(K, labels, medoids)
            w = gumkl_weights(E, p)
            lobj = log_objective(w, E, p)  # compared in logs: E itself underflows for large p
            trace.append(math.exp(lobj))
            log_trace.append(lobj)
            if best is None or lobj < best[0]:
                best = (lobj, labels, medoids, E, w, n_iter)
            log.debug("GUMKL iteration %d: objective %.10g, weights %s", n_iter, trace[-1], np.round(w, 4).tolist())
            if len(trace) > 1:
                if lobj > log_trace[-2] + 1e-12:
                    increases += 1
                    # the log objective: E itself underflows to 0 for large p, and "from 0 to 0" says nothing
                    warnings.warn(f"GUMKL objective rose from {trace[-2]:.6g} to {trace[-1]:.6g} "
                                  f"(log {log_trace[-2]:.10g} to {lobj:.10g}) at iteration "
                                  f"{n_iter} (the greedy re-initialisation can do this, as the paper notes)",
                                  GUMKLObjectiveIncrease, stacklevel=2)
                if abs(math.expm1(lobj - log_trace[-2])) <= float(self.tol):
                    break
        lobj, labels, medoids, E, w, best_iter = best
        obj = math.exp(lobj)
        self.mixing_weights_ = mixing_coefficients(w, p)
        Kc = np.tensordot(self.mixing_weights_, K, axes=1)
        self.labels_unrefined_ = labels.astype(np.int64)
        if self.refine:
            refined, *_ = kernel_kmeans(Kc, labels, self.n_clusters)
            self.labels_ = refined.astype(np.int64)
        else:
            self.labels_ = self.labels_unrefined_
        self.kernel_weights_ = w
        self.medoids_ = medoids
        self.intra_cluster_variances_ = E
        self.objective_ = obj
        self.log_objective_ = lobj
        self.best_iteration_ = best_iter
        self.objective_trace_ = trace
        self.kmedoids_trace_ = km_trace
        self.objective_increases_ = increases
        self.n_iter_ = n_iter
        return self
