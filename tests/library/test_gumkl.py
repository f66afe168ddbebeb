"""GUMKL (Tzortzis and Likas 2012): greedy medoids, k-medoids, weights, Algorithm 1."""

import warnings

import numpy as np
import pytest

from mkclust import metrics
from mkclust.algorithms import GUMKL, get_estimator
from mkclust.algorithms import gumkl as G
from mkclust.datasets import load
from mkclust.kernels import build_bank


@pytest.fixture(scope="module")
def views():
    ds = load("digits_views", classes=[1, 2, 7, 9])
    K = build_bank("views_linear", ds.X, views=ds.meta["views"], normalize="trace").gram()
    return ds, K


def brute_force_greedy(Dm, M):
    """Eq. 3 with explicit loops over candidates and points (the reference for the vectorised one)."""
    n = Dm.shape[0]
    first = min(range(n), key=lambda j: sum(Dm[i, j] for i in range(n)))
    medoids, d = [first], [Dm[i, first] for i in range(n)]
    for _ in range(1, M):
        gains = [(-1.0 if j in medoids else sum(max(d[i] - Dm[i, j], 0.0) for i in range(n))) for j in range(n)]
        j = max(range(n), key=lambda k: (gains[k], -k))
        medoids.append(j)
        d = [min(d[i], Dm[i, j]) for i in range(n)]
    return medoids


def test_greedy_medoids_deterministic_match_brute_force_and_start_at_the_medoid(views):
    ds, K = views
    Dm = G.sq_distances(K.sum(axis=0))
    a = G.greedy_medoids(Dm, 4)
    np.testing.assert_array_equal(a, G.greedy_medoids(Dm, 4))
    assert a[0] == np.argmin(Dm.sum(axis=0))  # the data set's medoid
    sub = Dm[:60, :60]
    np.testing.assert_array_equal(G.greedy_medoids(sub, 5), brute_force_greedy(sub, 5))


def test_kmedoids_objective_never_increases(views):
    ds, K = views
    rng = np.random.default_rng(0)
    for v in range(K.shape[0]):
        Dm = G.sq_distances(K[v])
        for _ in range(3):
            start = rng.choice(ds.n, 4, replace=False)
            labels, medoids, trace = G.kernel_kmedoids(Dm, start)
            assert np.all(np.diff(trace) <= 1e-9 * np.abs(trace[:-1]))
            assert len(set(medoids)) == 4 and np.array_equal(labels[medoids], np.arange(4))
            # converged: every point is with its nearest medoid
            np.testing.assert_allclose(Dm[np.arange(ds.n), medoids[labels]], Dm[:, medoids].min(axis=1))


def test_weights_by_eq7_on_a_hand_computed_case():
    E = np.array([1.0, 2.0, 4.0])
    # p = 2: w_v = 1 / sum_v' E_v / E_v' = (1/E_v) / sum(1/E)
    np.testing.assert_allclose(G.gumkl_weights(E, 2.0), [4 / 7, 2 / 7, 1 / 7])
    # p = 3: exponent 1/2 -> w proportional to E^-1/2
    r = 1 / np.sqrt(E)
    np.testing.assert_allclose(G.gumkl_weights(E, 3.0), r / r.sum())
    assert G.gumkl_weights(E, 3.0).sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(G.gumkl_weights(E, 1.0), [1, 0, 0])  # Eq. 8
    np.testing.assert_allclose(G.gumkl_weights(E, float("inf")), [1 / 3] * 3)


def test_weights_minimise_eq6_over_the_simplex():
    rng = np.random.default_rng(3)
    E = rng.uniform(1, 10, 5)
    for p in (1.5, 2.0, 4.0):
        w = G.gumkl_weights(E, p)
        for _ in range(500):
            u = rng.dirichlet(np.ones(5))
            assert (u**p) @ E >= (w**p) @ E - 1e-12


def test_growing_p_flattens_the_weights():
    E = np.array([1.0, 3.0, 9.0, 2.0])
    spread = [np.ptp(G.gumkl_weights(E, p)) for p in (1.5, 2, 3, 5, 8, 50)]
    assert all(a > b for a, b in zip(spread, spread[1:]))
    np.testing.assert_allclose(G.gumkl_weights(E, 1e6), 0.25, atol=1e-5)


def test_p1_keeps_only_the_lowest_variance_kernel(views):
    ds, K = views
    est = GUMKL(n_clusters=4, p=1).fit(K)
    w = est.kernel_weights_
    assert (w == 1).sum() == 1 and (w == 0).sum() == K.shape[0] - 1
    assert np.argmax(w) == np.argmin(est.intra_cluster_variances_)


def test_uniform_baseline_is_one_pass_without_weight_update(views):
    ds, K = views
    est = GUMKL(n_clusters=4, p="inf", refine=False).fit(K)
    assert est.n_iter_ == 1 and np.allclose(est.kernel_weights_, 1 / K.shape[0])
    # the same as k-medoids from the greedy medoids on the plain kernel sum
    Dm = G.sq_distances(K.sum(axis=0))
    labels, *_ = G.kernel_kmedoids(Dm, G.greedy_medoids(Dm, 4))
    np.testing.assert_array_equal(est.labels_, labels)


def test_gumkl_fit_refinement_and_weights(views):
    ds, K = views
    est = GUMKL(n_clusters=4, p=2.5).fit(K)
    assert est.kernel_weights_.sum() == pytest.approx(1.0) and (est.kernel_weights_ > 0).all()
    E = est.intra_cluster_variances_
    np.testing.assert_allclose(est.kernel_weights_, G.gumkl_weights(E, 2.5))
    unref = GUMKL(n_clusters=4, p=2.5, refine=False).fit(K)
    np.testing.assert_array_equal(unref.labels_, est.labels_unrefined_)
    assert metrics.nmi(ds.y, est.labels_) > 0.5
    again = GUMKL(n_clusters=4, p=2.5).fit(K)
    np.testing.assert_array_equal(again.labels_, est.labels_)
    assert get_estimator("gumkl", n_clusters=4, p=3).p == 3
    with pytest.raises(ValueError, match=r"'p' parameter of GUMKL must be a float in the range \[1.0, inf\]"):
        GUMKL(n_clusters=4, p=0.5).fit(K)


def test_objective_rise_is_a_warning_not_an_error(monkeypatch, views):
    ds, K = views
    calls = {"n": 0}
    real = G.greedy_medoids

    def worse_second_time(Dm, M):  # a poor greedy start at iteration 2 makes the objective rise
        calls["n"] += 1
        return real(Dm, M) if calls["n"] != 2 else np.arange(M)

    monkeypatch.setattr(G, "greedy_medoids", worse_second_time)
    monkeypatch.setattr(G, "kernel_kmedoids", lambda Dm, med, it=100: (np.argmin(Dm[:, med], 1), med, [0.0]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = GUMKL(n_clusters=4, p=2, max_iter=3, tol=0).fit(K)
    assert est.objective_increases_ >= 1
    assert any(issubclass(w.category, G.GUMKLObjectiveIncrease) for w in caught)
    assert np.isfinite(est.objective_trace_).all()


def test_mixing_coefficients_in_logs_and_their_large_p_limit():
    E = np.array([1.0, 2.0, 5.0, 10.0, 20.0])
    for p in (1.5, 3.0, 10.0):  # equal to w^p / sum w^p where that is representable
        w = G.gumkl_weights(E, p)
        np.testing.assert_allclose(G.mixing_coefficients(w, p), w**p / (w**p).sum(), rtol=1e-12)
        assert G.log_objective(w, E, p) == pytest.approx(np.log((w**p) @ E), rel=1e-12)
    w = G.gumkl_weights(E, 1000.0)
    assert (w**1000.0).sum() < 1e-300  # w^p itself underflows to 0 (about 0.2^1000)
    c = G.mixing_coefficients(w, 1000.0)
    assert np.isfinite(c).all() and c.sum() == pytest.approx(1.0) and np.isfinite(G.log_objective(w, E, 1000.0))
    # w tends to uniform, the coefficients to (1 / E_v) / sum (1 / E): not the uniform baseline
    limit = (1 / E) / (1 / E).sum()
    np.testing.assert_allclose(G.gumkl_weights(E, 1e6), 0.2, atol=1e-5)
    np.testing.assert_allclose(G.mixing_coefficients(G.gumkl_weights(E, 1e6), 1e6), limit, atol=1e-4)
    assert np.abs(c - limit).max() < np.abs(G.mixing_coefficients(G.gumkl_weights(E, 10.0), 10.0) - limit).max()
    assert np.abs(limit - 0.2).max() > 0.2


def test_p_1000_clusters_like_its_limit(views):
    ds, K = views
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", G.GUMKLObjectiveIncrease)
        est = GUMKL(n_clusters=4, p=1000.0).fit(K)
    assert np.isfinite(est.log_objective_) and np.isfinite(est.mixing_weights_).all()
    assert est.mixing_weights_.sum() == pytest.approx(1.0)
    assert metrics.nmi(ds.y, est.labels_) > 0.5  # w^p computed directly gave NMI 0.004-0.026 at p = 1000
    E = est.intra_cluster_variances_
    np.testing.assert_allclose(est.mixing_weights_, (1 / E) / (1 / E).sum(), atol=0.01)


def test_p_infinity_as_a_float_is_the_documented_uniform_weighting():
    import numpy as np
    from mkclust.algorithms import GUMKL
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    K = np.stack([X @ X.T + 1e-3 * np.eye(30), np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))])
    ref = GUMKL(n_clusters=2, p="inf").fit(K)
    for p in (float("inf"), np.inf):
        g = GUMKL(n_clusters=2, p=p).fit(K)
        assert np.array_equal(g.labels_, ref.labels_) and np.allclose(g.kernel_weights_, [0.5, 0.5])
