"""MKC (Zhao, Kwok, Zhang 2009) and IterSVR: optimality at termination, solvers, special cases."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.decomposition import KernelPCA

from mkclust import metrics
from mkclust.algorithms import MKC, IterSVR, get_estimator
from mkclust.algorithms import _mkc_socp as mkc_mod   # the SOCP, cuts and balanced labellings
from mkclust.algorithms._labels import balanced_signs
from mkclust.datasets import load
from mkclust.kernels import build_bank, center_kernel, feature_map


def blobs(k=2, n=40, gap=6.0, seed=0):
    rng = np.random.default_rng(seed)
    centres = [np.array([gap * j, (j % 2) * gap]) for j in range(k)]
    X = np.vstack([rng.normal(size=(n, 2)) + c for c in centres])
    return X, np.repeat(np.arange(k), n)


@pytest.fixture(scope="module")
def two():
    X, y = blobs(2)
    K = build_bank("mkc3", X).gram()
    return K, y, MKC(n_clusters=2, random_state=0, epsilon=0.01).fit(K)


def test_two_class_termination_conditions(two):
    K, y, est = two
    n = y.size
    f = est.decision_
    hinge = np.maximum(0.0, 1 - np.abs(f)).mean()  # Theorem 2.1: the optimal xi for (v, b)
    # (2.16) recomputed: no constraint of (2.8) violated by more than epsilon
    c = np.abs(f) < 1
    assert (c * (1 - np.abs(f))).sum() / n <= est.xi_ + est.epsilon + 1e-7
    # xi equals the hinge average within epsilon plus solver tolerance, and never exceeds it
    assert est.xi_ <= hinge + 1e-6 and hinge - est.xi_ <= est.epsilon + 1e-6
    beta = est.kernel_weights_
    assert (beta >= 0).all() and (beta**2).sum() <= 1 + 1e-7
    assert abs(f.sum()) <= 0.03 * n + 1e-5  # class balance
    assert metrics.acc(y, est.labels_) == 1.0
    assert est.rounds_[-1]["n_constraints"] == est.n_iter_ and est.avg_cccp_iterations_ >= 1
    assert all(r["solver_seconds"] > 0 for r in est.rounds_)


def test_multiclass_termination_and_blobs():
    X, y = blobs(3, n=30, gap=7.0)
    K = build_bank("mkc3", X).gram()
    est = MKC(n_clusters=3, random_state=0, epsilon=0.01).fit(K)
    F = est.decision_
    n = y.size
    top2 = np.sort(F, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    assert np.maximum(0, 1 - margin).sum() / n <= est.xi_ + est.epsilon + 1e-7  # Theorem 4.3, recomputed
    u = F.sum(axis=0)
    assert u.max() - u.min() <= 0.03 * n + 1e-5
    beta = est.kernel_weights_
    assert (beta >= 0).all() and (beta**2).sum() <= 1 + 1e-7
    np.testing.assert_array_equal(est.labels_, np.argmax(F, axis=1))  # balanced blobs: argmax obeys the bounds
    assert metrics.acc(y, est.labels_) == 1.0


def _multiclass_slacks(F, R):
    """size - LHS of each constraint of (4.34) in the working set R (runner-ups, -1 inactive), at the
    scores F and their own labels argmax F (the delta term counts r_i = y_i as margin 1)."""
    n = F.shape[0]
    y, rows = np.argmax(F, axis=1), np.arange(n)
    out = []
    for Rj in R:
        act = Rj >= 0
        lhs = (F[rows[act], y[act]] - F[rows[act], Rj[act]]).sum() + np.count_nonzero(Rj[act] == y[act])
        out.append((act.sum() - lhs) / n)
    return np.array(out)


def test_multiclass_working_set_holds_at_the_final_labels():
    # CCCP runs to a fixed point (labels equal the linearisation's), so every constraint of Omega
    # holds at the final scores with their own labels: no slack above xi (solver tolerance only)
    ds = load("digits1279")
    K = build_bank("mkc3", ds.X).gram()
    est = MKC(n_clusters=4, rank=20, random_state=0).fit(K)
    assert est.n_iter_ < est.max_rounds and est.working_set_.shape == (est.n_iter_, ds.y.size)
    slack = _multiclass_slacks(est.decision_, est.working_set_)
    assert slack.max() <= est.xi_ + 1e-5
    assert est.rounds_[-1]["violation"] <= est.xi_ + est.epsilon


def test_two_class_working_set_holds_at_the_final_scores(two):
    K, y, est = two
    f = est.decision_
    n = y.size
    # (2.8) for each c in Omega: (1/n) sum c_i |f_i| >= (1/n) sum c_i - xi
    slack = (est.working_set_.sum(axis=1) - est.working_set_ @ np.abs(f)) / n
    assert slack.max() <= est.xi_ + 1e-5


def test_multiclass_on_four_digit_classes():
    ds = load("digits0689")
    K = build_bank("mkc3", ds.X).gram()
    est = MKC(n_clusters=4, rank=20, random_state=0).fit(K)
    assert metrics.majority_acc(ds.y, est.labels_) >= 0.9  # the paper: 97.77 %
    assert len(set(est.labels_)) == 4


def test_socp_is_dpp_and_clarabel_agrees_with_ecos():
    X, y = blobs(2, n=15)
    K = build_bank("mkc3", X).gram()
    feats = [feature_map(Kk, rank=5) for Kk in K]
    Phi = np.hstack(feats)
    n = Phi.shape[0]
    z = np.where(y == 0, 1.0, -1.0)
    Cm = np.vstack([np.ones(n), (np.arange(n) % 2).astype(float)])
    sols = {}
    for solver in (cp.CLARABEL, cp.ECOS):
        prob, (A, s, r), (v, b, beta, xi) = mkc_mod.binary_socp(Phi, [5, 5, 5], 2, 10.0, 0.5 * n)
        assert prob.is_dcp(dpp=True)
        A.value, s.value, r.value = (Cm * z) @ Phi / n, Cm @ z / n, Cm.sum(axis=1) / n
        prob.solve(solver=solver)
        sols[solver] = (prob.value, v.value.copy(), beta.value.copy())
    (o1, v1, b1), (o2, v2, b2) = sols.values()
    assert o1 == pytest.approx(o2, abs=1e-5)
    np.testing.assert_allclose(v1, v2, atol=1e-5)


def test_socp_built_once_per_capacity_equals_one_build_per_round(monkeypatch):
    """The working-set SOCP is built for a capacity that doubles (zero rows beyond Omega read 0 <=
    xi), O(log rounds) builds a fit; the fit equals the one that builds each round's SOCP with
    exactly |Omega| rows, to the solver's tolerance, two clusters and four."""
    import mkclust.algorithms._mkc_rounds as mkc_est   # the rounds build and solve the SOCPs
    assert [mkc_mod.capacity(r, c, 100) for r, c in ((1, 0), (8, 8), (9, 8), (17, 16), (90, 64), (3, 0))] == \
        [8, 8, 16, 32, 100, 8]
    assert mkc_mod.capacity(5, 0, 4) == 5
    X2, _ = blobs(2, n=60, gap=3.0, seed=1)
    X4, _ = blobs(4, n=30, gap=4.0, seed=2)
    cases = [(build_bank("mkc3", X2).gram(), 2), (build_bank("mkc3", X4).gram(), 4)]
    builds = {"binary": 0, "multi": 0}
    for name, attr in (("binary", "binary_socp"), ("multi", "multiclass_socp")):
        real = getattr(mkc_est, attr)

        def counted(*a, _real=real, _name=name, **k):
            builds[_name] += 1
            return _real(*a, **k)
        monkeypatch.setattr(mkc_est, attr, counted)
    fits = [MKC(n_clusters=m, C=30.0, random_state=0).fit(K) for K, m in cases]
    rounds = [len(f.rounds_) for f in fits]
    assert builds["binary"] <= 1 + max(0, int(np.ceil(np.log2(rounds[0] / 8))))
    assert builds["multi"] <= 1 + max(0, int(np.ceil(np.log2(rounds[1] / 8))))
    monkeypatch.setattr(mkc_est, "capacity", lambda rounds, current, max_rounds: rounds)   # one build a round
    for (K, m), f in zip(cases, fits):
        g = MKC(n_clusters=m, C=30.0, random_state=0).fit(K)
        assert (g.labels_ == f.labels_).all() and len(g.rounds_) == len(f.rounds_)
        assert g.objective_ == pytest.approx(f.objective_, rel=1e-4, abs=1e-6)


def test_socp_solved_at_parameter_values_equals_the_dpp_compiled_problem():
    """Where cvxpy's DPP tensor would be large (gigabytes at the benchmark's 12 kernels), _solve
    canonicalises the working-set SOCPs at their Parameters' values instead: the same problem, so the
    same solution as the DPP-compiled one, two clusters and four, with zero rows beyond the working set."""
    assert mkc_mod.compiles_once(100, 50) and not mkc_mod.compiles_once(8, 600)   # one kernel; 12 of rank 50
    rng = np.random.default_rng(3)
    n, sizes = 50, [4, 3, 5]
    Phi = rng.standard_normal((n, sum(sizes)))
    z, cuts = np.sign(rng.standard_normal(n)), (rng.random((6, n)) < 0.6).astype(float)
    y, R = rng.integers(0, 4, n), np.where(rng.random((6, n)) < 0.6, rng.integers(0, 4, (6, n)), -1)
    sols = []
    for dpp in (False, True):
        prob, (A, s, r), (v, b, beta, xi) = mkc_mod.binary_socp(Phi, sizes, 8, 3.0, 0.3 * n)
        A.value, s.value, r.value = np.zeros((8, Phi.shape[1])), np.zeros(8), np.zeros(8)
        A.value[:6], s.value[:6], r.value[:6] = (cuts * z) @ Phi / n, cuts @ z / n, cuts.sum(axis=1) / n
        mprob, (MA, c, size), (V, mbeta, mxi) = mkc_mod.multiclass_socp(Phi, sizes, 4, 8, 3.0, 0.3 * n)
        cut_rows = [mkc_mod.multiclass_cut(Phi, y, Rj, 4) for Rj in R]
        MA.value = np.vstack([np.array([a for a, _ in cut_rows]), np.zeros((2, Phi.shape[1] * 4))])
        c.value = np.append([x for _, x in cut_rows], [0.0, 0.0])
        size.value = np.append((R >= 0).sum(axis=1) / n, [0.0, 0.0])
        for p in (prob, mprob):
            mkc_mod._solve(p, "test", dpp=dpp)
        assert prob.is_dcp(dpp=True) and mprob.is_dcp(dpp=True)
        sols.append((prob.value, np.append(v.value, b.value), mprob.value, V.value.ravel(), xi.value))
    (o1, x1, m1, V1, xi1), (o2, x2, m2, V2, xi2) = sols
    assert xi1 > 1e-3                             # the cuts bind: the comparison is not of a trivial solution
    assert o1 == pytest.approx(o2, rel=1e-9) and m1 == pytest.approx(m2, rel=1e-9)
    np.testing.assert_allclose(x1, x2, atol=1e-8)
    np.testing.assert_allclose(V1, V2, atol=1e-8)


def test_solver_failure_falls_back_once_then_names_round_and_status(monkeypatch, two):
    K, y, _ = two
    real = cp.Problem.solve
    used = []

    def clarabel_fails(self, *a, solver=None, **kw):
        used.append(solver)
        if solver == cp.CLARABEL:
            raise cp.error.SolverError("simulated failure")
        return real(self, *a, solver=solver, **kw)

    monkeypatch.setattr(cp.Problem, "solve", clarabel_fails)
    est = MKC(n_clusters=2, random_state=0).fit(K)
    assert metrics.acc(y, est.labels_) == 1.0 and cp.ECOS in used
    assert {r["solver"] for r in est.rounds_} == {cp.ECOS}

    def both_fail(self, *a, solver=None, **kw):
        raise cp.error.SolverError(f"{solver} broken")

    monkeypatch.setattr(cp.Problem, "solve", both_fail)
    with pytest.raises(mkc_mod.MKCSolverError, match=r"round 1, CCCP step 1.*CLARABEL.*ECOS"):
        MKC(n_clusters=2, random_state=0).fit(K)


def test_predict_matches_the_fit_and_generalises(two):
    K, y, est = two
    np.testing.assert_array_equal(est.predict(K), est.labels_)  # cross-kernel of the training points
    S = np.arange(0, y.size, 2)
    sub = MKC(n_clusters=2, random_state=0).fit(K[:, S][:, :, S])
    assert metrics.acc(y, sub.predict(K[:, :, S])) == 1.0  # label every point from a half-size model
    feats = [feature_map(Kk, rank=10) for Kk in K]
    onf = MKC(n_clusters=2, random_state=0).fit(feats)
    np.testing.assert_array_equal(onf.predict(feats), onf.labels_)
    with pytest.raises(ValueError, match="feature maps"):
        onf.predict(K)


def test_wide_features_reduced_to_rank_as_the_gram_path(two):
    """Feature matrices wider than ``rank`` (Nystroem features) are reduced to their top-rank
    principal directions of the centred columns: the fit equals the fit on the kernel PCA of F F',
    feature_map(H F F' H, rank) (the same eigenpairs), and predict projects new rows the same way."""
    K, y, _ = two
    full = [feature_map(Kk, rank=30) for Kk in K]  # ranks 2, 6 and 30 on two-dimensional blobs
    rot = [np.linalg.qr(np.random.default_rng(k).normal(size=(F.shape[1],) * 2))[0] for k, F in enumerate(full)]
    wide = [F @ R for F, R in zip(full, rot)]  # a rotated basis: only F F' is the same
    a = MKC(n_clusters=2, rank=8, random_state=0).fit(wide)
    b = MKC(n_clusters=2, rank=8, random_state=0).fit([feature_map(center_kernel(F @ F.T), rank=8) for F in wide])
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.kernel_weights_, b.kernel_weights_, atol=1e-5)
    assert a.v_.shape == (2 + 6 + 8,)
    np.testing.assert_array_equal(a.predict(wide), a.labels_)
    S = np.arange(0, y.size, 2)
    sub = MKC(n_clusters=2, rank=8, random_state=0).fit([F[S] for F in wide])
    assert metrics.acc(y, sub.predict(wide)) == 1.0
    with pytest.raises(ValueError, match="feature maps for a model of 3"):
        a.predict(wide[:2])


def test_feature_map_is_kernel_pca_of_the_centred_kernel():
    """MKC's features from a Gram bank are kernel PCA's (scikit-learn's KernelPCA on the precomputed
    kernel, which centres it): equal up to each component's sign, for the training points and for
    new points through the cross-kernel; without ``center`` they are the uncentred eigenpairs."""
    rng = np.random.default_rng(0)
    X, Xn = rng.normal(size=(60, 4)) + 3.0, rng.normal(size=(7, 4)) + 3.0   # far from the origin
    K, Kn = (X @ X.T + 1) ** 2, (Xn @ X.T + 1) ** 2
    est = MKC(n_clusters=2, rank=5, random_state=0).fit(K)
    kpca = KernelPCA(n_components=5, kernel="precomputed").fit(K)
    ref, ref_new = kpca.transform(K), kpca.transform(Kn)
    sign = np.sign((est._Phi * ref).sum(axis=0))
    np.testing.assert_allclose(est._Phi, ref * sign, atol=1e-9 * np.abs(ref).max())
    new = Kn @ est._proj[0] - est.feature_mean_
    np.testing.assert_allclose(new, ref_new * sign, atol=1e-8 * np.abs(ref).max())
    raw = MKC(n_clusters=2, rank=5, center=False, random_state=0).fit(K)
    np.testing.assert_allclose(np.abs(raw._Phi), np.abs(feature_map(K, rank=5)), atol=1e-9 * np.abs(ref).max())


def test_single_kernel_mmc_and_digits():
    ds = load("digits1v7")
    K = build_bank("mkc3", ds.X).gram()
    for k in range(3):  # the CPMMC baseline: MKC with M = 1
        est = MKC(n_clusters=2, rank=20, random_state=0).fit(K[k:k + 1])
        assert est.kernel_weights_.shape == (1,) and metrics.majority_acc(ds.y, est.labels_) >= 0.9
    assert get_estimator("mkc", n_clusters=2, C=10).C == 10


def test_itersvr_balance_and_blobs():
    X, y = blobs(2)
    K = build_bank("gauss_grid", X, widths=[0.5], reference="max").gram()[0]
    est = IterSVR(random_state=0).fit(K)
    assert metrics.acc(y, est.labels_) == 1.0
    signs = np.where(est.labels_ == 0, 1, -1)
    assert abs(signs.sum()) <= 0.03 * y.size + 1e-9
    with pytest.raises(ValueError, match="two classes"):
        IterSVR(n_clusters=3).fit(K)


def test_balanced_signs_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(50):
        f = rng.normal(size=11) + rng.normal()
        l = float(rng.integers(0, 6))
        y = balanced_signs(f, l)
        assert abs(y.sum()) <= max(l, f.size % 2) + 1e-12
        # among balanced labellings that threshold f, it agrees with sgn f on the most samples
        best = max((np.where(f >= t, 1.0, -1.0) for t in np.r_[f, np.inf]),
                   key=lambda c: (abs(c.sum()) <= max(l, f.size % 2), (c == np.where(f >= 0, 1, -1)).sum()))
        assert (y == np.where(f >= 0, 1, -1)).sum() == (best == np.where(f >= 0, 1, -1)).sum()


def test_default_C_per_problem_and_bad_C():
    assert MKC(n_clusters=2)._C() == 30.0 and MKC(n_clusters=4)._C() == 10.0 and MKC(C=2.5)._C() == 2.5
    X, _ = blobs(2, n=10)
    with pytest.raises(ValueError, match=r"'C' parameter of MKC must be a float in the range \(0.0, inf\)"):
        MKC(C=0.0).fit(build_bank("mkc3", X).gram())


# ------------------------------------------------- the label balance, the fixed-label objective, scaling


def test_balanced_labels_against_brute_force():
    import itertools

    rng = np.random.default_rng(0)
    for _ in range(60):
        n, m = int(rng.integers(4, 8)), int(rng.integers(2, 4))
        F = rng.normal(size=(n, m))
        F[:, 0] += 2.0  # argmax alone would put most samples in cluster 0
        lo, hi = n // m - 1, -(-n // m)
        best = max(F[np.arange(n), list(y)].sum() for y in itertools.product(range(m), repeat=n)
                   if all(lo <= y.count(p) <= hi for p in range(m)))
        y = mkc_mod.balanced_labels(F, lo, hi)
        sizes = np.bincount(y, minlength=m)
        assert sizes.min() >= lo and sizes.max() <= hi
        assert F[np.arange(n), y].sum() == pytest.approx(best, abs=1e-9)
    # larger: the candidate-set LP certified by its prices equals the LP over every row
    for shift in (0.1, 1.0):
        F = rng.normal(size=(6000, 4))
        F[:, 0] += shift
        y = mkc_mod.balanced_labels(F, 1400, 1600)
        full, _ = mkc_mod._transport(F, np.full(4, 1400), np.full(4, 1600))
        sizes = np.bincount(y, minlength=4)
        assert sizes.min() >= 1400 and sizes.max() <= 1600
        assert F[np.arange(6000), y].sum() == pytest.approx(F[np.arange(6000), full].sum(), abs=1e-8)
    assert mkc_mod.count_bounds(100, 4, 3.0) == (23, 27)
    assert mkc_mod.count_bounds(10, 2, 0.0) == (5, 5)  # m = 2: the count form of (2.2), |n_+ - n_-| <= l


def test_four_classes_every_cluster_holds_the_balance_minimum():
    # digits 0/6/8/9 on z-scored features: with the balance on the summed scores only (4.34), which
    # centred features satisfy for any V, a cluster can end empty; the label balance bounds its size
    ds = load("digits0689")
    K = build_bank("mkc3", ds.X, preprocess="zscore").gram()
    lo, _ = mkc_mod.count_bounds(ds.n, 4, 0.03 * ds.n)
    for seed in range(3):
        est = MKC(n_clusters=4, rank=20, random_state=seed).fit(K)
        assert est.cluster_sizes_.min() >= lo > 0, (seed, est.cluster_sizes_)
        np.testing.assert_array_equal(est.cluster_sizes_, np.bincount(est.labels_, minlength=4))
    # the paper-literal balance (scores) is vacuous under centred features: every V satisfies it
    est = MKC(n_clusters=4, rank=20, balance_on="scores", random_state=0).fit(K)
    Phi = est._Phi
    np.testing.assert_allclose(Phi.sum(axis=0), 0, atol=1e-8)
    with pytest.raises(ValueError, match="balance_on"):
        MKC(n_clusters=4, balance_on="counts").fit(K)


def test_fixed_label_objective_known_values():
    # one feature, x = +-2, one kernel: the SVM at the sign labels has v = 1/2, objective 1/(2 a^2) =
    # 0.125 (C = 10 >= 1/a^2); labels that split each group in half cannot beat v = 0: objective C
    n = 40
    x = np.repeat([2.0, -2.0], n // 2)[:, None]
    y_true = (x[:, 0] < 0).astype(int)
    assert mkc_mod.fixed_label_objective(x, [1], y_true, C=10.0, l=1.2) == pytest.approx(0.125, abs=1e-5)
    y_bad = np.tile([0, 1], n // 2)
    assert mkc_mod.fixed_label_objective(x, [1], y_bad, C=10.0, l=1.2) == pytest.approx(10.0, abs=1e-4)


def test_fixed_label_objective_multiclass_matches_the_n_slack_socp():
    X, y = blobs(3, n=12, gap=3.0, seed=1)
    Phi = np.hstack([X, X**2 / 4])
    Phi -= Phi.mean(axis=0)
    sizes, C, l = [2, 2], 10.0, 1.0
    rng = np.random.default_rng(0)
    for labels in (y, rng.permutation(y)):
        got = mkc_mod.fixed_label_objective(Phi, sizes, labels, C, l, tol=1e-7)
        # independent: (4.30) with n slacks as one SOCP
        n, m = len(labels), 3
        V = cp.Variable((4, m))
        beta, t, xi = cp.Variable(2, nonneg=True), cp.Variable(2), cp.Variable(n, nonneg=True)
        F = Phi @ V
        cons = [cp.norm(beta, 2) <= 1]
        for i in range(n):
            for r in range(m):
                if r != labels[i]:
                    cons.append(F[i, labels[i]] - F[i, r] >= 1 - xi[i])
        u = cp.sum(F, axis=0)
        cons.append(cp.max(u) - cp.min(u) <= l)
        for k, (a, b) in enumerate([(0, 2), (2, 4)]):
            cons.append(cp.SOC(t[k] + beta[k], cp.hstack([2 * cp.vec(V[a:b, :], order="F"), t[k] - beta[k]])))
        ref = cp.Problem(cp.Minimize(0.5 * cp.sum(t) + C * cp.sum(xi) / n), cons)
        ref.solve(solver=cp.CLARABEL)
        assert got == pytest.approx(ref.value, rel=1e-4, abs=1e-4)


def test_objective_at_the_true_labels_is_recorded_and_lower_on_separated_blobs(two):
    K, y, est = two
    own, true = est.objective_at(est.labels_), est.objective_at(y)
    assert own == pytest.approx(true, rel=1e-6)  # acc 1.0: the same partition
    assert est.objective_at(np.roll(y, 7)) > own
    assert est.feature_seconds_ > 0 and est.solve_seconds_ > 0


def test_mkc_bank_with_several_widths():
    X, _ = blobs(2, n=20)
    bank = build_bank("mkc3", X, preprocess="zscore", widths=[1.0, 0.25])
    assert bank.n_kernels == 4 and bank.names[:2] == ["linear", "poly(a=1,b=2)"]
    from mkclust.kernels import bank_size
    assert bank_size("mkc3", widths=[1.0, 0.25]) == 4 and bank_size("mkc3") == 3
    one = build_bank("mkc3", X, preprocess="zscore", widths=[0.25])
    np.testing.assert_allclose(one.K[2], bank.K[3])
    default = build_bank("mkc3", X, preprocess="zscore")
    np.testing.assert_allclose(default.K[2], bank.K[2])  # w = 1: the default K3
    with pytest.raises(ValueError, match="positive"):
        build_bank("mkc3", X, widths=[0.0])


def test_kernel_pca_by_lanczos_equals_the_dense_eigendecomposition():
    import scipy.linalg

    X, _ = blobs(2, n=150)
    K = build_bank("mkc3", X).K[2]
    F = feature_map(K, rank=20)  # n = 300 >= 5 x 20: the Lanczos path
    lam = scipy.linalg.eigh(K, eigvals_only=True)[::-1][:20]
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(F.T @ F))[::-1], lam, rtol=1e-8, atol=1e-10)
    F2 = feature_map(K, rank=20)
    np.testing.assert_array_equal(F, F2)  # deterministic
    # a linear kernel of 2 features has rank 2: the Lanczos run asks for those 2 only
    Klin = build_bank("mkc3", X).K[0]
    Flin = feature_map(Klin, rank=20)
    assert Flin.shape == (300, 2)
    np.testing.assert_allclose(Flin @ Flin.T, Klin, atol=1e-9 * np.abs(Klin).max())


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("kernel", ["zero", "ones"])
def test_a_kernel_with_nothing_to_separate_is_a_clear_error(kernel, m):
    """An all-zero kernel used to end in scikit-learn's "Found array with 0 feature(s) ... KMeans";
    an all-ones kernel with two clusters put every sample in one cluster, outside MKC's own balance."""
    K = np.zeros((30, 30)) if kernel == "zero" else np.ones((30, 30))
    with pytest.raises(ValueError, match="MKC: the kernel\\(s\\) hold nothing that separates the samples"):
        MKC(n_clusters=m, random_state=0).fit(K)


def test_a_kernel_scaled_to_1e150_gives_a_balanced_labelling_not_a_solver_status():
    """Three clusters on a kernel times 1e150 used to raise "HiGHS returned status 4" in the balanced
    labelling; the labelling of scores F is that of any positive multiple of F, so it is computed on
    F scaled by a power of 2 and equals the labelling of F itself. (The fit on 1e150 K is not the fit
    on K: measured 2026-12-07, 35 s and mixed clusters against 0.3 s and the three blobs; only the
    labelling step is scale-free.)"""
    X, _ = blobs(3, n=10, gap=5.0, seed=0)
    K = build_bank("mkc3", X).K[2]
    big = MKC(n_clusters=3, random_state=0).fit(K * 1e150)
    sizes = np.bincount(big.labels_, minlength=3)
    lo, hi = mkc_mod.count_bounds(30, 3, 0.03 * 30)
    assert lo <= sizes.min() and sizes.max() <= hi
    F = np.random.default_rng(0).normal(size=(40, 3))
    for scale in (1e-150, 1.0, 1e150):
        np.testing.assert_array_equal(mkc_mod.balanced_labels(F * scale, 12, 14), mkc_mod.balanced_labels(F, 12, 14))
