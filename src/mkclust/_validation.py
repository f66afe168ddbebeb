"""Input checks shared by kernels, metrics and estimators. Every failure is a ValueError that says
what is wrong with which argument."""

from __future__ import annotations

import numpy as np

class ConfigError(ValueError):
    """A configuration that cannot be run; the message names the offending key."""


#: relative tolerance for symmetry checks of kernel matrices
SYMMETRY_RTOL = 1e-8


def as_list(value) -> list:
    """A configuration value that may be one item or a list of items (an algorithm label, for
    instance), as a list."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def check_features(X, name: str = "X") -> np.ndarray:
    """Return ``X`` as a finite float64 2-d array (dense; sparse input is densified)."""
    if hasattr(X, "toarray"):
        X = X.toarray()
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape})")
    bad = ~np.isfinite(X)
    if bad.any():
        rows = np.unique(np.nonzero(bad)[0])
        raise ValueError(
            f"{name} contains {int(bad.sum())} NaN or infinite value(s), in row(s) "
            f"{rows[:10].tolist()}{' ...' if rows.size > 10 else ''}"
        )
    return X


def check_kernels(K, name: str = "K", allow_multiple: bool = True) -> np.ndarray:
    """Return kernels as a float64 array of shape (m, n, n), checking squareness, finiteness and
    symmetry. Accepts one (n, n) matrix, an (m, n, n) array or a list of (n, n) matrices."""
    if isinstance(K, (list, tuple)):
        mats = [np.asarray(k, dtype=np.float64) for k in K]
        shapes = {m.shape for m in mats}
        if len(shapes) != 1:
            raise ValueError(f"{name}: all kernel matrices must have the same shape, got {sorted(shapes)}")
        K = np.stack(mats)
    else:
        K = np.asarray(K, dtype=np.float64)
    if K.ndim == 2:
        K = K[None]
    if K.ndim != 3:
        raise ValueError(f"{name} must be (n, n) or (m, n, n), got shape {K.shape}")
    m, n1, n2 = K.shape
    if n1 != n2:
        raise ValueError(f"{name} must be square: got kernel matrices of shape ({n1}, {n2})")
    if n1 == 0 or m == 0:
        raise ValueError(f"{name} is empty (shape {K.shape})")
    if not allow_multiple and m != 1:
        raise ValueError(
            f"{name}: this estimator takes a single kernel, got a bank of {m}; pass one matrix "
            "(e.g. K[k] or the equal-weight combination K.mean(axis=0))"
        )
    if not np.isfinite(K).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    for k in range(m):
        asym = np.abs(K[k] - K[k].T).max()
        scale = max(np.abs(K[k]).max(), 1e-300)
        if asym > SYMMETRY_RTOL * scale:
            raise ValueError(
                f"{name}[{k}] is not symmetric: max |K - K.T| = {asym:.3g} "
                f"(relative {asym / scale:.3g} > {SYMMETRY_RTOL:g})"
            )
    return K


def check_n_clusters(n_clusters, n_samples: int) -> int:
    """``n_clusters`` must be an integer in [1, n_samples]."""
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)):
        raise ValueError(f"n_clusters must be an integer, got {n_clusters!r}")
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
    if n_clusters > n_samples:
        raise ValueError(f"n_clusters={n_clusters} is larger than the number of samples n={n_samples}")
    return int(n_clusters)


def check_labels(labels, name: str) -> np.ndarray:
    """A 1-d integer-coded label vector (any hashable labels are re-coded 0..c-1)."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {labels.shape}")
    _, codes = np.unique(labels, return_inverse=True)
    return codes.astype(np.int64)


#: the kinds of a paper's claim (:mod:`mkclust.reporting.verdicts`), told apart by their keys
CLAIM_KINDS = ("above", "close", "wins", "slope", "below", "sweep")


def claim_kind(claim: dict) -> str:
    """The kind of a claim: the one key of :data:`CLAIM_KINDS` it has (a ``sweep`` claim also has
    ``above``: the levels it is compared with)."""
    kinds = [k for k in CLAIM_KINDS if k in claim and not (k == "above" and "sweep" in claim)]
    if len(kinds) != 1:
        raise ValueError(f"claim {claim.get('claim')!r}: give exactly one of {', '.join(CLAIM_KINDS)} "
                         f"(found {', '.join(kinds) or 'none'})")
    return kinds[0]
