"""Clustering metrics, as the five papers define them.

- :func:`acc`: accuracy under the best one-to-one matching of clusters to classes (Hungarian
  algorithm, ``scipy.optimize.linear_sum_assignment``), as in the RMKKM and SCMK papers. The ODMC
  paper does not define its Acc; its published values are one-to-one accuracies, not majority ones:
  several lie below the majority-class rate, which majority labelling cannot give (haberman KM 0.604
  against a majority rate of 0.735, tic-tac-toe KM 0.532 against 0.653, fourclass NC 0.624 against
  0.644), so the ODMC tables report and select by :func:`acc`, with :func:`majority_acc` beside it.
- :func:`majority_acc`: each cluster is labelled with its majority class and the fraction of
  correctly labelled samples is returned, as the MKC paper (Sect. 5.2, following [27]) defines
  clustering accuracy. This is the same number as :func:`purity`; both names are kept because the
  papers use both. It is never below the majority-class rate.
- :func:`purity`: sum over clusters of the largest class count, divided by n.
- :func:`inverse_purity`: sum over classes of the largest cluster count, divided by n: the "purity"
  the SCMK authors' code prints (it calls ``ClusteringMeasure(actual_ids, s)`` with the cluster labels
  where that function takes the classes). Not stored in run records; docs/papers.md (SCMK) measures it.
- :func:`nmi`: normalised mutual information. The default ``average_method="max"`` divides MI by
  max(H(U), H(V)), as the RMKKM authors' evaluation code does (github.com/csliangdu/RMKKM);
  ``"arithmetic"`` (scikit-learn's default), ``"geometric"`` and ``"min"`` are available.
- :func:`rand_index` (Rand 1971) and :func:`ari` (Hubert and Arabie 1985).

Label-free (:data:`LABEL_FREE`, no class labels read): :func:`kernel_silhouette`, the silhouette of a
partition in the distance a kernel induces, which the benchmark's unsupervised regime chooses settings by.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

# scikit-learn (and mkclust._validation, which imports it) are imported where a metric is computed: a
# table job imports this module for LABEL_FREE's names only and would pay 3 s for scikit-learn's import
NMI_METHODS = ("max", "arithmetic", "geometric", "min")


def _pair(labels_true, labels_pred) -> tuple[np.ndarray, np.ndarray]:
    from mkclust._validation import check_labels

    t = check_labels(labels_true, "labels_true")
    p = check_labels(labels_pred, "labels_pred")
    if t.shape != p.shape:
        raise ValueError(f"labels_true and labels_pred differ in length: {t.size} vs {p.size}")
    if t.size == 0:
        raise ValueError("labels are empty")
    return t, p


def _contingency(labels_true, labels_pred) -> tuple[np.ndarray, int]:
    """The classes x clusters contingency matrix (scikit-learn's) and the number of samples."""
    from sklearn.metrics.cluster import contingency_matrix

    t, p = _pair(labels_true, labels_pred)
    return contingency_matrix(t, p), t.size


def acc(labels_true, labels_pred) -> float:
    """Accuracy of the best one-to-one map from clusters to classes (Hungarian matching).

    With more clusters than classes (or the reverse) the unmatched clusters count as wrong.
    """
    C, n = _contingency(labels_true, labels_pred)
    rows, cols = linear_sum_assignment(C, maximize=True)
    return float(C[rows, cols].sum() / n)


def purity(labels_true, labels_pred) -> float:
    """Purity: every cluster counts its most frequent class as correct."""
    C, n = _contingency(labels_true, labels_pred)
    return float(C.max(axis=0).sum() / n)


def inverse_purity(labels_true, labels_pred) -> float:
    """Purity with classes and clusters swapped: every class counts its most frequent cluster, so one
    cluster scores 1. What the SCMK authors' scripts print as purity (module docstring)."""
    return purity(labels_pred, labels_true)


def majority_acc(labels_true, labels_pred) -> float:
    """Clustering accuracy of the MKC paper: label each cluster by its majority class and count
    correct labels. Numerically identical to :func:`purity`."""
    return purity(labels_true, labels_pred)


def majority_share(labels_true) -> float:
    """The largest class's share of the samples: the accuracy (and purity) of the trivial partition
    that puts every sample in one cluster, the floor a clustering must beat to say anything."""
    from mkclust._validation import check_labels

    t = check_labels(labels_true, "labels_true")
    if t.size == 0:
        raise ValueError("labels are empty")
    counts = np.bincount(t)
    return float(counts.max() / counts.sum())


def nmi(labels_true, labels_pred, average_method: str = "max") -> float:
    """Normalised mutual information; ``average_method`` is one of ``max`` (default, the RMKKM
    authors' code), ``arithmetic``, ``geometric`` or ``min``."""
    if average_method not in NMI_METHODS:
        raise ValueError(f"average_method must be one of {NMI_METHODS}, got {average_method!r}")
    from sklearn.metrics import normalized_mutual_info_score

    t, p = _pair(labels_true, labels_pred)
    return float(normalized_mutual_info_score(t, p, average_method=average_method))


def rand_index(labels_true, labels_pred) -> float:
    """Rand index: fraction of sample pairs on which the two partitions agree."""
    from sklearn.metrics import rand_score

    t, p = _pair(labels_true, labels_pred)
    return float(rand_score(t, p))


def ari(labels_true, labels_pred) -> float:
    """Adjusted Rand index."""
    from sklearn.metrics import adjusted_rand_score

    t, p = _pair(labels_true, labels_pred)
    return float(adjusted_rand_score(t, p))


#: the metrics a run record stores, by name
METRICS = {
    "acc": acc,
    "majority_acc": majority_acc,
    "nmi": nmi,
    "purity": purity,
    "ri": rand_index,
    "ari": ari,
}


def kernel_silhouette(K: np.ndarray, labels) -> float:
    """The mean silhouette (Rousseeuw 1987; scikit-learn's ``silhouette_score``) of a partition in the
    distance the kernel ``K`` induces, d(i, j) = sqrt(K_ii + K_jj - 2 K_ij) (negative rounding
    clipped to 0): between -1 and 1, higher for tighter, better separated clusters. It reads no class
    label. NaN for a partition with one cluster, or with as many clusters as samples (undefined). ``K``
    may be a low-rank kernel (:class:`mkclust.lowrank.LowRankBank` with weights)."""
    from sklearn.metrics import silhouette_score

    labels = np.asarray(labels)
    k = np.unique(labels).size
    if not 2 <= k <= labels.size - 1:
        return float("nan")
    if hasattr(K, "factors"):   # a low-rank kernel sum_p w_p F_p F_p': the Euclidean distance of [sqrt(w_p) F_p]
        G = np.hstack([np.sqrt(w) * F for w, F in zip(K.weights, K.factors)])
        return float(silhouette_score(G, labels))
    d = np.diag(K)
    D = np.sqrt(np.maximum(d[:, None] + d[None, :] - 2.0 * K, 0.0))
    np.fill_diagonal(D, 0.0)
    return float(silhouette_score(D, labels, metric="precomputed"))


#: the label-free scores a run record can store (an experiment's ``scores``), by name: computed on the
#: equal-weight mean of the run's kernel bank, so every setting and method of a data set is scored in
#: one distance
LABEL_FREE = {"silhouette": kernel_silhouette}


def evaluate(labels_true, labels_pred) -> dict[str, float]:
    """All metrics of :data:`METRICS` as a dict (the ``metrics`` field of a run record)."""
    return {name: fn(labels_true, labels_pred) for name, fn in METRICS.items()}
