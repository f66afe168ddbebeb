"""Memory before any job (mkclust.repro.preflight.check_memory) and low-rank banks in the workflow: a
plan whose largest job is priced above the limit stops with one line naming it and the way out; with
landmarks the low-rank methods run on the factors and the dense-only ones are N/A with the reason;
the estimate of a low-rank run job is within 1.5x of the peak a real one reaches."""

import json
import re
import subprocess
import sys
import textwrap

import pytest
import yaml

import mkclust.repro.resources as RES
from mkclust.repro.inputs import make_bank, make_dataset
from mkclust.repro.planning import Run
from mkclust.repro.runner import run_group


def _config(tmp_path, n: int, bank: dict, limit=8000):
    cfg = {"data_dir": str(tmp_path / "data"), "memory_limit_mb": limit,
           "datasets": {"big": {"loader": "ringnorm_gen", "n": n}},
           "kernel_banks": {"g": bank},
           "experiments": {"e": {"paper": "p", "datasets": ["big"], "banks": ["g"], "seeds": [0],
                                 "algorithms": {"KKM": {"algorithm": "kkm", "params": {"kernel": "ew"}},
                                                "SC": {"algorithm": "sc", "params": {"kernel": "ew"}}}}}}
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_plan_above_the_memory_limit_stops_before_any_job(tmp_path, capsys):
    from mkclust.__main__ import main
    dense = _config(tmp_path, 30000, {"bank": "gauss_grid", "widths": [1, 2]})
    assert main(["check", str(dense)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    m = re.search(r"memory: the (kernel bank g of big|run e/\w+/big/g) job needs about ([\d.]+) GiB \(n = 30000, 2 "
                  r"kernels of 30000 columns\), above memory_limit_mb's 7.8 GiB: build bank g from landmarks", err)
    assert m and float(m.group(2)) > 2 * 2 * 30000**2 * 8 / 2**30, err   # at least the two Gram matrices
    low = _config(tmp_path, 30000, {"bank": "gauss_grid", "widths": [1, 2], "landmarks": 500})
    assert main(["check", str(low)]) == 0
    from mkclust.repro.configuration import load
    from mkclust.repro.planning import plan
    from mkclust.repro.preflight import check_memory
    job, mb = check_memory(plan(load(low)), 8000)
    assert mb < 2000, (job, mb)   # factors 2 x 30000 x 500: 229 MB; SC runs on them (products, no n x n matrix)


def test_the_cost_of_a_landmark_bank_run():
    """On a bank from landmarks a dense-only method costs nothing (N/A); a low-rank one its dense model
    with the n x n side replaced by n x R (R = 12 x 1,000 < n = 30,000)."""
    scsk = [Run("e", "SCSK", "scsk", "big", "g", json.dumps({"kernel": "ew"}), 0)]
    kkm = [Run("e", "KKM", "kkm", "big", "g", json.dumps({"kernel": "ew"}), 0)]
    assert RES.group_seconds(scsk, 30000, typical=True, input_rank=1000, input_kernels=12) == 0.0
    dense = RES.group_seconds(kkm, 30000, typical=True)
    assert RES.group_seconds(kkm, 30000, typical=True, input_rank=1000, input_kernels=12) == pytest.approx(
        dense * 12000 / 30000)


def test_dense_only_methods_are_na_on_a_landmark_bank_and_the_low_rank_ones_fit(tmp_path):
    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": 600}})
    ds.save(tmp_path / "d.npz")
    bank = make_bank({"bank": "gauss_grid", "widths": [1, 2, 4], "normalize": "none", "landmarks": 100}, ds)
    assert bank.kind == "features"
    bank.save(tmp_path / "b.npz")
    scsk = run_group([Run("e", "SCSK", "scsk", "ringnorm", "g", json.dumps({"kernel": "ew"}), 0)],
                     tmp_path / "d.npz", tmp_path / "b.npz")[0]
    assert scsk["status"] == "not_finished"
    assert re.match(r"SCSK needs the n x n kernels \(0.0 GiB at n = 600\); the bank is built from 100 "
                    r"landmarks", scsk["reason"])
    recs = run_group([Run("e", "MKKM", "mkkm", "ringnorm", "g", json.dumps({"n_init": 2}), s) for s in (0, 1)],
                     tmp_path / "d.npz", tmp_path / "b.npz")
    assert all(r["status"] == "ok" for r in recs) and min(r["metrics"]["acc"] for r in recs) > 0.6
    # a method that takes factors but not with these parameters (clipping a low-rank affinity): N/A, not a crash
    nc = run_group([Run("e", "NC", "nc", "ringnorm", "g", json.dumps({"kernel": "ew", "negative": "clip"}), 0)],
                   tmp_path / "d.npz", tmp_path / "b.npz")[0]
    assert nc["status"] == "not_finished"
    assert re.match(r"NormalizedCut needs the n x n affinity with negative='clip', laplacian='normalized' \(clipping "
                    r"is entrywise.*\); the bank is built from 100 landmarks", nc["reason"])
    sc = run_group([Run("e", "SC", "sc", "ringnorm", "g", json.dumps({"kernel": "ew"}), 0)],
                   tmp_path / "d.npz", tmp_path / "b.npz")[0]
    assert sc["status"] == "ok"
    runs = [Run("e", "RMKKM", "rmkkm", "big", "g", json.dumps({"search": "authors"}), 0)]
    assert RES.group_seconds(runs, 30000, typical=True, input_rank=1000, input_kernels=12) == 0.0


PEAK = textwrap.dedent("""
    import sys
    from mkclust.repro.planning import Run
    from mkclust.repro.runner import run_group
    from mkclust.repro.resources import peak_rss_mb
    est, params, ds, bank = sys.argv[1:5]
    base = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")) / 1024
    run_group([Run("e", est.upper(), est, "ds", "b", params, 0)], ds, bank)
    print(int(base), int(peak_rss_mb()))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("estimator,n,params", [
    ("kkm", 8000, {"kernel": "ew", "n_init": 2}),
    ("mkkm", 16000, {"n_init": 1}),
    ("simplemkkm", 24000, {"max_iter": 2}),
])
def test_the_memory_estimate_of_a_low_rank_run_job_is_within_1_5x_of_its_peak(tmp_path, estimator, n, params):
    """The job's arrays (its peak less its resident size once the libraries are imported) against the
    model's (the estimate less BASE_MB, which also covers the imports): within 1.5x either way; and
    the whole estimate covers the peak."""
    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": n}})
    ds.save(tmp_path / "ds.npz")
    make_bank({"bank": "gauss_grid", "widths": [0.5, 1, 2, 4], "normalize": "none", "landmarks": 400},
              ds).save(tmp_path / "bank.npz")
    pj = json.dumps(params, sort_keys=True)
    out = subprocess.run([sys.executable, "-c", PEAK, estimator, pj, str(tmp_path / "ds.npz"),
                          str(tmp_path / "bank.npz")], capture_output=True, text=True, check=True)
    base, peak = (int(v) for v in out.stdout.split()[-2:])
    est = RES.run_mem_mb([Run("e", "X", estimator, "ds", "b", pj, 0)], tmp_path / "ds.npz", tmp_path / "bank.npz")
    arrays, model = peak - base, est - RES.BASE_MB
    assert peak <= est and model / 1.5 <= arrays <= 1.5 * model, (estimator, n, base, peak, est)
