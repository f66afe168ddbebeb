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
  :func:`~mkclust.algorithms._labels.balanced_signs` (beta = ``balance``, default 0.03 n); then every
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

from numbers import Real

import numpy as np

from mkclust.algorithms._labels import DENSE_LIMIT, EIGSH_TOL, LANCZOS_BLOCK, LANCZOS_STEPS, balanced_signs, kkm_signs
from mkclust.algorithms._odm import odm_kappa
from mkclust.algorithms._odmc_solver import _Lockstep
from mkclust.algorithms.base import (
    BaseClusterer, batch_groups, COMMON_CONSTRAINTS, Cost, Interval, leading_eigenvectors, NONNEG,
    POSITIVE, POSITIVE_INT, StrOptions,
)
from mkclust.kernels import center_kernel


class ODMC(BaseClusterer):
    """Optimal margin distribution clustering (see the module docstring).

    Parameters
    ----------
    n_clusters : int, default=2
        Must be 2.
    lam : float, default=1.0
        lambda of Eq. 1 (``lam``: a trailing underscore would mark a fitted attribute in
        scikit-learn; the paper's grid: {1, 10, 100, 1000}).
    nu : float, default=0.8
        nu of Eq. 1 (the paper's grid: {0.2, 0.4, 0.6, 0.8}).
    theta : float, default=0.2
        theta of Eq. 1 (the paper's grid: {0.2, 0.4, 0.6, 0.8}).
    balance : float or None, default=None
        beta of B = {y : -beta <= e'y <= beta}; None means 0.03 n.
    tau : float or None, default=None
        The box bound; None is the bound of the module docstring.
    max_iter : int, default=2000
        T of Algorithm 1 (eta = sqrt(2 / T)).
    gap_tol : float, default=0.001
        iota, relative to max(1, |phi|).
    generate_every : int, default=100
        Steps between label generations.
    check_every : int, default=50
        Steps between duality-gap checks.
    n_pool : int, default=5
        Kernel k-means runs in the initial pool (plus the leading eigenvector thresholdings).
    max_labels : int, default=50
        The largest |B|.
    center : bool, default=True
        Fit on the centred kernel H K H (H = I - ee'/n). Eq. 1 has no bias, so on an uncentred
        kernel the constant direction (the mean) weighs on every margin: on a linear kernel of data
        away from the origin no balanced labelling has a positive margin.
    steps : {"adaptive", "theorem"}, default="adaptive"
        The constants L1, L2 of Theorem 1's a and b (module docstring).
    products : {"float64", "float32"}, default="float64"
        Precision of the mirror-descent steps' kernel products (float32: K copied once, the products
        rounded; the label generation stays in float64).
    low_rank : {"auto", "never"}, default="auto"
        "auto": a kernel of rank at most n / 8 (a linear kernel of few features) multiplies through
        its factor; "never": always through K.
    random_state : int, RandomState instance or None, default=None
        Seed of the k-means starts and the sampling of Algorithm 1.

    Attributes
    ----------
    labels_, decision_ (sum_k mu_k y_k), mu_, alpha_ (averaged), labels_pool_, objective_ (phi at the
    averaged point), duality_gap_, gap_trace_, n_labels_trace_, n_iter_, converged_, tau_, step_
    (a, b, eta of the last epoch).
    """

    #: the batch: per batched run its label set (int8), alpha and running sums, the step's temporaries
    #: and its fitted attributes (400 bytes per sample); K's transpose for the label generation (one n x n);
    #: once, the lockstep Lanczos bases of one block of chains. A batched run costs 0.144 of a fit alone
    #: (0.3 s at n = 1000: the paper's 64 settings of a seed on german, 2026-11-25, one thread, the mean
    #: over odmc6's six kernels: 0.17 s on the linear kernel, 0.34-0.40 s on the Gaussians); alone, 1.2 s
    #: at n = 1000 (bench_odmc.py)
    cost = Cost(work_n2=6, seconds_at_1000=2, exponent=1.7, typical_at_1000=2.08, batch_time=0.144,
                batch_bytes_per_n=400, batch_n2=1, batch_fixed_bytes_per_n=LANCZOS_BLOCK * LANCZOS_STEPS * 8)
    _parameter_constraints = {
        **COMMON_CONSTRAINTS, "lam": [POSITIVE], "nu": [POSITIVE],
        "theta": [Interval(Real, 0, 1, closed="left")], "balance": [NONNEG, None], "tau": [POSITIVE, None],
        "max_iter": [POSITIVE_INT], "generate_every": [POSITIVE_INT], "check_every": [POSITIVE_INT],
        "max_labels": [POSITIVE_INT], "n_pool": [POSITIVE_INT], "gap_tol": [NONNEG],
        "steps": [StrOptions({"adaptive", "theorem"})], "center": ["boolean"],
        "products": [StrOptions({"float64", "float32"})], "low_rank": [StrOptions({"auto", "never"})],
    }

    two_class_only = True
    budget = "max_iter"

    def __init__(self, n_clusters=2, lam=1.0, nu=0.8, theta=0.2, balance=None, tau=None, max_iter=2000,
                 gap_tol=1e-3, generate_every=100, check_every=50, n_pool=5, max_labels=50, center=True,
                 steps="adaptive", products="float64", low_rank="auto", random_state=None):
        self.n_clusters = n_clusters
        self.lam = lam
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
        self.products = products
        self.low_rank = low_rank
        self.random_state = random_state

    # ------------------------------------------------------------------------------ pieces
    def default_tau(self, n: int) -> float:
        kappa = odm_kappa(n, self.lam, self.theta)
        one = 1.0 - float(self.theta)
        return max(one * np.sqrt(n) / kappa, one * np.sqrt(n * float(self.nu)) / (2 * kappa))

    def _bounds(self, lam_max: float, n: int, tau: float) -> tuple[float, float]:
        """L1 >= |G| and L2 >= ||dG/dalpha|| over the box and every y (Theorem 1's constants):
        ||s|| <= sqrt(n) tau, ||K s|| <= lambda_max sqrt(n) tau."""
        kappa = odm_kappa(n, self.lam, self.theta)
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

    # ---------------------------------------------------------------------------------- fit
    def fit(self, K, y=None):
        return self.fit_batch([self], K)[0]

    #: parameters that set the schedule of Algorithm 1; fits that share them run in one lockstep batch
    LOCKSTEP = ("max_iter", "generate_every", "check_every", "steps", "center", "products", "low_rank")
    #: the runner fits a batch's first run alone: its seconds_per_iteration_ (Figure 2) is one fit's
    batch_alone_first = True

    @classmethod
    def load_compiled(cls) -> None:
        """The label generation's swap search (numba)."""
        from mkclust.algorithms import _swap
        _swap.load()

    @classmethod
    def fit_batch(cls, estimators, K) -> list:
        """Fit several ODMC estimators on one kernel K; returns them, fitted.

        Each is fitted exactly as by its own ``fit``: its own random stream, label set, step
        parameters, checks and stop (every chain's draws, steps and decisions are its own; only the
        products K s of all chains at a step are one GEMM, so K is read once per step for the whole
        batch instead of once per fit: the paper's grid of 64 settings x 10 repeats per kernel costs
        about the memory traffic of one fit). Results equal separate fits up to the rounding of
        that GEMM. Estimators that differ in a ``LOCKSTEP`` parameter run in separate batches.

        ``seconds_per_iteration_`` (the ODMC paper's Figure 2) is the wall time per step of a fit
        alone; in a batch of more than one it is None and ``batch_seconds_per_iteration_`` holds the
        batch's wall time divided by the steps of all its fits (an amortised cost).
        """
        estimators, groups = batch_groups(cls, estimators, cls.LOCKSTEP)
        K = estimators[0]._validate_kernel(K)
        for e in estimators:
            e._check_n_clusters(K.shape[0])
        centred = None
        for ests in groups:
            if ests[0].center:
                centred = center_kernel(K) if centred is None else centred
            _Lockstep(ests, centred if ests[0].center else K).run()
        return estimators
