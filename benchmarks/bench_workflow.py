"""Where a workflow run's time goes (not a test): per rule the jobs, their summed wall time, the part
spent inside the job's body (from the job's own log) and, for run jobs, the fits' seconds, so the rest
(interpreter start-up, imports, Snakemake's script set-up) is visible; then, per experiment, the
measured CPU seconds beside ``mkclust estimate``'s estimate and their ratio.

    python benchmarks/bench_workflow.py --run /tmp/wf      # the README's run command, timed, in a fresh
                                                           # clone of this checkout's HEAD at /tmp/wf
    python benchmarks/bench_workflow.py --run /tmp/wf --record docs/figures/default_run.json
                                                           # and the measurement the README's numbers are
    python benchmarks/bench_workflow.py --dir /tmp/wf      # reports an existing run (its snakemake.log)
    python benchmarks/bench_workflow.py --dir /tmp/wf --calibrate   # and each estimator's typical_at_1000

The run's directory keeps ``snakemake.log`` (Snakemake's own output, whose job start and finish lines
have one-second resolution; summed over hundreds of jobs the rounding cancels out). Prints one JSON line
per rule, one per experiment and a total, as the other benchmarks.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from _common import emit  # benchmarks/_common.py
from mkclust.repro import resources as RES
from mkclust.algorithms import ALGORITHMS
from mkclust.repro.configuration import load
from mkclust.repro.estimate import JOB_SECONDS, estimate
from mkclust.repro.records import load_records
from mkclust.repro.run_spec import Run

ROOT = Path(__file__).resolve().parents[1]
_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]{8} \d{4})\]$")
_RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
_LOG = re.compile(r"^\s+log: (\S+)")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_DONE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")
_LOGLINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO mkclust\.job\.\w+: (start|done) ")


def job_walls(log_path: Path) -> dict[int, tuple[str, float, str | None]]:
    """jobid -> (rule, wall seconds, the job's log file) from Snakemake's log: each job's start block
    (its rule, ``log:`` and ``jobid:`` lines) and its ``Finished jobid`` line, both after a ``[date]``
    line."""
    starts, walls, stamp, rule, log = {}, {}, None, None, None
    for line in log_path.read_text().splitlines():
        if m := _STAMP.match(line.strip()):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
        elif m := _RULE.match(line):
            rule, log = m.group(1), None
        elif m := _LOG.match(line):
            log = m.group(1)
        elif (m := _JOBID.match(line)) and rule:
            starts[int(m.group(1))] = (rule, stamp, log)
            rule = None
        elif m := _DONE.match(line):
            jid = int(m.group(1))
            if jid in starts:
                rule_, start, log_ = starts[jid]
                walls[jid] = (rule_, stamp - start, log_)
    return walls


def body_seconds(log_file: Path) -> float | None:
    """Seconds between a job's ``start`` and ``done`` lines (:func:`mkclust.repro.jobs.job`)."""
    t = {}
    for line in log_file.read_text(errors="replace").splitlines():
        if m := _LOGLINE.match(line):
            t[m.group(2)] = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return t["done"] - t["start"] if len(t) == 2 else None


def record_groups(data: Path) -> list[list[dict]]:
    """The run records of a finished run, one list per records file (one run job)."""
    return [load_records([f]) for f in sorted((data / "runs").rglob("*.json"))]


def report(wf: Path, groups: list[list[dict]], wall: float | None = None) -> None:
    data = wf / "data"
    walls = job_walls(wf / "snakemake.log")
    per_rule = defaultdict(lambda: {"jobs": 0, "wall_s": 0.0, "body_s": 0.0})
    for rule, w, log in walls.values():
        per_rule[rule]["jobs"] += 1
        per_rule[rule]["wall_s"] += w
        if log and (wf / log).is_file():
            per_rule[rule]["body_s"] += body_seconds(wf / log) or 0.0
    fit_cpu, fit_wall, job_cpu, jobs = defaultdict(float), defaultdict(float), defaultdict(float), defaultdict(int)
    by_group = defaultdict(lambda: [0, 0.0])   # (experiment, algorithm, data set) -> fits, fit CPU seconds
    for recs in groups:
        exp = recs[0]["experiment"]
        jobs[exp] += 1
        fit_wall[exp] += sum(r.get("fit_seconds") or 0.0 for r in recs)
        for r in recs:
            cpu = r.get("cpu_seconds") or 0.0
            fit_cpu[exp] += cpu
            tally = by_group[f"{exp} {r['algorithm']} {r['dataset']}"]
            tally[0] += 1
            tally[1] += cpu
    for f in (data / "benchmarks" / "runs").rglob("*.tsv"):
        exp = f.relative_to(data / "benchmarks" / "runs").parts[0]
        row = f.read_text().splitlines()[1].split("\t")
        job_cpu[exp] += float(row[-1]) if row[-1] not in ("", "NA", "-") else 0.0
    if "run" in per_rule:
        per_rule["run"]["fit_wall_s"] = sum(fit_wall.values())
        per_rule["run"]["fit_cpu_s"] = sum(fit_cpu.values())
    for rule, v in per_rule.items():
        emit(bench="workflow_rule", rule=rule, **{k: round(x, 1) if isinstance(x, float) else x for k, x in v.items()})

    cfg = load(ROOT / "config.yaml")
    cfg["data_dir"] = str(data)
    rows, _, total = estimate(cfg)
    for row in rows:
        if row.name not in jobs:
            continue
        measured = job_cpu[row.name]
        emit(bench="workflow_experiment", experiment=row.name, run_jobs=jobs[row.name], est_run_jobs=row.jobs,
             fit_cpu_s=round(fit_cpu[row.name], 1), est_fit_cpu_s=round(3600 * row.fit_hours, 1),
             job_cpu_s=round(measured, 1), est_job_cpu_s=round(3600 * row.cpu_hours, 1),
             measured_over_estimated=round(measured / (3600 * row.cpu_hours), 2))
    outside = (sum(job_cpu.values()) - sum(fit_cpu.values())) / max(sum(jobs.values()), 1)
    emit(bench="workflow_total", jobs=len(walls), est_jobs=total.jobs, wall_s=wall,
         job_wall_sum_s=round(sum(w for _, w, _ in walls.values()), 1),
         run_job_cpu_outside_fits_s=round(outside, 2), JOB_SECONDS=JOB_SECONDS)
    largest = sorted(by_group.items(), key=lambda x: -x[1][1])[:8]
    return {"jobs": len(walls), "run_jobs": sum(jobs.values()), "fit_cpu_s": round(sum(fit_cpu.values()), 1),
            "job_cpu_s": round(sum(job_cpu.values()), 1),
            "wall_s_by_rule": {r: round(v["wall_s"], 1) for r, v in per_rule.items()},
            "fit_cpu_s_by_experiment": {e: round(s, 1) for e, s in sorted(fit_cpu.items(), key=lambda x: -x[1])},
            "largest_fits": {k: {"fits": n, "cpu_s": round(c, 1)} for k, (n, c) in largest}}


def record(path: Path, wf: Path, cores: int, wall: float, totals: dict,
           conditions: str = "nothing else running") -> None:
    """The measurement the README's run line states (tests/workflow/test_docs.py checks the line against
    it and its job count against a dry run): when, at which commit, on what machine, with which command."""
    import os
    import platform
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").is_file() else ""
    commit = subprocess.run(["git", "-C", str(wf), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    rec = {"measured": datetime.now().strftime("%Y-%m-%d"), "commit": commit[:7],
           "command": f"snakemake --cores {cores}", "machine": {"cpus": os.cpu_count(), "cpu": cpu},
           "conditions": conditions,
           "wall_s": wall, **totals}
    path.write_text(json.dumps(rec, indent=1) + "\n")


def calibrate(groups: list[list[dict]]) -> None:
    """Per estimator: its fits' measured CPU seconds against the typical model's, and the
    ``typical_at_1000`` that makes them equal (the model is linear in it)."""
    measured, model = defaultdict(float), defaultdict(float)
    for recs in groups:
        recs = [r for r in recs if r["status"] == "ok"]
        if not recs:
            continue
        runs = [Run(r["experiment"], r["algorithm"], r["estimator"], r["dataset"], r["bank"],
                    json.dumps(r["params"], sort_keys=True), r["seed"]) for r in recs]
        est = recs[0]["estimator"]
        measured[est] += sum(r["cpu_seconds"] for r in recs)
        model[est] += RES.group_seconds(runs, recs[0]["n"], typical=True, n_classes=recs[0]["n_clusters"])
    for est in sorted(measured):
        cost = ALGORITHMS[est].cost
        now = cost.typical_at_1000 if cost.typical_at_1000 is not None else cost.seconds_at_1000
        emit(bench="calibrate", estimator=est, measured_cpu_s=round(measured[est], 2), model_s=round(model[est], 2),
             typical_at_1000_now=now, typical_at_1000_fit=float(f"{now * measured[est] / model[est]:.3g}"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--run", type=Path, help="clone this checkout's HEAD into this (new) directory and run the "
                   "README's command there first, timed")
    g.add_argument("--dir", type=Path, help="report a finished run's directory (with snakemake.log)")
    ap.add_argument("--cores", type=int, default=8, help="the run's --cores (default 8, the README's command)")
    ap.add_argument("--record", type=Path,
                    help="with --run: write the measurement here (docs/figures/default_run.json)")
    ap.add_argument("--conditions", default="nothing else running",
                    help="with --record: what else ran on the machine during the run (the README states it)")
    ap.add_argument("--calibrate", action="store_true", help="also print each estimator's calibrated typical_at_1000")
    args = ap.parse_args(argv)
    wf, wall = args.dir or args.run, None
    if args.run:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(args.run)], check=True)   # fails if it exists
        t0 = time.perf_counter()
        with open(args.run / "snakemake.log", "w") as log:
            subprocess.run(["snakemake", "--cores", str(args.cores)], cwd=args.run, stdout=log,
                           stderr=subprocess.STDOUT, check=True)
        wall = round(time.perf_counter() - t0, 1)
    groups = record_groups(wf / "data")
    totals = report(wf, groups, wall)
    if args.record and args.run:
        record(args.record, wf, args.cores, wall, totals, args.conditions)
    if args.calibrate:
        calibrate(groups)


if __name__ == "__main__":
    main()
