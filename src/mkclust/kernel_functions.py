"""Kernel functions, normalisations, preprocessing of the data matrix and low-rank feature maps: the
pieces the kernel banks (:mod:`mkclust.kernels`) and the estimators are made of. Every kernel is
derived from a Gram product ``X X'`` or from squared distances, so a bank shares one BLAS call;
all come out exactly symmetric and positive semi-definite up to rounding.

Gaussian width conventions differ between the papers; each is named here once
(:data:`GAUSSIAN_CONVENTIONS`), with D the squared Euclidean distance:

========== ============================================ =========================================
convention kernel                                       source
========== ============================================ =========================================
``mkc``    exp(-D / (2 sigma))                          MKC paper, Sect. 5.2 (sigma is a variance)
``rmkkm``  exp(-D / (2 (t0 * sqrt(max D))^2))           RMKKM paper Sect. 4.3, authors' code
``scmk``   exp(-D / (t * max D))                        SCMK paper, Experiment Setup
``sigma``  exp(-D / (2 sigma^2))                        the textbook width (ODMC, gauss_grid)
========== ============================================ =========================================
"""

from __future__ import annotations

import logging
from typing import Callable

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
import scipy.sparse as sp

from mkclust._validation import check_kernels, nearest_psd

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# kernel functions (from a Gram matrix or squared distances, so a bank shares one product)
# --------------------------------------------------------------------------------------------


def _symmetrize(K: np.ndarray) -> np.ndarray:
    """Exact symmetry: BLAS gemm results differ from their transpose in the last bits."""
    K += K.T
    K *= 0.5
    return K


def gram(X) -> np.ndarray:
    """Linear kernel ``X X'`` as a dense, exactly symmetric float64 matrix (X may be sparse)."""
    if sp.issparse(X):
        G = np.asarray((X @ X.T).todense(), dtype=np.float64)
    else:
        X = np.asarray(X, dtype=np.float64)
        G = X @ X.T
    return _symmetrize(G)


def sq_dists_from_gram(G: np.ndarray, sq: np.ndarray | None = None) -> np.ndarray:
    """Squared Euclidean distances ||x_i - x_j||^2 = G_ii + G_jj - 2 G_ij (clipped at 0, zero
    diagonal). The same formula gives feature-space distances when G is any kernel matrix.

    For a rectangular block G = X X_L' (n, m) whose m columns are the first m rows of X (a Nystroem
    landmark block), ``sq`` holds the n squared row norms; the self pairs are then the block's
    diagonal, which is set to 0 as for a square G."""
    d = np.diag(G) if sq is None else sq
    D = d[:, None] + d[None, :G.shape[1]] - 2.0 * G  # exactly symmetric when G is (addition commutes)
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return D


def linear_kernel(X) -> np.ndarray:
    """k(x, y) = x'y."""
    return gram(X)


def polynomial_from_gram(G: np.ndarray, a: float, b: float) -> np.ndarray:
    """k(x, y) = (a + x'y)^b, given the Gram matrix. PSD for a >= 0 and integer b >= 1."""
    return (a + G) ** b


def polynomial_kernel(X, a: float = 1.0, b: float = 2.0) -> np.ndarray:
    """k(x, y) = (a + x'y)^b."""
    return polynomial_from_gram(gram(X), a, b)


def cosine_kernel(X) -> np.ndarray:
    """k(x, y) = x'y / (||x|| ||y||): the linear kernel with unit diagonal."""
    return normalize_unit_diagonal(gram(X))


def gaussian_scale(D: np.ndarray, width: float, convention: str) -> float:
    """The denominator s of exp(-D / s) for a width parameter under a paper's convention."""
    try:
        return GAUSSIAN_CONVENTIONS[convention](D, float(width))
    except KeyError:
        raise ValueError(
            f"unknown Gaussian width convention {convention!r}; known: {sorted(GAUSSIAN_CONVENTIONS)}"
        ) from None


def gaussian_from_sqdist(D: np.ndarray, width: float, convention: str = "sigma") -> np.ndarray:
    """Gaussian kernel exp(-D / s) with s from :func:`gaussian_scale`."""
    s = gaussian_scale(D, width, convention)
    if not s > 0:
        raise ValueError(f"Gaussian kernel scale must be positive, got {s} (all points identical?)")
    return np.exp(-D / s)


def gaussian_kernel(X, width: float, convention: str = "sigma") -> np.ndarray:
    """Gaussian kernel of X with the given width and convention."""
    return gaussian_from_sqdist(sq_dists_from_gram(gram(X)), width, convention)


GAUSSIAN_CONVENTIONS: dict[str, Callable[[np.ndarray, float], float]] = {
    # MKC Sect. 5.2: exp(-(x-y)'(x-y) / 2 sigma)
    "mkc": lambda D, sigma: 2.0 * sigma,
    # RMKKM Sect. 4.3: delta = t * D0, D0 the max distance; exp(-D / 2 delta^2)
    "rmkkm": lambda D, t0: 2.0 * (t0 * np.sqrt(D.max())) ** 2,
    # SCMK Experiment Setup: exp(-D / (t d_max^2))
    "scmk": lambda D, t: t * D.max(),
    # textbook: exp(-D / 2 sigma^2)
    "sigma": lambda D, sigma: 2.0 * sigma**2,
}

# --------------------------------------------------------------------------------------------
# normalisations
# --------------------------------------------------------------------------------------------


def normalize_unit_diagonal(K: np.ndarray) -> np.ndarray:
    """K_ij / sqrt(K_ii K_jj) (RMKKM and SCMK papers). Rows with a zero diagonal stay zero."""
    d = np.diag(K).copy()
    if (d < 0).any():
        raise ValueError("cannot normalise a kernel with a negative diagonal entry")
    s = np.sqrt(d)
    s[s == 0] = 1.0
    return K / np.outer(s, s)  # the outer product is exactly symmetric, so the result is too


def normalize_trace(K: np.ndarray) -> np.ndarray:
    """Scale K so that its mean diagonal entry is 1 (trace(K) = n), the usual MKL normalisation."""
    t = np.trace(K)
    if not t > 0:
        raise ValueError("cannot trace-normalise a kernel with non-positive trace")
    return K * (K.shape[0] / t)


def normalize_centered_trace(K: np.ndarray) -> np.ndarray:
    """Scale K so that its *centred* form H K H (H = I - 11'/n) has trace n: the mean squared
    distance of the feature vectors from their mean is 1. tr(H K H) = tr(K) - 1'K1 / n, so no
    centred copy is formed. Where a model has a free bias or a balance constraint on the summed
    scores (MKC), the feature-space mean is absorbed and this is the scale that compares kernels:
    a wide Gaussian kernel has trace n but most of it in the constant direction."""
    n = K.shape[0]
    t = np.trace(K) - K.sum() / n
    if not t > 0:
        raise ValueError("cannot normalise a kernel whose centred trace is not positive (a constant kernel)")
    return K * (n / t)


def center_kernel(K: np.ndarray) -> np.ndarray:
    """H K H with H = I - ee'/n: the kernel of the features centred at their mean (a new array; no
    n^3 product)."""
    m = K.mean(axis=0)
    return K - m[:, None] - m[None, :] + m.mean()


def rescale_max(K: np.ndarray) -> np.ndarray:
    """Divide by the largest absolute entry: entries in [-1, 1], in [0, 1] for a non-negative
    kernel; a positive scale, so PSD is kept."""
    mx = np.abs(K).max()
    return K / mx if mx > 0 else K


def rescale_feature_sqdist(K: np.ndarray) -> np.ndarray:
    """Divide by the largest squared distance the kernel induces, max_ij K_ii + K_jj - 2 K_ij (the
    literal reading of the SCMK paper's rescaling sentence)."""
    mx = sq_dists_from_gram(K).max()
    return K / mx if mx > 0 else K


NORMALIZATIONS: dict[str, Callable[[np.ndarray], np.ndarray] | None] = {
    "none": None,
    "unit_diag": normalize_unit_diagonal,
    "trace": normalize_trace,
    "center_trace": normalize_centered_trace,
    "max": rescale_max,
    "feature_sqdist": rescale_feature_sqdist,
}

#: the reference scale of a Gaussian width grid, sigma = w sqrt(ref), from the off-diagonal squared
#: distances: their mean (default), median or max; the mean of the distances themselves
#: (``mean_distance``, the ODMC paper's sentence read word for word); or 1 (``none``: absolute sigmas)
GAUSS_REFERENCES: dict[str, Callable[[np.ndarray], float]] = {
    "mean": np.mean,
    "median": np.median,
    "max": np.max,
    "mean_distance": lambda off: np.sqrt(np.maximum(off, 0.0)).mean(),
    "none": lambda off: 1.0,
}


def _normalize(K: np.ndarray, how: str | None) -> np.ndarray:
    how = "none" if how is None else how
    if how not in NORMALIZATIONS:
        raise ValueError(f"unknown normalisation {how!r}; known: {sorted(NORMALIZATIONS)}")
    fn = NORMALIZATIONS[how]
    return K if fn is None else fn(K)


# --------------------------------------------------------------------------------------------
# preprocessing of the data matrix before a bank is built
# --------------------------------------------------------------------------------------------


def _row_sq_norms(X) -> np.ndarray:
    """||x_i||^2 for the rows of a dense or scipy-sparse X."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X)


def _unit_rows(X):
    if sp.issparse(X):
        norms = np.sqrt(_row_sq_norms(X))
        norms[norms == 0] = 1.0
        return sp.diags(1.0 / norms) @ X
    norms = np.linalg.norm(X, axis=1)
    norms[norms == 0] = 1.0
    return X / norms[:, None]


def _zscore(X):
    if sp.issparse(X):
        X = X.toarray()
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    return (X - X.mean(axis=0)) / sd


def _minmax(X):
    """Each column mapped affinely onto [-1, 1] (LIBSVM's ``svm-scale`` default); a constant column
    becomes 0."""
    if sp.issparse(X):
        X = X.toarray()
    X = np.asarray(X, dtype=np.float64)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = hi - lo
    const = span == 0
    span[const] = 1.0
    out = 2.0 * (X - lo) / span - 1.0
    out[:, const] = 0.0
    return out


PREPROCESS: dict[str, Callable] = {
    "none": lambda X: X,
    # rows scaled to unit L2 norm (the RMKKM authors' ``_uni`` files)
    "unit": _unit_rows,
    # columns z-scored, then rows to unit norm (the authors' ``_zscore_uni`` files)
    "zscore_unit": lambda X: _unit_rows(_zscore(X)),
    "zscore": _zscore,
    # columns to [-1, 1] (LIBSVM's svm-scale): the MMC papers' UCI protocol (ODMC, its baselines)
    "minmax": _minmax,
}


def apply_preprocess(X, how: str | None):
    """Apply a named preprocessing of the data matrix (see :data:`PREPROCESS`)."""
    how = "none" if how is None else how
    if how not in PREPROCESS:
        raise ValueError(f"unknown preprocessing {how!r}; known: {sorted(PREPROCESS)}")
    return PREPROCESS[how](X)


# --------------------------------------------------------------------------------------------
# low-rank feature maps
# --------------------------------------------------------------------------------------------


def clip_psd(K) -> np.ndarray:
    """The nearest positive semi-definite matrix to a symmetric K in the Frobenius norm: its
    eigendecomposition with the negative eigenvalues set to 0 (O(n^3)). For a kernel that a fit
    refuses as not positive semi-definite (:func:`mkclust._validation.check_psd`) when its negative
    part is known to be noise; a large negative part means the matrix is not a kernel."""
    return nearest_psd(check_kernels(K, allow_multiple=False)[0])[0]


def top_eigh(A, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest eigenpairs of the symmetric A, ascending (``scipy.linalg.eigh``'s order), by
    LAPACK's subset driver; where that returns fewer than k pairs (it can for a spectrum clustered at
    one value: 2 I + 1e-17 at n = 50 gives 0 of 4), from the full decomposition."""
    n = A.shape[0]
    lam, V = scipy.linalg.eigh(A, subset_by_index=[n - k, n - 1])
    if lam.size < k:
        lam, V = scipy.linalg.eigh(A)
        lam, V = lam[n - k:], V[:, n - k:]
    return lam, V


def feature_map(K, rank: int | None = None, energy: float | None = None, return_info: bool = False):
    """Explicit features F (n, r) with K ~= F F', from the eigendecomposition of K.

    Eigenvalues below ``n * eps * lambda_max`` (rounding noise, including small negative ones) are
    dropped. ``rank`` keeps the r largest eigenpairs; ``energy`` in (0, 1] keeps the fewest
    leading eigenpairs whose eigenvalues sum to at least that fraction of the retained spectrum;
    with both, the smaller r wins. This stands in for the kernel PCA of the MKC paper (Sect. 2.1).
    With ``return_info`` also returns a dict (rank, retained_energy, eigenvalues).
    """
    K = check_kernels(K, allow_multiple=False)[0]
    n = K.shape[0]
    if rank is not None and not (1 <= int(rank)):
        raise ValueError(f"rank must be a positive integer, got {rank}")
    if energy is not None and not (0 < energy <= 1):
        raise ValueError(f"energy must be in (0, 1], got {energy}")
    if rank is not None and energy is None and 5 * int(rank) <= n:
        # Lanczos (ARPACK): O(n^2) per step instead of the O(n^3) reduction of a dense eigh, the kernel
        # PCA's cost in MKC's timing figures; the start vector is fixed, so the result is deterministic.
        # Lanczos converges slowly on a cluster of zero eigenvalues (a linear kernel of d < rank
        # features: 16.6 s instead of 3.1 s at n = 4000), so it asks only for the eigenvalues above
        # the noise level, counted from the singular values of K times rank + 10 random vectors
        # ARPACK can also fail outright where the top of the spectrum is one cluster (a Gaussian kernel
        # of small width is nearly the identity: on the benchmark's heart-h, a centred kernel whose top 50
        # eigenvalues lie within 1e-5 of 1 failed or not with the array's memory alignment); the dense
        # eigh answers there.
        rng = np.random.default_rng(0)
        sv = scipy.linalg.svd(K @ rng.standard_normal((n, int(rank) + 10)), compute_uv=False)
        k = max(1, min(int(rank), int((sv > 10 * n * np.finfo(float).eps * sv[0]).sum())))
        try:
            lam, V = scipy.sparse.linalg.eigsh(K, k=k, which="LA", v0=rng.standard_normal(n))
        except scipy.sparse.linalg.ArpackError as exc:          # ArpackNoConvergence among them
            log.info("feature_map: ARPACK failed (%s; n = %d, k = %d): the dense eigensolver instead", exc, n, k)
            lam, V = top_eigh(K, k)
        order = np.argsort(lam)  # ascending, as eigh's
        lam, V = lam[order], V[:, order]
        total = None
    elif rank is not None and energy is None and int(rank) < n // 2:
        lam, V = top_eigh(K, int(rank))
        total = None
    else:
        lam, V = scipy.linalg.eigh(K)
        total = lam[lam > 0].sum()
    lam, V = lam[::-1], V[:, ::-1]
    r = _leading_rank(lam, n, rank, energy)
    lam, V = lam[:r], V[:, :r]
    F = V * np.sqrt(lam)[None, :]
    if not return_info:
        return F
    retained = float(lam.sum() / total) if total else float("nan")
    return F, {"rank": int(r), "retained_energy": retained, "eigenvalues": lam.tolist()}


def _leading_rank(lam: np.ndarray, n: int, rank: int | None, energy: float | None) -> int:
    """How many of the descending eigenvalues ``lam`` (of an n x n kernel) to keep: those above
    n eps lambda_max (rounding noise, small negative ones), then the fewest holding ``energy`` of
    what is left, then at most ``rank`` (see :func:`feature_map`)."""
    r = int((lam > max(n * np.finfo(float).eps * max(lam[0], 0.0), 1e-300)).sum())
    if energy is not None and r:
        r = min(r, int(np.searchsorted(np.cumsum(lam[:r]) / lam[:r].sum(), energy - 1e-12) + 1))
    if rank is not None:
        r = min(r, int(rank))
    return r


def principal_directions(F: np.ndarray, rank: int | None = None,
                         energy: float | None = None) -> tuple[np.ndarray, dict]:
    """V_r (D, r), the leading right singular vectors of a feature matrix F (n, D): F V_r is
    :func:`feature_map` of F F' (uncentred, the same eigenpairs and the same ``rank`` / ``energy``
    rule) without forming the n x n matrix, and new rows are projected by the same V_r. Returns
    (V_r, {rank, retained_energy})."""
    _, s, Vt = scipy.linalg.svd(F, full_matrices=False, check_finite=False)
    lam = s**2
    r = _leading_rank(lam, F.shape[0], rank, energy)
    return Vt[:r].T, {"rank": r, "retained_energy": float(lam[:r].sum() / lam.sum())}


def combine(K: np.ndarray, weights) -> np.ndarray:
    """sum_k weights[k] * K[k] as one BLAS contraction."""
    K = np.asarray(K)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (K.shape[0],):
        raise ValueError(f"need {K.shape[0]} weights, got shape {w.shape}")
    return np.tensordot(w, K, axes=1)
