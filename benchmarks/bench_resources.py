"""The workflow's resource estimates (mkclust.repro.resources) against what run jobs really use (not
tests). For each estimator and n, one fit runs in a fresh interpreter, as a run job does; prints one
JSON line with its peak resident memory and seconds next to ``run_mem_mb`` and the per-fit estimate
``run_seconds x SAFETY``. Use it to recalibrate ``WORK_N2`` and ``TIME`` on a new machine.

Usage: ``python benchmarks/bench_resources.py [--n 300 1000] [--estimators kkm odmc ...]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from _common import emit  # benchmarks/_common.py
import mkclust.repro.resources as RES
from mkclust.algorithms import ALGORITHMS
from mkclust.repro.planning import Run
from mkclust.repro.inputs import make_bank, make_dataset

CHILD = textwrap.dedent("""
    import json, sys, time
    from mkclust.repro.planning import Run
    from mkclust.repro.runner import run_group
    from mkclust.repro.resources import peak_rss_mb
    est, params, ds, bank = sys.argv[1:5]
    t = time.perf_counter()
    rec = run_group([Run("e", est.upper(), est, "ds", "b", params, 0)], ds, bank)[0]
    print(json.dumps({"seconds": time.perf_counter() - t, "status": rec.get("status"),
                      "peak_mb": int(peak_rss_mb())}))
""")
PARAMS = {"km": {}, "mkc": {}, "mkkm": {}, "rmkkm": {}, "aasc": {}, "gumkl": {}, "scmk": {"max_iter": 10},
          "sc": {"kernel": 2}, "nc": {"kernel": 2}}  # spectral methods need a non-negative affinity: the Gaussian


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[300, 1000])
    ap.add_argument("--estimators", nargs="+", default=sorted(ALGORITHMS))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.n:
            ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": n}})
            dsp, bp = Path(tmp) / f"ds{n}.npz", Path(tmp) / f"b{n}.npz"
            ds.save(dsp)
            make_bank({"bank": "mkc3"}, ds).save(bp)
            for est in args.estimators:
                params = PARAMS.get(est, {"kernel": 0})
                pj = json.dumps(params, sort_keys=True)
                out = subprocess.run([sys.executable, "-c", CHILD, est, pj, str(dsp), str(bp)],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    emit(bench="run_job", estimator=est, n=n, error=out.stderr.strip().splitlines()[-1])
                    continue
                got = json.loads(out.stdout.strip().splitlines()[-1])
                run = Run("e", "X", est, "ds", "b", pj, 0)
                emit(bench="run_job", estimator=est, n=n, peak_mb=got["peak_mb"],
                     mem_mb_estimate=RES.run_mem_mb([run], dsp, bp), seconds=round(got["seconds"], 3),
                     seconds_estimate=round(RES.SAFETY * RES.run_seconds(est, n, params), 3), status=got["status"])


if __name__ == "__main__":
    main()
