"""Label generation shared by the maximum margin clustering methods (ODMC, LG-MMC, IterSVR, GMMC):
balanced sign labellings, a kernel k-means start, the most violated labelling of a dual solution
(a leading eigenvector of a label-weighted kernel, then greedy swaps) and its lockstep form for many
fits at once (rows of one GEMM per Lanczos step). The methods that use them cite the equations.
"""

from __future__ import annotations

import logging

import numpy as np

from mkclust.algorithms.base import leading_eigenvectors
from mkclust.algorithms.kmeans import KernelKMeans, cluster_distances

log = logging.getLogger(__name__)

def balanced_signs(f: np.ndarray, l: float) -> np.ndarray:
    """sgn(f) if |sum| <= l, else +1 for the n_+ largest f with n_+ the closest count in balance
    (|sum| <= max(l, n mod 2): with n odd and l < 1 a sum of +-1 is the best attainable)."""
    n = f.size
    y = np.where(f >= 0, 1.0, -1.0)
    if abs(y.sum()) <= l:
        return y
    lo, hi = int(np.ceil((n - l) / 2)), int(np.floor((n + l) / 2))
    if lo > hi:  # l < 1 with n odd: |sum| = 1 is the best attainable
        lo, hi = n // 2, (n + 1) // 2
    n_pos = int(np.clip((y > 0).sum(), lo, hi))
    y = -np.ones(n)
    y[np.argsort(-f, kind="stable")[:n_pos]] = 1.0
    return y


#: largest n for dense eigensolvers; Lanczos (eigsh) above, to this tolerance
DENSE_LIMIT = 400
EIGSH_TOL = 1e-8
#: the lockstep Lanczos of the label generation (leading_eigvecs_rows): rows per GEMM, most steps
LANCZOS_BLOCK = 64
LANCZOS_STEPS = 100


def kkm_signs(K: np.ndarray, beta: float, rng, n_init: int = 1) -> np.ndarray:
    """A balanced labelling from kernel k-means (two random centres; of ``n_init`` such starts the one
    with the lowest kernel k-means objective): +1 nearer cluster 0, thresholded on the distance
    difference by :func:`balanced_signs`."""
    lab = KernelKMeans(n_clusters=2, init="random", n_init=n_init, random_state=rng)._fit_checked(K).labels_
    dist = cluster_distances(K, np.diag(K), lab, 2)
    return balanced_signs(dist[:, 1] - dist[:, 0], beta)


def orient(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """y or -y, whichever agrees with ``ref`` on more samples (y on a tie): one clustering has one
    orientation within a label set whose members are combined by a vote."""
    return -y if y @ ref < 0 else y


def abs_maxima(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(max_j |K_ij|, max_i |K_ij|): K's row and column maxima in absolute value, for the pair bounds of
    :func:`_swap_improve`."""
    A = np.abs(K)
    return A.max(axis=1), A.max(axis=0)


def _swap_improve(K: np.ndarray, D: np.ndarray, Y: np.ndarray, max_swaps: int = 200, n_candidates: int = 32,
                  KT: np.ndarray | None = None, kmax: tuple | None = None) -> np.ndarray:
    """Improve the balanced labellings Y ((m, n), +-1, changed in place and returned) by swaps, row r
    for M_r = diag(D[r]) K diag(D[r]): while the best swap of one +1 and one -1 label (which keeps
    e'y) increases y'M_r y. The swap gain is delta_i + delta_j - 8 M_ij with delta_i = 4 (M_ii -
    y_i (M y)_i) the gain of flipping i alone. Each swap searches the pairs of the ``n_candidates``
    best single flips of either sign first; only when none of those improves is every pair checked
    (only the pairs whose gain bound can exceed the tolerance), so each result is swap-optimal. M y
    is updated in O(n) per swap.

    M_r y_r of every row is one GEMV each here; the swaps run in the compiled loop of
    :func:`mkclust.algorithms._swap.swap_rows` (its docstring gives the decisions and the bounds).
    ``kmax`` may pass :func:`abs_maxima` of K, ``KT`` K.T as a C-ordered array (the update reads K's
    columns as contiguous rows; K may be symmetric only up to rounding): a caller that generates many
    labels on one K computes them once."""
    from mkclust.algorithms._swap import swap_rows   # numba: imported by the fits that search swaps
    m, n = Y.shape
    K = np.ascontiguousarray(K, dtype=np.float64)
    KT = np.ascontiguousarray(K.T) if KT is None else KT
    kmax = abs_maxima(K) if kmax is None else kmax
    D = np.ascontiguousarray(D, dtype=np.float64)
    G = np.empty((m, n))
    for r in range(m):                                        # M y per row (a GEMV, as one row alone)
        G[r] = D[r] * (K @ (D[r] * Y[r]))
    y = np.ascontiguousarray(Y, dtype=np.float64)
    swap_rows(K, KT, D, y, G, np.ascontiguousarray(np.diag(K)), np.ascontiguousarray(kmax[0], dtype=np.float64),
              np.ascontiguousarray(kmax[1], dtype=np.float64), int(max_swaps), int(n_candidates))
    if y is not Y:
        Y[...] = y
    return Y


def leading_eigvecs_rows(K: np.ndarray, D: np.ndarray, tol: float = EIGSH_TOL, max_steps: int = LANCZOS_STEPS,
                         block: int = LANCZOS_BLOCK, prod=None) -> np.ndarray:
    """Row r: the leading (largest algebraic) eigenvector of M_r = diag(D[r]) K diag(D[r]), for all
    rows at once by Lanczos in lockstep (the rows' products M_r q_r are one GEMM (m, n) x (n, n), so
    K is read once per step for every row, where m separate ``eigsh`` calls read it m times each).

    Each row is its own Lanczos run started from D[r] (as ``eigsh(v0=d)``), with full
    reorthogonalisation (twice), stopped when its Ritz pair (theta, v) has the residual bound
    beta_k |s_k| <= ``tol`` |theta| (ARPACK's criterion, ``eigsh(tol=...)``), or when the Krylov space
    is invariant, or after ``max_steps`` steps (the best Ritz vector then). Rows leave the GEMM as
    they converge. The rows go ``block`` at a time, so the bases take at most block x max_steps x n
    floats (51 kB per sample). Up to ``DENSE_LIMIT`` samples, the dense ``eigh`` of each M_r instead
    (exact). ``prod`` may compute the rows' products X -> X K another way (through a low-rank factor
    of K, :class:`mkclust.algorithms._odmc_solver._Products`)."""
    D = np.array(D, dtype=np.float64, ndmin=2)
    m, n = D.shape
    out = np.empty((m, n))
    if n <= DENSE_LIMIT:
        for r, d in enumerate(D):
            vec = leading_eigenvectors(None, n, 1, dense=lambda d=d: K * np.outer(d, d), dense_limit=DENSE_LIMIT)[1]
            out[r] = vec[:, 0]
        return out
    if m > block:
        for start in range(0, m, block):
            out[start:start + block] = leading_eigvecs_rows(K, D[start:start + block], tol, max_steps, block, prod)
        return out
    steps = min(int(max_steps), n)
    rows = np.arange(m)                                       # the running rows; the arrays below are theirs
    q = D / np.linalg.norm(D, axis=1, keepdims=True)
    Q = np.empty((m, min(steps, 16), n))                      # each row's Lanczos basis (grown on demand)
    al, be = np.zeros((m, steps)), np.zeros((m, steps))
    d, q_prev, b_prev = D, np.zeros((m, n)), np.zeros(m)
    for k in range(steps):
        if k == Q.shape[1]:
            Q = np.concatenate([Q, np.empty((len(rows), min(k, steps - k), n))], axis=1)
        Q[:, k] = q
        w = d * ((d * q) @ K.T if prod is None else prod(d * q))   # M_r q_r for every running row: one GEMM
        al[:, k] = np.einsum("rn,rn->r", w, q)
        w -= al[:, k, None] * q + b_prev[:, None] * q_prev
        Qk = Q[:, : k + 1]
        for _ in range(2):                                    # full reorthogonalisation, twice
            w -= np.matmul(np.matmul(Qk, w[:, :, None]).transpose(0, 2, 1), Qk)[:, 0]
        b = np.linalg.norm(w, axis=1)
        be[:, k] = b
        i = np.arange(k + 1)
        T = np.zeros((len(rows), k + 1, k + 1))               # the tridiagonal T_k of every running row
        T[:, i, i] = al[:, : k + 1]
        T[:, i[:-1], i[1:]] = T[:, i[1:], i[:-1]] = be[:, :k]
        theta, S = np.linalg.eigh(T)
        s, top = S[:, :, -1], np.abs(theta[:, -1])            # the largest Ritz value and its vector
        done = (b * np.abs(s[:, -1]) <= tol * np.maximum(top, np.finfo(float).tiny))
        done |= b <= 1e-14 * np.maximum(top, 1.0)             # an invariant subspace: exact
        if k == steps - 1 and not done.all():
            log.debug("Lanczos: %d of %d rows not converged in %d steps; their best Ritz vectors are used",
                      int((~done).sum()), m, steps)
            done[:] = True
        if done.any():
            out[rows[done]] = np.matmul(s[done][:, None, :], Qk[done])[:, 0]
            keep = ~done
            rows, w, b, q, d, Q, al, be = (v[keep] for v in (rows, w, b, q, d, Q, al, be))
            if not rows.size:
                break
        q_prev, b_prev = q, b
        q = w / b[:, None]
    return out


def exact_ties(vecs: np.ndarray, D: np.ndarray) -> np.ndarray:
    """The eigenvectors of :func:`leading_eigvecs_rows` with what exact arithmetic fixes and rounding
    does not: entry i of row r is 0 where D[r, i] = 0 (row and column i of M_r = diag(D[r]) K diag(D[r])
    are 0, so every eigenvector of a non-zero eigenvalue is 0 there; a solver leaves rounding noise,
    1e-25 to 1e-16 measured, whose signs :func:`balanced_signs` would read as labels), and each row's
    sign is the one that makes its largest entry positive (an eigenvector's sign is arbitrary). Then the
    labels of samples with d_i = 0 (an SVM's non-support vectors: their label leaves y'M_r y unchanged)
    are set by the balance rule and sample order alone, not by the BLAS and LAPACK a run happens to use
    (docs/running.md, 'Reruns across package versions'). ``vecs`` is changed in place and returned."""
    vecs[D == 0] = 0.0
    top = vecs[np.arange(len(vecs)), np.argmax(np.abs(vecs), axis=1)]
    vecs *= np.where(top < 0, -1.0, 1.0)[:, None]
    return vecs


def _most_violated_rows(K: np.ndarray, D: np.ndarray, betas, max_swaps: int = 200, n_candidates: int = 32,
                        KT: np.ndarray | None = None, kmax: tuple | None = None, prod=None) -> np.ndarray:
    """Row r: a balanced y maximising y'M_r y, M_r = diag(D[r]) K diag(D[r]) (= argmax_y (y*d)'K(y*d)
    = argmin_y G(alpha, y) for d = alpha_1 - alpha_2), -betas[r] <= e'y <= betas[r].

    Start: the balanced thresholding of M_r's leading eigenvector (:func:`leading_eigvecs_rows`, all
    rows in one lockstep Lanczos; M_r is never formed), made deterministic by :func:`exact_ties`. Then
    the swaps of :func:`_swap_improve`, for all rows in lockstep. ``prod``: the Lanczos products
    another way (:func:`leading_eigvecs_rows`)."""
    D = np.array(D, dtype=np.float64, ndmin=2)
    zero = ~D.any(axis=1)
    D[zero] = 1.0                                             # alpha = 0: every y has the same G
    vecs = exact_ties(leading_eigvecs_rows(K, D, prod=prod), D)
    Y = np.array([balanced_signs(v, beta) for v, beta in zip(vecs, betas)], dtype=np.float64).reshape(D.shape)
    return _swap_improve(K, D, Y, max_swaps=max_swaps, n_candidates=n_candidates, KT=KT, kmax=kmax)


def _most_violated(K: np.ndarray, d: np.ndarray, beta: float, max_swaps: int = 200, n_candidates: int = 32,
                   KT: np.ndarray | None = None, kmax: tuple | None = None) -> np.ndarray:
    """One row of :func:`_most_violated_rows`: a balanced y maximising y'My, M = diag(d) K diag(d).
    A caller that generates many labels on one K passes ``KT`` (C-ordered K.T) and ``kmax``
    (:func:`abs_maxima`) once, instead of an n x n pass each."""
    return _most_violated_rows(K, d[None, :], [beta], max_swaps, n_candidates, KT, kmax)[0]
