"""The yardstick of published values blind to the classes (mkclust.repro.reporting.causes)."""

import numpy as np
import pytest

from mkclust.metrics import acc as one_to_one_acc, rand_index
from mkclust.repro.reporting.causes import closest_independent_labelling, independent_labelling


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
