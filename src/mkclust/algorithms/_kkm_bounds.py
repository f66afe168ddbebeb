"""Lloyd's iterations of kernel k-means on a low-rank kernel K = sum_p w_p F_p F_p', skipping the
samples whose nearest centre provably stays the same (the bounds of Elkan 2003, "Using the triangle
inequality to accelerate k-means"); and MKKM's (:func:`bounded_mkkm`), whose weights change between
iterations, which rescales the combined kernel's distances by a bounded factor.

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
may go either way in either loop. The distances here are measured from the factors' mean rows
(:class:`_Centres`), which keeps that rounding relative to the distances, not to the kernel's
diagonal: the difference between an MKKM run that meets its tolerance and one that does not.

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


#: rows a block when the factors are read in float64 (the sums and the centred norms): a float64
#: block of 2,048 x 1,000 is 16 MB (the memory model, tests/workflow/test_memory.py, has no room for a
#: float64 copy of a factor)
BLOCK = 2048


def _blocks(F):
    """(start, rows) of F in float64, :data:`BLOCK` rows at a time (no float64 copy of F)."""
    for i in range(0, F.shape[0], BLOCK):
        yield i, np.asarray(F[i:i + BLOCK], dtype=np.float64)


def _factor_stats(F):
    """The factors' mean row m (float64) and every row's squared distance to it, ||f_i - m||^2, in
    float64."""
    m = F.mean(axis=0, dtype=np.float64)
    sq = np.empty(F.shape[0])
    for i, B in _blocks(F):
        G = B - m
        sq[i:i + len(G)] = np.einsum("ij,ij->i", G, G)
    return m, sq


class _Centres:
    """The cluster means of a partition on the factors: per kernel the weighted sums S_p (r_p, c) in
    float64, the clusters' weights W (c,), the means less the factors' mean row m_p,
    C_p = S_p / W - m_p, their squared norms per kernel ``norms`` (m, c) and in the combined kernel,
    cn_j = sum_p w_p ||C_p[:, j]||^2.

    Everything is measured from m_p: a distance is ||g_i||^2 - 2 g_i'C_j + ||C_j||^2 with
    g_i = f_i - m_p, so the float32 product f_i'C_j carries an error of about 1e-7 ||f_i|| ||C_j||, not
    1e-7 ||f_i||^2. For a nearly constant kernel (a wide Gaussian: all f_i near m_p, the distances
    ~1e-4 of the diagonal) the uncentred form k_ii - 2 f_i'mu_j + ||mu_j||^2 loses all but one or two
    digits in float32: on MNIST's 20,000 digits MKKM's objective, non-increasing in exact arithmetic,
    rose and fell by 3e-3 of itself from one iteration to the next and never met its tolerance."""

    def __init__(self, parts, labels, c, sw, stats):
        self.c = c
        self.v = np.array([wp for wp, _ in parts], dtype=np.float64)   # the weights, set by reweight
        self.factors = [F for _, F in parts]
        self.means = [m for m, _ in stats]                 # stats: _factor_stats of each part
        self.sq = np.array([sq for _, sq in stats])        # (m, n): ||f_pi - m_p||^2
        Z = np.zeros((labels.size, c))
        Z[np.arange(labels.size), labels] = sw
        self.S = []
        for F in self.factors:
            S = np.zeros((F.shape[1], c))
            for i, B in _blocks(F):
                S += B.T @ Z[i:i + len(B)]
            self.S.append(S)
        self.W = np.bincount(labels, weights=sw, minlength=c).astype(np.float64)
        self._means()

    def _means(self):
        self.C = [S / self.W[None, :] - m[:, None] for S, m in zip(self.S, self.means)]
        self.norms = np.array([np.einsum("rc,rc->c", C, C) for C in self.C])
        self.mC = np.array([m @ C for C, m in zip(self.C, self.means)])
        self.cn = self.v @ self.norms

    def reweight(self, v):
        """The combined kernel's weights become ``v`` (the means stay; their combined norms follow)."""
        self.v = np.asarray(v, dtype=np.float64)
        self.cn = self.v @ self.norms

    def centred_diagonal(self) -> np.ndarray:
        """sum_p w_p ||f_pi - m_p||^2 (n,): the combined kernel's diagonal as these distances use it."""
        return self.v @ self.sq

    def move(self, rows, old, new, sw):
        """Samples ``rows`` leave clusters ``old`` for ``new``; returns each centre's shift delta (c,)
        in the combined kernel, and keeps it per kernel (squared) in ``shifts`` (m, c)."""
        D = np.zeros((rows.size, self.c))
        D[np.arange(rows.size), old] -= sw
        D[np.arange(rows.size), new] += sw
        for S, F in zip(self.S, self.factors):
            S += np.asarray(F[rows], dtype=np.float64).T @ D
        self.W += D.sum(axis=0)
        before = self.C
        self._means()
        self.shifts = np.array([np.sum((C - B) ** 2, axis=0) for C, B in zip(self.C, before)])
        return np.sqrt(self.v @ self.shifts)

    def distortions(self) -> np.ndarray:
        """Per kernel the within-cluster sum of squared distances, sum_i s_i ||f_i - mu_a(i)||^2 =
        sum_i s_i ||g_i||^2 - sum_j W_j ||C_j||^2 (unit sample weights)."""
        return self.sq.sum(axis=1) - self.norms @ self.W

    def half_gaps(self) -> np.ndarray:
        """(c, c): half the distance between every two centres (inf on the diagonal)."""
        G = sum(wp * (C.T @ C) for wp, C in zip(self.v, self.C))
        d2 = np.maximum(self.cn[:, None] + self.cn[None, :] - 2.0 * G, 0.0)
        np.fill_diagonal(d2, np.inf)
        return 0.5 * np.sqrt(d2)

    def distances(self, rows, dg) -> np.ndarray:
        """Squared distances (len(rows), c) of samples ``rows`` (None: all) to every centre,
        ||g_i||^2 - 2 g_i'C_j + ||C_j||^2 (``dg``: :meth:`centred_diagonal`), the products f_i'C_j in the
        factors' dtype."""
        P = 0.0
        for wp, F, C, mC in zip(self.v, self.factors, self.C, self.mC):
            Fr = F if rows is None else F[rows]
            P = P + wp * (np.asarray(Fr @ C.astype(F.dtype), dtype=np.float64) - mC[None, :])
        d = (dg if rows is None else dg[rows])[:, None] - 2.0 * P + self.cn[None, :]
        return np.maximum(d, 0.0)


def _bounds(d: np.ndarray, labels: np.ndarray):
    """Exact u (distance to the own centre) and l (n, c) (to every centre) from squared distances."""
    L = np.sqrt(d)
    return L[np.arange(labels.size), labels], L


def _assign(cen, u, l, labels, diag):
    """The bounded assignment step: the samples whose bounds cannot keep their cluster get their exact
    distances (one product over all rows above :data:`FULL_SHARE` of them) and fresh bounds (``u``,
    ``l`` updated in place). Returns (new labels, the samples computed, those that moved)."""
    unsure = (u[:, None] > l) & (u[:, None] > cen.half_gaps()[labels])   # inf for j = a(i)
    need = np.flatnonzero(unsure.any(axis=1))
    new = labels.copy()
    if need.size:
        d = cen.distances(None, diag)[need] if need.size > FULL_SHARE * labels.size else cen.distances(need, diag)
        new[need] = np.argmin(d, axis=1)
        u[need], l[need] = _bounds(d, new[need])
    return new, need, need[new[need] != labels[need]]


def factor_parts(K):
    """The (weight, factor) pairs of the combined low-rank kernel ``K`` with a non-zero weight, and
    their :func:`_factor_stats` (one pass over the factors, shared by every restart)."""
    parts = [(float(wp), F) for wp, F in zip(K.weights, K.factors) if wp != 0]
    return parts, [_factor_stats(F) for _, F in parts]


def bounded_lloyd(K, labels, dist, n_clusters: int, max_iter: int, sw, distances, reseed, parts=None):
    """One restart of :func:`~mkclust.algorithms.kmeans.kernel_kmeans_lockstep`'s loop on the factors of
    the combined low-rank kernel ``K`` (a :class:`~mkclust.lowrank.LowRankBank` with weights), from
    the partition ``labels`` (no cluster empty) and its exact squared distances ``dist`` (n, c), the
    plain loop's (its objective is the trace's first entry; the bounds start from the distances
    measured from the factors' mean rows, :class:`_Centres`).
    ``distances(labels)`` and ``reseed(labels, dist, c)`` are the plain loop's exact step and
    re-seeding, used where an assignment empties a cluster; ``parts``: :func:`factor_parts` of ``K``.
    Returns (labels, objective, trace, n_iter)."""
    parts, stats = factor_parts(K) if parts is None else parts
    n, c = labels.size, n_clusters
    idx = np.arange(n)
    labels = np.asarray(labels, dtype=np.int64).copy()
    cen = _Centres(parts, labels, c, sw, stats)
    diag = cen.centred_diagonal()
    u, l = _bounds(cen.distances(None, diag), labels)
    base = float(sw @ diag)
    trace = [float(sw @ dist[idx, labels])]
    n_iter = 0
    for it in range(1, max_iter + 1):
        new, need, moved = _assign(cen, u, l, labels, diag)
        if moved.size == 0:
            n_iter = it - 1
            break
        n_iter = it
        if np.bincount(new, minlength=c).min() == 0:   # the plain step, exactly, then fresh bounds
            d = distances(labels)
            labels = reseed(np.argmin(d, axis=1), d, c)
            d = distances(labels)
            cen = _Centres(parts, labels, c, sw, stats)
            u, l = _bounds(cen.distances(None, diag), labels)
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


def bounded_mkkm(low, labels, n_clusters: int, w, trace, n_iter, max_iter: int, tol: float, distances, reseed,
                 weights_of, stats=None):
    """MKKM's exact loop (:meth:`mkclust.algorithms.mkkm.MKKM._one`) continued on the factors of the
    bank ``low`` with :func:`bounded_lloyd`'s bounds, from the partition ``labels`` (no cluster empty),
    the weights ``w`` it was assigned with and the objective ``trace`` after ``n_iter`` iterations.
    The assignment is kernel k-means's on the kernel sum_p w_p^2 K_p; the weights then change to
    ``weights_of(D)`` (D_p the within-cluster distortion in kernel p, from the sums), which rescales
    every distance in the combined kernel by at most sqrt(max_p w'_p^2 / w_p^2) and at least
    sqrt(min_p ...): the bounds take those factors, then the centres' shifts measured with the new
    weights. Where the assignment empties a cluster the plain step is taken (``distances(labels)``
    (m, n, c) and ``reseed``) and the bounds restart. Stops as the plain loop does: the objective
    sum_p w_p^2 D_p changed by less than ``tol`` (an unchanged partition repeats its objective).
    ``stats``: :func:`_factor_stats` of each factor (computed when not given). Returns (labels, w,
    objective, trace, n_iter)."""
    factors = low.factors
    n, c = labels.size, n_clusters
    stats = [_factor_stats(F) for F in factors] if stats is None else stats
    idx, sw = np.arange(n), np.ones(n)

    def restart(labels, w):
        cen = _Centres([(float(wp) ** 2, F) for wp, F in zip(w, factors)], labels, c, sw, stats)
        diag = cen.centred_diagonal()
        return (cen, diag) + _bounds(cen.distances(None, diag), labels)

    labels = np.asarray(labels, dtype=np.int64).copy()
    cen, diag, u, l = restart(labels, w)
    for it in range(n_iter + 1, max_iter + 1):
        new, need, moved = _assign(cen, u, l, labels, diag)
        n_iter = it
        if moved.size == 0:        # the plain step's partition, distances, weights and objective again
            trace.append(trace[-1])
            break
        if np.bincount(new, minlength=c).min() == 0:   # the plain step, exactly, then fresh bounds
            d = distances(labels)
            comb = np.tensordot(cen.v, d, axes=1)
            labels = reseed(np.argmin(comb, axis=1), comb, c)
            d = distances(labels)
            D = d[:, idx, labels].sum(axis=1)
            w = weights_of(D)
            cen, diag, u, l = restart(labels, w)
            del d, comb
            log.debug("MKKM iteration %d: a cluster emptied: re-seeded", it)
        else:
            cen.move(moved, labels[moved], new[moved], sw[moved])
            labels = new
            D = cen.distortions()
            w = weights_of(D)
            v = np.asarray(w, dtype=np.float64) ** 2
            ratio = v / cen.v
            shift = np.sqrt(v @ cen.shifts)
            u = u * np.sqrt(ratio.max()) + shift[labels]
            l = l * np.sqrt(ratio.min()) - shift[None, :]
            cen.reweight(v)
            diag = cen.centred_diagonal()
        trace.append(float(cen.v @ D))
        log.debug("MKKM iteration %d: objective %.12g, %d labels changed, %d distances computed",
                  it, trace[-1], moved.size, need.size)
        if abs(trace[-2] - trace[-1]) < tol:
            break
    return labels, w, trace[-1], trace, n_iter
