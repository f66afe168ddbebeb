"""RMKKM, MKKM and AASC speed (not tests). Prints one JSON line per measurement.

- ``rmkkm_iteration``: seconds per Algorithm 1 iteration at n = 1440, m = 12, c = 20 (COIL20's size,
  the paper's 12-kernel bank), from ``--iters`` iterations with tol = 0 on the centred bank (the
  centring and the first objective, once per fit, subtracted); the flop count is that of the batched
  product K A (2 m n^2 c), which dominates: its rate against the machine's GEMM rate
  (``fraction_of_gemm``) and, since a product with c = 20 columns reads all of K for 2c flops per
  value, the rate K is read at against the machine's memory read rate (``fraction_of_read``).
- ``mkkm_iteration``: the same for MKKM (assignment + weight update).
- ``aasc_iteration``: one AASC alternation (an eigendecomposition of the aggregated Laplacian,
  O(n^3), plus the m Laplacian traces).

Usage: ``python benchmarks/bench_rmkkm.py [--n 1440] [--c 20] [--iters 10]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import emit, rate  # benchmarks/_common.py
from mkclust.algorithms import AASC, MKKM
from mkclust.algorithms.rmkkm import _centred, robust_mkkm
from mkclust.kernels import build_bank



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1440)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--c", type=int, default=20)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    # clustered synthetic data of COIL20's shape: c centres plus noise
    centres = rng.normal(size=(args.c, args.d))
    X = centres[rng.integers(0, args.c, args.n)] + 0.7 * rng.normal(size=(args.n, args.d))
    K = build_bank("rmkkm12", X, preprocess="unit").gram()
    m, n, c = K.shape[0], args.n, args.c
    flops = 2.0 * m * n * n * c
    labels0 = rng.integers(0, c, n)
    Kc = _centred(K)   # once per fit (restarts share it); the iterations alone are timed
    *_, n_iter = robust_mkkm(Kc, labels0, c, 0.3, max_iter=1, tol=0.0, centred=True)   # the set-up's share
    t = time.perf_counter()
    robust_mkkm(Kc, labels0, c, 0.3, max_iter=1, tol=0.0, centred=True)
    one = time.perf_counter() - t
    t = time.perf_counter()
    *_, trace, n_iter = robust_mkkm(Kc, labels0, c, 0.3, max_iter=args.iters + 1, tol=0.0, centred=True)
    sec = (time.perf_counter() - t - one) / max(n_iter - 1, 1)
    emit(bench="rmkkm_iteration", n=n, m=m, c=c, iterations=n_iter - 1, seconds_per_iteration=round(sec, 5),
         **rate(flops, sec, Kc.nbytes), objective_first_last=[trace[0], trace[-1]])
    t = time.perf_counter()
    est = MKKM(n_clusters=c, max_iter=args.iters, tol=0.0, random_state=0).fit(K)
    sec = (time.perf_counter() - t) / max(est.n_iter_, 1)
    emit(bench="mkkm_iteration", n=n, m=m, c=c, iterations=est.n_iter_, seconds_per_iteration=round(sec, 5))
    t = time.perf_counter()
    est = AASC(n_clusters=c, max_iter=3, tol=0.0, random_state=0).fit(K)
    sec = (time.perf_counter() - t) / max(est.n_iter_, 1)
    emit(bench="aasc_iteration", n=n, m=m, c=c, iterations=est.n_iter_, seconds_per_iteration=round(sec, 4),
         note="includes the final embedding and k-means, spread over the iterations")


if __name__ == "__main__":
    main()
