"""RKKM, RMKKM (Du et al. 2015), MKKM and AASC: objectives, optimality conditions, special cases."""

import numpy as np
import pytest

from mkclust import metrics
from mkclust.algorithms import AASC, MKKM, RKKM, RMKKM, get_estimator
from mkclust.algorithms.aasc import aasc_weights
from mkclust.algorithms.kmeans import cluster_distances
from mkclust.algorithms.rmkkm import (_seeded_robust_kkm, centre_matrix, kernel_distances, rmkkm_weights,
                                     robust_mkkm)
from mkclust.datasets import load
from mkclust.kernels import build_bank


def bank(name, bank_name="rmkkm12", **opts):
    ds = load(name, **opts)
    return ds, build_bank(bank_name, ds.X, preprocess="unit").gram()


@pytest.fixture(scope="module")
def digits17():
    return bank("digits1v7")


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [8, 0], [0, 8]], float)
    X = np.vstack([c + rng.normal(size=(30, 2)) for c in centres])
    y = np.repeat(np.arange(3), 30)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.stack([np.exp(-D / (2 * s**2)) for s in (2.0, 4.0)] + [X @ X.T / 64])
    return K, y


def non_increasing(trace, rel=1e-10):
    t = np.asarray(trace)
    return bool(np.all(np.diff(t) <= rel * np.abs(t[:-1])))


@pytest.mark.parametrize("name,bank_name,opts", [("digits1v7", "rmkkm12", {}), ("wine", "rmkkm12", {}),
                                                 ("ringnorm_gen", "mkc3", {"n": 200}), ("digits0689", "rmkkm12", {})])
@pytest.mark.parametrize("gamma", [0.1, 0.3, 0.7, 0.9])
def test_rmkkm_objective_never_increases(name, bank_name, opts, gamma):
    ds, K = bank(name, bank_name, **opts)
    for seed in (0, 1):
        est = RMKKM(n_clusters=ds.n_classes, gamma=gamma, random_state=seed, tol=0).fit(K)
        assert len(est.objective_trace_) >= 3
        assert non_increasing(est.objective_trace_), np.diff(est.objective_trace_).max()
        assert np.isfinite(est.objective_trace_).all() and est.objective_ == est.objective_trace_[-1]
        w = est.kernel_weights_
        assert (w >= 0).all() and (w**gamma).sum() == pytest.approx(1.0, rel=1e-12)
        assert est.sample_weights_.max() == pytest.approx(1.0) and (est.sample_weights_ > 0).all()


@pytest.mark.parametrize("gamma", [0.1, 0.3, 0.5, 0.9])
def test_weight_update_satisfies_the_kkt_conditions_of_eq18(gamma):
    rng = np.random.default_rng(1)
    h = rng.uniform(0.01, 3.0, size=12)
    w = rmkkm_weights(h, gamma)
    assert (w > 0).all() and (w**gamma).sum() == pytest.approx(1.0, rel=1e-12)
    # stationarity of J(w) = w'h + lambda (1 - sum w^gamma): h_t = lambda gamma w_t^(gamma-1), one lambda
    lam = h / (gamma * w ** (gamma - 1))
    np.testing.assert_allclose(lam, lam[0], rtol=1e-10)
    # and it is the minimum of w'h over the constraint: no random feasible point does better
    for _ in range(2000):
        v = rng.uniform(size=12) ** 3
        v /= (v**gamma).sum() ** (1 / gamma)
        assert v @ h >= w @ h - 1e-12


def test_weights_move_to_the_smallest_h_as_gamma_grows():
    h = np.array([1.0, 2.0, 4.0])
    spread = [np.ptp(rmkkm_weights(h, g) / rmkkm_weights(h, g).sum()) for g in (0.05, 0.5, 0.95)]
    assert spread[0] < spread[1] < spread[2]
    assert np.argmax(rmkkm_weights(h, 0.95)) == 0


def test_one_kernel_rmkkm_equals_rkkm(digits17):
    _, K = digits17
    for k in (3, 7, 11):
        a = RMKKM(n_clusters=2, gamma=0.3, random_state=5, n_init=3).fit(K[k:k + 1])
        b = RKKM(n_clusters=2, random_state=5, n_init=3).fit(K[k])
        np.testing.assert_array_equal(a.labels_, b.labels_)
        np.testing.assert_allclose(a.objective_trace_, b.objective_trace_, rtol=1e-12)
        assert a.kernel_weights_ == pytest.approx([1.0]) and b.kernel_weights_.tolist() == [1.0]


def test_assignment_with_unit_sample_weights_is_kernel_kmeans(digits17):
    ds, K = digits17
    rng = np.random.default_rng(0)
    for k in (0, 3, 8, 11):
        labels = rng.integers(0, 4, ds.n)
        dist = kernel_distances(K[k:k + 1], np.diag(K[k])[None], centre_matrix(labels, 4, np.ones(ds.n)))[0]
        ref = cluster_distances(K[k], np.diag(K[k]), labels, 4)
        np.testing.assert_allclose(dist, ref, rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(np.argmin(dist, axis=1), np.argmin(ref, axis=1))


def test_centres_are_the_weighted_means_of_eq12():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    labels = rng.integers(0, 3, 40)
    s = rng.uniform(0.1, 1.0, 40)
    A = centre_matrix(labels, 3, s)
    for j in range(3):
        member = labels == j
        np.testing.assert_allclose(X.T @ A[:, j], (s[member, None] * X[member]).sum(0) / s[member].sum())
    # the feature-space distance through the kernel equals the explicit one
    dist = kernel_distances((X @ X.T)[None], (X * X).sum(1)[None], A)[0]
    explicit = ((X[:, None, :] - (X.T @ A).T[None]) ** 2).sum(-1)
    np.testing.assert_allclose(dist, explicit, atol=1e-10)


def test_empty_clusters_are_reseeded_without_nan():
    a, b = np.array([0.0, 0.0]), np.array([10.0, 0.0])
    X = np.vstack([np.tile(a, (5, 1)), np.tile(b, (5, 1)), [[0.1, 0.0], [9.9, 0.0]]])
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 50.0)[None]
    start = np.array([0] * 5 + [1] * 5 + [2, 2])  # cluster 2 straddles both groups and empties at once
    labels, w, D, obj, trace, n_iter = robust_mkkm(K, start, 3, None, max_iter=20, tol=0)
    assert np.bincount(labels, minlength=3).min() >= 1
    assert np.isfinite(trace).all() and np.isfinite(D).all() and non_increasing(trace)
    # an initial partition missing a cluster entirely is re-seeded too
    labels, *_ = robust_mkkm(K, np.zeros(12, int), 3, None, max_iter=5)
    assert np.bincount(labels, minlength=3).min() >= 1


def test_rmkkm_clusters_separated_blobs_and_is_deterministic(blobs):
    K, y = blobs
    a = RMKKM(n_clusters=3, gamma=0.3, n_init=5, random_state=0).fit(K)
    assert metrics.acc(y, a.labels_) == 1.0
    b = RMKKM(n_clusters=3, gamma=0.3, n_init=5, random_state=0).fit(K)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.objective_ == b.objective_
    assert get_estimator("rmkkm", n_clusters=3, gamma=0.5).gamma == 0.5
    with pytest.raises(ValueError, match=r"'gamma' parameter of RMKKM must be a float in the range \(0.0, 1.0\)"):
        RMKKM(n_clusters=3, gamma=1.5).fit(K)


def test_n_init_keeps_the_lowest_objective(digits17):
    _, K = digits17
    singles = [RMKKM(n_clusters=2, random_state=s).fit(K).objective_ for s in range(3)]
    best = RMKKM(n_clusters=2, n_init=3, random_state=0).fit(K).objective_
    rng_objs = []
    rng = np.random.RandomState(0)
    for _ in range(3):
        labels0 = rng.randint(2, size=K.shape[1])
        rng_objs.append(robust_mkkm(K, labels0, 2, 0.3)[3])
    assert best == min(rng_objs)
    assert len(singles) == 3


def test_mkkm_objective_and_weights(digits17, blobs):
    ds, K = digits17
    for seed in range(3):
        est = MKKM(n_clusters=2, random_state=seed, tol=0).fit(K)
        assert non_increasing(est.objective_trace_)
        w = est.kernel_weights_
        assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
        # w_p proportional to 1 / D_p at the final partition
        Dp = np.array([cluster_distances(Kp, np.diag(Kp), est.labels_, 2)[np.arange(ds.n), est.labels_].sum()
                       for Kp in K])
        np.testing.assert_allclose(w, (1 / Dp) / (1 / Dp).sum(), rtol=1e-8)
        assert est.objective_ == pytest.approx((w**2) @ Dp, rel=1e-10)
    Kb, y = blobs
    assert metrics.acc(y, MKKM(n_clusters=3, n_init=5, random_state=0).fit(Kb).labels_) == 1.0


def test_aasc_objective_weights_and_blobs(blobs):
    K, y = blobs
    est = AASC(n_clusters=3, random_state=0, tol=0, max_iter=10).fit(K[:2])
    assert non_increasing(est.objective_trace_, rel=1e-8)
    assert est.kernel_weights_.sum() == pytest.approx(1.0)
    assert metrics.acc(y, est.labels_) == 1.0
    # the closed-form v-step minimises sum v^p a over the simplex
    rng = np.random.default_rng(0)
    a = rng.uniform(0.1, 2.0, 5)
    v = aasc_weights(a, 2.0)
    for _ in range(1000):
        u = rng.dirichlet(np.ones(5))
        assert (u**2) @ a >= (v**2) @ a - 1e-12
    with pytest.raises(ValueError, match=r"'p' parameter of AASC must be a float in the range \(1.0, inf\)"):
        AASC(n_clusters=3, p=1.0).fit(K[:2])


def _inner_by_loops(Ka, seeds, c, max_iter):
    """Robust kernel k-means of the authors' inner search, one sample at a time (slow, independent):
    centres start at the seed samples; assign, weight 0.5/sqrt(distance) (a sample on its centre gets
    the others' mean weight; all divided by the max), take the weighted means; stop when no label
    changes. Returns (labels, Eq. 4 objective at the last centres)."""
    n = Ka.shape[0]
    coef = np.zeros((n, c))
    coef[seeds, np.arange(c)] = 1.0
    labels = np.full(n, -1)

    def distances(coef):
        d = np.empty((n, c))
        for i in range(n):
            for j in range(c):
                a = coef[:, j]
                d[i, j] = max(Ka[i, i] - 2 * Ka[i] @ a + a @ Ka @ a, 0.0)
        return d

    for _ in range(max_iter):
        d = distances(coef)
        new = d.argmin(axis=1)
        assert len(set(new)) == c  # the test data never empties a cluster
        if (new == labels).all():
            break
        labels = new
        own = np.array([max(d[i, labels[i]], np.finfo(float).eps) for i in range(n)])
        wts = 0.5 / np.sqrt(own)
        wts[own < 1e-10] = wts[own >= 1e-10].mean()   # a sample on its centre: the others' mean weight
        wts /= wts.max()
        coef = np.zeros((n, c))
        for i in range(n):
            coef[i, labels[i]] = wts[i]
        coef /= coef.sum(axis=0)
    d = distances(coef)
    return labels, sum(np.sqrt(d[i, labels[i]]) for i in range(n))


def test_authors_inner_search_matches_a_loop_implementation_and_keeps_the_best_start(blobs):
    K, _ = blobs
    Ka = K.mean(axis=0)
    n, c, starts = Ka.shape[0], 3, 6
    rng = np.random.RandomState(3)
    seeds = [rng.choice(n, c, replace=False) for _ in range(starts)]   # the draws the search makes, in order
    by_loops = [_inner_by_loops(Ka, s, c, 30) for s in seeds]
    # every start alone (the same random stream, one start per call) equals the loop version
    rng = np.random.RandomState(3)
    for loop_labels, _ in by_loops:
        labels, sw = _seeded_robust_kkm(Ka, c, 1, 30, rng)
        np.testing.assert_array_equal(labels, loop_labels)
        assert sw.max() == pytest.approx(1.0) and (sw > 0).all()
    # all starts together (one GEMM per iteration) return the start with the lowest Eq. 4 objective
    labels, _ = _seeded_robust_kkm(Ka, c, starts, 30, np.random.RandomState(3))
    best = int(np.argmin([obj for _, obj in by_loops]))
    np.testing.assert_array_equal(labels, by_loops[best][0])


def test_authors_search_runs_its_fixed_outer_iterations(digits17, blobs):
    ds, K = digits17
    est = RMKKM(n_clusters=2, gamma=0.4, search="authors", max_iter=7, inner_n_init=3, random_state=0).fit(K)
    assert est.n_iter_ == 7 and len(est.objective_trace_) == 7        # no stopping test, as the code
    assert est.objective_ == est.objective_trace_[-1] and np.isfinite(est.objective_trace_).all()
    assert (est.kernel_weights_**0.4).sum() == pytest.approx(1.0, rel=1e-12)
    assert metrics.acc(ds.y, est.labels_) > 0.95
    Kb, y = blobs
    a = RMKKM(n_clusters=3, search="authors", max_iter=5, random_state=1).fit(Kb)
    b = RMKKM(n_clusters=3, search="authors", max_iter=5, random_state=1).fit(Kb)
    assert metrics.acc(y, a.labels_) == 1.0
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.objective_ == b.objective_
    with pytest.raises(ValueError, match=r"'search' parameter of RMKKM must be a str among"):
        RMKKM(n_clusters=3, search="code").fit(Kb)
    with pytest.raises(ValueError, match=r"'inner_n_init' parameter of RMKKM must be an int in the range \[1, inf\)"):
        RMKKM(n_clusters=3, search="authors", inner_n_init=0).fit(Kb)


def test_sample_start_of_the_authors_kernel_kmeans_and_l21kkm():
    """init="sample" (KernelKmeans.m's and L21KKM.m's start): n_clusters random samples as single-point
    centres, each sample to the nearest; KernelKMeans then equals a fit from those centres given as an
    array. On a near-identity Gaussian kernel (t = 0.01 of the mean squared distance, as the RMKKM
    bank's smallest widths) a random partition leaves kernel k-means and RKKM near chance, where the
    sampled centres do better (10 seeds each)."""
    from mkclust.algorithms import KernelKMeans
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(40, 2)) + c for c in ([0, 0], [6, 0], [0, 6])])
    y = np.repeat([0, 1, 2], 40)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.exp(-d2 / (0.01 * d2.mean()))
    est = KernelKMeans(3, init="sample", n_init=1, random_state=4).fit(K)
    again = KernelKMeans(3, init=est.init_centers_, n_init=1).fit(K)
    assert (est.labels_ == again.labels_).all()
    for cls in (KernelKMeans, RKKM):
        acc = {init: np.mean([metrics.acc(y, cls(3, init=init, n_init=1, random_state=s).fit(K).labels_)
                              for s in range(10)]) for init in ("random-partition", "sample")}
        assert acc["sample"] > acc["random-partition"] + 0.05, (cls.__name__, acc)
    with pytest.raises(ValueError, match="init"):
        RKKM(3, init="k-means++").fit(K)
