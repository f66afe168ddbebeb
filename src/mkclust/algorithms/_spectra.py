"""The largest eigenvalue of a kernel and the spectral norm of a matrix, by ARPACK with a deterministic
start and a dense fallback: the Z-step's Lipschitz constant and SCSK/SCMK's stopping test."""

from __future__ import annotations

import logging

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

log = logging.getLogger(__name__)


def _lambda_max(K: np.ndarray) -> float:
    """Largest eigenvalue of a symmetric matrix (Lanczos, deterministic start, raised by 1e-5 for its
    tolerance; LAPACK's subset driver for small n). Where either fails, the full dense eigvalsh: on a
    spectrum clustered at its top (a Gaussian kernel of small width is nearly the identity) the subset
    driver raises LinAlgError ("Internal Error" on 2 I + 1e-17 at n = 20, 30, 50, 64), and ARPACK can
    fail to converge, as it did in ``kernel_functions.feature_map`` on the benchmark's heart-h."""
    n = K.shape[0]
    try:
        if n <= 64:
            return float(scipy.linalg.eigvalsh(K, subset_by_index=[n - 1, n - 1])[0])
        return float(scipy.sparse.linalg.eigsh(K, k=1, which="LA", v0=np.ones(n), return_eigenvectors=False,
                                               tol=1e-6)[0]) * (1.0 + 1e-5)
    except (np.linalg.LinAlgError, scipy.sparse.linalg.ArpackError) as exc:
        log.info("largest eigenvalue: %s at n = %d; the full dense eigvalsh instead", type(exc).__name__, n)
        return float(scipy.linalg.eigvalsh(K)[-1])


#: ARPACK's iterations for a spectral norm before the dense SVD takes over (its default is 10 n)
SVDS_MAXITER = 500


def _spectral_norm(A: np.ndarray) -> float:
    """Largest singular value (ARPACK from a fixed pseudo-random start: a difference of two column-
    stochastic matrices has 1'A = 0, so the all-ones start would be in the null space; the dense
    SVD where ARPACK does not converge)."""
    n = min(A.shape)
    if n <= 64 or not A.any():
        return float(np.linalg.norm(A, 2))
    v0 = np.random.default_rng(0).uniform(-1.0, 1.0, A.shape[0])
    try:
        return float(scipy.sparse.linalg.svds(A, k=1, v0=v0, return_singular_vectors=False, tol=1e-6,
                                              maxiter=SVDS_MAXITER)[0])
    except scipy.sparse.linalg.ArpackError as exc:
        # seen on fourclass's SCMK with alpha = 1 (n = 862, Z - Z_old at an outer iteration: ARPACK
        # error -1 after its default 8,621 iterations, 6 s): the dense SVD's largest singular value
        log.info("spectral norm: %s at n = %d; the dense SVD instead", type(exc).__name__, n)
        return float(np.linalg.norm(A, 2))
