"""End-to-end tests of the Snakemake workflow on tests/configs/tiny.yaml, each in a temporary
working directory (``snakemake --directory``)."""

import json
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.workflow

from _machine import MIRROR, needs_mirror
from _wf import REPO, TINY, _write_config, new_workdir, smk, smk_cmd  # noqa: F401

def mtimes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def done(tiny_local):
    return tiny_local[0]


def test_tables_and_figures_written(done):
    t = pd.read_csv(done / "figures/tinypaper/table2.csv")
    # 2 datasets x 4 columns x 2 metrics
    assert len(t) == 16
    assert set(t["column"]) == {"KM", "KKM-K1", "KKM-a", "NC"}
    assert t.loc[t["column"] == "NC", "oracle"].all()
    pub = t[(t["dataset"] == "digits1v7") & (t["column"] == "KM") & (t["metric"] == "majority_acc")]["published"]
    assert pub.iloc[0] == pytest.approx(0.9945)
    md = (done / "figures/tinypaper/table2.md").read_text()
    assert "| digits1v7 |" in md and "| ringnorm_200 |" in md
    assert (done / "figures/tinypaper/table2.tex").stat().st_size > 0
    for f in ("bars", "sweep", "timing"):
        assert (done / f"figures/tinypaper/{f}.png").read_bytes()[:4] == b"\x89PNG"
        assert (done / f"figures/tinypaper/{f}.pdf").read_bytes()[:4] == b"%PDF"
    res = pd.read_csv(done / "data/results/tiny.csv")
    assert len(res) == 4 + 8 + 4 + 2  # KM, KKM, NC, MKC and MKC-subset runs
    assert res["acc"].between(0, 1).all()


def test_mkc_table3_subset_and_timing_totals(done):
    # a table's own datasets; fit_subset labels every sample of the set from a model fitted on 100
    t = pd.read_csv(done / "figures/tinypaper/table3.csv")
    assert set(t["dataset"]) == {"ringnorm_200"} and set(t["column"]) == {"whole", "subset"}
    sub = json.loads(next((done / "data/runs/tiny/MKC-subset").rglob("*.json")).read_text())[0]
    assert len(sub["labels"]) == 200 and sub["params"]["fit_subset"] == 100
    assert sum(sub["cluster_sizes"]) == 200
    # its objective at its own and at the true labels, measured on the subset it was fitted on
    assert sub["diagnostics"]["objective_at_labels"] > 0 and sub["diagnostics"]["objective_at_true_labels"] > 0
    whole = json.loads(next((done / "data/runs/tiny/MKC").rglob("*.json")).read_text())[0]
    assert whole["cluster_sizes"] == np.bincount(whole["labels"], minlength=2).tolist()
    d = whole["diagnostics"]  # the MKC objective at its own labels and at the true ones
    assert d["objective_at_labels"] > 0 and d["objective_at_true_labels"] > 0
    assert pd.read_csv(done / "data/results/tiny.csv")["min_cluster_size"].min() > 0
    res = pd.read_csv(done / "data/results/tiny_timing.csv")
    mmc = res[res["algorithm"] == "MMC"]
    assert len(mmc) == 12 and set(mmc["param.kernel"]) == {0, 1, 2}  # 3 kernels x 2 sets x 2 seeds
    assert (res.loc[res["algorithm"] == "MKC", "diag.avg_cccp_iterations"] >= 1).all()
    for f in ("mkc_vs_mmc", "cccp"):
        assert (done / f"figures/tinypaper/{f}.png").read_bytes()[:4] == b"\x89PNG"


def test_rmkkm_table_and_gamma_figure(done):
    t = pd.read_csv(done / "figures/tinypaper/rmkkm_table.csv")
    assert set(t["column"]) == {"KKM-b", "KKM-a", "RKKM-ew", "MKKM", "AASC", "RMKKM"}
    assert set(t["metric"]) == {"acc", "nmi", "purity"} and (t["seeds_rule"] == "best_objective").all()
    assert t.loc[t["column"] == "KKM-b", "oracle"].all() and not t.loc[t["column"] == "RMKKM", "oracle"].any()
    recs = [r for p in (done / "data/runs/tiny_rmkkm/RMKKM").rglob("*.json") for r in json.loads(p.read_text())]
    assert len(recs) == 4
    for r in recs:
        w, g = np.array(r["kernel_weights"]), r["params"]["gamma"]
        assert (w**g).sum() == pytest.approx(1.0)
        assert max(r["diagnostics"]["sample_weights_"]) == pytest.approx(1.0)
    assert (done / "figures/tinypaper/gamma.png").read_bytes()[:4] == b"\x89PNG"


def test_gumkl_outputs(done):
    t = pd.read_csv(done / "figures/tinypaper/gumkl_nmi.csv")
    assert set(t["column"]) == {"p=1", "p=inf"} and t["value"].between(0, 1).all()
    res = pd.read_csv(done / "data/results/tiny_gumkl.csv")
    assert len(res) == 6 and json.loads(res["kernel_name"].iloc[0])[0].startswith("linear(")
    w1 = json.loads(res[(res["param.p"] == 1) & res["param.refine"]]["kernel_weights"].iloc[0])
    assert sorted(w1) == [0, 0, 0, 1]  # p = 1: the single best kernel
    for f in ("gumkl_p", "gumkl_w"):
        assert (done / f"figures/tinypaper/{f}.pdf").read_bytes()[:4] == b"%PDF"


def test_scmk_outputs_batches_and_reuse(done):
    # batch: every kernel of SCSK's grid (and every (alpha, beta) of SCMK's) in one records file
    files = sorted(p.name for p in (done / "data/runs/tiny_scmk").rglob("*.json"))
    assert files == ["alpha=0.001+kernel=each+max_iter=12.json", "alpha=each+beta=each+max_iter=12.json"]
    scsk = json.loads(next((done / "data/runs/tiny_scmk/SCSK").rglob("*.json")).read_text())
    assert [r["params"]["kernel"] for r in scsk] == [0, 1, 2]
    assert len({r["param_id"] for r in scsk}) == 3
    res = pd.read_csv(done / "data/results/tiny_scmk.csv")
    assert len(res) == 5 and set(res["algorithm"]) == {"SCSK", "SCMK"}
    for w in res.loc[res["algorithm"] == "SCMK", "kernel_weights"]:
        assert np.sqrt(json.loads(w)).sum() == pytest.approx(1.0)
    # reuse: the table's KKM and RMKKM columns come from tiny_rmkkm's results, with no new runs
    t = pd.read_csv(done / "figures/tinypaper/scmk_table.csv")
    assert set(t["column"]) == {"KKM", "SCSK", "SCSK-a", "RMKKM", "SCMK"} and t["value"].between(0, 1).all()
    assert not (done / "data/runs/tiny_scmk/KKM").exists()
    rm = pd.read_csv(done / "data/results/tiny_rmkkm.csv")
    kkm_best = rm[rm["algorithm"] == "KKM"].groupby("param_id")["acc"].mean().max()
    assert t[(t["column"] == "KKM") & (t["metric"] == "acc")]["value"].iloc[0] == pytest.approx(kkm_best)
    assert (done / "figures/tinypaper/scmk_heat.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_benchmark_ranks_friedman_and_cd_diagram(done):
    """A benchmark over data sets end to end (tiny_bench: 2 data sets, 3 methods): the table carries
    each method's average rank per metric, ranks that are those of the table's own values, and a
    legend generated from them; the critical-difference and CPU-time figures are written."""
    t = pd.read_csv(done / "figures/tinybench/ranks.csv")
    avg = t[t["dataset"] == "average rank"]
    assert set(avg["column"]) == {"KKM", "SC", "MKKM"} and set(avg["metric"]) == {"acc", "nmi", "ari"}
    for m in ("acc", "nmi", "ari"):
        vals = t[(t["metric"] == m) & ~t["dataset"].str.startswith("average rank")].pivot(
            index="dataset", columns="column", values="value")
        expect = vals.rank(axis=1, ascending=False).mean()
        got = avg[avg["metric"] == m].set_index("column")["value"]
        assert np.allclose(got.sort_index(), expect.sort_index()), m
        assert got.sum() == pytest.approx(6.0)   # 1 + 2 + 3 on every data set
    mkc = t[t["dataset"] == "average rank, MKC's sets"]   # the ranks on the MKC paper's one set here
    for m in ("acc", "nmi", "ari"):
        vals = t[(t["metric"] == m) & (t["dataset"] == "digits1v7")].set_index("column")["value"]
        got = mkc[mkc["metric"] == m].set_index("column")["value"]
        assert got.sort_index().tolist() == vals.rank(ascending=False).sort_index().tolist(), m
    assert (mkc["n_runs"] == 1).all()
    md = (done / "figures/tinybench/ranks.md").read_text()
    assert "has the best average rank" in md and "Friedman" in md and "on each paper's own data sets" in md
    for f in ("cd", "cpu"):
        assert (done / f"figures/tinybench/{f}.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_benchmark_shape_table_summarises_the_runs_records(done):
    """The shape table end to end: its cells are the runs' own cluster sizes and kernel weights, a
    single-kernel column has no weights ("–"), and the legend's line per method counts the runs."""
    runs = [r for p in (done / "data/runs/tiny_bench/MKKM").rglob("*.json") for r in json.loads(p.read_text())]
    t = pd.read_csv(done / "figures/tinybench/shape.csv").set_index(["dataset", "column", "metric"])["value"]
    for ds in ("digits1v7", "ringnorm_200"):
        w = [np.asarray(r["kernel_weights"]) / np.sum(r["kernel_weights"]) for r in runs if r["dataset"] == ds]
        assert t[(ds, "MKKM", "top_weight")] == pytest.approx(np.mean([x.max() for x in w]))
        assert t[(ds, "MKKM", "effective_kernels")] == pytest.approx(np.mean([1 / np.square(x).sum() for x in w]))
        tiny = [min(r["cluster_sizes"]) <= 2 for r in runs if r["dataset"] == ds]
        assert t[(ds, "MKKM", "tiny_cluster")] == pytest.approx(np.mean(tiny))
        assert np.isnan(t[(ds, "KKM", "top_weight")])
    md = (done / "figures/tinybench/shape.md").read_text()
    assert "| – |" in md and "| nan" not in md
    assert f"MKKM: a cluster of at most 2 points in {sum(min(r['cluster_sizes']) <= 2 for r in runs)} of 4 runs" in md


def test_the_readme_benchmark_summary_states_the_ranking_of_the_table(done):
    """The README's benchmark block for a whole run: the best average rank and Friedman's statistics of
    the table's own values rounded to the 3 decimals shown (ranked here by pandas, tested by scipy,
    Iman and Davenport's F by its formula), and the diagram's link."""
    from scipy.stats import friedmanchisquare

    from mkclust.repro.reporting.results import BENCH_BEGIN, BENCH_END, benchmark_block
    t = pd.read_csv(done / "figures/tinybench/ranks.csv")
    vals = t[(t["metric"] == "acc") & ~t["dataset"].str.startswith("average rank")].pivot(
        index="dataset", columns="column", values="value").round(3)
    avg = vals.rank(axis=1, ascending=False).mean()
    block = benchmark_block(done / "figures", paper="tinybench", table="ranks", figure="cd")
    assert block.startswith(BENCH_BEGIN) and block.endswith(BENCH_END)
    best = avg[avg == avg.min()].index                 # a tie at the top may be named by either method
    assert any(f"{m} has the best average rank ({avg.min():.2f} of 3)" in block for m in best)
    if vals.nunique(axis=1).gt(1).any():
        chi2 = friedmanchisquare(*[vals[c].to_numpy() for c in vals.columns]).statistic
        n, k = vals.shape
        assert f"its chi-square {chi2:.2f}" in block
        if n * (k - 1) - chi2 > 1e-9:
            assert f"F = {(n - 1) * chi2 / (n * (k - 1) - chi2):.2f}" in block
    assert "being computed" not in block and "![The critical-difference diagram](figures/tinybench/cd.png)" in block


def test_the_benchmark_document_section_summarises_every_ranked_table_and_shows_every_figure(done):
    """docs/benchmark.md's generated results for a whole run: the ranked table (not the shape table,
    which has no ranks) with the README's summary of it, and each figure, linked from the document."""
    from mkclust.repro.reporting.results import DOC_BEGIN, DOC_END, benchmark_block, benchmark_doc_block
    section = benchmark_doc_block(done / "figures", "../figures", paper="tinybench")
    assert section.startswith(DOC_BEGIN) and section.endswith(DOC_END)
    summary = benchmark_block(done / "figures", paper="tinybench", table="ranks", figure="cd").split(": ", 1)[1]
    summary = summary.split(chr(10))[0]
    head, tail = summary.split(" Cheapest of the best group", 1)   # the README leaves out the pairs' line
    start = "**ranks** ([ranks](../figures/tinybench/ranks.md)): "
    line = next(t for t in section.split(chr(10)) if t.startswith(start))
    assert head in line and "Cheapest of the best group" + tail in line
    assert " against each other method (median difference in acc" in line
    assert "shape" not in section
    assert "Cheapest of the best group: " in section   # the CPU seconds carried by the table's rank rows
    assert "![cd](../figures/tinybench/cd.png)" in section and "![cpu](../figures/tinybench/cpu.png)" in section


def test_run_records_timing_and_logs(done):
    groups = list((done / "data/runs/tiny_timing/KKM").rglob("*.json"))
    assert len(groups) == 2  # one records file per data set, each holding its two seeds
    recs = [r for p in groups for r in json.loads(p.read_text())]
    assert len(recs) == 4 and sorted(r["seed"] for r in recs) == [0, 0, 1, 1]
    for r in recs:
        assert r["threads"] == 1 and r["timing"] is True
        assert r["blas_threads"] == 1  # BLAS pinned inside the job, measured by threadpoolctl
        assert r["fit_seconds"] > 0 and r["cpu_seconds"] > 0
    logs = list((done / "data/logs/runs/tiny/KKM").rglob("*.log"))
    assert logs and all("KernelKMeans restart" in p.read_text() for p in logs)
    assert any("objective" in p.read_text() and "iteration" in p.read_text() for p in logs)
    assert list((done / "data/benchmarks/runs").rglob("*.tsv"))  # Snakemake's benchmark files kept too


def test_banks_protected_and_loadable(done):
    from mkclust.kernels import KernelBank

    banks = list((done / "data/kernels").rglob("*.npz"))
    assert len(banks) == 8  # mkc3 on 3 data sets, mkc3_r10 on 2, widths on 2, views on 1
    for b in banks:
        assert not b.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), f"{b} is writable"
        K = KernelBank.load(b).gram()
        assert np.isfinite(K).all()


def test_second_run_has_nothing_to_do(done):
    p = smk(done, "-n")
    assert "Nothing to be done" in p.stdout + p.stderr


def _reversed(value, ordered=False):
    """Every mapping's keys in reverse order, except those whose order is their meaning."""
    from mkclust.repro.configuration import ORDERED
    if isinstance(value, dict):
        items = list(value.items()) if ordered else list(value.items())[::-1]
        return {k: _reversed(v, k in ORDERED) for k, v in items}
    return [_reversed(v) for v in value] if isinstance(value, list) else value


def test_a_configuration_with_its_keys_in_another_order_changes_no_job(done):
    """The same configuration written with every mapping's keys reversed (data sets, banks, their
    options, algorithms, params, grids, table specs) reran 22 jobs, two protected kernel banks among
    them ("Params have changed")."""
    original = (done / "config.yaml").read_text()
    cfg = yaml.safe_load(original)
    (done / "config.yaml").write_text(yaml.safe_dump(_reversed(cfg), sort_keys=False))
    try:
        assert (done / "config.yaml").read_text() != original
        p = smk(done, "-n")
        assert "Nothing to be done" in p.stdout + p.stderr, p.stdout[-3000:]
    finally:
        (done / "config.yaml").write_text(original)


def test_a_dry_run_after_a_seed_change_gives_one_short_reason_per_group(done):
    """Adding a seed changes every run group of the experiment; the dry run's "Params have changed"
    reasons printed each group's run specs before and after (24.8 KB for this configuration's 20
    groups, up to 60 KB for one ODMC group of the paper's), now one line each."""
    original = (done / "config.yaml").read_text()
    cfg = yaml.safe_load(original)
    cfg["experiments"]["tiny_timing"]["seeds"] = [0, 1, 2]
    (done / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    try:
        p = smk(done, "-n")
    finally:
        (done / "config.yaml").write_text(original)
    reasons = [ln for ln in (p.stdout + p.stderr).splitlines() if "Params have changed" in ln]
    assert len(reasons) == 6, p.stdout[-3000:]   # KKM, MKC and MMC (kernels batched) on 2 sets
    assert all(len(r) < 400 and "seeds 0-1;" in r and "seeds 0-2;" in r for r in reasons), reasons
    assert sum("9 run(s) of mkc (timing): seeds 0-2; kernel 0-2;" in r for r in reasons) == 2


def test_parameter_change_reruns_only_affected(done):
    before = mtimes(done / "data")
    cfg = yaml.safe_load((done / "config.yaml").read_text())
    cfg["experiments"]["tiny"]["algorithms"]["KKM"]["params"]["n_init"] = 3
    (done / "config.yaml").write_text(yaml.safe_dump(cfg))
    smk(done)
    after = mtimes(done / "data")
    changed = {k for k in after if before.get(k) != after[k]}
    new_runs = {k for k in changed if k.startswith("runs/") and k.endswith(".json")}
    assert len(new_runs) == 4 and all("/KKM/" in k and "n_init=3" in k for k in new_runs)  # 2 kernels x 2 sets
    assert not any(k.startswith(("kernels/", "processed/")) for k in changed)
    assert "results/tiny.csv" in changed and "results/tiny_timing.csv" not in changed
    res = pd.read_csv(done / "data/results/tiny.csv")
    assert set(res.loc[res["algorithm"] == "KKM", "param.n_init"]) == {3}
    assert "Nothing to be done" in (lambda p: p.stdout + p.stderr)(smk(done, "-n"))


def test_killed_run_resumes_and_leaves_nothing_truncated(tiny_local, tmp_path_factory):
    """A run killed inside a run job leaves only complete run files; --unlock and --rerun-incomplete
    finish it, and the groups computed again hold the runs of the uninterrupted run. It starts from a
    copy of the shared tiny run with kernel k-means' four groups removed (the same rules and a kill inside
    a run job, 12 jobs instead of the first experiment's 26: the jobs' start-up was most of this test's time)."""
    import shutil

    from mkclust.repro.archive import records_file
    from mkclust.repro.configuration import load as load_config
    from mkclust.repro.planning import plan

    wd = tmp_path_factory.mktemp("kill") / "wd"
    shutil.copytree(tiny_local[0], wd, symlinks=True)        # its results, with Snakemake's metadata
    _write_config(wd)   # the configuration as the shared run ran it: a test of this worker may have changed it
    planned = load_config(wd / "config.yaml")
    planned["data_dir"] = str(wd / "data")
    gone = sorted(records_file(wd / "data", g) for g in plan(planned).run_groups() if g[:2] == ("tiny", "KKM"))
    assert len(gone) == 4 and all(p.exists() for p in gone)  # 2 data sets x kernels 0, 2
    before = {p: [r["metrics"] for r in json.loads(p.read_text())] for p in gone}
    for p in gone:
        p.unlink()
    (wd / "data/results/tiny.csv").unlink()   # what reads them: Snakemake leaves a missing file whose readers are done
    shutil.rmtree(wd / "data/logs/runs")                     # a new run job's log says one has started
    proc = subprocess.Popen(smk_cmd(wd, "--cores", "1"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not list((wd / "data/logs/runs").rglob("*.log")):
            assert proc.poll() is None, "workflow ended before a run job started"
            time.sleep(0.2)
        time.sleep(1.0)  # inside a run job
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done_runs = [p for p in gone if p.exists()]
    for p in done_runs:
        assert all("metrics" in r for r in json.loads(p.read_text()))  # complete, never truncated
    assert len(done_runs) < len(gone)
    # a killed Snakemake keeps its lock: the documented recovery is --unlock, then --rerun-incomplete
    smk(wd, "--unlock")
    smk(wd, "--rerun-incomplete")
    assert (wd / "figures/tinypaper/table2.csv").exists()
    assert {p: [r["metrics"] for r in json.loads(p.read_text())] for p in gone} == before
    assert not list((wd / "data/runs").rglob("*.partial"))   # the runs kept while a job ran go with it
    assert "Nothing to be done" in (lambda p: p.stdout + p.stderr)(smk(wd, "-n"))


@pytest.mark.parametrize("mutate,message", [
    (lambda c: c.update(colour="red"),
     "config: (top level): Additional properties are not allowed ('colour' was unexpected)"),
    (lambda c: c["experiments"]["tiny"].update(seeds="abc"),
     "config: experiments.tiny.seeds: 'abc' is not of type 'array'"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KKM"].update(parms={}),
     "config: experiments.tiny.algorithms.KKM: Additional properties are not allowed ('parms' was unexpected)"),
    (lambda c: c["experiments"]["tiny"]["algorithms"].update(X={"algorithm": "nope"}), "unknown algorithm 'nope'"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KKM"]["params"].update(n_init=0),
     "config: experiments.tiny.algorithms.KKM: The 'n_init' parameter of KernelKMeans must be an int in the range "
     "[1, inf). Got 0 instead."),
])
def test_bad_config_stops_before_any_rule(tmp_path_factory, mutate, message):
    """Before any job, in a few lines: a schema error printed 300-650 lines (jsonschema's dump of the
    schema and the instance), and a wrong parameter value passed the dry run."""
    cfg = yaml.safe_load(TINY.read_text())
    mutate(cfg)
    wd = new_workdir(tmp_path_factory, "bad", cfg)
    p = smk(wd, "-n", check=False)
    assert p.returncode != 0
    assert message in p.stdout + p.stderr
    assert len((p.stdout + p.stderr).strip().splitlines()) <= 6, p.stdout + p.stderr
    assert 'File "' not in p.stderr and "Traceback" not in p.stderr     # the message alone
    assert not (wd / "data").exists()


def test_a_target_no_experiment_uses_is_named(tmp_path_factory):
    """data/processed/<set>.npz of a set no experiment uses gave a KeyError traceback."""
    wd = new_workdir(tmp_path_factory, "unused")
    p = smk(wd, "-n", "data/processed/wine.npz", check=False)
    assert p.returncode != 0
    assert "data set 'wine' is not used by any experiment of this configuration" in p.stdout + p.stderr


@needs_mirror
def test_mirrored_dataset_through_the_workflow_with_its_flag(tmp_path_factory):
    """A downloadable set read from data_mirror (nothing copied into data/raw); its paper flag reaches
    the table and the dataset log."""
    config = {
        "data_mirror": str(MIRROR),
        "datasets": {"echocardiogram": {}, "hepatitis": {}},
        "experiments": {"mirrored": {
            "paper": "odmc", "datasets": ["echocardiogram", "hepatitis"], "seeds": [0],
            "algorithms": {"KM": {"algorithm": "km", "params": {"n_init": 1}}},
            "tables": {"t": {"metrics": ["acc"], "columns": {"KM": {"algorithm": "KM"}}}}}},
    }
    wd = new_workdir(tmp_path_factory, "mirrored", config)
    smk(wd)
    md = (wd / "figures/odmc/t.md").read_text()
    assert "| echocardiogram [n=69 (odmc: 62)] |" in md and "| hepatitis |" in md
    meta = json.loads(str(np.load(wd / "data/processed/hepatitis.npz")["meta"]))
    assert meta["raw_files"][0]["obtained_from"] == "mirror" and meta["n"] == 80
    assert not (wd / "data/raw").exists()
    log = (wd / "data/logs/dataset/echocardiogram.log").read_text()
    assert "differs from the paper: n=69 (odmc: 62)" in log


def _report_entries(html: str) -> tuple[dict, dict]:
    """The results (path -> entry with its caption) and categories of a Snakemake report."""
    start = html.index('results = {"')
    results = json.loads(html[start + len("results = "): html.index("\n", start)].rstrip().rstrip(";"))
    start = html.index('categories = {"')
    categories = json.loads(html[start + len("categories = "): html.index("\n", start)].rstrip().rstrip(";"))
    return results, categories


def test_report_holds_every_table_and_figure_with_a_caption(done, tmp_path):
    out = tmp_path / "report.html"
    smk(done, "--report", str(out), cores=None)
    results, categories = _report_entries(out.read_text())
    figs = done / "figures"
    tables = sorted(str(p.relative_to(done).with_suffix(".html")) for p in figs.rglob("*.tex"))
    figures = sorted(str(p.relative_to(done).with_suffix(".png")) for p in figs.rglob("*.pdf"))
    assert tables and figures
    for path in tables + figures + ["figures/tinypaper/verdict.html", "figures/tinypaper/verdict.png",
                                    "figures/run_summary.html"]:
        assert path in results, path
        assert len(results[path]["caption"]) > 40, path   # a caption, not an empty paragraph
    t2 = results["figures/tinypaper/table2.html"]["caption"]
    assert "tiny table" in t2 and "NC: mean over seeds, the best parameter set" in t2 and "oracle" in t2
    by_paper = lambda paths, paper: sorted(x for x in paths if x.startswith(f"figures/{paper}/"))   # noqa: E731
    for paper in ("tinypaper", "tinybench"):
        assert sorted(categories[paper]["Tables"]) == by_paper(tables, paper)
        assert sorted(categories[paper]["Figures"]) == by_paper(figures, paper)
    assert set(categories["tinypaper"]["Verdict"]) == {"figures/tinypaper/verdict.html",
                                                       "figures/tinypaper/verdict.png"}
    assert categories["Run"]
    # the landing page includes the run summary: the commit line and every experiment
    assert ("Total fit CPU time" in out.read_text()
            or "Total fit CPU time" in results["figures/run_summary.html"]["caption"])
    # the landing page starts at its introduction: Snakemake's page holder centres its content in a
    # screen-high box, which cut off the top of a landing page taller than the window; the report
    # carries a style for that box, whose classes must still be the ones the template gives it
    import snakemake
    template = Path(snakemake.__file__).parent / "report/html_reporter/template/components/content.js"
    holder = re.search(r'className: "(grow flex items-center [^"]*h-screen[^"]*)"', template.read_text())
    assert holder, "Snakemake's report template no longer has the centring page holder"
    style = re.search(r"<style>(div[.\w-]+)\s*\{align-items: safe center", out.read_text().replace("\\n", " "))
    assert style and set(style.group(1).split(".")[1:]) == set(holder.group(1).split())


def test_verdict_pages_and_a_readable_console(done):
    v = pd.read_csv(done / "figures/tinypaper/verdict.csv")
    experiments = yaml.safe_load((done / "config.yaml").read_text())["experiments"]
    assert list(v["claim"]) == [c["claim"] for e in experiments.values() for c in e.get("claims", [])]
    assert set(v["status"]) <= {"holds", "does not hold", "not evaluated"}
    assert (v["cases"] > 0).all()
    md = (done / "figures/tinypaper/verdict.md").read_text()
    assert "claims hold on our runs" in md and "Cells more than 2 points" in md
    assert (done / "figures/tinypaper/verdict.png").read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((done / "figures/run_summary.json").read_text())
    assert summary["runs"] == sum(len(pd.read_csv(p)) for p in (done / "data/results").glob("*.csv"))
    assert summary["versions"]["numpy"] == np.__version__
    err = (done / "run.stderr").read_text().splitlines()
    assert err and not [line for line in err if " DEBUG " in line]
    # the console: one line per job, no per-run or per-iteration detail (those are in data/logs)
    assert not [line for line in err if "mkclust.repro.runner" in line or "MKC round" in line or " INFO " in line]
    assert sum(line.startswith("mkclust: ") and " run(s)" in line for line in err) == 40      # the run jobs
    assert sum(line.startswith("mkclust: verdict ") for line in err) == 1


def test_the_dry_run_says_which_raw_files_it_will_download(tmp_path_factory):
    """A paper-configuration dry run without a mirror did not say that 58 data set jobs needed downloads."""
    cfg = yaml.safe_load(TINY.read_text())
    cfg["experiments"]["tiny"]["datasets"].append("colic")
    cfg["experiments"]["tiny"]["algorithms"]["KM"]["datasets"] = ["digits1v7", "ringnorm_200", "colic"]
    for label in ("KKM", "NC", "MKC", "MKC-subset"):
        cfg["experiments"]["tiny"]["algorithms"][label]["datasets"] = ["ringnorm_200"]
    wd = new_workdir(tmp_path_factory, "raw", cfg)
    env = {k: v for k, v in os.environ.items() if k != "MKCLUST_DATA_MIRROR"}
    p = smk(wd, "-n", env=env)
    assert ("mkclust: 1 raw file(s) of 1 data set(s) are not local (colic): their dataset jobs will download them "
            "into data/raw/<path>") in p.stderr


def test_every_job_runs_this_checkouts_package_where_another_copy_comes_first(tmp_path_factory):
    """A job's script is a Python process of its own: the workflow puts ``<checkout>/src`` first on
    its PYTHONPATH, so it runs this checkout's code even where another mkclust comes first on the
    path (a broken copy here, which any job importing it would fail on); each job's log names the
    package it ran."""
    cfg = {"experiments": {"tiny_km": {"paper": "tinypaper", "datasets": ["digits1v7"], "seeds": [0],
                                       "algorithms": {"KM": {"algorithm": "km"}},
                                       "tables": {"t": {"metrics": ["acc"], "columns": {"KM": {"algorithm": "KM"}}}}}}}
    wd = new_workdir(tmp_path_factory, "other_copy", cfg)
    fake = wd / "other" / "mkclust"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('another copy of mkclust was imported')\n")
    env = {**os.environ, "PYTHONPATH": str(wd / "other")}
    smk(wd, env=env)
    logs = sorted((wd / "data" / "logs").rglob("*.log"))
    assert len(logs) >= 4     # data set, bank-free run, results, table, ...
    for log in logs:
        start = next(ln for ln in log.read_text().splitlines() if " start " in ln)
        assert start.endswith(f"mkclust from {REPO / 'src' / 'mkclust'}"), (log, start)
