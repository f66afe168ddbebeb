"""Multiple kernel (maximum margin) clustering, MKC (Zhao, Kwok, Zhang, SDM 2009).

Explicit feature maps Phi_k (n, D_k) are the paper's kernel PCA (Sect. 2.1): from a Gram bank they
are :func:`mkclust.kernels.feature_map` of each centred kernel H K_k H (H = I - ee'/n), the
top-``rank`` eigenpairs Phi_k = U_k Lambda_k^(1/2) (default rank 50, the paper gives none;
``rank=None`` keeps every eigenpair above rounding noise); a list of feature matrices (a ``features``
bank) is centred and used as given, except that one with more than ``rank`` columns (Nystroem
features) is reduced to the top-``rank`` principal directions of its centred columns (the kernel PCA
of F F'). Unseen points are mapped by the same projection of the centred cross-kernel,
Phi_k(x) = (k(x, X) - mean_i k(x_i, X)) U_k Lambda_k^(-1/2). ``center=False`` takes the eigenpairs of
the uncentred kernel and leaves the features uncentred. Before 2026-11-27 the eigenpairs were those
of the uncentred kernel and only the rank-50 features were centred afterwards, which is not kernel
PCA (letterAvB's polynomial kernel: accuracy .507 against .893 centred first; docs/papers.md, MKC).

**Two clusters** (``n_clusters=2``): problem (2.7) by the cutting plane Algorithm 1. Each round solves
(2.7) over the working set Omega by CCCP (Algorithm 2): every CCCP step is the SOCP (2.14)

    min 1/2 sum_k t_k + C xi
    s.t. for c in Omega: (1/n) sum_i c_i <= xi + (1/n) sum_i c_i z_i (sum_k v_k' Phi_k(x_i) + b),
         ||[2 v_k; t_k - beta_k]|| <= t_k + beta_k,  beta >= 0,  ||beta||_2 <= 1,  xi >= 0,
         -l <= sum_i (sum_k v_k' Phi_k(x_i) + b) <= l,

with z_i = sgn f_i at the previous CCCP point; CCCP stops when the objective changes by less than
``cccp_tol`` (the paper's alpha = 0.01 %). The most violated constraint is (2.16), c_i = [|f_i| < 1];
the rounds stop when it is violated by no more than ``epsilon``: (1/n) sum c_i (1 - |f_i|) <= xi + eps.
Labels: sgn f (ties +1). Kernel weights: beta (the combined kernel is sum_k beta_k K_k).

**m > 2 clusters**: problem (4.34) by Algorithms 3 and 4, with scores f_ip = sum_k v_k^p' Phi_k(x_i),
the SOCP form of (4.35) (one cone per kernel over the stacked v_k^1..v_k^m), the most violated
constraint of Theorem 4.3 (c_i = e_{r*} when f_{ip*} - f_{ir*} < 1, r* the runner-up), balance
max_p u_p - min_p u_p <= l with u_p = sum_i f_ip, and labels argmax_p f_ip.

Multi-class CCCP (Algorithm 4) linearises at the labels z = argmax of the previous step; the term
sum_p c_ip z_ip of (4.34) (a runner-up r_i equal to the label counts as margin 1) is not a
conservative linearisation, so a step whose labels differ from z can satisfy Omega's constraints
only at z. CCCP therefore stops at a **fixed point** (the new scores' labels equal z), or when labels
cycle while the objective changed by at most ``cccp_tol`` for 3 steps; and the xi of a round is that
of (4.34) at the final V: the larger of the SOCP's xi and the largest slack of Omega's constraints
at V's own labels (:func:`~mkclust.algorithms._mkc_socp.multiclass_slacks`), so the stopping test
"the new constraint is violated by no more than epsilon" compares like with like. Stopping on the
objective alone (as in the two-class case) measured a stall on letterABCD (C = 3): the same
constraint came back every round with violation - xi = 0.016 > epsilon, 60 rounds to max_rounds,
acc 0.652; with this rule: 18
rounds, 12 s, acc 0.687.

**The multi-class balance** of (4.31)/(4.34), -l <= sum_i (f_ip - f_iq) <= l, bounds the summed
scores u_p, not the label counts. With centred features (kernel PCA, ``center=True``) sum_i
Phi(x_i) = 0, so u_p = 0 for every V: the constraint binds nothing (and a per-class bias b_p under
the same constraint would only be bounded to |b_p - b_q| <= l / n). Measured with the score balance
alone: digits0689 (z-scored, seed 2) ended with an empty cluster at 0.752, and letterABCD with 6 of
10 runs empty or near-empty, where the degenerate labelling had the lowest objective. The two-class
relaxation (2.7) stands in for the count balance -l <= sum_i y_i <= l of problem (2.2); for m > 2
we restore that count form: with ``balance_on="labels"`` (default) every labelling MKC uses (the k-means
start, each CCCP linearisation point z and the final labels) is the best one, sum_i f_{i y_i}
maximal, among those whose cluster sizes lie in [n/m - l/2, n/m + l/2] (:func:`count_bounds`; the
box implies |n_p - n_q| <= l, the pairwise count form of (4.31)'s constraint, and for m = 2 it is
(2.2) itself); :func:`balanced_labels` solves that transportation problem exactly. The labels of
Theorem 4.3's most violated constraint are those labels, its runner-up the best other class.
``balance_on="scores"`` is the paper-literal (4.34) (labels argmax f). ``predict`` on unseen points
is argmax f (the balance is a constraint of the training labelling).

Diagnostics: ``objective_at(labels)`` is the objective of problem (2.6) / (4.30) with the labels
held fixed (:func:`fixed_label_objective`): the experiment runner records it at MKC's labels and at
the true labels, to tell a gap of the optimiser (the true labels score lower) from one of the model
(they score higher). ``feature_seconds_`` is the CPU time of the kernel PCA inside ``fit`` (Gram
input), ``solve_seconds_`` the rest: the paper's CPU time (its footnote 5) is their sum.

Choices the paper leaves open (documented, tested):

- **Initial CCCP linearisation** (the z of the first round): k-means (scikit-learn, 10 starts) on the
  concatenated features [Phi_1, ..., Phi_M], i.e. kernel k-means on the uniform kernel sum_k K_k.
- **C and l**: ``C`` (default 30 for two clusters, calibrated on the embedded sets with the ``mkc3`` bank, whose
  centred kernels have trace n so the centred features have unit mean squared norm: with C <= 1 the
  trivial v = 0 wins (acc 0.50); C = 3 and 10 leave ringnorm at 0.76 with most weight on the linear
  kernel, C = 30 reaches 0.953 with beta_3 = 0.95 (digit sets: 1.0, 1.0, 0.947, 0.904); C = 100 needs 50+
  rounds there; for m > 2 the default is 10, measured with rank 50 and seeds 0/1: digits0689
  0.943/0.944 (C = 3: 0.937/0.936, C = 30: 0.952/0.950), digits1279 0.904/0.903 (C = 3: 0.695
  with an empty cluster/0.901, C = 30: 0.904/0.904 in 33 and 23 rounds), letterABCD (paper
  configuration) 0.482/0.587 with an empty cluster in 48/57 rounds (C = 3: 0.687 in 18 rounds,
  C = 30: 0.586 at max_rounds = 100 with xi = 0 throughout); the multi-class problem is sensitive to C
  and to the start; these were measured on raw features with the score balance) and ``balance``
  l (default 0.03 n, the setting of Zhang, Tsang and Kwok 2007 that the ODMC paper also uses).
- **Solver**: cvxpy with Clarabel; on a solver failure ECOS is tried once, then a
  :class:`~mkclust.algorithms._mkc_socp.MKCSolverError` names the round and the status. The SOCP is
  built with cvxpy Parameters for a capacity of constraints that doubles when the working set
  outgrows it (:func:`~mkclust.algorithms._mkc_socp.capacity`; the unused rows are zeros, 0 <= xi), so
  it is built a few times a fit; CCCP steps and new rounds only set parameter values. It is compiled
  once per capacity (cvxpy's DPP) where that tensor stays small, else canonicalised at the values at
  each solve (:func:`~mkclust.algorithms._mkc_socp.compiles_once`: the tensor took 4 GB at 100 rows
  of the benchmark's 12 kernels).

Diagnostics per round (``rounds_``): |Omega|, CCCP iterations, solver seconds, objective, xi, the
new constraint's violation.
"""

from __future__ import annotations

import logging
import time
from numbers import Integral

import numpy as np
from sklearn.cluster import KMeans
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted

from mkclust._validation import check_features, check_kernels
from mkclust.algorithms._mkc_rounds import fit_binary, fit_multiclass
from mkclust.algorithms._mkc_socp import balanced_labels, count_bounds, fixed_label_objective
from mkclust.algorithms.base import (
    BaseClusterer, COMMON_CONSTRAINTS, Cost, Interval, NONNEG, POSITIVE, POSITIVE_INT, Progress, StrOptions,
)
from mkclust.kernels import center_kernel, feature_map, principal_directions


log = logging.getLogger(__name__)
_ROUNDS = Progress(log)


def _one_input(X):
    """A scipy sparse matrix densified; a list of rows (numbers, not matrices) as one 2-d array, so
    that a list is a list of feature maps only when its items are matrices."""
    if hasattr(X, "toarray"):
        return X.toarray()
    if isinstance(X, (list, tuple)) and X and all(np.ndim(x) <= 1 and not hasattr(x, "toarray") for x in X):
        return np.asarray(X)
    return X


class MKC(BaseClusterer):
    """Multiple kernel clustering (see the module docstring).

    Parameters
    ----------
    n_clusters : int, default=2
        2: Algorithms 1-2; more: Algorithms 3-4.
    C : float or None, default=None
        The loss weight of (2.7) / (4.34); None means 30 for two clusters and 10 for more.
    epsilon : float, default=0.01
        The cutting-plane tolerance.
    balance : float or None, default=None
        The class-balance bound l; None means 0.03 n.
    balance_on : {"labels", "scores"}, default="labels"
        For m > 2 clusters: "labels" (cluster sizes in [n/m - l/2, n/m + l/2], the count form of
        (2.2)) or "scores" (the paper's (4.34) on summed scores, vacuous with centred features); see
        the module docstring.
    rank : int or None, default=50
        Feature-map rank per kernel: the top-``rank`` eigenpairs of each Gram matrix, or the
        top-``rank`` principal directions of a feature matrix with more columns (Nystroem
        features); None keeps them all.
    center : bool, default=True
        Kernel PCA's centring: each kernel centred before its eigendecomposition (feature maps: their
        columns centred before their principal directions), the training means kept for new points.
    cccp_tol : float, default=0.0001
        Relative objective change that stops CCCP (the paper's 0.01 %).
    max_rounds : int, default=100
        Safety limit on cutting-plane rounds (a warning is logged when hit).
    max_cccp : int, default=50
        Safety limit on CCCP iterations per round (a warning is logged when hit).
    random_state : int, RandomState instance or None, default=None
        Seeds the k-means initialisation.

    Attributes
    ----------
    labels_, kernel_weights_ (beta), decision_ (f, (n,) or (n, m)), objective_ (of the last SOCP),
    xi_, n_iter_ (cutting-plane rounds), rounds_ (per-round diagnostics), n_constraints_, working_set_
    (Omega: (|Omega|, n), the c_i of (2.16) as booleans, or for m > 2 the runner-up class r* of each
    active sample of Theorem 4.3 and -1 for an inactive one),
    cccp_iterations_ (per round), solver_seconds_, avg_cccp_iterations_, feature_mean_ (what is
    subtracted from a new point's stacked features: the centred cross-kernel's offset, zero without
    ``center``), seconds_per_iteration_ (wall time per
    cutting-plane round), cluster_sizes_, feature_seconds_ (CPU seconds of the kernel PCA),
    solve_seconds_ (CPU seconds of the rest of ``fit``).
    """

    cost = Cost(work_n2=4, seconds_at_1000=10, exponent=2, typical_at_1000=1.28)

    #: on Nystroem features (no kernel PCA; a cut and a labelling are O(n) a step) the time grows as n,
    #: not n^2: seconds = typical_at_1000 * FEATURES_AT_1000 * (n / 1000) * (m / 2)^2, calibrated on
    #: MKC on mnist01234 (n = 30596, 5 classes, Nystroem features; 450.5 s of CPU, one thread, 2026-11-25)
    FEATURES_AT_1000 = 1.84

    @classmethod
    def fit_seconds(cls, n: int, params: dict, typical: bool = False, input_rank: int | None = None) -> float:
        """The n^2 model times (m / 2)^2 for m = ``n_clusters`` > 2: the multi-class SOCP (4.34) has m
        times the variables of (2.7) and each round's cut m times the work (measured, one thread,
        2026-11-25: satellite, two clusters, n = 2236, 2.9 s; letterABCD, four, n = 3096, 40.6 s, 7.0
        times as much per n^2). Where the estimate does not know m it counts two clusters. On an
        input of Nystroem features (``input_rank`` < n) linear in n (``FEATURES_AT_1000``)."""
        m = int(params.get("n_clusters") or 2)
        if input_rank is not None and input_rank < n:
            seconds = super().fit_seconds(1000, params, typical) * cls.FEATURES_AT_1000 * n / 1000
        else:
            seconds = super().fit_seconds(n, params, typical)
        return seconds * (max(m, 2) / 2) ** 2

    _parameter_constraints = {
        **COMMON_CONSTRAINTS, "n_clusters": [Interval(Integral, 2, None, closed="left")],
        "C": [POSITIVE, None], "epsilon": [POSITIVE], "rank": [POSITIVE_INT, None],
        "balance": [NONNEG, None], "balance_on": [StrOptions({"labels", "scores"})], "max_rounds": [POSITIVE_INT],
        "max_cccp": [POSITIVE_INT], "cccp_tol": [NONNEG], "center": ["boolean"],
    }

    input_kind = "feature_maps"

    def __init__(self, n_clusters=2, C=None, epsilon=0.01, balance=None, balance_on="labels", rank=50, center=True,
                 cccp_tol=1e-4, max_rounds=100, max_cccp=50, random_state=None):
        self.n_clusters = n_clusters
        self.C = C
        self.epsilon = epsilon
        self.balance = balance
        self.balance_on = balance_on
        self.rank = rank
        self.center = center
        self.cccp_tol = cccp_tol
        self.max_rounds = max_rounds
        self.max_cccp = max_cccp
        self.random_state = random_state

    # ---------------------------------------------------------------------------- features
    def _features(self, X):
        """Phi list from a Gram bank (m, n, n) or one Gram matrix (n, n), or from a list of feature
        matrices or one feature matrix (n, d), d != n (a Nystroem map in a Pipeline, say; a square
        2-d array is read as a Gram matrix: pass [F] for n x n features)."""
        X = _one_input(X)
        if not isinstance(X, (list, tuple)) and np.ndim(X) == 2 and np.shape(X)[0] != np.shape(X)[1]:
            X = [X]
        if isinstance(X, (list, tuple)):
            if not X:
                raise ValueError("feature maps must be a non-empty list of (n, D_k) arrays with the same n")
            feats = [check_features(F, name=f"feature map {k}") for k, F in enumerate(X)]
            if any(F.shape[0] != feats[0].shape[0] for F in feats):
                raise ValueError("feature maps must be a non-empty list of (n, D_k) arrays with the same n")
            self.n_features_in_ = int(sum(F.shape[1] for F in feats))
            self._proj, self._offsets = None, None
            # wider than rank (e.g. Nystroem features): the top-rank principal directions of F, centred
            # with ``center`` (kernel PCA of the linear kernel F F'); new points are projected alike
            self._means = [F.mean(axis=0) if self.center else np.zeros(F.shape[1]) for F in feats]
            self._bases = [None if self.rank is None or F.shape[1] <= int(self.rank)
                           else principal_directions(F - m, rank=self.rank)[0] for F, m in zip(feats, self._means)]
            feats = self._reduce(feats)
        else:
            K = check_kernels(X, allow_multiple=True, psd=self.requires_psd)
            self.n_features_in_ = int(K.shape[2])
            self._proj, self._offsets = [], []
            feats = []
            for Kk in K:
                # kernel PCA: the eigenpairs of the centred kernel H K H (with ``center``)
                F, info = feature_map(center_kernel(Kk) if self.center else Kk, rank=self.rank, return_info=True)
                feats.append(F)
                # unseen x: Phi(x) = (k(x, X) - mean_i k(x_i, X)) U lam^-1/2, and U lam^-1/2 = F / lam (U is
                # orthogonal to e, so the other terms of the centred cross-kernel vanish)
                P = F / np.asarray(info["eigenvalues"])[None, :]
                self._proj.append(P)
                self._offsets.append(Kk.mean(axis=0) @ P if self.center else np.zeros(P.shape[1]))
        return feats

    def _reduce(self, feats):
        """Each feature matrix projected on its fitted principal directions (where it had more
        than ``rank`` columns; centred first with ``center``), as given otherwise."""
        return [F if V is None else (F - m) @ V for F, V, m in zip(feats, self._bases, self._means)]

    # ------------------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        self._check_params()
        cpu0 = time.process_time()
        feats = self._features(X)
        # the kernel PCA (feature maps of a Gram bank); zero for feature maps given as such
        self.feature_seconds_ = time.process_time() - cpu0
        n = feats[0].shape[0]
        if not 2 <= int(self.n_clusters) <= n:
            raise ValueError(f"n_clusters must be in [2, {n}], got {self.n_clusters}")
        Phi = np.hstack(feats)
        scale = float(np.abs(Phi).max()) if Phi.size else 0.0
        # kernel PCA centring (a Gram bank's features are centred already, up to rounding); what
        # decision_function subtracts from a new point's features is kept
        shift = Phi.mean(axis=0) if self.center else np.zeros(Phi.shape[1])
        Phi -= shift
        self.feature_mean_ = shift if self._offsets is None else np.hstack(self._offsets) + shift
        if not Phi.size or not float(np.abs(Phi).max()) > 1e-10 * scale:
            # a zero kernel (no eigenvalue above rounding) or a constant one (nothing left after the
            # centring): every labelling scores the same, and the SOCP's only solution is v = 0
            raise ValueError("MKC: the kernel(s) hold nothing that separates the samples: a zero kernel, or one "
                             "constant up to rounding after centring (largest centred feature "
                             f"{float(np.abs(Phi).max()) if Phi.size else 0.0:.3g} of {scale:.3g}); "
                             "give kernels that vary between samples")
        sizes = [F.shape[1] for F in feats]
        l = 0.03 * n if self.balance is None else float(self.balance)
        self._Phi, self._l = Phi, l  # for objective_at
        rng = check_random_state(self.random_state)
        km = KMeans(n_clusters=self.n_clusters, n_init=10, random_state=rng).fit(Phi)
        self.init_labels_ = km.labels_.astype(np.int64)
        if self._label_balance():  # the start obeys the label balance too: nearest centres under it
            self.init_labels_ = balanced_labels(-km.transform(Phi) ** 2, *count_bounds(n, self.n_clusters, l))
        t0 = time.perf_counter()
        if self.n_clusters == 2:
            fit_binary(self, Phi, sizes, l)
        else:
            fit_multiclass(self, Phi, sizes, l)
        # one cutting-plane round (its CCCP steps, SOCPs and most violated constraint): the ODMC
        # paper's Figure 2 unit for CPMMC
        self.seconds_per_iteration_ = (time.perf_counter() - t0) / max(len(self.rounds_), 1)
        self.n_constraints_ = len(self.rounds_)
        self.cccp_iterations_ = [r["cccp_iterations"] for r in self.rounds_]
        self.solver_seconds_ = float(sum(r["solver_seconds"] for r in self.rounds_))
        self.avg_cccp_iterations_ = float(np.mean(self.cccp_iterations_))
        self.n_iter_ = len(self.rounds_)
        self.cluster_sizes_ = np.bincount(self.labels_, minlength=int(self.n_clusters))
        # CPU seconds after the kernel PCA: the k-means start and the cutting-plane rounds
        self.solve_seconds_ = time.process_time() - cpu0 - self.feature_seconds_
        return self

    def _label_balance(self) -> bool:
        """True where the balance bounds the cluster sizes (m > 2 with ``balance_on="labels"``)."""
        return int(self.n_clusters) > 2 and self.balance_on == "labels"

    def _C(self) -> float:
        """The loss weight: ``C``, or when None 30 for two clusters and 10 for more (module docstring)."""
        if self.C is None:
            return 30.0 if int(self.n_clusters) == 2 else 10.0
        return float(self.C)   # > 0 (_parameter_constraints)

    def _end_round(self, rnd, it, secs, solver, obj, xi_val, violation) -> bool:
        """Record a cutting-plane round; True when Algorithm 1/3 stops (violation <= xi + epsilon)."""
        self.rounds_.append({"round": rnd, "n_constraints": rnd, "cccp_iterations": it, "solver_seconds": secs,
                             "solver": solver, "objective": obj, "xi": xi_val, "violation": violation})
        _ROUNDS.info("MKC round %d: |Omega|=%d, %d CCCP steps, objective %.6g, xi %.4g, violation %.4g",
                     rnd, rnd, it, obj, xi_val, violation)
        if violation <= xi_val + float(self.epsilon):
            return True
        if rnd >= int(self.max_rounds):
            log.warning("MKC stopped at max_rounds=%d before the violation reached xi + epsilon", self.max_rounds)
            return True
        return False

    def objective_at(self, labels, max_n: int = 3000, random_state=0) -> float:
        """:func:`fixed_label_objective` of ``labels`` (n,) on the fitted features, C and balance l; on
        a set of more than ``max_n`` samples, on a random subset of ``max_n`` (the same subset for
        every labelling with the same ``random_state``; l scaled to the subset)."""
        if not hasattr(self, "_Phi"):
            raise ValueError("objective_at needs a fitted MKC")
        labels = np.asarray(labels)
        n = self._Phi.shape[0]
        if labels.shape != (n,):
            raise ValueError(f"labels must have shape ({n},), got {labels.shape}")
        idx = np.arange(n)
        if n > max_n:
            idx = np.sort(np.random.default_rng(random_state).choice(n, size=max_n, replace=False))
        return fixed_label_objective(self._Phi[idx], self._sizes, labels[idx], self._C(), self._l * idx.size / n)

    # --------------------------------------------------------------------------- predict
    def decision_function(self, X):
        """f for new points: a cross-kernel bank (m, n_new, n_train) when fitted on Gram matrices, or
        a list of their feature matrices (one matrix for a one-kernel model) when fitted on features."""
        check_is_fitted(self, "v_")
        X = _one_input(X)
        if self._proj is None and not isinstance(X, (list, tuple)) and np.ndim(X) == 2:
            X = [X]
        if isinstance(X, (list, tuple)):
            if self._proj is not None:
                raise ValueError("fitted on Gram matrices: pass the cross-kernel bank (m, n_new, n_train)")
            if len(X) != len(self._bases):
                raise ValueError(f"{len(X)} feature maps for a model of {len(self._bases)} kernels")
            X = [check_features(F, name=f"feature map {k}") for k, F in enumerate(X)]
            if sum(F.shape[1] for F in X) != self.n_features_in_:
                raise ValueError(f"X has {sum(F.shape[1] for F in X)} features, but MKC is expecting "
                                 f"{self.n_features_in_} features as input")
            Phi = np.hstack(self._reduce(X))
        else:
            if self._proj is None:
                raise ValueError("fitted on feature maps: pass the new points' feature maps")
            Kx = check_array(X, dtype=np.float64, allow_nd=True, input_name="X")
            if Kx.ndim == 2:
                Kx = Kx[None]
            if Kx.ndim != 3 or Kx.shape[0] != len(self._proj) or Kx.shape[2] != self.n_features_in_:
                raise ValueError(f"X has shape {Kx.shape}, but MKC is expecting {self.n_features_in_} features as "
                                 f"input: the cross-kernel bank ({len(self._proj)}, n_new, {self.n_features_in_})")
            Phi = np.hstack([Kx[k] @ P for k, P in enumerate(self._proj)])
        if Phi.shape[1] != self.v_.shape[0]:
            raise ValueError(f"new points have {Phi.shape[1]} features; the model has {self.v_.shape[0]}")
        Phi = Phi - self.feature_mean_
        return Phi @ self.v_ + self.b_ if self.n_clusters == 2 else Phi @ self.v_

    def predict(self, X):
        f = self.decision_function(X)
        return (f < 0).astype(np.int64) if self.n_clusters == 2 else np.argmax(f, axis=1).astype(np.int64)
