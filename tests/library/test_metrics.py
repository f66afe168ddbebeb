import numpy as np
import pytest

from mkclust import metrics


def test_acc_and_purity_hand_computed():
    # contingency (classes x clusters): class0 = [3, 1, 0], class1 = [0, 1, 1]
    t = [0, 0, 0, 0, 1, 1]
    p = [0, 0, 0, 1, 1, 2]
    # purity: clusters' majorities 3 + 1 + 1 = 5; Hungarian: cluster0->0 (3), one of c1/c2->1 (1) = 4
    assert metrics.purity(t, p) == pytest.approx(5 / 6)
    assert metrics.majority_acc(t, p) == pytest.approx(5 / 6)
    assert metrics.acc(t, p) == pytest.approx(4 / 6)
    # inverse purity: classes' largest clusters 3 + 1 = 4; one cluster scores 1 whatever the classes
    assert metrics.inverse_purity(t, p) == pytest.approx(4 / 6) == metrics.purity(p, t)
    assert metrics.inverse_purity(t, [0] * 6) == 1.0 and metrics.purity(t, [0] * 6) == pytest.approx(4 / 6)


def test_acc_invariant_to_relabelling():
    rng = np.random.default_rng(0)
    t = rng.integers(0, 4, 200)
    perm = np.array([2, 0, 3, 1])
    assert metrics.acc(t, perm[t]) == 1.0
    assert metrics.ari(t, perm[t]) == pytest.approx(1.0)
    assert metrics.nmi(t, perm[t]) == pytest.approx(1.0)


def test_rand_index_hand_computed():
    # pairs: (1,2) agree, (1,3) no, (1,4) agree, (2,3) no, (2,4) agree, (3,4) no
    assert metrics.rand_index([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(0.5)


def test_nmi_normalisations_hand_computed():
    # V determines U: MI = H(U) = ln 2, H(V) = 1.5 ln 2
    t, p = [0, 0, 1, 1], [0, 0, 1, 2]
    assert metrics.nmi(t, p) == pytest.approx(2 / 3)  # default: max, as the RMKKM authors' code
    assert metrics.nmi(t, p, "max") == pytest.approx(2 / 3)
    assert metrics.nmi(t, p, "arithmetic") == pytest.approx(1 / 1.25)
    assert metrics.nmi(t, p, "geometric") == pytest.approx(1 / np.sqrt(1.5))
    assert metrics.nmi(t, p, "min") == pytest.approx(1.0)
    assert metrics.nmi([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0, abs=1e-12)


def test_ari_hand_computed():
    # contingency [[2, 0], [1, 1]]: sum C(nij,2) = 1; a = [2, 2] -> 2; b = [3, 1] -> 3; C(4,2) = 6
    # expected = 2*3/6 = 1; max = (2+3)/2 = 2.5 -> ARI = (1 - 1) / (2.5 - 1) = 0
    assert metrics.ari([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(0.0, abs=1e-12)


def test_evaluate_has_every_metric():
    out = metrics.evaluate([0, 1, 1], [1, 0, 0])
    assert set(out) == {"acc", "majority_acc", "nmi", "purity", "ri", "ari"}
    assert all(v == pytest.approx(1.0) for v in out.values())


def test_bad_input():
    with pytest.raises(ValueError, match="differ in length"):
        metrics.acc([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="average_method"):
        metrics.nmi([0, 1], [0, 1], "mean")
    with pytest.raises(ValueError, match="1-d"):
        metrics.purity([[0, 1]], [[0, 1]])


def test_the_kernel_silhouette_of_a_linear_kernel_is_the_euclidean_silhouette():
    """With K = X X', the kernel's distance is the Euclidean one: scikit-learn's silhouette on X; a
    single cluster is undefined (NaN); well separated blobs score near 1, a random split near 0."""
    from sklearn.datasets import make_blobs
    from sklearn.metrics import silhouette_score

    from mkclust.metrics import kernel_silhouette
    X, y = make_blobs(n_samples=90, centers=3, cluster_std=0.3, random_state=0)
    K = X @ X.T
    assert kernel_silhouette(K, y) == pytest.approx(silhouette_score(X, y), abs=1e-9)
    assert kernel_silhouette(K, y) > 0.8
    rand = np.random.default_rng(0).integers(0, 3, 90)
    assert abs(kernel_silhouette(K, rand)) < 0.1
    assert np.isnan(kernel_silhouette(K, np.zeros(90, int)))


def test_majority_share_is_the_accuracy_of_one_cluster():
    y = np.array(["a", "b", "b", "c", "b", "a", "b"])   # b holds 4 of 7
    assert metrics.majority_share(y) == pytest.approx(4 / 7)
    one_cluster = np.zeros(len(y), dtype=int)
    assert metrics.acc(y, one_cluster) == pytest.approx(metrics.majority_share(y))
    assert metrics.purity(y, one_cluster) == pytest.approx(metrics.majority_share(y))
    with pytest.raises(ValueError, match="empty"):
        metrics.majority_share([])
