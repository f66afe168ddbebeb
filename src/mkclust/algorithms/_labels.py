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


def kkm_signs(K: np.ndarray, beta: float, rng) -> np.ndarray:
    """A balanced labelling from one kernel k-means run (two random centres): +1 nearer cluster 0,
    thresholded on the distance difference by :func:`balanced_signs`."""
    lab = KernelKMeans(n_clusters=2, init="random", n_init=1, random_state=rng)._fit_checked(K).labels_
    dist = cluster_distances(K, np.diag(K), lab, 2)
    return balanced_signs(dist[:, 1] - dist[:, 0], beta)


def orient(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """y or -y, whichever agrees with ``ref`` on more samples (y on a tie): one clustering has one
    orientation within a label set whose members are combined by a vote."""
    return -y if y @ ref < 0 else y


def abs_maxima(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(max_j |K_ij|, max_i |K_ij|): K's row and column maxima in absolute value, for :func:`_pair_rows`."""
    A = np.abs(K)
    return A.max(axis=1), A.max(axis=0)


def _pair_rows(P, N, delta, absd, kmax, tol):
    """The members of P and N that can be in a swap of gain > ``tol``: gain_ij = delta_i + delta_j - 8
    d_i d_j K_ij <= delta_i + max_N delta + 8 |d_i| max_N |d| max_j |K_ij| (and likewise for j), so
    a pair can only improve when both its members' bounds exceed tol (less a margin far above the
    rounding of the gains). The pairs left out cannot hold the best swap, nor tie it, so the checked
    block gives the same decision and the same first maximum as every pair of P x N (a 250 000-pair
    block costs 2.5 ms at n = 1000; on german about 2% of each side is left)."""
    dN, dP = delta[N].max(), delta[P].max()
    aN, aP = absd[N].max(), absd[P].max()
    bP = delta[P] + dN + 8 * absd[P] * aN * kmax[0][P]
    bN = delta[N] + dP + 8 * absd[N] * aP * kmax[1][N]
    mP = np.abs(delta[P]) + abs(dN) + 8 * absd[P] * aN * kmax[0][P]
    mN = np.abs(delta[N]) + abs(dP) + 8 * absd[N] * aP * kmax[1][N]
    return P[bP > tol - 1e-9 * mP], N[bN > tol - 1e-9 * mN]


def _rows_take(A: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """A[r, idx[r, ...]] for every row r of a C-ordered 2-D A: one ``take`` on the flat array (what
    ``take_along_axis`` gives, without its per-call index construction)."""
    off = (np.arange(A.shape[0]) * A.shape[1]).reshape((-1,) + (1,) * (idx.ndim - 1))
    return np.take(A.reshape(-1), idx + off)


def _top_members(vals: np.ndarray, idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row r, the k members with the largest ``vals[r, idx[r]]`` (``idx`` (m, w): each row's
    member indices in any order, padded with a column whose value is -inf), largest first, ties in
    index order (a full stable sort of the members would give the same), from one partition of the
    (m, w) member values. Returns (indices, valid), both (m, min(k, w))."""
    m, w = idx.shape
    kk = min(int(k), w)
    v = _rows_take(vals, idx)
    part = np.argpartition(-v, kk - 1, axis=1)[:, :kk]
    cand, cv = _rows_take(idx, part), _rows_take(v, part)
    kth = cv.min(axis=1)
    # a tie at the k-th value may have left out a lower index: those rows' members in full
    for r in np.flatnonzero(np.isfinite(kth) & ((v >= kth[:, None]).sum(axis=1) > kk)):
        order = np.lexsort((idx[r], -v[r]))[:kk]
        cand[r], cv[r] = idx[r, order], v[r, order]
    order = np.lexsort((cand, -cv), axis=1)                          # by value, ties in index order
    cv = _rows_take(cv, order)
    return _rows_take(cand, order), np.isfinite(cv)


def _swap_improve(K: np.ndarray, D: np.ndarray, Y: np.ndarray, max_swaps: int = 200, n_candidates: int = 32,
                  KT: np.ndarray | None = None, kmax: tuple | None = None) -> np.ndarray:
    """Improve the balanced labellings Y ((m, n), +-1, changed in place and returned) by swaps, row r
    for M_r = diag(D[r]) K diag(D[r]): while the best swap of one +1 and one -1 label (which keeps
    e'y) increases y'M_r y. The swap gain is delta_i + delta_j - 8 M_ij with delta_i = 4 (M_ii -
    y_i (M y)_i) the gain of flipping i alone. Each swap searches the pairs of the ``n_candidates``
    best single flips of either sign first; only when none of those improves is every pair checked
    (by :func:`_pair_rows`, only the pairs that can improve), so each result is swap-optimal. M y is
    updated in O(n) per swap.

    The rows run in lockstep, each exactly as alone: a swap round is elementwise over the (m, n)
    arrays of the rows still swapping plus one (m, c, c) gather of K for the candidate pairs, so m
    labellings cost about the Python overhead of one; the full pair check is per row. A swap keeps
    each row's counts of +1 and -1, so each row's members of either sign are kept as index lists
    (updated in place by each swap) and the candidates are the top of those lists
    (:func:`_top_members`), never a pass over the other sign. ``kmax`` may pass :func:`abs_maxima`
    of K (else computed when first needed). ``KT`` may pass K.T as a C-ordered array (the update
    reads K's columns as contiguous rows; K may be symmetric only up to rounding)."""
    m, n = Y.shape
    KT = np.ascontiguousarray(K.T) if KT is None else KT
    D = np.asarray(D, dtype=np.float64)
    g = np.empty((m, n))
    for r in range(m):                                        # M y per row (a GEMV, as one row alone)
        g[r] = D[r] * (K @ (D[r] * Y[r]))
    rows, y, d = np.arange(m), Y.copy(), D                    # the rows still swapping, compacted
    mdiag = d * d * np.diag(K)[None, :]
    npos = (y > 0).sum(axis=1)
    nneg = n - npos
    # each row's members of either sign as index lists, padded with n (a column of -inf below), and
    # each sample's slot in its list
    order = np.argsort(-y, axis=1, kind="stable")             # the +1 first, each side in index order
    wp, wn = max(int(npos.max()), 1), max(int(nneg.max()), 1)
    Pidx, Nidx = np.full((m, wp), n), np.full((m, wn), n)
    slot = np.empty((m, n), dtype=np.int64)
    ar = np.arange(m)
    for r in range(m):
        Pidx[r, :npos[r]], Nidx[r, :nneg[r]] = order[r, :npos[r]], order[r, npos[r]:]
        slot[r, Pidx[r, :npos[r]]] = np.arange(npos[r])
        slot[r, Nidx[r, :nneg[r]]] = np.arange(nneg[r])
    delta = np.empty((m, n + 1))
    delta[:, n] = -np.inf
    Kflat = np.ascontiguousarray(K).reshape(-1)
    for _ in range(int(max_swaps)):
        a = len(rows)
        dl = delta[:a]
        np.multiply(y, g, out=dl[:, :n])
        np.subtract(mdiag, dl[:, :n], out=dl[:, :n])
        dl[:, :n] *= 4
        tol = 1e-12 * np.maximum(1.0, np.abs(np.einsum("rn,rn->r", y, g)))
        cp, vp = _top_members(dl, Pidx, n_candidates)
        cn, vn = _top_members(dl, Nidx, n_candidates)
        kp, kn = np.minimum(cp, n - 1), np.minimum(cn, n - 1)   # the padding (invalid) read as sample n - 1
        dcp, dcn = _rows_take(d, kp), _rows_take(d, kn)
        Kpn = np.take(Kflat, kp[:, :, None] * n + kn[:, None, :])   # K[cp_a, cn_b] of every row
        gain = (_rows_take(dl, cp)[:, :, None] + _rows_take(dl, cn)[:, None, :]
                - 8 * (dcp[:, :, None] * dcn[:, None, :]) * Kpn)
        gain[~(vp[:, :, None] & vn[:, None, :])] = -np.inf
        flat = gain.reshape(a, -1)
        best = flat.argmax(axis=1)
        ar = np.arange(a)
        found = flat[ar, best] > tol
        # gain is (a, |cp|, |cn|) flattened: the row of a flat index is its quotient by |cn|
        I, J = cp[ar, best // cn.shape[1]], cn[ar, best % cn.shape[1]]
        partial = (vp.sum(axis=1) < npos) | (vn.sum(axis=1) < nneg)
        for r in np.flatnonzero(~found & partial & (npos > 0) & (nneg > 0)):   # every pair of this row
            if kmax is None:
                kmax = abs_maxima(K)
            P, N = np.sort(Pidx[r, :npos[r]]), np.sort(Nidx[r, :nneg[r]])
            P, N = _pair_rows(P, N, dl[r, :n], np.abs(d[r]), kmax, tol[r])
            if P.size and N.size:
                full = dl[r, P][:, None] + dl[r, N][None, :] - 8 * np.outer(d[r, P], d[r, N]) * K[np.ix_(P, N)]
                i, j = np.unravel_index(np.argmax(full), full.shape)
                if full[i, j] > tol[r]:
                    found[r], I[r], J[r] = True, P[i], N[j]
        found &= (npos > 0) & (nneg > 0)
        if not found.all():                                   # these rows are done: write them back
            Y[rows[~found]] = y[~found]
            rows, y, g, d, mdiag, I, J = (v[found] for v in (rows, y, g, d, mdiag, I, J))
            npos, nneg, Pidx, Nidx, slot = (v[found] for v in (npos, nneg, Pidx, Nidx, slot))
            if not rows.size:
                break
            ar = np.arange(len(rows))
        y[ar, I], y[ar, J] = -1.0, 1.0
        si, sj = slot[ar, I], slot[ar, J]                     # I leaves P for N's slot of J, J the other way
        Pidx[ar, si], Nidx[ar, sj] = J, I
        slot[ar, J], slot[ar, I] = si, sj
        g += 2 * d * (KT[J] * d[ar, J][:, None] - KT[I] * d[ar, I][:, None])   # y_i: +1 -> -1, y_j: -1 -> +1
    Y[rows] = y
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


def _most_violated_rows(K: np.ndarray, D: np.ndarray, betas, max_swaps: int = 200, n_candidates: int = 32,
                        KT: np.ndarray | None = None, kmax: tuple | None = None, prod=None) -> np.ndarray:
    """Row r: a balanced y maximising y'M_r y, M_r = diag(D[r]) K diag(D[r]) (= argmax_y (y*d)'K(y*d)
    = argmin_y G(alpha, y) for d = alpha_1 - alpha_2), -betas[r] <= e'y <= betas[r].

    Start: the balanced thresholding of M_r's leading eigenvector (:func:`leading_eigvecs_rows`, all
    rows in one lockstep Lanczos; M_r is never formed). Then the swaps of :func:`_swap_improve`, for
    all rows in lockstep. ``prod``: the Lanczos products another way (:func:`leading_eigvecs_rows`)."""
    D = np.array(D, dtype=np.float64, ndmin=2)
    zero = ~D.any(axis=1)
    D[zero] = 1.0                                             # alpha = 0: every y has the same G
    vecs = leading_eigvecs_rows(K, D, prod=prod)
    Y = np.array([balanced_signs(v, beta) for v, beta in zip(vecs, betas)], dtype=np.float64).reshape(D.shape)
    return _swap_improve(K, D, Y, max_swaps=max_swaps, n_candidates=n_candidates, KT=KT, kmax=kmax)


def _most_violated(K: np.ndarray, d: np.ndarray, beta: float, max_swaps: int = 200, n_candidates: int = 32,
                   KT: np.ndarray | None = None, kmax: tuple | None = None) -> np.ndarray:
    """One row of :func:`_most_violated_rows`: a balanced y maximising y'My, M = diag(d) K diag(d).
    A caller that generates many labels on one K passes ``KT`` (C-ordered K.T) and ``kmax``
    (:func:`abs_maxima`) once, instead of an n x n pass each."""
    return _most_violated_rows(K, d[None, :], [beta], max_swaps, n_candidates, KT, kmax)[0]
