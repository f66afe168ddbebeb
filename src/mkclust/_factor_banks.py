"""A kernel bank as low-rank factors without an n x n matrix (:func:`mkclust.kernels.build_bank` with
``landmarks``): every kernel as Nystroem features from landmarks, or, with ``fourier``, each Gaussian
kernel as random Fourier features instead.

Nystroem (Williams and Seeger 2001) works for any kernel from its (n, m) block against m landmarks;
its error is that of the kernel's projection on the landmarks' span, small where the spectrum decays.
Random Fourier features (Rahimi and Recht 2007) need no landmarks and no eigendecomposition, only the
kernel's width: z(x) = sqrt(2 / D) cos(W'x + b), W's columns drawn from N(0, (2 / s) I) for the kernel
exp(-||x - y||^2 / s), b uniform on [0, 2 pi]; each entry of z(x)'z(y) is within O(1 / sqrt(D)) of the
kernel's whatever its spectrum, which suits the narrow Gaussians (a nearly diagonal kernel, whose
Nystroem factors from 1,000 landmarks hold little of it). scikit-learn's ``RBFSampler`` draws them
(``gamma`` = 1 / s). The Gaussians' widths of a bank depend on the data (a mean or largest squared
distance): they are estimated, as for Nystroem, over the (sample, landmark) pairs, so ``fourier``
goes with ``landmarks``, which also give the bank's other kernels (linear, polynomial) their factors.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from mkclust.kernel_functions import _row_sq_norms, principal_directions, sq_dists_from_gram

#: normalisations a features bank can apply (they need only the feature matrix)
FEATURE_NORMALIZATIONS = ("none", "trace", "center_trace", "unit_diag")


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


def fourier_features(X, scale: float, n_features: int, seed: int) -> np.ndarray:
    """Random Fourier features (n, ``n_features``) of the Gaussian kernel exp(-||x - y||^2 / ``scale``)
    on the rows of X (dense or sparse), drawn by scikit-learn's ``RBFSampler`` (gamma = 1 / scale)."""
    from sklearn.kernel_approximation import RBFSampler
    if not scale > 0:
        raise ValueError(f"a Gaussian kernel's scale must be positive, got {scale}")
    return RBFSampler(gamma=1.0 / scale, n_components=int(n_features), random_state=seed).fit_transform(X)


def normalize_features(F: np.ndarray, how: str, diagonal: np.ndarray | None = None) -> np.ndarray:
    """The normalisations of :data:`FEATURE_NORMALIZATIONS` applied to the kernel F F' through F.

    ``unit_diag`` is K_ij / sqrt(K_ii K_jj) with the exact kernel's diagonal ``diagonal`` (K_ii), which
    scales F's rows by 1 / sqrt(K_ii): the Nystroem features of the normalised kernel, since Nystroem's
    approximation commutes with a diagonal scaling (S C (S_L W S_L)^+ S_L C' S = S C W^+ C' S). A
    Gaussian's rows are then left as they are (K_ii = 1), with their approximate squared norms below 1.
    Without ``diagonal`` (F is the kernel's exact factor) each row goes to unit length. Scaling the
    rows of a Nystroem factor to unit length instead makes another kernel: on MNIST's 5,000 digits the
    narrowest Gaussian of the rmkkm12 bank (1,000 landmarks) kept a third of its rows' norms, and the
    sum of its 10 leading eigenvalues went from 10.0 (exact) to 128 (rows to unit length)."""
    n = F.shape[0]
    if how == "none":
        return F
    if how == "unit_diag":
        d = np.einsum("ij,ij->i", F, F) if diagonal is None else np.asarray(diagonal, dtype=np.float64)
        root = np.sqrt(np.where(d > 0, d, 1.0))
        return F / root[:, None]
    if how == "trace":
        t = float(np.vdot(F, F))
    else:  # center_trace: ||F - mean||_F^2 = tr(H F F' H)
        t = float(np.vdot(F, F) - n * np.vdot(F.mean(axis=0), F.mean(axis=0)))
    if not t > 0:
        raise ValueError(f"cannot apply normalisation {how!r}: the kernel's (centred) trace is not positive")
    return F * np.sqrt(n / t)


def exact_diagonals(kernels_of: Callable, Xo, G: np.ndarray, D: np.ndarray) -> list[np.ndarray]:
    """K_ii, each kernel of a bank at each sample, without an n x n matrix: the builder ``kernels_of`` on a
    block of two columns, the first landmark's (G, D of the sample with it, so that the builder's width
    statistics stay positive) and the sample's own (x_i'x_i, distance 0). A kernel of the distance is then
    k(0) at any width (a Gaussian's 1), one of the inner product k(x_i'x_i)."""
    G2 = np.column_stack([G[:, 0], _row_sq_norms(Xo)])
    D2 = np.column_stack([D[:, 0], np.zeros(D.shape[0])])
    kernels, _, _ = kernels_of(Xo, G2, D2)
    return [np.asarray(C[:, 1], dtype=np.float64).copy() for C in kernels]


def landmark_factors(name: str, X, m: int, seed: int, rank, energy, kernels_of: Callable,
                     fourier: int | None = None):
    """The factors of bank ``name`` on X (n, d) from m landmarks drawn uniformly without replacement
    (``seed``): ``kernels_of(X, G, D)`` is the bank's builder, (kernels, names, info), called on the
    (n, m) blocks G = X X_L' and D, with the samples reordered so that the landmarks come first (the m
    self pairs on the block's diagonal, where the banks' width statistics over i != j expect them).
    With ``fourier`` each Gaussian kernel (the builder's ``info["gaussian_scales"]``, its scale s in
    exp(-D / s) estimated on the block) is ``fourier`` random Fourier features instead of Nystroem's,
    seeded by (``seed``, its index). Each factor is normalised as the bank says, then truncated to
    ``rank`` / ``energy``. Returns (factors in the samples' order, names, info, spectrum infos,
    landmark indices)."""
    n = X.shape[0]
    if not 1 <= m < n:
        raise ValueError(f"landmarks must lie in [1, n) = [1, {n}), got {m}")
    L = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
    order = np.concatenate([L, np.setdiff1d(np.arange(n), L)])
    Xo = X[order]
    G = Xo @ Xo[:m].T
    G = np.asarray(G.todense() if sp.issparse(G) else G, dtype=np.float64)
    D = sq_dists_from_gram(G, _row_sq_norms(Xo))
    kernels, names, info = kernels_of(Xo, G, D)
    how = info.get("normalize", "none")
    if how not in FEATURE_NORMALIZATIONS:
        raise ValueError(f"a Nystroem bank (landmarks=...) supports normalize in {FEATURE_NORMALIZATIONS}, "
                         f"not {how!r}: the others need kernel entries the landmark block does not hold")
    scales = info.get("gaussian_scales") or [None] * len(names)
    diagonals = exact_diagonals(kernels_of, Xo, G, D) if how == "unit_diag" else [None] * len(names)
    inverse = np.argsort(order)
    feats, infos = [], []
    for p, C in enumerate(kernels):
        if fourier is not None and scales[p] is not None:
            seed_p = int(np.random.SeedSequence([int(seed), p]).generate_state(1)[0])
            F = fourier_features(Xo, scales[p], fourier, seed_p)
        else:
            F = nystroem_features(C, np.arange(m))
        F = normalize_features(F, how, diagonals[p])
        if rank is not None or energy is not None:
            V, inf = principal_directions(F, rank, energy)
            F = F @ V
        else:
            inf = {"rank": F.shape[1], "retained_energy": 1.0}
        feats.append(np.ascontiguousarray(F[inverse]))
        infos.append(inf)
    return feats, names, info, infos, L
