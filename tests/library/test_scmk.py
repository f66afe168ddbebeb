"""SCSK and SCMK (Kang, Peng, Cheng 2017): the batched Z-step against cvxpy column by column, the
simplex projection, monotone objectives, P orthonormal, the weights of Eq. 22, Theorem 2, labels."""

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from mkclust import metrics
from mkclust.algorithms import SCMK, SCSK, KernelKMeans, get_estimator
from mkclust.algorithms import _zcolumns, _zstep
from mkclust.algorithms._simplex import project_rows_to_simplex
from mkclust.algorithms._zstep import z_step
from mkclust.algorithms.scmk import (double_centre, graph_components, laplacian, p_step, pairwise_sq,
                                     reconstruction_errors, scmk_weights)
from mkclust.datasets import load
from mkclust.kernels import build_bank, gaussian_kernel


def three_blobs(seed=0, n=60, std=0.5):
    X, y = make_blobs(n, centers=3, cluster_std=std, random_state=seed)
    return gaussian_kernel(X, 3.0), y


@pytest.fixture(scope="module")
def digits17():
    ds = load("digits1v7")
    rng = np.random.default_rng(0)
    idx = np.sort(rng.choice(ds.n, 120, replace=False))
    return build_bank("rmkkm12", ds.X[idx], preprocess="unit").gram(), ds.y[idx]


def non_increasing(trace, rel=1e-9):
    t = np.asarray(trace)
    return bool(np.all(np.diff(t) <= rel * np.abs(t[:-1])))


# --- the simplex projection ------------------------------------------------------------------


def test_projection_satisfies_the_kkt_conditions_and_matches_cvxpy():
    rng = np.random.default_rng(0)
    V = np.vstack([rng.normal(size=(20, 15)), 5 * rng.normal(size=(5, 15)), np.full((1, 15), 0.3),
                   np.eye(15)[:3] * 7])
    P = project_rows_to_simplex(V)
    assert (P >= 0).all() and np.allclose(P.sum(axis=1), 1.0, atol=1e-12) and (P <= 1 + 1e-12).all()
    for v, p in zip(V, P):
        # KKT of min ||p - v||^2 on the simplex: v - p = theta on the support, <= theta off it
        theta = (v - p)[p > 0]
        assert np.ptp(theta) < 1e-12
        assert ((v - p)[p == 0] <= theta[0] + 1e-12).all()
    z = cp.Variable(15)
    for i in (0, 21, 25):
        cp.Problem(cp.Minimize(cp.sum_squares(z - V[i])), [z >= 0, cp.sum(z) == 1]).solve(
            solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        assert np.abs(z.value - P[i]).max() < 1e-6


# --- the Z-step (Eq. 11, all columns together) against cvxpy, column by column ----------------


def cvxpy_columns(K, B, alpha):
    """Each column of Eq. 11 as its own QP (Clarabel, tight tolerances): Z and per-column objectives
    (K_ii included)."""
    n = K.shape[0]
    lam, U = np.linalg.eigh(K)
    R = (U * np.sqrt(np.clip(lam, 0, None))).T  # K = R'R
    Z, obj = np.zeros((n, n)), np.zeros(n)
    z = cp.Variable(n)
    q = cp.Parameter(n)
    prob = cp.Problem(cp.Minimize(alpha * cp.sum_squares(z) + cp.sum_squares(R @ z) + q @ z), [z >= 0, cp.sum(z) == 1])
    for i in range(n):
        q.value = B[:, i] - 2 * K[:, i]
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-13, tol_gap_rel=1e-13, tol_feas=1e-13)
        Z[:, i], obj[i] = z.value, prob.value + K[i, i]
    return Z, obj


def column_objectives(K, B, alpha, Z):
    return alpha * (Z * Z).sum(0) + (Z * (K @ Z)).sum(0) - 2 * (K * Z).sum(0) + (B * Z).sum(0) + np.diag(K)


@pytest.mark.parametrize("columns", [True, False], ids=["by-columns", "whole-matrix"])
@pytest.mark.parametrize("case", ["blobs", "digits"])
def test_z_step_matches_cvxpy_column_by_column(case, columns, digits17):
    rng = np.random.default_rng(1)
    if case == "blobs":
        K, _ = three_blobs(n=45)
        alpha, beta = 0.05, 0.5
    else:
        K = digits17[0][:, :60, :60].mean(axis=0)
        alpha, beta = 0.01, 0.05
    n = K.shape[0]
    P, _ = p_step(rng.uniform(size=(n, n)), 3)
    B = 0.5 * beta * pairwise_sq(P)
    res = z_step(K, B, alpha, np.eye(n), tol=1e-12, max_iter=100000, columns=columns)
    assert res.converged
    Zc, obj_c = cvxpy_columns(K, B, alpha)
    assert np.abs(res.Z - Zc).max() <= 1e-5
    ours = column_objectives(K, B, alpha, res.Z)
    assert np.abs(ours - obj_c).max() <= 1e-7 * obj_c.max()
    assert np.all(ours <= obj_c * (1 + 1e-7))
    assert res.objective == pytest.approx(ours.sum(), rel=1e-10)
    # every column on the simplex (the box 0 <= z <= 1 follows)
    assert (res.Z >= 0).all() and np.allclose(res.Z.sum(axis=0), 1.0, atol=1e-12)
    # the double-centred kernel gives the same minimiser and the same objective (translation invariance)
    rc = z_step(double_centre(K), B, alpha, np.eye(n), tol=1e-12, max_iter=100000, columns=columns)
    assert np.abs(rc.Z - res.Z).max() <= 1e-5
    assert rc.objective == pytest.approx(res.objective, rel=1e-9)


@pytest.mark.parametrize("max_free", [256, 8], ids=["columns-solve", "left-to-fista"])
def test_z_step_on_a_nearly_identity_kernel_matches_cvxpy(max_free, monkeypatch):
    """A kernel close to I spreads every column over all samples (dense Z, condition number
    ~1 / alpha): the column route solves them with F grown to n, or (``MAX_FREE`` = 8) leaves
    them, and the whole-matrix method's active-set finish solves them through their (empty or small)
    complements."""
    monkeypatch.setattr(_zstep, "MAX_FREE", max_free)
    G, _ = three_blobs(n=40)
    K = 0.97 * np.eye(40) + 0.03 * G
    B = 0.5 * 1e-4 * pairwise_sq(p_step(np.random.default_rng(6).uniform(size=(40, 40)), 3)[0])
    res = z_step(K, B, 1e-3, np.eye(40), tol=1e-10, max_iter=20000)
    assert res.converged and (res.Z > 0).sum(axis=0).min() > 30
    Zc, obj_c = cvxpy_columns(K, B, 1e-3)
    assert np.abs(res.Z - Zc).max() <= 1e-5
    ours = column_objectives(K, B, 1e-3, res.Z)
    assert np.abs(ours - obj_c).max() <= 1e-7 * obj_c.max()


@pytest.mark.parametrize("n", [20, 30, 50, 64, 200])
def test_lambda_max_on_a_spectrum_clustered_at_its_top(n, monkeypatch):
    """The Z-step's Lipschitz constant needs the largest eigenvalue. On 2 I + 1e-17 (a nearly-identity
    kernel) LAPACK's subset driver raises LinAlgError at these n <= 64 (scipy 1.17's LAPACK), and ARPACK,
    made to fail here for n > 64, can fail likewise: the dense eigvalsh answers, within rounding of 2."""
    import scipy.sparse.linalg

    from mkclust.algorithms._spectra import _lambda_max

    def arpack_fails(*args, **kwargs):
        raise scipy.sparse.linalg.ArpackNoConvergence("no convergence", np.zeros(0), np.zeros((n, 0)))

    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", arpack_fails)
    K = 2.0 * np.eye(n) + 1e-17 * np.ones((n, n))
    assert _lambda_max(K) == pytest.approx(2.0, rel=1e-12)


def test_spectral_norm_falls_back_to_the_dense_svd_where_arpack_does_not_converge(monkeypatch):
    """The outer loop's stopping test ||Z - Z_old||_2: ARPACK, capped at ``SVDS_MAXITER`` iterations,
    failed on fourclass's SCMK with alpha = 1; made to fail here, the dense SVD answers."""
    import scipy.sparse.linalg

    from mkclust.algorithms import _spectra

    A = np.random.default_rng(7).normal(size=(90, 90))
    calls = []

    def arpack_fails(*args, **kwargs):
        calls.append(kwargs.get("maxiter"))
        raise scipy.sparse.linalg.ArpackNoConvergence("no convergence", np.zeros(0), np.zeros((90, 0)))

    exact = np.linalg.svd(A, compute_uv=False)[0]
    assert _spectra._spectral_norm(A) == pytest.approx(exact, rel=1e-6)
    monkeypatch.setattr(scipy.sparse.linalg, "svds", arpack_fails)
    assert _spectra._spectral_norm(A) == pytest.approx(exact, rel=1e-12)
    assert calls == [_spectra.SVDS_MAXITER]


def test_solves_on_sets_direct_and_through_the_complement_agree():
    """The two exact solves of the active-set finish: on the set S directly, and through its
    complement T with the shared inverse of 2 (alpha I + K); both equal cvxpy's minimiser on S
    (without the sign constraint), in batches padded to different sizes."""
    import mkclust.algorithms._zstep as scmk

    K, _ = three_blobs(n=30)
    n, alpha = 30, 1e-3
    rng = np.random.default_rng(3)
    B = 0.5 * 0.1 * pairwise_sq(p_step(rng.uniform(size=(n, n)), 3)[0])
    mask = rng.uniform(size=(n, n)) < rng.uniform(0.1, 0.95, size=(n, 1))
    mask[np.arange(n), rng.integers(0, n, n)] = True
    mask[0] = True                                       # one full set: the whole affine hull
    rows = np.arange(n)
    direct = scmk._support_kkt(mask, rows, K, B, alpha, {})
    compl = scmk._complement_kkt(mask, rows, K, B, alpha, {})
    mixed = scmk._solve_on_sets(mask, rows, K, B, alpha, {})
    z = cp.Variable(n)
    for r in rows[:8]:
        off = [z[~mask[r]] == 0] if (~mask[r]).any() else []   # an empty index: cvxpy < 1.6 refuses it
        prob = cp.Problem(cp.Minimize(alpha * cp.sum_squares(z) + cp.quad_form(z, cp.psd_wrap(K))
                                      + (B[r] - 2 * K[r]) @ z), [cp.sum(z) == 1, *off])
        prob.solve(solver="CLARABEL")
        np.testing.assert_allclose(direct[r], z.value, atol=1e-6)
    np.testing.assert_allclose(compl, direct, atol=1e-8)
    np.testing.assert_allclose(mixed, direct, atol=1e-8)
    assert (direct[~mask] == 0).all() and (compl[~mask] == 0).all()
    np.testing.assert_allclose(direct.sum(axis=1), 1.0)


def test_support_systems_equal_the_plain_masked_construction_and_each_rows_own_solution():
    """The KKT matrices of a padded batch, built in place (_support_systems), equal bit for bit those of
    the plain construction (the whole batch masked, then the diagonal and border set); each row's
    solution from the padded batch equals its system solved alone, without padding."""
    import mkclust.algorithms._zstep as scmk

    n, alpha = 120, 1e-3
    X = np.random.default_rng(5).normal(size=(n, 2))
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4.0)     # a smooth 2-d kernel, as on fourclass
    rng = np.random.default_rng(6)
    B = np.abs(rng.normal(size=(n, n))) * 1e-3
    B = B + B.T
    mask = rng.uniform(size=(n, n)) < np.linspace(0.02, 0.5, n)[:, None]     # sets of ~2 to ~60
    mask[np.arange(n), rng.integers(0, n, n)] = True
    rows = rng.integers(0, n, n)
    idx, valid = scmk._padded_sets(mask)
    r, s = idx.shape
    plain = np.zeros((r, s + 1, s + 1))
    Kss = K[idx[:, :, None], idx[:, None, :]]
    plain[:, :s, :s] = np.where(valid[:, :, None] & valid[:, None, :], 2.0 * Kss, 0.0)
    d = np.arange(s)
    plain[:, d, d] = np.where(valid, 2.0 * alpha + 2.0 * Kss[:, d, d], 1.0)
    plain[:, :s, s] = -valid.astype(float)
    plain[:, s, :s] = valid
    built = scmk._support_systems(idx, valid, K, alpha)
    assert valid.sum(1).min() < s and np.array_equal(built, plain)
    batch = scmk._support_kkt(mask, rows, K, B, alpha, {})
    alone = np.vstack([scmk._support_kkt(mask[[i]], rows[[i]], K, B, alpha, {}) for i in range(n)])
    np.testing.assert_allclose(batch, alone, rtol=1e-7, atol=1e-10)   # an ill-conditioned K: rounding only


def test_active_set_finish_on_an_ill_conditioned_kernel():
    """alpha = 1e-5 on a rank-deficient kernel (duplicated samples: lambda_max(K) / alpha ~ 1e6):
    plain FISTA stalls far from the optimum; with the active-set finish the Z-step converges to
    the cvxpy solution, and each finish never raises the objective."""
    Kb, _ = three_blobs(n=30)
    X = np.linalg.cholesky(Kb + 1e-9 * np.eye(30))
    X = np.vstack([X, X[:6]])                            # six duplicated samples
    K = double_centre(X @ X.T)
    n, alpha = K.shape[0], 1e-5
    B = 0.5 * 1e-6 * pairwise_sq(p_step(np.random.default_rng(4).uniform(size=(n, n)), 3)[0])
    plain = z_step(K, B, alpha, np.eye(n), tol=1e-9, max_iter=300, polish_every=0, columns=False)
    fin = z_step(K, B, alpha, np.eye(n), tol=1e-9, max_iter=300, columns=False)
    cols = z_step(K, B, alpha, np.eye(n), tol=1e-9, max_iter=300)
    assert not plain.converged and fin.converged and fin.objective <= plain.objective and cols.converged
    Zc, obj_c = cvxpy_columns(K, B, alpha)
    for res in (fin, cols):
        ours = column_objectives(K, B, alpha, res.Z)
        assert np.abs(ours - obj_c).max() <= 1e-7 * obj_c.max()


def test_z_step_never_returns_worse_than_its_start_and_certifies_its_gap():
    K, _ = three_blobs(n=40)
    n = K.shape[0]
    rng = np.random.default_rng(2)
    B = 0.5 * 0.2 * pairwise_sq(p_step(rng.uniform(size=(n, n)), 3)[0])
    Z0 = project_rows_to_simplex(rng.normal(size=(n, n))).T
    f0 = column_objectives(K, B, 0.1, Z0).sum()
    coarse = z_step(K, B, 0.1, Z0, tol=1e-3, max_iter=10000)
    fine = z_step(K, B, 0.1, Z0, tol=1e-13, max_iter=100000)
    assert coarse.objective <= f0 and coarse.converged and coarse.gap <= 1e-3 * coarse.objective
    # the Frank-Wolfe gap bounds the suboptimality from above
    assert coarse.objective - fine.objective <= coarse.gap + 1e-12
    capped = z_step(K, B, 0.1, Z0, tol=1e-13, max_iter=3, columns=False)
    assert capped.n_iter == 3 and not capped.converged and capped.objective <= f0


@pytest.mark.parametrize("alpha,max_free", [(1e-5, 40), (0.05, 40), (5.0, 40), (5.0, 6)])
def test_the_compiled_column_solver_equals_its_plain_python_source(alpha, max_free, monkeypatch):
    """The column route's numba functions against their ``py_func`` (every helper swapped): the same
    columns bit for bit, the same states, steps and gaps; from a random feasible start and from I,
    with columns too large for ``max_free`` (left as they are) where alpha is large."""
    K, _ = three_blobs(n=40)
    K = double_centre(K)
    rng = np.random.default_rng(3)
    B = 0.5 * 0.01 * pairwise_sq(p_step(rng.uniform(size=(40, 40)), 3)[0])
    starts = (np.eye(40), project_rows_to_simplex(rng.normal(size=(40, 40))))
    runs = {}
    for plain in (False, True):
        if plain:
            for name in ("_join_h", "_build_h", "_add_step", "_newton", "_column", "_columns", "_forward",
                         "_backward", "_delete"):
                monkeypatch.setattr(_zcolumns, name, getattr(_zcolumns, name).py_func)
        runs[plain] = [_zcolumns.solve_columns(K, B, alpha, X0, 1e-8, max_free, 500) for X0 in starts]
    for compiled, plain in zip(runs[False], runs[True]):
        for a, b in zip(compiled, plain):
            assert np.array_equal(a, b)
    states = np.concatenate([r[1] for r in runs[False]])
    if max_free == 40:                       # F may grow to n: every column solved
        assert (states == _zcolumns.SOLVED).all()
    else:
        assert (states == _zcolumns.TOO_LARGE).any()


def test_the_column_route_decreases_every_column_and_certifies_it():
    """Each column's objective at most its start's, its Frank-Wolfe gap at most tol_rel times its
    share of J, and the same minimisers as the whole-matrix method to its tolerance."""
    K, _ = three_blobs(n=50)
    K = double_centre(K)
    rng = np.random.default_rng(5)
    B = 0.5 * 0.05 * pairwise_sq(p_step(rng.uniform(size=(50, 50)), 3)[0])
    X0 = project_rows_to_simplex(rng.normal(size=(50, 50)))
    X, state, steps, gaps = _zcolumns.solve_columns(K, B, 0.01, X0, 1e-9, 50, 1000)
    assert (state == _zcolumns.SOLVED).all() and steps.min() > 0
    before, after = column_objectives(K, B, 0.01, X0.T), column_objectives(K, B, 0.01, X.T)
    assert np.all(after <= before) and np.all(gaps <= 1e-9 * after)
    G = 2 * 0.01 * X + 2 * X @ K + B - 2 * K
    assert np.allclose(np.einsum("ij,ij->i", G, X) - G.min(axis=1), gaps, atol=1e-12)
    whole = z_step(K, B, 0.01, X0.T, tol=1e-11, max_iter=100000, columns=False)
    assert np.abs(whole.Z - X.T).max() <= 1e-5


# --- the outer loop -------------------------------------------------------------------------


@pytest.mark.parametrize("alpha,beta", [(1e-5, 1e-6), (1e-3, 1e-5), (0.1, 0.01), (1.0, 1.0)])
def test_scmk_objective_never_increases_and_constraints_hold(digits17, alpha, beta):
    K, y = digits17
    est = SCMK(n_clusters=2, alpha=alpha, beta=beta, random_state=0, max_iter=30).fit(K)
    assert len(est.objective_trace_) >= 11
    assert non_increasing(est.objective_trace_), np.diff(est.objective_trace_).max()
    w = est.kernel_weights_
    assert (w >= 0).all() and np.sqrt(w).sum() == pytest.approx(1.0, rel=1e-12)
    P = est.embedding_
    assert np.allclose(P.T @ P, np.eye(2), atol=1e-10)
    Z = est.Z_
    assert (Z >= 0).all() and (Z <= 1).all() and np.allclose(Z.sum(axis=0), 1.0, atol=1e-10)
    # objective_ is Eq. 18 evaluated directly on the raw (uncentred) kernels at (Z, w) with the P of
    # the last iteration, which the final P-step can only improve on
    Kw = np.tensordot(w, K, axes=1)
    rec = np.trace(Kw - 2 * Kw @ Z + Z.T @ Kw @ Z)
    final = rec + alpha * (Z**2).sum() + beta * np.trace(P.T @ laplacian(Z) @ P)
    assert final <= est.objective_ * (1 + 1e-9)
    assert final >= rec + alpha * (Z**2).sum() - 1e-12


@pytest.mark.parametrize("kernel", [0, 6, 11])
def test_scsk_objective_never_increases(digits17, kernel):
    K, y = digits17
    est = SCSK(n_clusters=2, alpha=1e-4, beta=1e-5, random_state=0, max_iter=40).fit(K[kernel])
    assert non_increasing(est.objective_trace_)
    assert np.allclose(est.embedding_.T @ est.embedding_, np.eye(2), atol=1e-10)
    assert not hasattr(est, "kernel_weights_")


def test_weights_of_eq22_minimise_eq19():
    rng = np.random.default_rng(3)
    h = rng.uniform(0.05, 4.0, size=6)
    w = scmk_weights(h)
    assert np.sqrt(w).sum() == pytest.approx(1.0, rel=1e-12)
    # brute force: minimise sum w h over sum sqrt(w) = 1 in the variables s = sqrt(w) >= 0
    res = minimize(lambda s: (s**2) @ h, np.full(6, 1 / 6), constraints=[{"type": "eq", "fun": lambda s: s.sum() - 1}],
                   bounds=[(0, None)] * 6, method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
    assert w @ h == pytest.approx(res.fun, rel=1e-8)
    assert np.allclose(w, res.x**2, atol=1e-6)


def test_reconstruction_errors_of_eq20(digits17):
    K = digits17[0][:, :30, :30]
    Z = project_rows_to_simplex(np.random.default_rng(4).normal(size=(30, 30))).T
    direct = [np.trace(Ki - 2 * Ki @ Z + Z.T @ Ki @ Z) for Ki in K]
    assert np.allclose(reconstruction_errors(double_centre(K), Z), direct, rtol=1e-9, atol=1e-12)


# --- Theorem 2 and the labels ------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_large_alpha_on_separated_blobs_gives_the_kernel_kmeans_partition(seed):
    """Theorem 2: as alpha grows (beta large enough for c components), SCSK's Z tends to Eq. 14,
    1/n_k within each component, and the components are kernel k-means' partition."""
    K, y = three_blobs(seed)
    kkm = KernelKMeans(3, n_init=10, random_state=0).fit(K)
    dev = {}
    for alpha in (100.0, 1000.0):
        est = SCSK(3, alpha=alpha, beta=10 * alpha, labels="components", random_state=0).fit(K)
        assert est.n_components_ == 3 and est.label_method_ == "components"
        assert adjusted_rand_score(kkm.labels_, est.labels_) == 1.0
        lab = est.labels_
        dev[alpha] = max(np.abs(est.Z_[np.ix_(lab == k, lab == k)] - 1 / (lab == k).sum()).max() for k in range(3))
        assert (est.Z_[lab[:, None] != lab[None, :]] == 0).all()
    assert dev[1000.0] < 0.5 / 1000 and dev[1000.0] < dev[100.0] / 5
    # a moderate alpha with a small rank term: one connected Z, and k-means on P still finds them
    est = SCSK(3, alpha=10.0, beta=0.1, random_state=0).fit(K)
    assert est.label_method_ == "kmeans" and adjusted_rand_score(kkm.labels_, est.labels_) == 1.0


def test_theorem2_limit_block_uniform_z_and_the_kernel_kmeans_objective():
    """Eq. 13-15: with the rank term enforcing kernel k-means' components (P their normalised
    indicators, beta large) and alpha large, the Z-step gives z_ij = 1/n_k within a component and 0
    across (Eq. 14), and the reconstruction term is the kernel k-means objective (Eq. 15)."""
    K, _ = three_blobs(1)
    n = K.shape[0]
    kkm = KernelKMeans(3, n_init=10, random_state=0).fit(K)
    E = np.eye(3)[kkm.labels_]
    P = E / np.sqrt(E.sum(axis=0))
    alpha = 1e4
    B = 0.5 * (1e3 * alpha) * pairwise_sq(P)
    Z = z_step(K, B, alpha, np.eye(n), tol=1e-12, max_iter=100000).Z
    Z14 = E @ np.diag(1 / E.sum(axis=0)) @ E.T
    assert np.abs(Z - Z14).max() < 1e-3
    assert (Z[E @ E.T == 0] == 0).all()
    n_comp, comp = graph_components(Z)
    assert n_comp == 3 and adjusted_rand_score(comp, kkm.labels_) == 1.0
    rec = np.trace(K - 2 * K @ Z14 + Z14.T @ K @ Z14)
    assert rec == pytest.approx(kkm.objective_, rel=1e-10)


def test_component_labels_are_used_when_the_rank_term_splits_the_graph():
    """Two far-apart groups under a kernel that is exactly 0 across them: every column of Z lives
    in its own group, Z has exactly c = 2 components and labels='components' returns them."""
    rng = np.random.default_rng(5)
    A = rng.normal(size=(12, 3))
    G = np.exp(-((A[:, None] - A[None]) ** 2).sum(-1) / 4)
    K = np.zeros((24, 24))
    K[:12, :12] = G
    K[12:, 12:] = G
    y = np.repeat([0, 1], 12)
    est = SCSK(2, alpha=0.01, beta=1.0, labels="components", random_state=0).fit(K)
    assert est.n_components_ == 2 and est.label_method_ == "components"
    assert adjusted_rand_score(y, est.labels_) == 1.0
    km = SCSK(2, alpha=0.01, beta=1.0, labels="kmeans", random_state=0).fit(K)
    assert km.label_method_ == "kmeans" and adjusted_rand_score(y, km.labels_) == 1.0


# --- estimator behaviour ----------------------------------------------------------------------


def test_deterministic_for_a_random_state_and_registered(digits17):
    K, y = digits17
    a = get_estimator("scmk", n_clusters=2, random_state=3, max_iter=15, init="random").fit(K)
    b = SCMK(n_clusters=2, random_state=3, max_iter=15, init="random").fit(K)
    assert np.array_equal(a.labels_, b.labels_) and np.array_equal(a.Z_, b.Z_)
    assert a.get_params()["alpha"] == 1e-5 and get_estimator("scsk", n_clusters=2).get_params()["beta"] == 1e-6
    assert metrics.acc(y, a.labels_) > 0.9


@pytest.mark.parametrize("params,msg", [({"alpha": 0}, "alpha"), ({"beta": -1}, "beta"),
                                        ({"labels": "spectral"}, "labels"), ({"init": "kkm"}, "init"),
                                        ({"max_iter": 0}, "max_iter")])
def test_bad_parameters_are_clear_errors(params, msg):
    K, _ = three_blobs(n=20)
    with pytest.raises(ValueError, match=msg):
        SCSK(3, **params).fit(K)


def test_scsk_refuses_a_bank_and_scmk_accepts_one_kernel():
    K, _ = three_blobs(n=20)
    with pytest.raises(ValueError, match="single kernel"):
        SCSK(3).fit(np.stack([K, K]))
    est = SCMK(3, max_iter=12).fit(K)
    assert est.kernel_weights_ == pytest.approx([1.0])


@pytest.mark.parametrize("cls", [SCSK, SCMK])
def test_a_batch_of_seeds_learns_once_and_ends_as_separate_fits(cls):
    """fit_batch: from Z = I the seed enters only the k-means of the embedding, so the seeds of one
    setting share one twin learning (shared_fit_ on all but the first) and every estimator ends as its
    own fit (labels, objective, Z, weights); a random start (init="random") shares nothing; another
    alpha is another twin learning."""
    X, _ = make_blobs(n_samples=60, centers=3, cluster_std=1.5, random_state=4)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    bank = np.stack([np.exp(-D / 4.0), np.exp(-D / 16.0)])
    K = bank if cls is SCMK else bank[0]
    kw = dict(n_clusters=3, n_init=3, max_iter=4, z_max_iter=60)
    ests = [cls(random_state=s, **kw) for s in range(3)] + [cls(alpha=1e-2, random_state=0, **kw)]
    cls.fit_batch(ests, K)
    assert [e.shared_fit_ for e in ests] == [False, True, True, False]
    assert ests[1].Z_ is ests[0].Z_ and ests[3].Z_ is not ests[0].Z_
    for e in ests:
        alone = clone(e).fit(K)
        np.testing.assert_array_equal(e.labels_, alone.labels_)
        np.testing.assert_allclose(e.Z_, alone.Z_, rtol=0, atol=0)
        assert e.objective_ == alone.objective_
        if cls is SCMK:
            np.testing.assert_array_equal(e.kernel_weights_, alone.kernel_weights_)
    rand = [cls(init="random", random_state=s, **kw) for s in range(2)]
    cls.fit_batch(rand, K)
    assert [e.shared_fit_ for e in rand] == [False, False]
    np.testing.assert_array_equal(rand[1].labels_, clone(rand[1]).fit(K).labels_)
