"""Exact Euclidean projection of rows onto the probability simplex, shared by the Z-step of SCSK and
SCMK (:mod:`mkclust.algorithms._zstep`) and LMKKM's weight step."""

from __future__ import annotations

import numpy as np


def project_rows_to_simplex(V: np.ndarray, top: int = 64) -> np.ndarray:
    """Exact Euclidean projection of every row of V onto the simplex {z >= 0, sum z = 1} (the box
    z <= 1 is then implied). Sort-based (Held, Wolfe, Crowder 1974; Duchi et al. 2008): with u the
    row sorted descending, rho the last k with u_k - (sum_{j<=k} u_j - 1)/k > 0 and
    theta = (sum_{j<=rho} u_j - 1)/rho, the projection is max(v - theta, 0). Vectorised over rows,
    no loop over rows. Only the ``top`` largest entries of each row are sorted (``np.partition``,
    O(d) a row): the support of the projection lies among them whenever rho < ``top``, which is
    checked; rows where it does not hold are sorted in full."""
    V = np.asarray(V, dtype=np.float64)
    d = V.shape[-1]
    if V.ndim != 2 or top >= d:
        return np.maximum(V - _threshold(-np.sort(-V, axis=-1))[0][..., None], 0.0)
    theta, rho = _threshold(-np.sort(-np.partition(V, d - top, axis=1)[:, d - top:], axis=1))
    bad = np.flatnonzero(rho >= top)  # rho < top: the (top+1)-th entry fails, so every later one does
    if bad.size:
        theta[bad] = _threshold(-np.sort(-V[bad], axis=1))[0]
    return np.maximum(V - theta[:, None], 0.0)


def _threshold(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta and rho of the projection for rows U sorted in descending order."""
    css = np.cumsum(U, axis=-1)
    css -= 1.0
    k = np.arange(1, U.shape[-1] + 1, dtype=np.float64)
    rho = np.count_nonzero(U * k > css, axis=-1)  # the condition holds exactly for k <= rho
    theta = np.take_along_axis(css, (rho - 1)[..., None], axis=-1)[..., 0] / rho
    return theta, rho
