"""scikit-learn's estimator checks over the whole registry.

Kernel estimators are tagged pairwise, so the checks hand them linear kernels of their data; an
estimator of a bank of kernels is checked through :class:`OnKernelBank`, which builds a two-kernel
bank [K, K o K] (the Hadamard square of a PSD kernel is PSD) from the pairwise input. The checks that
do not apply to precomputed kernels, or to methods defined for two clusters, are listed in
:data:`NOT_APPLICABLE` with the reason; every other check must pass."""

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, clone
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_is_fitted

from mkclust.algorithms import ALGORITHMS, get_estimator


class OnKernelBank(ClusterMixin, BaseEstimator):
    """A multi-kernel estimator fitted on the bank [K, K o K] of one pairwise input K."""

    def __init__(self, estimator=None):
        self.estimator = estimator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = True
        tags.input_tags.sparse = True
        return tags

    def fit(self, K, y=None):
        est = clone(self.estimator)
        K = np.asarray(K.toarray() if hasattr(K, "toarray") else K)
        bank = np.stack([K, K * K]) if K.ndim == 2 and np.issubdtype(K.dtype, np.number) else [K, K]
        self.estimator_ = est.fit(bank)
        self.labels_, self.n_features_in_ = est.labels_, est.n_features_in_
        return self


#: parameters the checks need: spectral methods on a linear kernel (negative entries) clip them, as
#: the RMKKM and SCMK configurations do for the cosine kernel; LG-MMC generates at most 10 labels
#: (its default 50 on the checks' random data took up to 20 s a check and tests nothing more); SCMK
#: and SCSK stop after 3 outer iterations of at most 50 Z-steps (up to 29 s a check otherwise); ODMC
#: stops after 200 steps, two rounds of label generation (on the checks' random data it never reached
#: its duality gap and ran its 2,000 steps in every fit: 33 of the file's 72 s of checks)
CHECK_PARAMS = {"sc": {"negative": "clip"}, "nc": {"negative": "clip"}, "lgmmc": {"max_labels": 10},
                "scmk": {"max_iter": 3, "z_max_iter": 50}, "scsk": {"max_iter": 3, "z_max_iter": 50},
                "odmc": {"max_iter": 200}}

_DATA_MATRIX = "fits a data matrix (n, d) directly, not through the pairwise kernel the tag asks for"
_TWO = "sets n_clusters=1; the method is defined for two clusters ({})"
_PAIRWISE = {"check_clustering": _DATA_MATRIX}
_PSD = {"check_estimators_dtypes": "casts a float32 kernel to integers: the truncated matrix is not positive "
                                   "semi-definite (smallest eigenvalue -2), which these methods refuse",
        "check_positive_only_tag_during_fit": "fits a random (n, d) matrix as it is: not a square positive "
                                              "semi-definite kernel, which these methods refuse"}


def _two_class(which):
    return {c: _TWO.format(which) for c in ("check_methods_subset_invariance", "check_fit2d_predict1d",
                                           "check_dont_overwrite_parameters", "check_fit2d_1sample",
                                           "check_fit2d_1feature")}


def _not_applicable(name: str) -> dict:
    cls = ALGORITHMS[name]
    out = {}
    if cls.input_kind in ("kernel", "kernels"):
        out |= _PAIRWISE
        if cls.requires_psd:
            out |= _PSD
    if cls.two_class_only:
        out |= _two_class("two-class only")
    if name == "mkc":
        out |= _two_class("MKC: at least two")
    return out


#: registry name -> {check: why it does not apply}
NOT_APPLICABLE = {name: _not_applicable(name) for name in ALGORITHMS}


def _checked(name):
    est = get_estimator(name, n_clusters=2, random_state=0, **CHECK_PARAMS.get(name, {}))
    return OnKernelBank(est) if ALGORITHMS[name].input_kind == "kernels" else est


ESTIMATORS = {name: _checked(name) for name in sorted(ALGORITHMS)}


def _expected(estimator):
    inner = estimator.estimator if isinstance(estimator, OnKernelBank) else estimator
    name = next(n for n, cls in ALGORITHMS.items() if type(inner) is cls)
    return NOT_APPLICABLE[name]


@parametrize_with_checks(list(ESTIMATORS.values()), expected_failed_checks=_expected)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_fitted_attributes_and_conventions():
    """check_is_fitted passed on an unfitted ODMC (its parameter lambda_ ended in an underscore);
    n_features_in_ was never set."""
    for name, est in ESTIMATORS.items():
        assert not any(k.endswith("_") for k in est.get_params(deep=False)), name
        try:
            check_is_fitted(est)
        except Exception as exc:
            assert "not fitted" in str(exc), name
        else:
            raise AssertionError(f"{name}: check_is_fitted passes before fit")


def test_kernel_kmeans_predicts_from_a_cross_kernel():
    """predict(k(x_new, x_train)) is the nearest cluster mean in feature space: with a linear kernel,
    the nearest mean of the training points in the input space (brute force)."""
    from sklearn.datasets import make_blobs

    from mkclust.algorithms import KernelKMeans

    X, _ = make_blobs(160, centers=3, cluster_std=2.5, random_state=0)
    train, test = X[:120], X[120:]
    est = KernelKMeans(3, random_state=0).fit(train @ train.T)
    np.testing.assert_array_equal(est.predict(train @ train.T), est.labels_)   # a fixed point of Lloyd
    means = np.stack([train[est.labels_ == c].mean(axis=0) for c in range(3)])
    brute = np.argmin(((test[:, None, :] - means[None]) ** 2).sum(axis=2), axis=1)
    np.testing.assert_array_equal(est.predict(test @ train.T), brute)


def test_km_baseline_predicts_as_kmeans():
    from sklearn.cluster import KMeans
    from sklearn.datasets import make_blobs

    from mkclust.algorithms import KMeansBaseline

    X, _ = make_blobs(100, centers=3, random_state=1)
    ours = KMeansBaseline(3, random_state=0).fit(X[:70])
    ref = KMeans(3, n_init=10, random_state=0).fit(X[:70])
    np.testing.assert_array_equal(ours.predict(X[70:]), ref.predict(X[70:]))


def test_mkc_takes_a_feature_matrix_in_a_pipeline():
    """Nystroem() then MKC() in a Pipeline failed ("K must be square"): MKC read features only from a list."""
    from sklearn.datasets import make_moons
    from sklearn.kernel_approximation import Nystroem
    from sklearn.pipeline import make_pipeline

    from mkclust import metrics
    from mkclust.algorithms import MKC

    X, y = make_moons(200, noise=0.05, random_state=0)
    pipe = make_pipeline(Nystroem(gamma=5.0, n_components=80, random_state=0), MKC(2, random_state=0))
    labels = pipe.fit_predict(X)
    assert metrics.acc(y, labels) > 0.9
    np.testing.assert_array_equal(pipe.predict(X), labels)
    F = Nystroem(gamma=5.0, n_components=80, random_state=0).fit_transform(X)
    np.testing.assert_array_equal(MKC(2, random_state=0).fit([F]).labels_, labels)   # the same as a list of one map
