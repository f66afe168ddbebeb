"""What SimpleMKKM, MKKM-MiR, ONKC, LF-MVC and LMKKM (:mod:`mkclust.algorithms.simplemkkm`,
:mod:`.mkkm_mir`, :mod:`.late_fusion`, :mod:`.lmkkm`) share: their base class (a bank in, the
weights and H learned once per batch of seeds, labels from H), the relaxed partition H (the k
leading eigenvectors of a combined kernel), the weight QP on the simplex, and their authors' kernel
preparation.

The relaxation (every paper of the family, after Zha et al. 2001): kernel k-means on K minimises
Tr(K) - Tr(H' K H) over normalised indicator matrices H; dropping the discreteness, H'H = I_k, its
minimiser is the k leading eigenvectors of K (Ky Fan), and the labels come from k-means on H's rows.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state

from mkclust.algorithms.base import BaseClusterer, COMMON_CONSTRAINTS, NONNEG, POSITIVE_INT, StrOptions, batch_groups
from mkclust.kernel_functions import top_eigh
from mkclust.lowrank import LowRankBank

#: the kernel preparations: "paper" takes the bank as given (the benchmark's kernels have a unit
#: diagonal already); "authors" centres each kernel and scales it to a unit diagonal, and normalises
#: H's rows before k-means, as the authors' demos do (kcenter, knorm; the rows of H to unit length)
PROTOCOLS = ("paper", "authors")


def authors_kernels(K):
    """Each kernel of the bank (m, n, n) centred in feature space, (I - 11'/n) K (I - 11'/n), then
    scaled to a unit diagonal, K_ij / sqrt(K_ii K_jj) (a zero diagonal entry left at zero): the
    authors' demos' ``kcenter`` and ``knorm`` (on a low-rank bank, the same on its factors)."""
    if isinstance(K, LowRankBank):
        return K.centred().unit_diagonal()
    K = K - K.mean(axis=1, keepdims=True)
    K = K - K.mean(axis=2, keepdims=True)
    d = np.sqrt(np.clip(np.einsum("pii->pi", K), 0.0, None))
    scale = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0)
    return K * scale[:, :, None] * scale[:, None, :]


# Each function below takes a dense bank (m, n, n) or a low-rank one (mkclust.lowrank.LowRankBank),
# whose operations give the same numbers without forming an n x n matrix.

def combine(K, weights: np.ndarray):
    """sum_p weights_p K_p (one BLAS product over the bank; a combined view of a low-rank bank)."""
    if isinstance(K, LowRankBank):
        return K.combine(weights)
    return np.tensordot(weights, K, axes=1)


def mean_kernel(K):
    """The equal-weight mean of the bank's kernels."""
    return K.combine(np.full(K.n_kernels, 1.0 / K.n_kernels)) if isinstance(K, LowRankBank) else K.mean(axis=0)


def single(K, p: int):
    """The p-th kernel of the bank."""
    return K.kernel(p) if isinstance(K, LowRankBank) else K[p]


def leading(K, k: int) -> tuple[np.ndarray, float]:
    """H (n, k), the k leading eigenvectors of the symmetric K, and the sum of their eigenvalues,
    max over H'H = I of Tr(H' K H) (Ky Fan)."""
    if isinstance(K, LowRankBank):
        lam, H = K.leading(k)
        return H, float(lam.sum())
    lam, H = top_eigh(K, k)
    return H, float(lam.sum())


class _DenseLeading:
    """:class:`mkclust.lowrank.Leading`'s interface on a dense bank: H, value, traces()."""

    def __init__(self, bank: np.ndarray, weights: np.ndarray, k: int):
        self.bank = bank
        self.H, self.value = leading(np.tensordot(weights, bank, axes=1), k)

    def traces(self) -> np.ndarray:
        return traces(self.bank, self.H)


def eigen(K, weights: np.ndarray, k: int, start=None):
    """The k leading eigenvectors of sum_p weights_p K_p as an object with ``value`` (the sum of their
    eigenvalues), ``H`` (n, k) and ``traces()`` (Tr(H' K_p H), (m,)); on a low-rank bank H is formed
    only when read (:class:`mkclust.lowrank.Leading`), and ``start`` (this function's result at
    other weights) starts its Lanczos there (dense banks: LAPACK, no start)."""
    if isinstance(K, LowRankBank):
        return K.combine(weights).eigen(k, start)
    return _DenseLeading(K, weights, k)


def traces(K, H: np.ndarray | None = None) -> np.ndarray:
    """Tr(H' K_p H) for every kernel of the bank (m,); Tr(K_p) without H."""
    if isinstance(K, LowRankBank):
        return K.traces(H)
    if H is None:
        return np.einsum("pii->p", K)
    return np.einsum("pij,ik,jk->p", K, H, H, optimize=True)


def gram(K) -> np.ndarray:
    """M_pq = Tr(K_p K_q) = <K_p, K_q>_F (symmetric kernels), the (m, m) matrix of MKKM-MiR's and
    ONKC's regulariser."""
    if isinstance(K, LowRankBank):
        return K.frobenius_gram()
    flat = K.reshape(K.shape[0], -1)
    return flat @ flat.T


def simplex_qp(Q: np.ndarray, c: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """argmin over the simplex {w >= 0, sum w = 1} of 1/2 w'Qw + c'w, Q symmetric positive
    semi-definite (m small: one weight per kernel), by scipy's SLSQP from ``start`` (default the
    centre), its gradient exact; the result clipped at 0 and rescaled to sum 1 (SLSQP's bounds hold
    to rounding). A convex problem: every local minimum SLSQP stops at is global."""
    m = len(c)
    x0 = np.full(m, 1.0 / m) if start is None else np.asarray(start, dtype=float)
    res = scipy.optimize.minimize(lambda w: 0.5 * w @ Q @ w + c @ w, x0, jac=lambda w: Q @ w + c,
                                  method="SLSQP", bounds=[(0.0, 1.0)] * m,
                                  constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0,
                                                "jac": lambda w: np.ones_like(w)}],
                                  options={"ftol": 1e-14, "maxiter": 500})
    w = np.clip(res.x, 0.0, None)
    return w / w.sum()


def labels_from(H: np.ndarray, n_clusters: int, n_init: int, rng, normalize_rows: bool) -> np.ndarray:
    """Labels by k-means on the rows of H (scikit-learn's KMeans, ``n_init`` k-means++ starts, the
    lowest inertia kept), the rows first scaled to unit length where ``normalize_rows``."""
    if normalize_rows:
        norms = np.linalg.norm(H, axis=1, keepdims=True)
        H = H / np.where(norms > 0, norms, 1.0)
    return KMeans(n_clusters=n_clusters, n_init=int(n_init), random_state=rng).fit(H).labels_.astype(np.int64)


def converged(trace: list, tol: float) -> bool:
    """The last step changed the objective by at most ``tol`` of its size."""
    return len(trace) > 1 and abs(trace[-2] - trace[-1]) <= tol * max(abs(trace[-1]), 1e-300)


#: the parameters every estimator of the family ends its parameter list with (in its docstring)
FAMILY_PARAMS_DOC = """
    n_init : int, default=10
        k-means starts on the rows of the final partition matrix (the lowest inertia kept).
    protocol : {"paper", "authors"}, default="paper"
        "authors": kernels centred and scaled to a unit diagonal, the partition matrix's rows scaled to
        unit length before k-means, as the authors' demos do.
    random_state : int, RandomState instance or None, default=None
        Seeds the k-means on the rows (the rest of the fit is deterministic).
"""


class KernelFamilyBase(BaseClusterer):
    """The shared part of SimpleMKKM, MKKM-MiR, ONKC, LF-MVC and LMKKM: a bank (m, n, n) in, prepared by
    ``protocol``; ``_learn(K)`` (each method's own) returns its fitted attributes and the final H, a
    deterministic function of the bank and the parameters; the labels come from k-means on H's rows
    (``n_init`` starts, seeded by ``random_state``). So runs that differ in :data:`LABEL_ONLY` alone
    learn once (:meth:`fit_batch`)."""

    input_kind = "kernels"
    low_rank_cross = True
    #: the parameters that enter only the k-means on H
    LABEL_ONLY = ("random_state", "n_init")
    _family_constraints = {**COMMON_CONSTRAINTS, "n_init": [POSITIVE_INT], "max_iter": [POSITIVE_INT],
                           "tol": [NONNEG], "protocol": [StrOptions(set(PROTOCOLS))]}

    def _prepare(self, K) -> np.ndarray:
        K = self._validate_kernel(K)
        return authors_kernels(K) if self.protocol == "authors" else K

    def _learn(self, K: np.ndarray) -> tuple[dict, np.ndarray]:
        raise NotImplementedError

    def _finish(self, fitted: dict, H: np.ndarray) -> "KernelFamilyBase":
        for name, value in fitted.items():
            setattr(self, name, value)
        self.embedding_ = H
        self.labels_ = labels_from(H, int(self.n_clusters), int(self.n_init), check_random_state(self.random_state),
                                   normalize_rows=self.protocol == "authors")
        return self

    def fit(self, K, y=None):
        return self._finish(*self._learn(self._prepare(K)))

    @classmethod
    def fit_batch(cls, estimators, K) -> list:
        """Fit several estimators on one bank K; returns them, fitted, each exactly as its own ``fit``.
        Runs equal in every parameter but :data:`LABEL_ONLY` learn the weights and H once and each
        runs its own k-means: 10 seeds cost one learning and 10 k-means. The shared arrays are one
        object for the estimators sharing them (read them, do not write them); ``shared_fit_`` is True
        on those that reused another's."""
        estimators, groups = batch_groups(cls, estimators, ("protocol",))
        for group in groups:
            prepared = group[0]._prepare(K)
            done: dict = {}
            for e in group:
                e.n_features_in_ = group[0].n_features_in_
                key = repr(sorted((k, v) for k, v in e.get_params().items() if k not in cls.LABEL_ONLY))
                e.shared_fit_ = key in done
                if not e.shared_fit_:
                    done[key] = e._learn(prepared)
                e._finish(*done[key])
        return estimators
