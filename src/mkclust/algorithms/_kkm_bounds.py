"""Lloyd's iterations of kernel k-means on a low-rank kernel K = sum_p w_p F_p F_p', skipping the
samples whose nearest centre provably stays the same (the bounds of Elkan 2003, "Using the triangle
inequality to accelerate k-means").

On factors the kernel has explicit features g_i = [sqrt(w_1) F_1[i], ...] (R = sum r_p of them), so
each cluster's mean is an explicit vector: its weighted sum of the rows (kept per kernel as
S_p = F_p' Z, Z the weighted indicator matrix) over the cluster's weight. That allows two savings
over the plain loop (:func:`mkclust.algorithms.kmeans.kernel_kmeans_lockstep`), which reads all
n x R factors twice per iteration:

- the sums change only by the rows of the samples that changed cluster (O(changed x R));
- each sample keeps an upper bound u_i on its distance to its own centre and a lower bound l_ij on
  its distance to each centre j; after the centres move by delta_j, u_i grows by delta_{a(i)} and
  l_ij shrinks by delta_j. A sample with u_i <= max(l_ij, d(c_{a(i)}, c_j) / 2) for every other j
  keeps its cluster without any distance computed; the others get their c distances exactly (one
  product of their rows with the c centres) and fresh bounds. (Hamerly's single lower bound, which
  shrinks by the largest shift, left 5-20 times more samples to compute on MNIST's kernels, whose
  centres are close together in R = 10,045 dimensions.)

In exact arithmetic the partitions, stopping iteration and objectives are the plain loop's; an emptied
cluster is handled by the plain step itself (``distances`` and ``reseed``, the dense path's
re-seeding), after which the bounds restart from exact distances. With float64 factors the
decisions equal the plain loop's (tests/library/test_lowrank.py); with float32 factors both loops
round the products in float32, so a sample whose two nearest centres are closer than that rounding
may go either way in either loop.

Written here because no library runs it on factors: scikit-learn's ``KMeans(algorithm="elkan")``
needs the n x R features as one matrix (a copy of the factors) and re-sums every row into the
centres each iteration; on MNIST's first 20,000 digits (12 kernels, 10,045 factor columns, float32,
10 restarts, one thread) it took 125 CPU s (benchmarks/bench_scale.py's KKM case).
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("mkclust.algorithms.kmeans")

#: above this share of samples whose bounds fail, their distances come from one product over all rows
#: (a gather of their rows would copy nearly the whole factors first)
FULL_SHARE = 0.3


class _Centres:
    """The cluster means of a partition on the factors: per kernel the weighted sums S_p (r_p, c),
    the clusters' weights W (c,), the means C_p = S_p / W and their squared norms in the combined
    kernel, cn_j = sum_p w_p ||C_p[:, j]||^2."""

    def __init__(self, parts, labels, c, sw):
        self.parts, self.c = parts, c
        Z = np.zeros((labels.size, c))
        Z[np.arange(labels.size), labels] = sw
        self.S = [np.asarray(F.T @ Z.astype(F.dtype), dtype=np.float64) for _, F in parts]
        self.W = np.bincount(labels, weights=sw, minlength=c).astype(np.float64)
        self._means()

    def _means(self):
        self.C = [S / self.W[None, :] for S in self.S]
        self.cn = sum(wp * np.einsum("rc,rc->c", C, C) for (wp, _), C in zip(self.parts, self.C))

    def move(self, rows, old, new, sw):
        """Samples ``rows`` leave clusters ``old`` for ``new``; returns each centre's shift delta (c,)."""
        D = np.zeros((rows.size, self.c))
        D[np.arange(rows.size), old] -= sw
        D[np.arange(rows.size), new] += sw
        for S, (_, F) in zip(self.S, self.parts):
            S += np.asarray(F[rows].T @ D.astype(F.dtype), dtype=np.float64)
        self.W += D.sum(axis=0)
        before = self.C
        self._means()
        shift = sum(wp * np.sum((C - B) ** 2, axis=0) for (wp, _), C, B in zip(self.parts, self.C, before))
        return np.sqrt(shift)

    def half_gaps(self) -> np.ndarray:
        """(c, c): half the distance between every two centres (inf on the diagonal)."""
        G = sum(wp * (C.T @ C) for (wp, _), C in zip(self.parts, self.C))
        d2 = np.maximum(self.cn[:, None] + self.cn[None, :] - 2.0 * G, 0.0)
        np.fill_diagonal(d2, np.inf)
        return 0.5 * np.sqrt(d2)

    def distances(self, rows, diag) -> np.ndarray:
        """Squared distances (len(rows), c) of samples ``rows`` (None: all) to every centre, as the plain
        loop computes them: diag - 2 K A + the means' norms, the products in the factors' dtype."""
        P = 0.0
        for (wp, F), C in zip(self.parts, self.C):
            Fr = F if rows is None else F[rows]
            P = P + wp * np.asarray(Fr @ C.astype(F.dtype), dtype=np.float64)
        d = (diag if rows is None else diag[rows])[:, None] - 2.0 * P + self.cn[None, :]
        return np.maximum(d, 0.0)


def _bounds(d: np.ndarray, labels: np.ndarray):
    """Exact u (distance to the own centre) and l (n, c) (to every centre) from squared distances."""
    L = np.sqrt(d)
    return L[np.arange(labels.size), labels], L


def bounded_lloyd(K, labels, dist, n_clusters: int, max_iter: int, diag, sw, distances, reseed):
    """One restart of :func:`~mkclust.algorithms.kmeans.kernel_kmeans_lockstep`'s loop on the factors of
    the combined low-rank kernel ``K`` (a :class:`~mkclust.lowrank.LowRankBank` with weights), from
    the partition ``labels`` (no cluster empty) and its exact squared distances ``dist`` (n, c).
    ``distances(labels)`` and ``reseed(labels, dist, c)`` are the plain loop's exact step and
    re-seeding, used where an assignment empties a cluster. Returns (labels, objective, trace, n_iter)."""
    parts = [(float(wp), F) for wp, F in zip(K.weights, K.factors) if wp != 0]
    n, c = labels.size, n_clusters
    idx = np.arange(n)
    labels = np.asarray(labels, dtype=np.int64).copy()
    cen = _Centres(parts, labels, c, sw)
    u, l = _bounds(dist, labels)
    base = float(sw @ diag)
    trace = [float(sw @ dist[idx, labels])]
    n_iter = 0
    for it in range(1, max_iter + 1):
        unsure = (u[:, None] > l) & (u[:, None] > cen.half_gaps()[labels])   # inf for j = a(i)
        need = np.flatnonzero(unsure.any(axis=1))
        new = labels.copy()
        if need.size:
            if need.size > FULL_SHARE * n:
                d = cen.distances(None, diag)[need]
            else:
                d = cen.distances(need, diag)
            new[need] = np.argmin(d, axis=1)
            u[need], l[need] = _bounds(d, new[need])
        moved = need[new[need] != labels[need]]
        if moved.size == 0:
            n_iter = it - 1
            break
        n_iter = it
        if np.bincount(new, minlength=c).min() == 0:   # the plain step, exactly, then fresh bounds
            d = distances(labels)
            labels = reseed(np.argmin(d, axis=1), d, c)
            d = distances(labels)
            cen = _Centres(parts, labels, c, sw)
            u, l = _bounds(d, labels)
            trace.append(float(sw @ d[idx, labels]))
            log.debug("kernel k-means iteration %d: objective %.10g (a cluster emptied: re-seeded)", it, trace[-1])
            continue
        shift = cen.move(moved, labels[moved], new[moved], sw[moved])
        labels = new
        u += shift[labels]
        l -= shift[None, :]
        trace.append(base - float(cen.W @ cen.cn))
        log.debug("kernel k-means iteration %d: objective %.10g, %d labels changed, %d distances computed",
                  it, trace[-1], moved.size, need.size)
    return labels, trace[-1], trace, n_iter
