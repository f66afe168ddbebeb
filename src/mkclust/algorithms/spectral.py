"""Spectral clustering on a precomputed affinity (a non-negative kernel matrix).

The embedding is the c leading eigenvectors U of M = D^-1/2 W D^-1/2 (equivalently the c smallest
of the normalised Laplacian I - M), with the diagonal of W ignored (no self-loops, as in
Ng-Jordan-Weiss and ``scipy.sparse.csgraph.laplacian``) and d_i = sum_{j != i} W_ij. Samples of
zero degree (isolated in the graph) get zero rows in D^-1/2.

The eigenvectors come from scipy: ``scipy.sparse.linalg.eigsh`` (Lanczos, largest algebraic, from a
fixed start vector that does not draw from ``random_state``) for n > ``DENSE_LIMIT``, with at most
``max_products(n)`` products with the matrix. ``scipy.linalg.eigh`` (restricted to the top c pairs)
answers instead where Lanczos needs more (a spectrum clustered at the top), where two of the
eigenvalues it found are (nearly) equal (``MIN_SEPARATION``), on a disconnected graph
(:func:`connected`, isolated samples included) and for n <= ``DENSE_LIMIT``. A graph of several
components has its top eigenvalue once per component, and Lanczos from one start vector finds one
vector per eigenvalue in exact arithmetic: on RMKKM's t0 = 0.01 kernel of BA (39 components of two or
more samples, 1324 isolated ones) it returned 36 of the 39 copies of eigenvalue 1 and then -1/3, and
SC's accuracy fell from .152 to .031. Lanczos took 44 products (0.04 s) on digits' Gaussian affinity
(n = 1797) where the dense solver took 0.39 s, and 21 products (0.17 s) against 4.1 s on 4000 blobs.
We do not use scikit-learn's ``spectral_embedding``: its ARPACK shift-invert mode ran for over ten
minutes without finishing on a near-identity Gaussian kernel (RMKKM's t0 = 0.01 on ``digits``, a
graph that is disconnected), and that kernel is part of every 12-kernel table.

- :class:`SpectralClustering` (SC; Ng, Jordan, Weiss 2002): k-means on the rows of U scaled to
  unit length. ``laplacian="unnormalized"`` is the variant of the RMKKM authors' public code
  (github.com/csliangdu/RMKKM, ``SC/SC.m``), whose numbers the RMKKM and SCMK papers print for SC:
  the eigenvectors of the c smallest eigenvalues of the unnormalised Laplacian L = D - W
  (D = diag of W's row sums; W's diagonal cancels in L), rows scaled to unit length, with W's
  negative entries kept (``negative="keep"``, allowed with this Laplacian only).
- :class:`NormalizedCut` (NC; Shi and Malik 2000, random-walk normalisation): k-means on the rows
  of D^-1/2 U, the generalised eigenvectors of (D - W) v = lambda D v, i.e. the eigenvectors of the
  random-walk Laplacian I - D^-1 W.

Both take a low-rank affinity (:class:`mkclust.lowrank.LowRankBank`, one kernel of Nystroem factors)
with the normalised affinity, its eigenvectors by products with the factors
(:func:`low_rank_affinity_embedding`). Both label rows with scikit-learn's KMeans (``n_init``
restarts, k-means++ seeding).
:class:`SpectralClustering` also offers the k-means of the RMKKM authors' code (``SC/SC.m`` calls
``litekmeans(NormalizeFea(V, 1), c, 'MaxIter', 100, 'Replicates', 10)``) as labelled options:
``kmeans_init="sample"`` (litekmeans' default start: c distinct rows sampled as centres; Lloyd until
no label changes; of the replicates the one with the smallest sum of the rows' Euclidean distances
to their centres, not of their squares: :func:`litekmeans`, kernel k-means on the rows' linear kernel),
``max_iter=100``, and ``norm_floor=1e-14`` (``NormalizeFea`` divides each row by the square root of
max(1e-14, its squared norm): a row of squared norm below 1e-14 is scaled by 1e7, not to unit length).
The choice matters where the graph is nearly disconnected: on COIL20's Gaussian t0 = 0.05 kernel the
embedding holds 196 distinct points; k-means++ seeding spends its centres on isolated points (a lower
inertia, merged classes) where sampled rows land in the large groups.

``eigensolver="full"`` computes the unnormalised Laplacian's embedding as ``SC.m`` does, from the
whole eigendecomposition of L (its first c columns), not from the c leading pairs of s I - L. The two
agree where L's c-th and (c+1)-th eigenvalues are apart. They do not where a Gaussian is so narrow
that most samples are isolated: on the 12-kernel bank's t0 = 0.01-0.1 Gaussians of TR41 and TR45
(and t0 = 0.01-0.05 of BA, 0.01 of AR) 533 to 1363 of L's n eigenvalues are 0 to rounding, the
"c smallest eigenvectors" are any basis of that null space, and each solver returns its own. There
the mean accuracy of TR41's kernel 2 was .23 from the leading pairs and .37-.49 from the whole
decomposition (LAPACK's four symmetric drivers), enough to move the 12-kernel average by .025.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state

from mkclust.algorithms.base import (
    BaseClusterer, check_affinity, COMMON_CONSTRAINTS, Cost, default_params, leading_eigenvectors, NONNEG,
    POSITIVE_INT, StrOptions,
)
from mkclust.algorithms._matlab import replay
from mkclust.algorithms.kmeans import KernelKMeans, cluster_distances, sample_centres
from mkclust.lowrank import LowRankBank

log = logging.getLogger(__name__)

#: largest n for the dense eigensolver alone (O(n^3) but robust; 0.06 s at n = 1000); Lanczos first above
DENSE_LIMIT = 1000


#: two wanted eigenvalues closer than this (relative to the largest) leave the embedding to the dense
#: solver (:func:`mkclust.algorithms.base.leading_eigenvectors`): the unnormalised Laplacian of digits'
#: t0 = 0.01 kernel has its 10 smallest eigenvalues within 1e-13 of 0, and Lanczos' basis of them gave
#: other labels than the dense solver's
MIN_SEPARATION = 1e-10


def max_products(n: int) -> int:
    """The Lanczos budget: n / 8 products with the n x n matrix, about half the dense solver's cost
    (one dense solve costs 280-500 products at n = 1400-4000 on one core)."""
    return n // 8


def connected(W: np.ndarray) -> bool:
    """Whether the graph of W's non-zero off-diagonal entries is connected (an isolated sample is a
    component of its own): at once where every entry is non-zero (a Gaussian kernel short of
    underflow), otherwise by scipy's connected components. Asked of the matrix that is decomposed:
    D^-1/2 W D^-1/2, where a sample whose degree rounds to 0 beside W's diagonal (RMKKM's t0 = 0.01
    kernel of digits: off-diagonal entries below 1.3e-13) has a zero row."""
    nonzero = W != 0
    if nonzero.sum() - np.count_nonzero(np.diag(W)) == W.shape[0] * (W.shape[0] - 1):
        return True
    np.fill_diagonal(nonzero, False)
    return scipy.sparse.csgraph.connected_components(scipy.sparse.csr_matrix(nonzero), directed=False)[0] == 1


def _dense_limit(W: np.ndarray) -> int:
    """``DENSE_LIMIT``, or n (the dense solver whatever n) for a disconnected graph of ``W`` (module
    docstring)."""
    n = W.shape[0]
    return DENSE_LIMIT if n <= DENSE_LIMIT or connected(W) else n


def _start(n: int) -> np.ndarray:
    """Lanczos' start vector: fixed, so that the k-means restarts after the embedding draw the same
    random stream whichever eigensolver ran."""
    return np.random.RandomState(0).uniform(-1, 1, n)


def normalized_affinity_embedding(W: np.ndarray, n_components: int):
    """Return (U, dinv_sqrt, eigenvalues): the leading eigenvectors of D^-1/2 W D^-1/2 (diagonal of
    W ignored), the vector D^-1/2 (0 for isolated samples) and their eigenvalues (descending)."""
    n = W.shape[0]
    deg = W.sum(axis=1) - np.diag(W)
    dinv = np.zeros(n)
    pos = deg > 0
    dinv[pos] = 1.0 / np.sqrt(deg[pos])
    M = W * dinv[:, None] * dinv[None, :]
    np.fill_diagonal(M, 0.0)
    M = 0.5 * (M + M.T)
    lam, U = leading_eigenvectors(lambda v: M @ v, n, n_components, dense=lambda: M, dense_limit=_dense_limit(M),
                                  v0=_start(n), max_products=max_products(n), min_separation=MIN_SEPARATION)
    return _fixed_signs(U), dinv, lam


#: above this n a low-rank affinity's Lanczos run has no product budget and no dense fallback (the
#: n x n matrix would take more than 3.2 GB); at or below it, both as for a dense affinity
LOW_RANK_DENSE_N = 20_000


def low_rank_affinity_embedding(K: LowRankBank, n_components: int):
    """:func:`normalized_affinity_embedding` of a low-rank affinity W = sum_p w_p F_p F_p' without its
    n x n matrix: the degrees are W 1 - diag(W) (two products with the factors) and Lanczos runs on
    v -> D^-1/2 W D^-1/2 v - diag(W)/d * v, O(n r) a product. The definition is the dense one (W's
    diagonal ignored, zero rows for samples of non-positive degree), and so is the route at n <=
    ``DENSE_LIMIT`` (the dense matrix, formed: the same labels bit for bit); W's entries are not
    checked for sign, which would take all n^2 of them. Above ``LOW_RANK_DENSE_N`` Lanczos has no
    budget and no dense fallback (ARPACK's failure is raised)."""
    n = K.n_samples
    if n <= DENSE_LIMIT:
        return normalized_affinity_embedding(K.dense(), n_components)
    diag = K.diagonal()
    deg = K.product(np.ones(n)) - diag
    dinv = np.zeros(n)
    pos = deg > 0
    dinv[pos] = 1.0 / np.sqrt(deg[pos])
    if not pos.all():
        log.info("low-rank affinity: %d of %d samples of non-positive degree get zero rows", int((~pos).sum()), n)
    loop = dinv * dinv * diag

    def matvec(v):
        v = np.ravel(v)
        return dinv * K.product(dinv * v) - loop * v

    def dense():
        M = K.dense() * dinv[:, None] * dinv[None, :]
        np.fill_diagonal(M, 0.0)
        return 0.5 * (M + M.T)

    big = n > LOW_RANK_DENSE_N
    lam, U = leading_eigenvectors(matvec, n, n_components, dense=dense, dense_limit=DENSE_LIMIT, v0=_start(n),
                                  max_products=None if big else max_products(n),
                                  min_separation=None if big else MIN_SEPARATION)
    return _fixed_signs(U), dinv, lam


def _fixed_signs(U: np.ndarray) -> np.ndarray:
    """Deterministic signs: the largest-magnitude entry of each column made positive."""
    s = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])])
    return U * np.where(s == 0, 1.0, s)[None, :]


def unnormalized_laplacian_embedding(W: np.ndarray, n_components: int, eigensolver: str = "leading"):
    """Return (U, eigenvalues): the eigenvectors of the ``n_components`` smallest eigenvalues of
    L = D - W, D = diag(W 1) (ascending). ``eigensolver="leading"``: dense ``eigh`` up to
    ``DENSE_LIMIT`` samples; above, the leading eigenvectors of s I - L with s a Gershgorin bound on
    L's spectrum (same vectors). ``"full"``: the whole eigendecomposition of L (``scipy.linalg.eigh``,
    its default LAPACK driver) and its first ``n_components`` columns, as the RMKKM authors' ``SC.m``
    (``[V, D] = eig(L); V(:, 1:c)``). The two agree up to signs where the c-th and (c+1)-th
    eigenvalues are apart; where they are equal to rounding, each returns its own basis of that
    eigenspace (module docstring)."""
    n = W.shape[0]
    L = np.diag(W.sum(axis=1)) - W
    L = 0.5 * (L + L.T)
    if eigensolver == "full":
        lam, U = scipy.linalg.eigh(L)
        return _fixed_signs(U[:, :n_components]), lam[:n_components]
    s = float(np.abs(L).sum(axis=1).max())
    lam, U = leading_eigenvectors(lambda v: s * v - L @ v, n, n_components, dense=lambda: s * np.eye(n) - L,
                                  dense_limit=_dense_limit(W), v0=_start(n), max_products=max_products(n),
                                  min_separation=MIN_SEPARATION)
    return _fixed_signs(U), s - lam


class _SpectralBase(BaseClusterer):
    requires_psd = False  # an affinity matrix (a kNN graph, say) need not be a PSD kernel
    takes_low_rank = True   # the normalised affinity's eigenvectors by products (low_rank_affinity_embedding)

    def __init__(self, n_clusters=8, n_init=10, negative="error", random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.negative = negative
        self.random_state = random_state

    @classmethod
    def low_rank_refusal(cls, params: dict) -> str | None:
        defaults = default_params(cls)
        negative, laplacian = (params.get(k, defaults.get(k, v)) for k, v in
                               (("negative", "error"), ("laplacian", "normalized")))
        if negative != "error" or laplacian != "normalized":
            return (f"needs the n x n affinity with negative={negative!r}, laplacian={laplacian!r} (clipping is "
                    "entrywise, the unnormalised Laplacian's bound reads every entry)")
        return None

    def _rows(self, U, dinv):
        raise NotImplementedError

    def _embed(self, K):
        if isinstance(K, LowRankBank):
            if self.negative != "error" or getattr(self, "laplacian", "normalized") != "normalized":
                raise ValueError(f"{type(self).__name__} on a low-rank affinity takes laplacian='normalized' and "
                                 "negative='error' only (clipping or the unnormalised Laplacian's bound need "
                                 "the n x n matrix): pass K.dense() where it fits")
            return low_rank_affinity_embedding(K, self.n_clusters)
        W = check_affinity(K, self.negative)
        return normalized_affinity_embedding(W, self.n_clusters)

    def fit(self, K, y=None):
        K = self._validate_kernel(K)
        rng = check_random_state(self.random_state)
        t0 = time.perf_counter()
        U, dinv, lam = self._embed(K)
        log.info("%s: %d eigenvectors of n=%d in %.3f s; eigenvalues %s", type(self).__name__,
                 self.n_clusters, K.shape[0], time.perf_counter() - t0, np.round(lam, 6).tolist())
        self.eigenvalues_ = lam
        self.embedding_ = self._rows(U, dinv)
        labels, objective, n_iter = self._kmeans(rng)
        self.labels_ = np.asarray(labels, dtype=np.int64)
        self.objective_ = float(objective)
        self.n_iter_ = int(n_iter)
        return self

    def _kmeans(self, rng):
        """(labels, inertia, iterations) of k-means on the embedding's rows."""
        km = KMeans(n_clusters=self.n_clusters, n_init=self.n_init, random_state=rng).fit(self.embedding_)
        return km.labels_, km.inertia_, km.n_iter_


class SpectralClustering(_SpectralBase):
    """Ng-Jordan-Weiss spectral clustering on a precomputed affinity (SC).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    n_init : int, default=10
        k-means restarts on the embedding.
    negative : {"error", "clip", "keep"}, default="error"
        What to do with negative affinities: refuse them, clip them to 0, or (only with
        ``laplacian="unnormalized"``) keep them.
    laplacian : {"normalized", "unnormalized"}, default="normalized"
        "normalized": Ng, Jordan, Weiss; "unnormalized": L = D - W as the RMKKM authors' code (see
        the module docstring).
    kmeans_init : {"k-means++", "sample", "matlab"}, default="k-means++"
        The k-means on the rows: scikit-learn's KMeans with k-means++ seeding, or the authors'
        litekmeans (:func:`litekmeans`: ``n_init`` replicates from c sampled rows as centres, the one
        with the smallest sum of distances kept; module docstring); "matlab": the same from the rows
        the authors' ``SC_single_affinity.m`` sampled in its repeat ``random_state`` (an int >= 0;
        :mod:`mkclust.algorithms._matlab`).
    max_iter : int, default=300
        Lloyd iterations per k-means restart (the authors' code: 100).
    norm_floor : float, default=0.0
        Floor of each row's squared norm in the row normalisation: 0 scales every non-zero row to
        unit length; the authors' ``NormalizeFea``: 1e-14.
    eigensolver : {"leading", "full"}, default="leading"
        How the unnormalised Laplacian's c smallest eigenvectors are computed
        (:func:`unnormalized_laplacian_embedding`): "leading", only those c (dense or Lanczos, as the
        normalised affinity's); "full", the whole symmetric eigendecomposition of L and its first c
        columns, as the authors' ``SC.m`` calls ``eig(L)``. They differ only where L's c-th and
        (c+1)-th eigenvalues are equal to rounding, e.g. a Gaussian so narrow that most samples are
        isolated (the module docstring has the measured cells).
    random_state : int, RandomState instance or None, default=None
        Seed of k-means on the embedding.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    embedding_ : ndarray of shape (n_samples, n_clusters)
        The row-normalised U.
    eigenvalues_ : ndarray of shape (n_clusters,)
        Of D^-1/2 W D^-1/2, descending; of L, ascending, for the unnormalised Laplacian.
    objective_ : float
        k-means inertia on the embedding (``kmeans_init`` "sample" or "matlab": litekmeans' sum of
        distances of the kept replicate).
    n_iter_ : int
    """

    cost = Cost(work_n2=6, seconds_at_1000=10, exponent=2, typical_at_1000=0.0915)
    _parameter_constraints = {**COMMON_CONSTRAINTS, "n_init": [POSITIVE_INT],
                              "laplacian": [StrOptions({"normalized", "unnormalized"})],
                              "negative": [StrOptions({"error", "clip", "keep"})],
                              "kmeans_init": [StrOptions({"k-means++", "sample", "matlab"})],
                              "max_iter": [POSITIVE_INT],
                              "norm_floor": [NONNEG],
                              "eigensolver": [StrOptions({"leading", "full"})]}

    def __init__(self, n_clusters=8, n_init=10, negative="error", laplacian="normalized", kmeans_init="k-means++",
                 max_iter=300, norm_floor=0.0, eigensolver="leading", random_state=None):
        super().__init__(n_clusters=n_clusters, n_init=n_init, negative=negative, random_state=random_state)
        self.laplacian = laplacian
        self.eigensolver = eigensolver
        self.kmeans_init = kmeans_init
        self.max_iter = max_iter
        self.norm_floor = norm_floor

    def _check_params(self):
        super()._check_params()
        if self.negative == "keep" and self.laplacian == "normalized":
            raise ValueError("negative='keep' needs laplacian='unnormalized' (the normalised "
                             "Laplacian needs non-negative degrees)")
        if self.eigensolver == "full" and self.laplacian == "normalized":
            raise ValueError("eigensolver='full' is SC.m's eig(L) on the unnormalised Laplacian: it needs "
                             "laplacian='unnormalized'")

    def _embed(self, K):
        if self.laplacian == "normalized" or isinstance(K, LowRankBank):
            return super()._embed(K)
        U, lam = unnormalized_laplacian_embedding(check_affinity(K, self.negative, allow_keep=True), self.n_clusters,
                                                  self.eigensolver)
        return U, None, lam

    def _rows(self, U, dinv):
        sq = np.einsum("ij,ij->i", U, U)
        if self.norm_floor > 0:
            return U / np.sqrt(np.maximum(sq, float(self.norm_floor)))[:, None]
        return U / np.sqrt(np.where(sq > 0, sq, 1.0))[:, None]

    def _kmeans(self, rng):
        F = self.embedding_
        if self.kmeans_init == "k-means++":
            km = KMeans(n_clusters=self.n_clusters, n_init=self.n_init, max_iter=self.max_iter, random_state=rng).fit(F)
            return km.labels_, km.inertia_, km.n_iter_
        n, c, reps = F.shape[0], self.n_clusters, int(self.n_init)
        if self.kmeans_init == "matlab":   # SC_single_affinity.m's repeat random_state: a litekmeans of reps
            # replicates on V, then the one on NormalizeFea(V) whose labels the table reports
            stream = replay(self.random_state, lambda s: s.randsample(n, c), 2 * reps)
            for _ in range(reps):
                stream.randsample(n, c)
            starts = [stream.randsample(n, c) for _ in range(reps)]
        else:
            starts = [sample_centres(n, c, rng) for _ in range(reps)]
        return litekmeans(F @ F.T, starts, c, int(self.max_iter))


def litekmeans(G: np.ndarray, starts: list, n_clusters: int, max_iter: int) -> tuple:
    """(labels, sum of distances, iterations) of the RMKKM authors' ``litekmeans`` on the rows whose
    linear kernel is ``G``: Lloyd from each start's sampled rows as centres (kernel k-means, the empty
    clusters refilled), and of the replicates the one with the smallest sum of the samples' Euclidean
    distances to their centres: litekmeans takes the square root of its distances before summing
    (``D = sqrt(D)``), so the sum of squared distances, k-means' objective, can pick another replicate.
    A replicate that ties keeps the earlier one, as its strict ``<``. Written here because no library
    selects k-means replicates by that sum."""
    diag, rows = np.diag(G).copy(), np.arange(G.shape[0])
    best = None
    for centres in starts:
        km = KernelKMeans(n_clusters=n_clusters, init=np.asarray(centres), n_init=1, max_iter=max_iter)._fit_checked(G)
        total = float(np.sqrt(cluster_distances(G, diag, km.labels_, n_clusters)[rows, km.labels_]).sum())
        if best is None or total < best[1]:
            best = (km.labels_, total, km.n_iter_)
    return best


class NormalizedCut(_SpectralBase):
    """Shi-Malik normalised cut, random-walk normalisation (NC): k-means on the rows of
    D^-1/2 U, the generalised eigenvectors of (D - W) v = lambda D v.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    n_init : int, default=10
        k-means restarts on the embedding.
    negative : {"error", "clip"}, default="error"
        What to do with negative affinities: refuse them or clip them to 0.
    random_state : int, RandomState instance or None, default=None
        Seed of k-means on the embedding.

    Attributes
    ----------
    labels_, eigenvalues_, objective_, n_iter_
        As :class:`SpectralClustering`.
    embedding_ : ndarray of shape (n_samples, n_clusters)
        D^-1/2 U.
    """

    cost = Cost(work_n2=6, seconds_at_1000=10, exponent=2, typical_at_1000=0.0969)
    # "keep" is for the unnormalised Laplacian of SpectralClustering only: refused at the parameter check
    _parameter_constraints = {**COMMON_CONSTRAINTS, "n_init": [POSITIVE_INT],
                              "negative": [StrOptions({"error", "clip"})]}

    def _rows(self, U, dinv):
        return U * dinv[:, None]
