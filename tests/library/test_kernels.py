import numpy as np
import pytest
import scipy.sparse as sp

from mkclust import kernels
from mkclust.datasets import load
from mkclust.kernels import KernelBank, build_bank, feature_map


@pytest.fixture(scope="module")
def X():
    return load("digits1v7").X[:120]


def assert_psd_symmetric(K):
    for k in K:
        assert np.array_equal(k, k.T), "not exactly symmetric"
        lam_min = np.linalg.eigvalsh(k)[0]
        assert lam_min >= -1e-8 * np.linalg.norm(k, 2)


@pytest.mark.parametrize("bank,m", [("mkc3", 3), ("rmkkm12", 12), ("scmk12", 12), ("gauss_grid", 5)])
def test_banks_psd_symmetric(X, bank, m):
    b = build_bank(bank, X)
    assert b.K.shape == (m, X.shape[0], X.shape[0]) and len(b.names) == m
    assert_psd_symmetric(b.K)
    assert b.meta["bank"] == bank


def test_rmkkm12_as_the_authors_code(X):
    b = build_bank("rmkkm12", X, preprocess="unit")
    np.testing.assert_allclose(np.diagonal(b.K, axis1=1, axis2=2), 1.0, atol=1e-12)
    # Gaussian t0 = 50, 100 are numerically constant 1 (as in the RMKKM authors' code)
    assert np.abs(b.K[5] - 1).max() < 1e-3 and np.abs(b.K[6] - 1).max() < 1e-3
    # the last kernel is the cosine kernel
    Xu = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(b.K[11], Xu @ Xu.T, atol=1e-12)
    # the Gaussian width: delta = t0 * max distance, exp(-D / 2 delta^2)
    D = ((Xu[:, None] - Xu[None]) ** 2).sum(-1)
    np.testing.assert_allclose(b.K[3], np.exp(-D / (2 * (1.0 * np.sqrt(D.max())) ** 2)), atol=1e-10)
    # (x'y + 1)^4, normalised
    P = (Xu @ Xu.T + 1) ** 4
    d = np.sqrt(np.diag(P))
    assert b.names[10] == "poly(a=1,b=4)"
    np.testing.assert_allclose(b.K[10], P / d[:, None] / d[None], atol=1e-12)


def test_scmk12_rescaled(X):
    b = build_bank("scmk12", X)
    assert b.K.min() >= 0  # pixel data: every kernel is non-negative
    np.testing.assert_allclose(b.K.max(axis=(1, 2)), 1.0)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    G = np.exp(-D / (0.1 * D.max()))
    np.testing.assert_allclose(b.K[2], G / G.max(), atol=1e-12)


def test_mkc3_defaults(X):
    b = build_bank("mkc3", X)
    n = X.shape[0]
    H = np.eye(n) - 1.0 / n
    np.testing.assert_allclose([np.trace(H @ K @ H) for K in b.K], n)  # the centred kernels have trace n
    # the scale is the only change: each kernel is a positive multiple of the raw one
    raw2 = build_bank("mkc3", X, normalize="none")
    ratio = b.K / raw2.K
    np.testing.assert_allclose(ratio, ratio[:, :1, :1] * np.ones_like(ratio), rtol=1e-10)
    with pytest.raises(ValueError, match="centred trace"):
        kernels.normalize_centered_trace(np.ones((4, 4)))
    raw = build_bank("mkc3", X, d=3, sigma=50.0, normalize="none")
    np.testing.assert_allclose(raw.K[1], (1 + X @ X.T) ** 3, rtol=1e-12)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.testing.assert_allclose(raw.K[2], np.exp(-D / 100.0), atol=1e-12)


def test_gaussian_conventions_hand_computed():
    x = np.array([[0.0, 0.0], [3.0, 4.0]])  # squared distance 25
    e = np.exp
    assert kernels.gaussian_kernel(x, 2.0, "sigma")[0, 1] == pytest.approx(e(-25 / 8))
    assert kernels.gaussian_kernel(x, 2.0, "mkc")[0, 1] == pytest.approx(e(-25 / 4))
    assert kernels.gaussian_kernel(x, 0.5, "rmkkm")[0, 1] == pytest.approx(e(-25 / (2 * 0.25 * 25)))
    assert kernels.gaussian_kernel(x, 0.5, "scmk")[0, 1] == pytest.approx(e(-25 / (0.5 * 25)))
    with pytest.raises(ValueError, match="convention"):
        kernels.gaussian_kernel(x, 1.0, "nope")
    assert kernels.polynomial_kernel(x, 1.0, 2)[1, 1] == pytest.approx(26.0**2)
    assert kernels.cosine_kernel(np.array([[1.0, 0.0], [1.0, 1.0]]))[0, 1] == pytest.approx(1 / np.sqrt(2))


def test_views_linear_sums_to_full_linear_kernel():
    ds = load("digits_views")
    X = ds.X[:200]
    b = build_bank("views_linear", X, views=ds.meta["views"])
    assert b.n_kernels == len(ds.meta["views"])
    # the view blocks partition the columns, so their linear kernels add up to X X'
    np.testing.assert_allclose(b.K.sum(axis=0), X @ X.T, rtol=1e-10)
    with pytest.raises(ValueError, match="views"):
        build_bank("views_linear", X)


def test_views_lg_is_a_linear_and_a_gaussian_kernel_per_view():
    """views_lg: per view the linear kernel (together X X', as views_linear) and scikit-learn's RBF with
    gamma = 1 / (2 sigma^2), sigma^2 the view's mean squared distance; by default each with a unit
    diagonal (a Gaussian has one already; a linear kernel is scaled to cosines)."""
    from sklearn.metrics.pairwise import rbf_kernel

    ds = load("digits_views")
    X, views = ds.X[:120], ds.meta["views"]
    b = build_bank("views_lg", X, views=views, normalize="none")
    first = views[0]["name"]
    assert b.n_kernels == 2 * len(views) and b.names[:2] == [f"linear({first})", f"gauss({first})"]
    np.testing.assert_allclose(b.K[0::2].sum(axis=0), X @ X.T, rtol=1e-10)
    v = views[1]
    Xv = X[:, v["start"]:v["stop"]]
    D = ((Xv[:, None] - Xv[None]) ** 2).sum(-1)
    s2 = D[~np.eye(len(Xv), dtype=bool)].mean()
    np.testing.assert_allclose(b.K[3], rbf_kernel(Xv, gamma=1 / (2 * s2)), atol=1e-10)
    unit = build_bank("views_lg", X, views=views)
    np.testing.assert_allclose(np.diagonal(unit.K, axis1=1, axis2=2), 1.0, atol=1e-12)


def test_sparse_input_equals_dense(X):
    dense = build_bank("rmkkm12", X, preprocess="unit")
    sparse = build_bank("rmkkm12", sp.csr_matrix(X), preprocess="unit")
    np.testing.assert_allclose(sparse.K, dense.K, atol=1e-12)


def test_feature_map_exact_and_truncated(X):
    K = build_bank("gauss_grid", X).K[2]
    F = feature_map(K)
    np.testing.assert_allclose(F @ F.T, K, atol=1e-8 * np.abs(K).max())
    lam = np.sort(np.linalg.eigvalsh(K))[::-1]
    Fr = feature_map(K, rank=10)
    assert Fr.shape == (K.shape[0], 10)
    # Eckart-Young: the rank-10 error is exactly the dropped spectrum
    err = np.linalg.norm(K - Fr @ Fr.T, "fro") ** 2
    assert err == pytest.approx((lam[10:] ** 2).sum(), rel=1e-6)
    Fe, info = feature_map(K, energy=0.9, return_info=True)
    pos = lam[lam > 0]
    r = info["rank"]
    assert pos[:r].sum() / pos.sum() >= 0.9 > pos[: r - 1].sum() / pos.sum()
    with pytest.raises(ValueError, match="energy"):
        feature_map(K, energy=1.5)


@pytest.mark.parametrize("failure", ["no convergence", "no shifts"])
def test_feature_map_answers_by_the_dense_eigensolver_where_arpack_fails(X, monkeypatch, failure):
    """Where ARPACK raises (it did on the benchmark's heart-h, a nearly-identity Gaussian kernel, depending
    on the array's alignment), the Lanczos branch answers by the dense eigh: the same rank, eigenvalues
    and best rank-r approximation as the dense solver, instead of failing the fit."""
    import scipy.sparse.linalg

    K = build_bank("gauss_grid", X).K[2]
    n, r = K.shape[0], 10
    assert 5 * r <= n                                        # the Lanczos branch
    expected = feature_map(K, rank=r)

    def arpack_fails(*args, **kwargs):
        if failure == "no convergence":
            raise scipy.sparse.linalg.ArpackNoConvergence("no convergence", np.zeros(0), np.zeros((n, 0)))
        raise scipy.sparse.linalg.ArpackError(3)

    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", arpack_fails)
    F, info = feature_map(K, rank=r, return_info=True)
    lam = np.sort(np.linalg.eigvalsh(K))[::-1]
    assert F.shape == (n, r) and info["rank"] == r
    np.testing.assert_allclose(info["eigenvalues"], lam[:r], rtol=1e-10)
    np.testing.assert_allclose(F @ F.T, expected @ expected.T, atol=1e-8 * np.abs(K).max())


def test_top_eigh_returns_every_pair_asked_for_on_a_clustered_spectrum():
    """LAPACK's subset driver can return fewer pairs than asked where the spectrum is one cluster;
    top_eigh then takes them from the full decomposition."""
    from mkclust.kernel_functions import top_eigh

    A = 2 * np.eye(50) + 1e-17 * np.ones((50, 50))
    # LAPACK's subset driver returns 0 of these 4 pairs (scipy 1.17's LAPACK)
    lam, V = top_eigh(A, 4)
    assert lam.shape == (4,) and V.shape == (50, 4)
    np.testing.assert_allclose(A @ V, V * lam, atol=1e-12)
    np.testing.assert_allclose(V.T @ V, np.eye(4), atol=1e-12)
    rng = np.random.default_rng(0)
    B = rng.normal(size=(12, 12))
    B = B + B.T
    lam, V = top_eigh(B, 3)
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(B)[-3:], rtol=1e-12)


def test_nystroem_bank(X):
    """Landmarks: no n x n matrix is formed. Where the kernel's rank is below the number of landmarks
    (linear, and (1 + x'y)^2 on 3 features: rank 10) the Nystroem features are exact; for the
    Gaussian the landmark block K_LL is reproduced exactly; ``rank`` truncates as feature_map of the
    approximate kernel; the sample order is kept."""
    Z = np.random.default_rng(0).normal(size=(300, 3))
    exact, ny = build_bank("mkc3", Z), build_bank("mkc3", Z, landmarks=60, landmark_seed=3)
    assert ny.kind == "features" and [F.shape[1] for F in ny.features][:2] == [3, 10]
    for k in (0, 1):  # both kernels normalised to centred trace n, as the exact ones are
        np.testing.assert_allclose(ny.kernel(k), exact.kernel(k), atol=1e-10 * np.abs(exact.kernel(k)).max())
    L = np.asarray(ny.meta["nystroem"]["indices"])
    assert L.size == 60 and np.array_equal(L, np.unique(L))
    # the width is estimated over (sample, landmark) pairs; with that width, the landmark block is exact
    same_width = build_bank("mkc3", Z, sigma=ny.meta["sigma"]).kernel(2)
    scale = ny.kernel(2)[L[0], L[0]] / same_width[L[0], L[0]]
    np.testing.assert_allclose(ny.kernel(2)[np.ix_(L, L)], scale * same_width[np.ix_(L, L)], atol=1e-10)
    assert ny.meta["sigma"] == pytest.approx(exact.meta["sigma"], rel=0.1)
    r = build_bank("mkc3", Z, landmarks=60, landmark_seed=3, rank=5)
    F = feature_map(ny.kernel(2), rank=5)
    np.testing.assert_allclose(r.kernel(2), F @ F.T, atol=1e-10)
    assert r.meta["spectrum"][0] == {"rank": 3, "retained_energy": pytest.approx(1.0)}
    # below the size threshold the bank stays exact; normalisations needing other entries are refused
    assert build_bank("mkc3", Z, landmarks=60, landmarks_above=300).kind == "gram"
    with pytest.raises(ValueError, match="Nystroem bank"):
        build_bank("rmkkm12", Z, landmarks=60, normalize="max")
    # unit_diag with the exact diagonal: the polynomial and cosine kernels of rank <= 35 on 3 features are
    # exact, so equal the dense bank's; a Gaussian (K_ii = 1) keeps its Nystroem approximation C W^+ C'
    # of the exact Gaussian at the bank's scale, whose diagonal is below 1 off the landmarks (the rows
    # scaled to unit length instead would force it to 1: another kernel)
    ny12, ex12 = build_bank("rmkkm12", Z, landmarks=60, landmark_seed=3), build_bank("rmkkm12", Z)
    from mkclust.kernel_functions import sq_dists_from_gram
    L12 = np.asarray(ny12.meta["nystroem"]["indices"])
    D = sq_dists_from_gram(Z @ Z.T)
    for k, name in enumerate(ny12.names):
        if not name.startswith("gauss"):
            np.testing.assert_allclose(ny12.kernel(k), ex12.kernel(k), atol=1e-12)
            assert np.allclose(np.diag(ny12.kernel(k)), 1.0)
            continue
        d = np.diag(ny12.kernel(k))
        assert d.max() <= 1 + 1e-9 and np.allclose(d[L12], 1.0)
    for k in (0, 1):   # t0 = 0.01 and 0.05: landmark blocks well conditioned, so C W^+ C' is stable
        K = np.exp(-D / ny12.meta["gaussian_scales"][k])
        C, W = K[:, L12], K[np.ix_(L12, L12)]
        np.testing.assert_allclose(ny12.kernel(k), C @ np.linalg.solve(W, C.T), atol=1e-8)
    off = np.setdiff1d(np.arange(300), L12)
    assert np.diag(ny12.kernel(0))[off].mean() < 0.5
    with pytest.raises(ValueError, match="landmarks"):
        build_bank("gauss_grid", Z, landmarks=0)


def test_fourier_features_for_a_banks_gaussians():
    """``fourier``: each Gaussian of a landmark bank as random Fourier features (scikit-learn's
    RBFSampler at the scale the bank estimated on the landmark block, meta's gaussian_scales): against
    the exact Gaussian of that scale, the mean error of an entry shrinks as 1 / sqrt(D) (to below a
    half from D = 250 to 4,000, where it is below .02); the bank's other kernel (linear) is Nystroem's,
    equal to the landmark bank's; unit_diag holds on the factors; the same seeds give the same factors."""
    from mkclust.kernel_functions import sq_dists_from_gram
    Z = np.random.default_rng(0).normal(size=(400, 4))
    ny = build_bank("gauss_grid", Z, widths=[0.5, 2], linear=True, landmarks=80, landmark_seed=1)
    D = sq_dists_from_gram(Z @ Z.T)
    errors = {}
    for d in (250, 4000):
        ff = build_bank("gauss_grid", Z, widths=[0.5, 2], linear=True, landmarks=80, landmark_seed=1, fourier=d)
        assert ff.meta["fourier"] == {"features": d, "kernels": ["gauss(w=0.5,ref=mean)", "gauss(w=2,ref=mean)"]}
        assert [F.shape[1] for F in ff.features] == [4, d, d]
        np.testing.assert_allclose(ff.features[0], ny.features[0])
        scales = ff.meta["gaussian_scales"]
        assert scales[0] is None and scales[1:] == pytest.approx(ny.meta["gaussian_scales"][1:])
        errors[d] = np.mean([np.abs(ff.kernel(k) - np.exp(-D / scales[k])).mean() for k in (1, 2)])
    assert errors[4000] < 0.02 and errors[4000] < 0.5 * errors[250]
    again = build_bank("gauss_grid", Z, widths=[0.5, 2], linear=True, landmarks=80, landmark_seed=1, fourier=250)
    other = build_bank("gauss_grid", Z, widths=[0.5, 2], linear=True, landmarks=80, landmark_seed=2, fourier=250)
    assert np.array_equal(again.features[1], build_bank("gauss_grid", Z, widths=[0.5, 2], linear=True, landmarks=80,
                                                         landmark_seed=1, fourier=250).features[1])
    assert not np.allclose(again.features[1], other.features[1])
    # unit_diag by the exact diagonal: the Gaussians' features are not scaled (K_ii = 1), the others' are
    unit = build_bank("rmkkm12", Z, landmarks=80, fourier=300)
    plain = build_bank("rmkkm12", Z, landmarks=80, fourier=300, normalize="none")
    assert all(np.array_equal(a, b) for a, b in zip(unit.features[:7], plain.features[:7]))
    assert all(np.allclose(np.einsum("ij,ij->i", F, F), 1.0) for F in unit.features[7:])
    with pytest.raises(ValueError, match="fourier"):
        build_bank("rmkkm12", Z, landmarks=80, fourier=0)


def test_bank_save_load_both_kinds(X, tmp_path):
    g = build_bank("mkc3", X)
    g.save(tmp_path / "g.npz")
    back = KernelBank.load(tmp_path / "g.npz")
    assert back.kind == "gram" and back.names == g.names and back.meta == g.meta
    np.testing.assert_array_equal(back.K, g.K)
    f = build_bank("mkc3", X, rank=15)
    assert f.kind == "features" and all(F.shape == (X.shape[0], 15) for F in f.features)
    f.save(tmp_path / "f.npz")
    fb = KernelBank.load(tmp_path / "f.npz")
    np.testing.assert_array_equal(fb.features[1], f.features[1])
    assert fb.meta["spectrum"][0]["rank"] == 15
    np.testing.assert_allclose(fb.gram()[0], f.features[0] @ f.features[0].T)
    assert not list(tmp_path.glob("*.tmp"))


def test_bad_input():
    X = np.random.default_rng(0).normal(size=(10, 3))
    X[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        build_bank("mkc3", X)
    with pytest.raises(ValueError, match="unknown kernel bank"):
        build_bank("nope", np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"bank mkc3: unknown option\(s\) \['degree'\]; it takes d, normalize"):
        build_bank("mkc3", np.eye(3), degree=2)
    with pytest.raises(ValueError, match="preprocessing"):
        build_bank("mkc3", np.eye(3), preprocess="whiten")
    with pytest.raises(ValueError, match="square"):
        feature_map(np.ones((3, 4)))


def test_minmax_scales_each_column_onto_minus_one_one_like_svm_scale():
    from sklearn.preprocessing import MinMaxScaler

    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 4)) * [1.0, 50.0, 1e-3, 7.0] + [0.0, -20.0, 5.0, 1e4]
    X[:, 2] = 4.0  # a constant column
    Z = kernels.apply_preprocess(X, "minmax")
    np.testing.assert_array_equal(Z[:, 2], 0.0)
    live = [0, 1, 3]
    np.testing.assert_allclose(Z[:, live].min(axis=0), -1.0)
    np.testing.assert_allclose(Z[:, live].max(axis=0), 1.0)
    # the same map as scikit-learn's scaler (an independent implementation) on the varying columns
    np.testing.assert_allclose(Z[:, live], MinMaxScaler((-1, 1)).fit_transform(X[:, live]), atol=1e-12)
    np.testing.assert_allclose(kernels.apply_preprocess(sp.csr_matrix(X), "minmax"), Z)
    # the scales the ODMC kernels see no longer depend on the units of a column
    G = build_bank("gauss_grid", X * [1.0, 1e3, 1.0, 1.0], preprocess="minmax", widths=[1.0]).kernel(0)
    np.testing.assert_allclose(G, build_bank("gauss_grid", X, preprocess="minmax", widths=[1.0]).kernel(0))


@pytest.mark.parametrize("bank, options, message", [
    ("gauss_grid", {"widths": [-1.0, 1.0]}, r"widths must be positive and finite; \[-1.0\] in \[-1.0, 1.0\]"),
    ("mkc3", {"widths": [0.5, 0.0]}, r"widths must be positive"),
    ("mkc3", {"widths": []}, r"widths must be a non-empty list"),
    ("mkc3", {"sigma": -2.0}, r"sigma must be a positive number"),
    ("mkc3", {"d": 0}, r"d must be an integer >= 1"),
    ("rmkkm12", {"t0": [0.1, float("nan")]}, r"t0 must be positive and finite"),
    ("scmk12", {"t": "0.1"}, r"t must be a non-empty list"),
    ("gauss_grid", {"reference": "mode"}, r"reference must be one of mean, median, max, mean_distance, none"),
    ("gauss_grid", {"linear": "yes"}, r"linear must be true or false"),
    ("mkc3", {"normalize": "l2"}, r"normalize must be one of"),
    ("views_linear", {"views": [[3, 1]]}, r"views: a block is .* 0 <= start < stop"),
    ("mkc3", {"rank": 0}, r"rank must be an integer >= 1"),
    ("mkc3", {"energy": 1.5}, r"energy must be a number in \(0, 1\]"),
    ("mkc3", {"landmarks": -5}, r"landmarks must be an integer >= 1"),
])
def test_bank_options_out_of_range_are_refused_before_any_kernel(bank, options, message):
    """A negative width used to give the kernel of its absolute value under a misleading name
    (gauss(w=-1,...)); every option of every bank is range-checked before anything is computed."""
    X = np.random.default_rng(0).normal(size=(12, 4))
    with pytest.raises(ValueError, match=f"bank {bank}: {message}"):
        build_bank(bank, X, **options)


def test_every_registered_bank_has_its_options_listed():
    """The option table covers each bank's builder: the options it takes, no more, no fewer."""
    import inspect

    from mkclust._bank_options import BANK_OPTIONS

    for name, spec in kernels.BANKS.items():
        taken = set(inspect.signature(spec.build).parameters) - {"X", "G", "D"}
        assert set(BANK_OPTIONS[name]) == taken, name


def test_gauss_grid_mean_distance_reference_is_the_mean_unsquared_distance(X):
    """``reference: mean_distance`` (the ODMC paper's "gamma is the average distance between
    instances", read word for word): sigma = w sqrt(mean of the pairwise distances, i != j), checked
    against scipy's pdist and the kernel's entries against exp(-d^2 / (2 sigma^2)) computed here; the
    default reference (the mean squared distance) gives wider kernels on the same data."""
    from scipy.spatial.distance import pdist, squareform

    Z = kernels.apply_preprocess(X, "minmax")
    d = pdist(Z)
    bank = build_bank("gauss_grid", X, preprocess="minmax", widths=[0.5, 2.0], reference="mean_distance")
    sigmas = [0.5 * np.sqrt(d.mean()), 2.0 * np.sqrt(d.mean())]
    np.testing.assert_allclose(bank.meta["sigmas"], sigmas, rtol=1e-10)
    for k, s in zip(bank.K, sigmas):
        np.testing.assert_allclose(k, np.exp(-squareform(d) ** 2 / (2 * s**2)), atol=1e-10)
    ours = build_bank("gauss_grid", X, preprocess="minmax", widths=[0.5, 2.0])
    assert d.mean() > 1   # then mean d^2 >= (mean d)^2 > mean d: the default's sigmas are the wider
    assert np.all(np.array(ours.meta["sigmas"]) > np.array(sigmas))
