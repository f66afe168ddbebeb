"""The authors' MATLAB starts replayed (mkclust.algorithms._matlab) and MKKM with MKKM.m's steps."""

import numpy as np
import pytest

from mkclust.algorithms import MKKM, RKKM, KernelKMeans
from mkclust.algorithms._matlab import MatlabStream, replay


def test_the_stream_is_matlabs_default_one():
    """MATLAB after rng('default'): rand(2, 2) = [0.8147 0.1270; 0.9058 0.9134] (filled by columns, the
    documented first values of its Mersenne Twister, seed 5489)."""
    s = MatlabStream()
    assert s.rand(2, 2) == pytest.approx(np.array([[0.8147236863931789, 0.1269868162935061],
                                                   [0.9057919370756192, 0.9133758561390194]]), abs=1e-16)


def test_randsample_follows_matlabs_algorithm():
    """randsample(10, 2): 4k < n, so randi(10, 1, 2) = ceil(10 * [.8147 .9058]) = [9 10], distinct, then
    permuted by randperm(2) (the order sorting rand(1, 2) = [.1270 .9134]): 0-based [8, 9]. A draw with
    repeated values draws again until k distinct ones; 4k > n takes the first k of randperm(n)."""
    assert MatlabStream().randsample(10, 2).tolist() == [8, 9]
    s = MatlabStream()
    for _ in range(200):
        idx = s.randsample(12, 3)
        assert len(set(idx.tolist())) == 3 and idx.min() >= 0 and idx.max() < 12
    order = np.argsort(np.random.RandomState(5489).random_sample(5), kind="stable")[:3]
    assert MatlabStream().randsample(5, 3).tolist() == order.tolist()


def test_partition_is_the_row_maximum_of_rand():
    s, t = MatlabStream(), MatlabStream()
    assert (s.partition(7, 3) == np.argmax(t.rand(7, 3), axis=1)).all()


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(25, 2)) + c for c in ([0, 0], [5, 0], [0, 5], [5, 5])])
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.stack([np.exp(-d2 / (2 * s ** 2 * d2.max())) for s in (0.05, 0.3, 1.0)] + [X @ X.T])
    diag = np.sqrt(np.einsum("tii->ti", K))
    return K / (diag[:, :, None] * diag[:, None, :])     # unit diagonals, as the RMKKM bank's kernels


def test_init_matlab_replays_the_repeat_of_the_authors_script(blobs):
    """Repeat r of the authors' script starts where r earlier draws left the stream: KernelKMeans and RKKM
    with init="matlab" and random_state=r equal fits from those centres; a missing repeat number is a
    clear error."""
    K = blobs[1]
    n = K.shape[0]
    for r in (0, 3):
        centres = replay(r, lambda s: s.randsample(n, 4)).randsample(n, 4)
        km = KernelKMeans(4, init="matlab", n_init=1, random_state=r).fit(K)
        assert km.init_centers_.tolist() == centres.tolist()
        assert (km.labels_ == KernelKMeans(4, init=centres, n_init=1).fit(K).labels_).all()
        rk = RKKM(4, init="matlab", random_state=r).fit(K)
        assert (rk.labels_ == RKKM(4, init="matlab", random_state=r).fit(K).labels_).all()
        assert rk.objective_trace_[0] >= rk.objective_   # Algorithm 1 from the replayed start
    with pytest.raises(ValueError, match="repeat number"):
        KernelKMeans(4, init="matlab", n_init=1, random_state=None).fit(K)


def _mkkm_m(K, labels, c, tol=1e-5, max_iter=100):
    """MKKM.m written out plainly (one kernel at a time, the indicator matrix divided by its column sums
    plus n eps, alpha = diag(M' K M)' - 2 K M + 1): an independent check of steps="authors"."""
    m, n, _ = K.shape
    objs = []
    for _ in range(max_iter):
        U = np.zeros((n, c))
        U[np.arange(n), labels] = 1.0
        Mt = U / (U.sum(axis=0) + n * np.finfo(float).eps)
        alpha = np.stack([np.diag(Mt.T @ K[t] @ Mt)[None, :] - 2 * K[t] @ Mt + 1 for t in range(m)])
        bk = np.array([(U * alpha[t]).sum() for t in range(m)])
        w = (1 / bk) / (1 / bk).sum()
        dist = sum(w[t] ** 2 * alpha[t] for t in range(m))
        objs.append((dist * U).sum())
        labels = dist.argmin(axis=1)
        if len(objs) > 1 and abs(objs[-1] - objs[-2]) < tol:
            break
    return labels, w


def test_mkkm_authors_steps_equal_mkkm_m(blobs):
    """steps="authors" gives MKKM.m's labels and weights from the same partition, on a bank where
    clusters empty (8 clusters asked of 4 blobs); with steps="exact" every cluster stays filled."""
    n = blobs.shape[1]
    emptied = 0
    for r in range(6):
        start = replay(r, lambda s: s.partition(n, 8)).partition(n, 8)
        est = MKKM(8, init="matlab", steps="authors", random_state=r).fit(blobs)
        labels, w = _mkkm_m(blobs, start, 8)
        assert (est.labels_ == labels).all()
        assert est.kernel_weights_ == pytest.approx(w, rel=1e-9)
        emptied += len(np.unique(labels)) < 8
        exact = MKKM(8, init="matlab", random_state=r).fit(blobs)
        assert len(np.unique(exact.labels_)) == 8
    assert emptied > 0


def test_litekmeans_keeps_the_replicate_with_the_smallest_sum_of_distances():
    """The authors' litekmeans keeps the replicate whose samples' Euclidean distances to their centres
    sum least (it takes the square root before summing): computed here on the features directly, for
    every replicate, the kept one is that argmin, and on this data it is not the argmin of the squared
    sum (k-means' objective) for at least one seed."""
    from mkclust.algorithms.spectral import litekmeans
    from mkclust.algorithms.kmeans import KernelKMeans
    differ = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        X = np.vstack([rng.normal(size=(30, 3)) * s + c for s, c in ((0.3, 0), (1.5, 3), (0.8, -3), (2.0, 6))])
        G = X @ X.T
        starts = [rng.choice(len(X), 4, replace=False) for _ in range(8)]
        sums = []
        for st in starts:
            lab = KernelKMeans(4, init=st, n_init=1, max_iter=100).fit(G).labels_
            cen = np.stack([X[lab == k].mean(axis=0) for k in range(4)])
            d = np.linalg.norm(X - cen[lab], axis=1)
            sums.append((d.sum(), (d ** 2).sum(), lab))
        labels, total, _ = litekmeans(G, starts, 4, 100)
        best = int(np.argmin([s[0] for s in sums]))
        assert total == pytest.approx(sums[best][0], rel=1e-9) and (labels == sums[best][2]).all()
        differ += int(np.argmin([s[1] for s in sums])) != best and sums[int(np.argmin([s[1] for s in sums]))][0] > total
    assert differ > 0
