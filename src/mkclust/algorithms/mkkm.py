"""Multiple kernel k-means, MKKM (Huang, Chuang and Chen, IEEE TFS 2012), the baseline of the RMKKM
paper's Table 2, as the RMKKM authors' public copy of it (``MKKM.m``) runs it. It shares the kernel
distances of :mod:`mkclust.algorithms.rmkkm` (one batched product per iteration, no loop over
samples)."""

from __future__ import annotations

import logging

import numpy as np

from mkclust.algorithms._matlab import replay
from mkclust.algorithms.base import BaseClusterer, COMMON_CONSTRAINTS, Cost, NONNEG, POSITIVE_INT, StrOptions
from mkclust.algorithms.kmeans import _reseed_empty, centre_matrix
from mkclust.algorithms.rmkkm import _centred, kernel_distances
from mkclust.lowrank import LowRankBank

log = logging.getLogger(__name__)


def _inverse_weights(Dp: np.ndarray) -> np.ndarray:
    """w_t proportional to 1 / D_t, summing to 1 (D_t floored at 1e-12 of the largest); uniform when
    every sample sits at its centre in every kernel (every kernel fits equally)."""
    if Dp.max() <= 0:
        return np.full(Dp.size, 1.0 / Dp.size)
    inv = 1.0 / np.maximum(Dp, 1e-12 * Dp.max())
    return inv / inv.sum()


class MKKM(BaseClusterer):
    """Multiple kernel k-means (Huang, Chuang, Chen 2012, hard version), as the RMKKM
    authors' public copy of it implements it: minimise sum_p w_p^2 D_p(Z) over the partition Z and w >= 0 with
    sum_p w_p = 1, D_p the within-cluster distortion sum_i ||phi_p(x_i) - mu_p,z_i||^2 in kernel p
    (centres the cluster means in that kernel's space). Each iteration: one assignment step on the
    combined distances sum_p w_p^2 dist_p (the kernel k-means step on the combined kernel
    sum_p w_p^2 K_p), then the closed-form w_p = (1/D_p) / sum_q (1/D_q). Both steps are exact
    minimisations, so the objective never increases. Starts from a random partition and uniform
    weights; stops when the objective changes by less than ``tol`` (absolute, 1e-5 as in the code)
    or after ``max_iter`` (100) iterations.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    n_init : int, default=1
        Independent runs from random partitions; the one with the lowest objective is kept.
    max_iter : int, default=100
        Iterations per run.
    tol : float, default=1e-05
        Absolute change of the objective below which a run stops (the authors' code's).
    init : {"random-partition", "matlab"}, default="random-partition"
        "random-partition": uniformly random labels; "matlab": the partition the authors'
        ``MKKM_multi_kernel.m`` drew in repeat ``random_state`` (``rand(n, c)`` on MATLAB's default
        stream, each row to its largest entry; :mod:`mkclust.algorithms._matlab`).
    steps : {"exact", "authors"}, default="exact"
        "exact": every step an exact minimisation from uniform weights, an emptied cluster re-seeded
        with the farthest sample (the objective never increases); "authors": ``MKKM.m``'s steps, which
        change results where clusters empty (COIL20: 18.5 of 20 clusters left on average): the first
        assignment weighs the kernels by the start partition (w_t proportional to 1 / D_t), and an
        empty cluster keeps the feature-space origin as its centre (distance k_ii, its "+ 1"), so it
        usually stays empty.
    random_state : int, RandomState instance or None, default=None
        Seed of the random partitions (with ``init="matlab"``: the authors' repeat number, an int >= 0).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    kernel_weights_ : ndarray of shape (n_kernels,)
        w, summing to 1.
    objective_ : float
    objective_trace_ : list of float
        The objective per iteration of the kept run (non-increasing with ``steps="exact"``; with
        ``steps="authors"`` as ``MKKM.m`` computes it, not guaranteed to decrease).
    n_iter_ : int
    """

    cost = Cost(work_n2=6, seconds_at_1000=10, exponent=2, typical_at_1000=0.314, restarts=True)
    _parameter_constraints = {
        **COMMON_CONSTRAINTS, "n_init": [POSITIVE_INT], "max_iter": [POSITIVE_INT], "tol": [NONNEG],
        "init": [StrOptions({"random-partition", "matlab"})], "steps": [StrOptions({"exact", "authors"})],
    }

    input_kind = "kernels"
    takes_low_rank = True
    low_rank_copies = 1   # the factors centred

    def __init__(self, n_clusters=8, n_init=1, max_iter=100, tol=1e-5, init="random-partition", steps="exact",
                 random_state=None):
        self.n_clusters = n_clusters
        self.init = init
        self.steps = steps
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _one(self, K, diags, labels, raw_diags):
        if self.steps == "authors":
            return self._authors(K, diags, labels, raw_diags)
        m, n, _ = K.shape
        c, idx = self.n_clusters, np.arange(n)
        ones = np.ones(n)
        dist = kernel_distances(K, diags, centre_matrix(labels, c, ones))
        Dp = dist[:, idx, labels].sum(axis=1)
        w = np.full(m, 1.0 / m)
        trace = [float((w**2) @ Dp)]
        n_iter = 0
        for n_iter in range(1, int(self.max_iter) + 1):
            comb = np.tensordot(w**2, dist, axes=1)
            comb[:, np.bincount(labels, minlength=c) == 0] = np.inf
            labels = _reseed_empty(np.argmin(comb, axis=1), comb, c)
            dist = kernel_distances(K, diags, centre_matrix(labels, c, ones))
            Dp = dist[:, idx, labels].sum(axis=1)
            w = _inverse_weights(Dp)
            trace.append(float((w**2) @ Dp))
            log.debug("MKKM iteration %d: objective %.12g", n_iter, trace[-1])
            if abs(trace[-2] - trace[-1]) < float(self.tol):
                break
        return labels, w, trace[-1], trace, n_iter

    def _authors(self, K, diags, labels, raw_diags):
        """``MKKM.m``'s loop: from the current partition the weights, the objective sum_t w_t^2 D_t,
        then the assignment; it stops after the assignment once the objective changed by less than
        ``tol``. An empty cluster's centre is the origin of the (uncentred) kernel's feature space: its
        distance k_ii (the code's ``+ 1`` for a normalised kernel, its indicator column divided by eps)."""
        n, c = K.shape[1], self.n_clusters
        idx, ones = np.arange(n), np.ones(n)
        trace, n_iter = [], 0
        for n_iter in range(1, int(self.max_iter) + 1):
            dist = kernel_distances(K, diags, centre_matrix(labels, c, ones))
            empty = np.bincount(labels, minlength=c) == 0
            dist[:, :, empty] = raw_diags[:, :, None]
            Dp = dist[:, idx, labels].sum(axis=1)
            w = _inverse_weights(Dp)
            trace.append(float((w**2) @ Dp))
            labels = np.argmin(np.tensordot(w**2, dist, axes=1), axis=1)
            if len(trace) > 1 and abs(trace[-2] - trace[-1]) < float(self.tol):
                break
        return labels, w, trace[-1], trace, n_iter

    def fit(self, K, y=None):
        K = self._validate_kernel(K)
        if isinstance(K, LowRankBank):   # the same distances from the factors, centred in feature space
            raw_diags = K.diagonal()
            K = K.centred()
            diags = K.diagonal()
        else:
            raw_diags = np.einsum("tii->ti", K).copy()
            K = _centred(K)  # as in robust_mkkm: exact distances, less cancellation
            diags = np.einsum("tii->ti", K).copy()
        n, c = K.shape[1], self.n_clusters
        stream = None
        if self.init == "matlab":   # the authors' repeat random_state: its n_init draws of rand(n, c)
            stream = replay(self.random_state, lambda s: s.partition(n, c), self.n_init)

        def run_once(rng):
            start = rng.partition(n, c) if self.init == "matlab" else rng.randint(c, size=n)
            return self._one(K, diags, start, raw_diags)

        best = self._best_restart(run_once, lambda r: r[2], rng=stream)
        self.labels_, self.kernel_weights_, self.objective_, self.objective_trace_, self.n_iter_ = best
        return self
