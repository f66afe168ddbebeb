"""A researcher's own data file through the workflow (workflow/configs/own_data.yaml): every method
that fits it, a comparison table that names the data set, clear errors for a missing file."""

import pandas as pd
import pytest
import yaml
from sklearn.datasets import load_wine

from _wf import REPO, new_workdir, smk

OWN = REPO / "workflow" / "configs" / "own_data.yaml"


def _wine_csv(folder):
    path = folder / "my data" / "wine.csv"           # a path with a space
    path.parent.mkdir(parents=True)
    load_wine(as_frame=True).frame.rename(columns={"target": "label"}).to_csv(path, index=False)
    return path


def _own_config(csv, seeds=2):
    cfg = yaml.safe_load(OWN.read_text())
    cfg["own_data"] = str(csv)
    cfg["experiments"]["own"]["seeds"] = list(range(seeds))   # the example's 5 seeds, fewer for the test's time
    return cfg


@pytest.mark.workflow
def test_the_own_data_example_runs_every_method_on_a_wine_csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("own")
    csv = _wine_csv(folder)
    wd = new_workdir(tmp_path_factory, "own_run", _own_config(csv, seeds=1))
    p = smk(wd)
    table = pd.read_csv(wd / "figures_own/own_data/comparison.csv")
    assert set(table["dataset"]) == {"wine"}                  # named after the file
    acc = table[table.metric == "acc"].set_index("column")["value"]
    assert acc[["KM", "KKM", "RMKKM", "SCMK", "MKC"]].min() > 0.85   # wine's three classes are well separated
    na = table[table.metric == "acc"].set_index("column")["na_reason"]
    for two_class in ("ODMC", "LG-MMC", "IterSVR", "GMMC"):   # declined on three classes, with the reason
        assert pd.isna(acc[two_class]) and "clusters two classes only; wine has 3" in na[two_class]
    assert set(table["metric"]) == {"acc", "nmi", "ari", "fit_seconds"}
    summary = yaml.safe_load((wd / "figures_own/run_summary.json").read_text())
    assert summary["data_files"]["wine"]["path"] == str(csv) and len(summary["data_files"]["wine"]["sha256"]) == 64
    assert (wd / "figures_own/own_data/comparison_acc.png").read_bytes()[:4] == b"\x89PNG"
    assert "Nothing to be done" in (lambda q: q.stdout + q.stderr)(smk(wd, "-n"))
    # a changed file reruns what depends on it
    frame = pd.read_csv(csv)
    frame.iloc[:5, 0] += 0.5
    frame.to_csv(csv, index=False)
    dry = smk(wd, "-n")
    assert "rule dataset" in dry.stdout + dry.stderr and "rule run:" in dry.stdout + dry.stderr
    assert p.returncode == 0


@pytest.mark.parametrize("own_data, message", [
    ("{folder}/my data/missing.csv", "mkclust: config: datasets.missing: data file '{folder}/my data/missing.csv' "
                                     "does not exist"),
    (None, "mkclust: config: own_data: name your data file"),
])
def test_a_missing_own_data_file_fails_the_dry_run_with_its_path_and_no_traceback(tmp_path_factory, own_data,
                                                                                  message):
    folder = tmp_path_factory.mktemp("own_missing")
    cfg = _own_config(folder / "x.csv")
    cfg["own_data"] = own_data.format(folder=folder) if own_data else None
    wd = new_workdir(tmp_path_factory, "own_bad", cfg)
    p = smk(wd, "-n", check=False)
    assert p.returncode != 0
    assert message.format(folder=folder) in p.stderr
    assert "Traceback" not in p.stderr and 'File "' not in p.stderr


def test_own_data_files_in_every_format_load_with_their_checks(tmp_path):
    """CSV, TSV, LIBSVM, .mat and .npz of the same data give the same data set; missing values are an
    error naming the rows unless imputed or dropped; one class is refused."""
    import numpy as np
    import scipy.io
    from sklearn.datasets import dump_svmlight_file

    from mkclust.datasets import load

    wine = load_wine(as_frame=True)
    frame = wine.frame.rename(columns={"target": "label"})
    frame.to_csv(tmp_path / "w.csv", index=False)
    frame.to_csv(tmp_path / "w.tsv", index=False, sep="\t")
    dump_svmlight_file(wine.data.values, wine.target.values, str(tmp_path / "w.libsvm"))
    scipy.io.savemat(tmp_path / "w.mat", {"X": wine.data.values, "gnd": wine.target.values})
    np.savez(tmp_path / "w.npz", X=wine.data.values, y=wine.target.values)
    ref = load("file", path=str(tmp_path / "w.csv"))
    assert (ref.n, ref.d, ref.n_classes) == (178, 13, 3)
    for ext in ("tsv", "libsvm", "mat", "npz"):
        ds = load("file", path=str(tmp_path / f"w.{ext}"))
        X = ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X
        np.testing.assert_allclose(X, ref.X, rtol=1e-6)
        np.testing.assert_array_equal(ds.y, ref.y)
    holes = frame.copy()
    holes.iloc[[3, 7], 0] = np.nan
    holes.to_csv(tmp_path / "h.csv", index=False)
    with pytest.raises(ValueError, match=r"h.csv: 2 row\(s\) have missing values \(first data rows: 4, 8\)"):
        load("file", path=str(tmp_path / "h.csv"))
    assert load("file", path=str(tmp_path / "h.csv"), missing="drop").n == 176
    filled = load("file", path=str(tmp_path / "h.csv"), missing="mean")
    assert filled.n == 178 and filled.X[3, 0] == pytest.approx(np.nanmean(holes.iloc[:, 0]))
    frame.assign(label=0).to_csv(tmp_path / "one.csv", index=False)
    with pytest.raises(ValueError, match="at least 2 samples and 2 classes"):
        load("file", path=str(tmp_path / "one.csv"))
    views = load("file", path=str(tmp_path / "w.csv"),
                 views=[{"name": "a", "columns": ["alcohol", "ash"]}, {"name": "b", "start": 5, "stop": 8}])
    assert views.meta["views"] == [{"name": "a", "start": 0, "stop": 2}, {"name": "b", "start": 2, "stop": 5}]


def test_datasets_list_shows_an_own_file_with_n_d_and_classes(tmp_path, monkeypatch, capsys):
    from mkclust.datasets.__main__ import main

    monkeypatch.delenv("MKCLUST_DATA_MIRROR", raising=False)
    csv = _wine_csv(tmp_path)
    main(["--list", "--no-download", "--raw-dir", str(tmp_path / "raw"), str(csv), str(tmp_path / "none.csv")])
    out = capsys.readouterr().out
    assert any(line.split()[-6:] == ["178", "13", "3", "-", "your", "file"] for line in out.splitlines()
               if str(csv) in line)
    assert f"{tmp_path / 'none.csv'}" in out and "does not exist" in out
