"""The inner search of the RMKKM authors' public code (:func:`mkclust.algorithms.rmkkm.authors_search`):
robust kernel k-means on one kernel from several seeded starts, advancing together."""

from __future__ import annotations

import numpy as np

from mkclust.algorithms.kmeans import _reseed_empty, centre_matrix, kernel_product


def _seeded_robust_kkm(Ka: np.ndarray, n_clusters: int, n_init: int, max_iter: int, rng) -> tuple:
    """The inner search of the RMKKM authors' code: robust kernel k-means (Eq. 4) on one kernel ``Ka``
    from ``n_init`` random starts, keeping the start with the lowest Eq. 4 objective.

    Each start takes ``n_clusters`` distinct random samples as centres, then alternates the
    assignment (Eq. 15) and the D-weighted centres (Eq. 12-13, weights 0.5 / sqrt(distance) divided
    by their maximum; a sample within 1e-10 of its centre gets the mean weight of the others, as that
    code does), for at most ``max_iter`` iterations or until no label changes. All starts advance
    together: the products of ``Ka`` with the centres of every start are one (n, n) x (n, n_init c)
    GEMM per iteration; a start stops being updated once its labels repeat.

    Returns (labels, sample_weights) of the best start: the partition and the D of its centres.
    """
    n, c, R = Ka.shape[0], n_clusters, n_init
    diag = np.diag(Ka).copy()
    rows = np.arange(n)
    labels = np.full((R, n), -1, dtype=np.int64)
    sw = np.zeros((R, n))
    A = np.zeros((n, R * c))
    for r in range(R):                                       # centres = c distinct random samples
        A[rng.choice(n, c, replace=False), r * c + np.arange(c)] = 1.0
    active = np.ones(R, dtype=bool)
    for _ in range(max_iter):
        P = kernel_product(Ka, A)                            # (n, R c), one GEMM for all starts
        within = np.einsum("ik,ik->k", A, P)
        dist = (diag[:, None] - 2.0 * P + within[None, :]).reshape(n, R, c)
        np.maximum(dist, 0.0, out=dist)
        for r in np.flatnonzero(active):                     # at most n_init starts: O(n c) each
            new = np.argmin(dist[:, r], axis=1)
            new = _reseed_empty(new, dist[:, r], c)
            if np.array_equal(new, labels[r]):
                active[r] = False
                continue
            labels[r] = new
            d = np.maximum(dist[rows, r, new], np.finfo(float).eps)
            near = d < 1e-10
            wts = 0.5 / np.sqrt(d)
            if (~near).any():
                wts[near] = wts[~near].mean()
            sw[r] = wts / wts.max()
            A[:, r * c:(r + 1) * c] = centre_matrix(new, c, sw[r])
        if not active.any():
            break
    P = kernel_product(Ka, A)
    within = np.einsum("ik,ik->k", A, P)
    dist = np.maximum(diag[:, None] - 2.0 * P + within[None, :], 0.0).reshape(n, R, c)
    scores = np.sqrt(dist[rows[None, :], np.arange(R)[:, None], labels]).sum(axis=1)  # Eq. 4 per start
    best = int(np.argmin(scores))
    return labels[best], sw[best]
