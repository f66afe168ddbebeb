"""Twin learning of similarity and clustering (Kang, Peng, Cheng, AAAI 2017): SCSK with one kernel
(Eq. 7, Algorithm 1) and SCMK with multiple kernels (Eq. 18, Algorithm 2).

SCMK minimises, over the similarity Z (n x n), the indicator P (n x c) and the kernel weights w,

    J(Z, P, w) = Tr(K_w - 2 K_w Z + Z' K_w Z) + alpha ||Z||_F^2 + beta Tr(P' L P),          (18)
    s.t. Z'1 = 1, 0 <= Z <= 1, P'P = I, K_w = sum_i w_i K^i, sum_i sqrt(w_i) = 1, w >= 0,

with L = D - (Z + Z')/2 the Laplacian of the symmetrised Z. SCSK (Eq. 7) is the same with one
kernel and no w. Each outer iteration does, as Algorithm 2 lists them,

1. K_w by Eq. 17;
2. the P-step (Eq. 8): P = the c eigenvectors of L with the smallest eigenvalues (Ky Fan, Eq. 6),
   from ``scipy.linalg.eigh`` restricted to those c;
3. the Z-step (Eq. 11 for every column at once, see :func:`z_step`);
4. h by Eq. 20, h_i = Tr(K^i - 2 K^i Z + Z' K^i Z) (one Gram product Z Z' for all kernels);
5. w by Eq. 22, w_i = (h_i sum_j 1/h_j)^(-2), which satisfies sum_i sqrt(w_i) = 1.

Every step minimises J over its block (the Z-step to the tolerance of its own convergence test,
starting from the previous Z, and it never returns a worse point than its start), so J never
increases; the tests check it. ``objective_trace_`` holds J after each outer iteration.

Choices (each tested):

- **Kernels are double-centred** (H K H, H = I - 11'/n) once per fit. On the feasible set (columns
  of Z sum to 1) the reconstruction sum_i ||phi(x_i) - phi(X) z_i||^2 and every h_i are unchanged
  by translating the feature space, so J is the same number; but the Lipschitz constant of the
  Z-step drops from 2 (alpha + lambda_max(K)) to 2 (alpha + lambda_max(HKH)): a nearly constant
  kernel (the Gaussians with t0 = 50, 100 of the 12-kernel bank) has lambda_max(K) ~ n and
  lambda_max(HKH) ~ 1e-5 n. It also removes the cancellation in K_ii - 2 k_i'z + z'Kz.
- **Initialisation**: Z = I and w_i = 1/r, as the authors' code does (github.com/sckangz/AAAI17; the paper
  says "random matrix Z"; ``init="random"`` draws Z's columns uniformly from the simplex with
  ``random_state``). w = 1/r is Algorithm 2's start; it is not feasible for sum sqrt(w) = 1, so the
  first Z-step sees K_w = mean kernel and J is recorded from the first (feasible) w-step on.
- **The first rank term**: with Z = I the Laplacian is 0 and every orthonormal P attains
  Tr(P'LP) = 0, so the first P carries no information. The authors' code uses whatever basis the
  eigensolver returns; for their beta ~ 1e-6 that is harmless, but with beta comparable to alpha
  that arbitrary P decides the partition (isolating a few samples for good). We leave the rank term
  out of the first Z-step (B = 0; the first Z is then the minimiser of Eq. 3 for the start kernel)
  and alternate from there. J is recorded as J(Z_k, P_k+1, w_k) (P_k+1 the P-step on Z_k).
- **h_i = 0** (a kernel Z reconstructs exactly) would take all the weight: h is floored at
  1e-12 max_i h_i.
- **Stopping** as the authors' code: after more than ``min_iter`` (10) outer iterations, stop once
  ||Z - Z_old||_2 / ||Z_old||_2 < ``tol`` (1e-3; spectral norms), at most ``max_iter`` (500).
- **Labels** (``labels``): ``"kmeans"`` (default, the authors' code): scikit-learn's KMeans with
  ``n_init`` (100) restarts on the rows of P, not row-normalised. ``"components"``: the connected
  components of the graph of Z (edges where z_ij + z_ji > 0; the Z-step's simplex projection gives
  exact zeros) when there are exactly c of them, the partition Theorem 1 describes; otherwise the
  k-means labels. ``label_method_`` says which was used, ``n_components_`` how many components Z has.
  P is the P-step on the final Z (the authors' code labels with the P computed from the previous Z;
  the two differ by the last iteration's change of Z, below ``tol`` at convergence).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
import scipy.sparse.linalg
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state

from mkclust.algorithms._spectra import _lambda_max, _spectral_norm
from mkclust.algorithms._zstep import z_step
from mkclust.algorithms.base import (
    BaseClusterer, COMMON_CONSTRAINTS, batch_groups, Cost, NONNEG, NONNEG_INT, POSITIVE, POSITIVE_INT, Progress,
    StrOptions,
)

log = logging.getLogger(__name__)
_ITERATIONS = Progress(log)


def laplacian(Z: np.ndarray) -> np.ndarray:
    """L = D - (Z + Z')/2, D_ii = sum_j (z_ij + z_ji)/2 (the paper's definition below Eq. 4)."""
    W = 0.5 * (Z + Z.T)
    L = -W
    L[np.diag_indices_from(L)] += W.sum(axis=1)
    return L


def p_step(Z: np.ndarray, n_clusters: int) -> tuple[np.ndarray, float]:
    """Eq. 8: the c eigenvectors of L(Z) with the smallest eigenvalues, and the sum of those
    eigenvalues (= Tr(P'LP), Ky Fan's Eq. 6)."""
    lam, P = scipy.linalg.eigh(laplacian(Z), subset_by_index=[0, n_clusters - 1])
    return P, float(lam.sum())


def pairwise_sq(P: np.ndarray) -> np.ndarray:
    """d_ij = ||p_i - p_j||^2 for the rows of P (one n x n x c product)."""
    r = np.einsum("ij,ij->i", P, P)
    D = r[:, None] + r[None, :] - 2.0 * (P @ P.T)
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return D


def double_centre(K: np.ndarray) -> np.ndarray:
    """H K H for one kernel (n, n) or each kernel of a bank (m, n, n)."""
    rows = K.mean(axis=-1, keepdims=True)
    cols = K.mean(axis=-2, keepdims=True)
    tot = K.mean(axis=(-2, -1), keepdims=True)
    Kc = K - rows - cols + tot
    return 0.5 * (Kc + np.swapaxes(Kc, -1, -2))


def reconstruction_errors(Kc: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """h of Eq. 20 for every kernel of the bank (m, n, n): Tr(K) - 2 <K, Z> + <K, Z Z'> (K symmetric,
    so Tr(KZ) = <K, Z> and Tr(Z'KZ) = <K, ZZ'>); one product Z Z' and two GEMVs over the bank."""
    m, n, _ = Kc.shape
    flat = Kc.reshape(m, n * n)
    tr = np.einsum("tii->t", Kc)
    return tr - 2.0 * (flat @ Z.ravel()) + flat @ (Z @ Z.T).ravel()


def scmk_weights(h: np.ndarray) -> np.ndarray:
    """Eq. 22: w_i = (h_i sum_j 1/h_j)^(-2), so that sum_i sqrt(w_i) = 1 (h floored at 1e-12 max h).
    When every h_i is 0 (every kernel reconstructed exactly: constant kernels) Eq. 22 is 0/0 and every
    kernel fits equally well: the weights are equal, 1/m^2."""
    h = np.asarray(h, dtype=np.float64)
    if not h.max() > 0:
        return np.full(h.size, float(h.size) ** -2.0)
    h = np.maximum(h, 1e-12 * float(h.max()))
    return (h * np.sum(1.0 / h)) ** -2.0


@dataclass
class _Fit:
    Z: np.ndarray
    P: np.ndarray
    w: np.ndarray
    objective: float
    trace: list
    n_iter: int
    converged: bool
    z_iters: list
    z_gaps: list
    seconds: list


def twin_learning(Kc: np.ndarray, n_clusters: int, alpha: float, beta: float, learn_weights: bool, Z0: np.ndarray,
                  max_iter: int = 500, min_iter: int = 10, tol: float = 1e-3, z_tol: float = 1e-6,
                  z_max_iter: int = 500) -> _Fit:
    """Algorithm 2 (``learn_weights=True``) or Algorithm 1 (one kernel) on a double-centred bank
    ``Kc`` (m, n, n) from ``Z0``. Returns the final Z, P (the P-step on the final Z), w, J and its
    trace: J(Z_k, P_k+1, w_k) after iteration k, with P_k+1 the P-step on Z_k (so the recorded P
    and Z agree); by the block-minimisations it never increases."""
    m, n, _ = Kc.shape
    w = np.full(m, 1.0 / m) if learn_weights else np.ones(m)
    Z = Z0
    P, _ = p_step(Z, n_clusters)                                 # Eq. 8
    # L(Z0) = 0 (Z0 = I): every P is optimal, none carries information; the rank term is left out of
    # the first Z-step instead of letting the eigensolver's arbitrary basis steer it (module docstring)
    B = np.zeros((n, n)) if not laplacian(Z).any() else (0.5 * beta) * pairwise_sq(P)  # beta/2 d_i, Eq. 9
    # one kernel: K_w never changes, nor does the Z-step's Lipschitz constant
    lipschitz = None if learn_weights else 2.0 * (alpha + _lambda_max(Kc[0]))
    trace, z_iters, z_gaps, seconds = [], [], [], []
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        t0 = time.perf_counter()
        Kw = np.tensordot(w, Kc, axes=1) if learn_weights else Kc[0]   # Eq. 17
        res = z_step(Kw, B, alpha, Z, tol=z_tol, max_iter=z_max_iter, lipschitz=lipschitz)  # Eq. 11
        Z_old, Z = Z, res.Z
        if learn_weights:
            h = reconstruction_errors(Kc, Z)                     # Eq. 20
            w = scmk_weights(h)                                  # Eq. 22
            fit_terms = float(w @ h + alpha * np.vdot(Z, Z))
        else:
            fit_terms = res.objective - float(np.vdot(B, Z))
        P, lam_sum = p_step(Z, n_clusters)                       # Eq. 8, for the next iteration
        B = (0.5 * beta) * pairwise_sq(P)
        J = fit_terms + beta * lam_sum                           # J(Z_k, P_k+1, w_k)
        trace.append(J)
        z_iters.append(res.n_iter)
        z_gaps.append(res.gap / max(res.objective, 1e-300))
        change = _spectral_norm(Z - Z_old) / max(_spectral_norm(Z_old), 1e-300)
        seconds.append(time.perf_counter() - t0)
        _ITERATIONS.info("%s iteration %d: J %.10g, ||dZ||/||Z|| %.3g, Z-step %d iterations (gap %.2g), %.2f s",
                         "SCMK" if learn_weights else "SCSK", it, J, change, res.n_iter, z_gaps[-1], seconds[-1])
        if it > min_iter and change < tol:
            converged = True
            break
    return _Fit(Z, P, w, trace[-1], trace, it, converged, z_iters, z_gaps, seconds)


def graph_components(Z: np.ndarray) -> tuple[int, np.ndarray]:
    """Connected components of the graph with edges where z_ij + z_ji > 0."""
    A = scipy.sparse.csr_matrix((Z + Z.T) > 0)
    return scipy.sparse.csgraph.connected_components(A, directed=False)


class _TwinBase(BaseClusterer):
    """Parameters and fitting shared by SCSK and SCMK (documented on each)."""

    _parameter_constraints = {
        **COMMON_CONSTRAINTS, "alpha": [POSITIVE], "beta": [NONNEG], "init": [StrOptions({"identity", "random"})],
        "labels": [StrOptions({"kmeans", "components"})], "max_iter": [POSITIVE_INT], "min_iter": [NONNEG_INT],
        "n_init": [POSITIVE_INT], "tol": [NONNEG], "z_max_iter": [POSITIVE_INT], "z_tol": [NONNEG],
    }


    _learn_weights = False

    def __init__(self, n_clusters=8, alpha=1e-5, beta=1e-6, init="identity", max_iter=500, min_iter=10,
                 tol=1e-3, z_tol=1e-6, z_max_iter=500, labels="kmeans", n_init=100, random_state=None):
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.beta = beta
        self.init = init
        self.max_iter = max_iter
        self.min_iter = min_iter
        self.tol = tol
        self.z_tol = z_tol
        self.z_max_iter = z_max_iter
        self.labels = labels
        self.n_init = n_init
        self.random_state = random_state

    #: the parameters that enter only the partition of the learned embedding (its k-means, or the graph's
    #: components): with ``init="identity"`` the twin learning draws nothing, so estimators equal in every
    #: other parameter learn the same Z, P and w (:meth:`fit_batch`)
    LABEL_ONLY = ("random_state", "n_init", "labels")

    def _fit_bank(self, K: np.ndarray):
        rng = check_random_state(self.random_state)
        return self._partition(self._twin(K, rng), rng)

    def _twin(self, K: np.ndarray, rng):
        """Algorithm 1 or 2 on the bank K (m, n, n) from Z = I or (``init="random"``) a Z drawn with ``rng``."""
        m, n, _ = K.shape
        if self.init == "identity":
            Z0 = np.eye(n)
        else:
            Z0 = -np.log(rng.uniform(size=(n, n)))   # exponential draws, normalised: uniform on the simplex
            Z0 /= Z0.sum(axis=0, keepdims=True)
        return twin_learning(double_centre(K), self.n_clusters, float(self.alpha), float(self.beta),
                             self._learn_weights, Z0, int(self.max_iter), int(self.min_iter), float(self.tol),
                             float(self.z_tol), int(self.z_max_iter))

    @classmethod
    def fit_batch(cls, estimators, K) -> list:
        """Fit several estimators on one kernel (SCSK) or bank (SCMK) K; returns them, fitted, each
        exactly as its own ``fit``. With ``init="identity"`` ``random_state`` enters only the final
        partition (:data:`LABEL_ONLY`), so the runs of a group that differ in their seed alone learn Z,
        P and w once and each partitions them with its own k-means: a group of 10 seeds costs one twin
        learning and 10 k-means instead of 10 of each (the benchmark's SCMK fits were 93-732 CPU s
        each). The shared arrays (``Z_``, ``embedding_``) are one object for the estimators sharing them
        (read them, do not write them); ``shared_fit_`` is True on those that reused another's."""
        estimators, _ = batch_groups(cls, estimators, ())
        done: dict = {}
        for e in estimators:
            bank = e._bank(K)
            rng = check_random_state(e.random_state)
            key = (None if e.init != "identity" else
                   repr(sorted((k, v) for k, v in e.get_params().items() if k not in cls.LABEL_ONLY)))
            e.shared_fit_ = key is not None and key in done
            if not e.shared_fit_:
                fit = e._twin(bank, rng)
                if key is not None:
                    done[key] = fit
            e._partition(done[key] if e.shared_fit_ else fit, rng)
        return estimators

    def _partition(self, fit, rng):
        """The fitted attributes of the twin learning ``fit`` and the partition of its embedding."""
        self.Z_, self.embedding_ = fit.Z, fit.P
        self.objective_, self.objective_trace_, self.n_iter_ = fit.objective, fit.trace, fit.n_iter
        self.converged_, self.z_step_iters_, self.z_step_gaps_ = fit.converged, fit.z_iters, fit.z_gaps
        self.iteration_seconds_ = fit.seconds
        if self._learn_weights:
            self.kernel_weights_ = fit.w
        self.n_components_, comp = graph_components(fit.Z)
        if self.labels == "components" and self.n_components_ == self.n_clusters:
            self.labels_ = comp.astype(np.int64)
            self.label_method_ = "components"
        else:
            km = KMeans(n_clusters=self.n_clusters, n_init=int(self.n_init), random_state=rng).fit(fit.P)
            self.labels_ = km.labels_.astype(np.int64)
            self.label_method_ = "kmeans"
        return self


_PARAMS_DOC = """
    n_clusters : int, default=8
        Number of clusters (c).
    alpha : float > 0, default=1e-05
        The weight of ||Z||_F^2 (the paper's grid: 1e-5 ... 100).
    beta : float >= 0, default=1e-06
        The weight of the rank term Tr(P'LP) (the paper's grid: 1e-6, 1e-5).
    init : {"identity", "random"}, default="identity"
        The start of Z: the identity (the authors' code) or columns uniform on the simplex.
    max_iter : int, default=500
        At most this many outer iterations.
    min_iter : int, default=10
        Stop only after more than this many, once ||Z - Z_old||_2 / ||Z_old||_2 < ``tol`` (the
        authors' rule).
    tol : float, default=0.001
        See ``min_iter``.
    z_tol : float, default=1e-06
        The Z-step's convergence test (relative Frank-Wolfe gap).
    z_max_iter : int, default=500
        The Z-step's iteration cap.
    labels : {"kmeans", "components"}, default="kmeans"
        "kmeans": k-means on the rows of P with ``n_init`` restarts (the authors' code);
        "components": Z's connected components when there are exactly c, else k-means.
    n_init : int, default=100
        k-means restarts on P (the authors' code: 100).
    random_state : int, RandomState instance or None, default=None
        Seed of k-means on P, and of Z with ``init="random"``.
"""


class SCSK(_TwinBase):
    __doc__ = """Twin learning of similarity and clustering with a single kernel (Eq. 7, Algorithm 1;
    see the module docstring for the method and the choices made).

    Parameters
    ----------""" + _PARAMS_DOC + """
    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    Z_ : ndarray of shape (n_samples, n_samples)
        The learned similarity, columns on the simplex.
    embedding_ : ndarray of shape (n_samples, n_clusters)
        P, with orthonormal columns.
    objective_ : float
        Eq. 7.
    objective_trace_ : list of float
        After each outer iteration (non-increasing).
    n_iter_ : int
    converged_ : bool
    z_step_iters_, z_step_gaps_, iteration_seconds_ : list
        Per outer iteration: the Z-step's iterations and final gap, and the seconds it took.
    n_components_ : int
        Connected components of Z's graph.
    label_method_ : str
        "kmeans" or "components".
    """

    cost = Cost(work_n2=80, seconds_at_1000=150, exponent=3, typical_at_1000=14)
    input_kind = "kernel"

    def _bank(self, K):
        return self._validate_kernel(K)[None]

    def fit(self, K, y=None):
        return self._fit_bank(self._bank(K))


class SCMK(_TwinBase):
    __doc__ = """Twin learning of similarity and clustering with multiple kernels (Eq. 18, Algorithm
    2: h by Eq. 20, w by Eq. 22; see the module docstring).

    Parameters
    ----------""" + _PARAMS_DOC + """
    Attributes
    ----------
    kernel_weights_ : ndarray of shape (n_kernels,)
        w >= 0, sum_i sqrt(w_i) = 1.
    objective_ : float
        Eq. 18.
    labels_, Z_, embedding_, objective_trace_, n_iter_
        As :class:`SCSK`.
    converged_, z_step_iters_, z_step_gaps_, iteration_seconds_, n_components_, label_method_
        As :class:`SCSK`.
    """

    cost = Cost(work_n2=80, seconds_at_1000=400, exponent=2, typical_at_1000=5.87)
    input_kind = "kernels"
    _learn_weights = True

    def _bank(self, K):
        return self._validate_kernel(K)

    def fit(self, K, y=None):
        return self._fit_bank(self._bank(K))
