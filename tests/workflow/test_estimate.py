"""The cost estimate before a run (mkclust.repro.estimate), the job granularity it counts (batch: all), the
typical-time model and the deferred imports that keep a job's start-up short."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import mkclust.repro.resources as RES
from mkclust.algorithms import ALGORITHMS, KernelKMeans, ODMC, SpectralClustering
from mkclust.repro.cli.estimate import main
from mkclust.repro.estimate import JOB_SECONDS, estimate, format_rows
from mkclust.repro.planning import ConfigError, plan
from mkclust.repro.run_spec import Run

TINY = Path(__file__).parents[1] / "configs" / "tiny.yaml"


@pytest.fixture()
def tiny():
    return yaml.safe_load(TINY.read_text())


def test_batch_all_makes_one_group_per_algorithm_data_set_and_bank(tiny):
    before = plan(tiny)
    cfg = copy.deepcopy(tiny)
    cfg["experiments"]["tiny"]["batch"] = "all"
    after = plan(cfg)
    assert len(after.runs) == len(before.runs)          # the same runs, fewer jobs
    groups = {g: rs for g, rs in after.run_groups().items() if g[0] == "tiny"}
    keys = [g[:4] for g in groups]
    assert len(keys) == len(set(keys))                  # one group per (experiment, algorithm, data set, bank)
    kkm = groups[("tiny", "KKM", "digits1v7", "mkc3", "kernel=each+n_init=2")]
    assert sorted((r.params["kernel"], r.seed) for r in kkm) == [(0, 0), (0, 1), (2, 0), (2, 1)]
    # an experiment's list batches the algorithms whose grid has the parameter, the others as before
    cfg["experiments"]["tiny"]["batch"] = ["kernel"]
    assert len(plan(cfg).run_groups()) == len(after.run_groups())
    cfg["experiments"]["tiny"]["batch"] = ["gamma"]
    assert len(plan(cfg).run_groups()) == len(before.run_groups())
    # an algorithm's own list must name its grid's parameters; "all" is every one of them
    cfg["experiments"]["tiny"]["algorithms"]["KKM"]["batch"] = ["gamma"]
    with pytest.raises(ConfigError, match=r"KKM.batch: \['gamma'\] are not parameters of its grid"):
        plan(cfg)
    cfg["experiments"]["tiny"]["algorithms"]["KKM"]["batch"] = "all"
    assert ("tiny", "KKM", "digits1v7", "mkc3", "kernel=each+n_init=2") in plan(cfg).run_groups()


def test_typical_time_is_calibrated_below_the_bound_and_counts_restarts():
    for name, cls in ALGORITHMS.items():
        assert cls.cost.typical_at_1000 is not None, f"{name} has no calibrated typical time"
        # a job's time limit (the bound times SAFETY) is above the typical time of a fit
        assert cls.fit_seconds(1000, {}, typical=True) <= RES.SAFETY * cls.fit_seconds(1000, {}), name
        assert cls.fit_seconds(2000, {}, typical=True) > cls.fit_seconds(1000, {}, typical=True) > 0
    # n_init repeats a whole kernel k-means fit, but only the final k-means of spectral clustering
    one, ten = ({"n_init": k} for k in (1, 10))
    kkm, sc = KernelKMeans.fit_seconds, SpectralClustering.fit_seconds
    assert kkm(1000, ten, typical=True) == pytest.approx(10 * kkm(1000, one, typical=True))
    assert sc(1000, ten, typical=True) == sc(1000, one, typical=True)
    assert KernelKMeans.fit_seconds(1000, one) == KernelKMeans.fit_seconds(1000, ten)   # the bound as before


def _run(est, seed=0, **params):
    return Run("e", est, est, "d", "b", json.dumps(params, sort_keys=True), seed)


def test_group_seconds_discounts_the_batched_runs_on_each_input():
    alone = RES.run_seconds("odmc", 500, {"kernel": 0}, typical=True)
    share = ODMC.cost.batch_time
    # two inputs (kernels) of three runs each: per input one fit alone and two batched
    runs = [_run("odmc", s, kernel=k) for k in (0, 1) for s in range(3)]
    assert RES.group_seconds(runs, 500, typical=True) == pytest.approx(2 * alone * (1 + 2 * share))
    # no batching estimator: every fit is full, and the bound is above the typical time
    kkm = [_run("kkm", s, kernel=k) for k in (0, 1) for s in range(3)]
    assert RES.group_seconds(kkm, 500, typical=True) == pytest.approx(6 * RES.run_seconds("kkm", 500, {}, typical=True))
    assert RES.group_seconds(kkm, 500) > RES.group_seconds(kkm, 500, typical=True)


def test_nystroem_banks_cost_n_times_the_landmarks_not_n_squared():
    n, d, m = 30000, 200, 6
    full = RES.bank_seconds(n, d, m)
    ny = RES.bank_seconds(n, d, m, (2000, 10000))
    assert RES.bank_rank(n, (2000, 10000)) == 2000 and RES.bank_rank(5000, (2000, 10000)) == 5000
    assert ny < full / 10
    assert RES.bank_seconds(n, d, m, decompose=True) > full   # a rank truncation adds the eigendecomposition


def test_estimate_counts_the_plans_jobs_and_fits(tiny):
    cfg = copy.deepcopy(tiny)
    p = plan(cfg)
    rows, papers, total = estimate(cfg)
    by = {r.name: r for r in rows}
    groups = p.run_groups()
    for exp in cfg["experiments"]:
        mine = [rs for g, rs in groups.items() if g[0] == exp]
        assert by[exp].jobs == len(mine) and by[exp].fits == sum(map(len, mine))
        assert by[exp].cpu_hours == pytest.approx(by[exp].fit_hours + len(mine) * JOB_SECONDS / 3600)
        assert by[exp].peak_mb > RES.BASE_MB
    datasets = {g[2] for g in groups}
    banks = {(g[2], g[3]) for g in groups if g[3] != "none"}
    assert by["data sets and banks"].jobs == len(datasets) + len(banks)
    assert total.jobs == sum(r.jobs for r in rows) and total.fits == len(p.runs)
    assert total.cpu_hours == pytest.approx(sum(r.cpu_hours for r in rows))
    assert [r.name for r in papers] == ["tinypaper", "tinybench"] and sum(r.fits for r in papers) == len(p.runs)
    assert papers[1].fits == len([r for r in p.runs if r.experiment == "tiny_bench"])
    # wall time: CPU hours over the cores, but never below the longest job
    assert total.wall_hours(1000) == pytest.approx(max(total.cpu_hours / 1000, total.longest_hours))
    assert "total" in format_rows(rows + [total])
    # the same runs in fewer jobs: less start-up, the same fits
    cfg["experiments"]["tiny"]["batch"] = "all"
    rows2, _, total2 = estimate(cfg)
    assert total2.fits == total.fits and total2.jobs < total.jobs
    assert total2.fit_hours == pytest.approx(total.fit_hours)


def test_estimate_command_prints_experiments_papers_and_total(tmp_path, capsys):
    assert main([str(TINY), "--cores", "2"]) == 0
    out = capsys.readouterr().out
    assert "tiny_rmkkm" in out and "tinypaper" in out and "wall h/2" in out
    assert out.count("total") == 2   # below the experiments and below the papers


def test_a_run_job_imports_neither_cvxpy_nor_matplotlib():
    code = ("import sys; import mkclust.repro.runner, mkclust.repro.reporting, mkclust.repro.jobs, mkclust._io; "
            "print('cvxpy.problems' in sys.modules, 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    # ...and both load where they are used
    code = ("import sys; from mkclust.repro.reporting import make_figure; from mkclust.algorithms.gmmc import cp; "
            "cp.Variable(2); print('cvxpy.problems' in sys.modules, 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]


def test_estimate_command_says_what_is_wrong_in_one_line(tmp_path, capsys):
    """Through ``mkclust estimate`` (mkclust._cli.run_tool turns user errors into one line, exit 2)."""
    from mkclust.__main__ import main as mkclust
    assert mkclust(["estimate", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments: {x: {paper: p, datasets: [nope], algorithms: {KM: {algorithm: km}}}}")
    assert mkclust(["estimate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "dataset 'nope'" in err and "Traceback" not in err


def test_mkc_cost_grows_with_the_classes_and_linearly_on_nystroem_features():
    """MKC's typical time: (m/2)^2 times the two-cluster model for m clusters (measured 7x per n^2
    from satellite to letterABCD); on Nystroem features (an input rank below n) linear in n."""
    from mkclust.algorithms import MKC
    two = MKC.fit_seconds(3000, {}, typical=True)
    assert MKC.fit_seconds(3000, {"n_clusters": 4}, typical=True) == pytest.approx(4 * two)
    assert RES.group_seconds([_run("mkc")], 3000, typical=True, n_classes=4) == pytest.approx(4 * two)
    on_features = [RES.group_seconds([_run("mkc")], n, typical=True, input_rank=2000) for n in (20000, 40000)]
    assert on_features[1] == pytest.approx(2 * on_features[0])
    assert on_features[0] < MKC.fit_seconds(20000, {}, typical=True)
    # a Gram input (rank n) keeps the n^2 model
    assert RES.group_seconds([_run("mkc")], 3000, typical=True, input_rank=3000) == pytest.approx(two)


def test_the_estimate_says_which_raw_files_are_not_local(tmp_path, monkeypatch, capsys):
    """Without a mirror the estimate used to print its table alone, though its sizes for sets that are
    not local come from their published shapes (or are unknown) and a run would download them."""
    from mkclust.datasets import download as dl
    from mkclust.repro.cli.estimate import main

    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data"), "experiments": {"e": {
        "paper": "p", "datasets": ["colic", "digits1v7"], "seeds": [0], "algorithms": {"KM": {"algorithm": "km"}}}}}))
    assert main([str(cfg)]) == 0
    err = capsys.readouterr().err
    assert "1 raw file(s) of 1 data set(s) are not local (colic)" in err
    mirror = tmp_path / "mirror" / "colic"
    mirror.mkdir(parents=True)
    (mirror / "colic.arff").write_text("x")
    monkeypatch.setenv(dl.MIRROR_ENV, str(tmp_path / "mirror"))
    assert main([str(cfg)]) == 0
    assert "not local" not in capsys.readouterr().err
