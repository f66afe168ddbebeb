"""Input checks shared by kernels, metrics and estimators. Every failure is a ValueError that says
what is wrong with which argument."""

from __future__ import annotations

import contextlib
import contextvars
import warnings

import numpy as np
import scipy.linalg
from sklearn.utils import check_array

#: relative tolerance for symmetry checks of kernel matrices
SYMMETRY_RTOL = 1e-8
#: tolerance of the positive semi-definiteness check, relative to n max|K_ij| (a bound on the largest
#: eigenvalue): rounding in a kernel computed in float64 (~1e-16 of it) or float32 (~1e-7) passes; an
#: indefinite similarity (a zero diagonal: -1 / n of it, a sigmoid kernel: ~1e-2) does not
PSD_RTOL = 1e-6
#: largest n for the exact positive semi-definiteness test (a Cholesky factorisation, n^3 / 3 flops);
#: above, a block Lanczos detector (:func:`check_psd`). At n = 1000 the two cost about the same on one
#: core (0.013 s and 0.009 s); at 1797, 0.046 s and 0.011 s; at 5000, 0.80 s and 0.14 s
PSD_EXACT_LIMIT = 1000
#: the detector's block size and number of products with the kernel (a Krylov space of 32 vectors)
PSD_LANCZOS_BLOCK, PSD_LANCZOS_STEPS = 8, 4

_PSD_MODE = contextvars.ContextVar("mkclust_psd_mode", default="check")


@contextlib.contextmanager
def assume_psd():
    """Inside this block estimators skip the positive semi-definiteness check of their kernels, as
    scikit-learn's ``config_context(assume_finite=True)`` skips its finiteness checks: for a caller
    that checked a kernel once (:func:`check_psd`) and fits it many times (the workflow's runner)."""
    token = _PSD_MODE.set("assume")
    try:
        yield
    finally:
        _PSD_MODE.reset(token)


@contextlib.contextmanager
def repair_psd():
    """Inside this block a kernel that fails the positive semi-definiteness check is repaired instead
    of refused: its negative eigenvalues are set to 0 (the nearest PSD matrix, O(n^3)), with a
    warning giving the smallest eigenvalue. Off by default: a large negative part means the matrix is
    not a kernel, and the fit would be of another matrix."""
    token = _PSD_MODE.set("clip")
    try:
        yield
    finally:
        _PSD_MODE.reset(token)


def _psd_tolerance(A: np.ndarray, rtol: float, scale: float | None = None) -> float | None:
    """The tolerance of one kernel's exact check, rtol n max|A_ij| (``scale``: max|A_ij| when known),
    when A + tol I is not positive definite (a Cholesky factorisation, LAPACK potrf: n^3 / 3 flops and
    one n x n copy); None when A passes (an all-zero kernel passes)."""
    n = A.shape[0]
    scale = n * (float(np.abs(A).max()) if scale is None else scale)
    if scale == 0.0:
        return None
    tol = rtol * scale
    M = np.array(A, order="F")
    M.flat[:: n + 1] += tol
    _, info = scipy.linalg.lapack.dpotrf(M, lower=1, clean=0, overwrite_a=1)
    return None if info == 0 else tol


def lanczos_rayleigh_min(A: np.ndarray, block: int = PSD_LANCZOS_BLOCK, steps: int = PSD_LANCZOS_STEPS,
                         seed: int = 0) -> float:
    """The smallest Rayleigh quotient x'Ax / x'x that a block Lanczos run finds in its Krylov space
    (``steps`` products of A with an n x ``block`` block from a seeded Gaussian start, full
    reorthogonalisation, Rayleigh-Ritz): an upper bound on A's smallest eigenvalue, whatever the
    rounding in the basis, because the quotient is computed from x and Ax themselves. The cost is
    ``steps`` thin products (2 n^2 block flops each), against n^3 / 3 for a Cholesky factorisation.
    Written here because scipy's ``eigsh`` / ``lobpcg`` iterate to convergence, which on a kernel's
    eigenvalues clustered at 0 took 14,611 products (179 s at n = 5000) for the smallest one."""
    n = A.shape[0]
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, min(block, n))))[0]
    basis, images = [Q], []
    for step in range(steps):
        AQ = A @ basis[-1]
        images.append(AQ)
        if step == steps - 1 or sum(b.shape[1] for b in basis) >= n:
            break
        B = np.hstack(basis)
        W = AQ - B @ (B.T @ AQ)
        W -= B @ (B.T @ W)                  # twice is enough (Giraud et al. 2005)
        basis.append(np.linalg.qr(W)[0][:, : n - B.shape[1]])   # no more than the dimensions left
    Q, AQ = np.hstack(basis[: len(images)]), np.hstack(images)
    H = Q.T @ AQ
    y = scipy.linalg.eigh((H + H.T) / 2, subset_by_index=[0, 0])[1][:, 0]
    x = Q @ y
    return float(x @ (AQ @ y) / (x @ x))


def check_psd(K, name: str = "K", rtol: float = PSD_RTOL, exact: bool | None = None, scales=None) -> None:
    """Raise a ValueError unless every kernel of ``K`` (m, n, n; symmetric) passes the positive
    semi-definiteness test at the tolerance tol = rtol n max|K_ij|.

    ``exact`` (default: n <= :data:`PSD_EXACT_LIMIT`): the certificate lambda_min >= -tol, a Cholesky
    factorisation of K + tol I (:func:`_psd_tolerance`; 0.013 s of CPU at n = 1000, 0.80 s at 5000 on
    one core). Otherwise a detector of a fraction of that cost (:func:`lanczos_rayleigh_min`, 0.14 s at
    n = 5000): it refuses a kernel in which it finds a vector x with x'Kx < -tol x'x, so it never
    refuses a kernel the exact test passes, and it finds what makes a matrix not a kernel (a zero
    diagonal, a sigmoid kernel, a Gaussian of non-Euclidean distances: tests/library/test_input_checks.py)
    but may pass a kernel whose negative part is a few eigenvalues near the tolerance. ``scales``:
    each kernel's max|K_ij| when the caller has it. The smallest eigenvalue is computed only to
    report a failure (exactly up to the limit, as the detector's quotient above)."""
    K = np.asarray(K, dtype=np.float64)
    K = K[None] if K.ndim == 2 else K
    n = K.shape[1]
    exact = n <= PSD_EXACT_LIMIT if exact is None else exact
    for k in range(K.shape[0]):
        scale = float(np.abs(K[k]).max()) if scales is None else float(scales[k])
        tol = rtol * n * scale
        if exact:
            if _psd_tolerance(K[k], rtol, scale) is None:
                continue
            found = f"its smallest eigenvalue is {float(scipy.linalg.eigvalsh(K[k], subset_by_index=[0, 0])[0]):.4g}"
        else:
            rho = lanczos_rayleigh_min(K[k])
            if rho >= -tol:
                continue
            found = f"its smallest eigenvalue is at most {rho:.4g} (a Rayleigh quotient)"
        raise ValueError(
            f"{name}[{k}] is not positive semi-definite: {found}, below -{tol:.3g} (-{rtol:g} x n x "
            "max|K_ij|). A kernel method's objective is unbounded or meaningless on it; if the negative "
            "part is noise, clip it first: mkclust.kernel_functions.clip_psd(K)")


def symmetry_and_scale(A: np.ndarray, block: int = 64) -> tuple[float, float]:
    """(max|A - A'|, max|A_ij|) of a square matrix, by blocks of rows of the upper triangle against
    the matching columns: no n x n temporary (0.11 s at n = 5000 against 0.25 s for
    ``np.abs(A - A.T).max()``, whose two temporaries are 400 MB there)."""
    asym = 0.0
    for i in range(0, A.shape[0], block):
        d = A[i:i + block, i:] - A[i:, i:i + block].T
        asym = max(asym, float(d.max()), -float(d.min()))
    return asym, max(float(A.max()), -float(A.min()))


def nearest_psd(A: np.ndarray) -> tuple[np.ndarray, float]:
    """The nearest positive semi-definite matrix to a symmetric A in the Frobenius norm (its
    eigendecomposition with the negative eigenvalues set to 0, O(n^3)) and A's smallest eigenvalue."""
    lam, U = np.linalg.eigh(A)
    R = (U * np.maximum(lam, 0.0)) @ U.T
    return (R + R.T) / 2, float(lam[0])


def check_features(X, name: str = "X") -> np.ndarray:
    """Return ``X`` as a finite float64 2-d array (dense; sparse input is densified), through
    scikit-learn's ``check_array`` (its messages: NaN, complex or object data, 1-d input, empty)."""
    X = check_array(X, accept_sparse=True, dtype=np.float64, input_name=name)
    return X.toarray() if hasattr(X, "toarray") else X


def _matrix(k, name: str) -> np.ndarray:
    """One kernel matrix as a finite float64 2-d array (scipy sparse densified), square."""
    if isinstance(k, np.ndarray) and k.dtype == object and k.ndim == 1:
        raise ValueError(f"{name}: an object array (ragged, or of sparse matrices); pass dense (n, n) kernels")
    k = check_array(k, accept_sparse=True, dtype=np.float64, input_name=name)
    k = k.toarray() if hasattr(k, "toarray") else k
    if k.shape[0] != k.shape[1]:
        raise ValueError(f"{name} must be a square kernel matrix (n_samples, n_samples): got shape {k.shape} "
                         f"(n_samples = {k.shape[0]}, n_features = {k.shape[1]}); for a data matrix X pass a "
                         "kernel of it, e.g. sklearn.metrics.pairwise.rbf_kernel(X)")
    return k


def check_kernels(K, name: str = "K", allow_multiple: bool = True, psd: bool = False) -> np.ndarray:
    """Return kernels as a float64 array of shape (m, n, n), checking finiteness (and the other
    checks of scikit-learn's ``check_array``), squareness, symmetry and, with ``psd``, positive
    semi-definiteness (:func:`check_psd`; skipped inside :func:`assume_psd`). Accepts one (n, n)
    matrix (dense or scipy sparse, which is densified), an (m, n, n) array or a list of (n, n)
    matrices."""
    if isinstance(K, (list, tuple)):
        if not K:
            raise ValueError(f"{name}: an empty list of kernels")
        mats = [_matrix(k, f"{name}[{i}]") for i, k in enumerate(K)]
        shapes = {m.shape for m in mats}
        if len(shapes) != 1:
            raise ValueError(f"{name}: all kernel matrices must have the same shape, got {sorted(shapes)}")
        K = np.stack(mats)
    elif np.ndim(K) == 3 and not hasattr(K, "toarray"):
        K = np.asarray(K)
        if not np.issubdtype(K.dtype, np.number) or np.iscomplexobj(K):
            K = check_array(K, dtype=np.float64, allow_nd=True, input_name=name)   # its message
        K = np.asarray(K, dtype=np.float64)                 # no copy of a float64 bank
        if K.shape[0] == 0:
            raise ValueError(f"{name}: an empty bank of kernels (shape {K.shape})")
        for k in range(K.shape[0]):
            _matrix(K[k], f"{name}[{k}]")                   # each kernel's checks, on a view
    else:
        K = _matrix(K, name)[None]
    m = K.shape[0]
    if not allow_multiple and m != 1:
        raise ValueError(
            f"{name}: this estimator takes a single kernel, got a bank of {m}; pass one matrix "
            "(e.g. K[k] or the equal-weight combination K.mean(axis=0))"
        )
    scales = []
    for k in range(m):
        asym, scale = symmetry_and_scale(K[k])
        scales.append(scale)
        if asym > SYMMETRY_RTOL * max(scale, 1e-300):
            raise ValueError(
                f"{name}[{k}] is not symmetric: max |K - K.T| = {asym:.3g} "
                f"(relative {asym / max(scale, 1e-300):.3g} > {SYMMETRY_RTOL:g})"
            )
    if psd and _PSD_MODE.get() == "check":
        check_psd(K, name, scales=scales)
    elif psd and _PSD_MODE.get() == "clip":
        repaired = K.copy()                      # never the caller's array
        for k in range(m):
            if _psd_tolerance(K[k], PSD_RTOL, scales[k]) is not None:
                repaired[k], lam = nearest_psd(K[k])
                warnings.warn(f"{name}[{k}]: smallest eigenvalue {lam:.4g}; negative eigenvalues set to 0 "
                              "(repair_psd)", stacklevel=3)
        return repaired
    return K


def check_n_clusters(n_clusters, n_samples: int) -> int:
    """``n_clusters`` must be an integer in [1, n_samples]."""
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)):
        raise ValueError(f"n_clusters must be an integer, got {n_clusters!r}")
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
    if n_clusters > n_samples:
        raise ValueError(f"n_clusters={n_clusters} is larger than the number of samples (n_samples={n_samples})")
    return int(n_clusters)


def check_labels(labels, name: str) -> np.ndarray:
    """A 1-d integer-coded label vector (any hashable labels are re-coded 0..c-1)."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {labels.shape}")
    _, codes = np.unique(labels, return_inverse=True)
    return codes.astype(np.int64)
