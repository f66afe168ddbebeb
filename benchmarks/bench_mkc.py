"""MKC speed (not tests). Prints one JSON line per measurement; run single-threaded for comparable
numbers (``OMP_NUM_THREADS=1``).

- ``mkc_ringnorm``: one MKC fit on ringnorm (n = 1000, d = 20, the generator of
  ``mkclust.datasets``), M = 3 (the ``mkc3`` bank on z-scored features, Gram matrices): CPU seconds
  of the kernel PCA inside ``fit`` (``feature_seconds``) and of the rest (``solve_seconds``),
  cutting-plane rounds, CCCP iterations per round, seconds inside the SOCP solver, accuracy.
- ``mkc_scaling``: the same against n in ``--sizes`` (``--repeats`` fits each, medians), and the
  least-squares slopes of log time against log n: the paper's CPU time (its footnote 5: kernel PCA
  plus MKC; Sect. 5.4: roughly O(n)), the time without the kernel PCA, the seconds per
  cutting-plane round, and the number of rounds (the two factors of the time without kernel PCA).
  The kernel PCA is rank-``--rank`` Lanczos (``mkclust.kernels.feature_map``), O(n^2) per step.
- ``socp_memory``: one working-set SOCP (2.14) of ``--socp-rows`` rows on D = 12 x 50 features (the
  benchmark configuration's 12 kernels at rank 50; n = 300, random cuts), solved as MKC solves it
  (``_mkc_socp._solve``: canonicalised with the Parameters' values) and through cvxpy's DPP tensor
  (how every fit solved it until 2026-12-02; now only where ``_mkc_socp.compiles_once``): the peak
  memory Python allocated (tracemalloc), the CPU seconds of the first solve, and the largest
  difference between the two solutions.

Usage: ``python benchmarks/bench_mkc.py [--rank 50] [--sizes 250 500 1000 2000 4000] [--repeats 3]
[--socp-rows 16 64]`` (``--sizes`` with no value: the SOCP measurement alone)
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from _common import emit  # benchmarks/_common.py
from mkclust import metrics
from mkclust.algorithms import MKC
from mkclust.algorithms._mkc_socp import _solve, binary_socp
from mkclust.datasets import load
from mkclust.kernels import build_bank


def gram_bank(n: int):
    ds = load("ringnorm_gen", n=n)
    return ds, build_bank("mkc3", ds.X, preprocess="zscore").K


def fit(K, rank: int, seed: int = 0) -> MKC:
    return MKC(n_clusters=2, rank=rank, random_state=seed).fit(K)


def slope(sizes, values) -> float:
    return round(float(np.polyfit(np.log(sizes), np.log(values), 1)[0]), 3)


def socp_memory(rows: int, n: int = 300, kernels: int = 12, rank: int = 50) -> dict:
    """One SOCP of ``rows`` cuts solved both ways (module docstring): peak MB, CPU seconds, difference."""
    rng = np.random.default_rng(0)
    Phi = rng.standard_normal((n, kernels * rank)) / np.sqrt(rank)
    z, cuts = np.sign(rng.standard_normal(n)), (rng.random((rows, n)) < 0.5).astype(float)
    out, sols = {}, {}
    for way in ("values", "dpp"):
        prob, (A, s, r), (v, b, beta, xi) = binary_socp(Phi, [rank] * kernels, rows, 1.0, 0.03 * n)
        A.value, s.value, r.value = (cuts * z) @ Phi / n, cuts @ z / n, cuts.sum(axis=1) / n
        tracemalloc.start()
        t0 = time.process_time()
        _solve(prob, "socp_memory", dpp=way == "dpp")
        out[f"{way}_cpu_seconds"] = round(time.process_time() - t0, 3)
        out[f"{way}_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
        sols[way] = np.append(v.value, b.value)
    out["largest_difference"] = float(np.abs(sols["values"] - sols["dpp"]).max())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rank", type=int, default=50, help="feature-map rank per kernel")
    ap.add_argument("--sizes", type=int, nargs="*", default=[250, 500, 1000, 2000, 4000])
    ap.add_argument("--repeats", type=int, default=3, help="fits per size (different k-means seeds)")
    ap.add_argument("--socp-rows", type=int, nargs="*", default=[16, 64], help="rows of the SOCP measured")
    args = ap.parse_args(argv)

    for rows in args.socp_rows:
        emit(bench="socp_memory", rows=rows, D=600, **socp_memory(rows))
    if not args.sizes:
        return

    ds, K = gram_bank(1000)
    est = fit(K, args.rank)
    emit(bench="mkc_ringnorm", n=ds.n, n_kernels=K.shape[0], rank=args.rank,
         feature_seconds=round(est.feature_seconds_, 3), solve_seconds=round(est.solve_seconds_, 3),
         solver_seconds=round(est.solver_seconds_, 3), rounds=est.n_iter_, cccp_per_round=est.cccp_iterations_,
         acc=metrics.majority_acc(ds.y, est.labels_), kernel_weights=np.round(est.kernel_weights_, 3).tolist())

    cols = {"cpu_seconds": [], "solve_seconds": [], "seconds_per_round": [], "rounds": []}
    for n in args.sizes:
        ds, K = gram_bank(n)
        fits = [fit(K, args.rank, seed) for seed in range(args.repeats)]
        per = {"cpu_seconds": [e.feature_seconds_ + e.solve_seconds_ for e in fits],
               "solve_seconds": [e.solve_seconds_ for e in fits],
               "seconds_per_round": [e.solve_seconds_ / e.n_iter_ for e in fits],
               "rounds": [e.n_iter_ for e in fits]}
        for k, v in per.items():
            cols[k].append(float(np.median(v)))
        emit(bench="mkc_scaling", n=n, rank=args.rank, **{k: [round(x, 4) for x in v] for k, v in per.items()},
             feature_seconds=[round(e.feature_seconds_, 3) for e in fits],
             avg_cccp=[round(e.avg_cccp_iterations_, 2) for e in fits],
             acc=[round(metrics.majority_acc(ds.y, e.labels_), 4) for e in fits])
    emit(bench="mkc_scaling_slope", sizes=args.sizes, medians={k: [round(x, 4) for x in v] for k, v in cols.items()},
         slopes={k: slope(args.sizes, v) for k, v in cols.items()}, target="0 < cpu_seconds slope <= 1.3")


if __name__ == "__main__":
    main()
