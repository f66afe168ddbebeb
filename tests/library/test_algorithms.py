import numpy as np
import pytest
import scipy.linalg
import scipy.sparse.linalg
from sklearn.base import clone
from sklearn.cluster import KMeans

from mkclust import metrics
from mkclust.algorithms import (ALGORITHMS, KernelKMeans, KMeansBaseline, NormalizedCut,
                                SpectralClustering, get_estimator)
from mkclust.algorithms.kmeans import cluster_distances
from mkclust.datasets import load
from mkclust.kernels import build_bank

from conftest import gaussian_gram


def linear(X):
    G = X @ X.T
    return (G + G.T) / 2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kkm_matches_sklearn_kmeans_from_same_centres(seed):
    ds = load("digits0689")
    idx = np.random.default_rng(seed).choice(ds.n, 4, replace=False)
    kk = KernelKMeans(4, init=idx).fit(linear(ds.X))
    sk = KMeans(4, init=ds.X[idx], n_init=1, tol=0, algorithm="lloyd").fit(ds.X)
    assert kk.objective_ == pytest.approx(sk.inertia_, rel=1e-9)
    np.testing.assert_array_equal(kk.labels_, sk.labels_)


@pytest.mark.parametrize("init", ["k-means++", "random", "random-partition"])
@pytest.mark.parametrize("kernel", [0, 3, 8, 11])
def test_kkm_objective_never_increases(init, kernel):
    ds = load("digits1279")
    K = build_bank("rmkkm12", ds.X, preprocess="unit").K[kernel]
    for seed in range(3):
        est = KernelKMeans(4, init=init, n_init=1, random_state=seed).fit(K)
        tr = np.asarray(est.objective_trace_)
        assert np.all(np.diff(tr) <= 1e-10 * np.abs(tr[:-1])), tr
        # the reported objective is that of the final partition
        dist = cluster_distances(K, np.diag(K), est.labels_, 4)
        assert est.objective_ == pytest.approx(dist[np.arange(ds.n), est.labels_].sum())


def test_kkm_restarts_keep_the_lowest_objective():
    K = build_bank("mkc3", load("digits1279").X).K[2]
    one = KernelKMeans(4, n_init=1, random_state=7).fit(K)
    many = KernelKMeans(4, n_init=8, random_state=7).fit(K)  # its first restart is `one`
    assert many.objective_ <= one.objective_
    again = KernelKMeans(4, n_init=8, random_state=7).fit(K)
    np.testing.assert_array_equal(again.labels_, many.labels_)


def test_kkm_empty_cluster_is_reseeded(blobs):
    X, _ = blobs
    # duplicated initial centres: the second copy gets no sample at first
    est = KernelKMeans(3, init=[0, 0, 1]).fit(linear(X))
    assert np.bincount(est.labels_, minlength=3).min() >= 1
    assert np.isfinite(est.objective_)


def test_kkm_recovers_digit_pairs():
    ds = load("digits1v7")
    est = KernelKMeans(2, random_state=0).fit(linear(ds.X))
    assert metrics.acc(ds.y, est.labels_) > 0.95


@pytest.mark.parametrize("cls", [SpectralClustering, NormalizedCut])
def test_spectral_recovers_separated_blobs(cls, blobs):
    X, y = blobs
    est = cls(3, random_state=0).fit(gaussian_gram(X, 2.0))
    assert metrics.acc(y, est.labels_) == 1.0


def test_spectral_embeddings():
    X, _ = np.random.default_rng(0).normal(size=(60, 3)), None
    W = gaussian_gram(X, 1.5)
    sc = SpectralClustering(3, random_state=0).fit(W)
    nc = NormalizedCut(3, random_state=0).fit(W)
    np.testing.assert_allclose(np.linalg.norm(sc.embedding_, axis=1), 1.0)
    # NC's embedding solves (D - W) v = lambda D v with the diagonal of W ignored
    W0 = W - np.diag(np.diag(W))
    D = np.diag(W0.sum(1))
    v = nc.embedding_
    lam = 1 - nc.eigenvalues_
    np.testing.assert_allclose((D - W0) @ v, D @ v * lam[None, :], atol=1e-8)
    assert nc.eigenvalues_[0] == pytest.approx(1.0)


def test_km_baseline(blobs):
    X, y = blobs
    est = KMeansBaseline(3, random_state=0).fit(X)
    assert metrics.acc(y, est.labels_) == 1.0
    assert est.cluster_centers_.shape == (3, 5)


#: shorter fits where the defaults cost tens of seconds and determinism and the API need no more: SCMK and
#: SCSK stop after 3 outer iterations of at most 50 Z-steps (their 11 of up to 500 took about 20 CPU s a fit
#: at n = 150; their convergence is test_scmk.py's), LG-MMC after 10 labels (50 took 20 s)
SHORT = {"scmk": {"max_iter": 3, "z_max_iter": 50}, "scsk": {"max_iter": 3, "z_max_iter": 50},
         "lgmmc": {"max_labels": 10}}


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_estimator_api_and_determinism(name, blobs):
    X, y = blobs
    k = 2 if ALGORITHMS[name].two_class_only else 3  # IterSVR and ODMC cluster into two classes only
    est = get_estimator(name, n_clusters=k, random_state=5, **SHORT.get(name, {}))
    data = X if est.input_kind == "features" else gaussian_gram(X, 2.0)
    a = est.fit_predict(data)
    b = clone(est).fit(data).labels_
    np.testing.assert_array_equal(a, b)
    assert est.get_params()["n_clusters"] == k
    assert a.dtype == np.int64 and a.shape == (X.shape[0],)


def test_bad_input():
    K = np.eye(5)
    nan = K.copy()
    nan[1, 2] = nan[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        KernelKMeans(2).fit(nan)
    with pytest.raises(ValueError, match="square"):
        KernelKMeans(2).fit(np.ones((5, 4)))
    asym = np.eye(5)
    asym[0, 1] = 0.5
    with pytest.raises(ValueError, match="not symmetric"):
        SpectralClustering(2).fit(asym)
    with pytest.raises(ValueError, match="larger than the number of samples"):
        KernelKMeans(6).fit(K)
    with pytest.raises(ValueError, match="larger than the number of samples"):
        NormalizedCut(9).fit(K)
    with pytest.raises(ValueError, match="single kernel"):
        KernelKMeans(2).fit(np.stack([K, K]))
    with pytest.raises(ValueError, match="negative"):
        SpectralClustering(2).fit(np.array([[1.0, -0.5], [-0.5, 1.0]]))
    X = np.ones((4, 2))
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        KMeansBaseline(2).fit(X)
    with pytest.raises(ValueError, match="init"):
        KernelKMeans(2, init="nope").fit(K)
    with pytest.raises(ValueError, match="unknown algorithm"):
        get_estimator("nope")
    with pytest.raises(ValueError, match="no parameter"):
        get_estimator("kkm", gamma=1)


def test_spectral_sparse_eigensolver_path_agrees_with_dense(monkeypatch, blobs):
    import mkclust.algorithms.spectral as spectral

    X, y = blobs
    W = gaussian_gram(X, 4.0)
    U_d, _, lam_d = spectral.normalized_affinity_embedding(W, 3)
    monkeypatch.setattr(spectral, "DENSE_LIMIT", 10)  # force eigsh
    U_s, _, lam_s = spectral.normalized_affinity_embedding(W, 3)
    np.testing.assert_allclose(lam_s, lam_d, atol=1e-8)
    # same leading invariant subspace: the projectors agree
    np.testing.assert_allclose(U_s @ U_s.T, U_d @ U_d.T, atol=1e-6)
    est = SpectralClustering(3, random_state=0).fit(W)
    assert metrics.acc(y, est.labels_) == 1.0


def test_a_disconnected_graph_or_lanczos_over_its_budget_hands_over_to_the_dense_eigensolver(monkeypatch, caplog):
    """60 blocks of 8 samples, k = 5. Apart (60 components: eigenvalue 1 sixty times), Lanczos is not
    tried: from one start vector it finds one vector per eigenvalue in exact arithmetic. Joined by
    weights of 1e-9 (connected, 60 eigenvalues within 1e-8 of 1), it runs out of its n / 8 products.
    Either way the embedding and labels are the dense solver's."""
    import logging

    import mkclust.algorithms.base as base
    import mkclust.algorithms.spectral as spectral

    rng = np.random.RandomState(0)
    blocks = [rng.uniform(0.5, 1.0, (8, 8)) for _ in range(60)]
    apart = scipy.linalg.block_diag(*[(b + b.T) / 2 for b in blocks])
    joined = np.where(apart == 0, 1e-9, apart)
    n = apart.shape[0]
    assert not spectral.connected(apart) and spectral.connected(joined)
    for W in (apart, joined):
        dense = SpectralClustering(5, random_state=3).fit(W)
        monkeypatch.setattr(spectral, "DENSE_LIMIT", 10)
        calls = []
        real = scipy.sparse.linalg.eigsh
        monkeypatch.setattr(base.scipy.sparse.linalg, "eigsh", lambda *a, **k: calls.append(1) or real(*a, **k))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mkclust.algorithms.base"):
            est = SpectralClustering(5, random_state=3).fit(W)
        monkeypatch.undo()
        if W is apart:
            assert not calls
        else:
            assert calls and any(f"budget {n // 8}" in r.message for r in caplog.records)
        np.testing.assert_array_equal(est.labels_, dense.labels_)
        np.testing.assert_allclose(est.embedding_, dense.embedding_)


def test_sc_labels_do_not_depend_on_the_eigensolver(monkeypatch, blobs):
    """The Lanczos start vector does not draw from random_state: the k-means restarts see the same
    stream, so on a well-separated spectrum both solvers give the same labels and objective."""
    import mkclust.algorithms.spectral as spectral

    X, _ = blobs
    W = gaussian_gram(X, 4.0)
    dense = [cls(3, random_state=7).fit(W) for cls in (SpectralClustering, NormalizedCut)]
    monkeypatch.setattr(spectral, "DENSE_LIMIT", 10)
    for d, cls in zip(dense, (SpectralClustering, NormalizedCut)):
        e = cls(3, random_state=7).fit(W)
        np.testing.assert_array_equal(e.labels_, d.labels_)
        assert e.objective_ == pytest.approx(d.objective_, rel=1e-9)


def test_unnormalized_laplacian_sc_matches_an_independent_eigensolver(monkeypatch, blobs):
    """laplacian='unnormalized' (the RMKKM authors' SC): the rows of the eigenvectors of the c
    smallest eigenvalues of D - W scaled to unit length, W's negative entries kept; the same
    subspace from numpy's eigh and from the eigsh path."""
    import mkclust.algorithms.spectral as spectral

    X, y = blobs
    Xc = X - X.mean(0)
    W = (Xc / np.linalg.norm(Xc, axis=1)[:, None]) @ (Xc / np.linalg.norm(Xc, axis=1)[:, None]).T
    assert W.min() < -0.5  # a cosine kernel with negative entries, which the authors' SC keeps
    est = SpectralClustering(3, laplacian="unnormalized", negative="keep", random_state=0).fit(W)
    L = np.diag(W.sum(1)) - W
    lam, V = np.linalg.eigh(L)
    np.testing.assert_allclose(est.eigenvalues_, lam[:3], atol=1e-8)
    U = V[:, :3]
    rows = U / np.linalg.norm(U, axis=1)[:, None]
    # same rows up to an orthogonal transform: equal Gram matrices
    np.testing.assert_allclose(est.embedding_ @ est.embedding_.T, rows @ rows.T, atol=1e-6)
    assert metrics.acc(y, est.labels_) == 1.0
    monkeypatch.setattr(spectral, "DENSE_LIMIT", 10)  # force eigsh on s I - L
    U_s, lam_s = spectral.unnormalized_laplacian_embedding(W, 3)
    np.testing.assert_allclose(lam_s, lam[:3], atol=1e-6)
    np.testing.assert_allclose(U_s @ U_s.T, U @ U.T, atol=1e-5)


def test_sc_with_the_authors_kmeans_is_a_lloyd_fixed_point_of_the_floored_rows(blobs):
    """kmeans_init="sample", max_iter=100, norm_floor=1e-14 (the authors' litekmeans on NormalizeFea
    rows): a row of squared norm below 1e-14 is scaled by 1e7, not to unit length; the labels are a
    Lloyd fixed point on the embedding (every row nearest its own cluster mean), objective_ is their
    sum of distances (litekmeans' replicate score, not squared), and the best of 10 sampled-row
    restarts is no worse by it than the first alone (the same seed: the same first start)."""
    est = SpectralClustering(3, laplacian="unnormalized", negative="keep", kmeans_init="sample", max_iter=100,
                             norm_floor=1e-14, random_state=0)
    U = np.array([[3.0, 4.0], [1e-9, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(est._rows(U, None), [[0.6, 0.8], [1e-2, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(SpectralClustering(2)._rows(U, None), [[0.6, 0.8], [1.0, 0.0], [0.0, 0.0]])
    X, y = blobs
    W = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2.0)
    est.fit(W)
    F, lab = est.embedding_, est.labels_
    means = np.array([F[lab == c].mean(axis=0) for c in range(3)])
    d2 = ((F[:, None, :] - means[None]) ** 2).sum(-1)
    assert (d2[np.arange(len(F)), lab] <= d2.min(axis=1) + 1e-12).all()
    # through the kernel a distance carries cancellation of about 1e-16 before its square root (1e-8 after)
    assert est.objective_ == pytest.approx(np.sqrt(d2[np.arange(len(F)), lab]).sum(), rel=1e-9, abs=1e-7 * len(F))
    first = SpectralClustering(3, laplacian="unnormalized", negative="keep", kmeans_init="sample", n_init=1,
                               max_iter=100, norm_floor=1e-14, random_state=0).fit(W).objective_
    assert est.objective_ <= first + 1e-9


def test_full_eigensolver_is_the_first_columns_of_the_whole_decomposition(blobs):
    """eigensolver="full" (SC.m's eig(L)): the first c columns of the whole eigendecomposition of
    L = D - W, checked against numpy's eigh (an independent LAPACK call); where the c-th and (c+1)-th
    eigenvalues are apart it spans the subspace the "leading" solver finds and gives the same partition."""
    X, y = blobs
    W = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2.0)
    kw = dict(laplacian="unnormalized", negative="keep", kmeans_init="sample", max_iter=100, norm_floor=1e-14,
              random_state=3)
    full = SpectralClustering(3, eigensolver="full", **kw).fit(W)
    lead = SpectralClustering(3, **kw).fit(W)
    lam, V = np.linalg.eigh(np.diag(W.sum(1)) - W)
    assert lam[3] - lam[2] > 1e-3
    np.testing.assert_allclose(full.eigenvalues_, lam[:3], atol=1e-10)
    U = V[:, :3]
    rows = U / np.linalg.norm(U, axis=1)[:, None]
    np.testing.assert_allclose(full.embedding_ @ full.embedding_.T, rows @ rows.T, atol=1e-8)
    np.testing.assert_allclose(full.embedding_ @ full.embedding_.T, lead.embedding_ @ lead.embedding_.T, atol=1e-8)
    assert metrics.acc(lead.labels_, full.labels_) == 1.0 and metrics.acc(y, full.labels_) == 1.0


def test_full_eigensolver_takes_a_basis_of_the_null_space_when_it_is_larger_than_c():
    """A near-identity affinity (the narrowest Gaussian of the 12-kernel bank): L has as many zero
    eigenvalues (to rounding) as the graph has components, more than c, so each solver returns some
    orthonormal basis inside that null space (L U = 0 to rounding), not necessarily the same one."""
    import mkclust.algorithms.spectral as spectral

    W = np.eye(40) + 1e-90
    W[0, 1] = W[1, 0] = W[2, 3] = W[3, 2] = 0.5   # 38 components
    L = np.diag(W.sum(1)) - W
    assert (np.abs(scipy.linalg.eigvalsh(L)) < 1e-12).sum() == 38
    for solver in ("leading", "full"):
        U, lam = spectral.unnormalized_laplacian_embedding(W, 3, solver)
        np.testing.assert_allclose(U.T @ U, np.eye(3), atol=1e-12)
        assert np.abs(L @ U).max() < 1e-12 and np.abs(lam).max() < 1e-12
        est = SpectralClustering(3, laplacian="unnormalized", eigensolver=solver, random_state=0).fit(W)
        assert est.labels_.shape == (40,)


def test_full_eigensolver_needs_the_unnormalised_laplacian():
    with pytest.raises(ValueError, match="eigensolver='full'"):
        SpectralClustering(2, eigensolver="full").fit(np.eye(3) + 0.1)
    with pytest.raises(ValueError, match="eigensolver"):
        SpectralClustering(2, laplacian="unnormalized", eigensolver="lapack").fit(np.eye(3) + 0.1)


def test_unnormalized_laplacian_options_are_checked():
    W = np.array([[1.0, -0.5], [-0.5, 1.0]])
    with pytest.raises(ValueError, match="unnormalized"):
        SpectralClustering(2, negative="keep").fit(W)
    with pytest.raises(ValueError, match="laplacian"):
        SpectralClustering(2, laplacian="sym").fit(np.eye(3))
    with pytest.raises(ValueError, match="negative"):
        SpectralClustering(2, laplacian="unnormalized").fit(W)  # 'error' stays the default


def test_leading_eigenvectors_of_a_spectrum_clustered_at_one_value():
    """LAPACK's subset eigensolvers returned no pairs for 2 I + 1e-17 (n = 878, the unnormalised
    Laplacian of a near-identity Gaussian kernel); the helper falls back to the full solver."""
    from mkclust.algorithms.base import leading_eigenvectors

    n = 878
    A = 2.0 * np.eye(n) + 1e-17 * np.ones((n, n))
    lam, vec = leading_eigenvectors(lambda v: A @ v, n, 10, dense=lambda: A, dense_limit=4000)
    assert lam.shape == (10,) and vec.shape == (n, 10)
    np.testing.assert_allclose(lam, 2.0, atol=1e-12)
    np.testing.assert_allclose(vec.T @ vec, np.eye(10), atol=1e-10)
    W = np.eye(60) + 1e-90  # near-identity affinity: every sample its own component
    est = SpectralClustering(3, laplacian="unnormalized", random_state=0).fit(W)
    assert est.labels_.shape == (60,) and len(np.unique(est.labels_)) == 3


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_parameters_are_checked_before_any_work_naming_the_parameter(name):
    """Every registered estimator states its parameters' constraints once (scikit-learn's
    ``_parameter_constraints``) and checks them all before fitting: a bad value is an error that
    names the parameter, the value and what is allowed."""
    from mkclust._params import InvalidParameterError

    cls = ALGORITHMS[name]
    assert set(cls._parameter_constraints) == set(cls().get_params()), "a parameter without its constraint"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    K = X @ X.T + np.eye(30)
    data = (X if cls.input_kind == "features" else np.stack([K, K]) if cls.input_kind in ("kernels", "feature_maps")
            else K)
    with pytest.raises(InvalidParameterError, match="'random_state' parameter of .* Got 'abc' instead"):
        cls(n_clusters=2, random_state="abc").fit(data)
    ints = [p for p, c in cls._parameter_constraints.items() if p in ("max_iter", "n_init")]
    for p in ints:   # max_iter = 0 or n_init = 0 would return an unfitted (or best-possible) objective
        message = f"'{p}' parameter of {cls.__name__} must be an int in the range"
        with pytest.raises(InvalidParameterError, match=message):
            cls(n_clusters=2, **{p: 0}).fit(data)


def test_kernel_product_is_the_plain_product():
    """kernel_product computes K A as (A' K')': equal to K @ A to rounding, for one kernel, a
    contiguous bank, a non-contiguous bank and a non-symmetric matrix (the identity needs no symmetry)."""
    from mkclust.algorithms.kmeans import kernel_product

    rng = np.random.RandomState(0)
    bank = rng.rand(3, 50, 50)
    A = rng.rand(50, 4)
    for K in (bank[0], bank, bank[:, :, ::-1].copy()[:, :, ::-1], bank.transpose(0, 2, 1)):
        got = kernel_product(K, A)
        assert got.shape == np.matmul(K, A).shape
        np.testing.assert_allclose(got, np.matmul(K, A), rtol=1e-13, atol=0)


def test_lanczos_with_two_nearly_equal_eigenvalues_hands_over_to_the_dense_eigensolver():
    """Two leading eigenvalues 1e-12 apart (their eigenvectors are any basis of a plane, to working
    precision): with min_separation the dense eigh answers, without it Lanczos' own basis is kept."""
    from mkclust.algorithms.base import leading_eigenvectors

    rng = np.random.RandomState(0)
    Q = np.linalg.qr(rng.randn(50, 50))[0]
    lam = np.concatenate([[3.0, 3.0 - 1e-12], np.linspace(0.0, 1.0, 48)])
    A = (Q * lam) @ Q.T
    A = (A + A.T) / 2
    for sep, dense_called in ((1e-10, True), (None, False)):
        calls = []
        got, _ = leading_eigenvectors(lambda v: A @ v, 50, 2, dense=lambda: calls.append(1) or A, dense_limit=10,
                                      v0=np.ones(50), min_separation=sep)
        assert bool(calls) == dense_called
        np.testing.assert_allclose(got, [3.0, 3.0], atol=1e-9)
