"""ODMC (Zhang and Zhou 2018): the dual objective of Eq. 3, Algorithm 1's invariants, label generation."""

import itertools

import cvxpy as cp
import numpy as np
import pytest

from mkclust import metrics
from mkclust.algorithms import ODMC, get_estimator
from mkclust.algorithms._labels import _most_violated
from mkclust.algorithms._odm import dual_gradient, dual_objective, odm_kappa
from mkclust.kernels import center_kernel


def blobs(n=40, gap=6.0, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(n, 2)), rng.normal(size=(n, 2)) + [gap, 0.0]])
    X -= X.mean(axis=0)
    return X @ X.T, np.repeat([0, 1], n)


def random_problem(n=12, k=3, seed=0):
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(n, 4))
    K = F @ F.T
    alpha = rng.uniform(0, 1, size=2 * n)
    Y = rng.choice([-1.0, 1.0], size=(k, n))
    return K, alpha, Y


def test_dual_objective_is_the_block_form_of_eq3():
    K, alpha, Y = random_problem()
    n = K.shape[0]
    lam, nu, th = 3.0, 0.4, 0.2
    for y in Y:
        Q = K * np.outer(y, y)
        H = np.block([[Q, -Q], [-Q, Q]])
        D = np.diag(np.r_[np.ones(n), np.ones(n) / nu])
        c = np.r_[(th - 1) * np.ones(n), (th + 1) * np.ones(n)]
        G = -0.5 * alpha @ H @ alpha - n * (1 - th) ** 2 / (4 * lam) * alpha @ D @ alpha - c @ alpha
        assert dual_objective(K, alpha, y, lam, nu, th)[0] == pytest.approx(G, rel=1e-12)


def test_dual_gradient_matches_finite_differences():
    K, alpha, Y = random_problem(seed=1)
    w = np.array([0.2, 0.5, 0.3])
    lam, nu, th = 10.0, 0.6, 0.4
    f = lambda a: w @ dual_objective(K, a, Y, lam, nu, th)  # noqa: E731
    g = dual_gradient(K, alpha, Y, w, lam, nu, th)
    h = 1e-6
    num = np.array([(f(alpha + h * e) - f(alpha - h * e)) / (2 * h) for e in np.eye(alpha.size)])
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-6)


def test_default_tau_holds_every_maximiser():
    # the maximiser of G(., y) over alpha >= 0, solved independently by cvxpy, lies inside [0, tau]
    K, _, Y = random_problem(n=15, k=4, seed=2)
    n = K.shape[0]
    L = np.linalg.cholesky(K + 1e-9 * np.eye(n))
    for lam, nu, th in [(1.0, 0.2, 0.2), (100.0, 0.8, 0.6), (10.0, 0.4, 0.8)]:
        tau = ODMC(lam=lam, nu=nu, theta=th).default_tau(n)
        kappa = odm_kappa(n, lam, th)
        for y in Y:
            a1, a2 = cp.Variable(n, nonneg=True), cp.Variable(n, nonneg=True)
            s = cp.multiply(y, a1 - a2)
            obj = (-0.5 * cp.sum_squares(L.T @ s) - kappa * (cp.sum_squares(a1) + cp.sum_squares(a2) / nu)
                   + (1 - th) * cp.sum(a1) - (1 + th) * cp.sum(a2))
            cp.Problem(cp.Maximize(obj)).solve(solver=cp.CLARABEL)
            assert max(a1.value.max(), a2.value.max()) <= tau + 1e-7


@pytest.fixture(scope="module")
def fitted():
    K, y = blobs()
    return K, y, ODMC(lam=1.0, max_iter=3000, random_state=0).fit(K)


def test_two_blobs_are_labelled_perfectly(fitted):
    K, y, est = fitted
    assert metrics.acc(y, est.labels_) == 1.0
    np.testing.assert_array_equal(est.labels_, (est.decision_ < 0).astype(int))


def test_mu_on_the_simplex_alpha_in_the_box_and_B_balanced(fitted):
    K, y, est = fitted
    n = y.size
    assert (est.mu_ >= 0).all() and est.mu_.sum() == pytest.approx(1.0, abs=1e-12)
    assert est.mu_.shape == (len(est.labels_pool_),)
    assert (est.alpha_ >= 0).all() and (est.alpha_ <= est.tau_).all()
    sums = est.labels_pool_.astype(float).sum(axis=1)
    assert (np.abs(sums) <= 0.03 * n).all()
    assert set(np.unique(est.labels_pool_)) <= {-1, 1}
    # y and -y are one clustering: B holds each once
    assert len({tuple(r) for r in est.labels_pool_ * est.labels_pool_[:, :1]}) == len(est.labels_pool_)


def test_duality_gap_trends_down_within_an_epoch():
    K, _ = blobs(seed=3)
    # no label generation: one averaging epoch over a fixed B
    est = ODMC(lam=10.0, max_iter=4000, generate_every=10**6, check_every=50, random_state=1).fit(K)
    gaps = np.array([g for _, g in est.gap_trace_])
    windows = gaps[: len(gaps) // 4 * 4].reshape(4, -1).mean(axis=1)
    assert (np.diff(windows) < 0).all(), windows
    assert gaps[-1] < 0.5 * gaps[0]


def test_gap_bound_is_above_the_true_gap():
    # the reported gap bounds max_A phi(mu, .) - min_k G(alpha, y_k); the max solved by cvxpy
    K, _ = blobs(n=10, seed=4)
    est = ODMC(lam=1.0, max_iter=300, random_state=0).fit(K)
    n = K.shape[0]
    Y = est.labels_pool_.astype(float)
    L = np.linalg.cholesky(K + 1e-9 * np.eye(n))
    kappa = odm_kappa(n, est.lam, est.theta)
    a1, a2 = cp.Variable(n), cp.Variable(n)
    th, nu = est.theta, est.nu
    phi = sum(m * (-0.5 * cp.sum_squares(L.T @ cp.multiply(y, a1 - a2))) for m, y in zip(est.mu_, Y))
    phi += (-kappa * (cp.sum_squares(a1) + cp.sum_squares(a2) / nu) + (1 - th) * cp.sum(a1) - (1 + th) * cp.sum(a2))
    prob = cp.Problem(cp.Maximize(phi), [a1 >= 0, a2 >= 0, a1 <= est.tau_, a2 <= est.tau_])
    prob.solve(solver=cp.CLARABEL)
    true_gap = prob.value - dual_objective(K, est.alpha_, Y, est.lam, nu, th).min()
    assert -1e-7 <= true_gap <= est.duality_gap_ + 1e-7


def test_most_violated_is_balanced_and_swap_optimal():
    rng = np.random.default_rng(5)
    F = rng.normal(size=(10, 3))
    K = F @ F.T
    d = rng.uniform(-1, 1, size=10)
    M = K * np.outer(d, d)
    y = _most_violated(K, d, beta=0.0)
    assert y.sum() == 0
    best = y @ M @ y
    # no swap of a +1 and a -1 label improves it (brute force over all swaps)
    for i, j in itertools.product(np.flatnonzero(y > 0), np.flatnonzero(y < 0)):
        z = y.copy()
        z[i], z[j] = -1, 1
        assert z @ M @ z <= best + 1e-10
    # and it beats the median thresholding of a random direction
    assert best >= np.sign(rng.normal(size=10)) @ M @ np.sign(rng.normal(size=10)) - 1e-12


def test_odmc_parameters_and_registry():
    K, _ = blobs(n=8)
    with pytest.raises(ValueError, match="two classes"):
        ODMC(n_clusters=3).fit(K)
    with pytest.raises(ValueError, match="theta"):
        ODMC(theta=1.0).fit(K)
    with pytest.raises(ValueError, match=r"'lam' parameter of ODMC must be a float in the range \(0.0, inf\)"):
        ODMC(lam=0.0).fit(K)
    a = get_estimator("odmc", lam=10.0, max_iter=200, random_state=3).fit(K)
    b = ODMC(lam=10.0, max_iter=200, random_state=3).fit(K)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.mu_, b.mu_)


def test_compiled_swap_search_equals_its_plain_source(monkeypatch):
    """The numba loop of the swap search (_swap.swap_rows) against its own Python source run plainly
    (every helper's py_func): the same labels, the same M y and the same number of swaps per row, on
    PSD and indefinite kernels, with few candidates (the full pair check) and ties among the flip
    gains (a kernel of integers)."""
    from mkclust.algorithms import _swap
    from mkclust.algorithms._labels import abs_maxima
    rng = np.random.default_rng(3)
    cases = []
    for t in range(12):
        n = int(rng.integers(5, 70))
        F = rng.normal(size=(n, 3 if t % 3 else n))
        K = F @ F.T if t % 3 else (F + F.T) / 2
        if t % 4 == 0:
            K = np.round(K)                                   # ties in the gains
        D = rng.uniform(-1, 1, size=(4, n))
        Y = np.where(rng.random((4, n)) < rng.uniform(0.1, 0.6), 1.0, -1.0)
        G = D * ((D * Y) @ K.T)
        cases.append((K, D, Y, G, int(rng.integers(1, 10)), int(rng.integers(1, 40))))
    out = {}
    for plain in (False, True):
        if plain:
            for name in ("_insert_top", "_full_pair"):
                monkeypatch.setattr(_swap, name, getattr(_swap, name).py_func)
        fn = _swap.swap_rows.py_func if plain else _swap.swap_rows
        res = []
        for K, D, Y, G, cand, swaps in cases:
            Yc, Gc = Y.copy(), G.copy()
            kmax = abs_maxima(K)
            count = fn(K, np.ascontiguousarray(K.T), D, Yc, Gc, np.diag(K).copy(), kmax[0], kmax[1], swaps, cand)
            res.append((Yc, Gc, count))
        out[plain] = res
    assert sum(int(c.sum()) for _, _, c in out[False]) > 0
    for (Ya, Ga, ca), (Yb, Gb, cb) in zip(out[False], out[True]):
        np.testing.assert_array_equal(Ya, Yb)
        np.testing.assert_array_equal(ca, cb)
        np.testing.assert_array_equal(Ga, Gb)


def test_lockstep_lanczos_finds_each_rows_leading_eigenvector():
    """leading_eigvecs_rows (one GEMM per Lanczos step for all rows) against the dense eigh of each
    M_r = diag(d_r) K diag(d_r): the same vector up to sign, at ARPACK's residual criterion; an
    all-ones row, a row whose Krylov space is invariant early (rank 2), rows in blocks, and the
    dense path too."""
    from mkclust.algorithms._labels import DENSE_LIMIT, leading_eigvecs_rows
    rng = np.random.default_rng(8)
    n = DENSE_LIMIT + 50
    F = rng.normal(size=(n, 6)) * [3, 2, 1.5, 1, 0.5, 0.25]
    K = F @ F.T
    D = rng.uniform(-1, 1, size=(5, n))
    D[1] = 1.0
    D[2] = 0.0
    D[2, :2] = 1.0                                              # M of rank <= 2
    for k, dd, block in ((K, D, 64), (K, D, 2), (K[:50, :50], D[:, :50], 64)):   # one block, three, dense
        V = leading_eigvecs_rows(k, dd, tol=1e-10, block=block)
        for r in range(len(dd)):
            M = k * np.outer(dd[r], dd[r])
            lam, vec = np.linalg.eigh(M)
            v = V[r] / np.linalg.norm(V[r])
            assert abs(v @ vec[:, -1]) == pytest.approx(1.0, abs=1e-8)
            assert np.linalg.norm(M @ v - lam[-1] * v) <= 1e-8 * abs(lam[-1])


def swap_reference(K, d, y, max_swaps, n_candidates):
    """The swap loop of _swap_improve for one labelling, written plainly: full stable sorts for the
    candidates, every pair when none of theirs improves."""
    y, late = y.copy(), 0
    M = K * np.outer(d, d)
    for _ in range(max_swaps):
        g = M @ y
        delta = 4 * (np.diag(M) - y * g)
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        tol = 1e-12 * max(1.0, abs(y @ g))
        found = None
        for full, (ip, jn) in enumerate(((pos[np.argsort(-delta[pos], kind="stable")[:n_candidates]],
                                          neg[np.argsort(-delta[neg], kind="stable")[:n_candidates]]), (pos, neg))):
            gain = delta[ip][:, None] + delta[jn][None, :] - 8 * M[np.ix_(ip, jn)]
            a, b = np.unravel_index(np.argmax(gain), gain.shape)
            if gain[a, b] > tol:
                found, late = (ip[a], jn[b]), late + full
                break
        if found is None:
            break
        y[found[0]], y[found[1]] = -1.0, 1.0
    return y, late


def test_swap_improve_rows_in_lockstep_equal_one_row_alone():
    """Several labellings swapped in lockstep end where each ends alone (the plain loop above), are
    swap-optimal (brute force over every swap), and keep e'y. Few candidates force the full pair
    check (on the indefinite K it finds swaps the candidates missed); the rows stop after different
    numbers of swaps."""
    from mkclust.algorithms._labels import _swap_improve
    rng = np.random.default_rng(11)
    # the last two cases: few +1 labels, so the two sides' candidate lists differ in width (as on
    # ODMC's echocardiogram, n = 62, with its imbalanced balance bound)
    for n, cand, swaps, psd, share in ((40, 3, 200, True, 0.5), (40, 1, 200, False, 0.5), (61, 32, 200, True, 0.5),
                                       (50, 2, 4, True, 0.5), (61, 32, 200, True, 0.2), (40, 8, 200, True, 0.15)):
        F = rng.normal(size=(n, 4 if psd else n))
        K = F @ F.T if psd else (F + F.T) / 2
        D = rng.uniform(-1, 1, size=(5, n))
        Y0 = np.where(rng.random((5, n)) < share, 1.0, -1.0)
        Y = _swap_improve(K, D, Y0.copy(), max_swaps=swaps, n_candidates=cand)
        late = 0
        for r in range(5):
            ref, k = swap_reference(K, D[r], Y0[r], swaps, cand)
            np.testing.assert_array_equal(Y[r], ref)
            late += k
            assert Y[r].sum() == Y0[r].sum()
            if swaps < 200:
                continue
            M = K * np.outer(D[r], D[r])
            best = Y[r] @ M @ Y[r]
            for i, j in itertools.product(np.flatnonzero(Y[r] > 0), np.flatnonzero(Y[r] < 0)):
                z = Y[r].copy()
                z[i], z[j] = -1, 1
                assert z @ M @ z <= best + 1e-9
        if swaps == 200:
            assert len({int((Y[r] != Y0[r]).sum()) for r in range(5)}) > 1
        if not psd:
            assert late > 0


def grid_estimators():
    ests = [ODMC(lam=lam, nu=nu, theta=th, max_iter=600, random_state=seed)
            for lam, nu, th in [(1, 0.2, 0.2), (10, 0.8, 0.4), (1000, 0.4, 0.8)] for seed in (0, 1)]
    ests.append(ODMC(lam=10, nu=0.4, theta=0.2, max_iter=300, random_state=2))   # another schedule
    return ests


def test_fit_batch_equals_separate_fits():
    """A batch steps every fit in lockstep (one GEMM per step) but each keeps its own random stream,
    label set and stop: the same fits as one at a time, up to the GEMM's rounding."""
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(size=(45, 3)), rng.normal(size=(35, 3)) + [2.5, 0, 0]])
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4.0)
    batch, alone = grid_estimators(), [e.fit(K) for e in grid_estimators()]
    assert ODMC.fit_batch(batch, K) is not None
    for b, a in zip(batch, alone):
        assert (b.labels_ == a.labels_).all()
        assert b.n_iter_ == a.n_iter_ and b.converged_ == a.converged_
        assert b.labels_pool_.shape == a.labels_pool_.shape and (b.labels_pool_ == a.labels_pool_).all()
        assert b.objective_ == pytest.approx(a.objective_, rel=1e-9, abs=1e-12)
        assert b.mu_ == pytest.approx(a.mu_, rel=1e-7, abs=1e-12)
        assert [s for s, _ in b.gap_trace_] == [s for s, _ in a.gap_trace_]
    # the 600-step fits ran as one batch of 6 and the 300-step fit alone
    assert [e.batch_size_ for e in batch] == [6] * 6 + [1]
    assert batch[0].seconds_per_iteration_ is None and batch[0].batch_seconds_per_iteration_ > 0
    assert batch[-1].seconds_per_iteration_ > 0 and alone[0].seconds_per_iteration_ > 0
    # the runs differ: the batch does not make them one fit
    assert len({e.objective_ for e in batch}) == len(batch)
    with pytest.raises(ValueError, match="two classes"):
        ODMC.fit_batch([ODMC(), ODMC(n_clusters=3)], K)


def test_low_rank_factor_is_exact_on_a_linear_kernel_and_declines_full_rank():
    from mkclust.algorithms._odmc_solver import low_rank_factor
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 7))
    K = center_kernel(X @ X.T)
    F = low_rank_factor(K, 300 // 8)
    assert F is not None and F.shape == (300, 7)
    np.testing.assert_allclose(F @ F.T, K, atol=1e-12 * np.abs(K).max())
    G = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 7.0)   # full rank: no factor within n / 8
    assert low_rank_factor(G, 300 // 8) is None


def _odmc_batch(K, **params):
    ests = [ODMC(lam=lam, nu=nu, theta=th, max_iter=400, random_state=seed, **params)
            for lam, nu, th in [(1, 0.2, 0.2), (10, 0.8, 0.4), (100, 0.4, 0.8)] for seed in (0, 1)]
    return ODMC.fit_batch(ests, K)


def test_products_through_a_low_rank_factor_or_in_float32_give_the_same_fits():
    """The linear kernel's products through its factor (low_rank="auto", 4 n r flops a row) and the
    step products in float32 (products="float32") against the dense float64 products: the same
    labels, label sets and stops on a fixed batch; objectives to the rounding of each."""
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(size=(220, 5)), rng.normal(size=(180, 5)) + [2.0, 0, 0, 0, 0]])
    lin = X @ X.T / 5
    gauss = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 10.0)
    for K, params, rel in ((lin, {"low_rank": "auto"}, 1e-9), (gauss, {"products": "float32"}, 1e-4)):
        ref, other = _odmc_batch(K, low_rank="never"), _odmc_batch(K, **params)
        for a, b in zip(ref, other):
            assert (a.labels_ == b.labels_).all() and a.n_iter_ == b.n_iter_
            assert (a.labels_pool_ == b.labels_pool_).all()
            assert b.objective_ == pytest.approx(a.objective_, rel=rel, abs=1e-9)
        rank = {e.product_rank_ for e in other}
        assert rank == ({5} if K is lin else {400})           # the factor was used on the linear kernel only
        # fewer products than two a step: where i = j the step's two products are one
        assert all(e.n_step_products_ < 2 * e.n_iter_ for e in other)


def test_gap_checks_in_blocks_equal_one_product(monkeypatch):
    """The duality-gap checks of a batch are one product over every chain's labels, in blocks of
    GAP_ROWS rows: blocks of a few rows give the same fits."""
    import mkclust.algorithms._odmc_solver as odmc_mod   # the lockstep solver reads GAP_ROWS
    rng = np.random.default_rng(6)
    X = np.vstack([rng.normal(size=(40, 3)), rng.normal(size=(30, 3)) + [2.5, 0, 0]])
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4.0)
    whole = _odmc_batch(K)
    monkeypatch.setattr(odmc_mod, "GAP_ROWS", 3)
    blocks = _odmc_batch(K)
    for a, b in zip(whole, blocks):
        assert (a.labels_ == b.labels_).all() and a.n_iter_ == b.n_iter_
        assert b.objective_ == pytest.approx(a.objective_, rel=1e-12, abs=1e-12)
        assert [g for _, g in b.gap_trace_] == pytest.approx([g for _, g in a.gap_trace_], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n", [60, 450])   # the dense eigensolver (n <= 400) and the lockstep Lanczos
def test_labels_of_samples_with_zero_weight_do_not_follow_rounding(monkeypatch, n):
    """exact_ties: where d_i = 0 (a non-support vector) the leading eigenvector of diag(d) K diag(d) is 0
    in exact arithmetic. Rounding noise of 1e-16 there and a flipped sign (another LAPACK or BLAS build,
    docs/running.md) leave the balanced labels unchanged, though the balance puts the threshold among
    those samples; without the rule the same noise moves them."""
    import mkclust.algorithms._labels as LB

    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, 3))
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4.0)
    d = rng.normal(size=n)
    d[rng.choice(n, n // 4, replace=False)] = 0.0
    base = _most_violated(K, d, 0.0)
    assert abs(base.sum()) <= 1 and (base[d == 0] > 0).any() and (base[d == 0] < 0).any()   # threshold among them
    orig = LB.leading_eigvecs_rows

    def rounded(K, D, **kw):
        v = orig(K, D, **kw)
        return -(v + rng.normal(scale=1e-16, size=v.shape) * (D == 0))

    monkeypatch.setattr(LB, "leading_eigvecs_rows", rounded)
    for _ in range(3):
        np.testing.assert_array_equal(_most_violated(K, d, 0.0), base)
    monkeypatch.setattr(LB, "exact_ties", lambda vecs, D: vecs)      # the rule off: the noise decides
    assert any((_most_violated(K, d, 0.0) != base).any() for _ in range(3))
