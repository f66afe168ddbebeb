"""Fits of the paper configuration measured against the cost estimate's typical times (not tests): the
check that ``mkclust estimate workflow/configs/paper.yaml`` holds at the papers' sizes,
where the calibration (on the default run's small sets) extrapolates in n.

For each ``--group EXPERIMENT/ALGORITHM/DATASET`` it builds the data set and bank as the workflow does
(raw files from the data mirror, ``$MKCLUST_DATA_MIRROR``), takes the first ``--runs`` runs of the
group's first input (e.g. one kernel's grid for ODMC, fitted as the run job fits them: the first
alone, the rest in one lockstep batch), fits them on one thread and prints the fits' measured CPU
seconds beside :func:`mkclust.repro.resources.group_seconds` (typical) for the same runs, and the job's CPU
seconds around them (loading, the PSD check of each kernel, metrics).

    python benchmarks/bench_paper_fits.py --group odmc_table2/ODMC/splice --runs 32 \\
        --group odmc_table2/LG-MMC/splice --runs 1 --work /tmp/paperfits

``--spread`` takes the ``--runs`` runs evenly spaced over the group instead of its first (a group's
first runs can share one parameter value: ODMC's first 64 on a kernel are all lambda = 1).
``--config`` takes another configuration (``config.yaml`` for the default run's groups), ``--runs 0``
every run of the group's first input, ``--all-inputs`` every input of the group. ``--save FILE``
keeps every fit's labels and objective, ``--compare FILE`` counts the fits whose labels differ from a
saved run and the largest relative objective difference: a speed change checked for equal results.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from _common import built_inputs, emit  # benchmarks/_common.py

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--group", action="append", required=True,
                    help="EXPERIMENT/ALGORITHM/DATASET[/KERNEL] of the configuration "
                         "(KERNEL: the group of that kernel index)")
    ap.add_argument("--runs", action="append", type=int, help="runs of each group to fit (default 1)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/mkclust_paper_fits"), help="where data sets and banks go")
    ap.add_argument("--config", type=Path, default=ROOT / "workflow/configs/paper.yaml")
    ap.add_argument("--all-inputs", action="store_true", help="every input of the group, not only its first")
    ap.add_argument("--spread", action="store_true",
                    help="the --runs runs evenly spaced over the group (all of its settings and seeds), not its first")
    ap.add_argument("--save", type=Path, help="write every fit's labels and objective here (npz)")
    ap.add_argument("--compare", type=Path, help="compare labels and objectives with a --save file")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    import mkclust.repro.resources as RES
    from mkclust.repro.pseudo import input_key, split_pseudo
    from mkclust.repro.configuration import load
    from mkclust.repro.planning import plan
    from mkclust.repro.runner import run_group

    import numpy as np

    p = plan(load(args.config))
    saved = dict(np.load(args.compare)) if args.compare else {}
    out = {}
    groups = p.run_groups()
    counts = args.runs or []
    args.work.mkdir(parents=True, exist_ok=True)
    for i, spec in enumerate(args.group):
        exp, alg, dataset, *kernel = spec.split("/")
        keys = [g for g in groups if g[:3] == (exp, alg, dataset)
                and (not kernel or split_pseudo(groups[g][0].params)[1].get("kernel") == int(kernel[0]))]
        if not keys:
            raise SystemExit(f"no run group {spec} in {args.config}")
        key = keys[0]
        runs = groups[key]
        first = input_key(split_pseudo(runs[0].params)[1])
        if not args.all_inputs:
            runs = [r for r in runs if input_key(split_pseudo(r.params)[1]) == first]
        count = counts[i] if i < len(counts) else 1
        if count and args.spread:
            runs = [runs[int(i * len(runs) / count)] for i in range(min(count, len(runs)))]
        runs = runs[:count] if count else runs
        ds_path, bank_path = built_inputs(p, args.work, dataset, key[3])
        with threadpool_limits(1):
            t0, c0 = time.perf_counter(), time.process_time()
            recs = run_group(runs, ds_path, bank_path)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        n = recs[0]["n"]
        rank = None if key[3] == "none" else RES.bank_rank(n, p.inputs.bank_landmarks(key[3]))
        est = RES.group_seconds(runs, n, typical=True, n_classes=recs[0]["n_clusters"], input_rank=rank)
        fit_cpu = sum(r.get("cpu_seconds") or 0 for r in recs)
        tag = "/".join(key)
        labels = np.array([r["labels"] or [-1] * n for r in recs])
        objs = np.array([np.nan if r["objective"] is None else float(np.ravel(r["objective"])[-1]) for r in recs])
        out[f"{tag}/labels"], out[f"{tag}/objective"] = labels, objs
        cmp = {}
        if f"{tag}/labels" in saved:
            old, oldo = saved[f"{tag}/labels"], saved[f"{tag}/objective"]
            rel = np.abs(oldo - objs) / np.maximum(np.abs(oldo), 1e-12)
            cmp = dict(compared=len(recs), labels_differ=int((old != labels).any(axis=1).sum()),
                       max_rel_objective_diff=float(np.nanmax(rel)) if np.isfinite(rel).any() else None)
        emit(bench="paper_fit", group="/".join(key), n=n, runs=len(runs), job_cpu_s=round(cpu, 1),
             wall_s=round(wall, 1), fit_cpu_s=round(fit_cpu, 1), estimated_fit_s=round(est, 1),
             measured_over_estimated=round(fit_cpu / est, 2) if est else None,
             statuses=sorted({r["status"] for r in recs}), **cmp)
    if args.save:
        tmp = args.save.with_name(args.save.name + ".part.npz")
        np.savez(tmp, **out)
        tmp.replace(args.save)


if __name__ == "__main__":
    main()
