"""Low-rank kernel banks (mkclust.lowrank): every operation equals the dense one on the kernels
F_p F_p', and the estimators that take a low-rank bank fit it as they fit the dense bank."""

import numpy as np
import pytest
import scipy.sparse.linalg
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import mkclust.lowrank as lowrank
from mkclust import metrics
from mkclust.algorithms import (ALGORITHMS, LFMVC, MKKM, ONKC, RKKM, RMKKM, KernelKMeans, MKKMMiR, NormalizedCut,
                                SimpleMKKM, SpectralClustering)
from mkclust.algorithms import spectral
from mkclust.algorithms._mkkm_family import authors_kernels
from mkclust.datasets import Dataset
from mkclust.kernel_functions import top_eigh
from mkclust.kernels import build_bank
from mkclust.lowrank import LowRankBank
from mkclust.repro.inputs import run_input


@pytest.fixture(scope="module")
def banks():
    """A 5-kernel Gaussian bank on 3 blobs of 180 samples, truncated to rank 12 per kernel (R = 60 < n,
    the R x R route), and the dense stack of those same truncated kernels."""
    X, y = make_blobs(n_samples=180, centers=3, cluster_std=2.5, random_state=0)
    K = build_bank("gauss_grid", X, preprocess="zscore", widths=[0.5, 1, 2, 4, 8]).K
    low = LowRankBank.from_dense(K, rank=12)
    return low, low.dense(), y


def _padded(low):
    """The same kernels from factors with 40 zero columns more each, so that R = 260 >= n = 180."""
    return LowRankBank([np.hstack([F, np.zeros((F.shape[0], 40))]) for F in low.factors])


def test_products_equal_the_dense_ones(banks):
    low, K, _ = banks
    rng = np.random.default_rng(0)
    A, H = rng.standard_normal((K.shape[1], 4)), np.linalg.qr(rng.standard_normal((K.shape[1], 3)))[0]
    w = rng.random(low.n_kernels)
    Kw = np.tensordot(w, K, axes=1)
    scale = np.abs(K).max()
    assert np.allclose(low.product(A), np.matmul(K, A), atol=1e-12 * scale * K.shape[1])
    assert np.allclose(low.combine(w).product(A), Kw @ A, atol=1e-12 * scale * K.shape[1])
    assert np.allclose(low.diagonal(), np.einsum("pii->pi", K))
    assert np.allclose(low.combine(w).diagonal(), np.diag(Kw))
    assert np.allclose(low.combine(w).columns([3, 70, 3]), Kw[:, [3, 70, 3]])
    assert np.allclose(low.traces(H), np.einsum("pij,ik,jk->p", K, H, H))
    assert np.allclose(low.traces(), np.einsum("pii->p", K))
    assert np.allclose(low.frobenius_gram(), np.einsum("pij,qij->pq", K, K))
    assert np.allclose(low.combine(w).dense(), Kw)


def test_products_on_the_dense_route_equal_the_factors_route(banks, monkeypatch):
    """Where R >= n and n <= DENSE_N the kernels are formed once: the same numbers as through the factors."""
    low, K, _ = banks
    full = _padded(low)
    A = np.random.default_rng(3).standard_normal((K.shape[1], 3))
    w = np.array([0.2, 0.0, 0.3, 0.4, 0.1])
    small = (full.product(A), full.combine(w).product(A), full.combine(w).columns([5, 9]))
    monkeypatch.setattr(lowrank, "DENSE_N", 10)
    big = (LowRankBank(full.factors).product(A), LowRankBank(full.factors).combine(w).product(A),
           LowRankBank(full.factors).combine(w).columns([5, 9]))
    for a, b in zip(small, big):
        assert np.allclose(a, b, atol=1e-10)


def test_centring_and_unit_diagonal_equal_the_authors_preparation(banks):
    low, K, _ = banks
    assert np.allclose(authors_kernels(low).dense(), authors_kernels(K), atol=1e-12)


@pytest.mark.parametrize("side", ["lapack", "lanczos", "n x n", "n x n lanczos"])
def test_leading_eigenpairs_equal_the_dense_ones(banks, side, monkeypatch):
    low, K, _ = banks
    if side == "lanczos":
        monkeypatch.setattr(lowrank, "DENSE_SIDE", 10)
    if side.startswith("n x n"):   # factors padded with zero columns (the same kernels): R >= n
        low = _padded(low)
        assert sum(low.ranks) >= low.n_samples
    if side == "n x n lanczos":    # ... at an n above DENSE_N: Lanczos through the factors
        monkeypatch.setattr(lowrank, "DENSE_N", 10)
    w = np.array([0.1, 0.0, 0.5, 0.3, 0.1])
    lam, H = low.combine(w).leading(4)
    ref, V = top_eigh(np.tensordot(w, K, axes=1), 4)
    assert np.allclose(lam, ref[::-1], rtol=1e-10)
    assert np.allclose(H.T @ H, np.eye(4), atol=1e-10)
    assert np.allclose(np.abs(np.sum(H * V[:, ::-1], axis=0)), 1.0, atol=1e-8)   # the same vectors, up to sign


@pytest.mark.parametrize("side", ["R x R", "n x n"])
def test_traces_against_the_leading_vectors_from_either_side(banks, side):
    """Tr(H' K_p H) from the R x R side (the cross Gram matrix, H never formed) equals the dense
    einsum against the dense eigenvectors, and H formed on demand is those eigenvectors."""
    low, K, _ = banks
    low = _padded(low) if side == "n x n" else low
    w = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    sol = low.combine(w).eigen(4)
    assert (sol.U is None) == (side == "n x n") and (sol._H is None) == (side == "R x R")
    ref, V = top_eigh(np.tensordot(w, K, axes=1), 4)
    assert sol.value == pytest.approx(ref.sum(), rel=1e-10)
    assert np.allclose(sol.traces(), np.einsum("pij,ik,jk->p", K, V, V), rtol=1e-9)
    assert np.allclose(np.abs(np.sum(sol.H * V[:, ::-1], axis=0)), 1.0, atol=1e-8)


def test_single_precision_lanczos_with_a_double_precision_ritz_step(banks, monkeypatch):
    """Factors in float32 above DENSE_SIDE: Lanczos on the float32 cross Gram matrix, the Ritz values
    from one double-precision Rayleigh-Ritz step (lowrank._lanczos_single). Against LAPACK on the
    double-precision cross Gram matrix: the sum of the leading eigenvalues to 1e-12 (measured 3e-15;
    Lanczos' single-precision products alone 2e-8, asserted a thousand times further off), the traces
    to 1e-7, the vectors' subspace to 1e-6; each Ritz value never above its eigenvalue. (The cross
    Gram matrix is the factors' products in their own precision, so both sides solve the same M.)"""
    low, _, _ = banks
    low32 = LowRankBank([F.astype(np.float32) for F in low.factors])
    monkeypatch.setattr(lowrank, "DENSE_SIDE", 20)    # R = 60: Lanczos, not LAPACK
    w = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    fast = low32.combine(w).eigen(4)
    monkeypatch.setattr(lowrank, "DENSE_SIDE", 2000)
    ref = low32.combine(w).eigen(4)
    assert fast.value == pytest.approx(ref.value, rel=1e-12)
    assert np.all(fast.lam <= ref.lam * (1 + 1e-13))
    assert np.allclose(fast.traces(), ref.traces(), rtol=1e-7)
    assert np.allclose(np.linalg.svd(fast.H.T @ ref.H, compute_uv=False), 1.0, atol=1e-6)
    M32, s = low32.cross_gram(np.float32), np.sqrt(np.repeat(w, low32.ranks))
    op = scipy.sparse.linalg.LinearOperator(M32.shape, dtype=np.float64,
                                            matvec=lambda v: s * (M32 @ (s * v.ravel()).astype(np.float32)))
    rough = scipy.sparse.linalg.eigsh(op, k=4, which="LA", v0=s / np.linalg.norm(s), tol=lowrank.SINGLE_TOL)[0]
    assert abs(rough.sum() - ref.value) > 1e3 * abs(fast.value - ref.value)


@pytest.mark.parametrize("make", [lambda: KernelKMeans(3, random_state=1), lambda: MKKM(3, n_init=3, random_state=1),
                                  lambda: SimpleMKKM(3, random_state=1), lambda: MKKMMiR(3, random_state=1),
                                  lambda: SimpleMKKM(3, protocol="authors", random_state=1)])
def test_estimators_fit_the_low_rank_bank_as_the_dense_one(banks, make):
    low, K, _ = banks
    dense = make().fit(K.mean(axis=0) if isinstance(make(), KernelKMeans) else K)
    fast = make().fit(low.combine(np.full(low.n_kernels, 1 / low.n_kernels)) if isinstance(make(), KernelKMeans)
                      else low)
    assert np.array_equal(dense.labels_, fast.labels_)
    assert fast.objective_ == pytest.approx(dense.objective_, rel=1e-8)
    assert fast.n_iter_ == dense.n_iter_
    if hasattr(dense, "kernel_weights_"):
        assert np.allclose(fast.kernel_weights_, dense.kernel_weights_, atol=1e-7)


@pytest.mark.parametrize("init", ["k-means++", "sample", "random-partition", "matlab"])
def test_kkm_restarts_in_lockstep_take_the_steps_they_take_one_by_one(init):
    """On factors KKM runs its restarts in lockstep (one product for all, kmeans.kernel_kmeans_lockstep):
    each restart ends where it ends alone (labels, iterations; its objectives to rounding, as the
    wider product may sum in another order), and the fit keeps the restart of the lowest objective."""
    from mkclust.algorithms import kmeans
    X, _ = make_blobs(n_samples=900, centers=6, cluster_std=3.0, random_state=0)
    K = build_bank("gauss_grid", X, preprocess="zscore", widths=[0.5, 1, 2, 4]).K
    low = LowRankBank.from_dense(K, rank=30).combine(np.full(4, 0.25))
    est = KernelKMeans(6, init=init, n_init=7, random_state=3)
    diag = low.diagonal()
    stream = (kmeans.replay(3, lambda s: s.randsample(900, 6), 7) if init == "matlab"
              else np.random.RandomState(3))
    alone = [kmeans.kernel_kmeans(low, est._initial_labels(low, diag, stream)[0], 6, 300, diag=diag)
             for _ in range(7)]
    fit = KernelKMeans(6, init=init, n_init=7, random_state=3).fit(low)
    stream = (kmeans.replay(3, lambda s: s.randsample(900, 6), 7) if init == "matlab"
              else np.random.RandomState(3))
    starts = [est._initial_labels(low, diag, stream)[0] for _ in range(7)]
    together = kmeans.kernel_kmeans_lockstep(low, starts, 6, 300, diag)
    for a, b in zip(alone, together):      # the wider product may round differently: 1e-12
        assert np.array_equal(a[0], b[0]) and a[3] == b[3]
        assert np.allclose(a[2], b[2], rtol=1e-12, atol=0) and a[1] == pytest.approx(b[1], rel=1e-12)
    best = min(range(7), key=lambda r: alone[r][1])
    assert len({r[3] for r in alone}) > 1      # the restarts stop at different rounds
    assert np.array_equal(fit.labels_, alone[best][0]) and fit.objective_ == pytest.approx(alone[best][1], rel=1e-12)
    assert fit.n_iter_ == alone[best][3]


def test_kkm_bounds_skip_no_step_of_the_plain_loop(caplog):
    """On factors KKM's Lloyd loop skips the samples whose cluster its triangle-inequality bounds keep
    (kmeans._kkm_bounds): with sample weights and clusters that empty (re-seeded by the plain step),
    every restart visits the plain loop's partitions (the same labels, iterations, objective trace
    to 1e-12), while computing fewer distances than n per iteration."""
    from mkclust.algorithms import kmeans
    X, _ = make_blobs(n_samples=700, centers=4, cluster_std=2.0, random_state=1)
    K = build_bank("gauss_grid", X, preprocess="zscore", widths=[0.5, 1, 2, 4]).K
    low = LowRankBank.from_dense(K, rank=30).combine(np.array([0.1, 0.2, 0.3, 0.4]))   # R = 120 < n
    rng = np.random.RandomState(0)
    starts = [rng.randint(25, size=700) for _ in range(6)]
    sw = rng.uniform(0.5, 2.0, 700)
    plain = kmeans.kernel_kmeans_lockstep(low, starts, 25, 300, sample_weight=sw, bounds=False)
    with caplog.at_level("DEBUG", logger="mkclust.algorithms.kmeans"):
        bounded = kmeans.kernel_kmeans_lockstep(low, starts, 25, 300, sample_weight=sw)
    for a, b in zip(plain, bounded):
        assert np.array_equal(a[0], b[0]) and a[3] == b[3]
        assert np.allclose(a[2], b[2], rtol=1e-12, atol=0)
    messages = [r.getMessage() for r in caplog.records]
    assert sum("re-seeded" in m for m in messages) >= 1
    computed = [int(m.split(", ")[-1].split()[0]) for m in messages if m.endswith("distances computed")]
    assert computed and np.mean(computed) < 0.5 * 700


def test_mkkm_bounds_skip_no_step_of_the_plain_loop(caplog):
    """On factors MKKM's runs continue after their first round with kernel k-means's bounds, loosened
    by how far the new weights rescale the combined kernel (_kkm_bounds.bounded_mkkm): every run visits
    the plain loop's partitions (labels, iterations, weights, objective trace to 1e-10) while computing
    fewer distances than n per iteration (with bounds that ignore the rescaling, 2 of these 6 runs end
    elsewhere); and from a start whose first assignment empties a cluster
    (a cluster of one sample of each of four blobs) it takes the plain step's re-seeding as the plain
    loop does."""
    from mkclust.algorithms import kmeans, mkkm, rmkkm
    from mkclust.algorithms._kkm_bounds import bounded_mkkm
    from sklearn.metrics.pairwise import rbf_kernel
    X, _ = make_blobs(n_samples=700, centers=4, cluster_std=1.0, random_state=0)
    noise = np.random.RandomState(0).uniform(size=(700, 2)) * 3   # a second view without clusters
    K = np.stack([rbf_kernel(X, gamma=0.05), rbf_kernel(X, gamma=0.5), rbf_kernel(noise, gamma=0.5),
                  rbf_kernel(noise, gamma=5)])   # the weights move to the first view as the runs go on
    low = LowRankBank.from_dense(K, rank=30)        # R = 120 < n: the bounded route
    Ks = rmkkm._centred(low)
    diags = Ks.diagonal()
    rng = np.random.RandomState(0)
    starts = [rng.randint(25, size=700) for _ in range(6)]
    est = MKKM(25, max_iter=300, tol=1e-12)
    plain = est._exact_lockstep(Ks, diags, starts, bounds=False)
    with caplog.at_level("DEBUG", logger="mkclust.algorithms.kmeans"):
        bounded = est._exact_lockstep(Ks, diags, starts)
    for a, b in zip(plain, bounded):
        assert np.array_equal(a[0], b[0]) and a[4] == b[4] and len(a[3]) == len(b[3])
        assert np.allclose(a[3], b[3], rtol=1e-10, atol=0) and np.allclose(a[1], b[1], rtol=1e-10, atol=0)
    computed = [int(r.getMessage().split(", ")[-1].split()[0]) for r in caplog.records
                if r.getMessage().endswith("distances computed")]
    assert len(computed) > 50 and np.mean(computed) < 0.5 * 700
    X, y = make_blobs(n_samples=700, centers=4, cluster_std=1.0, random_state=1)
    low = LowRankBank.from_dense(build_bank("gauss_grid", X, preprocess="zscore", widths=[0.5, 1, 2, 4]).K, rank=30)
    Ks = rmkkm._centred(low)
    diags = Ks.diagonal()
    start = y.copy()
    start[[np.flatnonzero(y == b)[0] for b in range(4)]] = 4
    est = MKKM(5, max_iter=300, tol=1e-12)
    ref = est._one(Ks, diags, start, None)
    dist = rmkkm.kernel_distances(Ks, diags, kmeans.centre_matrix(start, 5, np.ones(700)))
    w = np.full(4, 0.25)
    trace = [float(w**2 @ dist[:, np.arange(700), start].sum(axis=1))]
    caplog.clear()
    with caplog.at_level("DEBUG", logger="mkclust.algorithms.kmeans"):
        got = bounded_mkkm(low, start, 5, w, trace, 0, 300, 1e-12,
                           lambda lab: rmkkm.kernel_distances(Ks, diags, kmeans.centre_matrix(lab, 5, np.ones(700))),
                           kmeans._reseed_empty, mkkm._inverse_weights)
    assert any("re-seeded" in r.getMessage() for r in caplog.records)
    assert np.array_equal(ref[0], got[0]) and ref[4] == got[4]
    assert np.allclose(ref[3], got[3], rtol=1e-10, atol=0) and np.allclose(ref[1], got[1], rtol=1e-10, atol=0)


@pytest.mark.parametrize("cls", [SpectralClustering, NormalizedCut])
@pytest.mark.parametrize("n", [600, 1500])
def test_spectral_methods_on_a_low_rank_affinity_as_on_its_dense_matrix(cls, n, monkeypatch):
    """SC and NC on the factors of a Gaussian affinity (rank 40, 4 blobs): at n <= DENSE_LIMIT the
    dense matrix is formed (the same labels bit for bit); above, Lanczos on the factors' products
    against Lanczos on the dense matrix: the same eigenvalues to 1e-8 and the same labels; and with
    ``LOW_RANK_DENSE_N`` below n (no budget, no dense fallback) the same again."""
    X, _ = make_blobs(n_samples=n, centers=4, cluster_std=1.0, random_state=1)
    G = build_bank("gauss_grid", X, preprocess="zscore", widths=[2.0]).K
    low = LowRankBank.from_dense(G, rank=40).kernel(0)
    W = low.dense()
    assert W.min() > 0     # a non-negative affinity, as the dense path requires
    dense, fast = cls(4, random_state=0).fit(W), cls(4, random_state=0).fit(low)
    assert np.array_equal(dense.labels_, fast.labels_)
    assert np.allclose(fast.eigenvalues_, dense.eigenvalues_, rtol=0, atol=1e-8)
    monkeypatch.setattr(spectral, "LOW_RANK_DENSE_N", 100)
    assert np.array_equal(cls(4, random_state=0).fit(low).labels_, dense.labels_)
    with pytest.raises(ValueError, match="low-rank affinity takes laplacian='normalized'"):
        cls(4, negative="clip").fit(low)


@pytest.mark.parametrize("make", [lambda: RMKKM(3, n_init=3, random_state=0),
                                  lambda: RMKKM(3, n_init=2, random_state=1, gamma=0.5),
                                  lambda: RKKM(3, n_init=3, random_state=0),
                                  lambda: RKKM(3, n_init=2, init="sample", random_state=2)],
                         ids=["rmkkm", "rmkkm-gamma", "rkkm", "rkkm-sample"])
def test_robust_kkm_on_the_factors_as_on_the_dense_bank(banks, make):
    """RMKKM and RKKM through the factors (centring a constant per kernel, products with the centre
    matrix): the same labels, objective trace to 1e-9 and weights as on the dense stack; the authors'
    search refuses the factors."""
    low, K, _ = banks
    single = isinstance(make(), RKKM)
    w = np.full(low.n_kernels, 1 / low.n_kernels)
    dense = make().fit(np.tensordot(w, K, axes=1) if single else K)
    fast = make().fit(low.combine(w) if single else low)
    assert np.array_equal(dense.labels_, fast.labels_)
    assert np.allclose(fast.objective_trace_, dense.objective_trace_, rtol=1e-9, atol=0)
    assert fast.n_iter_ == dense.n_iter_
    assert np.allclose(fast.kernel_weights_, dense.kernel_weights_, rtol=1e-9)
    assert np.allclose(fast.sample_weights_, dense.sample_weights_, rtol=1e-7)
    with pytest.raises(ValueError, match="search='authors' forms the combined n x n kernel"):
        RMKKM(3, search="authors").fit(low)


def test_late_fusion_on_the_low_rank_bank(banks):
    """LF-MVC starts from W = I, so its path depends on each base partition's basis (the eigenvectors
    up to sign): the partition agrees, not every digit."""
    low, K, y = banks
    dense, fast = LFMVC(3, random_state=0).fit(K), LFMVC(3, random_state=0).fit(low)
    assert adjusted_rand_score(dense.labels_, fast.labels_) > 0.98
    assert fast.objective_ == pytest.approx(dense.objective_, rel=1e-3)


def test_estimators_that_need_dense_kernels_say_so(banks):
    low, _, _ = banks
    with pytest.raises(ValueError, match="ONKC needs dense kernels.*GiB"):
        ONKC(3).fit(low)
    with pytest.raises(ValueError, match="takes a single kernel, got a low-rank bank of 5"):
        KernelKMeans(3).fit(low)
    with pytest.raises(ValueError, match="takes a bank of kernels"):
        MKKM(3).fit(low.combine(np.ones(5)))
    takes = sorted(name for name, cls in ALGORITHMS.items() if cls.takes_low_rank)
    assert takes == ["kkm", "lfmvc", "mkkm", "mkkmmir", "nc", "rkkm", "rmkkm", "sc", "simplemkkm"]


def test_bad_factors_are_refused():
    with pytest.raises(ValueError, match="factor 1 has 4 rows"):
        LowRankBank([np.ones((5, 2)), np.ones((4, 2))])
    with pytest.raises(ValueError, match="NaN"):
        LowRankBank([np.full((5, 2), np.nan)])
    with pytest.raises(ValueError, match="weights must be 2"):
        LowRankBank([np.ones((5, 2)), np.ones((5, 2))], weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="rank at most 2, below 3"):
        LowRankBank([np.eye(6)[:, :2]], weights=[1.0]).leading(3)


def test_nystroem_bank_reaches_the_estimators_without_a_gram_matrix():
    """A bank built from landmarks goes to a low-rank estimator as its factors (run_input), to the
    label-free score likewise, and the silhouette equals the dense one on the same kernel."""
    X, y = make_blobs(n_samples=300, centers=3, random_state=2)
    bank = build_bank("gauss_grid", X, widths=[1, 2, 4], normalize="none", landmarks=60)
    assert bank.kind == "features"
    ds = Dataset(X=X, y=y, meta={"name": "blobs"})
    data, name = run_input(ds, bank, "kernels", {}, low_rank=True)
    assert isinstance(data, LowRankBank) and data.ndim == 3 and name == bank.names
    mean, _ = run_input(ds, bank, "kernel", {"kernel": "ew"}, low_rank=True)
    assert isinstance(mean, LowRankBank) and mean.ndim == 2
    assert np.allclose(mean.dense(), bank.gram().mean(axis=0))
    labels = KernelKMeans(3, random_state=0).fit(mean).labels_
    assert adjusted_rand_score(y, labels) > 0.9
    f32 = build_bank("gauss_grid", X, widths=[1, 2, 4], normalize="none", landmarks=60, factor_dtype="float32")
    assert all(F.dtype == np.float32 for F in f32.features) and f32.meta["factor_dtype"] == "float32"
    assert np.allclose(f32.features[1], bank.features[1], atol=1e-6)
    assert build_bank("gauss_grid", X[:50], widths=[1], factor_dtype="float32").K.dtype == np.float64
    with pytest.raises(ValueError, match="factor_dtype"):
        build_bank("gauss_grid", X, widths=[1], landmarks=60, factor_dtype="float16")
    assert metrics.kernel_silhouette(mean, labels) == pytest.approx(
        metrics.kernel_silhouette(bank.gram().mean(axis=0), labels), abs=1e-9)


def test_float32_factors_give_the_float64_numbers_to_float32_rounding(banks):
    """Factors stored in float32 (half the memory and about half the time of every product): products,
    traces and eigenvalues within float32 rounding of the float64 ones, and the same partitions."""
    low, _, y = banks
    f32 = LowRankBank([F.astype(np.float32) for F in low.factors])
    A = np.random.default_rng(4).standard_normal((low.n_samples, 3))
    w = np.array([0.1, 0.2, 0.3, 0.2, 0.2])
    assert np.allclose(f32.product(A), low.product(A), rtol=1e-4, atol=1e-4 * np.abs(low.product(A)).max())
    assert np.allclose(f32.traces(), low.traces(), rtol=1e-5)
    assert np.allclose(f32.combine(w).leading(3)[0], low.combine(w).leading(3)[0], rtol=1e-5)
    for make in (lambda: KernelKMeans(3, random_state=0), lambda: SimpleMKKM(3, random_state=0)):
        single = isinstance(make(), KernelKMeans)
        a = make().fit(low.combine(w) if single else low).labels_
        b = make().fit(f32.combine(w) if single else f32).labels_
        assert adjusted_rand_score(a, b) == 1.0


def test_single_precision_lanczos_started_from_another_points_vectors(banks, monkeypatch):
    """SimpleMKKM's line search starts each point's Lanczos from the sum of the eigenvectors at the
    point the search starts from (``eigen(k, start=...)``): the start is the vector ARPACK gets, and
    the eigenpairs are the cold start's (sum to 1e-10, subspace to 1e-6)."""
    low, _, _ = banks
    low32 = LowRankBank([F.astype(np.float32) for F in low.factors])
    monkeypatch.setattr(lowrank, "DENSE_SIDE", 20)
    before = low32.combine(np.array([0.2, 0.2, 0.2, 0.2, 0.2])).eigen(4)
    w = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    cold = low32.combine(w).eigen(4)
    seen = []
    eigsh = scipy.sparse.linalg.eigsh
    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", lambda *a, **kw: seen.append(kw["v0"]) or eigsh(*a, **kw))
    warm = low32.combine(w).eigen(4, start=before)
    start = before.U.sum(axis=1)
    assert len(seen) == 1 and np.allclose(seen[0], start / np.linalg.norm(start))
    assert warm.value == pytest.approx(cold.value, rel=1e-10)
    assert np.allclose(np.linalg.svd(warm.H.T @ cold.H, compute_uv=False), 1.0, atol=1e-6)
