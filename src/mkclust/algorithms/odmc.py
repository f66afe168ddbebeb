"""Optimal margin distribution clustering, ODMC (Zhang and Zhou, AAAI 2018), two clusters.

**The dual objective** (Eq. 3) for labels y in {+-1}^n and alpha = [alpha_1; alpha_2] in the box
A = [0, tau]^(2n): with d = alpha_1 - alpha_2, s = y * d and kappa = n (1 - theta)^2 / (4 lambda),

    G(alpha, y) = -1/2 s'K s - kappa (||alpha_1||^2 + ||alpha_2||^2 / nu)
                  + (1 - theta) e'alpha_1 - (1 + theta) e'alpha_2,

(the block matrix of Eq. 3 is [Q -Q; -Q Q] with Q = K o yy', so alpha' [..] alpha = s'K s), and

    dG/dalpha_1 = -y * (K s) - 2 kappa alpha_1 + (1 - theta),
    dG/dalpha_2 =  y * (K s) - 2 kappa alpha_2 / nu - (1 + theta).

**The minimax relaxation** (Eq. 7): min over mu in the simplex of max over alpha in A of
phi(mu, alpha) = sum_k mu_k G(alpha, y_k), y_k in the candidate set B. **Algorithm 1** (stochastic
mirror descent): i_t uniform, j_t ~ mu_t; mu <- mu exp(-eta |B| G(alpha, y_i) e_i / a), normalised
(entropic step); alpha <- clip(alpha + eta dG(alpha, y_j)/dalpha / b, 0, tau) (Euclidean step);
averaged iterates; stop when the duality gap is below ``gap_tol`` (iota) or after ``max_iter``
(T) steps. Step parameters of **Theorem 1**: a = |B| L1 / sqrt(log |B|), b = sqrt(2) L2 / (sqrt(n)
tau), eta = sqrt(2 / T), with L1, L2 the bounds on |G| and ||dG/dalpha|| over A and B computed from
lambda_max(K) (``_bounds``). Labels: sign(sum_k mu_k y_k) (ties +1; cluster 0 is +1), every y_k oriented to agree with
the first label of B (:func:`orient`).

Choices the paper leaves open (documented, tested):

- **L1 and L2** (``steps``). With ``steps="theorem"`` they are the provable bounds over A and B
  (``_bounds``). Those are loose by orders of magnitude: on two blobs (n = 60, lambda = 1) |G| at the
  end is 0.03-0.23 against L1 = 6370, so the entropic step moves log mu by about 1e-6 per step and
  mu stays uniform for all 2000 steps (the labels are then the plain vote of B; 0.75-0.78
  accuracy). ``steps="adaptive"`` (default) uses the largest |G(alpha_t, y_i)| and ||dG(alpha_t,
  y_j)/dalpha|| drawn so far instead (Theorem 1's formulas for a and b unchanged), the scale the
  theorem intends for a tight bound. The result is still certified by the duality gap below, which
  does not depend on the steps.

- **tau** (the paper: "sufficiently large"): the smallest box that provably holds the maximiser of
  G(., y) for every y: G <= -kappa ||alpha_1||^2 + (1 - theta) e'alpha_1 and G(0, y) = 0 give
  ||alpha_1|| <= (1 - theta) sqrt(n) / kappa, and likewise ||alpha_2|| <= (1 - theta) sqrt(n nu) /
  (2 kappa); tau is the larger (``tau=None``), so the box changes no maximiser.
- **Duality gap** at the averaged point (mu, alpha): max_A phi(mu, .) - min_M phi(., alpha). The
  second term is exact, min_k G(alpha, y_k). For the first, phi(mu, .) is m-strongly concave with
  m = 2 kappa min(1, 1/nu), so max_A phi(mu, .) <= phi(mu, alpha) + max_{alpha + delta in A}
  (g'delta - m/2 ||delta||^2), g = dphi/dalpha, separable in closed form (delta_i = clip(g_i / m)).
  The sum bounds the true gap from above, is zero exactly at a saddle point, and is far tighter than
  the linear bound of Eq. 9 (whose alpha part grows with tau: 2.5 against 0.1 on two blobs after
  2000 steps). ``gap_tol`` is relative to max(1, |phi|).
- **The candidate set B** (the paper leaves it open beyond -beta <= e'y <= beta), built by label
  generation as the minimax relaxation it cites does (Li et al. 2009): an initial pool of
  ``n_pool`` kernel k-means runs (two clusters, random starts) and the balanced thresholdings of the
  leading eigenvectors of the centred kernel, each made balanced by
  :func:`~mkclust.algorithms.itersvr.balanced_signs` (beta = ``balance``, default 0.03 n); then every
  ``generate_every`` steps the most violated labelling for the epoch's averaged alpha, argmin_y
  G(alpha, y) = argmax_y (y*d)'K(y*d), approximated by the balanced thresholding of the leading
  eigenvector of diag(d) K diag(d) followed by single-flip-pair improvements (``_most_violated``),
  joins B when it is more violated than every member by more than ``gap_tol``; it enters mu with
  mass 1/|B| and a new averaging epoch starts (the step parameters depend on |B|). Duplicates are
  never added; at most ``max_labels`` labels.

Diagnostics: ``gap_trace_`` ((step, gap) every ``check_every`` steps), ``n_labels_trace_``,
``labels_pool_`` (B as a (|B|, n) array of +-1), ``mu_``, ``alpha_``, ``n_iter_``, ``converged_``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from sklearn.utils import check_random_state

from mkclust.algorithms.base import BaseClusterer, leading_eigenvectors
from mkclust.algorithms.itersvr import balanced_signs
from mkclust.algorithms.kmeans import KernelKMeans, cluster_distances
from mkclust.kernels import center_kernel

log = logging.getLogger(__name__)

#: largest n for dense eigensolvers; Lanczos (eigsh) above, to this tolerance
DENSE_LIMIT = 400
EIGSH_TOL = 1e-8


def kkm_signs(K: np.ndarray, beta: float, rng) -> np.ndarray:
    """A balanced labelling from one kernel k-means run (two random centres): +1 nearer cluster 0,
    thresholded on the distance difference by :func:`~mkclust.algorithms.itersvr.balanced_signs`."""
    lab = KernelKMeans(n_clusters=2, init="random", n_init=1, random_state=rng).fit(K).labels_
    dist = cluster_distances(K, np.diag(K), lab, 2)
    return balanced_signs(dist[:, 1] - dist[:, 0], beta)


def odm_kappa(n: int, lambda_: float, theta: float) -> float:
    """kappa = n (1 - theta)^2 / (4 lambda) of Eq. 3."""
    return n * (1.0 - theta) ** 2 / (4.0 * lambda_)


def _label_products(K, alpha, Y, KS):
    """(Y as 2-D, alpha_1, alpha_2, S = y_k * (alpha_1 - alpha_2) rows, K s_k rows): one GEMM unless
    ``KS`` is given."""
    Y = np.atleast_2d(Y)
    n = K.shape[0]
    a1, a2 = alpha[:n], alpha[n:]
    S = Y * (a1 - a2)[None, :]
    return Y, a1, a2, S, (S @ K if KS is None else KS)


def dual_objective(K: np.ndarray, alpha: np.ndarray, Y: np.ndarray, lambda_: float, nu: float, theta: float,
                   KS: np.ndarray | None = None) -> np.ndarray:
    """G(alpha, y_k) of Eq. 3 for every row y_k of ``Y`` ((|B|, n) or (n,)); vectorised, one GEMM.
    ``KS`` may pass the precomputed (|B|, n) products (K s_k)'."""
    Y, a1, a2, S, KS = _label_products(K, alpha, Y, KS)
    kappa = odm_kappa(K.shape[0], lambda_, theta)
    base = -kappa * (a1 @ a1 + a2 @ a2 / nu) + (1 - theta) * a1.sum() - (1 + theta) * a2.sum()
    return -0.5 * np.einsum("kn,kn->k", S, KS) + base


def dual_gradient(K: np.ndarray, alpha: np.ndarray, Y: np.ndarray, weights: np.ndarray, lambda_: float,
                  nu: float, theta: float, KS: np.ndarray | None = None) -> np.ndarray:
    """d/dalpha of sum_k weights_k G(alpha, y_k) (Eq. 3), a (2n,) vector."""
    Y, a1, a2, _, KS = _label_products(K, alpha, Y, KS)
    kappa = odm_kappa(K.shape[0], lambda_, theta)
    w = np.asarray(weights, dtype=np.float64)
    yks = w @ (Y * KS)                              # sum_k w_k y_k * (K s_k)
    sw = w.sum()
    return np.concatenate([-yks + sw * (-2 * kappa * a1 + (1 - theta)),
                           yks + sw * (-2 * kappa * a2 / nu - (1 + theta))])


def orient(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """y or -y, whichever agrees with ``ref`` on more samples (y on a tie): one clustering has one
    orientation within a label set whose members are combined by a vote."""
    return -y if y @ ref < 0 else y


def _most_violated(K: np.ndarray, d: np.ndarray, beta: float, max_swaps: int = 200, n_candidates: int = 32,
                   v0: np.ndarray | None = None) -> np.ndarray:
    """A balanced y maximising y'My, M = diag(d) K diag(d) (= argmax_y (y*d)'K(y*d) = argmin_y G(alpha, y)).

    Start: the balanced thresholding of M's leading eigenvector (Lanczos on the implicit M, warm
    started from ``v0``; M is never formed). Then swaps of one +1 and one -1 label, which keep e'y,
    while the best swap increases y'My: the swap gain is delta_i + delta_j - 8 M_ij with delta_i =
    4 (M_ii - y_i (My)_i) the gain of flipping i alone. Each swap searches the ``n_candidates`` best
    single flips of either sign first, O(n); only when none of those pairs improves is every pair
    checked (one (n/2)^2 block), so the result is swap-optimal. My is updated in O(n) per swap.
    ``v0`` defaults to d."""
    n = d.size
    if not np.any(d):                                        # alpha = 0: every y has the same G
        d = np.ones(n)
    _, vec = leading_eigenvectors(lambda v: d * (K @ (d * v)), n, 1, dense=lambda: K * np.outer(d, d),
                                  dense_limit=DENSE_LIMIT, v0=d if v0 is None else v0, tol=EIGSH_TOL)
    y = balanced_signs(vec[:, 0], beta)
    g = d * (K @ (d * y))                                   # M y
    mdiag = d * d * np.diag(K)
    for _ in range(max_swaps):
        delta = 4 * (mdiag - y * g)
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        if pos.size == 0 or neg.size == 0:
            break
        tol = 1e-12 * max(1.0, abs(y @ g))
        found = None
        for full in (False, True):
            cp = pos if full else pos[np.argsort(-delta[pos], kind="stable")[:n_candidates]]
            cn = neg if full else neg[np.argsort(-delta[neg], kind="stable")[:n_candidates]]
            gain = delta[cp][:, None] + delta[cn][None, :] - 8 * np.outer(d[cp], d[cn]) * K[np.ix_(cp, cn)]
            a, b = np.unravel_index(np.argmax(gain), gain.shape)
            if gain[a, b] > tol:
                found = (cp[a], cn[b])
                break
            if cp.size == pos.size and cn.size == neg.size:
                break
        if found is None:
            break
        i, j = found
        y[i], y[j] = -1.0, 1.0
        g += 2 * d * (K[:, j] * d[j] - K[:, i] * d[i])       # M y after y_i: +1 -> -1, y_j: -1 -> +1
    return y


class ODMC(BaseClusterer):
    """Optimal margin distribution clustering (see the module docstring).

    Parameters
    ----------
    n_clusters : must be 2.
    lambda_, nu, theta : the ODM parameters of Eq. 1 (the paper's grids: lambda in {1, 10, 100, 1000},
        nu and theta in {0.2, 0.4, 0.6, 0.8}).
    balance : beta of B = {y : -beta <= e'y <= beta}; None means 0.03 n.
    tau : the box bound; None is the bound of the module docstring.
    max_iter : T of Algorithm 1 (eta = sqrt(2 / T)).
    gap_tol : iota, relative to max(1, |phi|).
    generate_every, check_every : steps between label generations and between duality-gap checks.
    n_pool : kernel k-means runs in the initial pool (plus the leading eigenvector thresholdings).
    max_labels : the largest |B|.
    steps : "adaptive" (default) or "theorem": the constants L1, L2 of Theorem 1's a and b (module
        docstring).
    center : fit on the centred kernel H K H (H = I - ee'/n), default True. Eq. 1 has no bias, so on
        an uncentred kernel the constant direction (the mean) weighs on every margin: on a linear
        kernel of data away from the origin no balanced labelling has a positive margin.
    random_state : the k-means starts and the sampling of Algorithm 1.

    Attributes
    ----------
    labels_, decision_ (sum_k mu_k y_k), mu_, alpha_ (averaged), labels_pool_, objective_ (phi at the
    averaged point), duality_gap_, gap_trace_, n_labels_trace_, n_iter_, converged_, tau_, step_
    (a, b, eta of the last epoch).
    """

    two_class_only = True

    def __init__(self, n_clusters=2, lambda_=1.0, nu=0.8, theta=0.2, balance=None, tau=None, max_iter=2000,
                 gap_tol=1e-3, generate_every=100, check_every=50, n_pool=5, max_labels=50, center=True,
                 steps="adaptive", random_state=None):
        self.n_clusters = n_clusters
        self.lambda_ = lambda_
        self.nu = nu
        self.theta = theta
        self.balance = balance
        self.tau = tau
        self.max_iter = max_iter
        self.gap_tol = gap_tol
        self.generate_every = generate_every
        self.check_every = check_every
        self.n_pool = n_pool
        self.max_labels = max_labels
        self.center = center
        self.steps = steps
        self.random_state = random_state

    # ------------------------------------------------------------------------------ pieces
    def _check_params(self):
        if not float(self.lambda_) > 0 or not float(self.nu) > 0:
            raise ValueError(f"lambda_ and nu must be positive, got {self.lambda_}, {self.nu}")
        if not 0 <= float(self.theta) < 1:
            raise ValueError(f"theta must be in [0, 1), got {self.theta}")
        for name in ("max_iter", "generate_every", "check_every", "max_labels"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    def default_tau(self, n: int) -> float:
        kappa = odm_kappa(n, self.lambda_, self.theta)
        one = 1.0 - float(self.theta)
        return max(one * np.sqrt(n) / kappa, one * np.sqrt(n * float(self.nu)) / (2 * kappa))

    def _bounds(self, lam_max: float, n: int, tau: float) -> tuple[float, float]:
        """L1 >= |G| and L2 >= ||dG/dalpha|| over the box and every y (Theorem 1's constants):
        ||s|| <= sqrt(n) tau, ||K s|| <= lambda_max sqrt(n) tau."""
        kappa = odm_kappa(n, self.lambda_, self.theta)
        th, nu = float(self.theta), float(self.nu)
        rn = np.sqrt(n)
        L1 = 0.5 * lam_max * n * tau**2 + kappa * n * tau**2 * (1 + 1 / nu) + (1 + th) * n * tau
        L2 = np.sqrt(2) * lam_max * rn * tau + 2 * kappa * max(1.0, 1 / nu) * rn * tau + (1 + th) * rn * np.sqrt(2)
        return L1, L2

    def _initial_pool(self, K: np.ndarray, beta: float, rng) -> list[np.ndarray]:
        n = K.shape[0]
        pool = [kkm_signs(K, beta, rng) for _ in range(int(self.n_pool))]

        def centred(v):                                      # H K H v without forming H K H
            u = K @ (v - v.mean())
            return u - u.mean()

        _, vecs = leading_eigenvectors(centred, n, min(3, n - 1), dense=lambda: center_kernel(K),
                                       dense_limit=DENSE_LIMIT, v0=rng.uniform(-1, 1, n), tol=EIGSH_TOL)
        for v in vecs.T:
            pool.append(balanced_signs(v, beta))
        return pool

    def _gap(self, K, mu, alpha, Y, tau):
        """(phi(mu, alpha), min_k G_k, the duality-gap bound of the module docstring, G) at (mu, alpha)."""
        n = K.shape[0]
        KS = _label_products(K, alpha, Y, None)[4]
        G = dual_objective(K, alpha, Y, self.lambda_, self.nu, self.theta, KS=KS)
        grad = dual_gradient(K, alpha, Y, mu, self.lambda_, self.nu, self.theta, KS=KS)
        phi = float(mu @ G)
        # phi(mu, .) is m-strongly concave, m = 2 kappa min(1, 1/nu), so max_A phi(mu, .) - phi(mu, alpha)
        # <= max over the box of g'delta - m/2 ||delta||^2, separable: delta_i = clip(g_i / m, box)
        m = 2 * odm_kappa(n, self.lambda_, self.theta) * min(1.0, 1.0 / float(self.nu))
        delta = np.clip(grad / m, -alpha, tau - alpha)
        gap = phi - float(G.min()) + float(grad @ delta - 0.5 * m * delta @ delta)
        return phi, float(G.min()), max(gap, 0.0), G

    # ---------------------------------------------------------------------------------- fit
    def fit(self, K, y=None):
        K = self._validate_kernel(K)
        if self.center:
            K = center_kernel(K)
        self._check_params()
        if self.steps not in ("adaptive", "theorem"):
            raise ValueError(f"steps must be 'adaptive' or 'theorem', got {self.steps!r}")
        n = K.shape[0]
        beta = 0.03 * n if self.balance is None else float(self.balance)
        if beta < 0:
            raise ValueError(f"balance must be >= 0, got {self.balance}")
        rng = check_random_state(self.random_state)
        tau = self.default_tau(n) if self.tau is None else float(self.tau)
        if not tau > 0:
            raise ValueError(f"tau must be positive, got {self.tau}")
        adaptive = self.steps == "adaptive"
        if adaptive:  # the largest |G| and ||dG/dalpha|| drawn so far stand in for L1 and L2 (set at step 1)
            L1, L2, b = 0.0, 0.0, np.inf
        else:
            lam_max = leading_eigenvectors(lambda v: K @ v, n, 1, dense=lambda: K, dense_limit=DENSE_LIMIT,
                                           v0=np.ones(n), tol=EIGSH_TOL)[0][0]
            L1, L2 = self._bounds(max(float(lam_max), 0.0), n, tau)
            b = np.sqrt(2) * L2 / (np.sqrt(n) * tau)
        T = int(self.max_iter)
        eta = np.sqrt(2.0 / T)

        # y and -y are one clustering with one G: keep each once, oriented to agree with the first
        # label (the labels come from the vote sign(sum_k mu_k y_k), so B must share one orientation)
        pool, ref = {}, None
        for yk in self._initial_pool(K, beta, rng):
            ref = yk if ref is None else ref
            yk = orient(yk, ref)
            pool.setdefault(yk.tobytes(), yk)
        Y = np.array(list(pool.values()))

        def mu_scale(nb: int) -> float:
            """Theorem 1's a = |B| L1 / sqrt(log |B|); with one label mu is fixed (no entropic step)."""
            return nb * L1 / np.sqrt(np.log(nb)) if nb > 1 and L1 > 0 else np.inf

        a = mu_scale(len(Y))
        mu = np.full(len(Y), 1.0 / len(Y))
        alpha = np.zeros(2 * n)
        sum_mu, sum_alpha, count = np.zeros_like(mu), np.zeros(2 * n), 0
        self.gap_trace_, self.n_labels_trace_ = [], []
        lam, nu, th = float(self.lambda_), float(self.nu), float(self.theta)
        gap, phi, converged, t = np.inf, np.nan, False, 0
        t0 = time.perf_counter()
        for t in range(1, T + 1):
            nb = len(Y)
            i, j = int(rng.randint(nb)), int(rng.choice(nb, p=mu))
            pair = Y[[i, j]]
            KS = _label_products(K, alpha, pair, None)[4]          # K s_i and K s_j: one GEMM
            Gi = dual_objective(K, alpha, pair[:1], lam, nu, th, KS=KS[:1])[0]
            grad = dual_gradient(K, alpha, pair[1:], np.ones(1), lam, nu, th, KS=KS[1:])
            if adaptive:
                if abs(Gi) > L1:
                    L1 = abs(Gi)
                    a = mu_scale(nb)
                gnorm = float(np.linalg.norm(grad))
                if gnorm > L2:
                    L2 = gnorm
                    b = np.sqrt(2) * L2 / (np.sqrt(n) * tau)
            if np.isfinite(a):
                logu = np.log(mu)
                logu[i] -= eta * nb * Gi / a
                logu -= logu.max()
                mu = np.exp(logu)
                mu /= mu.sum()
            alpha = np.clip(alpha + eta * grad / b, 0.0, tau)
            sum_mu += mu
            sum_alpha += alpha
            count += 1
            if t % int(self.check_every) == 0 or t % int(self.generate_every) == 0 or t == T:
                mu_bar, alpha_bar = sum_mu / count, sum_alpha / count
                phi, gmin, gap, G = self._gap(K, mu_bar, alpha_bar, Y, tau)
                self.gap_trace_.append((t, gap))
                self.n_labels_trace_.append((t, len(Y)))
                if t % int(self.generate_every) == 0 and len(Y) < int(self.max_labels):
                    d = alpha_bar[:n] - alpha_bar[n:]
                    ynew = _most_violated(K, d, beta)
                    ynew = orient(ynew, Y[0])
                    gnew = float(dual_objective(K, alpha_bar, ynew, lam, nu, th)[0])
                    known = bool((Y == ynew[None, :]).all(axis=1).any())
                    if not known and gnew < gmin - float(self.gap_tol) * max(1.0, abs(phi)):
                        log.info("ODMC step %d: label %d joins B (G %.6g < min %.6g)", t, len(Y) + 1, gnew, gmin)
                        Y = np.vstack([Y, ynew])
                        a = mu_scale(len(Y))
                        mu = np.append(mu * len(Y[:-1]) / len(Y), 1.0 / len(Y))
                        sum_mu, sum_alpha, count = np.zeros_like(mu), np.zeros(2 * n), 0
                        gap = np.inf
                        continue
                log.debug("ODMC step %d: |B| = %d, phi %.6g, gap %.4g", t, len(Y), phi, gap)
                if gap <= float(self.gap_tol) * max(1.0, abs(phi)):
                    converged = True
                    break
        # the loop ends on a check (converged, or t = T) whose averages and gap stand; only a label
        # that joined at the last step leaves an empty average: take the current point
        if count == 0:
            mu_bar, alpha_bar = mu.copy(), alpha.copy()
            phi, _, gap, _ = self._gap(K, mu_bar, alpha_bar, Y, tau)
        self.mu_, self.alpha_, self.labels_pool_ = mu_bar, alpha_bar, Y.astype(np.int8)
        self.decision_ = mu_bar @ Y
        self.labels_ = (self.decision_ < 0).astype(np.int64)
        self.objective_, self.duality_gap_ = phi, gap
        self.n_iter_, self.converged_, self.tau_ = t, converged, tau
        self.step_ = {"a": float(a), "b": float(b), "eta": float(eta)}
        self.seconds_per_iteration_ = (time.perf_counter() - t0) / max(t, 1)
        if not converged:
            log.warning("ODMC stopped after max_iter=%d steps with duality gap %.4g (|B| = %d)", T, gap, len(Y))
        return self
