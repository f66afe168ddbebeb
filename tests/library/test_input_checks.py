"""Bad or degenerate input: a clear error before any work, never a silent NaN (every registered
estimator)."""

import numpy as np
import pytest
import scipy.sparse as sp

from mkclust._validation import PSD_RTOL, assume_psd, check_psd, repair_psd
from mkclust.algorithms import ALGORITHMS, get_estimator
from mkclust.kernel_functions import clip_psd, gaussian_kernel

KERNEL_ESTIMATORS = sorted(n for n, c in ALGORITHMS.items() if c.input_kind != "features")


def _input(cls, K):
    return np.stack([K] * 3) if cls.input_kind == "kernels" else K


def _estimator(name):
    return get_estimator(name, n_clusters=2, random_state=0)


@pytest.fixture(scope="module")
def gram():
    X = np.random.RandomState(0).randn(40, 3)
    return gaussian_kernel(X, 2.0)


@pytest.mark.parametrize("name", KERNEL_ESTIMATORS)
def test_a_kernel_that_is_not_psd_is_refused_before_any_work(name, gram):
    """An RBF kernel with its diagonal set to 0 (smallest eigenvalue -1): GMMC ran 114 s to an
    objective of 9.3e9, SCSK and SCMK reported negative objectives. Methods on affinities (spectral
    clustering, AASC) take it: an affinity need not be a kernel."""
    K = gram.copy()
    np.fill_diagonal(K, 0.0)
    est = _estimator(name)
    if not type(est).requires_psd:
        assert name in {"sc", "nc", "aasc"}
        est.fit(_input(type(est), K))
        return
    with pytest.raises(ValueError, match=r"K\[0\] is not positive semi-definite: its smallest eigenvalue is -1"):
        est.fit(_input(type(est), K))
    with assume_psd():            # the caller's promise (the runner checks each input once)
        if name != "gmmc":        # whose SDP on it is the 114 s case
            est.fit(_input(type(est), K))


@pytest.mark.parametrize("name", KERNEL_ESTIMATORS)
@pytest.mark.parametrize("case", ["constant", "n equals n_clusters"])
def test_degenerate_input_gives_a_finite_objective_and_weights(name, case, gram):
    """Constant kernels (every sample one point in feature space) and n = n_clusters made RMKKM's and
    MKKM's objective_ and kernel_weights_ NaN; the answer is the limit: equal weights, objective 0."""
    K = np.ones((40, 40)) if case == "constant" else gram[:2, :2]
    if name == "mkc" and case == "constant":    # nothing to separate: a clear error, not a one-cluster labelling
        with pytest.raises(ValueError, match="hold nothing that separates the samples"):
            _estimator(name).fit(_input(ALGORITHMS[name], K))
        return
    est = _estimator(name).fit(_input(ALGORITHMS[name], K))
    assert np.isfinite(est.objective_), est.objective_
    if hasattr(est, "kernel_weights_"):
        assert np.all(np.isfinite(est.kernel_weights_)), est.kernel_weights_
    if name in ("rmkkm", "mkkm"):
        w = est.kernel_weights_
        np.testing.assert_allclose(w, w[0])
        assert est.objective_ == 0.0
    if name == "scmk" and case == "constant":    # were 0, 0, 0 (an overflow to inf)
        np.testing.assert_allclose(est.kernel_weights_, 1 / 9)


def test_the_psd_tolerance_accepts_rounding_and_refuses_a_real_negative_eigenvalue(gram):
    n = gram.shape[0]
    bound = n * np.abs(gram).max()
    lam, U = np.linalg.eigh(gram)
    for shift, ok in ((0.1 * PSD_RTOL, True), (10 * PSD_RTOL, False)):
        low = lam.copy()
        low[0] = -shift * bound                       # the smallest eigenvalue moved just below 0
        K = (U * low) @ U.T
        K = (K + K.T) / 2
        if ok:
            check_psd(K)
        else:
            with pytest.raises(ValueError, match="not positive semi-definite"):
                check_psd(K)
    K = gram.copy()
    np.fill_diagonal(K, 0.0)
    R = clip_psd(K)                                   # the documented repair passes
    check_psd(R)
    assert np.linalg.eigvalsh(R).min() > -1e-12 and np.abs(R - K).max() < 1.0


@pytest.mark.parametrize("name", KERNEL_ESTIMATORS)
def test_a_sparse_kernel_is_the_dense_one(name, gram):
    """A scipy sparse kernel failed with "setting an array element with a sequence"."""
    if ALGORITHMS[name].input_kind == "kernels":
        data = [sp.csr_matrix(gram)] * 3
    else:
        data = sp.csr_matrix(gram)
    a = _estimator(name).fit(data).labels_
    b = _estimator(name).fit(_input(ALGORITHMS[name], gram)).labels_
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,params,match", [
    # objective_ was 0.0
    ("itersvr", {"max_iter": 0}, r"'max_iter' parameter of IterSVR must be an int in the range \[1, inf\)"),
    ("rkkm", {"tol": -1.0}, r"'tol' parameter of RKKM must be a float in the range \[0.0, inf\)"),
    ("kkm", {"n_init": 1.5}, r"'n_init' parameter of KernelKMeans must be an int"),        # was truncated
    ("mkc", {"epsilon": 0.0}, r"'epsilon' parameter of MKC must be a float in the range \(0.0, inf\)"),
    ("lgmmc", {"epsilon": -1.0}, r"'epsilon' parameter of LGMMC must be a float in the range \(0.0, inf\)"),
    ("gumkl", {"random_state": "abc"}, r"'random_state' parameter of GUMKL must be an int"),
    ("gmmc", {"random_state": "abc"}, r"'random_state' parameter of GMMC must be an int"),
    ("gumkl", {"refine": "no"}, r"'refine' parameter of GUMKL must be an instance of 'bool'"),  # read as True
    ("gumkl", {"max_iter": 0}, r"'max_iter' parameter of GUMKL must be an int"),           # a TypeError
    # "SOCP infeasible"
    ("mkc", {"balance": -1.0}, r"'balance' parameter of MKC must be a float in the range \[0.0, inf\) or None"),
    ("gmmc", {"eps": -1.0}, r"'eps' parameter of GMMC must be a float in the range \(0.0, inf\)"),  # failed in SCS
])
def test_a_bad_parameter_value_is_named_before_any_work(name, params, match, gram):
    cls = ALGORITHMS[name]
    est = get_estimator(name, n_clusters=2, random_state=0, **params) if "random_state" not in params \
        else get_estimator(name, n_clusters=2, **params)
    with pytest.raises(ValueError, match=match):
        est.fit(_input(cls, gram))


def test_repair_psd_clips_negative_eigenvalues_when_asked(gram):
    """Off by default (the kernel is refused); inside repair_psd() the fit is of the nearest PSD matrix."""
    from mkclust.algorithms import KernelKMeans

    K = gram.copy()
    np.fill_diagonal(K, 0.0)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        KernelKMeans(2, random_state=0).fit(K)
    message = r"K\[0\]: smallest eigenvalue -1; negative eigenvalues set to 0"
    with repair_psd(), pytest.warns(UserWarning, match=message):
        a = KernelKMeans(2, random_state=0).fit(K).labels_
    b = KernelKMeans(2, random_state=0).fit(clip_psd(K)).labels_
    np.testing.assert_array_equal(a, b)
    assert K[0, 0] == 0.0                     # the caller's matrix is not modified


def _edge_values(constraint) -> list:
    """The values at the edges of one parameter constraint (:mod:`mkclust._params`) (an interval's closed or
    nearest-inside bounds, every option of a StrOptions, None, both booleans)."""
    from numbers import Integral

    from mkclust._params import Interval, StrOptions

    if constraint is None:
        return [None]
    if constraint == "boolean":
        return [True, False]
    if isinstance(constraint, StrOptions):
        return sorted(constraint.options, key=str)
    if isinstance(constraint, Interval):
        step = 1 if constraint.kind is Integral else 1e-9
        out = []
        if constraint.left is not None:
            out.append(constraint.left if constraint.closed in ("left", "both") else constraint.left + step)
        if constraint.right is not None:
            out.append(constraint.right if constraint.closed in ("right", "both") else constraint.right - step)
        return out
    return []


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_value_the_parameter_check_accepts_fit_accepts(name):
    """For each parameter, each edge of each of its constraints, the others at their defaults: a value
    that passes the parameter check (what the planner runs on a configuration) fits on a small
    two-cluster problem or is declined as N/A (NotFinished), never refused by fit. (GUMKL's
    p=inf, NormalizedCut's negative='keep' and n_clusters=1 of the two-class methods were accepted
    by the check and refused by fit.)"""
    import warnings

    from mkclust.algorithms.base import NotFinished

    rng = np.random.RandomState(0)
    X = np.vstack([rng.randn(12, 2), rng.randn(12, 2) + 6])
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.exp(-D / D.mean())
    cls = ALGORITHMS[name]
    data = {"features": X, "kernel": K, "kernels": np.stack([K, np.exp(-D / (4 * D.mean()))]),
            "feature_maps": np.stack([K, K])}[cls.input_kind]
    tried = 0
    for param, constraints in cls._parameter_constraints.items():
        for value in [v for c in constraints for v in _edge_values(c)] if param != "random_state" else []:
            kw = {"n_clusters": 2, param: value}
            try:
                cls(**kw)._check_params()
            except ValueError:
                continue           # not accepted: the planner refuses it before any job
            tried += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    cls(**kw, random_state=0).fit(data)
                except NotFinished:
                    pass
    assert tried >= 3


def test_parameter_constraints_accept_and_refuse_as_stated():
    """mkclust._params: intervals with each kind of closed end, ints against reals (never bools),
    string options, None, booleans, random states and array-likes; the message names the parameter,
    the estimator, what is allowed and the value."""
    from numbers import Integral, Real

    from mkclust._params import Interval, InvalidParameterError, StrOptions, validate_params

    half_open = Interval(Real, 0, 1, closed="left")
    assert half_open.accepts(0) and half_open.accepts(0.5) and not half_open.accepts(1.0)
    assert not half_open.accepts(True) and not half_open.accepts("0.5") and not half_open.accepts(-1e-12)
    ints = Interval(Integral, 1, None, closed="left")
    assert ints.accepts(1) and ints.accepts(np.int64(7)) and not ints.accepts(1.0) and not ints.accepts(0)
    assert str(ints) == "an int in the range [1, inf)" and str(Interval(Real, 0, None, "neither")) == \
        "a float in the range (0.0, inf)"

    class Est:
        def __init__(self, **kw):
            self.kw = {"p": 2.0, "mode": "a", "flag": True, "random_state": None, "init": None, **kw}

        def get_params(self, deep=False):
            return dict(self.kw)

    constraints = {"p": [Interval(Real, 1, None, closed="both"), StrOptions({"inf"})], "mode": [StrOptions({"a", "b"})],
                   "flag": ["boolean"], "random_state": ["random_state"], "init": ["array-like", None]}
    for ok in ({}, {"p": "inf"}, {"p": 1}, {"mode": "b"}, {"flag": np.bool_(False)}, {"random_state": 3},
               {"random_state": np.random.RandomState(0)}, {"init": [0, 1]}, {"init": np.zeros(3)}):
        validate_params(Est(**ok), constraints)
    for bad, message in (({"p": 0.5}, "The 'p' parameter of Est must be a float in the range [1.0, inf] or a str "
                                      "among {'inf'}. Got 0.5 instead."),
                         ({"mode": "c"}, "must be a str among {'a', 'b'}. Got 'c' instead."),
                         ({"flag": 1}, "must be an instance of 'bool'. Got 1 instead."),
                         ({"random_state": -1}, "Got -1 instead."), ({"init": "x"}, "an array-like or None")):
        with pytest.raises(InvalidParameterError) as err:
            validate_params(Est(**bad), constraints)
        assert message in str(err.value)


def _bad_kernels(n):
    """What makes a matrix not a kernel, at n samples: a Gaussian kernel with its diagonal set to 0, a
    sigmoid kernel, and a Gaussian of squared L1 distances (not of a Euclidean distance)."""
    from sklearn.metrics.pairwise import manhattan_distances, sigmoid_kernel
    X = np.random.RandomState(1).randn(n, 5)
    Z = gaussian_kernel(X, 2.0)
    np.fill_diagonal(Z, 0.0)
    D = manhattan_distances(X)
    return {"zero diagonal": Z, "sigmoid": sigmoid_kernel(X, gamma=0.2, coef0=1.0),
            "Gaussian of L1": np.exp(-(D / D.mean()) ** 2)}


def test_the_lanczos_detector_refuses_what_is_not_a_kernel_and_never_what_the_exact_test_passes():
    """Above PSD_EXACT_LIMIT samples check_psd runs the block Lanczos detector instead of a Cholesky
    factorisation: its quotient is an upper bound on the smallest eigenvalue, so it refuses only
    matrices the exact test refuses; it finds each bad kernel's negative part."""
    from mkclust._validation import lanczos_rayleigh_min
    n = 400
    for what, K in _bad_kernels(n).items():
        lam = np.linalg.eigvalsh(K)[0]
        rho = lanczos_rayleigh_min(K)
        assert lam - 1e-9 <= rho < -PSD_RTOL * n * np.abs(K).max(), (what, lam, rho)
        with pytest.raises(ValueError, match=r"at most -[0-9.]+ \(a Rayleigh quotient\)"):
            check_psd(K, exact=False)
        with pytest.raises(ValueError, match="its smallest eigenvalue is -"):
            check_psd(K, exact=True)
    X = np.random.RandomState(2).randn(n, 5)
    lam, U = np.linalg.eigh(gaussian_kernel(X, 2.0))
    lam[:20] = -0.5 * PSD_RTOL * n                      # within the tolerance (max|K_ij| is 1): both pass it
    for K in (gaussian_kernel(X, 0.1), gaussian_kernel(X, 50.0), X @ X.T, np.ones((n, n)), (U * lam) @ U.T):
        K = (K + K.T) / 2
        check_psd(K, exact=True)
        check_psd(K, exact=False)
    A = _bad_kernels(30)["sigmoid"]                     # n <= the Krylov space: the exact smallest eigenvalue
    assert abs(lanczos_rayleigh_min(A) - np.linalg.eigvalsh(A)[0]) < 1e-10


def test_an_estimator_uses_the_detector_above_the_exact_limit(monkeypatch):
    import mkclust._validation as validation
    K = _bad_kernels(60)["zero diagonal"]
    monkeypatch.setattr(validation, "PSD_EXACT_LIMIT", 50)
    with pytest.raises(ValueError, match=r"K\[0\] is not positive semi-definite: its smallest eigenvalue is at most"):
        get_estimator("kkm", n_clusters=2).fit(K)
    monkeypatch.setattr(validation, "PSD_EXACT_LIMIT", 60)
    with pytest.raises(ValueError, match=r"its smallest eigenvalue is -0\.9996, below"):
        get_estimator("kkm", n_clusters=2).fit(K)
