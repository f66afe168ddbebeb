"""Every registered paper data set against the sizes of the papers' tables, on the mirrored raw files.

The mirror is ``$MKCLUST_DATA_MIRROR`` or ``../shared/datasets`` beside the checkout; where neither
exists these tests skip with that reason (the download layer itself is tested in test_download.py; how
the mirror is found: tests/_machine.py).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from _machine import MIRROR, needs_mirror

from mkclust.datasets import REGISTRY, DatasetUnavailable, load
from mkclust.datasets.__main__ import main as datasets_cli
from mkclust.datasets.download import MIRROR_ENV, sha256_file
from mkclust.datasets.paper import RAW_FILES, SPLICE_BASES
from mkclust.kernels import apply_preprocess


# The papers' Table 1 sizes, transcribed here independently of the registry: (paper, name) -> n, d, c
PAPER_TABLES = {
    # MKC, Table 1
    ("mkc", "digits1v7"): (361, 64, 2), ("mkc", "digits2v7"): (356, 64, 2), ("mkc", "ionosphere"): (354, 64, 2),
    ("mkc", "svmguide1-a"): (1000, 4, 2), ("mkc", "ringnorm"): (1000, 20, 2), ("mkc", "letterAvB"): (1555, 16, 2),
    ("mkc", "satellite"): (2236, 36, 2), ("mkc", "digits0689"): (713, 64, 4), ("mkc", "digits1279"): (718, 64, 4),
    ("mkc", "letterABCD"): (3096, 16, 4), ("mkc", "mnist01234"): (28911, 196, 5),
    # ODMC, Table 1 (every set two-class)
    **{("odmc", k): (n, d, 2) for k, (n, d) in {
        "echocardiogram": (62, 8), "dbworld": (64, 4702), "hepatitis": (80, 19), "colic": (188, 13),
        "house": (232, 16), "heart-h": (261, 10), "heart": (270, 9), "heart-statlog": (270, 13),
        "breast": (277, 9), "cylinder-bands": (277, 39), "heart-c": (296, 13), "haberman": (306, 14),
        "ionosphere": (351, 33), "vehicle": (435, 16), "credit-a": (653, 15), "diabetes": (768, 8),
        "fourclass": (862, 2), "tic-tac-toe": (958, 9), "credit-g": (1000, 20), "german": (1000, 59),
        "optdigits": (1143, 42), "svmguide3": (1284, 22), "sick": (2643, 28), "splice": (3175, 60)}.items()},
    # RMKKM, Table 1; SCMK, Table 1 (the same sets without COIL20)
    **{(p, k): v for k, v in {
        "YALE": (165, 1024, 15), "JAFFE": (213, 676, 10), "ORL": (400, 1024, 40), "AR": (840, 768, 120),
        "COIL20": (1440, 768, 20), "BA": (1404, 320, 36), "TR11": (414, 6429, 9), "TR41": (878, 7454, 10),
        "TR45": (690, 8261, 10)}.items() for p in ("rmkkm", "scmk") if not (p == "scmk" and k == "COIL20")},
}
MULTIVIEW = {"mfeat": (2000, 10, 6), "msrc_v1": (210, 7, 5), "orl_4view": (400, 40, 4), "100leaves": (1600, 100, 3)}


def test_registry_covers_every_paper_set():
    registered = {(s.paper, name): (s.n, s.d, s.c) for name, spec in REGISTRY.items() for s in spec.paper}
    assert registered == PAPER_TABLES
    assert set(MULTIVIEW) <= set(REGISTRY)
    for name, spec in REGISTRY.items():
        if spec.kind == "download":
            assert spec.files and all(f.url.startswith("http") and len(f.sha256) == 64 for f in spec.files), name


def test_unavailable_set_says_why():
    with pytest.raises(DatasetUnavailable, match="dbworld.*not obtainable"):
        load("dbworld")


@needs_mirror
def test_every_raw_file_is_in_the_mirror_with_its_sha256():
    for path, raw in RAW_FILES.items():
        f = MIRROR / path
        assert f.is_file(), path
        assert f.stat().st_size == raw.size, path
        assert sha256_file(f) == raw.sha256, path


def _paper_loads():
    for name, spec in sorted(REGISTRY.items()):
        for shape in spec.paper:
            if spec.kind != "unavailable":
                yield pytest.param(name, shape, id=f"{shape.paper}-{name}")


@needs_mirror
@pytest.mark.parametrize("name,shape", list(_paper_loads()))
def test_size_equals_the_papers_or_is_flagged(name, shape):
    ds = load(name, mirror=MIRROR, download=False, **shape.opts)
    got = (ds.n, ds.d, ds.n_classes)
    want = PAPER_TABLES[(shape.paper, name)]
    assert isinstance(ds.X, np.ndarray) or sp.issparse(ds.X)
    dense = ds.X.toarray() if sp.issparse(ds.X) else ds.X
    assert np.isfinite(dense).all(), "missing values left in X"
    assert np.bincount(ds.y).min() > 0 and ds.y.max() == ds.n_classes - 1
    if got == want:
        assert not shape.deviation, f"{name}: a deviation is documented but the size matches the paper"
        assert not any(f.endswith(f"({shape.paper}: {w})") for f, w in zip(ds.meta["flags"], want))
    else:
        assert shape.deviation, f"{name}: {got} differs from {shape.paper}'s {want} without a documented reason"
        for what, g, w in zip("ndc", got, want):
            if g != w:
                assert f"{what}={g} ({shape.paper}: {w})" in ds.meta["flags"]
        assert any(shape.deviation in note for note in ds.meta["flag_notes"])
    if ds.meta["kind"] == "download":
        for f in ds.meta["raw_files"]:
            assert f["obtained_from"] == "mirror" and f["sha256"] == RAW_FILES[f["path"]].sha256


@needs_mirror
@pytest.mark.parametrize("name", sorted(MULTIVIEW))
def test_multiview_sets_keep_each_view_as_a_block(name):
    ds = load(name, mirror=MIRROR, download=False)
    n, c, v = MULTIVIEW[name]
    views = ds.meta["views"]
    assert (ds.n, ds.n_classes, len(views)) == (n, c, v)
    assert views[0]["start"] == 0 and views[-1]["stop"] == ds.d
    assert all(a["stop"] == b["start"] for a, b in zip(views, views[1:]))
    assert np.bincount(ds.y).min() == np.bincount(ds.y).max()  # these sets are balanced


@needs_mirror
def test_mfeat_uci_text_files_equal_the_mat_views():
    mat = load("mfeat", mirror=MIRROR, download=False)
    uci = load("mfeat", mirror=MIRROR, download=False, source="uci")
    block = {v["name"]: (v["start"], v["stop"]) for v in mat.meta["views"]}
    for v in uci.meta["views"]:
        a, b = block[v["name"]]
        np.testing.assert_array_equal(uci.X[:, v["start"]:v["stop"]], mat.X[:, a:b])
    np.testing.assert_array_equal(uci.y, mat.y)


@needs_mirror
def test_splice_coding_matches_libsvm_scaled_copy():
    """LIBSVM's splice (first 1000 rows, scaled to [-1, 1], +1 = neither) is a subset of our rows."""
    ds = load("splice", mirror=MIRROR, download=False)
    lib = np.loadtxt(MIRROR / "splice/moeec_splice.txt")
    lo, hi = min(SPLICE_BASES.values()), max(SPLICE_BASES.values())
    ours = np.round((2 * ds.X - (lo + hi)) / (hi - lo), 4)
    index = {row.tobytes(): k for k, row in enumerate(ours)}
    rows = [index.get(np.round(r, 4).tobytes()) for r in lib[:, 1:]]
    assert None not in rows
    neither = ds.meta["class_names"].index("N")
    np.testing.assert_array_equal(ds.y[rows] == neither, lib[:, 0] == 1)


@needs_mirror
@pytest.mark.parametrize("name,prep", [("YALE", "zscore_unit"), ("ORL", "zscore_unit"), ("JAFFE", "unit")])
def test_authors_preprocessed_files_equal_our_preprocessing(name, prep):
    raw = load(name, mirror=MIRROR, download=False)
    authors = load(name, mirror=MIRROR, download=False, variant="authors")
    np.testing.assert_allclose(apply_preprocess(raw.X, prep), authors.X, atol=1e-12)
    np.testing.assert_array_equal(raw.y, authors.y)


@needs_mirror
def test_subsets_are_stratified_and_seeded():
    a = load("ringnorm", mirror=MIRROR, download=False)
    b = load("ringnorm", mirror=MIRROR, download=False, seed=1)
    full = load("ringnorm", mirror=MIRROR, download=False, n=10**9)
    assert full.n == 7400 and not full.meta["flags"]
    assert not np.array_equal(a.X, b.X)
    share = np.bincount(full.y) / full.n
    np.testing.assert_allclose(np.bincount(a.y) / a.n, share, atol=1e-3)
    assert "subset 1000 of 7400" in a.meta["flags"]


@needs_mirror
def test_tf_idf_sets_stay_sparse():
    ds = load("TR11", mirror=MIRROR, download=False)
    assert sp.issparse(ds.X)
    np.testing.assert_allclose(sp.linalg.norm(ds.X, axis=1), 1.0, atol=1e-10)


@needs_mirror
def test_cli_lists_every_set_with_the_mirror(capsys, tmp_path):
    assert datasets_cli(["--list", "--mirror", str(MIRROR), "--raw-dir", str(tmp_path), "--no-download"]) == 0
    out = capsys.readouterr().out
    assert "0 not local, 0 failed" in out and "1 unavailable" in out
    assert "[n=176 (odmc: 188)]" in out  # colic, flagged
    line = next(ln for ln in out.splitlines() if ln.startswith("letterABCD "))
    assert line.split()[1:4] == ["3096", "16", "4"]
    assert not list(tmp_path.iterdir())  # nothing copied out of the mirror


def test_cli_without_mirror_or_network(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    assert datasets_cli(["--list", "--raw-dir", str(tmp_path), "--no-download"]) == 0
    out = capsys.readouterr().out
    assert "not local" in out and "0 failed" in out and "1797" in out
