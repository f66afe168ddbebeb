"""MKKM-MiR (Liu, Dou, Yin, Wang, Zhu; "Multiple Kernel k-Means Clustering with Matrix-Induced
Regularization", AAAI 2016) and ONKC (Liu, Zhou, Wang, Li, Yin, Zhu, Zhang, Zhang; "Optimal
Neighborhood Kernel Clustering with Multiple Kernels", AAAI 2017): multiple kernel k-means whose
weights are penalised by the kernels' Gram matrix M_pq = Tr(K_p K_q), so that two kernels that carry the
same information do not both take weight. Both alternate exact block minimisations, so their
objectives never increase (``objective_trace_``).

MKKM-MiR minimises, over H'H = I_k and gamma on the simplex,

    Tr(K_gamma (I - H H')) + lambda/2 gamma' M gamma,   K_gamma = sum_p gamma_p^2 K_p,

which is 1/2 gamma'(lambda M + 2 diag(f)) gamma with f_p = Tr(K_p (I - H H')). For fixed gamma the
minimising H is the k leading eigenvectors of K_gamma; for fixed H, gamma solves that QP.
Its authors' code (mkkmmr.m with mycombFun) combines the kernels as sum_p gamma_p K_p in its H-step while
its objective (calObj) is quadratic in gamma, so its H-step is not the block minimiser of the
objective it reports; ``h_step="authors"`` does that, and its objective may then rise.

ONKC looks for an optimal kernel G near K_gamma = sum_p gamma_p K_p (linear in gamma here): over
H'H = I_k, G PSD and gamma on the simplex it minimises

    Tr(G (I - H H')) + rho/2 ||G - K_gamma||_F^2 + lambda/2 gamma' M gamma.

H-step: the k leading eigenvectors of G. G-step: the projection of K_gamma - (1/rho)(I - H H') onto
the PSD cone (its negative eigenvalues set to 0: a full eigendecomposition, O(n^3)). gamma-step: the
QP min 1/2 gamma'((rho + lambda) M) gamma - rho sum_p gamma_p <G, K_p> on the simplex.

Both QPs have one variable per kernel: scipy's SLSQP solves them
(:func:`mkclust.algorithms._mkkm_family.simplex_qp`); cvxpy, the tests' independent solver, costs
tens of milliseconds a call for the same answer.
"""

from __future__ import annotations

import logging

import numpy as np

from mkclust.algorithms._mkkm_family import (FAMILY_PARAMS_DOC, KernelFamilyBase, combine, converged, gram, leading,
                                             simplex_qp, traces)
from mkclust.algorithms.base import Cost, NONNEG, POSITIVE, StrOptions

log = logging.getLogger(__name__)

class MKKMMiR(KernelFamilyBase):
    """MKKM-MiR: multiple kernel k-means with the matrix-induced regulariser lambda/2 gamma' M gamma
    (Liu et al., AAAI 2016; module docstring), alternating H (leading eigenvectors of K_gamma) and the
    weight QP from uniform weights; labels by k-means on the rows of the final H.

    Parameters
    ----------
    n_clusters : int, default=8
    lam : float, default=0.5
        lambda, the regulariser's weight (the paper grids 2^-15 ... 2^10; 2^-1 is the value the
        SimpleMKKM paper's comparison runs it at).
    max_iter : int, default=100
    tol : float, default=1e-4
        The fit stops when an iteration changes the objective by at most this fraction of it.
    h_step : {"paper", "authors"}, default="paper"
        "authors": the H-step on sum_p gamma_p K_p, as the authors' code does (the objective is then not
        guaranteed to decrease).
    n_init : int, default=10
        k-means starts on the rows of H.
    protocol : {"paper", "authors"}, default="paper"
        "authors": kernels centred and scaled to a unit diagonal, H's rows normalised before k-means.
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    labels_, kernel_weights_ (gamma, on the simplex), embedding_ (H), objective_, objective_trace_, n_iter_
    """

    # measured (2026-12-03, one thread, 1500 digits, 12 kernels): 1.3 CPU s; the seeds of a batch share it
    cost = Cost(work_n2=4, seconds_at_1000=60, exponent=3, typical_at_1000=0.4, batch_time=0.2)
    takes_low_rank = True   # every step a product, a trace or leading eigenvectors (mkclust.lowrank)
    _parameter_constraints = {**KernelFamilyBase._family_constraints, "lam": [NONNEG],
                              "h_step": [StrOptions({"paper", "authors"})]}

    def __init__(self, n_clusters=8, lam=0.5, max_iter=100, tol=1e-4, h_step="paper", n_init=10, protocol="paper",
                 random_state=None):
        self.n_clusters = n_clusters
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.h_step = h_step
        self.n_init = n_init
        self.protocol = protocol
        self.random_state = random_state

    def objective_value(self, K: np.ndarray, H: np.ndarray, gamma) -> float:
        """The objective at H and gamma, for the bank as the fit prepared it."""
        gamma = np.asarray(gamma, dtype=float)
        f = traces(K) - traces(K, H)
        return float(gamma**2 @ f + 0.5 * float(self.lam) * gamma @ gram(K) @ gamma)

    def _learn(self, K: np.ndarray) -> tuple[dict, np.ndarray]:
        m, k, lam = K.shape[0], int(self.n_clusters), float(self.lam)
        M, tr = gram(K), traces(K)
        gamma, trace, n_iter = np.full(m, 1.0 / m), [], 0
        for n_iter in range(1, int(self.max_iter) + 1):
            H, _ = leading(combine(K, gamma if self.h_step == "authors" else gamma**2), k)
            f = tr - traces(K, H)
            Q = lam * M + 2.0 * np.diag(f)
            gamma = simplex_qp(Q, np.zeros(m), start=gamma)
            trace.append(float(0.5 * gamma @ Q @ gamma))
            log.debug("MKKM-MiR iteration %d: objective %.12g", n_iter, trace[-1])
            if converged(trace, float(self.tol)):
                break
        H, _ = leading(combine(K, gamma if self.h_step == "authors" else gamma**2), k)
        return {"kernel_weights_": gamma, "objective_": trace[-1], "objective_trace_": trace, "n_iter_": n_iter}, H


def psd_part(A: np.ndarray) -> np.ndarray:
    """The nearest PSD matrix to the symmetric A in the Frobenius norm: its negative eigenvalues set to 0."""
    lam, V = np.linalg.eigh((A + A.T) / 2.0)
    keep = lam > 0
    return (V[:, keep] * lam[keep]) @ V[:, keep].T


class ONKC(KernelFamilyBase):
    __doc__ = """ONKC: optimal neighbourhood kernel clustering (Liu et al., AAAI 2017; module docstring),
    alternating H, the optimal kernel G and the weight QP from uniform weights and G = K_gamma; labels
    by k-means on the rows of the final H.

    Parameters
    ----------
    n_clusters : int, default=8
    rho : float, default=1.0
        How close G stays to K_gamma (the paper grids 2^-7 ... 2^9).
    lam : float, default=1.0
        The regulariser's weight (2^-6 ... 2^7). rho = lambda = 1 is the SimpleMKKM paper's comparison setting.
    max_iter : int, default=100
    tol : float, default=1e-4
        Relative change of the objective below which the fit stops.""" + FAMILY_PARAMS_DOC + """

    Attributes
    ----------
    labels_, kernel_weights_ (gamma), embedding_ (H), kernel_ (G), objective_, objective_trace_, n_iter_
    """

    # measured (2026-12-03, one thread, 1500 digits, 12 kernels): 3.1 CPU s
    cost = Cost(work_n2=7, seconds_at_1000=120, exponent=3, typical_at_1000=0.92, batch_time=0.15)
    _parameter_constraints = {**KernelFamilyBase._family_constraints, "rho": [POSITIVE], "lam": [NONNEG]}

    def __init__(self, n_clusters=8, rho=1.0, lam=1.0, max_iter=100, tol=1e-4, n_init=10, protocol="paper",
                 random_state=None):
        self.n_clusters = n_clusters
        self.rho = rho
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.protocol = protocol
        self.random_state = random_state

    def objective_value(self, K: np.ndarray, H: np.ndarray, G: np.ndarray, gamma, M: np.ndarray | None = None) -> float:
        """The objective at (H, G, gamma) for the bank as the fit prepared it (``M``: its
        :func:`~mkclust.algorithms._mkkm_family.gram`, computed when not given)."""
        gamma = np.asarray(gamma, dtype=float)
        M = gram(K) if M is None else M
        rest = np.trace(G) - float(np.einsum("ij,ik,jk->", G, H, H, optimize=True))
        return float(rest + float(self.rho) / 2 * np.sum((G - combine(K, gamma)) ** 2)
                     + float(self.lam) / 2 * gamma @ M @ gamma)

    def _learn(self, K: np.ndarray) -> tuple[dict, np.ndarray]:
        (m, n, _), k, rho = K.shape, int(self.n_clusters), float(self.rho)
        M = gram(K)
        Q = (rho + float(self.lam)) * M
        gamma = np.full(m, 1.0 / m)
        G, trace, n_iter = combine(K, gamma), [], 0
        for n_iter in range(1, int(self.max_iter) + 1):
            H, _ = leading(G, k)
            G = psd_part(combine(K, gamma) - (np.eye(n) - H @ H.T) / rho)
            b = np.tensordot(K, G, axes=([1, 2], [0, 1]))
            gamma = simplex_qp(Q, -rho * b, start=gamma)
            trace.append(self.objective_value(K, H, G, gamma, M))
            log.debug("ONKC iteration %d: objective %.12g", n_iter, trace[-1])
            if converged(trace, float(self.tol)):
                break
        H, _ = leading(G, k)
        return {"kernel_weights_": gamma, "kernel_": G, "objective_": trace[-1], "objective_trace_": trace,
                "n_iter_": n_iter}, H
