"""The swap search of the label generation (:func:`mkclust.algorithms._labels._swap_improve`), its
loop compiled with numba (``cache=True``: compiled once per machine, then loaded from the cache).

A swap round is O(n) arithmetic on one labelling: the gains of the single flips, the best
``n_candidates`` flips of either sign, the pairs among them, and the O(n) update of M y. Written with
numpy over many labellings at once (the lockstep form this replaces), each round cost about twenty
array operations and their Python overhead, and those rounds were most of the label generation's
time (5.7 of 10.2 s of an ODMC batch on german under a profiler). No library offers this search,
so it is written here; each labelling is searched on its own, in the order and with the decisions of
the lockstep form it replaces:

- the gain of flipping i alone: delta_i = 4 (M_ii - y_i (M y)_i); of swapping i (+1) and j (-1):
  delta_i + delta_j - 8 M_ij; a swap is taken when its gain exceeds tol = 1e-12 max(1, |y'My|);
- the candidates of either sign: the ``n_candidates`` members with the largest delta, largest first,
  ties in index order; the best pair is the first maximum with the +1 candidate as the outer loop;
- when no candidate pair improves and a sign has more members than candidates, every pair that can
  improve (the bounds of :func:`_full_pair`), the +1 members in index order as the outer loop,
  first maximum;
- at most ``max_swaps`` swaps.

The one arithmetic that is not the same operation is y'My (a sequential sum here, numpy's einsum
there), which only sets tol; a gain within rounding of 1e-12 |y'My| of tol is the only place the two
could decide differently.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _insert_top(vals, idx, count, kk, v, i):   # pragma: no cover - compiled; its py_func is tested
    """Insert (v, i) into the first ``count`` entries of (vals, idx), ordered by v descending (an
    equal v keeps the earlier entry first: i comes in increasing order), at most ``kk`` entries.
    Returns the new count."""
    if count == kk and not v > vals[kk - 1]:
        return count
    pos = count if count < kk else kk - 1
    while pos > 0 and vals[pos - 1] < v:
        if pos < kk:
            vals[pos], idx[pos] = vals[pos - 1], idx[pos - 1]
        pos -= 1
    vals[pos], idx[pos] = v, i
    return min(count + 1, kk)


@njit(cache=True)
def _full_pair(K, y, d, delta, kmax0, kmax1, tol):   # pragma: no cover - compiled; its py_func is tested
    """The best swap over every (+1, -1) pair that can have a gain above ``tol``, +1 members in index
    order outer, first maximum. Returns (gain, i, j). The bound: gain_ij = delta_i + delta_j - 8 d_i d_j
    K_ij <= delta_i + max_N delta + 8 |d_i| max_N |d| max_j |K_ij| (and likewise for j), so a pair can
    only improve when both its members' bounds exceed tol (less a margin 1e-9 times the bound's
    terms, far above their rounding). The pairs left out cannot hold the best swap nor tie it: the
    same decision and the same first maximum as every pair (on german about 2 % of each side is
    left)."""
    n = y.size
    dN = dP = aN = aP = -np.inf
    for k in range(n):
        if y[k] > 0:
            dP, aP = max(dP, delta[k]), max(aP, abs(d[k]))
        else:
            dN, aN = max(dN, delta[k]), max(aN, abs(d[k]))
    Nk = np.empty(n, dtype=np.int64)
    nN = 0
    for k in range(n):
        if y[k] < 0:
            b = delta[k] + dP + 8 * abs(d[k]) * aP * kmax1[k]
            mg = abs(delta[k]) + abs(dP) + 8 * abs(d[k]) * aP * kmax1[k]
            if b > tol - 1e-9 * mg:
                Nk[nN] = k
                nN += 1
    best, bi, bj = -np.inf, -1, -1
    if nN == 0:
        return best, bi, bj
    for i in range(n):
        if y[i] < 0:
            continue
        b = delta[i] + dN + 8 * abs(d[i]) * aN * kmax0[i]
        mg = abs(delta[i]) + abs(dN) + 8 * abs(d[i]) * aN * kmax0[i]
        if not b > tol - 1e-9 * mg:
            continue
        for t in range(nN):
            j = Nk[t]
            gain = delta[i] + delta[j] - 8 * (d[i] * d[j]) * K[i, j]
            if gain > best:
                best, bi, bj = gain, i, j
    return best, bi, bj


@njit(cache=True)
def swap_rows(K, KT, D, Y, G, diagK, kmax0, kmax1, max_swaps, n_candidates):   # pragma: no cover - compiled
    """Swaps on every row r of ``Y`` (+-1, changed in place) for M_r = diag(D[r]) K diag(D[r]); ``G``
    holds each row's M_r y_r on entry (changed in place). ``KT`` is K.T C-ordered, ``diagK`` K's
    diagonal, (``kmax0``, ``kmax1``) K's row and column maxima in absolute value. Returns each row's
    number of swaps."""
    m, n = Y.shape
    swaps = np.zeros(m, dtype=np.int64)
    delta = np.empty(n)
    mdiag = np.empty(n)
    kk = max(1, n_candidates)
    cpv, cnv = np.empty(kk), np.empty(kk)
    cp, cn = np.empty(kk, dtype=np.int64), np.empty(kk, dtype=np.int64)
    for r in range(m):
        y, g, d = Y[r], G[r], D[r]
        npos = 0
        for k in range(n):
            mdiag[k] = d[k] * d[k] * diagK[k]
            if y[k] > 0:
                npos += 1
        nneg = n - npos
        if npos == 0 or nneg == 0:
            continue
        partial = npos > kk or nneg > kk
        for _ in range(max_swaps):
            s = 0.0
            for k in range(n):
                s += y[k] * g[k]
            tol = 1e-12 * max(1.0, abs(s))
            np_, nn_ = 0, 0
            for k in range(n):
                delta[k] = (mdiag[k] - y[k] * g[k]) * 4
                if y[k] > 0:
                    np_ = _insert_top(cpv, cp, np_, kk, delta[k], k)
                else:
                    nn_ = _insert_top(cnv, cn, nn_, kk, delta[k], k)
            best, bi, bj = -np.inf, -1, -1
            for a in range(np_):
                i = cp[a]
                for b in range(nn_):
                    j = cn[b]
                    gain = cpv[a] + cnv[b] - 8 * (d[i] * d[j]) * K[i, j]
                    if gain > best:
                        best, bi, bj = gain, i, j
            if not best > tol and partial:
                best, bi, bj = _full_pair(K, y, d, delta, kmax0, kmax1, tol)
            if not best > tol:
                break
            y[bi], y[bj] = -1.0, 1.0
            di, dj = d[bi], d[bj]
            for k in range(n):
                g[k] += 2 * d[k] * (KT[bj, k] * dj - KT[bi, k] * di)
            swaps[r] += 1
    return swaps


def load() -> None:
    """Load (or, on a machine's first call, compile) :func:`swap_rows` with the argument types the
    label generation passes."""
    K = np.eye(2)
    ones = np.ones(2)
    swap_rows(K, K, np.ones((1, 2)), np.array([[1.0, -1.0]]), np.zeros((1, 2)), ones, ones, ones, 1, 1)
