import numpy as np
import pytest
import scipy.sparse as sp

from mkclust import datasets
from mkclust.datasets import Dataset, load
from mkclust.datasets.__main__ import main as datasets_cli

EXPECTED = {  # name: (n, d, classes); MKC paper Table 1 for the digit subsets
    "digits1v7": (361, 64, 2),
    "digits2v7": (356, 64, 2),
    "digits0689": (713, 64, 4),
    "digits1279": (718, 64, 4),
    "digits": (1797, 64, 10),
    "wine": (178, 13, 3),
    "breast_cancer": (569, 30, 2),
    "ringnorm_gen": (1000, 20, 2),
    "twonorm_gen": (1000, 20, 2),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sizes_and_labels(name):
    ds = load(name)
    assert (ds.n, ds.d, ds.n_classes) == EXPECTED[name]
    assert ds.X.dtype == np.float64 and ds.y.dtype == np.int64
    assert set(np.unique(ds.y)) == set(range(ds.n_classes))
    for key in ("name", "n", "d", "classes", "source", "citation", "preprocessing"):
        assert key in ds.meta, key
    assert ds.meta["name"] == name and ds.meta["n"] == ds.n


def test_digit_subsets_keep_the_right_classes():
    full = load("digits")
    sub = load("digits1279")
    # the subset's rows are exactly the rows of digits with classes 1, 2, 7, 9, in order
    keep = np.isin(full.y, [1, 2, 7, 9])
    np.testing.assert_array_equal(sub.X, full.X[keep])
    np.testing.assert_array_equal(sub.y, np.searchsorted([1, 2, 7, 9], full.y[keep]))


@pytest.mark.parametrize("name", ["digits", "digits_views"])
def test_per_class_subset_is_stratified_seeded_and_a_subset(name):
    full = load(name)
    sub = load(name, per_class=25, seed=3)
    assert sub.n == 250 and np.array_equal(np.bincount(sub.y), np.full(10, 25))
    # the rows are rows of the full set, in order, and the seed decides which
    rows = {r.tobytes(): i for i, r in enumerate(full.X)}
    idx = [rows[r.tobytes()] for r in sub.X]
    assert idx == sorted(idx) and np.array_equal(full.y[idx], sub.y)
    assert np.array_equal(load(name, per_class=25, seed=3).X, sub.X)
    assert not np.array_equal(load(name, per_class=25, seed=4).X, sub.X)
    assert "25 random samples per class (seed 3)" in sub.meta["preprocessing"]
    with pytest.raises(ValueError, match="per_class"):
        load(name, per_class=0)


@pytest.mark.parametrize("name", ["ringnorm_gen", "twonorm_gen"])
def test_generators_balanced_and_seeded(name):
    a = load(name, n=400, seed=1)
    b = load(name, n=400, seed=1)
    c = load(name, n=400, seed=2)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, c.X)
    assert np.bincount(a.y).tolist() == [200, 200]
    odd = load(name, n=401)
    assert np.bincount(odd.y).tolist() == [201, 200]


def test_generator_distributions():
    r = load("ringnorm_gen", n=20000, seed=0)
    x0, x1 = r.X[r.y == 0], r.X[r.y == 1]
    assert x0.var(axis=0).mean() == pytest.approx(4.0, rel=0.05)  # N(0, 4I)
    assert x1.var(axis=0).mean() == pytest.approx(1.0, rel=0.05)  # N(a1, I)
    assert x1.mean() == pytest.approx(1 / np.sqrt(20), abs=0.01)  # Breiman's a = 1/sqrt(d)
    t = load("twonorm_gen", n=20000, seed=0)
    assert t.X[t.y == 0].mean() == pytest.approx(2 / np.sqrt(20), abs=0.01)
    assert t.X[t.y == 1].mean() == pytest.approx(-2 / np.sqrt(20), abs=0.01)
    assert load("ringnorm_gen", n=10, a=0.5).meta["preprocessing"].count("a=0.5") == 1


def test_digits_views_blocks():
    ds = load("digits_views")
    views = ds.meta["views"]
    assert len(views) >= 4
    assert views[0]["start"] == 0 and views[-1]["stop"] == ds.d
    assert all(v["stop"] == w["start"] for v, w in zip(views, views[1:]))
    full = load("digits")
    by = {v["name"]: ds.X[:, v["start"]:v["stop"]] for v in views}
    np.testing.assert_array_equal(by["pixels"], full.X)
    imgs = full.X.reshape(-1, 8, 8)
    np.testing.assert_allclose(by["profiles"][:, :8], imgs.sum(axis=2))
    np.testing.assert_allclose(by["profiles"][:, 8:], imgs.sum(axis=1))
    np.testing.assert_allclose(by["pooled"][:, 0], imgs[:, :2, :2].mean(axis=(1, 2)))
    # the orientation histograms distribute the whole gradient magnitude
    gy, gx = np.gradient(imgs, axis=(1, 2))
    np.testing.assert_allclose(by["gradient_hist"].sum(axis=1), np.hypot(gx, gy).sum(axis=(1, 2)))


def test_save_load_roundtrip(tmp_path):
    ds = load("wine")
    ds.save(tmp_path / "wine.npz")
    back = Dataset.load(tmp_path / "wine.npz")
    np.testing.assert_array_equal(back.X, ds.X)
    np.testing.assert_array_equal(back.y, ds.y)
    assert back.meta == ds.meta
    Xs = sp.random(20, 50, density=0.1, random_state=0, format="csr")
    sds = Dataset(Xs, np.arange(20) % 3, {"name": "sparse"})
    sds.save(tmp_path / "s.npz")
    sback = Dataset.load(tmp_path / "s.npz")
    assert sp.issparse(sback.X)
    np.testing.assert_array_equal(sback.X.toarray(), Xs.toarray())
    assert not list(tmp_path.glob("*.tmp"))


def test_unknown_name_and_option():
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        load("nope")
    with pytest.raises(ValueError, match="bad option"):
        load("digits", colour=True)
    with pytest.raises(ValueError, match="at least 2"):
        load("ringnorm_gen", n=1)


def test_cli_list(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("MKCLUST_DATA_MIRROR", raising=False)
    assert datasets_cli(["--list", "--no-download", "--raw-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in datasets.list_datasets():
        if datasets.REGISTRY[name].kind != "local":     # "file" loads a path given with the files argument
            assert name in out
    assert "361" in out and "1797" in out
