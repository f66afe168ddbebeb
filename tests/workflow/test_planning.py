import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from mkclust.repro.configuration import load as load_config

from mkclust import metrics
from mkclust.datasets import Dataset, load
from mkclust.repro.planning import ConfigError, Run, param_id, plan
from mkclust.repro.records import load_records, records_to_frame
from mkclust.repro.inputs import make_bank
from mkclust.repro.runner import run_group, run_one
from mkclust.kernels import BANKS, bank_size, build_bank

TINY = Path(__file__).parents[1] / "configs" / "tiny.yaml"


@pytest.fixture
def tiny():
    return yaml.safe_load(TINY.read_text())


def test_param_id_readable_stable_and_hashed_when_long():
    assert param_id({}) == "default"
    assert param_id({"n_init": 10, "kernel": 0}) == "kernel=0+n_init=10"
    assert param_id({"kernel": 0, "n_init": 10}) == param_id({"n_init": 10, "kernel": 0})
    assert param_id({"alpha": 1e-5}) == "alpha=1e-05"
    long = param_id({"init": "x" * 100})
    assert long.startswith("p-") and len(long) == 14
    assert param_id({"a": "b/c"}).startswith("p-")  # never a path separator
    # never a comma (a remote job's --target-jobs splits wildcards on commas) nor an ambiguous '+'
    assert param_id({"a": "x,y"}).startswith("p-") and param_id({"C": 1e20}).startswith("p-")


def test_plan_expands_grids_and_seeds(tiny):
    p = plan(tiny)
    runs = p.runs_of("tiny")
    by = lambda a: [r for r in runs if r.algorithm == a]  # noqa: E731
    assert len(by("KM")) == 2 * 2  # datasets x seeds
    assert {r.bank for r in by("KM")} == {"none"}  # k-means takes the data matrix
    assert len(by("KKM")) == 2 * 2 * 2  # kernels x datasets x seeds
    assert len(by("NC")) == 2 * 2 * 1  # kernel: all over a 2-width bank
    assert {r.params["kernel"] for r in by("NC")} == {0, 1}
    assert all(r.timing for r in p.runs_of("tiny_timing"))
    assert "figures/tinypaper/table2.md" in p.targets.table_targets()
    assert "figures/tinypaper/timing.pdf" in p.targets.figure_targets()
    assert len({(r.path(), r.param_id, r.seed) for r in p.runs}) == len(p.runs)
    unbatched = [r for r in p.runs if not r.batch]
    assert len({(r.path(), r.seed) for r in unbatched}) == len(unbatched)
    groups = p.run_groups()
    assert sum(map(len, groups.values())) == len(p.runs)
    assert all(len({r.path() for r in rs}) == 1 and rs == sorted(rs, key=lambda r: (r.params_json, r.seed))
               for rs in groups.values())
    assert set(p.datasets) == {"digits1v7", "ringnorm_200", "ringnorm_400", "dv17"}
    assert p.datasets["ringnorm_200"] == {"loader": "ringnorm_gen", "options": {"n": 200}}


def test_algorithm_may_run_on_a_subset_of_the_datasets(tiny):
    tiny["experiments"]["tiny"]["algorithms"]["NC"]["datasets"] = ["digits1v7"]
    nc = [r for r in plan(tiny).runs_of("tiny") if r.algorithm == "NC"]
    assert {r.dataset for r in nc} == {"digits1v7"} and len(nc) == 2


def test_paper_config_is_valid_and_plans_the_papers_sets():
    from snakemake.utils import validate

    from mkclust.datasets import REGISTRY

    repo = Path(__file__).resolve().parents[2]
    config = load_config(repo / "workflow/configs/paper.yaml")
    validate(config, str(repo / "workflow/schemas/config.schema.yaml"))
    p = plan(config)
    mkc = {r.dataset for r in p.runs_of("mkc_table2_baselines")}
    assert mkc == {n for n, s in REGISTRY.items() if any(sh.paper == "mkc" for sh in s.paper)}
    odmc = {p.datasets[r.dataset]["loader"] for r in p.runs_of("odmc_table2_baselines")}
    assert odmc == {n for n, s in REGISTRY.items() if any(sh.paper == "odmc" for sh in s.paper)} - {"dbworld"}
    rmkkm = {r.dataset for r in p.runs_of("rmkkm_table2")}
    assert rmkkm == {n for n, s in REGISTRY.items() if any(sh.paper == "rmkkm" for sh in s.paper)}
    # the options that build each paper's version are the ones its paper shape names (the authors'
    # preprocessed variants of the RMKKM face sets keep the shape)
    for name, spec in p.datasets.items():
        opts = {k: v for k, v in spec["options"].items() if k != "variant"}
        shapes = REGISTRY[spec["loader"]].paper
        assert not shapes or any(sh.opts == opts for sh in shapes), name
    # GUMKL: five 4-class subsets of each real multi-view set stand in for the Corel D1-D5
    subsets = [p.datasets[r.dataset] for r in p.runs_of("gumkl_figures")]
    for loader in ("msrc_v1", "mfeat"):
        sets = {tuple(s["options"]["classes"]) for s in subsets if s["loader"] == loader}
        assert len(sets) == 5 and all(len(c) == 4 for c in sets)
    fig1 = {r.dataset for r in p.runs_of("rmkkm_table2") if r.algorithm == "RMKKM-gamma"}
    assert fig1 == {"JAFFE", "ORL", "TR11", "TR41"}
    km = [r for r in p.runs_of("mkc_table2_baselines") if r.algorithm == "KM" and r.dataset == "letterAvB"]
    assert len(km) == 50  # the paper's 50 random initialisations


def test_quick_odmc_overlay_runs_the_paper_protocol_on_part_of_its_sets():
    """workflow/configs/paper_odmc_quick.yaml, merged into paper.yaml as Snakemake merges two
    --configfile files: the same runs (paths and parameters) as the paper configuration's, on five sets."""
    repo = Path(__file__).resolve().parents[2]
    full = load_config(repo / "workflow/configs/paper.yaml")
    merged = load_config(repo / "workflow/configs/paper.yaml", repo / "workflow/configs/paper_odmc_quick.yaml")
    quick, whole = plan(merged), plan(full)
    sets = {"echocardiogram", "hepatitis", "colic", "house", "heart"}
    for exp in ("odmc_table2", "odmc_table2_baselines"):
        runs = quick.runs_of(exp)
        assert {r.dataset for r in runs} == sets
        assert set(runs) == {r for r in whole.runs_of(exp) if r.dataset in sets}
        assert {r.algorithm for r in runs} == {r.algorithm for r in whole.runs_of(exp)}
    assert merged["experiments"]["odmc_table2"]["figures"]["figure2"]["datasets"] == ["heart"]
    assert merged["experiments"]["odmc_table2"]["tables"] == full["experiments"]["odmc_table2"]["tables"]
    assert quick.runs_of("mkc_table2_baselines") == whole.runs_of("mkc_table2_baselines")


@pytest.mark.parametrize("mutate,match", [
    (lambda c: c["experiments"]["tiny"]["algorithms"].update(X={"algorithm": "nope"}), "unknown algorithm 'nope'"),
    # parameter values, before any job (they passed the dry run and failed in the first run job)
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KKM"]["params"].update(n_init=0),
     r"tiny.algorithms.KKM: The 'n_init' parameter of KernelKMeans must be an int in the range \[1, inf\). Got 0"),
    (lambda c: c["experiments"]["tiny_rmkkm"]["algorithms"]["RMKKM"].update(grid={"gamma": [0.3, 1.5]}),
     r"tiny_rmkkm.algorithms.RMKKM: The 'gamma' parameter of RMKKM must be a float in the range \(0.0, 1.0\)"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KKM"].update(grid={"kernel": [0, 7]}),
     r"tiny.algorithms.KKM: kernel=7 is out of range for bank mkc3 of 3 kernels \(0 .. 2\)"),
    (lambda c: c["experiments"]["tiny"].update(seeds=[0, 0]), r"experiments.tiny.seeds: seed\(s\) \[0\] listed twice"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KKM"]["params"].update(gamma=2),
     r"no parameter\(s\) \['gamma'\]"),
    (lambda c: c["experiments"]["tiny"]["datasets"].append("nowhere"),
     "dataset 'nowhere' is neither declared under datasets: nor a registered loader"),
    (lambda c: c["experiments"]["tiny"].update(banks=["nobank"]), "kernel bank 'nobank'"),
    (lambda c: c["datasets"].update(bad={"loader": "nowhere"}) or c["experiments"]["tiny"]["datasets"].append("bad"),
     "unknown dataset loader 'nowhere'"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KM"]["params"].update(random_state=3), "random_state"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KM"]["params"].update(preprocess="whiten"),
     r"tiny.algorithms.KM.preprocess: unknown preprocessing 'whiten'"),
    (lambda c: c["kernel_banks"]["mkc3"].update(preprocess="whiten"), r"kernel_banks.mkc3.preprocess: unknown preproc"),
    # names that become paths, and output folders that would leave the working folder
    (lambda c: c["experiments"].update({"../../x": c["experiments"].pop("tiny_timing")}),
     r"experiments: '../../x' is not a usable name"),
    (lambda c: c["experiments"]["tiny"]["datasets"].append("a/b"), r"experiments.tiny.datasets: 'a/b' is not a usable"),
    (lambda c: c["experiments"]["tiny"]["algorithms"].update({".hidden": {"algorithm": "km"}}),
     r"experiments.tiny.algorithms: '.hidden' is not a usable name"),
    (lambda c: c.update(data_dir="../../escaped_data"), r"data_dir: '../../escaped_data' leaves the working folder"),
    (lambda c: c.update(figures_dir="figs/../../up"), r"figures_dir: 'figs/../../up' leaves the working folder"),
    # bank options, at plan time (widths [-1, 1] built two equal kernels, one named gauss(w=-1,...))
    (lambda c: c["kernel_banks"]["widths"].update(widths=[-1.0, 1.0]),
     r"kernel_banks.widths: bank gauss_grid: widths must be positive and finite; \[-1.0\]"),
    (lambda c: c["kernel_banks"]["mkc3"].update(degree=2), r"kernel_banks.mkc3: bank mkc3: unknown option\(s\)"),
    (lambda c: c["kernel_banks"]["mkc3"].update(preprocess_by_dataset={"ringnorm_400": "whiten"}),
     r"kernel_banks.mkc3.preprocess_by_dataset.ringnorm_400: unknown preproc"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KKM"]["params"].update(preprocess="minmax"),
     r"no parameter\(s\) \['preprocess'\]"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KKM"]["params"].update(imbalanced_balance=0.3),
     r"tiny.algorithms.KKM: imbalanced_balance sets a balance bound; kkm has none"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["MKC"]["params"].update(imbalanced_balance=0.3, balance=5),
     "either balance or imbalanced_balance"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["MKC"]["params"].update(imbalanced_balance=3),
     r"MKC.imbalanced_balance: a share of n in \(0, 1\], got 3"),
    (lambda c: c["experiments"]["tiny"]["tables"]["table2"]["columns"].update(Z={"algorithm": "ZZ"}), "ZZ"),
    (lambda c: c["experiments"]["tiny"]["algorithms"].update(KKM2={"algorithm": "kkm", "grid": {"kernel": [0]}}) or
     c["experiments"]["tiny"]["algorithms"]["KKM2"].update(grid={"kernel": 5}), "non-empty list"),
    (lambda c: c["experiments"]["tiny_timing"].update(tables={"table2": {"metrics": ["acc"]}}),
     "tinypaper/table2 is also a table of experiments.tiny"),
    (lambda c: c["datasets"].update(dbworld={}) or c["experiments"]["tiny"]["datasets"].append("dbworld"),
     "dbworld is not obtainable"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KM"].update(datasets=["ringnorm_400"]),
     r"\['ringnorm_400'\] are not datasets of experiment tiny"),
    (lambda c: c["experiments"]["tiny"]["algorithms"]["KKM"].update(batch=["n_init"]),
     r"batch: \['n_init'\] are not parameters of its grid"),
    (lambda c: c["experiments"]["tiny_scmk"].update(reuse=["nothere"]), "'nothere' is not another experiment"),
    (lambda c: c["experiments"]["tiny_scmk"].update(reuse=["tiny_scmk"]), "'tiny_scmk' is not another experiment"),
    (lambda c: c["experiments"]["tiny_scmk"]["algorithms"].update(KKM={"algorithm": "kkm", "params": {"kernel": 0}}),
     r"label\(s\) \['KKM'\] exist in both tiny_scmk and tiny_rmkkm"),
    (lambda c: c["experiments"]["tiny_scmk"].pop("reuse"), "refers to algorithm 'KKM'"),
    (lambda c: c["experiments"]["tiny_timing"]["figures"]["mkc_vs_mmc"].update(algorithm=["MKC", "CPMMC"]),
     r"mkc_vs_mmc: refers to algorithm 'CPMMC'"),
    (lambda c: c["experiments"]["tiny_timing"]["figures"]["mkc_vs_mmc"].update(totals={"t": "MMCX"}),
     "refers to algorithm 'MMCX'"),
    (lambda c: c["experiments"]["tiny"]["tables"]["table3"].update(datasets=["ringnorm_400"]),
     r"table3: datasets \['ringnorm_400'\] are not datasets of experiments.tiny"),
    (lambda c: c["experiments"]["tiny"]["tables"]["table3"]["columns"]["subset"].update(
        algorithm=["MKC-subset", "MKC-sub1000"]), r"table3: refers to algorithm 'MKC-sub1000'"),
])
def test_plan_rejects_bad_configs_naming_the_key(tiny, mutate, match):
    mutate(tiny)
    with pytest.raises(ConfigError, match=match):
        plan(tiny)


def test_bank_preprocessing_per_data_set():
    """The paper configuration's rmkkm12 keeps COIL20's and BA's raw rows (the authors' files of those
    two sets are not row-normalised) and unit rows elsewhere; a set without an entry gets exactly the
    spec it had before (no rebuild); make_bank refuses a spec not resolved for one set."""
    p = plan(load_config(Path(__file__).resolve().parents[2] / "workflow/configs/paper.yaml"))
    assert p.inputs.bank_spec("rmkkm12", "COIL20") == {"bank": "rmkkm12", "preprocess": "none"}
    assert p.inputs.bank_spec("rmkkm12", "BA") == {"bank": "rmkkm12", "preprocess": "none"}
    assert p.inputs.bank_spec("rmkkm12", "TR11") == {"bank": "rmkkm12", "preprocess": "unit"}
    rng = np.random.RandomState(0)
    X = rng.rand(30, 5) * rng.uniform(1, 20, size=(30, 1))   # rows of very different norms
    ds = Dataset(X, np.arange(30) % 3)
    raw, unit = (make_bank(p.inputs.bank_spec("rmkkm12", name), ds) for name in ("COIL20", "TR11"))
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    t = 1.0 * np.sqrt(D.max())                            # the Gaussian kernel at t0 = 1 on the raw rows
    assert np.allclose(raw.K[raw.names.index("gauss(rmkkm,t0=1)")],
                       np.exp(-D / (2 * t * t)), atol=1e-12)
    assert np.abs(raw.K - unit.K).max() > 0.01            # unit rows change the distance kernels
    with pytest.raises(ValueError, match="resolves preprocess_by_dataset"):
        make_bank(p.inputs.bank_spec("rmkkm12"), ds)


@pytest.mark.parametrize("name", sorted(BANKS))
def test_bank_size_matches_built_bank(name):
    ds = load("digits_views")
    X = ds.X[:40]
    opts = {"views": ds.meta["views"]} if BANKS[name].per_view else {}
    assert bank_size(name, **opts) == build_bank(name, X, **opts).n_kernels


def test_run_one_record(tmp_path):
    ds = load("digits1v7")
    ds.save(tmp_path / "d.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "b.npz")
    run = Run("e", "KKM", "kkm", "digits1v7", "mkc3", json.dumps({"kernel": 0, "n_init": 2}), 3)
    rec = run_one(run, tmp_path / "d.npz", tmp_path / "b.npz")
    for key in ("experiment", "algorithm", "dataset", "bank", "params", "seed", "labels", "metrics", "objective",
                "objective_trace", "kernel_weights", "n_iter", "fit_seconds", "cpu_seconds", "versions",
                "diagnostics"):
        assert key in rec, key
    assert rec["n_clusters"] == 2 and rec["kernel_name"] == "linear" and rec["seed"] == 3
    assert rec["metrics"]["acc"] == pytest.approx(metrics.acc(ds.y, rec["labels"]))
    assert rec["fit_seconds"] > 0 and rec["cpu_seconds"] > 0
    assert rec["versions"]["numpy"] == np.__version__
    json.dumps(rec)  # serialisable as is
    ew = run_one(Run("e", "KKM", "kkm", "digits1v7", "mkc3", json.dumps({"kernel": "ew"}), 0),
                 tmp_path / "d.npz", tmp_path / "b.npz")
    assert ew["kernel_name"].startswith("equal-weight")
    with pytest.raises(ConfigError, match="set the parameter kernel"):
        run_one(Run("e", "KKM", "kkm", "digits1v7", "mkc3", "{}", 0), tmp_path / "d.npz", tmp_path / "b.npz")
    df = records_to_frame([rec, ew])
    assert len(df) == 2 and {"acc", "ri", "param.kernel", "fit_seconds", "params"} <= set(df.columns)


def test_run_group_fits_every_seed_like_single_runs(tmp_path):
    ds = load("digits1v7")
    ds.save(tmp_path / "d.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "b.npz")
    runs = [Run("e", "KKM", "kkm", "digits1v7", "mkc3", json.dumps({"kernel": 2, "n_init": 1, "init": "random"}), s)
            for s in (0, 1, 2)]
    group = run_group(runs, tmp_path / "d.npz", tmp_path / "b.npz")
    assert [r["seed"] for r in group] == [0, 1, 2]
    for run, rec in zip(runs, group):
        single = run_one(run, tmp_path / "d.npz", tmp_path / "b.npz")
        assert rec["labels"] == single["labels"] and rec["objective"] == single["objective"]
    assert {r.path() for r in runs} == {"data/runs/e/KKM/digits1v7/mkc3/init=random+kernel=2+n_init=1.json"}
    with pytest.raises(ValueError, match="one group"):
        run_group([runs[0], Run("e", "KM", "km", "digits1v7", "none", "{}", 0)], tmp_path / "d.npz")
    (tmp_path / "g.json").write_text(json.dumps(group))
    assert [r["seed"] for r in load_records([tmp_path / "g.json"])] == [0, 1, 2]


def test_batched_grid_is_one_group_and_reuse_joins_results(tiny, tmp_path):
    p = plan(tiny)
    groups = {g: rs for g, rs in p.run_groups().items() if g[0] == "tiny_scmk"}
    assert sorted(g[1:] for g in groups) == [("SCMK", "digits1v7", "mkc3", "alpha=each+beta=each+max_iter=12"),
                                             ("SCSK", "digits1v7", "mkc3", "alpha=0.001+kernel=each+max_iter=12")]
    scsk = groups[("tiny_scmk", "SCSK", "digits1v7", "mkc3", "alpha=0.001+kernel=each+max_iter=12")]
    assert [r.params["kernel"] for r in scsk] == [0, 1, 2] and len({r.path() for r in scsk}) == 1
    assert p.sources("tiny_scmk") == ["tiny_scmk", "tiny_rmkkm"]
    assert p.targets.source_results("tiny_scmk") == ["data/results/tiny_scmk.csv", "data/results/tiny_rmkkm.csv"]
    # a batched group is fitted like its runs one by one, each record with its own parameters
    ds = load("digits1v7")
    ds.save(tmp_path / "d.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "b.npz")
    runs = [Run("e", "KKM", "kkm", "digits1v7", "mkc3", json.dumps({"kernel": k, "n_init": 1}), s, False, "kernel")
            for k in (0, 2) for s in (0, 1)]
    assert len({r.group for r in runs}) == 1 and runs[0].path().endswith("/kernel=each+n_init=1.json")
    assert Run(**runs[0].spec()) == runs[0] and runs[0].spec()["batch"] == "kernel"
    plain = Run("e", "KKM", "kkm", "digits1v7", "mkc3", "{}", 0)
    assert "batch" not in plain.spec() and Run(**plain.spec()) == plain  # unbatched params as before batching
    recs = run_group(runs, tmp_path / "d.npz", tmp_path / "b.npz")
    assert [(r["params"]["kernel"], r["seed"]) for r in recs] == [(0, 0), (0, 1), (2, 0), (2, 1)]
    for run, rec in zip(runs, recs):
        fields = ("experiment", "algorithm", "estimator", "dataset", "bank", "params_json", "seed")
        single = run_one(Run(*[getattr(run, f) for f in fields]), tmp_path / "d.npz", tmp_path / "b.npz")
        assert rec["labels"] == single["labels"] and rec["kernel_name"] == single["kernel_name"]
        assert rec["param_id"] == single["param_id"]


def test_pseudo_params_for_multi_kernel_estimators(tmp_path):
    ds = load("digits1v7")
    ds.save(tmp_path / "d.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "b.npz")
    make_bank({"bank": "mkc3", "rank": 15}, ds).save(tmp_path / "f.npz")

    def one(params, bank="b.npz", est="mkc"):
        run = Run("e", "A", est, "digits1v7", "mkc3", json.dumps(params), 0)
        return run_one(run, tmp_path / "d.npz", tmp_path / bank)

    single = one({"kernel": 2, "rank": 15})
    assert len(single["kernel_name"]) == 1 and single["kernel_name"][0].startswith("gauss")
    assert len(single["kernel_weights"]) == 1
    two = one({"n_kernels": 2, "rank": 15})
    assert len(two["kernel_weights"]) == 2 and len(two["kernel_name"]) == 2
    feats = one({}, bank="f.npz")  # a features bank goes to MKC as feature maps
    assert len(feats["kernel_weights"]) == 3 and feats["metrics"]["acc"] > 0.9
    sub = one({"fit_subset": 120, "rank": 15})  # fit on 120 samples, label all 361
    assert len(sub["labels"]) == ds.n and sub["metrics"]["acc"] > 0.9
    df = records_to_frame([two, sub])
    assert {"diag.avg_cccp_iterations", "diag.n_constraints", "diag.solver_seconds"} <= set(df.columns)
    # a Nystroem bank (the paper configuration's mnist01234): its wide features are reduced to MKC's rank,
    # on the subset alone for fit_subset
    nys = make_bank({"bank": "mkc3", "landmarks": 150, "landmarks_above": 100, "landmark_seed": 1}, ds)
    assert nys.kind == "features" and nys.meta["nystroem"]["landmarks"] == 150 and nys.features[2].shape[1] > 15
    nys.save(tmp_path / "n.npz")
    assert one({"fit_subset": 120, "rank": 15}, bank="n.npz")["metrics"]["acc"] > 0.9
    with pytest.raises(ConfigError, match="n_kernels=4 is out of range"):
        one({"n_kernels": 4})


def test_estimators_on_features_take_the_preprocess_pseudo_param(tmp_path):
    from sklearn.cluster import KMeans
    from sklearn.preprocessing import MinMaxScaler

    from mkclust.datasets import Dataset

    # two classes split by column 0 (range 1); column 1 is noise with a range of 1000, which decides
    # k-means on the raw features and matters no more than column 0 once both are scaled to [-1, 1]
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 60)
    X = np.column_stack([y + 0.05 * rng.normal(size=120), 1000 * rng.uniform(size=120)])
    Dataset(X, y, {"name": "split"}).save(tmp_path / "d.npz")

    def km(params, seed=0):
        return run_one(Run("e", "KM", "km", "split", "none", json.dumps(params), seed), tmp_path / "d.npz")

    raw, scaled = km({"n_init": 1}), km({"n_init": 1, "preprocess": "minmax"})
    assert raw["metrics"]["acc"] < 0.75 and scaled["metrics"]["acc"] == 1.0
    assert scaled["params"]["preprocess"] == "minmax"  # the record says what the features were
    for seed in (0, 1):
        ref = KMeans(2, n_init=1, random_state=seed).fit_predict(MinMaxScaler((-1, 1)).fit_transform(X))
        assert metrics.acc(ref, km({"n_init": 1, "preprocess": "minmax"}, seed)["labels"]) == 1.0


def test_imbalanced_balance_loosens_the_bound_on_imbalanced_sets_only(tmp_path):
    """The ODMC protocol's balance (Zhang, Tsang and Kwok 2007): 0.3 n on an imbalanced set, the
    estimator's 0.03 n otherwise. Two separated blobs of 64 and 36 points: under 0.03 n IterSVR cannot
    put them apart; under the rule's 0.3 n (|e'y| = 28 <= 30) it finds them exactly. On a balanced
    set the rule changes nothing."""
    from mkclust.repro.inputs import make_bank
    from mkclust.repro.runner import run_group
    from mkclust.repro.pseudo import IMBALANCED_ABOVE, class_imbalance
    from mkclust.datasets import Dataset

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.3, (64, 2)), rng.normal(4, 0.3, (36, 2))])
    y = np.repeat([0, 1], [64, 36])
    assert class_imbalance(y) == pytest.approx(0.28) and class_imbalance(y) > IMBALANCED_ABOVE
    assert class_imbalance(np.repeat([0, 1, 2], [30, 30, 40])) == pytest.approx(0.1)
    for name, (Xd, yd) in {"imb": (X, y), "bal": (X[28:], y[28:])}.items():   # 36 and 36
        Dataset(Xd, yd, {"name": name}).save(tmp_path / f"{name}.npz")
        make_bank({"bank": "mkc3"}, Dataset(Xd, yd)).save(tmp_path / f"{name}_bank.npz")

    def fit(name, **params):
        runs = [Run("e", "IterSVR", "itersvr", name, "b", json.dumps({"kernel": 0, "C": 10, **params}), s)
                for s in (0, 1)]
        return run_group(runs, tmp_path / f"{name}.npz", tmp_path / f"{name}_bank.npz")

    tight, rule = fit("imb"), fit("imb", imbalanced_balance=0.3)
    assert [r["derived_params"] for r in tight] == [{}, {}]
    assert [r["derived_params"] for r in rule] == [{"balance": pytest.approx(30.0)}] * 2
    for r in tight:   # |e'y| <= 3: at least 11 points of the larger blob are put with the smaller
        assert abs(2 * sum(r["labels"]) - 100) <= 3 and r["metrics"]["acc"] <= 0.89
    assert all(r["metrics"]["acc"] == 1.0 for r in rule)
    bal, bal_rule = fit("bal"), fit("bal", imbalanced_balance=0.3)
    assert class_imbalance(y[28:]) == 0.0
    assert [r["derived_params"] for r in bal_rule] == [{}, {}]
    assert [r["labels"] for r in bal] == [r["labels"] for r in bal_rule]
    assert list(records_to_frame(rule)["derived.balance"]) == [30.0, 30.0]
    assert "derived.balance" not in records_to_frame(tight).columns


def test_imbalanced_balance_is_a_share_of_the_samples_fitted():
    """The bound constrains the labels of the samples an estimator fits: all n, or the fit_subset."""
    from mkclust.repro.pseudo import resolve_balance

    params = {}
    assert resolve_balance(params, {"imbalanced_balance": 0.3}, 1000, 0.4) == {"balance": 300.0}
    assert resolve_balance({}, {"imbalanced_balance": 0.3, "fit_subset": 250}, 1000, 0.4) == {"balance": 75.0}
    assert resolve_balance({}, {"imbalanced_balance": 0.3, "fit_subset": 250}, 1000, 0.05) == {}
    assert params == {"balance": 300.0}


def test_an_oversized_grid_is_refused_before_its_runs_are_built(tiny, monkeypatch):
    """A grid of 10^6 points used to be expanded (4.7 GB after 5 minutes, no output); the planner
    counts each entry's runs and run groups first and refuses beyond max_runs / max_run_groups,
    naming the entry and the switch that raises the limit."""
    import mkclust.repro.planning as planning

    tiny["experiments"]["tiny"]["algorithms"]["KKM"]["grid"] = {"kernel": [0, 1, 2],
                                                               "max_iter": list(range(1, 333_334))}
    built = []
    real_grid = planning._grid
    monkeypatch.setattr(planning, "_grid", lambda *a: built.append(a[1]) or real_grid(*a))
    with pytest.raises(ConfigError, match=r"experiments.tiny.algorithms.KKM: the configuration reaches 4,000,\d+ "
                                          r"runs here \(999,999 grid points x 2 data sets x 2 seeds .*max_runs: N"):
        plan(tiny)
    assert "experiments.tiny.algorithms.KKM" not in built
    # batched, the same grid is one group per data set: the run limit still applies, raised on request
    tiny["experiments"]["tiny"]["algorithms"]["KKM"]["grid"]["max_iter"] = list(range(1, 1001))
    with pytest.raises(ConfigError, match=r"6,0\d\d run groups .*max_run_groups: N"):
        plan({**tiny, "max_run_groups": 5000})
    tiny["experiments"]["tiny"]["algorithms"]["KKM"]["batch"] = "all"
    p = plan({**tiny, "max_run_groups": 5000})
    assert len(p.runs) == 12_000 + 77 - 8 and len(p.run_groups()) == 40 - 4 + 2


@pytest.mark.parametrize("config", ["config.yaml", "workflow/configs/paper.yaml", "tests/configs/tiny.yaml"])
def test_the_size_guard_counts_what_the_plan_holds(config, monkeypatch):
    """The counts the guard compares with its limits are exactly the plan's runs and run groups."""
    import mkclust.repro.planning as planning

    budgets = []
    real = planning.Budget
    monkeypatch.setattr(planning, "Budget", lambda c: budgets.append(real(c)) or budgets[-1])
    p = plan(load_config(Path(__file__).resolve().parents[2] / config))
    assert (budgets[0].runs, budgets[0].groups) == (len(p.runs), len(p.run_groups()))


def test_group_params_describe_a_group_in_one_line_and_change_with_any_run_field():
    """The run rule's tracked param: the same for the same runs, different when any field of any run
    differs, and one short line however many runs the group holds."""
    from dataclasses import replace

    from mkclust.repro.run_spec import Run, group_params
    runs = [Run("e", "MMC", "mkc", "d", "b", json.dumps({"C": c, "kernel": 1}), s, batch="C")
            for c in (0.1, 1.0, 10.0) for s in (0, 1, 2, 3, 7)]
    gp = group_params(runs)
    assert gp["runs"] == group_params(list(runs))["runs"]
    assert gp["runs"].startswith("15 run(s) of mkc: seeds 0-3,7; C 0.1,1,10; spec sha256 ")
    assert [Run(**r) for r in gp["specs"].runs] == runs
    for change in ({"seed": 9}, {"params_json": json.dumps({"C": 0.1, "kernel": 2})}, {"timing": True},
                   {"estimator": "kkm"}):
        assert group_params([replace(runs[0], **change)] + runs[1:])["runs"] != gp["runs"], change
    many = [replace(runs[0], seed=s) for s in range(5000)]
    assert len(group_params(many)["runs"]) < 100
