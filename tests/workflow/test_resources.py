"""Resource estimates of the workflow's jobs (mkclust.repro.resources): sizes read from file headers, the
estimates' growth with n and the attempt, and the memory estimate against the peak memory that real
run jobs reach."""

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mkclust.repro.resources as RES
from mkclust.algorithms import ALGORITHMS, ODMC
from mkclust.algorithms.base import BaseClusterer, Cost
from mkclust.repro.planning import Run
from mkclust.repro.inputs import make_bank, make_dataset


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("res")
    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": 300}})
    ds.save(d / "ds.npz")
    make_bank({"bank": "mkc3"}, ds).save(d / "gram.npz")
    make_bank({"bank": "mkc3", "rank": 7}, ds).save(d / "feat.npz")
    return d


def test_shapes_read_from_headers_equal_the_arrays(files):
    for name in ("ds", "gram", "feat"):
        with np.load(files / f"{name}.npz", allow_pickle=False) as z:
            assert RES.npz_shapes(files / f"{name}.npz") == {k: z[k].shape for k in z.files}
    assert RES.dataset_shape(files / "ds.npz") == (300, 20)
    assert RES.bank_floats(files / "gram.npz") == (300, 3 * 300 * 300)
    assert RES.bank_floats(files / "feat.npz") == (300, 3 * 300 * 7)


def test_the_shape_of_a_sparse_data_set_file(tmp_path):
    import scipy.sparse as sp

    from mkclust.datasets import Dataset
    X = sp.random(40, 900, density=0.01, format="csr", random_state=0)   # tf-idf sets are stored sparse
    Dataset(X=X, y=np.arange(40) % 2, meta={"name": "sparse"}).save(tmp_path / "s.npz")
    assert RES.dataset_shape(tmp_path / "s.npz") == (40, 900)


def test_a_missing_input_is_a_file_not_found_error_naming_it(tmp_path):
    """Snakemake shows such a resource as <TBD> in a dry run (it checks the error's filename against
    the job's inputs) and evaluates it again once the input exists."""
    missing = str(tmp_path / "later.npz")
    for call in (lambda: RES.dataset_shape(missing), lambda: RES.bank_mem_mb(missing, 3),
                 lambda: RES.run_runtime([run("kkm")], missing)):
        with pytest.raises(FileNotFoundError) as e:
            call()
        assert e.value.filename == missing


def run(estimator, seed=0, **params):
    return Run("e", estimator.upper(), estimator, "ds", "b", json.dumps(params, sort_keys=True), seed)


def test_estimates_grow_with_n_kernels_fits_and_attempt(tmp_path):
    sizes = {}
    for n in (200, 800):
        ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": n}})
        ds.save(tmp_path / f"ds{n}.npz")
        make_bank({"bank": "mkc3"}, ds).save(tmp_path / f"b{n}.npz")
        sizes[n] = (tmp_path / f"ds{n}.npz", tmp_path / f"b{n}.npz")
    for est in ALGORITHMS:
        small = RES.run_mem_mb([run(est)], *sizes[200]), RES.run_runtime([run(est)] * 20, sizes[200][0])
        big = RES.run_mem_mb([run(est)], *sizes[800]), RES.run_runtime([run(est)] * 20, sizes[800][0])
        assert big[0] > small[0] and big[1] >= small[1], est
        assert RES.run_mem_mb([run(est)], *sizes[800], attempt=2) == pytest.approx(2 * big[0], abs=1)
        assert RES.run_runtime([run(est)] * 20, sizes[800][0], attempt=3) >= 3 * big[1] - 3
    assert RES.bank_mem_mb(sizes[800][0], 6) > RES.bank_mem_mb(sizes[800][0], 3) > RES.bank_mem_mb(sizes[200][0], 3)
    # the fits of a group run one after another: time adds up over them, memory does not
    ten = [run("odmc", seed=s) for s in range(10)]
    svr = [run("itersvr", seed=s) for s in range(10)]
    assert RES.run_runtime(svr, sizes[800][0]) > RES.run_runtime(svr[:1], sizes[800][0])
    # ODMC's batched runs cost batch_time of a fit alone each: 1 + batch_time x 99 fits for 100 seeds
    hundred = [run("odmc", seed=s) for s in range(100)]
    alone = RES.run_runtime(hundred[:1], sizes[800][0]) - RES.BASE_MINUTES
    batched = RES.run_runtime(hundred, sizes[800][0]) - RES.BASE_MINUTES
    assert alone < batched <= math.ceil(alone * (1 + ODMC.cost.batch_time * 99)) + 1 < 100 * alone
    kkm = [run("kkm", seed=s) for s in range(10)]
    assert RES.run_mem_mb(kkm, *sizes[800]) == RES.run_mem_mb(kkm[:1], *sizes[800])
    # ...except where the estimator fits them in one batch (ODMC): the first alone, nine together
    assert RES.batch_size(ten) == 9 and RES.batch_size(ten[:1]) == 0
    assert RES.batch_size([run("odmc", seed=s, kernel=k) for s in range(4) for k in (0, 1)]) == 3
    extra = (ODMC.cost.batch_n2 * 800 * 800 * 8
             + (9 * ODMC.cost.batch_bytes_per_n + ODMC.cost.batch_fixed_bytes_per_n) * 800) / RES.MB
    from mkclust.algorithms._labels import LANCZOS_BLOCK, LANCZOS_STEPS   # the bases of the lockstep Lanczos
    assert ODMC.cost.batch_fixed_bytes_per_n == LANCZOS_BLOCK * LANCZOS_STEPS * 8
    assert RES.run_mem_mb(ten, *sizes[800]) - RES.run_mem_mb(ten[:1], *sizes[800]) == pytest.approx(extra, abs=1)
    # GMMC declines sets above max_n without trying, and stops an SDP at its max_iter budget
    assert RES.run_seconds("gmmc", 800, {"max_n": 500}) == 0
    scs = RES.run_seconds("gmmc", 800, {"solver": "scs"})
    assert RES.run_seconds("gmmc", 800, {"solver": "scs", "max_iter": 100}) < 0.1 * scs
    assert RES.run_seconds("gmmc", 800) < 0.1 * scs   # the interior point: seconds, not SCS's hours
    assert RES.run_mem_mb([run("gmmc", max_n=500)], *sizes[800]) < RES.run_mem_mb([run("gmmc")], *sizes[800])
    # fit_subset fits on fewer samples
    assert RES.run_seconds("scmk", 100) < RES.run_seconds("scmk", 800)
    assert RES.run_runtime([run("mkc", fit_subset=100)] * 50, sizes[800][0]) <= RES.run_runtime([run("mkc")] * 50,
                                                                                             sizes[800][0])


PEAK = textwrap.dedent("""
    import json, sys
    from mkclust.repro.planning import Run
    from mkclust.repro.runner import run_group
    from mkclust.repro.resources import peak_rss_mb
    est, params, ds, bank, fits = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    run_group([Run("e", est.upper(), est, "ds", "b", params, s) for s in range(fits)], ds, bank)
    print(int(peak_rss_mb()))
""")


def test_peak_memory_is_the_jobs_own_not_its_parents():
    """A job started by snakemake or pytest must not report its parent's memory: getrusage's
    ru_maxrss keeps the parent's peak across fork and exec; VmHWM of /proc/self/status does not."""
    ballast = np.ones(600 * 2**20 // 8)  # 600 MB resident in this (parent) process
    code = ("from mkclust.repro.resources import peak_rss_mb; import numpy as np; a = np.ones(2**24); "
            "print(peak_rss_mb())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    child = float(out.stdout.split()[-1])
    assert 128 < child < 400, child  # its own 128 MB array plus numpy, not the parent's 600 MB
    assert RES.peak_rss_mb() >= ballast.nbytes / 2**20


@pytest.mark.parametrize("estimator,n,params,fits", [
    ("kkm", 1200, {"kernel": 0, "n_init": 2}, 1),
    ("odmc", 1200, {"kernel": 0, "max_iter": 300}, 1),
    ("odmc", 1200, {"kernel": 0, "max_iter": 300}, 41),     # one alone, then a batch of 40
    ("gmmc", 100, {"kernel": 0}, 1),
    ("scmk", 400, {"max_iter": 2}, 1),
])
def test_memory_estimate_covers_the_peak_of_a_real_run_job(tmp_path, estimator, n, params, fits):
    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": n}})
    ds.save(tmp_path / "ds.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "bank.npz")
    pj = json.dumps(params, sort_keys=True)
    out = subprocess.run([sys.executable, "-c", PEAK, estimator, pj, str(tmp_path / "ds.npz"),
                          str(tmp_path / "bank.npz"), str(fits)], capture_output=True, text=True, check=True)
    peak_mb = int(out.stdout.split()[-1])
    runs = [Run("e", "X", estimator, "ds", "b", pj, s) for s in range(fits)]
    est = RES.run_mem_mb(runs, tmp_path / "ds.npz", tmp_path / "bank.npz")
    assert peak_mb <= est, f"{estimator} at n={n}: peak {peak_mb} MB > estimate {est} MB"
    # and not absurdly above it: at most the base plus four times the arrays' share
    assert est - RES.BASE_MB <= 4 * max(peak_mb - 250, 1) + 200, (estimator, peak_mb, est)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_registered_estimator_declares_the_workflow_contract(name):
    """What the workflow needs to know about an estimator is declared on its own class (a new
    estimator without its cost model fails here, not silently in a SLURM request)."""
    cls = ALGORITHMS[name]
    assert issubclass(cls, BaseClusterer)
    assert isinstance(cls.__dict__.get("cost"), Cost), f"{cls.__name__} declares no cost of its own"
    assert cls.input_kind in ("features", "kernel", "kernels", "feature_maps")
    assert isinstance(cls.two_class_only, bool)
    assert cls.cost.work_n2 >= 0 and cls.cost.seconds_at_1000 > 0 and cls.cost.exponent > 0
    batching = hasattr(cls, "fit_batch")
    if cls.cost.batch_time is not None or cls.cost.batch_bytes_per_n:
        assert batching, f"{cls.__name__} has a batch cost but no fit_batch"
    assert cls.fit_seconds(2000, {}) > cls.fit_seconds(1000, {}) > 0
    assert not cls.declines(1000, {})


def test_the_authors_rmkkm_search_is_costed_by_its_work_and_a_job_limit_counts_the_classes(tmp_path):
    """RMKKM's authors' search runs max_iter x inner_n_init kernel k-means of inner_max_iter
    iterations, each a product with n x (inner_n_init c) centres: its estimate grows linearly with the
    cluster count, and a run job's time limit reads the class count from the data set file (AR's 120
    classes took 46 s a run, which a two-cluster bound would cut off)."""
    rm = ALGORITHMS["rmkkm"]
    code = {"search": "authors", "max_iter": 50}
    t10, t120 = (rm.fit_seconds(840, {**code, "n_clusters": c}, typical=True) for c in (10, 120))
    assert t120 == pytest.approx(12 * t10)
    assert 30 < t120 < 150                                    # measured: about 46 s on AR
    assert t120 > 100 * rm.fit_seconds(840, {"n_clusters": 120}, typical=True)   # Algorithm 1
    y = np.repeat(np.arange(120), 7)
    np.savez(tmp_path / "ar.npz", X=np.zeros((840, 2)), y=y)
    assert RES.dataset_classes(tmp_path / "ar.npz") == 120
    runs = [Run("e", "RMKKM-code", "rmkkm", "AR", "rmkkm12", json.dumps(code), s) for s in range(20)]
    minutes = RES.run_runtime(runs, tmp_path / "ar.npz")
    assert minutes * 60 > 20 * t120                           # the limit covers the typical time
    np.savez(tmp_path / "two.npz", X=np.zeros((840, 2)), y=y % 2)
    assert RES.run_runtime(runs, tmp_path / "two.npz") < minutes
