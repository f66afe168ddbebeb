"""Multiple kernel k-means, MKKM (Huang, Chuang and Chen, IEEE TFS 2012), the baseline of the RMKKM
paper's Table 2, as the RMKKM authors' public copy of it (``MKKM.m``) runs it. It shares the kernel
distances of :mod:`mkclust.algorithms.rmkkm` (one batched product per iteration, no loop over
samples)."""

from __future__ import annotations

import logging

import numpy as np

from mkclust.algorithms.base import BaseClusterer, COMMON_CONSTRAINTS, Cost, NONNEG, POSITIVE_INT
from mkclust.algorithms.kmeans import _reseed_empty, centre_matrix
from mkclust.algorithms.rmkkm import _centred, kernel_distances

log = logging.getLogger(__name__)


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
    random_state : int, RandomState instance or None, default=None
        Seed of the random partitions.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    kernel_weights_ : ndarray of shape (n_kernels,)
        w, summing to 1.
    objective_ : float
    objective_trace_ : list of float
        The objective per iteration of the kept run (non-increasing).
    n_iter_ : int
    """

    cost = Cost(work_n2=6, seconds_at_1000=10, exponent=2, typical_at_1000=0.314, restarts=True)
    _parameter_constraints = {
        **COMMON_CONSTRAINTS, "n_init": [POSITIVE_INT], "max_iter": [POSITIVE_INT], "tol": [NONNEG],
    }

    input_kind = "kernels"

    def __init__(self, n_clusters=8, n_init=1, max_iter=100, tol=1e-5, random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _one(self, K, diags, labels):
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
            new = _reseed_empty(np.argmin(comb, axis=1), comb, c)
            labels = new
            dist = kernel_distances(K, diags, centre_matrix(labels, c, ones))
            Dp = dist[:, idx, labels].sum(axis=1)
            if Dp.max() > 0:   # w_t proportional to 1 / D_t (floored at 1e-12 of the largest)
                inv = 1.0 / np.maximum(Dp, 1e-12 * Dp.max())
                w = inv / inv.sum()
            else:              # every sample at its centre in every kernel: every kernel fits equally
                w = np.full(m, 1.0 / m)
            trace.append(float((w**2) @ Dp))
            log.debug("MKKM iteration %d: objective %.12g", n_iter, trace[-1])
            if abs(trace[-2] - trace[-1]) < float(self.tol):
                break
        return labels, w, trace[-1], trace, n_iter

    def fit(self, K, y=None):
        K = _centred(self._validate_kernel(K))  # as in robust_mkkm: exact distances, less cancellation
        diags = np.einsum("tii->ti", K).copy()
        best = self._best_restart(lambda rng: self._one(K, diags, rng.randint(self.n_clusters, size=K.shape[1])),
                                  lambda r: r[2])
        self.labels_, self.kernel_weights_, self.objective_, self.objective_trace_, self.n_iter_ = best
        return self
