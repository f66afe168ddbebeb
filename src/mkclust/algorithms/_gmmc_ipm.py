"""A primal-dual interior-point method for GMMC's SDP, to its tolerance in a few dozen O(n^3) steps.

The SDP (``gmmc`` module docstring), primal and dual:

    min <A, X>  s.t.  diag(X) = e,  <ee', X> + s = beta^2,  X PSD,  s >= 0
    max e'z - beta^2 t  s.t.  Z = A - Diag(z) + t ee' PSD,  t >= 0.

**Why by hand.** SCS (first order) stalls on it: on the centred kernels of the ODMC paper's sets A's
largest eigenvalue, C, sits on e, the direction of the balance term, and at C = 1000 SCS is still
"inaccurate" after 20,000 iterations whatever its scaling (docs/papers.md, ODMC). A generic
interior-point solver (Clarabel through cvxpy) forms the scaling block of the n x n PSD cone, a dense
(n(n+1)/2)^2 matrix: 10 GB at n = 270. The structure here has only n + 1 constraints, all of them
diagonal or rank one, so the Newton system reduces to an (n + 1) x (n + 1) Schur complement,
Z^-1 o X (Hadamard product) bordered by one row: the max-cut interior-point method of Helmberg,
Rendl, Vanderbei and Wolkowicz (SIAM J. Optim. 1996) with the balance row added. No maintained
Python library exposes that reduction, so it is written here (numpy and scipy's LAPACK, no loop over
samples).

**Method.** The HKM direction, Z dX + dZ X = sigma mu I - Z X (dX symmetrised), with Mehrotra's
predictor-corrector: an affine step (sigma = 0) measures how far the gap can fall, sigma =
(gap_affine / gap)^3, and the corrector adds the second-order term. Separate primal and dual step
lengths, 0.98 of the largest keeping X, Z, s, t positive, halved while the new X or Z has no
Cholesky factor (rounding, near the optimum). The start is strictly feasible (X = a scaled
I - c ee'/n with diag 1 and <ee', X> = min(n, beta^2 / 2); z below A's smallest eigenvalue; t so that
s t is the matrix part's mean <X, Z> / n), and every step keeps the linear constraints (their
residuals are carried, so rounding is corrected rather than accumulated; Z is formed from z and t).
It stops when the duality gap <X, Z> + s t is below ``tol`` times 1 + |primal| + |dual| and diag(X)
is within ``tol`` of e (1e-7 by default: the relative gap can stall at 1e-8 to 5e-8 in double
precision at C = 1000, house, n = 232), or when, with the relative gap below 1e-3, 5 steps have not
halved the gap (``stalled``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy import linalg


@dataclass
class SdpSolution:
    """The IPM's result: dual (z, t), primal X (the relaxed yy'), the values and how it ended."""
    z: np.ndarray
    t: float
    X: np.ndarray
    primal: float
    dual: float
    converged: bool
    stalled: bool
    iterations: int
    seconds: float
    relative_gap: float


def _max_step(L: np.ndarray, D: np.ndarray) -> float:
    """The largest a with L L' + a D PSD (inf if D is PSD): -1 / the smallest eigenvalue of L^-1 D L^-T."""
    W = linalg.solve_triangular(L, D, lower=True)
    W = linalg.solve_triangular(L, W.T, lower=True)
    lam = linalg.eigvalsh(0.5 * (W + W.T), subset_by_index=[0, 0])[0]
    return np.inf if lam >= 0 else -1.0 / lam


def _interior(make, a: float, halvings: int = 30):
    """(M, its Cholesky factor, a') for M = make(a') and the largest a' = a / 2^k, k < ``halvings``,
    whose factor exists; (None, None, 0.0) if none does."""
    for _ in range(halvings):
        M = make(a)
        try:
            return M, linalg.cholesky(M, lower=True), a
        except linalg.LinAlgError:
            a *= 0.5
    return None, None, 0.0


def _start(A: np.ndarray, beta: float):
    """A strictly feasible, roughly centred start: X with diag 1 and <ee', X> = min(n, beta^2 / 2);
    z below A's smallest eigenvalue; t with s t equal to the mean of the matrix part's <X, Z> / n."""
    n = A.shape[0]
    q = min(float(n), beta**2 / 2)
    c = (n - q) / (n - q / n)                 # X = D (I - c ee'/n) D, diag 1, e'Xe = q
    X = (np.eye(n) - c / n) / (1.0 - c / n)
    lam_min = linalg.eigvalsh(A, subset_by_index=[0, 0])[0]
    z = np.full(n, lam_min - max(1.0, float(np.abs(np.diag(A)).mean())))
    s = beta**2 - q
    t = float(np.sum(X * (A - np.diag(z)))) / n / s
    return X, s, z, t


def gmmc_ipm(A: np.ndarray, beta: float, tol: float = 1e-7, max_iter: int = 100,
             step: float = 0.98) -> SdpSolution:
    """Solve the SDP of the module docstring for a symmetric A and beta > 0.

    Parameters
    ----------
    A : ndarray of shape (n, n)
        Symmetric.
    beta : float
        The balance bound, > 0 (beta = 0 leaves the primal no interior point).
    tol : float, default=1e-7
        Relative duality gap and primal residual at which it stops.
    max_iter : int, default=100
        Newton steps at most; a solve that uses them all returns ``converged=False``, and so does one
        that stalls: its gap not halved in 5 steps once the relative gap is below 1e-3, or a Newton
        system that rounding made indefinite (near the optimum).
    step : float, default=0.98
        The share of the largest step that keeps the iterates interior.
    """
    if not beta > 0:
        raise ValueError(f"the interior-point GMMC needs a balance bound beta > 0, got {beta}")
    t0 = time.perf_counter()
    A = 0.5 * (A + A.T)
    n = A.shape[0]
    e = np.ones(n)
    X, s, z, t = _start(A, beta)
    Z = A - np.diag(z) + t
    b2 = beta**2
    it, converged, stalled, rel, history = 0, False, False, np.inf, []
    try:
        Lx, Lz = linalg.cholesky(X, lower=True), linalg.cholesky(Z, lower=True)
    except linalg.LinAlgError:   # a start not positive definite in floating point (beta^2 / n near rounding)
        return SdpSolution(z=z, t=float(t), X=X, primal=float(np.sum(A * X)), dual=float(z.sum() - b2 * t),
                           converged=False, stalled=True, iterations=0, seconds=time.perf_counter() - t0,
                           relative_gap=np.inf)
    while True:
        primal, dual = float(np.sum(A * X)), float(z.sum() - b2 * t)
        gap = float(np.sum(X * Z)) + s * t
        rp = e - np.diag(X)
        rs = b2 - X.sum() - s
        rel = gap / (1.0 + abs(primal) + abs(dual))
        if rel < tol and np.abs(rp).max() < tol and abs(rs) < tol * b2:
            converged = True
            break
        history.append(gap)
        # near the end (relative gap below 1e-3), 5 steps without halving the gap: rounding's limit
        stalled = stalled or (rel < 1e-3 and len(history) > 5 and gap > 0.5 * history[-6])
        if it >= max_iter or stalled:
            break
        it += 1
        Zi = linalg.cho_solve((Lz, True), np.eye(n))
        Zi = 0.5 * (Zi + Zi.T)
        try:
            S = linalg.cho_factor(Zi * X)       # Z^-1 o X: the diagonal constraints' Schur block
        except linalg.LinAlgError:              # rounding near the optimum: end here, as a stall
            it -= 1
            stalled = True
            break
        u, w = Zi.sum(axis=1), X.sum(axis=1)    # Z^-1 e and X e
        v = u * w
        d = u.sum() * w.sum() + s / t
        Siv = linalg.cho_solve(S, v)
        mu = gap / (n + 1)

        def direction(R, rc):
            """The Newton direction for Z dX + dZ X = R - Z X and s dt + t ds = rc."""
            G = Zi @ R - X if R is not None else -X
            r1 = rp - np.diag(G)
            r2 = rs - G.sum() - rc / t
            Sr1 = linalg.cho_solve(S, r1)
            dt = (r2 - v @ Sr1) / (v @ Siv - d)
            dz = Sr1 + Siv * dt
            dX = G + (Zi * dz) @ X - dt * np.outer(u, w)      # G - Z^-1 dZ X, dZ = -Diag(dz) + dt ee'
            dX = 0.5 * (dX + dX.T)
            ds = (rc - s * dt) / t
            return dX, ds, dz, dt

        def lengths(dX, ds, dz, dt):
            dZ = dt - np.diag(dz)
            ap = min(_max_step(Lx, dX), -s / ds if ds < 0 else np.inf)
            ad = min(_max_step(Lz, dZ), -t / dt if dt < 0 else np.inf)
            return min(1.0, step * ap), min(1.0, step * ad)

        dX, ds, dz, dt = direction(None, -s * t)                       # predictor (sigma = 0)
        ap, ad = lengths(dX, ds, dz, dt)
        gap_aff = float(np.sum((X + ap * dX) * (Z + ad * (dt - np.diag(dz))))) + (s + ap * ds) * (t + ad * dt)
        sigma = min(1.0, (gap_aff / gap) ** 3)
        dZa = dt - np.diag(dz)
        R = sigma * mu * np.eye(n) - dZa @ dX                          # corrector: second-order term
        dX, ds, dz, dt = direction(R, sigma * mu - s * t - ds * dt)
        ap, ad = lengths(dX, ds, dz, dt)
        # near the optimum X or Z is close to singular and the step's 2 % margin can be lost to
        # rounding: halve the step until the new iterate's Cholesky factor exists (it is reused);
        # Z is formed from (z, t), so the dual constraint holds exactly
        Xn, Lxn, ap = _interior(lambda a: X + a * dX, ap)
        Zn, Lzn, ad = _interior(lambda a: A - np.diag(z + a * dz) + (t + a * dt), ad)
        if ap > 0:
            X, Lx, s = Xn, Lxn, s + ap * ds
        if ad > 0:
            Z, Lz, z, t = Zn, Lzn, z + ad * dz, t + ad * dt
        stalled = ap == 0 and ad == 0
    return SdpSolution(z=z, t=float(t), X=X, primal=primal, dual=dual, converged=converged, stalled=stalled,
                       iterations=it,
                       seconds=time.perf_counter() - t0, relative_gap=float(rel))
