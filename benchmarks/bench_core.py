"""Core speed measurements (not tests). Prints one JSON line per measurement.

- ``gram``: the one Gram product X X' a bank is built from (2 n^2 d flops).
- ``build_bank_rmkkm12``: the whole 12-kernel bank at n = 1440, d = 1024 (COIL20's size), with
  the GFLOP/s of its Gram product relative to the bank's total time.
- ``kernel_product``: K E for one kernel and for 6 kernels of the bank, as :func:`kernel_product`
  computes it, beside the plain ``K @ E`` (``plain_seconds``).
- ``kkm_iteration``: one kernel k-means iteration at n = 1440, c = 20: the (n, n) x (n, c) product
  K E (2 n^2 c flops) plus the O(nc) assignment work.

Usage: ``python benchmarks/bench_core.py [--n 1440] [--d 1024] [--c 20] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import emit  # benchmarks/_common.py
from mkclust.algorithms.kmeans import cluster_distances, kernel_kmeans, kernel_product
from mkclust.kernels import build_bank, gram


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times)), out



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1440)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--c", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    n, d, c, r = args.n, args.d, args.c, args.repeat
    rng = np.random.default_rng(0)
    X = rng.random((n, d))  # non-negative, like image pixels

    best, med, _ = best_of(lambda: gram(X), r)
    emit(benchmark="gram", n=n, d=d, seconds=best, median_seconds=med, gflops=2 * n * n * d / best / 1e9)

    best, med, bank = best_of(lambda: build_bank("rmkkm12", X, preprocess="unit"), max(1, r // 2))
    emit(benchmark="build_bank_rmkkm12", n=n, d=d, m=bank.n_kernels, seconds=best, median_seconds=med,
         gflops=2 * n * n * d / best / 1e9, bytes=int(bank.K.nbytes))

    K = bank.K[3]
    diag = np.diag(K).copy()
    labels = rng.integers(0, c, n)
    E = np.zeros((n, c))
    E[np.arange(n), labels] = 1.0
    best, med, _ = best_of(lambda: K @ E, r * 4)
    emit(benchmark="kkm_product_KE", n=n, c=c, seconds=best, median_seconds=med, gflops=2 * n * n * c / best / 1e9)

    for name, m_k in (("kernel", 1), ("bank", 6)):   # K A as stored against (A' K')' (kernel_product)
        B = bank.K[:m_k] if m_k > 1 else K
        rows = B.reshape(-1, n)
        plain, _, _ = best_of(lambda: rows @ E, r * 4)
        best, med, _ = best_of(lambda: kernel_product(B, E), r * 4)
        emit(benchmark="kernel_product", of=name, m=m_k, n=n, c=c, seconds=best, median_seconds=med,
             plain_seconds=plain, gflops=2 * m_k * n * n * c / best / 1e9)

    best, med, _ = best_of(lambda: cluster_distances(K, diag, labels, c), r * 4)
    emit(benchmark="kkm_iteration", n=n, c=c, seconds=best, median_seconds=med, gflops=2 * n * n * c / best / 1e9)

    t = time.perf_counter()
    _, obj, trace, n_iter = kernel_kmeans(K, labels, c, max_iter=100, diag=diag)
    secs = time.perf_counter() - t
    emit(benchmark="kkm_fit_random_partition", n=n, c=c, seconds=secs, n_iter=n_iter,
         seconds_per_iteration=secs / max(n_iter + 1, 1), objective=obj)


if __name__ == "__main__":
    main()
