"""SCMK speed (not tests). Prints one JSON line per measurement.

- ``scmk_outer_iteration``: seconds per SCMK outer iteration (Algorithm 2: K_w, the P-step, the
  batched Z-step, h and w) at n = 1404, m = 12, c = 36 (BA's size, the 12-kernel bank), alpha =
  1e-5, beta = 1e-6, from one fit of ``--iters`` outer iterations; with the Z-step iterations of
  each outer iteration and the seconds per Z-step iteration; the rate counts one dense K Z product
  (2 n^3) per Z-step iteration over the outer iterations' whole time (P-step, h and w included),
  against the machine's GEMM rate (``fraction_of_gemm``).
- ``scmk_routes``: one SCMK fit (n_init = 10, random_state = 0, its defaults otherwise) with the
  Z-step's column route (the default) and with the whole-matrix method alone (``columns=False``):
  CPU seconds of each (one thread where the BLAS honours ``OMP_NUM_THREADS=1``), both objectives,
  whether the labels are identical and the largest |dZ|. On the benchmark's 12-kernel bank, one
  thread, labels identical, J to 5e-11: optdigits 79.6 -> 7.2 s, COIL20 281.1 -> 15.8 s, fourclass
  475.7 -> 8.0 s (``--routes`` takes a kernel bank file of the workflow, ``kernels/<set>/bench12.npz``,
  and its processed data for the classes).
- ``zstep_vs_cvxpy``: one Z-step (Eq. 11 for all n columns, from Z = I) at n = 400 (ORL's size):
  the batched FISTA solver against cvxpy solving the n column QPs one by one (Clarabel; one
  parametrised problem, so only the solves are timed), with the largest |dz| and the relative
  objective difference between the two.

Data: synthetic clustered data of the paper set's shape (c centres plus noise, unit rows, the
``rmkkm12`` bank), or the real set with ``--dataset BA`` / ``--dataset ORL`` when the data mirror
($MKCLUST_DATA_MIRROR) holds it.

Usage: ``python benchmarks/bench_scmk.py [--iters 12] [--cvxpy-columns 400] [--dataset BA]
[--routes BANK.npz PROCESSED.npz]``
"""

from __future__ import annotations

import argparse
import functools
import time

import cvxpy as cp
import numpy as np

from _common import emit, rate  # benchmarks/_common.py
import mkclust.algorithms.scmk as scmk_module
from mkclust.algorithms import SCMK
from mkclust.algorithms._zstep import z_step
from mkclust.algorithms.scmk import double_centre, p_step, pairwise_sq
from mkclust.datasets import load
from mkclust.kernels import KernelBank, build_bank



def bank(name: str, n: int, d: int, c: int, real: bool):
    if real:
        ds = load(name, variant="authors") if name == "ORL" else load(name)
        X = ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X
        prep = "zscore_unit" if name == "ORL" else "unit"
        return build_bank("rmkkm12", X, preprocess=prep).gram(), ds.n_classes, name
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(c, d))
    X = centres[rng.integers(0, c, n)] + 0.7 * rng.normal(size=(n, d))
    return build_bank("rmkkm12", X, preprocess="unit").gram(), c, f"synthetic {n} x {d}, {c} clusters"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--iters", type=int, default=12, help="SCMK outer iterations to time")
    ap.add_argument("--cvxpy-columns", type=int, default=400,
                    help="columns solved by cvxpy (all 400 by default; fewer are extrapolated)")
    ap.add_argument("--dataset", choices=["BA", "ORL"], help="use the real set from the data mirror")
    ap.add_argument("--routes", nargs=2, metavar=("BANK", "PROCESSED"),
                    help="time one SCMK fit on this bank by both Z-step routes, then stop")
    args = ap.parse_args(argv)
    if args.routes:
        routes(*args.routes)
        return

    K, c, source = bank("BA", 1404, 320, 36, args.dataset == "BA")
    t = time.perf_counter()
    est = SCMK(n_clusters=c, alpha=1e-5, beta=1e-6, max_iter=args.iters, min_iter=args.iters, n_init=10,
               random_state=0).fit(K)
    total = time.perf_counter() - t
    sec = np.asarray(est.iteration_seconds_)
    zit = np.asarray(est.z_step_iters_)
    emit(bench="scmk_outer_iteration", data=source, n=K.shape[1], m=K.shape[0], c=c, iterations=est.n_iter_,
         seconds_per_iteration_mean=round(float(sec.mean()), 3),
         seconds_per_iteration_median=round(float(np.median(sec)), 3),
         seconds_per_iteration=[round(float(x), 3) for x in sec], zstep_iterations=zit.tolist(),
         seconds_per_zstep_iteration=round(float(sec.sum() / max(zit.sum(), 1)), 4), fit_seconds_total=round(total, 2),
         **rate(2.0 * K.shape[1] ** 3 * zit.sum(), sec.sum()))

    K, c, source = bank("ORL", 400, 1024, 40, args.dataset == "ORL")
    Kc = double_centre(K)
    n = K.shape[1]
    w = np.full(K.shape[0], 1.0 / K.shape[0])  # Algorithm 2's first K_w, and its first Z-step
    Kw = np.tensordot(w, Kc, axes=1)
    alpha, beta = 1e-3, 1e-6
    rng = np.random.default_rng(0)
    Z = rng.uniform(size=(n, n))  # a stand-in Z for the P of the timed Z-step
    B = 0.5 * beta * pairwise_sq(p_step(Z / Z.sum(axis=0), c)[0])
    t = time.perf_counter()
    res = z_step(Kw, B, alpha, np.eye(n), tol=1e-6, max_iter=5000)
    batched = time.perf_counter() - t
    lam, U = np.linalg.eigh(Kw)
    R = (U * np.sqrt(np.clip(lam, 0, None))).T
    z, q = cp.Variable(n), cp.Parameter(n)
    prob = cp.Problem(cp.Minimize(alpha * cp.sum_squares(z) + cp.sum_squares(R @ z) + q @ z), [z >= 0, cp.sum(z) == 1])
    cols = np.arange(min(args.cvxpy_columns, n))
    Zc = np.zeros((n, cols.size))
    t = time.perf_counter()
    for j, i in enumerate(cols):
        q.value = B[:, i] - 2 * Kw[:, i]
        prob.solve(solver="CLARABEL")
        Zc[:, j] = z.value
    per_col = (time.perf_counter() - t) / cols.size

    def col_obj(Z, idx):
        return (alpha * (Z * Z).sum(0) + (Z * (Kw @ Z)).sum(0) - 2 * (Kw[:, idx] * Z).sum(0)
                + (B[:, idx] * Z).sum(0) + Kw[idx, idx])

    ours, theirs = col_obj(res.Z[:, cols], cols), col_obj(Zc, cols)
    emit(bench="zstep_vs_cvxpy", data=source, n=n, alpha=alpha, beta=beta, batched_seconds=round(batched, 3),
         batched_iterations=res.n_iter, batched_relative_gap=float(res.gap / res.objective),
         cvxpy_columns_solved=int(cols.size), cvxpy_seconds_per_column=round(per_col, 4),
         cvxpy_seconds_all_columns=round(per_col * n, 2), speedup=round(per_col * n / batched, 1),
         max_abs_dz=float(np.abs(res.Z[:, cols] - Zc).max()),
         objective_rel_diff=float((ours.sum() - theirs.sum()) / theirs.sum()))


def routes(bank_file: str, processed: str) -> None:
    """The ``scmk_routes`` measurement (module docstring)."""
    K = KernelBank.load(bank_file).K
    c = int(np.unique(np.load(processed)["y"]).size)
    fits = {}
    plain = scmk_module.z_step
    for name, step in (("columns", plain), ("whole_matrix", functools.partial(plain, columns=False))):
        scmk_module.z_step = step
        try:
            t = time.process_time()
            est = SCMK(n_clusters=c, n_init=10, random_state=0).fit(K)
            fits[name] = (time.process_time() - t, est)
        finally:
            scmk_module.z_step = plain
    (tc, a), (tw, b) = fits["columns"], fits["whole_matrix"]
    emit(bench="scmk_routes", bank=bank_file, n=K.shape[1], m=K.shape[0], c=c, cpu_columns=round(tc, 1),
         cpu_whole_matrix=round(tw, 1), ratio=round(tc / tw, 3), objective_columns=a.objective_,
         objective_whole_matrix=b.objective_, labels_identical=bool(np.array_equal(a.labels_, b.labels_)),
         max_abs_dz=float(np.abs(a.Z_ - b.Z_).max()), zstep_iterations_columns=a.z_step_iters_,
         zstep_iterations_whole_matrix=b.z_step_iters_)


if __name__ == "__main__":
    main()
