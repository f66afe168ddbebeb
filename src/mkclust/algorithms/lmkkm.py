"""LMKKM, localized multiple kernel k-means (Goenen and Margolin; "Localized Data Fusion for Kernel
k-Means Clustering with Application to Cancer Biology", NIPS 2014): a weight per sample and kernel.

The kernel is K_Theta = sum_p (theta_p theta_p') o K_p (o the elementwise product), theta_p in R^n the
column p of Theta (n, m), each row of Theta on the simplex. LMKKM minimises the relaxed kernel k-means
objective Tr(K_Theta) - Tr(H' K_Theta H) = sum_p theta_p' A_p theta_p, A_p = (I - H H') o K_p, over
H'H = I_k and Theta, alternating:

- H: the k leading eigenvectors of K_Theta;
- Theta: the QP min sum_p theta_p' A_p theta_p over Theta with rows on the simplex, n m variables. Each
  A_p is PSD (the Schur product of two PSD matrices), so the QP is convex. Solved here by accelerated
  projected gradient (FISTA, Beck and Teboulle 2009) with the exact projection of every row onto the
  simplex (:func:`~mkclust.algorithms._simplex.project_rows_to_simplex`, SCMK's), warm-started from the
  last Theta, to a projected-gradient step below ``qp_tol``; its step size by backtracking (no
  eigensolver), the last one carried to the next Theta-step.

Both steps are exact minimisations (the QP to its tolerance), so the objective does not increase
beyond that tolerance. Labels: k-means on the rows of H.

Memory: the bank and its m blocks A_p, 2 m n^2 float64 (n = 8,000, m = 12: 12.3 GB). The authors'
code instead builds the QP's n m x n m matrix and calls Mosek, (n m)^2 doubles (73.7 GB at n = 8,000,
where a later paper reports it out of memory); no QP library takes the block structure here (scipy has
no QP solver for n m variables, cvxpy would canonicalise the m dense quadratic forms), so the solver
is written out. A fit that cannot allocate its blocks is refused with a MemoryError naming the bytes.
"""

from __future__ import annotations

import logging

import numpy as np

from mkclust.algorithms._mkkm_family import FAMILY_PARAMS_DOC, KernelFamilyBase, converged, leading
from mkclust.algorithms._simplex import project_rows_to_simplex
from mkclust.algorithms.base import Cost, POSITIVE, POSITIVE_INT

log = logging.getLogger(__name__)


def localized_kernel(K: np.ndarray, Theta: np.ndarray) -> np.ndarray:
    """K_Theta = sum_p (theta_p theta_p') o K_p."""
    return np.einsum("ip,pij,jp->ij", Theta, K, Theta, optimize=True)


def _products(A: np.ndarray, X: np.ndarray) -> np.ndarray:
    """(n, m): column p is A_p x_p (m matrix-vector products, BLAS)."""
    return np.matmul(A, X.T[:, :, None])[:, :, 0].T


def theta_qp(A: np.ndarray, Theta: np.ndarray, tol: float = 1e-9, max_steps: int = 5000,
             L: float | None = None) -> tuple[np.ndarray, int, float]:
    """argmin over Theta (n, m) with rows on the simplex of sum_p theta_p' A_p theta_p (A (m, n, n),
    each PSD), by FISTA with backtracking (Beck and Teboulle 2009, Sect. 4) from ``Theta``: the step
    1 / L, L doubled until the quadratic upper model holds at the step's point, so no eigensolver is
    needed; ``L`` the first guess (default 2 max_p max_i (A_p)_ii, a lower bound of the Lipschitz
    constant 2 max_p lambda_max(A_p)). The products A_p y of the extrapolated point are combinations
    of those of the iterates (linear in the point), so a step costs m matrix-vector products. Stops
    when a step moves Theta by at most ``tol`` (max-norm) or after ``max_steps``. Returns Theta, the
    steps taken and the last L (the next call's first guess)."""
    L = 2.0 * float(np.einsum("pii->p", A).max()) if L is None else float(L)
    if L <= 0:
        return Theta, 0, L
    X, AX = Theta, _products(A, Theta)
    Y, AY, t = X, AX, 1.0
    for step in range(1, max_steps + 1):
        grad, fY = 2.0 * AY, float(np.sum(Y * AY))
        while True:
            Xn = project_rows_to_simplex(Y - grad / L)
            AXn = _products(A, Xn)
            D = Xn - Y
            if float(np.sum(Xn * AXn)) <= fY + float(np.sum(grad * D)) + L / 2 * float(np.sum(D * D)) + 1e-12 * abs(fY):
                break
            L *= 2.0
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        beta = (t - 1.0) / t_new
        Y, AY = Xn + beta * (Xn - X), AXn + beta * (AXn - AX)
        moved = float(np.abs(Xn - X).max())
        X, AX, t = Xn, AXn, t_new
        if moved <= tol:
            return X, step, L
    return X, max_steps, L


def qp_value(A: np.ndarray, Theta: np.ndarray) -> float:
    """sum_p theta_p' A_p theta_p."""
    return float(np.einsum("ip,pij,jp->", Theta, A, Theta, optimize=True))


class LMKKM(KernelFamilyBase):
    __doc__ = """Localized multiple kernel k-means (Goenen and Margolin, NIPS 2014; module docstring), from
    Theta = 1/m everywhere; labels by k-means on the rows of the final H.

    Parameters
    ----------
    n_clusters : int, default=8
    max_iter : int, default=30
        Alternations of H and Theta at most.
    tol : float, default=1e-4
        Relative change of the objective below which the fit stops.
    qp_tol : float, default=1e-5
        The Theta-step stops when an accelerated step moves Theta by at most this.
    qp_max_steps : int, default=2000""" + FAMILY_PARAMS_DOC + """

    Attributes
    ----------
    labels_, sample_weights_ (Theta, (n, m)), kernel_weights_ (Theta's column means), embedding_ (H),
    objective_, objective_trace_, n_iter_
    """

    # measured (2026-12-03, one thread, 1500 digits, 12 kernels): 32 CPU s, 3 iterations; the seeds of a batch share it
    cost = Cost(work_n2=14, seconds_at_1000=600, exponent=3, typical_at_1000=9.5, batch_time=0.12)
    _parameter_constraints = {**KernelFamilyBase._family_constraints, "qp_tol": [POSITIVE],
                              "qp_max_steps": [POSITIVE_INT]}

    def __init__(self, n_clusters=8, max_iter=30, tol=1e-4, qp_tol=1e-5, qp_max_steps=2000, n_init=10,
                 protocol="paper", random_state=None):
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.tol = tol
        self.qp_tol = qp_tol
        self.qp_max_steps = qp_max_steps
        self.n_init = n_init
        self.protocol = protocol
        self.random_state = random_state

    def _learn(self, K: np.ndarray) -> tuple[dict, np.ndarray]:
        (m, n, _), k = K.shape, int(self.n_clusters)
        try:
            A = np.empty_like(K)
        except MemoryError:
            raise MemoryError(f"LMKKM needs its QP's {m} blocks of {n} x {n} beside the bank: {m * n * n * 8 / 1e9:.1f}"
                              " GB more; fit it on fewer samples or kernels") from None
        Theta, L = np.full((n, m), 1.0 / m), None
        trace, n_iter = [], 0
        for n_iter in range(1, int(self.max_iter) + 1):
            H, _ = leading(localized_kernel(K, Theta), k)
            np.multiply(K, (np.eye(n) - H @ H.T)[None], out=A)
            Theta, steps, L = theta_qp(A, Theta, float(self.qp_tol), int(self.qp_max_steps), L)
            trace.append(qp_value(A, Theta))
            log.debug("LMKKM iteration %d: objective %.12g (%d QP steps)", n_iter, trace[-1], steps)
            if converged(trace, float(self.tol)):
                break
        H, _ = leading(localized_kernel(K, Theta), k)
        return {"sample_weights_": Theta, "kernel_weights_": Theta.mean(axis=0), "objective_": trace[-1],
                "objective_trace_": trace, "n_iter_": n_iter}, H
