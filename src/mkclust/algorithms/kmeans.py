"""k-means (KM) and kernel k-means (KKM).

Kernel k-means minimises sum_i ||phi(x_i) - mu_{c(i)}||^2 with mu_c the (weighted) mean of
cluster c in feature space. With E the n x c matrix E_jc = s_j [j in c] / S_c (s the sample
weights, S_c their sum in cluster c), every squared distance of every sample to every centre is

    dist(i, c) = K_ii - 2 (K E)_ic + (E' K E)_cc,

one (n, n) x (n, c) BLAS product per iteration (:func:`kernel_product`): O(n^2 c), no loop over samples.
"""

from __future__ import annotations

import logging

import numpy as np
from sklearn import config_context
from sklearn.cluster import KMeans
from sklearn.metrics import pairwise_distances_argmin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from mkclust._validation import check_features
from mkclust.algorithms._matlab import replay
from mkclust.algorithms.base import BaseClusterer, COMMON_CONSTRAINTS, Cost, POSITIVE_INT, StrOptions
from mkclust.lowrank import LowRankBank

log = logging.getLogger(__name__)


def centre_matrix(labels: np.ndarray, n_clusters: int, sample_weight: np.ndarray) -> np.ndarray:
    """The (n, c) weights that make each cluster's (weighted) mean, a_ij = z_ij s_i / sum_i z_ij s_i (a
    zero column for an empty cluster): K A holds every sample's kernel against every mean (RMKKM's A
    of Eq. 12, with s its D)."""
    n = labels.size
    S = np.bincount(labels, weights=sample_weight, minlength=n_clusters)
    A = np.zeros((n, n_clusters))
    A[np.arange(n), labels] = sample_weight / np.where(S > 0, S, 1.0)[labels]
    return A


def kernel_product(K: np.ndarray, A: np.ndarray) -> np.ndarray:
    """K A for a kernel K (n, n), or for each kernel of a bank (m, n, n) (then (m, n, c)), computed as
    (A' K')': the same products, each entry one row of K against one column of A, which BLAS runs up
    to twice as fast for a thin A, reading K in the order it is stored (one core, 6 kernels of 1797
    samples, 10 columns: 17 ms against 33 ms; benchmarks/bench_core.py, ``kernel_product``)."""
    if isinstance(K, LowRankBank):
        return K.product(A)
    if K.ndim == 2:
        return (A.T @ K.T).T
    m, n, _ = K.shape
    if K.flags.c_contiguous:
        return (A.T @ K.reshape(m * n, n).T).T.reshape(m, n, -1)
    return np.matmul(K, A)


def kernel_diagonal(K) -> np.ndarray:
    """The diagonal of one kernel, dense or low-rank (a copy)."""
    return K.diagonal() if isinstance(K, LowRankBank) else np.diag(K).copy()


def kernel_columns(K, idx) -> np.ndarray:
    """K[:, idx] of one kernel, dense or low-rank."""
    return K.columns(idx) if isinstance(K, LowRankBank) else K[:, idx]


def cluster_distances(K: np.ndarray, diag: np.ndarray, labels: np.ndarray, n_clusters: int,
                      sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Squared feature-space distances (n, c) of every sample to every cluster's weighted mean.
    An empty cluster (or one of zero total weight) gets distance +inf."""
    n = K.shape[0]
    w = np.ones(n) if sample_weight is None else sample_weight
    E = centre_matrix(labels, n_clusters, w)
    return _centre_distances(diag, E, kernel_product(K, E), labels, w)


def _centre_distances(diag: np.ndarray, E: np.ndarray, KE: np.ndarray, labels: np.ndarray, w: np.ndarray):
    """:func:`cluster_distances` from the centre matrix E and its product K E."""
    within = np.einsum("ic,ic->c", E, KE)
    dist = diag[:, None] - 2.0 * KE + within[None, :]
    np.maximum(dist, 0.0, out=dist)
    dist[:, np.bincount(labels, weights=w, minlength=E.shape[1]) <= 0] = np.inf
    return dist


def _reseed_empty(labels: np.ndarray, dist: np.ndarray, n_clusters: int) -> np.ndarray:
    """Give every empty cluster the sample farthest from its current centre, taken from a cluster
    that keeps at least one member (as scikit-learn's k-means relocates empty clusters)."""
    counts = np.bincount(labels, minlength=n_clusters)
    empty = np.flatnonzero(counts == 0)
    if empty.size == 0:
        return labels
    labels = labels.copy()
    own = dist[np.arange(labels.size), labels]
    own = np.where(np.isfinite(own), own, 0.0)
    for c in empty:  # at most n_clusters iterations, each O(n)
        movable = counts[labels] > 1
        i = int(np.argmax(np.where(movable, own, -1.0)))
        counts[labels[i]] -= 1
        labels[i] = c
        counts[c] = 1
        own[i] = -1.0
    return labels


def kmeanspp_kernel(K: np.ndarray, diag: np.ndarray, n_clusters: int, rng) -> np.ndarray:
    """k-means++ seeding in feature space (Arthur and Vassilvitskii 2007) with scikit-learn's greedy
    variant (2 + ln k candidates per step, keep the one that lowers the potential most). Distances
    d(i, j) = K_ii + K_jj - 2 K_ij, computed a kernel column block at a time. Returns the indices of
    the samples chosen as centres."""
    n = K.shape[0]
    n_trials = 2 + int(np.log(n_clusters))
    centers = [int(rng.randint(n))]
    closest = np.maximum(diag + diag[centers[0]] - 2.0 * kernel_columns(K, [centers[0]])[:, 0], 0.0)
    for _ in range(1, n_clusters):
        pot = closest.sum()
        if pot <= 0:  # all remaining points coincide with centres: pick any unused sample
            rest = np.setdiff1d(np.arange(n), centers)
            centers.append(int(rng.choice(rest)))
            continue
        cand = np.searchsorted(np.cumsum(closest), rng.uniform(size=n_trials) * pot)
        cand = np.minimum(cand, n - 1)
        dc = np.maximum(diag[:, None] + diag[cand][None, :] - 2.0 * kernel_columns(K, cand), 0.0)
        dc = np.minimum(dc, closest[:, None])
        best = int(np.argmin(dc.sum(axis=0)))
        centers.append(int(cand[best]))
        closest = dc[:, best]
    return np.asarray(centers)


def kernel_kmeans(K: np.ndarray, labels: np.ndarray, n_clusters: int, max_iter: int = 300,
                  sample_weight: np.ndarray | None = None, diag: np.ndarray | None = None):
    """Lloyd iterations of (weighted) kernel k-means from an initial partition.

    Returns (labels, objective, objective_trace, n_iter). The trace holds the objective of each
    partition visited, sum_i s_i dist(i, c(i)); it never increases. Stops when no label changes.
    (:func:`kernel_kmeans_lockstep` with one start.)
    """
    return kernel_kmeans_lockstep(K, [labels], n_clusters, max_iter, diag, sample_weight)[0]


def kernel_kmeans_lockstep(K, starts: list, n_clusters: int, max_iter: int = 300, diag: np.ndarray | None = None,
                           sample_weight: np.ndarray | None = None, bounds: bool = True):
    """:func:`kernel_kmeans` from each initial partition of ``starts``, all advancing together: every
    round one product of K with the centre matrices of the restarts still moving, side by side (for a
    low-rank kernel each product reads all n x R factors, whatever its width, so ten 10-column
    products cost nearly ten times one of 100 columns). Each restart takes the steps it takes alone
    (the same labels, re-seeding and stopping test); only the width of the product differs, which may
    change BLAS's order of summation and so the objectives' last digits (1e-16 relative, tested).
    Returns the list of :func:`kernel_kmeans`'s results, in the order of ``starts``.

    On the factors of a low-rank kernel (above :data:`mkclust.lowrank.DENSE_N` samples, or wherever the
    factors are fewer than the samples) the iterations after the first exact distances skip, with
    ``bounds`` (the default), the samples whose cluster provably stays
    (:func:`mkclust.algorithms._kkm_bounds.bounded_lloyd`: the same steps; MNIST's 20,000 digits,
    10 restarts, 12 kernels of rank ~1,000 in float32: 162 CPU s plain, 104 s bounded; n = 70,000: 633 s
    plain, 274 s bounded, the same labels; 356 s with the distances measured from the factors' mean
    rows, 2026-12-05)."""
    diag = kernel_diagonal(K) if diag is None else diag
    n, c = K.shape[0], n_clusters
    w = np.ones(n) if sample_weight is None else sample_weight
    idx = np.arange(n)

    def distances(labs):                   # cluster_distances for every partition, one product
        Es = [centre_matrix(lab, c, w) for lab in labs]
        P = Es[0] if len(Es) == 1 else np.hstack(Es)
        P = kernel_product(K, P)
        return [_centre_distances(diag, E, P[:, j * c:(j + 1) * c], lab, w) for j, (E, lab) in enumerate(zip(Es, labs))]

    labels = [np.asarray(lab, dtype=np.int64) for lab in starts]
    dist = distances(labels)
    labels = [_reseed_empty(lab, d, c) for lab, d in zip(labels, dist)]
    dist = distances(labels)
    if bounds and isinstance(K, LowRankBank) and K.ndim == 2 and not K._small():   # Hamerly's bounds
        from mkclust.algorithms._kkm_bounds import bounded_lloyd, factor_parts
        parts = factor_parts(K)
        return [bounded_lloyd(K, lab, d, c, max_iter, w, lambda lab: distances([lab])[0], _reseed_empty, parts)
                for lab, d in zip(labels, dist)]
    traces = [[float(w @ d[idx, lab])] for lab, d in zip(labels, dist)]
    n_iter = [0] * len(labels)
    changed = [0] * len(labels)
    active = list(range(len(labels)))
    for it in range(1, max_iter + 1):
        moving = []
        for r in active:
            new = _reseed_empty(np.argmin(dist[r], axis=1), dist[r], c)
            if np.array_equal(new, labels[r]):
                n_iter[r] = it - 1
                continue
            changed[r] = int(np.count_nonzero(new != labels[r]))
            labels[r], n_iter[r] = new, it
            moving.append(r)
        active = moving
        if not active:
            break
        for r, d in zip(active, distances([labels[r] for r in active])):
            dist[r] = d
            traces[r].append(float(w @ d[idx, labels[r]]))
            log.debug("kernel k-means iteration %d: objective %.10g, %d labels changed", it, traces[r][-1], changed[r])
    return [(labels[r], traces[r][-1], traces[r], n_iter[r]) for r in range(len(labels))]


def sample_centres(n: int, c: int, rng) -> np.ndarray:
    """c distinct random sample indices: the initial single-point centres of the ``"sample"`` start."""
    return rng.choice(n, size=c, replace=False)


def nearest_centres(K: np.ndarray, diag: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Each sample's nearest single-point centre in feature space: argmin_j K_ii + K_cc - 2 K_ic."""
    d = diag[:, None] + diag[centers][None, :] - 2.0 * kernel_columns(K, centers)
    return np.argmin(d, axis=1)


class KernelKMeans(BaseClusterer):
    """Kernel k-means on a precomputed kernel (KKM in the papers' tables).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    init : {"k-means++", "sample", "random", "random-partition"} or array-like, default="k-means++"
        "k-means++": seeding in feature space; "sample": n_clusters distinct random samples as
        single-point centres, each sample to the nearest (the default start ``'sample'`` of the
        RMKKM authors' ``KernelKmeans.m``, which their baseline scripts call, and of ``L21KKM.m``);
        "random": the same start under scikit-learn's name; "random-partition": uniformly random
        labels (as the authors' ``MKKM_multi_kernel.m`` starts); "matlab": the "sample" start the
        authors' scripts actually drew, ``randsample`` replayed on MATLAB's default stream
        (:mod:`mkclust.algorithms._matlab`), ``random_state`` the repeat number (0-19 in their
        scripts), restarts the draws that follow; an array: n_clusters sample indices used as the
        initial centres.
    n_init : int, default=10
        Restarts; the run with the lowest objective is kept.
    max_iter : int, default=300
        Lloyd iterations per restart (stops earlier when no label changes).
    random_state : int, RandomState instance or None, default=None
        Seed of the starts (with ``init="matlab"``: the authors' repeat number, an int >= 0).

    Empty clusters are re-seeded with the sample farthest from its centre (never a crash or NaN).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    objective_ : float
        Sum of squared feature-space distances to the centres.
    objective_trace_ : list of float
        Of the kept restart.
    n_iter_ : int
    init_centers_ : ndarray of shape (n_clusters,)
        Sample indices of the kept restart's initial centres, when seeded by centres.
    """

    cost = Cost(work_n2=4, seconds_at_1000=2, exponent=2, typical_at_1000=0.0216, restarts=True)
    takes_low_rank = True
    _parameter_constraints = {
        **COMMON_CONSTRAINTS, "init": [StrOptions({"k-means++", "random", "sample", "matlab", "random-partition"}),
                                       "array-like"],
        "n_init": [POSITIVE_INT], "max_iter": [POSITIVE_INT],
    }

    def __init__(self, n_clusters=8, init="k-means++", n_init=10, max_iter=300, random_state=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.random_state = random_state

    def _initial_labels(self, K, diag, rng):
        n, c = K.shape[0], self.n_clusters
        if isinstance(self.init, str):
            if self.init == "random-partition":
                return rng.randint(c, size=n), None
            if self.init == "k-means++":
                centers = kmeanspp_kernel(K, diag, c, rng)
            elif self.init in ("random", "sample"):
                centers = sample_centres(n, c, rng)
            elif self.init == "matlab":
                centers = rng.randsample(n, c)
            else:
                raise ValueError(f"init must be 'k-means++', 'random', 'sample', 'matlab', 'random-partition' or an "
                                 f"array of {c} sample indices, got {self.init!r}")
        else:
            centers = np.asarray(self.init, dtype=np.int64)
            if centers.shape != (c,) or centers.min() < 0 or centers.max() >= n:
                raise ValueError(f"init as an array must hold {c} sample indices in [0, {n})")
        return nearest_centres(K, diag, centers), centers

    def fit(self, K, y=None):
        return self._fit_checked(self._validate_kernel(K))

    def _fit_checked(self, K):
        """fit on a kernel already validated (one (n, n) float array): callers inside other
        estimators skip the O(n^2) checks of each restart); dense or low-rank."""
        diag = kernel_diagonal(K)

        def run_once(rng):
            labels0, centers = self._initial_labels(K, diag, rng)
            return (*kernel_kmeans(K, labels0, self.n_clusters, self.max_iter, diag=diag), centers)

        n_init = 1 if not isinstance(self.init, str) and int(self.n_init) >= 1 else None
        stream = None
        if isinstance(self.init, str) and self.init == "matlab":   # repeat random_state's n_init draws
            stream = replay(self.random_state, lambda s: s.randsample(K.shape[0], self.n_clusters), self.n_init)
        if isinstance(K, LowRankBank):
            # the restarts in lockstep (kernel_kmeans_lockstep): the starts drawn from the stream in
            # the order the restarts one by one draw them (Lloyd draws nothing), the first of the
            # lowest objective kept, as _best_restart keeps it
            rng = check_random_state(self.random_state) if stream is None else stream
            inits = [self._initial_labels(K, diag, rng) for _ in range(int(n_init or self.n_init))]
            runs = kernel_kmeans_lockstep(K, [lab for lab, _ in inits], self.n_clusters, self.max_iter, diag)
            best = min(range(len(runs)), key=lambda r: runs[r][1])
            labels, obj, trace, n_iter = runs[best]
            centers = inits[best][1]
        else:
            labels, obj, trace, n_iter, centers = self._best_restart(run_once, lambda r: r[1], n_init, stream)
        self.labels_, self.objective_, self.objective_trace_, self.n_iter_, self.init_centers_ = (
            labels, obj, trace, n_iter, centers)
        # for predict: the squared norm of each cluster's mean in feature space, (1/|C|^2) sum K_ij
        E = centre_matrix(labels, self.n_clusters, np.ones(K.shape[0]))
        self._centre_sqnorms = np.einsum("ic,ic->c", E, kernel_product(K, E))
        self._members = E
        return self

    def predict(self, K_new):
        """The nearest cluster mean in feature space of new samples, from their kernel against the
        training samples, ``K_new`` (n_new, n_train) = k(x_new, x_train): argmin_c
        -2 (1/|C|) sum_{i in C} k(x, x_i) + (1/|C|^2) sum_{i, j in C} k(x_i, x_j) (k(x, x) is the
        same for every cluster). ``predict`` of the training kernel gives ``labels_`` at convergence."""
        check_is_fitted(self, "labels_")
        K_new = check_features(K_new, name="K_new")
        if K_new.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {K_new.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input (the kernel between new and the "
                             f"{self.n_features_in_} training samples)")
        dist = self._centre_sqnorms[None, :] - 2.0 * (K_new @ self._members)
        dist[:, np.bincount(self.labels_, minlength=self.n_clusters) == 0] = np.inf
        return np.argmin(dist, axis=1).astype(np.int64)


class KMeansBaseline(BaseClusterer):
    """k-means on the data matrix (KM in the papers' tables): scikit-learn's KMeans (Lloyd) with
    ``n_init`` restarts keeping the lowest inertia.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    init : {"k-means++", "random"} or array-like, default="k-means++"
        "random" draws the initial centres among the samples at random, as the MKC paper's KM
        baseline does; an array gives the centres.
    n_init : int, default=10
        Restarts; the lowest inertia is kept.
    max_iter : int, default=300
        Lloyd iterations per restart.
    random_state : int, RandomState instance or None, default=None
        Seed of the starts.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    objective_ : float
        The inertia.
    n_iter_ : int
    """

    cost = Cost(work_n2=0, seconds_at_1000=3, exponent=1, typical_at_1000=0.00657, restarts=True)
    _parameter_constraints = {**COMMON_CONSTRAINTS, "init": [StrOptions({"k-means++", "random"}), "array-like"],
                              "n_init": [POSITIVE_INT], "max_iter": [POSITIVE_INT]}

    input_kind = "features"

    def __init__(self, n_clusters=8, init="k-means++", n_init=10, max_iter=300, random_state=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X, y=None):
        X = self._validate_features(X)
        with config_context(assume_finite=True):     # checked just above: not again inside KMeans
            km = KMeans(n_clusters=self.n_clusters, init=self.init, n_init=self.n_init,
                        max_iter=self.max_iter, random_state=self.random_state).fit(X)
        self.labels_ = km.labels_.astype(np.int64)
        self.cluster_centers_ = km.cluster_centers_
        self.objective_ = float(km.inertia_)
        self.n_iter_ = int(km.n_iter_)
        return self

    def predict(self, X):
        """The nearest centre of ``cluster_centers_`` (Euclidean) of each row of X, as KMeans.predict."""
        check_is_fitted(self, "cluster_centers_")
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return pairwise_distances_argmin(X, self.cluster_centers_).astype(np.int64)
