"""A run group stopped part-way resumes from its unfinished runs (mkclust.repro.checkpoint): the
records kept by the stopped attempt are used again, only the rest is fitted, and the group's records
equal those of one uninterrupted attempt."""

import json

import numpy as np
import pytest

from mkclust.algorithms import ODMC
from mkclust.repro import runner
from mkclust.repro.checkpoint import GroupCheckpoint
from mkclust.repro.inputs import make_bank, make_dataset
from mkclust.repro.planning import Run
from mkclust.repro.runner import run_group


@pytest.fixture
def inputs(tmp_path):
    ds = make_dataset({"loader": "ringnorm_gen", "options": {"n": 50}})
    ds.save(tmp_path / "ds.npz")
    make_bank({"bank": "mkc3"}, ds).save(tmp_path / "bank.npz")
    return tmp_path / "ds.npz", tmp_path / "bank.npz"


def _lgmmc_runs():
    return [Run("e", "LG-MMC", "lgmmc", "ds", "b", json.dumps({"kernel": 1, "C": C, "max_labels": 5}), seed,
                batch="C") for C in (1, 100) for seed in range(4)]


class _Stop(RuntimeError):
    pass


def _same(a, b):
    keep = ("labels", "metrics", "objective", "n_iter", "status", "seed", "params")
    return [{k: r[k] for k in keep} for r in a] == [{k: r[k] for k in keep} for r in b]


def test_a_stopped_lgmmc_group_resumes_from_its_kept_runs(inputs, tmp_path, monkeypatch):
    runs = _lgmmc_runs()
    whole = run_group(runs, *inputs)
    fits = []
    real = runner._fit_batch_records

    def counted(batch, *args, stop_after=None, **kw):
        if stop_after is not None and len(fits) >= stop_after:
            raise _Stop
        fits.append([run.seed for run, _ in batch])
        return real(batch, *args, **kw)

    folder = tmp_path / "g.json.partial"
    monkeypatch.setattr(runner, "_fit_batch_records", lambda *a, **kw: counted(*a, stop_after=3, **kw))
    with pytest.raises(_Stop):
        run_group(runs, *inputs, checkpoint=folder)
    assert len(fits) == 3 and len(GroupCheckpoint(folder, inputs)) == 3     # one run per fit, each kept
    fits.clear()
    monkeypatch.setattr(runner, "_fit_batch_records", counted)
    resumed = run_group(runs, *inputs, checkpoint=folder)
    assert len(fits) == len(runs) - 3                                       # the kept runs were not fitted again
    assert _same(resumed, whole)
    shares = {(r["fit_seconds"], r["cpu_seconds"]) for r in resumed}
    assert len(shares) == 1                                                 # the seconds shared as a batch shares them
    fits.clear()
    assert _same(run_group(runs, *inputs, checkpoint=folder), whole) and fits == []


def test_kept_runs_are_not_used_for_other_inputs_or_runs(inputs, tmp_path, monkeypatch):
    ds_path, bank_path = inputs
    runs = _lgmmc_runs()[:2]
    folder = tmp_path / "g.json.partial"
    run_group(runs, ds_path, bank_path, checkpoint=folder)
    kept = GroupCheckpoint(folder, inputs)
    assert all(kept.get(run) is not None for run in runs)
    other_seed = Run(**{**runs[0].spec(), "seed": 7})
    assert kept.get(other_seed) is None
    bank = np.load(bank_path, allow_pickle=False)
    changed = {k: bank[k] for k in bank.files}
    changed["K"] = changed["K"] * 2.0
    np.savez(bank_path, **changed)                                          # same file name, other bytes
    assert GroupCheckpoint(folder, inputs).get(runs[0]) is None


def test_a_batch_fitted_at_once_is_kept_whole_and_read_back(inputs, tmp_path, monkeypatch):
    """ODMC's batch is one vectorised computation: kept when it ends, and read back instead of fitted."""
    runs = [Run("e", "ODMC", "odmc", "ds", "b", json.dumps({"kernel": 1, "lam": lam, "max_iter": 200}), 0,
                batch="lam") for lam in (1, 10, 100)]
    folder = tmp_path / "o.json.partial"
    first = run_group(runs, *inputs, checkpoint=folder)
    assert len(GroupCheckpoint(folder, inputs)) == 3

    def no_fit(*a, **kw):
        raise AssertionError("fitted again")

    monkeypatch.setattr(ODMC, "fit_batch", classmethod(no_fit))
    monkeypatch.setattr(ODMC, "fit", no_fit)
    assert _same(run_group(runs, *inputs, checkpoint=folder), first)


def test_the_code_a_run_is_keyed_by_is_its_estimators_imports():
    """The closure follows the source's imports (lazy ones too), not what happens to be loaded: LG-MMC
    runs its SVM, the label search and the kernels' centring, not ODMC's solver; ODMC the reverse."""
    from mkclust.repro.checkpoint import source_closure
    lgmmc = set(source_closure("mkclust.algorithms.lgmmc"))
    odmc = set(source_closure("mkclust.algorithms.odmc"))
    assert {"mkclust.algorithms._box_svm", "mkclust.algorithms._labels", "mkclust.algorithms.base",
            "mkclust.kernels"} <= lgmmc
    assert not {"mkclust.algorithms.odmc", "mkclust.algorithms._odmc_solver", "mkclust.algorithms"} & lgmmc
    assert "mkclust.algorithms._odmc_solver" in odmc and "mkclust.algorithms._box_svm" not in odmc
    assert "mkclust.algorithms._labels" in odmc & lgmmc
    assert all(source for source in source_closure("mkclust.algorithms.lgmmc").values())


def test_a_module_is_a_package_only_with_its_own_init():
    """A plain module is not a package (``resources.files`` of one gives its package's folder since
    Python 3.12, whose ``__init__.py`` must not count), so its relative imports anchor at its package."""
    from mkclust.repro.checkpoint import _imported, _is_package, module_source
    assert _is_package("mkclust") and _is_package("mkclust.algorithms")
    assert not _is_package("mkclust.algorithms.lgmmc") and not _is_package("mkclust.algorithms.nothing")
    assert module_source("mkclust.algorithms.nothing") is None
    assert _imported("mkclust.algorithms.lgmmc", b"from ._labels import x\nfrom . import base\n") == {
        "mkclust.algorithms._labels", "mkclust.algorithms.base"}


def test_kept_runs_outlive_a_change_to_code_they_do_not_run(inputs, tmp_path, monkeypatch):
    """An LG-MMC group's kept runs are found after ODMC's solver changes and not after the label search
    they both run changes; records kept under the older digest of all of mkclust.algorithms are
    found while that source is unchanged."""
    from mkclust.repro import checkpoint
    runs = _lgmmc_runs()[:2]
    folder = tmp_path / "g.json.partial"
    run_group(runs, *inputs, checkpoint=folder)
    real = checkpoint.module_source

    def edited(module):
        def source(m):
            return real(m) + b"\n# edited\n" if m == module else real(m)
        return source
    monkeypatch.setattr(checkpoint, "module_source", edited("mkclust.algorithms._odmc_solver"))
    assert all(GroupCheckpoint(folder, inputs).get(run) is not None for run in runs)
    monkeypatch.setattr(checkpoint, "module_source", edited("mkclust.algorithms._labels"))
    assert all(GroupCheckpoint(folder, inputs).get(run) is None for run in runs)
    monkeypatch.setattr(checkpoint, "module_source", real)
    kept = GroupCheckpoint(folder, inputs)
    record = kept.get(runs[0])
    kept._path(runs[0]).rename(kept._path(runs[0], legacy=True))           # as a record kept before 2026-11-28
    assert GroupCheckpoint(folder, inputs).get(runs[0]) == record
    monkeypatch.setattr(checkpoint, "algorithms_digest", lambda: "another source")
    assert GroupCheckpoint(folder, inputs).get(runs[0]) is None


def test_a_group_digests_its_code_once_not_once_a_run(inputs, tmp_path, monkeypatch):
    """The code digest (an ast walk of the estimator's closure) is taken once per group and module, for
    the 8 runs' lookups and writes alike, and names the same files as a digest taken for each."""
    from mkclust.repro import checkpoint
    calls = []
    real = checkpoint.code_digest
    monkeypatch.setattr(checkpoint, "code_digest", lambda m: calls.append(m) or real(m))
    runs = _lgmmc_runs()
    folder = tmp_path / "g.json.partial"
    run_group(runs, *inputs, checkpoint=folder)
    assert calls == ["mkclust.algorithms.lgmmc"]
    names = {p.name for p in folder.glob(f"*{checkpoint.SUFFIX}")}
    assert len(names) == len(runs) and names == {GroupCheckpoint(folder, inputs)._path(r).name for r in runs}
