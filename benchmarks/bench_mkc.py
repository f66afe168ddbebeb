"""MKC speed (not tests). Prints one JSON line per measurement; run single-threaded for comparable
numbers (``OMP_NUM_THREADS=1``).

- ``mkc_ringnorm``: one MKC fit on ringnorm (n = 1000, d = 20, the generator of
  ``mkclust.datasets``), M = 3 (the ``mkc3`` bank): seconds for the kernel PCA (rank-``--rank``
  feature maps) and for the fit, cutting-plane rounds, CCCP iterations per round, seconds inside
  the SOCP solver, accuracy.
- ``mkc_scaling``: CPU seconds of the MKC fit on fixed-rank features against n in ``--sizes``
  (ringnorm, ``--repeats`` fits each, median), and the least-squares slope of log time against
  log n (the paper, Sect. 5.4: linear scaling; our target: slope <= 1.2). The kernel PCA is timed
  separately (``feature_seconds``): its eigendecomposition is cubic in n and is not part of the
  algorithm whose scaling Theorem 3.1 states. The number of rounds varies from fit to fit (it falls
  with n on ringnorm), so the slope of the CPU seconds per CCCP step (one SOCP solve and the O(n D)
  products around it) is reported too.

Usage: ``python benchmarks/bench_mkc.py [--rank 50] [--sizes 250 500 1000 2000 4000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import emit  # benchmarks/_common.py
from mkclust import metrics
from mkclust.algorithms import MKC
from mkclust.datasets import load
from mkclust.kernels import build_bank


def features(n: int, rank: int):
    ds = load("ringnorm_gen", n=n)
    t = time.process_time()
    bank = build_bank("mkc3", ds.X, rank=rank)
    return ds, bank.features, time.process_time() - t


def fit(feats, seed: int = 0) -> tuple[MKC, float]:
    t = time.process_time()
    est = MKC(n_clusters=2, random_state=seed).fit(feats)
    return est, time.process_time() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rank", type=int, default=50, help="feature-map rank per kernel")
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000])
    ap.add_argument("--repeats", type=int, default=3, help="fits per size (different k-means seeds)")
    args = ap.parse_args(argv)

    ds, feats, fsec = features(1000, args.rank)
    est, sec = fit(feats)
    emit(bench="mkc_ringnorm", n=ds.n, n_kernels=len(feats), rank=args.rank, feature_seconds=round(fsec, 3),
         fit_cpu_seconds=round(sec, 3), solver_seconds=round(est.solver_seconds_, 3), rounds=est.n_iter_,
         cccp_per_round=est.cccp_iterations_, acc=metrics.majority_acc(ds.y, est.labels_),
         kernel_weights=np.round(est.kernel_weights_, 3).tolist())

    med, per_step = [], []
    for n in args.sizes:
        ds, feats, fsec = features(n, args.rank)
        runs = [fit(feats, seed) for seed in range(args.repeats)]
        secs = [s for _, s in runs]
        med.append(float(np.median(secs)))
        per_step.append(float(np.median([s / sum(e.cccp_iterations_) for e, s in runs])))
        emit(bench="mkc_scaling", n=n, rank=args.rank, feature_seconds=round(fsec, 3),
             fit_cpu_seconds=[round(s, 3) for s in secs], median=round(med[-1], 3),
             seconds_per_cccp_step=round(per_step[-1], 5),
             rounds=[e.n_iter_ for e, _ in runs], avg_cccp=[round(e.avg_cccp_iterations_, 2) for e, _ in runs],
             acc=[round(metrics.majority_acc(ds.y, e.labels_), 4) for e, _ in runs])
    slope = np.polyfit(np.log(args.sizes), np.log(med), 1)[0]
    step_slope = np.polyfit(np.log(args.sizes), np.log(per_step), 1)[0]
    emit(bench="mkc_scaling_slope", sizes=args.sizes, median_seconds=[round(m, 3) for m in med],
         slope=round(float(slope), 3), seconds_per_cccp_step=[round(m, 5) for m in per_step],
         per_step_slope=round(float(step_slope), 3), target=1.2)


if __name__ == "__main__":
    main()
