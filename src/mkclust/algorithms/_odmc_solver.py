"""The stochastic mirror descent of ODMC's Algorithm 1 (:mod:`mkclust.algorithms.odmc`, whose
docstring states the problem, the steps and the choices): the chains of a lockstep batch, their
kernel products and Theorem 1's step constants. Kept apart from the estimator so that the estimator
module holds the model and its parameters, this one the solver."""

from __future__ import annotations

import logging
import time

import numpy as np
from sklearn.utils import check_random_state

from mkclust.algorithms._labels import DENSE_LIMIT, EIGSH_TOL, _most_violated_rows, abs_maxima, orient
from mkclust.algorithms._odm import odm_kappa
from mkclust.algorithms.base import leading_eigenvectors

log = logging.getLogger("mkclust.algorithms.odmc")


def mu_scale(nb, L1):
    """Theorem 1's a = |B| L1 / sqrt(log |B|), elementwise; infinite (mu fixed, no entropic step) with
    one label or before any |G| is seen."""
    nb, L1 = np.asarray(nb, dtype=np.float64), np.asarray(L1, dtype=np.float64)
    ok = (nb > 1) & (L1 > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, nb * L1 / np.sqrt(np.log(np.where(ok, nb, 2.0))), np.inf)


def low_rank_factor(K: np.ndarray, max_rank: int, rtol: float = 1e-12) -> np.ndarray | None:
    """F (n, r) with K = F F' up to rounding, when K's rank r is at most ``max_rank``; else None.

    Pivoted (partial) Cholesky: each step takes the largest remaining diagonal as pivot and removes
    its column; it stops when every remaining diagonal entry of K - F F' (a PSD residual, so its
    entries are bounded by sqrt(R_ii R_jj)) is at most ``rtol`` times K's largest diagonal entry:
    the residual is then at the rounding of K itself (a linear kernel of d features has rank <= d;
    after d steps its residual diagonal is about 1e-15 of the largest). O(n r^2), and it gives up
    after ``max_rank`` steps, so a full-rank kernel costs O(n max_rank^2). Written here because
    LAPACK's pivoted Cholesky (``?pstrf``) factors to the full numerical rank: O(n^3) on the
    full-rank Gaussian kernels, to learn that they have no small factor."""
    n = K.shape[0]
    diag = np.array(np.diag(K), dtype=np.float64)
    top = float(diag.max(initial=0.0))
    if not top > 0:
        return None
    F = np.zeros((n, max_rank))
    for k in range(max_rank + 1):
        p = int(np.argmax(diag))
        if diag[p] <= rtol * top:
            return F[:, :k].copy()
        if k == max_rank:
            return None
        col = K[:, p] - F[:, :k] @ F[p, :k]
        F[:, k] = col / np.sqrt(diag[p])
        diag -= F[:, k] ** 2
        diag[p] = 0.0
    return None


class _Products:
    """The kernel products of a lockstep batch, rows S -> S K (K symmetric).

    ``step`` serves the mirror-descent steps and duality-gap checks, in ``products`` precision
    (float32: K copied once to float32, the products rounded to float32 and returned as float64);
    ``exact`` serves the label generation's Lanczos in float64. With ``low_rank`` = "auto" and K of
    rank r <= n / 8 (:func:`low_rank_factor`; a linear kernel of d << n features), both go through
    the factor: (S F) F', 4 n r flops per row instead of 2 n^2, in float64."""

    def __init__(self, K: np.ndarray, products: str, low_rank: str):
        n = K.shape[0]
        self.K = K
        self.F = low_rank_factor(K, max(1, n // 8)) if low_rank == "auto" and n >= 64 else None
        self.K32 = K.astype(np.float32) if products == "float32" and self.F is None else None
        if self.F is not None:
            log.debug("ODMC: kernel of rank %d (n = %d): products through its factor", self.F.shape[1], n)

    @property
    def rank(self) -> int:
        return self.K.shape[0] if self.F is None else self.F.shape[1]

    def exact(self, S: np.ndarray) -> np.ndarray:
        if self.F is not None:
            return (S @ self.F) @ self.F.T
        return S @ self.K

    def step(self, S: np.ndarray) -> np.ndarray:
        if self.K32 is not None:
            return (S.astype(np.float32) @ self.K32).astype(np.float64)
        return self.exact(S)


def _rowdot(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.einsum("cn,cn->c", A, B)


def _base_terms(a1, a2, kappa, nu, th):
    """Per chain, the part of G (Eq. 3) without K: -kappa (||a1||^2 + ||a2||^2 / nu) + (1 - theta) e'a1
    - (1 + theta) e'a2."""
    return (-kappa * (_rowdot(a1, a1) + _rowdot(a2, a2) / nu) + (1 - th) * a1.sum(axis=1)
            - (1 + th) * a2.sum(axis=1))


class _Chain:
    """One fit's own state in a lockstep batch: parameters, random stream and label set B of ``est``,
    an :class:`~mkclust.algorithms.odmc.ODMC` estimator."""

    def __init__(self, est, K: np.ndarray, lam_max: float | None, pools: dict):
        n = K.shape[0]
        self.est = est
        self.beta = 0.03 * n if est.balance is None else float(est.balance)   # >= 0 (_parameter_constraints)
        self.tau = est.default_tau(n) if est.tau is None else float(est.tau)
        if not self.tau > 0:
            raise ValueError(f"tau must be positive, got {est.tau}")
        self.lam, self.nu, self.th = float(est.lam), float(est.nu), float(est.theta)
        self.kappa = odm_kappa(n, self.lam, self.th)
        self.gap_tol, self.max_labels = float(est.gap_tol), int(est.max_labels)
        if lam_max is None:    # adaptive: the largest |G| and ||dG/dalpha|| drawn so far (set at step 1)
            self.L1, self.L2, self.b = 0.0, 0.0, np.inf
        else:
            self.L1, self.L2 = est._bounds(lam_max, n, self.tau)
            self.b = np.sqrt(2) * self.L2 / (np.sqrt(n) * self.tau)
        self.Y, self.rng = self._pool(est, K, pools)
        self.a = float(mu_scale(len(self.Y), self.L1))
        self.gap_trace, self.n_labels_trace = [], []

    def _pool(self, est, K: np.ndarray, pools: dict):
        """The initial label set and the random stream after it. The pool is a function of the seed,
        the kernel, beta and n_pool alone, so fits of one batch that share those (the paper's 64
        settings of a seed) build it once: the first builds it from its stream, the others take the
        label set and a copy of the stream's state after it (each fit's draws stay its own)."""
        seed = est.random_state
        key = (int(seed), self.beta, int(est.n_pool)) if isinstance(seed, (int, np.integer)) else None
        if key is not None and key in pools:
            Y, state = pools[key]
            rng = np.random.RandomState()
            rng.set_state(state)
            return Y, rng
        rng = check_random_state(seed)
        # y and -y are one clustering with one G: keep each once, oriented to agree with the first
        # label (the labels come from the vote sign(sum_k mu_k y_k), so B must share one orientation)
        pool, ref = {}, None
        for yk in est._initial_pool(K, self.beta, rng):
            ref = yk if ref is None else ref
            yk = orient(yk, ref)
            pool.setdefault(yk.tobytes(), yk)
        Y = np.array(list(pool.values()))
        Y.setflags(write=False)
        if key is not None:
            pools[key] = (Y, rng.get_state())
        return Y, rng


#: the most label rows of one duality-gap product (bounds the checks' temporaries: 4 arrays of
#: GAP_ROWS x n floats, 100 MB at n = 3175)
GAP_ROWS = 1024


class _Running:
    """The chains of a lockstep batch still running, one row each: their batch index (``live``),
    label count ``nb``, padded labels ``Ypad`` and weights ``Mu``, the point ``alpha``, the running
    sums of the averaged iterates and their counts, and the step constants; a step updates them in
    place, :meth:`keep` drops the chains that stopped."""

    FIELDS = ("live", "nb", "Ypad", "Mu", "alpha", "sum_mu", "sum_alpha", "count",
              "kappa", "nu", "th", "tau", "L1", "L2", "a", "b")

    def __init__(self, chains: list, n: int):
        """``chains``: the batch's :class:`_Chain` objects, each with its initial labels ``Y``."""
        C = len(chains)
        L = max(max(ch.max_labels, len(ch.Y)) for ch in chains)
        self.Ypad = np.zeros((C, L, n), dtype=np.int8)
        self.Mu = np.zeros((C, L))
        self.nb = np.array([len(ch.Y) for ch in chains])
        for c, ch in enumerate(chains):
            self.Ypad[c, :self.nb[c]] = ch.Y
            self.Mu[c, :self.nb[c]] = 1.0 / self.nb[c]
        for attr in ("kappa", "nu", "th", "tau", "L1", "L2", "a", "b"):
            setattr(self, attr, np.array([getattr(ch, attr) for ch in chains], dtype=np.float64))
        self.alpha = np.zeros((C, 2 * n))
        self.sum_mu, self.sum_alpha, self.count = np.zeros((C, L)), np.zeros((C, 2 * n)), np.zeros(C)
        self.live = np.arange(C)

    def keep(self, mask: np.ndarray) -> None:
        """Keep the rows of ``mask`` (the chains still running)."""
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name)[mask])


class _Lockstep:
    """Algorithm 1 for a batch of chains that share K and the schedule (ODMC.fit_batch).

    Per step, every active chain c draws i_c ~ U(B_c) and j_c ~ mu_c from its own random stream
    (``randint``, then one ``random_sample`` inverted through the cdf of mu_c, as ``choice`` does);
    the products K s_i and K s_j of all chains are one GEMM (one row where i_c = j_c: the same
    product); the rest is elementwise over the (C, .) arrays, in place. The duality-gap checks of
    all chains are one GEMM over all their labels (in blocks of ``GAP_ROWS`` rows), and so are the
    objectives of the generated labels. Checks, label generation and stops are per chain, at the
    steps the common schedule fixes."""

    def __init__(self, ests: list, K: np.ndarray):
        self.K, self.n = K, K.shape[0]
        e0 = ests[0]
        self.T = int(e0.max_iter)
        self.eta = np.sqrt(2.0 / self.T)
        self.check_every, self.generate_every = int(e0.check_every), int(e0.generate_every)
        self.prod = _Products(K, e0.products, e0.low_rank)
        lam_max = None
        if e0.steps == "theorem":
            lam_max = leading_eigenvectors(lambda v: K @ v, self.n, 1, dense=lambda: K, dense_limit=DENSE_LIMIT,
                                           v0=np.ones(self.n), tol=EIGSH_TOL)[0][0]
            lam_max = max(float(lam_max), 0.0)
        self.adaptive = lam_max is None
        pools: dict = {}
        self.chains = [_Chain(e, K, lam_max, pools) for e in ests]
        self.n_pools = len(pools)

    def _objectives(self, S, base, owner):
        """G of each label row S (s = y * d of its chain ``owner``): -1/2 s'K s + base."""
        return -0.5 * _rowdot(S, self.prod.step(S)) + base[owner]

    def _checks(self, mu, alpha, Ypad, nb, kappa, nu, th, tau):
        """At the points (mu, alpha) of chains with nb labels each: phi = sum_k mu_k G_k, min_k G_k, the
        duality-gap bound of the module docstring, and each chain's base term of G (the part without
        K). The label products of all chains are one GEMM per block of ``GAP_ROWS`` rows."""
        n = self.n
        A = len(nb)
        a1, a2 = alpha[:, :n], alpha[:, n:]
        base = _base_terms(a1, a2, kappa, nu, th)
        d = a1 - a2
        phi, gmin, yks = np.zeros(A), np.full(A, np.inf), np.zeros((A, n))
        lab = np.arange(Ypad.shape[1])
        r0 = 0
        while r0 < A:                                  # blocks of chains of at most GAP_ROWS labels
            r1 = r0 + max(1, int(np.searchsorted(np.cumsum(nb[r0:]), GAP_ROWS, side="right")))
            mask = lab[None, :] < nb[r0:r1, None]
            owner = np.repeat(np.arange(r0, r1), nb[r0:r1])
            Yf = Ypad[r0:r1][mask]
            S = Yf * d[owner]
            KS = self.prod.step(S)
            G = -0.5 * _rowdot(S, KS) + base[owner]
            w = mu[r0:r1][mask]
            starts = np.concatenate([[0], np.cumsum(nb[r0:r1])[:-1]])
            phi[r0:r1] = np.add.reduceat(w * G, starts)
            gmin[r0:r1] = np.minimum.reduceat(G, starts)
            KS *= (w[:, None] * Yf)                     # mu_k y_k * (K s_k), summed per chain
            yks[r0:r1] = np.add.reduceat(KS, starts, axis=0)
            r0 = r1
        sw = mu.sum(axis=1)[:, None]
        grad = np.concatenate([-yks + sw * (-2 * kappa[:, None] * a1 + (1 - th)[:, None]),
                               yks + sw * (-2 * (kappa / nu)[:, None] * a2 - (1 + th)[:, None])], axis=1)
        # phi(mu, .) is m-strongly concave, m = 2 kappa min(1, 1/nu), so max_A phi(mu, .) - phi(mu, alpha)
        # <= max over the box of g'delta - m/2 ||delta||^2, separable: delta_i = clip(g_i / m, box)
        m = (2 * kappa * np.minimum(1.0, 1.0 / nu))[:, None]
        delta = np.clip(grad / m, -alpha, tau[:, None] - alpha)
        gap = phi - gmin + _rowdot(grad, delta) - 0.5 * m[:, 0] * _rowdot(delta, delta)
        return phi, gmin, np.maximum(gap, 0.0), base

    def run(self):
        """Algorithm 1 for every chain of the batch (class docstring): steps in lockstep, at the
        schedule's steps the gap checks, label generation and stops; then each chain's timings."""
        chains, T = self.chains, self.T
        C, n = len(chains), self.n
        s = _Running(chains, n)
        rngs = [ch.rng for ch in chains]
        KT = np.ascontiguousarray(self.K.T)      # K's columns as rows, for the label generation
        kmax = abs_maxima(self.K)
        n_products = np.zeros(C, dtype=np.int64)  # each chain's distinct step products (1 or 2 a step)
        grad, S = np.empty((C, 2 * n)), np.empty((2 * C, n))   # buffers of the step, reused
        total_steps = 0
        t0 = last_log = time.perf_counter()       # seconds per iteration count the steps, not the pools
        for t in range(1, T + 1):
            I, J = self._draw(s, rngs)
            self._step(s, I, J, S, grad, n_products)
            total_steps += len(s.live)
            if not (t % self.check_every == 0 or t % self.generate_every == 0 or t == T):
                continue
            if C > 1 and time.perf_counter() - last_log > 10:
                last_log = time.perf_counter()
                log.info("ODMC batch: step %d of %d, %d of %d fits running, %.0f s", t, T, len(s.live), C,
                         last_log - t0)
            keep = self._check_generate_stop(s, t, KT, kmax, n_products)
            if not keep.all():
                s.keep(keep)
                if not len(s.live):
                    break
        self._timings(time.perf_counter() - t0, total_steps, n_products)

    @staticmethod
    def _draw(s: _Running, rngs) -> tuple[np.ndarray, np.ndarray]:
        """Each running chain's i ~ U(B) and j ~ mu from its own stream: ``randint``, then one
        ``random_sample`` inverted through the cdf of mu (as ``choice`` does)."""
        A = len(s.live)
        rows = np.arange(A)
        I = np.empty(A, dtype=np.int64)
        U = np.empty(A)
        for r, c in enumerate(s.live):
            rng = rngs[c]
            I[r] = rng.randint(s.nb[r])
            U[r] = rng.random_sample()
        cdf = np.cumsum(s.Mu, axis=1)
        cdf /= cdf[rows, s.nb - 1][:, None]
        J = ((cdf <= U[:, None]) & (np.arange(s.Mu.shape[1])[None, :] < s.nb[:, None])).sum(axis=1)
        return I, J

    def _step(self, s: _Running, I, J, S, grad, n_products) -> None:
        """One stochastic mirror-descent step of every running chain, in place: the products K s_i
        and K s_j in one GEMM (one row where i = j), the entropic step of mu and the projected
        gradient step of alpha, Theorem 1's constants raised where the observed bounds grow
        (``steps="adaptive"``), and the running sums of the averaged iterates."""
        n, eta = self.n, self.eta
        A = len(s.live)
        rows = np.arange(A)
        a1, a2 = s.alpha[:, :n], s.alpha[:, n:]
        d = a1 - a2
        Yj = s.Ypad[rows, J]
        other = np.flatnonzero(I != J)           # where i = j, K s_j is K s_i: one product
        m = A + len(other)
        np.multiply(s.Ypad[rows, I], d, out=S[:A])
        np.multiply(Yj[other], d[other], out=S[A:m])
        KS = self.prod.step(S[:m])
        n_products[s.live] += 1
        n_products[s.live[other]] += 1
        base = _base_terms(a1, a2, s.kappa, s.nu, s.th)
        Gi = -0.5 * _rowdot(S[:A], KS[:A]) + base
        if len(other) == A:
            yks = KS[A:]
        else:                                    # row j of each chain: its own, or its i row
            jrow = rows.copy()
            jrow[other] = A + np.arange(len(other))
            yks = KS[jrow]
        yks *= Yj
        g = grad[:A]
        g1, g2 = g[:, :n], g[:, n:]
        np.multiply(a1, (-2 * s.kappa)[:, None], out=g1)
        g1 -= yks
        g1 += (1 - s.th)[:, None]
        np.multiply(a2, -(2 * (s.kappa / s.nu))[:, None], out=g2)
        g2 += yks
        g2 -= (1 + s.th)[:, None]
        if self.adaptive:
            up = np.abs(Gi) > s.L1
            if up.any():
                s.L1[up] = np.abs(Gi[up])
                s.a[up] = mu_scale(s.nb[up], s.L1[up])
            gnorm = np.linalg.norm(g, axis=1)
            up = gnorm > s.L2
            s.L2[up] = gnorm[up]
            s.b[up] = np.sqrt(2) * s.L2[up] / (np.sqrt(n) * s.tau[up])
        step = np.isfinite(s.a)
        if step.any():
            with np.errstate(divide="ignore"):
                logu = np.log(s.Mu[step])
            sr = rows[step]
            logu[np.arange(len(sr)), I[step]] -= eta * s.nb[step] * Gi[step] / s.a[step]
            logu -= logu.max(axis=1, keepdims=True)
            mu_new = np.exp(logu)
            s.Mu[step] = mu_new / mu_new.sum(axis=1, keepdims=True)
        g *= (eta / s.b)[:, None]
        s.alpha += g
        np.clip(s.alpha, 0.0, s.tau[:, None], out=s.alpha)
        s.sum_mu += s.Mu
        s.sum_alpha += s.alpha
        s.count += 1

    def _check_generate_stop(self, s: _Running, t: int, KT, kmax, n_products) -> np.ndarray:
        """At a scheduled step: every running chain's gap at its averaged point, the most violated
        label of the chains due to generate one (a label joins B, restarting the averages, when its
        G is below the pool's minimum), and the chains that stop (converged, or step T). Returns the
        mask of the chains that keep running."""
        chains, n, T = self.chains, self.n, self.T
        A = len(s.live)
        keep = np.ones(A, dtype=bool)
        mu_bar, alpha_bar = s.sum_mu / s.count[:, None], s.sum_alpha / s.count[:, None]
        phi, gmin, gap, base = self._checks(mu_bar, alpha_bar, s.Ypad, s.nb, s.kappa, s.nu, s.th, s.tau)
        for r, c in enumerate(s.live):
            chains[c].gap_trace.append((t, float(gap[r])))
            chains[c].n_labels_trace.append((t, int(s.nb[r])))
        gen = [r for r, c in enumerate(s.live) if t % self.generate_every == 0 and s.nb[r] < chains[c].max_labels]
        Ynew, gnew = {}, {}
        if gen:                                # the most violated labels of these chains, in lockstep
            dbar = alpha_bar[gen, :n] - alpha_bar[gen, n:]
            betas = [chains[s.live[r]].beta for r in gen]
            found = _most_violated_rows(self.K, dbar, betas, KT=KT, kmax=kmax,
                                        prod=None if self.prod.F is None else self.prod.exact)
            Yo = np.array([orient(y, s.Ypad[r, 0]) for r, y in zip(gen, found)])
            G = self._objectives(Yo * dbar, base, np.asarray(gen))
            Ynew, gnew = dict(zip(gen, Yo)), dict(zip(gen, G))
        for r, c in enumerate(s.live):
            ch = chains[c]
            if r in Ynew:
                ynew = Ynew[r]
                Y = s.Ypad[r, :s.nb[r]]
                known = bool((Y == ynew[None, :]).all(axis=1).any())
                if not known and gnew[r] < gmin[r] - ch.gap_tol * max(1.0, abs(phi[r])):
                    log.debug("ODMC step %d: label %d joins B (G %.6g < min %.6g)", t, s.nb[r] + 1, gnew[r], gmin[r])
                    k = s.nb[r]
                    s.Ypad[r, k] = ynew
                    s.nb[r] = k + 1
                    s.a[r] = mu_scale(k + 1, s.L1[r])
                    s.Mu[r, :k] *= k / (k + 1)
                    s.Mu[r, k] = 1.0 / (k + 1)
                    s.sum_mu[r], s.sum_alpha[r], s.count[r] = 0.0, 0.0, 0
                    if t == T:                       # no step left to average: the current point
                        one = slice(r, r + 1)
                        p1, _, g1_, _ = self._checks(s.Mu[one], s.alpha[one], s.Ypad[one], s.nb[one], s.kappa[one],
                                                    s.nu[one], s.th[one], s.tau[one])
                        self._finish(ch, s.Mu[r, :s.nb[r]].copy(), s.alpha[r].copy(), s.Ypad[r, :s.nb[r]],
                                     float(p1[0]), float(g1_[0]), t, False, s.a[r], s.b[r], n_products[c])
                        keep[r] = False
                    continue
            log.debug("ODMC step %d: |B| = %d, phi %.6g, gap %.4g", t, s.nb[r], phi[r], gap[r])
            converged = gap[r] <= ch.gap_tol * max(1.0, abs(phi[r]))
            if converged or t == T:
                self._finish(ch, mu_bar[r, :s.nb[r]], alpha_bar[r], s.Ypad[r, :s.nb[r]], float(phi[r]),
                             float(gap[r]), t, converged, s.a[r], s.b[r], n_products[c])
                keep[r] = False
        return keep

    def _timings(self, wall: float, total_steps: int, n_products) -> None:
        """Each fit's seconds per iteration (alone) or the batch's per chain step, and the batch's size."""
        chains = self.chains
        for ch in chains:
            if len(chains) == 1:
                ch.est.seconds_per_iteration_ = wall / max(ch.est.n_iter_, 1)
                ch.est.batch_seconds_per_iteration_ = ch.est.seconds_per_iteration_
            else:
                ch.est.seconds_per_iteration_ = None
                ch.est.batch_seconds_per_iteration_ = wall / max(total_steps, 1)
            ch.est.batch_size_ = len(chains)
            ch.est.product_rank_ = self.prod.rank
        log.debug("ODMC batch of %d: %d initial pools, %d step products for %d chain steps", len(chains),
                  self.n_pools, int(n_products.sum()), total_steps)

    def _finish(self, ch: _Chain, mu_bar, alpha_bar, Y, phi, gap, t, converged, a, b, n_products):
        est = ch.est
        est.gap_trace_, est.n_labels_trace_ = ch.gap_trace, ch.n_labels_trace
        est.mu_, est.alpha_, est.labels_pool_ = mu_bar.copy(), alpha_bar.copy(), np.array(Y, dtype=np.int8)
        est.decision_ = est.mu_ @ est.labels_pool_
        est.labels_ = (est.decision_ < 0).astype(np.int64)
        est.objective_, est.duality_gap_ = phi, gap
        est.n_iter_, est.converged_, est.tau_ = t, bool(converged), ch.tau
        est.n_step_products_ = int(n_products)
        est.step_ = {"a": float(a), "b": float(b), "eta": float(self.eta)}
        if not converged:
            log.warning("ODMC stopped after max_iter=%d steps with duality gap %.4g (|B| = %d)", self.T, gap, len(Y))
