"""Multiple kernel k-means, MKKM (Huang, Chuang and Chen, IEEE TFS 2012), the baseline of the RMKKM
paper's Table 2, as the RMKKM authors' public copy of it (``MKKM.m``) runs it. It shares the kernel
distances of :mod:`mkclust.algorithms.rmkkm` (one batched product per iteration, no loop over
samples)."""

from __future__ import annotations

import logging

import numpy as np
from sklearn.utils import check_random_state

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
    #: the runs in lockstep on factors hold their distances, m n c floats a run: in groups of at most
    #: LOCKSTEP_VECTORS / c runs, so at most this many n-vectors per kernel (and 4 more)
    LOCKSTEP_VECTORS = 120
    low_rank_vectors = LOCKSTEP_VECTORS + 4

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

    def _exact_lockstep(self, K, diags, starts, bounds=True):
        """:meth:`_one` (``steps="exact"``) from every partition of ``starts``, all advancing together: each
        round one product of the bank with the centre matrices of the runs still moving, side by side
        (on factors a product reads all n x R of them whatever its width: at n = 20,000, 12 kernels of
        ~840 columns in float32, one thread, 100 columns cost 1.25 CPU s, ten products of 10 columns 3.9 s).
        Each run takes the steps it takes alone; the wider product may round its last digits differently.
        With ``bounds`` (where the factors are fewer than the samples) each run continues after the
        first round alone, skipping the samples whose cluster provably stays
        (:func:`mkclust.algorithms._kkm_bounds.bounded_mkkm`: the same steps)."""
        m, n, _ = K.shape
        c, idx, ones = self.n_clusters, np.arange(n), np.ones(n)

        def distances(labs):   # kernel_distances, one kernel at a time into one array (K: a _ShiftedBank)
            A = np.hstack([centre_matrix(lab, c, ones) for lab in labs])
            D = np.empty((m, n, A.shape[1]))
            for p in range(m):
                P = K.low.kernel_product(p, A) - K.shift[p] * A.sum(axis=0)[None, :]
                within = np.einsum("ic,ic->c", A, P)
                np.multiply(P, -2.0, out=D[p])
                D[p] += diags[p][:, None]
                D[p] += within[None, :]
            np.maximum(D, 0.0, out=D)
            return [D[:, :, j * c:(j + 1) * c] for j in range(len(labs))]

        labels = [np.asarray(lab) for lab in starts]
        dist = distances(labels)
        Dp = [d[:, idx, lab].sum(axis=1) for d, lab in zip(dist, labels)]
        w = [np.full(m, 1.0 / m) for _ in labels]
        traces = [[float((wr**2) @ D)] for wr, D in zip(w, Dp)]
        n_iter = [0] * len(labels)
        active = list(range(len(labels)))
        bounded = bounds and not K.low._small()
        for it in range(1, 2 if bounded else int(self.max_iter) + 1):   # bounded: one round in lockstep
            if not active:
                break
            for r in active:
                comb = np.tensordot(w[r] ** 2, dist[r], axes=1)
                comb[:, np.bincount(labels[r], minlength=c) == 0] = np.inf
                labels[r] = _reseed_empty(np.argmin(comb, axis=1), comb, c)
            moving, dist = [], [None] * len(labels)   # the last round's distances freed before the next
            for r, d in zip(active, distances([labels[r] for r in active])):
                dist[r] = d
                D = d[:, idx, labels[r]].sum(axis=1)
                w[r] = _inverse_weights(D)
                traces[r].append(float((w[r] ** 2) @ D))
                n_iter[r] = it
                log.debug("MKKM run %d iteration %d: objective %.12g", r, it, traces[r][-1])
                if abs(traces[r][-2] - traces[r][-1]) >= float(self.tol):
                    moving.append(r)
            active = moving
        if bounded and active and int(self.max_iter) > 1:   # then each run alone with the bounds
            from mkclust.algorithms._kkm_bounds import _factor_stats, bounded_mkkm
            stats = [_factor_stats(F) for F in K.low.factors]
            dist = None
            for r in active:
                run = bounded_mkkm(K.low, labels[r], c, w[r], traces[r], n_iter[r], int(self.max_iter),
                                   float(self.tol), lambda lab: distances([lab])[0], _reseed_empty,
                                   _inverse_weights, stats)
                labels[r], w[r], _, traces[r], n_iter[r] = run
        return [(labels[r], w[r], traces[r][-1], traces[r], n_iter[r]) for r in range(len(labels))]

    def fit(self, K, y=None):
        K = self._validate_kernel(K)
        low_rank = isinstance(K, LowRankBank)
        if low_rank:   # the same distances from the factors, less a constant per kernel (no copy)
            raw_diags = K.diagonal()
            K = _centred(K)
            diags = K.diagonal()
        else:
            raw_diags = np.einsum("tii->ti", K).copy()
            K = _centred(K)  # as in robust_mkkm: exact distances, less cancellation
            diags = np.einsum("tii->ti", K).copy()
        n, c = K.shape[1], self.n_clusters
        stream = None
        if self.init == "matlab":   # the authors' repeat random_state: its n_init draws of rand(n, c)
            stream = replay(self.random_state, lambda s: s.partition(n, c), self.n_init)

        def start(rng):
            return rng.partition(n, c) if self.init == "matlab" else rng.randint(c, size=n)

        if low_rank and self.steps == "exact":   # the runs in lockstep, drawn as _best_restart draws them
            rng = check_random_state(self.random_state) if stream is None else stream
            starts = [start(rng) for _ in range(int(self.n_init))]
            size = max(1, self.LOCKSTEP_VECTORS // c)   # the memory model's low_rank_vectors
            runs = [run for i in range(0, len(starts), size)
                    for run in self._exact_lockstep(K, diags, starts[i:i + size])]
            best = runs[min(range(len(runs)), key=lambda r: runs[r][2])]
        else:
            best = self._best_restart(lambda rng: self._one(K, diags, start(rng), raw_diags), lambda r: r[2],
                                      rng=stream)
        self.labels_, self.kernel_weights_, self.objective_, self.objective_trace_, self.n_iter_ = best
        return self
