"""Affinity aggregation for spectral clustering (AASC; Huang, Chuang, Chen, CVPR 2012).

The formulation implemented (the paper's, in the form the RMKKM authors' public copy of it,
github.com/csliangdu/RMKKM, implements): with W_k the m affinities (kernels used as graphs),
L_k = Deg_k - W_k their unnormalised Laplacians, and an exponent p > 1,

    min_{F, v}  J(F, v) = tr(F' L(v) F),   L(v) = sum_k v_k^p L_k  (the Laplacian of sum_k v_k^p W_k),
    s.t.  F' F = I,  v >= 0,  sum_k v_k = 1,

alternating two exact minimisations, so J never increases:

- F-step: the c eigenvectors of L(v) with the smallest eigenvalues (``scipy.linalg.eigh``);
- v-step: with a_k = tr(F' L_k F) >= 0, the closed form v_k = a_k^(1/(1-p)) / sum_j a_j^(1/(1-p)).

Starts from v_k = 1/m; stops when J's relative decrease is below ``tol`` or after ``max_iter``.
Labels: k-means (``n_init`` restarts, scikit-learn) on the rows of the final F scaled to unit length,
as the authors' code does. Self-loops do not matter (they cancel in Deg - W). A kernel whose graph
has c or more connected components has a_k = 0 and takes all the weight; a_k is floored at 1e-12
max_k a_k so the update stays finite.

**The authors' code differs, and is not offered as an option.** The AASC that the RMKKM authors ship
(Huang et al.'s code, used for the RMKKM and SCMK papers' AASC columns) does not take this closed form:

- it updates the weights from the second eigenvector only, by a numerical root search (MATLAB's
  ``fsolve``) on an equation with a pole at each kernel's value, whose root puts nearly all the weight
  on the near-identity Gaussian kernels (t0 = .01, .05, .1 of the ``rmkkm12`` bank);
- its array of candidate roots (``result_1D``) is never filled, so it always keeps the candidate the
  search started from (x0 = -1);
- it keeps negative affinities (here ``negative="clip"`` by default: the cosine kernel has some);
- it stops when the eigenvectors change by less than 1e-5, or after 20 iterations.

Run under GNU Octave on this project's kernels (equal to the authors' to 1e-12), that code gives the
published values neither with its root search nor without it (mean accuracy: YALE .279 / .509, JAFFE
.264 / .745, TR11 .225 / .501, against the published .406, .304, .472): its result depends on which
root the solver finds, i.e. on the solver and its version, so it is not a reproducible target and
the gaps of the AASC columns are recorded as the authors' code's (``causes.tsv``), not tuned away.
"""

from __future__ import annotations

from numbers import Real

import logging

import numpy as np
import scipy.linalg
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state

from mkclust.algorithms.base import (
    BaseClusterer, check_affinity, COMMON_CONSTRAINTS, Cost, Interval, NONNEG, POSITIVE_INT, StrOptions,
)

log = logging.getLogger(__name__)


def laplacian_traces(W: np.ndarray, deg: np.ndarray, F: np.ndarray) -> np.ndarray:
    """a_k = tr(F' (Deg_k - W_k) F) for every affinity k at once: (m,)."""
    WF = np.matmul(W, F)  # (m, n, c)
    return np.einsum("tn,nc,nc->t", deg, F, F) - np.einsum("nc,tnc->t", F, WF)


def aasc_weights(a: np.ndarray, p: float) -> np.ndarray:
    a = np.maximum(a, 1e-12 * max(float(a.max()), 1e-300))
    logv = np.log(a) / (1.0 - p)
    return np.exp(logv - np.logaddexp.reduce(logv))


class AASC(BaseClusterer):
    """Affinity aggregation spectral clustering (see the module docstring for the formulation).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    p : float > 1, default=2.0
        The weight exponent.
    max_iter : int, default=30
        Alternations at most.
    tol : float, default=1e-06
        Relative decrease of J below which the alternation stops.
    n_init : int, default=10
        k-means restarts on the embedding (as the authors' code).
    negative : {"error", "clip"}, default="clip"
        What to do with negative affinities (:func:`check_affinity`).
    random_state : int, RandomState instance or None, default=None
        Seed of k-means on the embedding.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    kernel_weights_ : ndarray of shape (n_kernels,)
        v, summing to 1.
    embedding_ : ndarray of shape (n_samples, n_clusters)
        The row-normalised F.
    objective_ : float
        J.
    objective_trace_ : list of float
    n_iter_ : int
    """

    cost = Cost(work_n2=8, seconds_at_1000=10, exponent=3, typical_at_1000=0.332)
    _parameter_constraints = {
        **COMMON_CONSTRAINTS, "p": [Interval(Real, 1, None, closed="neither")], "n_init": [POSITIVE_INT],
        "max_iter": [POSITIVE_INT], "tol": [NONNEG], "negative": [StrOptions({"error", "clip"})],
    }

    input_kind = "kernels"
    requires_psd = False  # affinity matrices, as spectral clustering

    def __init__(self, n_clusters=8, p=2.0, max_iter=30, tol=1e-6, n_init=10, negative="clip", random_state=None):
        self.n_clusters = n_clusters
        self.p = p
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.negative = negative
        self.random_state = random_state

    def fit(self, K, y=None):
        W = np.stack([check_affinity(Wk, self.negative) for Wk in self._validate_kernel(K)])
        m, n, _ = W.shape
        c, p = self.n_clusters, float(self.p)
        deg = W.sum(axis=2)
        L = np.stack([np.diag(deg[k]) - W[k] for k in range(m)])  # (m, n, n), kept for the F-steps
        v = np.full(m, 1.0 / m)
        trace: list[float] = []
        n_iter = 0
        for n_iter in range(1, int(self.max_iter) + 1):
            Lv = np.tensordot(v**p, L, axes=1)
            _, F = scipy.linalg.eigh(Lv, subset_by_index=[0, c - 1])      # F-step
            a = laplacian_traces(W, deg, F)
            trace.append(float((v**p) @ a))
            v = aasc_weights(a, p)                                         # v-step
            trace.append(float((v**p) @ a))
            log.debug("AASC iteration %d: J %.10g -> %.10g, weights %s", n_iter, trace[-2], trace[-1],
                      np.round(v, 4).tolist())
            if len(trace) > 2 and (trace[-3] - trace[-1]) <= self.tol * max(abs(trace[-3]), 1e-300):
                break
        Lv = np.tensordot(v**p, L, axes=1)
        _, F = scipy.linalg.eigh(Lv, subset_by_index=[0, c - 1])
        norms = np.linalg.norm(F, axis=1)
        self.embedding_ = F / np.where(norms > 0, norms, 1.0)[:, None]
        km = KMeans(n_clusters=c, n_init=int(self.n_init), random_state=check_random_state(self.random_state))
        self.labels_ = km.fit(self.embedding_).labels_.astype(np.int64)
        self.kernel_weights_ = v
        self.objective_ = float((v**p) @ laplacian_traces(W, deg, F))
        self.objective_trace_ = trace + [self.objective_]
        self.n_iter_ = n_iter
        return self
