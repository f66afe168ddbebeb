"""What SimpleMKKM, MKKM-MiR and ONKC (:mod:`mkclust.algorithms.simplemkkm`) share: the relaxed
partition H (the k leading eigenvectors of a combined kernel), the weight QP on the simplex, the
labels from H, and their authors' kernel preparation.

The relaxation (every paper of the family, after Zha et al. 2001): kernel k-means on K minimises
Tr(K) - Tr(H' K H) over normalised indicator matrices H; dropping the discreteness, H'H = I_k, its
minimiser is the k leading eigenvectors of K (Ky Fan), and the labels come from k-means on H's rows.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
from sklearn.cluster import KMeans

from mkclust.kernel_functions import top_eigh

#: the kernel preparations: "paper" takes the bank as given (the benchmark's kernels have a unit
#: diagonal already); "authors" centres each kernel and scales it to a unit diagonal, and normalises
#: H's rows before k-means, as the authors' demos do (kcenter, knorm; the rows of H to unit length)
PROTOCOLS = ("paper", "authors")


def authors_kernels(K: np.ndarray) -> np.ndarray:
    """Each kernel of the bank (m, n, n) centred in feature space, (I - 11'/n) K (I - 11'/n), then
    scaled to a unit diagonal, K_ij / sqrt(K_ii K_jj) (a zero diagonal entry left at zero): the
    authors' demos' ``kcenter`` and ``knorm``."""
    K = K - K.mean(axis=1, keepdims=True)
    K = K - K.mean(axis=2, keepdims=True)
    d = np.sqrt(np.clip(np.einsum("pii->pi", K), 0.0, None))
    scale = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0)
    return K * scale[:, :, None] * scale[:, None, :]


def combine(K: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_p weights_p K_p (one BLAS product over the bank)."""
    return np.tensordot(weights, K, axes=1)


def leading(K: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """H (n, k), the k leading eigenvectors of the symmetric K, and the sum of their eigenvalues,
    max over H'H = I of Tr(H' K H) (Ky Fan)."""
    lam, H = top_eigh(K, k)
    return H, float(lam.sum())


def traces(K: np.ndarray, H: np.ndarray) -> np.ndarray:
    """Tr(H' K_p H) for every kernel of the bank (m,)."""
    return np.einsum("pij,ik,jk->p", K, H, H, optimize=True)


def gram(K: np.ndarray) -> np.ndarray:
    """M_pq = Tr(K_p K_q) = <K_p, K_q>_F (symmetric kernels), the (m, m) matrix of MKKM-MiR's and
    ONKC's regulariser."""
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
