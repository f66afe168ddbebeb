"""SimpleMKKM, MKKM-MiR, ONKC, LF-MVC and LMKKM: each step against an independent solver or a brute
force on small problems, the objectives monotone where the papers say so, and a clustering on data
with known structure."""

import itertools

import cvxpy as cp
import numpy as np
import pytest

from mkclust import metrics
from mkclust.algorithms import LFMVC, LMKKM, ONKC, MKKMMiR, SimpleMKKM
from mkclust.algorithms._mkkm_family import authors_kernels, leading, simplex_qp
from mkclust.algorithms._simplex import project_rows_to_simplex as rows_to_simplex
from mkclust.algorithms.late_fusion import polar
from mkclust.algorithms.lmkkm import qp_value, theta_qp
from mkclust.algorithms.mkkm_mir import psd_part


def _gauss(X, s):
    d = ((X[:, None] - X[None]) ** 2).sum(-1)
    return np.exp(-d / (2 * s * s))


@pytest.fixture(scope="module")
def bank():
    """Three well separated blobs of 20 in 4 dimensions, a bank of unit-diagonal kernels as the
    benchmark's: two Gaussians (widths 4 and 1.5) and (x'y / 16 + 1)^2 scaled to a unit diagonal."""
    rng = np.random.RandomState(0)
    centres = np.array([[0, 0, 0, 0], [6, 0, 0, 0], [0, 6, 0, 0]], float)
    y = np.repeat(np.arange(3), 20)
    X = centres[y] + rng.randn(60, 4)
    poly = (X @ X.T / 16 + 1) ** 2
    d = np.sqrt(poly.diagonal())
    return np.stack([_gauss(X, 4.0), _gauss(X, 1.5), poly / d[:, None] / d[None]]), y


def _simplex(m, steps):
    for w in itertools.product(np.linspace(0, 1, steps + 1), repeat=m - 1):
        if sum(w) <= 1 + 1e-12:
            yield np.array([*w, 1 - sum(w)])


@pytest.mark.parametrize("m, steps", [(2, 400), (3, 60)])
def test_simplemkkm_reaches_the_minimum_of_a_fine_grid_over_the_simplex(bank, m, steps):
    """The min-max value: no point of a grid over the simplex (step 1/400 for 2 kernels, 1/60 for 3)
    lies below the fit's, and the grid's best is within its resolution of it; the trace never rises."""
    K = bank[0][:m]
    est = SimpleMKKM(n_clusters=3, tol=1e-7, random_state=0).fit(K)
    grid = min(est.objective_at_weights(K, w) for w in _simplex(m, steps))
    assert est.objective_ <= grid + 1e-9
    assert grid - est.objective_ < 5e-3 * est.objective_
    assert np.all(np.diff(est.objective_trace_) <= 1e-12)
    assert est.kernel_weights_.sum() == pytest.approx(1.0) and np.all(est.kernel_weights_ >= 0)


def test_simplemkkm_gradient_is_danskins(bank):
    """d/dgamma_p of max_H Tr(H' K_gamma H) is 2 gamma_p Tr(H' K_p H) (central differences)."""
    K, gamma, k = bank[0], np.array([0.5, 0.2, 0.3]), 3
    est = SimpleMKKM(n_clusters=k)
    H = leading(np.tensordot(gamma**2, K, axes=1), k)[0]
    analytic = 2 * gamma * np.einsum("pij,ik,jk->p", K, H, H)
    h = 1e-6
    numeric = [(est.objective_at_weights(K, gamma + h * e) - est.objective_at_weights(K, gamma - h * e)) / (2 * h)
               for e in np.eye(3)]
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_the_weight_qp_agrees_with_cvxpy(seed):
    rng = np.random.RandomState(seed)
    A = rng.randn(6, 5)
    Q, c = A.T @ A + (0.0 if seed % 2 else 1.0) * np.eye(5), rng.randn(5)
    w = cp.Variable(5)
    cp.Problem(cp.Minimize(0.5 * cp.quad_form(w, cp.psd_wrap(Q)) + c @ w), [w >= 0, cp.sum(w) == 1]).solve()
    ours = simplex_qp(Q, c)
    value = lambda v: 0.5 * v @ Q @ v + c @ v   # noqa: E731
    assert value(ours) <= value(w.value) + 1e-7
    np.testing.assert_allclose(ours, w.value, atol=2e-4)


@pytest.mark.parametrize("estimator", [MKKMMiR(n_clusters=3), ONKC(n_clusters=3), MKKMMiR(n_clusters=3, lam=8.0),
                                       ONKC(n_clusters=3, rho=4.0, lam=0.25)])
def test_the_regularised_objectives_never_increase(bank, estimator):
    est = estimator.set_params(random_state=0, tol=1e-9, max_iter=40).fit(bank[0])
    trace = np.array(est.objective_trace_)
    assert len(trace) >= 2 and np.all(np.diff(trace) <= 1e-7 * np.abs(trace[:-1]))


def test_mkkm_mir_weight_step_is_the_qp_of_its_objective(bank):
    """With H fixed, the weights the fit's QP gives minimise Tr(K_gamma (I - HH')) + lambda/2 gamma'M gamma
    (cvxpy on the same objective written directly)."""
    K, lam = bank[0], 0.5
    H = leading(K.mean(axis=0), 3)[0]
    f = np.einsum("pii->p", K) - np.einsum("pij,ik,jk->p", K, H, H)
    M = np.einsum("pij,qij->pq", K, K)
    g = cp.Variable(3)
    cp.Problem(cp.Minimize(cp.sum(cp.multiply(f, cp.square(g))) + lam / 2 * cp.quad_form(g, cp.psd_wrap(M))),
               [g >= 0, cp.sum(g) == 1]).solve()
    ours = simplex_qp(lam * M + 2 * np.diag(f), np.zeros(3))
    est = MKKMMiR(n_clusters=3, lam=lam)
    assert est.objective_value(K, H, ours) <= est.objective_value(K, H, g.value) + 1e-7


def test_onkc_projection_satisfies_the_cones_optimality_conditions():
    """P = argmin over PSD X of ||X - A||_F: P PSD, A - P negative semi-definite, <P, A - P> = 0."""
    rng = np.random.RandomState(3)
    B = rng.randn(7, 7)
    A = (B + B.T) / 2
    P = psd_part(A)
    assert np.linalg.eigvalsh(P).min() >= -1e-10
    assert np.linalg.eigvalsh(A - P).max() <= 1e-10
    assert abs(np.sum(P * (A - P))) <= 1e-10


def test_the_procrustes_step_beats_every_rotation_and_reflection_of_a_fine_grid():
    """k = 2: Tr(Q' S) at the polar factor is the maximum over rotations and reflections by angle."""
    rng = np.random.RandomState(1)
    S = rng.randn(2, 2)
    best = -np.inf
    for t in np.linspace(0, 2 * np.pi, 20001):
        c, s = np.cos(t), np.sin(t)
        for Q in (np.array([[c, -s], [s, c]]), np.array([[c, s], [s, -c]])):
            best = max(best, np.trace(Q.T @ S))
    Q = polar(S)
    np.testing.assert_allclose(Q.T @ Q, np.eye(2), atol=1e-12)
    assert np.trace(Q.T @ S) >= best - 1e-12 and np.trace(Q.T @ S) - best < 1e-6


def test_lf_mvc_objective_never_decreases_and_the_authors_sum_differs(bank):
    paper = LFMVC(n_clusters=3, tol=1e-12, max_iter=30, random_state=0).fit(bank[0])
    trace = np.array(paper.objective_trace_)
    assert np.all(np.diff(trace) >= -1e-10 * np.abs(trace[:-1]))
    assert np.linalg.norm(paper.kernel_weights_) == pytest.approx(1.0)
    authors = LFMVC(n_clusters=3, tol=1e-12, max_iter=30, fusion_sum="authors", random_state=0).fit(bank[0])
    assert not np.allclose(authors.kernel_weights_, paper.kernel_weights_)


def test_lmkkm_theta_step_agrees_with_cvxpy_and_rows_project_onto_the_simplex(bank):
    K = bank[0][:, :12, :12]
    H = leading(K.mean(axis=0), 2)[0]
    A = K * (np.eye(12) - H @ H.T)[None]
    T = cp.Variable((12, 3))
    cp.Problem(cp.Minimize(sum(cp.quad_form(T[:, p], cp.psd_wrap(A[p])) for p in range(3))),
               [T >= 0, cp.sum(T, axis=1) == 1]).solve()
    ours = theta_qp(A, np.full((12, 3), 1 / 3), tol=1e-12, max_steps=20000)[0]
    assert qp_value(A, ours) <= qp_value(A, T.value) + 1e-7
    V = np.random.RandomState(0).randn(5, 4)
    P = rows_to_simplex(V)
    for v, p in zip(V, P):
        x = cp.Variable(4)
        cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= 0, cp.sum(x) == 1]).solve()
        np.testing.assert_allclose(p, x.value, atol=1e-6)


def test_lmkkm_objective_does_not_increase(bank):
    est = LMKKM(n_clusters=3, tol=1e-10, max_iter=15, qp_tol=1e-10, qp_max_steps=20000, random_state=0).fit(bank[0])
    trace = np.array(est.objective_trace_)
    assert np.all(np.diff(trace) <= 1e-7 * np.abs(trace[:-1]))
    np.testing.assert_allclose(est.sample_weights_.sum(axis=1), 1.0)


@pytest.mark.parametrize("cls", [SimpleMKKM, MKKMMiR, ONKC, LFMVC, LMKKM])
@pytest.mark.parametrize("protocol", ["paper", "authors"])
def test_each_finds_three_separated_blobs(bank, cls, protocol):
    K, y = bank
    est = cls(n_clusters=3, protocol=protocol, random_state=0).fit(K)
    assert metrics.acc(y, est.labels_) >= 0.95
    np.testing.assert_array_equal(est.labels_, cls(n_clusters=3, protocol=protocol, random_state=0).fit_predict(K))


def test_the_authors_kernels_are_centred_then_scaled_to_a_unit_diagonal(bank):
    """C K C with C = I - 11'/n (the kernel of the centred features), then D^-1/2 (C K C) D^-1/2."""
    K = bank[0]
    C = np.eye(60) - np.full((60, 60), 1 / 60)
    for Kp, got in zip(K, authors_kernels(K)):
        Kc = C @ Kp @ C
        d = np.sqrt(Kc.diagonal())
        np.testing.assert_allclose(got, Kc / d[:, None] / d[None], atol=1e-12)
        np.testing.assert_allclose(got.diagonal(), 1.0)


@pytest.mark.parametrize("cls", [SimpleMKKM, MKKMMiR, ONKC, LFMVC, LMKKM])
def test_a_batch_of_seeds_learns_once_and_ends_as_separate_fits(bank, cls):
    """fit_batch over 3 seeds and 2 values of n_init: one learning per distinct setting, every
    estimator's labels and weights those of its own fit."""
    K = bank[0]
    ests = [cls(n_clusters=3, random_state=s, n_init=i) for s in range(3) for i in (1, 10)]
    cls.fit_batch(ests, K)
    assert sum(not e.shared_fit_ for e in ests) == 1
    for e in ests:
        alone = cls(n_clusters=3, random_state=e.random_state, n_init=e.n_init).fit(K)
        np.testing.assert_array_equal(e.labels_, alone.labels_)
        np.testing.assert_allclose(e.kernel_weights_, alone.kernel_weights_)
