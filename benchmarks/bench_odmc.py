"""ODMC and its MMC baselines: the cost of one cell of the ODMC paper's sweep (not tests). Prints one
JSON line per measurement.

- ``odmc_fit``: one ODMC fit (T = 2000 steps, label generation every 100) on two Gaussian blobs at
  each ``--n``: wall seconds, seconds per mirror-descent step, |B|; the paper configuration runs
  640 of these per (data set, kernel).
- ``lgmmc_fit``, ``itersvr_fit``: the same for LG-MMC (seconds per label-generation round) and
  IterSVR (per SVR fit).
- ``gmmc_fit``: GMMC's SDP (SCS, eps 1e-4) at ``--gmmc-n``.

Usage: ``python benchmarks/bench_odmc.py [--n 300 1000 3000] [--gmmc-n 200]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import emit  # benchmarks/_common.py
from mkclust.algorithms import GMMC, LGMMC, ODMC, IterSVR
from mkclust.kernels import gaussian_kernel


def blobs_kernel(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n // 2, 10)), rng.normal(1.5, 1, (n - n // 2, 10))])
    return gaussian_kernel(X, np.sqrt(20.0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, nargs="+", default=[300, 1000, 3000])
    ap.add_argument("--gmmc-n", type=int, default=200)
    args = ap.parse_args(argv)
    for n in args.n:
        K = blobs_kernel(n)
        for name, est in [("odmc_fit", ODMC(random_state=0)), ("lgmmc_fit", LGMMC(C=10.0, random_state=0)),
                          ("itersvr_fit", IterSVR(C=10.0, random_state=0))]:
            t0 = time.perf_counter()
            est.fit(K)
            emit(bench=name, n=n, seconds=time.perf_counter() - t0, n_iter=int(est.n_iter_),
                 seconds_per_iteration=est.seconds_per_iteration_,
                 n_labels=int(len(getattr(est, "labels_pool_", [])) or 0))
    K = blobs_kernel(args.gmmc_n)
    t0 = time.perf_counter()
    est = GMMC(C=1.0).fit(K)
    emit(bench="gmmc_fit", n=args.gmmc_n, seconds=time.perf_counter() - t0, scs_iterations=est.n_iter_,
         status=est.solver_status_)


if __name__ == "__main__":
    main()
