"""The runner and the planner on the library: run groups fitted in one batch as the estimators'
own ``fit_batch``, the raw files a plan will download, the schema's preprocessing list."""

import json
from pathlib import Path

import pytest
import yaml

from mkclust import kernels
from mkclust.algorithms import GMMC, ODMC
from mkclust.datasets import download as dl
from mkclust.kernels import KernelBank
from mkclust.repro.inputs import make_bank, make_dataset
from mkclust.repro.planning import Run, plan
from mkclust.repro.runner import run_group


def test_run_group_solves_a_gmmc_c_path_in_one_batch(tmp_path):
    """The workflow's runner hands every C of a GMMC group to fit_batch (none is fitted alone first),
    so the records equal the batch's; an SDP that did not finish is an N/A record with its reason."""
    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": 40}})
    ds.save(tmp_path / "ds.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "bank.npz")
    K = KernelBank.load(tmp_path / "bank.npz").kernel(1)

    def runs(**fixed):
        return [Run("e", "GMMC", "gmmc", "ds", "b", json.dumps({"kernel": 1, "C": C, **fixed}), 0, batch="C")
                for C in (1, 10, 100)]

    recs = run_group(runs(), tmp_path / "ds.npz", tmp_path / "bank.npz")
    batch = GMMC.fit_batch([GMMC(C=C) for C in (1, 10, 100)], K)
    assert [r["labels"] for r in recs] == [e.labels_.tolist() for e in batch]
    assert [r["n_iter"] for r in recs] == [e.n_iter_ for e in batch]
    assert {r["status"] for r in recs} == {"ok"}
    declined = run_group(runs(max_n=30), tmp_path / "ds.npz", tmp_path / "bank.npz")
    assert [r["status"] for r in declined] == ["not_finished"] * 3
    assert all("n = 40 > max_n = 30" in r["reason"] and r["labels"] == [] for r in declined)


def test_run_group_fits_odmc_runs_in_one_batch(tmp_path):
    """The workflow's runner: the first run of an input is fitted alone (its seconds per iteration
    are one fit's, the ODMC paper's Figure 2), the rest in one batch; records equal separate fits."""
    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": 90}})
    ds.save(tmp_path / "ds.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "bank.npz")
    runs = [Run("e", "ODMC", "odmc", "ds", "b", json.dumps({"kernel": 1, "lam": lam, "max_iter": 400}), seed,
                batch="lam") for lam in (1, 100) for seed in (0, 1)]
    recs = run_group(runs, tmp_path / "ds.npz", tmp_path / "bank.npz")
    K = KernelBank.load(tmp_path / "bank.npz").kernel(1)
    for run, rec in zip(runs, recs):
        p = json.loads(run.params_json)
        alone = ODMC(lam=p["lam"], max_iter=400, random_state=run.seed).fit(K)
        assert rec["labels"] == alone.labels_.tolist()
        assert rec["objective"] == pytest.approx(alone.objective_, rel=1e-9)
    sizes = [rec["diagnostics"]["batch_size_"] for rec in recs]
    assert sizes == [1, 3, 3, 3]
    assert recs[0]["diagnostics"]["seconds_per_iteration_"] > 0
    assert all(rec["diagnostics"]["seconds_per_iteration_"] is None for rec in recs[1:])
    assert recs[1]["fit_seconds"] == recs[2]["fit_seconds"] > 0


def test_the_plan_names_the_raw_files_a_run_will_download(tmp_path, monkeypatch):
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)
    config = {"data_dir": str(tmp_path / "data"), "experiments": {"e": {
        "paper": "p", "datasets": ["colic", "digits1v7"], "seeds": [0],
        "algorithms": {"KM": {"algorithm": "km"}}}}}
    p = plan(config)
    assert p.inputs.missing_raw_files() == {"colic": ["colic/colic.arff"]}     # digits1v7 is embedded
    mirror = tmp_path / "mirror" / "colic"
    mirror.mkdir(parents=True)
    (mirror / "colic.arff").write_text("x")
    assert p.inputs.missing_raw_files(mirror=tmp_path / "mirror") == {}
    (tmp_path / "data" / "processed").mkdir(parents=True)
    (tmp_path / "data" / "processed" / "colic.npz").write_text("built")
    assert p.inputs.missing_raw_files() == {}                                   # built already: nothing to fetch


def test_config_schema_lists_every_preprocessing():
    schema = yaml.safe_load((Path(__file__).resolve().parents[2] / "workflow/schemas/config.schema.yaml").read_text())
    enum = schema["properties"]["kernel_banks"]["additionalProperties"]["properties"]["preprocess"]["enum"]
    assert sorted(enum) == sorted(kernels.PREPROCESS)


def test_a_records_file_with_invalid_json_is_named_among_the_inputs(tmp_path):
    """The aggregate reads many records files; a damaged one used to raise JSONDecodeError with a line
    and column but no file name."""
    from mkclust._io import CorruptFile
    from mkclust.repro.records import load_records

    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps([{"seed": 0}, {"seed": 1}]))
    bad.write_text('[{"seed": 0}, {"seed": ')
    assert len(load_records([good])) == 2
    with pytest.raises(CorruptFile, match=rf"{bad} is not a readable records file .*line 1 column 24.*rm -f"):
        load_records([good, bad])


def test_a_subset_fit_records_the_objective_on_its_subset(tmp_path):
    """MKC fitted on a random subset (fit_subset) labels the whole set; its diagnostics are the
    model's objective at the subset's own labels and at the subset's true labels (the subset drawn
    with the run's seed), the same values an MKC fitted on that subset gives."""
    import numpy as np
    from mkclust.algorithms import MKC
    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": 80}})
    ds.save(tmp_path / "ds.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "bank.npz")
    run = Run("e", "MKC-subset", "mkc", "ds", "b", json.dumps({"fit_subset": 40}), 3)
    rec = run_group([run], tmp_path / "ds.npz", tmp_path / "bank.npz")[0]
    S = np.sort(np.random.default_rng(3).choice(80, size=40, replace=False))
    bank = KernelBank.load(tmp_path / "bank.npz")
    est = MKC(n_clusters=2, random_state=3).fit(bank.K[:, S][:, :, S])
    assert rec["status"] == "ok" and len(rec["labels"]) == 80
    diag = rec["diagnostics"]
    assert diag["objective_at_labels"] == pytest.approx(est.objective_at(est.labels_), rel=1e-6)
    assert diag["objective_at_true_labels"] == pytest.approx(est.objective_at(ds.y[S]), rel=1e-6)
    assert diag["objective_at_labels"] != diag["objective_at_true_labels"]


def test_a_group_with_a_label_free_score_stores_it_on_the_average_kernel(tmp_path):
    """``scores: [silhouette]``: every record holds the silhouette of its labels in the distance of the
    bank's equal-weight mean kernel, whichever kernel the run fitted (one yardstick for the settings a
    table chooses among); a run without the entry stores none; an unknown score is a configuration error."""
    from mkclust.metrics import kernel_silhouette
    from mkclust.repro.errors import ConfigError

    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": 60}})
    ds.save(tmp_path / "ds.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "bank.npz")
    Kavg = KernelBank.load(tmp_path / "bank.npz").gram().mean(axis=0)
    runs = [Run("e", "KKM-t", "kkm", "ds", "b", json.dumps({"kernel": k}), 0, batch="kernel", scores="silhouette")
            for k in (0, 2)]
    recs = run_group(runs, tmp_path / "ds.npz", tmp_path / "bank.npz")
    for rec in recs:
        assert rec["metrics"]["silhouette"] == pytest.approx(kernel_silhouette(Kavg, rec["labels"]), abs=1e-12)
    assert recs[0]["labels"] != recs[1]["labels"]   # two kernels, two partitions scored in one distance
    plain = run_group([Run("e", "KKM", "kkm", "ds", "b", json.dumps({"kernel": 0}), 0)], tmp_path / "ds.npz",
                      tmp_path / "bank.npz")
    assert "silhouette" not in plain[0]["metrics"]
    assert runs[0].spec()["scores"] == "silhouette"
    assert "scores" not in Run("e", "KKM", "kkm", "ds", "b", "{}", 0).spec()   # older groups keep their params
    cfg = {"datasets": {"ds": {"loader": "ringnorm_gen", "n": 40}}, "kernel_banks": {"b": {"bank": "mkc3"}},
           "experiments": {"e": {"datasets": ["ds"], "banks": ["b"],
                                 "algorithms": {"KKM": {"algorithm": "kkm", "scores": ["stability"]}}}}}
    with pytest.raises(ConfigError, match=r"unknown label-free score\(s\) \['stability'\]"):
        plan(cfg)


def test_the_versions_a_record_keeps_are_read_once_and_never_shared(monkeypatch):
    """Every run record lists the package versions (record_versions): read from the packages' metadata
    once per process, each call a dict of its own, so a record that changes its copy changes no other."""
    import numpy as np

    from mkclust.repro import provenance
    read = []
    real = provenance.version
    monkeypatch.setattr(provenance, "version", lambda p: read.append(p) or real(p))
    provenance._record_versions.cache_clear()
    try:
        a, b = provenance.record_versions(), provenance.record_versions()
        assert read == list(provenance.RECORD_PACKAGES)
        assert a == b and a is not b and a["numpy"] == np.__version__
        a["numpy"] = "edited"
        assert provenance.record_versions()["numpy"] == np.__version__
    finally:
        provenance._record_versions.cache_clear()
