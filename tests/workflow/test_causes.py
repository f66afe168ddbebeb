"""The yardstick of published values blind to the classes, and the two-cluster models' objectives
with the labels held fixed (mkclust.repro.reporting.causes)."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.metrics.pairwise import rbf_kernel

from mkclust.algorithms._box_svm import box_svm
from mkclust.algorithms._odm import dual_gradient, dual_objective
from mkclust.kernels import center_kernel
from mkclust.metrics import acc as one_to_one_acc, rand_index
from mkclust.repro.reporting.causes import (
    closest_independent_labelling, independent_labelling, lgmmc_objective_at, odmc_objective_at,
)


def test_independent_labelling_moments_match_random_labellings():
    """The exact moments equal those of labellings drawn at random with the given cluster sizes,
    scored by the package's own metrics (4,000 draws: means within four standard errors, deviations within 6 %)."""
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(70, int), np.ones(30, int)]
    base = np.r_[np.ones(40, int), np.zeros(60, int)]
    draws = 4_000
    accs, ris = np.empty(draws), np.empty(draws)
    for i in range(draws):
        z = rng.permutation(base)
        accs[i], ris[i] = one_to_one_acc(y, z), rand_index(y, z)
    mo = independent_labelling((70, 30), 40)
    for name, v in (("acc", accs), ("ri", ris)):
        assert abs(v.mean() - mo[name]) < 4 * v.std() / np.sqrt(draws), name
        assert v.std() == pytest.approx(mo[name + "_sd"], rel=0.06), name


def test_closest_independent_labelling_finds_the_size_and_refuses_a_real_clustering():
    mo = independent_labelling((196, 81), 78)
    m, z, got = closest_independent_labelling((196, 81), mo["acc"], mo["ri"])
    assert m == 78 and z == pytest.approx(0.0, abs=1e-9) and got == mo
    # a labelling that tracks the classes lies far off the curve
    assert closest_independent_labelling((100, 100), 0.95, 0.90)[1] > 10
    # the one-cluster limit: nearly all samples in one cluster approach the one-cluster values
    near = independent_labelling((225, 81), 1)
    assert near["acc"] == pytest.approx(225 / 306, abs=0.01)
    with pytest.raises(ValueError):
        independent_labelling((70, 30), 0)


def test_two_cluster_rand_index_is_a_function_of_the_accuracy():
    """The identity the published-inconsistent causes use: with two classes and two clusters the
    pairs split differently are the correctly times the wrongly assigned samples, so RI = 1 - 2 acc
    (1 - acc) n / (n - 1), whatever the class and cluster sizes."""
    rng = np.random.default_rng(1)
    for n in (7, 50, 653):
        y = rng.integers(0, 2, n)
        for _ in range(20):
            z = np.where(rng.random(n) < rng.random(), y, 1 - y) if n > 7 else rng.integers(0, 2, n)
            a = one_to_one_acc(y, z)
            assert rand_index(y, z) == pytest.approx(1 - 2 * a * (1 - a) * n / (n - 1), abs=1e-12)


def _small_problem(n=14, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X @ X.T + 0.1 * rbf_kernel(X, gamma=0.5), rng.integers(0, 2, n)


def _lbfgs_max(value_grad, n):
    res = minimize(lambda a: tuple(-v for v in value_grad(a)), np.zeros(n), jac=True, method="L-BFGS-B",
                   bounds=[(0.0, None)] * n, options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 50_000})
    return -res.fun


def test_fixed_label_objectives_agree_with_other_solvers():
    """Both values equal other solvers' on the same problem: LG-MMC's the package's own SVM solver
    (coordinate descent), ODMC's L-BFGS-B on Eq. 3 through the fit's own G and gradient."""
    K, labels = _small_problem()
    y = np.where(labels == labels[0], 1.0, -1.0)
    Kc = center_kernel(K)
    C = 3.0
    Q = Kc * np.outer(y, y)
    alpha = box_svm(Q, C, tol=1e-10)[0]
    assert lgmmc_objective_at(K, labels, C) == pytest.approx(alpha.sum() - 0.5 * alpha @ Q @ alpha, rel=1e-6)
    lam, nu, theta = 2.0, 0.8, 0.2
    one = np.ones(1)
    ref = _lbfgs_max(lambda a: (dual_objective(Kc, a, y, lam, nu, theta)[0],
                                dual_gradient(Kc, a, y, one, lam, nu, theta)), 2 * len(y))
    assert odmc_objective_at(K, labels, lam, nu, theta) == pytest.approx(ref, rel=1e-5)
    assert lgmmc_objective_at(K, 1 - labels, C) == pytest.approx(lgmmc_objective_at(K, labels, C), rel=1e-9)


def test_fixed_label_objectives_prefer_the_classes_of_separated_blobs():
    """On two separated blobs both models score the true labelling lower (preferred) than any of 20
    random balanced labellings: the direction the model-prefers-other evidence reads."""
    rng = np.random.default_rng(1)
    X = np.r_[rng.normal(-3, 1, size=(30, 2)), rng.normal(3, 1, size=(30, 2))]
    y = np.r_[np.zeros(30, int), np.ones(30, int)]
    K = rbf_kernel(X, gamma=0.1)
    others = [rng.permutation(y) for _ in range(20)]
    assert lgmmc_objective_at(K, y, 1.0) < min(lgmmc_objective_at(K, z, 1.0) for z in others)
    assert odmc_objective_at(K, y, 1.0, 0.8, 0.2) < min(odmc_objective_at(K, z, 1.0, 0.8, 0.2) for z in others)
    with pytest.raises(ValueError, match="two clusters"):
        lgmmc_objective_at(K, np.arange(60) % 3, 1.0)
