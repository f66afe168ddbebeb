"""The optimal margin distribution machine's dual (Eq. 3 and 7 of the ODMC paper): kappa, the dual
objective and its gradient for a weighted set of labellings, for one fit or many at once (rows)."""

from __future__ import annotations

import numpy as np


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
