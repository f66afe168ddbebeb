"""ODMC and its MMC baselines: the cost of one cell of the ODMC paper's sweep (not tests). Prints one
JSON line per measurement.

- ``odmc_fit``: one ODMC fit (T = 2000 steps, label generation every 100) on two Gaussian blobs at
  each ``--n``: wall seconds, seconds per mirror-descent step, |B|; the paper configuration runs
  640 of these per (data set, kernel).
- ``lgmmc_fit``, ``itersvr_fit``: the same for LG-MMC (seconds per label-generation round) and
  IterSVR (per SVR fit).
- ``gmmc_fit``: GMMC's SDP at ``--gmmc-n`` by each solver: the interior point (eps 1e-7, Newton
  steps) and SCS (eps 1e-4, iterations), seconds and the SDP value each.
- ``gmmc_path`` (``--gmmc-path``): the paper's C grid {1, 10, 100, 1000} at ``--gmmc-n`` with SCS,
  solved cold one C at a time and as ``GMMC.fit_batch``'s warm-started path: SCS iterations and
  seconds per C each way, and whether the labels agree.
- ``odmc_batch`` (``--batch B``): B fits of the paper's grid (lambda, nu, theta; seeds beyond 64) in
  one ``ODMC.fit_batch`` against the same fits one at a time (``--alone`` of them, the rest
  extrapolated): seconds per fit each way, and whether the labels agree; the lockstep step's rate
  (one GEMM S K per step, 4 n^2 flops per chain, over the batch's whole time) against the machine's
  GEMM rate (``fraction_of_gemm``), and K read once per lockstep step against its memory read rate.

Usage: ``python benchmarks/bench_odmc.py [--n 300 1000 3000] [--gmmc-n 200] [--batch 64 --alone 8]
[--gmmc-path]``
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from _common import emit, rate  # benchmarks/_common.py
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
    ap.add_argument("--batch", type=int, default=0, help="measure ODMC.fit_batch on this many fits instead")
    ap.add_argument("--alone", type=int, default=8, help="of which this many are also fitted one at a time")
    ap.add_argument("--gmmc-path", action="store_true", help="measure GMMC's warm-started C path instead")
    args = ap.parse_args(argv)
    if args.batch:
        return batch(args)
    if args.gmmc_path:
        return gmmc_path(args.gmmc_n)
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
    for solver in ("ipm", "scs"):
        t0 = time.perf_counter()
        est = GMMC(C=1.0, solver=solver).fit(K)
        emit(bench="gmmc_fit", n=args.gmmc_n, solver=solver, seconds=time.perf_counter() - t0,
             iterations=est.n_iter_, value=est.objective_, status=est.solver_status_)


def gmmc_path(n: int):
    K = blobs_kernel(n)
    Cs = [1.0, 10.0, 100.0, 1000.0]
    cold = [GMMC(C=C, solver="scs").fit(K) for C in Cs]
    warm = GMMC.fit_batch([GMMC(C=C, solver="scs") for C in Cs], K)
    for C, c, w in zip(Cs, cold, warm):  # SCS's own seconds both ways
        emit(bench="gmmc_path", n=n, C=C, cold_iterations=c.n_iter_, cold_seconds=c.solver_seconds_,
             warm_iterations=w.n_iter_, warm_seconds=w.solver_seconds_,
             labels_equal=bool((c.labels_ == w.labels_).all()))


def batch(args):
    grid = list(itertools.product([1, 10, 100, 1000], [0.2, 0.4, 0.6, 0.8], [0.2, 0.4, 0.6, 0.8]))
    settings = [(lam, nu, th, seed) for seed in range(args.batch // len(grid) + 1) for lam, nu, th in grid]
    settings = settings[:args.batch]
    for n in args.n:
        K = blobs_kernel(n)

        def make():
            return [ODMC(lam=lam, nu=nu, theta=th, random_state=seed) for lam, nu, th, seed in settings]
        ests = make()
        t0 = time.perf_counter()
        ODMC.fit_batch(ests, K)
        batched = time.perf_counter() - t0
        alone = make()[:args.alone]
        t0 = time.perf_counter()
        for e in alone:
            e.fit(K)
        single = (time.perf_counter() - t0) / max(len(alone), 1)
        steps = sum(int(e.n_iter_) for e in ests)   # each chain's step: S K with two rows of S (4 n^2 flops)
        emit(bench="odmc_batch", n=n, fits=len(ests), seconds=batched, seconds_per_fit=batched / len(ests),
             **rate(4.0 * n * n * steps, batched, 8.0 * n * n * max(int(e.n_iter_) for e in ests)),
             seconds_per_fit_alone=single, speedup=single * len(ests) / batched,
             labels_equal=sum(bool((a.labels_ == b.labels_).all()) for a, b in zip(alone, ests)),
             compared=len(alone), mean_steps=float(np.mean([e.n_iter_ for e in ests])))


if __name__ == "__main__":
    main()
