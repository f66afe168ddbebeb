"""mkclust's estimators beside the libraries a researcher would otherwise use, in one process on one
thread, back to back on the same precomputed kernel or affinity. Prints one JSON line per
comparison: both CPU times (median over the seeds: ``--repeat``, or ``CHEAP_SEEDS``), their ratio
(mkclust / peer; below 1 is faster), both mean accuracies over the seeds (Hungarian matching,
:func:`mkclust.metrics.acc`) and, for kernel k-means, both labellings' mean objective computed by one
function.

- ``kkm_digits``, ``kkm_blobs``: :class:`~mkclust.algorithms.KernelKMeans` against tslearn's
  ``KernelKMeans(kernel="precomputed")`` (tslearn is optional: these lines say ``skipped`` without
  it; ``pip install tslearn``), digits (1797 x 64, 10 classes) and 5000 x 50 blobs (8 clusters), a
  Gaussian kernel, 10 restarts each.
- ``sc_*``, ``nc_*``: :class:`~mkclust.algorithms.SpectralClustering` and
  :class:`~mkclust.algorithms.NormalizedCut` against scikit-learn's
  ``SpectralClustering(affinity="precomputed")``, on digits and 4000 x 50 blobs. scikit-learn's
  embedding is D^-1/2 U, the normalised cut's, so ``nc_*`` is like for like; ``sc_*`` (Ng-Jordan-Weiss,
  rows scaled to unit length) is another method on the same eigenvectors.
- ``km_digits``: the k-means baseline against scikit-learn's ``KMeans`` (the baseline wraps it).
- ``mkkm_digits``, ``rmkkm_digits``: MKKM and RMKKM on six Gaussian kernels of digits, against one
  KernelKMeans fit on their equal-weight combination (no library fits either: the ratio is the
  price of learning the weights).
- ``simplemkkm_digits``: :class:`~mkclust.algorithms.SimpleMKKM` against MKKM (10 restarts, the
  benchmark's budget) on the same six kernels: the newer method beside the one it replaces.
- ``mkkmmir_digits``: :class:`~mkclust.algorithms.MKKMMiR` against the ``mkkm-mr`` package (0.2.5,
  2020, unofficial) on the same six kernels, both with lambda = 2^-1, the authors' preparation (kernels
  centred and normalised, H's rows normalised, k-means on them) and their code's H-step on
  sum gamma_p K_p (``h_step="authors"``; the package follows that code). The package needs numpy < 2
  and cvxopt, so this line says ``skipped`` where it is not installed
  (``pip install mkkm-mr`` in an environment with numpy 1.x).

Usage: ``python benchmarks/bench_peers.py [--repeat 10] [--only kkm_digits,sc_digits]``
(``--markdown`` adds the README's table after the JSON lines).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
from sklearn.cluster import KMeans, SpectralClustering as SkSpectral
from sklearn.datasets import load_digits, make_blobs
from sklearn.metrics.pairwise import rbf_kernel
from threadpoolctl import threadpool_limits

from _common import emit  # benchmarks/_common.py
from mkclust.algorithms import (KernelKMeans, KMeansBaseline, MKKM, MKKMMiR, NormalizedCut, RMKKM, SimpleMKKM,
                                SpectralClustering)
from mkclust.metrics import acc


#: seeds of the comparisons whose fits take well under a second (digits' spectral and k-means): their
#: accuracy moves by up to .006 between 10-seed means (which of several near-equal k-means optima each
#: random stream reaches), so they average more
CHEAP_SEEDS = 40


def _tslearn_kkm():
    """tslearn's KernelKMeans class, or None when tslearn is not installed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from tslearn.clustering import KernelKMeans as TsKernelKMeans
    except ImportError:
        return None
    return TsKernelKMeans


def _gaussian(X):
    """A Gaussian kernel of width sigma^2 = the features' total variance (2 sigma^2 in the exponent)."""
    return rbf_kernel(X, gamma=1.0 / (2.0 * X.var() * X.shape[1]))


def _blobs(n):
    return make_blobs(n_samples=n, n_features=50, centers=8, cluster_std=3.0, random_state=0)


def timed(fit, repeat):
    """(median CPU seconds, fitted models) of ``fit(seed)`` for seeds 0 .. ``repeat`` - 1."""
    times, models = [], []
    for seed in range(repeat):
        t = time.process_time()
        models.append(fit(seed))
        times.append(time.process_time() - t)
    return statistics.median(times), models


def standard_error(values) -> float:
    """The standard error of a mean over seeds (0 for a single value)."""
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def kernel_kmeans_objective(K, labels):
    """Kernel k-means' objective of a labelling, sum_i ||phi(x_i) - mean of its cluster||^2, computed
    the same way for every library's labels (their own reported values differ by conventions)."""
    total = float(np.trace(K))
    for c in np.unique(labels):
        idx = labels == c
        total -= K[np.ix_(idx, idx)].sum() / idx.sum()
    return total


def compare(name, y, ours, peer, repeat, peer_name, K=None):
    """Time and score ``ours(seed)`` against ``peer(seed)`` (each returns a fitted model with
    ``labels_``) over ``repeat`` seeds: median CPU seconds, mean accuracy, and with ``K`` the mean
    kernel k-means objective of the labels."""
    t_ours, m_ours = timed(ours, repeat)
    t_peer, m_peer = timed(peer, repeat)
    failed = sum(getattr(m, "labels_", None) is None or len(np.unique(m.labels_)) < len(np.unique(y)) for m in m_peer)
    mean = lambda values: round(float(np.mean(values)), 4)  # noqa: E731
    accs = [acc(y, m.labels_) for m in m_ours]
    peer_accs = [acc(y, m.labels_) for m in m_peer if getattr(m, "labels_", None) is not None]
    rec = dict(benchmark=name, peer=peer_name, n=len(y), seeds=repeat, seconds=round(t_ours, 4),
               peer_seconds=round(t_peer, 4), ratio=round(t_ours / t_peer, 3),
               acc=mean(accs), acc_se=round(standard_error(accs), 4),
               peer_acc=mean(peer_accs), peer_acc_se=round(standard_error(peer_accs), 4),
               peer_failed_fits=int(failed))
    if K is not None:
        rec.update(objective=mean([kernel_kmeans_objective(K, m.labels_) for m in m_ours]),
                   peer_objective=mean([kernel_kmeans_objective(K, m.labels_) for m in m_peer]))
    emit(**rec)
    return rec


def cases(repeat):
    """The comparisons, as (name, thunk returning the record or None when skipped)."""
    Xd, yd = load_digits(return_X_y=True)
    Kd = _gaussian(Xd)
    Tk = _tslearn_kkm()
    out = []

    def kkm(name, K, y, c):
        if Tk is None:
            emit(benchmark=name, skipped="tslearn is not installed (pip install tslearn)")
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # tslearn: "2-Dimensional data passed ..."
            return compare(name, y, lambda seed: KernelKMeans(c, n_init=10, random_state=seed).fit(K),
                           lambda seed: Tk(c, kernel="precomputed", n_init=10, random_state=seed).fit(K),
                           repeat, "tslearn.KernelKMeans", K=K)

    def spectral(name, cls, W, y, c, seeds):
        return compare(name, y, lambda seed: cls(c, random_state=seed).fit(W),
                       lambda seed: SkSpectral(c, affinity="precomputed", random_state=seed).fit(W),
                       seeds, "sklearn.SpectralClustering")

    cheap = max(repeat, CHEAP_SEEDS)

    out.append(("kkm_digits", lambda: kkm("kkm_digits", Kd, yd, 10)))
    Xb, yb = _blobs(5000)
    out.append(("kkm_blobs", lambda: kkm("kkm_blobs", _gaussian(Xb), yb, 8)))
    out.append(("sc_digits", lambda: spectral("sc_digits", SpectralClustering, Kd, yd, 10, cheap)))
    out.append(("nc_digits", lambda: spectral("nc_digits", NormalizedCut, Kd, yd, 10, cheap)))
    Xs, ys = _blobs(4000)
    out.append(("sc_blobs", lambda: spectral("sc_blobs", SpectralClustering, _gaussian(Xs), ys, 8, repeat)))
    out.append(("nc_blobs", lambda: spectral("nc_blobs", NormalizedCut, _gaussian(Xs), ys, 8, repeat)))
    out.append(("km_digits", lambda: compare(
        "km_digits", yd, lambda seed: KMeansBaseline(10, random_state=seed).fit(Xd),
        lambda seed: KMeans(10, n_init=10, random_state=seed).fit(Xd), cheap, "sklearn.KMeans(n_init=10)")))
    widths = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    bank = np.stack([rbf_kernel(Xd, gamma=1.0 / (2.0 * w * Xd.var() * Xd.shape[1])) for w in widths])
    for name, cls in (("mkkm_digits", MKKM), ("rmkkm_digits", RMKKM)):
        out.append((name, lambda name=name, cls=cls: compare(
            name, yd, lambda seed: cls(10, random_state=seed).fit(bank),
            lambda seed: KernelKMeans(10, n_init=1, random_state=seed).fit(bank.mean(axis=0)), repeat,
            "mkclust.KernelKMeans on the mean kernel")))
    out.append(("simplemkkm_digits", lambda: compare(
        "simplemkkm_digits", yd, lambda seed: SimpleMKKM(10, random_state=seed).fit(bank),
        lambda seed: MKKM(10, n_init=10, random_state=seed).fit(bank), repeat, "mkclust.MKKM(n_init=10)")))
    out.append(("mkkmmir_digits", lambda: _mkkm_mr_package(yd, bank, repeat)))
    return out


def _mkkm_mr_package(y, bank, repeat):
    """MKKMMiR (the authors' preparation) against the mkkm-mr package, or a skipped line without it."""
    try:
        from mkkm_mr import mkkm_mr
        from mkkm_mr.lib import calM, kernel_centralize, kernel_normalize
    except ImportError as exc:
        emit(benchmark="mkkmmir_digits", skipped=f"the mkkm-mr package is not installed ({exc}); it needs numpy < 2 "
                                                 "and cvxopt: pip install mkkm-mr in an environment with numpy 1.x")
        return None
    prepared = kernel_normalize(kernel_centralize(bank.copy()))
    M = calM(prepared)

    class _Package:   # it returns H with unit rows; the labels by the same k-means as ours
        def __init__(self, seed):
            H = mkkm_mr(prepared, M, 10, 2.0 ** -1)[0]
            self.labels_ = KMeans(10, n_init=10, random_state=seed).fit(H).labels_

    # its H-step combines the kernels linearly, as the authors' code: h_step="authors" is like for like
    return compare("mkkmmir_digits", y, lambda seed: MKKMMiR(10, h_step="authors", protocol="authors",
                                                             random_state=seed).fit(bank),
                   _Package, repeat, "mkkm-mr 0.2.5")


def markdown(records):
    """The README's performance table from the records."""
    lines = ["| comparison | n | mkclust CPU s | peer CPU s | ratio | accuracy, mean ± se over the seeds "
             "(mkclust / peer) |", "|---|---|---|---|---|---|"]
    for r in records:
        failed = f" ({r['peer_failed_fits']} failed fits)" if r["peer_failed_fits"] else ""
        lines.append(f"| {r['benchmark']} vs {r['peer']} | {r['n']} | {r['seconds']:.3f} | {r['peer_seconds']:.3f} | "
                     f"{r['ratio']:.2f} | {r['acc']:.3f} ± {r['acc_se']:.3f} / {r['peer_acc']:.3f} ± "
                     f"{r['peer_acc_se']:.3f}{failed} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=10,
                    help="seeds: runs per timing (the median is reported) and accuracy (the mean)")
    ap.add_argument("--only", default="", help="comma-separated comparison names (default: all)")
    ap.add_argument("--markdown", action="store_true", help="print the README's table after the JSON lines")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    records = []
    with threadpool_limits(1):
        for name, run in cases(args.repeat):
            if not only or name in only:
                rec = run()
                if rec is not None:
                    records.append(rec)
    if args.markdown:
        print(markdown(records))


if __name__ == "__main__":
    main()
