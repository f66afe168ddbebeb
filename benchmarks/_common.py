"""What every benchmark prints: one JSON line per measurement, with the interpreter, numpy and the
BLAS thread count it ran with; and the machine's measured float64 GEMM rate, the limit a hot
kernel's rate is compared with (``fraction_of_gemm``). Imported by the ``bench_*.py`` scripts (run
from the repository root: ``python benchmarks/bench_<name>.py``)."""

from __future__ import annotations

import functools
import json
import platform
import time

import numpy as np
from threadpoolctl import threadpool_info


def emit(**rec):
    rec.update(python=platform.python_version(), numpy=np.__version__,
               blas_threads=max((p["num_threads"] for p in threadpool_info()), default=None))
    print(json.dumps(rec), flush=True)


@functools.lru_cache(maxsize=None)
def gemm_gflops(n: int = 2000, repeats: int = 5) -> float:
    """The machine's float64 matrix-product rate in GFLOP/s with the BLAS threads in use: the best of
    ``repeats`` products of two n x n matrices (2 n^3 flops each), after one warm-up."""
    rng = np.random.default_rng(0)
    A, B = rng.random((n, n)), rng.random((n, n))
    A @ B
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        A @ B
        best = min(best, time.perf_counter() - t)
    return 2.0 * n ** 3 / best / 1e9


@functools.lru_cache(maxsize=None)
def read_gbs(mb: int = 400, repeats: int = 5) -> float:
    """The machine's memory read rate in GB/s: the best of ``repeats`` sums over an array of ``mb`` MB
    (far beyond the caches), after one warm-up."""
    a = np.ones(mb * 2**20 // 8)
    a.sum()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t)
    return a.nbytes / best / 1e9


def rate(flops: float, seconds: float, bytes_read: float | None = None) -> dict:
    """A hot kernel's rate beside the machine's limits: ``gflops`` against ``gemm_gflops`` (their
    ratio ``fraction_of_gemm``) and, for a kernel that must read ``bytes_read`` from memory (a thin
    product reading an n x n matrix for a few columns is bound by memory, not by arithmetic), ``gbs``
    against ``read_gbs`` (``fraction_of_read``)."""
    g, limit = flops / seconds / 1e9, gemm_gflops()
    out = {"gflops": round(g, 2), "gemm_gflops": round(limit, 2), "fraction_of_gemm": round(g / limit, 3)}
    if bytes_read:
        b, peak = bytes_read / seconds / 1e9, read_gbs()
        out.update(gbs=round(b, 2), read_gbs=round(peak, 2), fraction_of_read=round(b / peak, 3))
    return out


def built_inputs(plan, work, dataset: str, bank: str | None = None):
    """(data set file, bank file or None) of a planned data set and bank under ``work``, each built
    the way the workflow builds it (its raw files from the data mirror) when not there yet: the
    paper-size benchmarks share them."""
    from mkclust.datasets import Dataset
    from mkclust.repro.inputs import make_bank, make_dataset

    ds_path = work / f"{dataset}.npz"
    if not ds_path.exists():
        make_dataset(plan.inputs.dataset_spec(dataset)).save(ds_path)
    if bank is None or bank == "none":
        return ds_path, None
    bank_path = work / f"{dataset}_{bank}.npz"
    if not bank_path.exists():
        make_bank(plan.inputs.bank_spec(bank, dataset), Dataset.load(ds_path)).save(bank_path)
    return ds_path, bank_path
