"""ODMC's lockstep batch at the paper's size (not tests): the 64 settings (lambda, nu, theta) of one
seed of the paper configuration's ``odmc_table2`` on one data set and kernel of its ``odmc6`` bank,
fitted as one ``ODMC.fit_batch`` on one BLAS thread, exactly the estimators the run job builds
(``imbalanced_balance`` resolved as the runner does). Prints one JSON line per (data set, kernel):

- ``cpu_s``: the batch's CPU seconds; ``limit_s``: the products the algorithm needs (2 n^2 flops per
  distinct label product of a step: K s_i and K s_j, one when i = j; 2 n^2 per label at each duality-gap
  check) at the machine's float64 GEMM rate; ``over_limit`` = cpu_s / limit_s (1 is the arithmetic
  limit; the label generation's Lanczos and swaps come on top of it), ``fraction_of_limit`` its
  inverse; ``product_rank``: n, or the rank of the low-rank factor the products went through;
- with ``--save FILE``: every fit's labels and objective, to compare with ``--compare FILE`` (the
  count of fits whose labels differ, the largest objective difference).

The raw files come from the data mirror (``$MKCLUST_DATA_MIRROR``); data sets and banks are built
once into ``--work``.

    python benchmarks/bench_odmc_paper.py --dataset german --kernels 0 1 2 3 4 5 --save /tmp/g.npz
    python benchmarks/bench_odmc_paper.py --dataset german --kernels 0 --compare /tmp/g.npz
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from _common import built_inputs, emit, gemm_gflops  # benchmarks/_common.py

ROOT = Path(__file__).resolve().parents[1]


def paper_estimators(plan, dataset: str, kernel: int, seed: int, ds):
    """The ODMC estimators of the paper run group (dataset, kernel, seed), as the runner builds them."""
    from mkclust.repro.pseudo import class_imbalance, resolve_balance, split_pseudo
    from mkclust.algorithms import get_estimator

    groups = plan.run_groups()
    keys = [g for g in groups if g[:3] == ("odmc_table2", "ODMC", dataset)]
    runs = [r for g in keys for r in groups[g] if r.seed == seed and split_pseudo(r.params)[1].get("kernel") == kernel]
    if not runs:
        raise SystemExit(f"no ODMC runs of seed {seed} on {dataset}, kernel {kernel}")
    key = keys[0]
    ests, imb = [], class_imbalance(ds.y)
    for r in runs:
        params, pseudo = split_pseudo(r.params)
        resolve_balance(params, pseudo, ds.n, imb)
        params.setdefault("n_clusters", ds.n_classes)
        ests.append(get_estimator(r.estimator, random_state=r.seed, **params))
    return key[3], ests


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", action="append", required=True)
    ap.add_argument("--kernels", type=int, nargs="+", default=[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=Path("/tmp/mkclust_paper_fits"))
    ap.add_argument("--save", type=Path, help="write every fit's labels and objective here (npz)")
    ap.add_argument("--compare", type=Path, help="compare the labels and objectives with a --save file")
    ap.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE",
                    help="an ODMC parameter for every fit (e.g. products=float32)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from mkclust.algorithms import ODMC
    from mkclust.repro.configuration import load
    from mkclust.datasets import Dataset
    from mkclust.repro.planning import plan as make_plan
    from mkclust.kernels import KernelBank

    plan = make_plan(load(ROOT / "workflow/configs/paper.yaml"))
    extra = {}
    for kv in args.set:
        k, v = kv.split("=", 1)
        extra[k] = v
    saved = dict(np.load(args.compare)) if args.compare else {}
    out = {}
    args.work.mkdir(parents=True, exist_ok=True)
    with threadpool_limits(1):
        gemm = gemm_gflops()
        for dataset in args.dataset:
            ds = Dataset.load(built_inputs(plan, args.work, dataset)[0])
            for kernel in args.kernels:
                bank_name, ests = paper_estimators(plan, dataset, kernel, args.seed, ds)
                K = KernelBank.load(built_inputs(plan, args.work, dataset, bank_name)[1]).kernel(kernel)
                for e in ests:
                    e.set_params(**extra)
                t0, c0 = time.perf_counter(), time.process_time()
                ODMC.fit_batch(ests, K)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                n = K.shape[0]
                flops = 0.0
                for e in ests:                   # the products the algorithm needs (see the docstring)
                    distinct = getattr(e, "n_step_products_", 2 * e.n_iter_)
                    checks = sum(nb for _, nb in e.n_labels_trace_)
                    flops += 2.0 * n * n * (distinct + checks)
                limit = flops / (gemm * 1e9)
                tag = f"{dataset}/{kernel}"
                labels = np.array([e.labels_ for e in ests])
                objs = np.array([e.objective_ for e in ests])
                out[f"{tag}/labels"], out[f"{tag}/objective"] = labels, objs
                cmp = {}
                if f"{tag}/labels" in saved:
                    old = saved[f"{tag}/labels"]
                    cmp = dict(compared=len(ests), labels_differ=int((old != labels).any(axis=1).sum()),
                               max_objective_diff=float(np.max(np.abs(saved[f"{tag}/objective"] - objs))))
                emit(bench="odmc_paper_batch", dataset=dataset, kernel=kernel, n=n, fits=len(ests),
                     wall_s=round(wall, 2), cpu_s=round(cpu, 2), gemm_gflops=round(gemm, 2),
                     limit_s=round(limit, 2), over_limit=round(cpu / limit, 2), fraction_of_limit=round(limit / cpu, 3),
                     product_rank=int(getattr(ests[0], "product_rank_", n)),
                     mean_steps=float(np.mean([e.n_iter_ for e in ests])),
                     mean_labels=float(np.mean([len(e.labels_pool_) for e in ests])), **extra, **cmp)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.save.with_name(args.save.name + ".part.npz")
        np.savez(tmp, **out)
        tmp.replace(args.save)


if __name__ == "__main__":
    main()
