"""Kernel functions, normalisations, named kernel banks and low-rank feature maps.

A *bank* is a named, documented list of kernels (``BANKS``); :func:`build_bank` computes it from
data with a single Gram product ``X X'`` (one BLAS call), from which every squared-distance,
polynomial and Gaussian kernel of the bank is derived elementwise. All kernels come out exactly
symmetric and positive semi-definite up to rounding.

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

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
import scipy.sparse as sp

from mkclust._io import atomic_savez
from mkclust._validation import check_features, check_kernels

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
        rng = np.random.default_rng(0)
        sv = scipy.linalg.svd(K @ rng.standard_normal((n, int(rank) + 10)), compute_uv=False)
        k = max(1, min(int(rank), int((sv > 10 * n * np.finfo(float).eps * sv[0]).sum())))
        lam, V = scipy.sparse.linalg.eigsh(K, k=k, which="LA", v0=rng.standard_normal(n))
        order = np.argsort(lam)  # ascending, as eigh's
        lam, V = lam[order], V[:, order]
        total = None
    elif rank is not None and energy is None and int(rank) < n // 2:
        lam, V = scipy.linalg.eigh(K, subset_by_index=[n - int(rank), n - 1])
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


# --------------------------------------------------------------------------------------------
# kernel banks
# --------------------------------------------------------------------------------------------


@dataclass
class KernelBank:
    """A list of kernels on the same n samples: ``kind="gram"`` holds ``K`` (m, n, n);
    ``kind="features"`` holds ``features`` [F_0, ..., F_{m-1}], F_k (n, r_k), K_k ~= F_k F_k'."""

    kind: str
    names: list[str]
    K: np.ndarray | None = None
    features: list[np.ndarray] | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind == "gram":
            if self.K is None or self.K.ndim != 3:
                raise ValueError("a gram bank needs K of shape (m, n, n)")
            m = self.K.shape[0]
        elif self.kind == "features":
            if not self.features:
                raise ValueError("a features bank needs a non-empty list of feature matrices")
            m = len(self.features)
        else:
            raise ValueError(f"kind must be 'gram' or 'features', got {self.kind!r}")
        if len(self.names) != m:
            raise ValueError(f"{len(self.names)} names for {m} kernels")

    @property
    def n_kernels(self) -> int:
        return len(self.names)

    @property
    def n_samples(self) -> int:
        return self.K.shape[1] if self.kind == "gram" else self.features[0].shape[0]

    def kernel(self, k: int) -> np.ndarray:
        """The k-th Gram matrix (F_k F_k' for a features bank), without forming the others."""
        if self.kind == "gram":
            return self.K[k]
        F = self.features[k]
        return _symmetrize(F @ F.T)

    def gram(self) -> np.ndarray:
        """Gram matrices (m, n, n) (computed as F F' for a features bank)."""
        if self.kind == "gram":
            return self.K
        return np.stack([self.kernel(k) for k in range(self.n_kernels)])

    def feature_list(self, rank: int | None = None, energy: float | None = None) -> list[np.ndarray]:
        """Feature matrices F_k (from an eigendecomposition for a gram bank)."""
        if self.kind == "features":
            return self.features
        return [feature_map(K, rank=rank, energy=energy) for K in self.K]

    def save(self, path) -> None:
        """Write the ``.npz`` contract of DESIGN.md atomically."""
        arrays = {"kind": np.array(self.kind), "names": np.array(self.names, dtype=str),
                  "meta": np.array(json.dumps(self.meta))}
        if self.kind == "gram":
            arrays["K"] = self.K
        else:
            arrays.update({f"F_{k}": F for k, F in enumerate(self.features)})
        atomic_savez(path, **arrays)

    @classmethod
    def load(cls, path) -> "KernelBank":
        with np.load(Path(path), allow_pickle=False) as z:
            kind = str(z["kind"])
            names = [str(s) for s in z["names"]]
            meta = json.loads(str(z["meta"]))
            if kind == "gram":
                return cls(kind, names, K=z["K"], meta=meta)
            return cls(kind, names, features=[z[f"F_{k}"] for k in range(len(names))], meta=meta)


def _bank_mkc3(X, G, D, d: int = 2, sigma: float | None = None, widths: Sequence[float] | None = None,
               normalize: str = "center_trace"):
    """MKC paper Sect. 5.2: K1 = x'y, K2 = (1 + x'y)^d, K3 = exp(-||x-y||^2 / 2 sigma).

    The paper gives neither d nor sigma. Defaults (our choice): d = 2, sigma = the mean squared
    pairwise distance (over i != j). ``widths`` replaces K3 by one Gaussian per entry w, sigma = w
    times that mean (``widths=[1]`` is the default K3): MKC weights the widths itself, so no width is
    picked by looking at labels; the configurations use w in {1, 1/2, 1/4, 1/8} on z-scored features
    (README "MKC"). The beta-weighted regulariser of problem (2.6) compares kernels
    on one scale, so each is normalised; the paper does not say how. Default (our choice):
    ``center_trace``, the centred kernel has trace n (:func:`normalize_centered_trace`), because MKC
    centres its features (kernel PCA) and its bias absorbs the mean. Plain trace normalisation
    favours the linear kernel on ringnorm, where the wide Gaussian kernel keeps much of its trace in
    the constant direction (measured on ringnorm n = 1000, C = 30, rank 50: MKC acc 0.526 with beta
    on the linear kernel and 100 rounds with ``trace``; 0.953 with beta_3 = 0.95 in 13 rounds with
    ``center_trace``). ``normalize="trace"`` or ``"none"`` give the alternatives.
    """
    if sigma is not None and widths is not None:
        raise ValueError("bank mkc3 takes sigma or widths, not both")
    mean = float(D.sum() / max(D.size - min(D.shape), 1))  # mean over i != j (self pairs on D's diagonal)
    sigmas = [float(sigma)] if sigma is not None else [float(w) * mean for w in (widths or [1.0])]
    if not sigmas or min(sigmas) <= 0:
        raise ValueError(f"bank mkc3: Gaussian widths must be positive, got {widths if sigma is None else sigma}")

    def kernels():  # one at a time, so build_bank holds a single temporary
        yield G
        yield polynomial_from_gram(G, 1.0, d)
        for s_ in sigmas:
            yield gaussian_from_sqdist(D, s_, "mkc")

    names = ["linear", f"poly(a=1,b={d})"] + [f"gauss(mkc,sigma={s_:.6g})" for s_ in sigmas]
    info = {"d": d, "sigma": sigmas[0] if len(sigmas) == 1 else sigmas, "normalize": normalize}
    if widths is not None:
        info["widths"] = [float(w) for w in widths]
    return kernels(), names, info


RMKKM_T0 = (0.01, 0.05, 0.1, 1.0, 10.0, 50.0, 100.0)


def _bank_rmkkm12(X, G, D, t0: Sequence[float] = RMKKM_T0, normalize: str = "unit_diag"):
    """RMKKM paper Sect. 4.3, built as the authors' public code builds it (github.com/csliangdu/RMKKM): seven
    Gaussian kernels exp(-D / (2 (t0 sqrt(max D))^2)), t0 in {0.01, 0.05, 0.1, 1, 10, 50, 100};
    four polynomial kernels (a + x'y)^b, a in {0, 1}, b in {2, 4}; the linear kernel, which after
    the normalisation K_ij / sqrt(K_ii K_jj) is the paper's cosine kernel. The paper's extra
    "rescaled to [0, 1]" is not in the code and is not applied (``normalize`` can change that).
    Note: with t0 = 50 and 100 the Gaussian kernels are numerically constant 1, as in the code.
    The authors' data files are row-normalised first: use ``preprocess="unit"`` (or
    ``"zscore_unit"`` for YALE and ORL) to match them.
    """
    polys = [(a, b) for a in (0.0, 1.0) for b in (2, 4)]
    names = [f"gauss(rmkkm,t0={t:g})" for t in t0] + [f"poly(a={a:g},b={b})" for a, b in polys] + ["cosine"]
    kernels = itertools.chain((gaussian_from_sqdist(D, t, "rmkkm") for t in t0),
                              (polynomial_from_gram(G, a, b) for a, b in polys), [G])
    return kernels, names, {"t0": list(t0), "normalize": normalize}


SCMK_T = (0.01, 0.05, 0.1, 1.0, 10.0, 50.0, 100.0)


def _bank_scmk12(X, G, D, t: Sequence[float] = SCMK_T, normalize: str = "max"):
    """SCMK paper, Experiment Setup: seven Gaussian kernels exp(-D / (t d_max^2)), t in
    {0.01, 0.05, 0.1, 1, 10, 50, 100}; the linear kernel x'y; four polynomial kernels (a + x'y)^b,
    a in {0, 1}, b in {2, 4}; "all kernels are rescaled to [0, 1] by dividing each element by the
    largest pair-wise squared distance".

    That sentence cannot hold literally (dividing by a distance does not map onto [0, 1]). Our
    choice, ``normalize="max"``: divide each kernel by its largest entry, a positive rescaling (PSD
    kept) after which every entry lies in [0, 1] for the non-negative kernels and the largest is 1.
    ``normalize="feature_sqdist"`` is the literal reading (divide by the largest squared distance
    the kernel induces). The 12 YALE kernels a later paper by the SCMK authors ships equal the
    ``rmkkm12`` bank to 1e-15, which reproduces their numbers more closely.
    """
    polys = [(a, b) for a in (0.0, 1.0) for b in (2, 4)]
    names = [f"gauss(scmk,t={ti:g})" for ti in t] + ["linear"] + [f"poly(a={a:g},b={b})" for a, b in polys]
    kernels = itertools.chain((gaussian_from_sqdist(D, ti, "scmk") for ti in t), [G],
                              (polynomial_from_gram(G, a, b) for a, b in polys))
    return kernels, names, {"t": list(t), "normalize": normalize}


GAUSS_GRID_WIDTHS = (0.25, 0.5, 1.0, 2.0, 4.0)


def _bank_gauss_grid(X, G, D, widths: Sequence[float] = GAUSS_GRID_WIDTHS,
                     reference: str = "mean", normalize: str = "none", linear: bool = False):
    """Gaussian kernels exp(-D / (2 sigma^2)) with sigma = w * sqrt(ref) for each w in ``widths``;
    ref is the mean (default), median or max squared pairwise distance over i != j, or 1 for
    ``reference="none"`` (widths are then absolute sigmas). ``linear=True`` puts the linear kernel
    x'y first (the ODMC protocol: "both the linear and Gaussian kernels are used")."""
    off = D[~np.eye(*D.shape, dtype=bool)]  # square, or a Nystroem block with the self pairs on its diagonal
    refs = {"mean": lambda: off.mean(), "median": lambda: np.median(off), "max": lambda: off.max(),
            "none": lambda: 1.0}
    if reference not in refs:
        raise ValueError(f"reference must be one of {sorted(refs)}, got {reference!r}")
    ref = float(refs[reference]()) if off.size else 1.0
    sigmas = [float(w) * np.sqrt(ref) for w in widths]
    kernels = (gaussian_from_sqdist(D, s, "sigma") for s in sigmas)
    names = [f"gauss(w={w:g},ref={reference})" for w in widths]  # sigma = w * sqrt(ref)
    if linear:
        kernels, names = itertools.chain([G], kernels), ["linear"] + names
    return kernels, names, {"widths": list(map(float, widths)), "reference": reference,
                            "reference_value": ref, "sigmas": sigmas, "normalize": normalize, "linear": bool(linear)}


BANKS: dict[str, Callable] = {
    "mkc3": _bank_mkc3,
    "rmkkm12": _bank_rmkkm12,
    "scmk12": _bank_scmk12,
    "gauss_grid": _bank_gauss_grid,
}


def _views_linear(X, G, D, views=None, normalize: str = "none"):
    """One linear kernel per view (the GUMKL paper's setup, Sect. 5: "the linear kernel function was
    applied on the attribute vectors of each modality"). ``views`` lists the column blocks, as
    ``[start, stop]`` pairs or dicts with ``name``, ``start``, ``stop`` (the ``views`` entry of a
    multi-view Dataset's meta)."""
    if not views:
        raise ValueError("bank 'views_linear' needs the option views=[...] (the dataset's view blocks)")
    blocks, names = [], []
    for v, view in enumerate(views):
        if isinstance(view, dict):
            name, start, stop = view.get("name", f"view{v}"), int(view["start"]), int(view["stop"])
        else:
            (start, stop), name = view, f"view{v}"
        if not (0 <= start < stop <= X.shape[1]):
            raise ValueError(f"view {name!r} columns [{start}, {stop}) out of range for d={X.shape[1]}")
        blocks.append((start, stop))
        names.append(f"linear({name})")
    kernels = (gram(X[:, a:b]) for a, b in blocks)
    return kernels, names, {"views": list(views), "normalize": normalize}


BANKS["views_linear"] = _views_linear
BANK_NAMES = tuple(sorted(BANKS))


def bank_size(name: str, **options) -> int | None:
    """How many kernels bank ``name`` yields with these options, known without data; None where it
    depends on the data (``views_linear`` without explicit views)."""
    sizes = {
        "mkc3": lambda: 2 + (len(options["widths"]) if options.get("widths") else 1),
        "rmkkm12": lambda: len(options.get("t0", RMKKM_T0)) + 5,
        "scmk12": lambda: len(options.get("t", SCMK_T)) + 5,
        "gauss_grid": lambda: len(options.get("widths", GAUSS_GRID_WIDTHS)) + bool(options.get("linear", False)),
        "views_linear": lambda: len(options["views"]) if options.get("views") else None,
    }
    if name not in sizes:
        raise ValueError(f"unknown kernel bank {name!r}; known banks: {', '.join(BANK_NAMES)}")
    return sizes[name]()


def build_bank(name: str, X, *, preprocess: str | None = "none", rank: int | None = None,
               energy: float | None = None, landmarks: int | None = None, landmarks_above: int = 0,
               landmark_seed: int = 0, **options) -> KernelBank:
    """Compute the named kernel bank on data X (n, d), dense or scipy-sparse.

    ``preprocess`` transforms X first (:data:`PREPROCESS`); ``options`` are the bank's own (see
    each bank's docstring, e.g. ``d``/``sigma`` for ``mkc3``, ``widths`` for ``gauss_grid``,
    ``views`` for ``views_linear``, ``normalize`` for all). With ``rank`` or ``energy`` the bank
    is returned as low-rank features (``kind="features"``, see :func:`feature_map`).

    With ``landmarks`` (and n > max(``landmarks``, ``landmarks_above``)) no n x n matrix is formed:
    the bank is returned as Nystroem features (:func:`nystroem_features`) from that many landmarks
    drawn uniformly without replacement (``landmark_seed``), then normalised and truncated to
    ``rank`` / ``energy`` as above. Data-dependent kernel parameters (the mean or largest squared
    distance of a Gaussian width) are then estimated over the (sample, landmark) pairs.
    """
    if name not in BANK_NAMES:
        raise ValueError(f"unknown kernel bank {name!r}; known banks: {', '.join(BANK_NAMES)}")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not np.isfinite(X.data).all():
            raise ValueError("X contains NaN or infinite values")
    else:
        X = check_features(X)
    prep = "none" if preprocess is None else preprocess
    X = apply_preprocess(X, prep)
    n = X.shape[0]
    if landmarks is not None and n > max(int(landmarks), int(landmarks_above)):
        return _nystroem_bank(name, X, prep, int(landmarks), int(landmark_seed), rank, energy, options)
    # views_linear works per column block; every other bank shares one Gram product
    G, D = (None, None) if name == "views_linear" else (gram(X), None)
    if G is not None:
        D = sq_dists_from_gram(G)
    kernels, names, info = _call_bank(name, X, G, D, options)
    how = info.get("normalize", "none")
    K = np.empty((len(names), n, n))  # one allocation; each kernel is written into its slot
    for k, mat in enumerate(kernels):
        K[k] = _normalize(mat, how)
    meta = {"bank": name, "preprocess": prep, "n_samples": int(K.shape[1]), **info}
    if rank is None and energy is None:
        return KernelBank("gram", names, K=K, meta=meta)
    feats, infos = [], []
    for k in K:
        F, inf = feature_map(k, rank=rank, energy=energy, return_info=True)
        feats.append(F)
        infos.append({"rank": inf["rank"], "retained_energy": inf["retained_energy"]})
    meta.update({"rank": rank, "energy": energy, "spectrum": infos})
    return KernelBank("features", names, features=feats, meta=meta)


def _call_bank(name, X, G, D, options):
    try:
        return BANKS[name](X, G, D, **options)
    except TypeError as exc:
        raise ValueError(f"bad option for kernel bank {name!r}: {exc}") from None


#: normalisations a Nystroem features bank can apply (they need only the feature matrix)
FEATURE_NORMALIZATIONS = ("none", "trace", "center_trace")


def nystroem_features(C: np.ndarray, landmark_rows: np.ndarray) -> np.ndarray:
    """Nystroem features (Williams and Seeger 2001) from the cross kernel C = K(X, X_L) (n, m), whose
    rows ``landmark_rows`` hold K_LL: Phi = C U Lambda^(-1/2) with K_LL = U Lambda U', so that
    Phi Phi' = C K_LL^+ C' and Phi_L Phi_L' = K_LL. Eigenvalues below m eps lambda_max (rounding,
    and the negative ones of an indefinite kernel) are dropped."""
    W = C[landmark_rows]
    lam, U = scipy.linalg.eigh(0.5 * (W + W.T))
    keep = lam > max(W.shape[0] * np.finfo(float).eps * max(lam[-1], 0.0), 1e-300)
    if not keep.any():
        raise ValueError("the landmark kernel has no positive eigenvalue (a zero kernel?)")
    lam, U = lam[keep][::-1], U[:, keep][:, ::-1]
    return C @ (U / np.sqrt(lam)[None, :])


def _normalize_features(F: np.ndarray, how: str) -> np.ndarray:
    """The normalisations of :data:`FEATURE_NORMALIZATIONS` applied to the kernel F F' through F."""
    n = F.shape[0]
    if how == "none":
        return F
    if how == "trace":
        t = float(np.vdot(F, F))
    else:  # center_trace: ||F - mean||_F^2 = tr(H F F' H)
        t = float(np.vdot(F, F) - n * np.vdot(F.mean(axis=0), F.mean(axis=0)))
    if not t > 0:
        raise ValueError(f"cannot apply normalisation {how!r}: the kernel's (centred) trace is not positive")
    return F * np.sqrt(n / t)


def _nystroem_bank(name, X, prep, m, seed, rank, energy, options) -> KernelBank:
    """:func:`build_bank` for a large n: every kernel of the bank as Nystroem features from m landmarks.
    The bank's kernels are evaluated on the (n, m) block between all samples and the landmarks; the
    samples are reordered so that the landmarks come first, which puts the m self pairs on the
    block's diagonal, where the banks' width statistics (over i != j) expect them."""
    if name == "views_linear":
        raise ValueError("bank views_linear has explicit features; it needs no landmarks")
    n = X.shape[0]
    if not 1 <= m < n:
        raise ValueError(f"landmarks must lie in [1, n) = [1, {n}), got {m}")
    L = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
    order = np.concatenate([L, np.setdiff1d(np.arange(n), L)])
    Xo = X[order]
    XL = Xo[:m]
    G = Xo @ XL.T
    G = np.asarray(G.todense() if sp.issparse(G) else G, dtype=np.float64)
    D = sq_dists_from_gram(G, _row_sq_norms(Xo))
    kernels, names, info = _call_bank(name, Xo, G, D, options)
    how = info.get("normalize", "none")
    if how not in FEATURE_NORMALIZATIONS:
        raise ValueError(f"a Nystroem bank (landmarks=...) supports normalize in {FEATURE_NORMALIZATIONS}, "
                         f"not {how!r}: the others need kernel entries the landmark block does not hold")
    inverse = np.argsort(order)
    feats, infos = [], []
    for C in kernels:
        F = _normalize_features(nystroem_features(C, np.arange(m)), how)
        if rank is not None or energy is not None:
            V, inf = principal_directions(F, rank, energy)
            F = F @ V
        else:
            inf = {"rank": F.shape[1], "retained_energy": 1.0}
        feats.append(np.ascontiguousarray(F[inverse]))
        infos.append(inf)
    meta = {"bank": name, "preprocess": prep, "n_samples": int(n), **info, "rank": rank, "energy": energy,
            "spectrum": infos, "nystroem": {"landmarks": m, "seed": seed, "indices": L.tolist()}}
    return KernelBank("features", names, features=feats, meta=meta)


def combine(K: np.ndarray, weights) -> np.ndarray:
    """sum_k weights[k] * K[k] as one BLAS contraction."""
    K = np.asarray(K)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (K.shape[0],):
        raise ValueError(f"need {K.shape[0]} weights, got shape {w.shape}")
    return np.tensordot(w, K, axes=1)
