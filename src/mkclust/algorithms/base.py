"""Shared pieces of the estimators: input kinds, validation, random restarts."""

from __future__ import annotations

import copy
import functools
import logging
import time
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Callable, ClassVar

import numpy as np
import scipy.sparse.linalg
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state

from mkclust._params import Interval, StrOptions, validate_params
from mkclust._validation import check_features, check_kernels, check_n_clusters
from mkclust.kernel_functions import top_eigh
from mkclust.lowrank import as_low_rank


class Progress:
    """Progress lines of a long fit, rate-limited: :meth:`info` logs at INFO at most once every
    ``every`` seconds and at DEBUG otherwise, so the console (INFO) shows a line every few seconds
    while the job's log file (DEBUG) keeps every iteration. One per module, shared by its fits."""

    def __init__(self, logger: logging.Logger, every: float = 5.0):
        self.log, self.every, self._last = logger, float(every), -float("inf")

    def info(self, msg: str, *args) -> None:
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self.log.info(msg, *args)
        else:
            self.log.debug(msg, *args)


class NotFinished(RuntimeError):
    """A fit that declined or ran out of its budget (GMMC's SCS iterations); the experiment runner
    records the run as N/A with this message as the reason, as the papers' tables do."""


_RESTARTS = Progress(logging.getLogger(__name__))


@dataclass(frozen=True)
class Cost:
    """The workflow's cost model of one fit (:mod:`mkclust.repro.resources` sizes each job's memory and time
    from it): ``work_n2`` n x n float64 matrices held beside the input; ``seconds_at_1000`` seconds
    at n = 1000 on one core, growing as n ** ``exponent``, a bound for a job's time limit; and
    ``typical_at_1000``, the typical seconds there, calibrated on measured fits
    (``benchmarks/bench_workflow.py --calibrate``), which the cost estimate (:mod:`mkclust.repro.estimate`)
    uses; per restart where ``restarts`` (``n_init`` repeats the whole fit). An estimator with ``fit_batch`` that fits
    the runs of one input in lockstep also gives ``batch_time``, a batched run's time as a fraction
    of a fit alone, ``batch_bytes_per_n`` bytes per sample each batched run holds, ``batch_n2`` n x n
    matrices the batch adds and ``batch_fixed_bytes_per_n`` bytes per sample the batch holds once."""

    work_n2: float
    seconds_at_1000: float
    exponent: float
    typical_at_1000: float | None = None
    restarts: bool = False
    batch_time: float | None = None
    batch_bytes_per_n: float = 0.0
    batch_n2: float = 0.0
    batch_fixed_bytes_per_n: float = 0.0


@functools.cache
def default_params(cls) -> dict:
    """An estimator class's default parameters (``get_params`` of a default instance), computed once
    per class: the planner and the cost model read them for every algorithm entry and planned run.
    Read only."""
    return cls().get_params()


#: constraints shared by many estimators' parameters
POSITIVE_INT = Interval(Integral, 1, None, closed="left")
NONNEG_INT = Interval(Integral, 0, None, closed="left")
POSITIVE = Interval(Real, 0, None, closed="neither")
NONNEG = Interval(Real, 0, None, closed="left")
COMMON_CONSTRAINTS = {"n_clusters": [POSITIVE_INT], "random_state": ["random_state"]}


class BaseClusterer(ClusterMixin, BaseEstimator):
    """Base of every mkclust estimator, and the contract between an estimator and the workflow.

    A registered estimator (:data:`mkclust.algorithms.ALGORITHMS`) declares, on its own class:

    - ``input_kind``, what ``fit`` takes: ``"features"`` an (n, d) data matrix, ``"kernel"`` one
      (n, n) kernel (or a bank of one), ``"kernels"`` a bank (m, n, n), ``"feature_maps"`` a list of
      feature matrices or a bank;
    - ``two_class_only``, True for methods defined for two clusters only (IterSVR, ODMC);
    - ``cost``, its :class:`Cost` (memory and time of one fit, and of a batch);
    - optionally ``fit_batch(estimators, X)`` (a classmethod fitting several settings on one input
      together; ``batch_alone_first`` when the first run of a batch is fitted alone for its timing)
      and :meth:`declines` / :meth:`fit_seconds` where its cost depends on its parameters;
    - :meth:`load_compiled` where its fits run numba-compiled loops.

    ``tests/workflow/test_resources.py`` fails for a registered estimator that does not declare its own
    ``cost``. ``fit_predict`` comes from ClusterMixin.
    """

    input_kind = "kernel"
    two_class_only = False
    #: kernels must be positive semi-definite (checked by ``_validate_kernel``, tolerance
    #: :data:`mkclust._validation.PSD_RTOL`); False for methods on affinities (spectral clustering)
    requires_psd = True
    #: takes a low-rank bank (:class:`mkclust.lowrank.LowRankBank`, or a features
    #: :class:`~mkclust.kernels.KernelBank`) without forming an n x n matrix
    takes_low_rank = False
    #: on a low-rank bank (the workflow's memory model): copies of the factors a fit holds, n-vectors
    #: per kernel it holds (MKKM's runs in lockstep: their distances),
    #: and whether it holds their cross Gram matrix (the leading eigenvectors' route)
    low_rank_copies: ClassVar[int] = 0
    low_rank_vectors: ClassVar[int] = 4
    low_rank_cross: ClassVar[bool] = False
    #: the parameter that caps ``n_iter_`` where a fit can stop before its own stopping rule holds
    #: (ODMC's ``max_iter``, LG-MMC's ``max_labels``): a run whose n_iter reaches it stopped at its
    #: budget, and the tables mark the share of such runs behind a cell (:mod:`mkclust.repro.reporting.reduce`)
    budget: ClassVar[str | None] = None
    cost: ClassVar[Cost]
    #: parameter constraints in scikit-learn's convention (:mod:`mkclust._params`): every estimator
    #: states each parameter's type and range once; :meth:`_check_params` validates them all before
    #: any work, and an error names the parameter, its value and what is allowed
    _parameter_constraints: ClassVar[dict] = {}

    def _check_params(self):
        """Every parameter against ``_parameter_constraints`` (:func:`mkclust._params.validate_params`),
        and n_clusters = 2 for a ``two_class_only`` estimator; an estimator with checks that involve
        several parameters extends this. What it accepts, ``fit`` accepts (on data it can fit)."""
        validate_params(self, self._parameter_constraints)
        if self.two_class_only and int(self.n_clusters) != 2:
            raise ValueError(f"{type(self).__name__} clusters into two classes only, got n_clusters={self.n_clusters}")

    @classmethod
    def load_compiled(cls) -> None:
        """Load (on a machine's first call: compile) the numba loops this estimator's fits run, so
        that a job can do it before it times its fits; without it, the first fit of a process
        loads them. Nothing for an estimator without compiled loops."""

    @classmethod
    def declines(cls, n: int, params: dict) -> bool:
        """True when a fit on n samples with these parameters is refused without work (an N/A record,
        :class:`NotFinished`): no memory and no time to plan for."""
        return False

    @classmethod
    def fit_seconds(cls, n: int, params: dict, typical: bool = False, input_rank: int | None = None) -> float:
        """Estimated seconds of one fit on n samples on one core: the resource model's bound (before
        its safety factor), or with ``typical`` the calibrated typical time (``cost.typical_at_1000``,
        times ``n_init`` where ``cost.restarts``). ``input_rank``: the features per kernel of the
        input where the bank is built as Nystroem features (None: Gram matrices), for estimators
        whose cost depends on it."""
        if cls.declines(n, params):
            return 0.0
        scale = (n / 1000) ** cls.cost.exponent
        if not typical or cls.cost.typical_at_1000 is None:
            return cls.cost.seconds_at_1000 * scale
        restarts = params.get("n_init", default_params(cls).get("n_init", 1)) if cls.cost.restarts else 1
        return cls.cost.typical_at_1000 * scale * restarts

    def __sklearn_tags__(self):
        """scikit-learn's tags: a kernel estimator's input is pairwise (n, n), as for
        ``metric="precomputed"``; sparse input is accepted (densified)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.input_kind in ("kernel", "kernels")
        tags.input_tags.sparse = True
        return tags

    def _validate_kernel(self, K) -> np.ndarray:
        """The parameters (:meth:`_check_params`), then one (n, n) kernel (a bank for ``kernels``
        estimators), checked; and n_clusters checked against n. Sets ``n_features_in_`` to n (the
        columns of a precomputed kernel, as scikit-learn's pairwise estimators)."""
        self._check_params()
        low = as_low_rank(K)
        if low is not None:
            return self._validate_low_rank(low)
        K = check_kernels(K, allow_multiple=self.input_kind == "kernels", psd=self.requires_psd)
        self._check_n_clusters(K.shape[1])
        self.n_features_in_ = int(K.shape[2])
        return K if self.input_kind == "kernels" else K[0]

    def _validate_low_rank(self, K):
        """A low-rank bank (PSD by construction): a bank for ``kernels`` estimators, one kernel (a
        combined view, or a bank of one) for the others; a clear error for an estimator that needs the
        n x n matrices."""
        n = K.n_samples
        if not self.takes_low_rank:
            gib = (K.n_kernels if K.ndim == 3 else 1) * n * n * 8 / 2**30
            raise ValueError(f"{type(self).__name__} needs dense kernels; this low-rank bank would take {gib:.3g} GiB "
                             f"as Gram matrices (n = {n}): pass K.dense() where that fits")
        if self.input_kind == "kernels" and K.ndim != 3:
            raise ValueError(f"{type(self).__name__} takes a bank of kernels; got one combined low-rank kernel")
        if self.input_kind != "kernels" and K.ndim == 3:
            if K.n_kernels != 1:
                raise ValueError(f"{type(self).__name__} takes a single kernel, got a low-rank bank of {K.n_kernels}; "
                                 "pass one (K.kernel(p), or K.combine(weights) such as the equal-weight mean)")
            K = K.kernel(0)
        self._check_n_clusters(n)
        self.n_features_in_ = int(n)
        return K

    @classmethod
    def low_rank_refusal(cls, params: dict) -> str | None:
        """Why a fit with ``params`` does not run on a low-rank bank (a phrase: "needs ..."), None where
        it does: the class's ``takes_low_rank``, and the parameters an estimator refuses there."""
        return None if cls.takes_low_rank else "needs the n x n kernels"

    def _check_n_clusters(self, n: int):
        """n_clusters against n samples (2 for two-class methods is :meth:`_check_params`'s, which runs first)."""
        check_n_clusters(self.n_clusters, n)

    def _best_restart(self, run_once: Callable, objective: Callable, n_init: int | None = None, rng=None):
        """Run ``run_once(rng)`` ``n_init`` times (default ``self.n_init``) from one random stream (default
        a RandomState seeded by ``random_state``) and return the result with the lowest
        ``objective(result)``."""
        n_init = int(self.n_init) if n_init is None else int(n_init)
        if n_init < 1:
            raise ValueError(f"n_init must be >= 1, got {self.n_init}")
        rng = check_random_state(self.random_state) if rng is None else rng
        best = None
        for restart in range(n_init):
            res = run_once(rng)
            _RESTARTS.info("%s restart %d/%d: objective %.10g", type(self).__name__, restart + 1, n_init,
                           objective(res))
            if best is None or objective(res) < objective(best):
                best = res
        return best

    def _validate_features(self, X) -> np.ndarray:
        self._check_params()
        X = check_features(X)
        check_n_clusters(self.n_clusters, X.shape[0])
        self.n_features_in_ = int(X.shape[1])
        return X


def batch_groups(cls, estimators, key: tuple) -> tuple[list, list[list]]:
    """The estimators of a ``fit_batch``, checked (all of class ``cls``; every one's
    ``_check_params()`` before any fit), and their groups by the parameters named in ``key`` (runs
    that share a prepared kernel), each group in the given order."""
    estimators = list(estimators)
    if not estimators or not all(isinstance(e, cls) for e in estimators):
        raise TypeError(f"fit_batch takes a non-empty list of {cls.__name__} estimators")
    groups: dict[tuple, list] = {}
    for e in estimators:
        e._check_params()
        groups.setdefault(tuple(getattr(e, k) for k in key), []).append(e)
    return estimators, list(groups.values())


class SharedStartBatch:
    """``fit_batch`` for estimators whose ``random_state`` enters a fit only through its start (a
    k-means labelling, say), the rest being a deterministic function of (kernel, the other
    parameters, start): the runs of a batch that reach the same start are one computation, done
    once, its fitted attributes copied to the others (``shared_fit_`` True on the copies). Every
    estimator ends exactly as its own ``fit``.

    The estimator provides ``_prepare(K)`` (the checked, transformed kernel and what else the fit
    shares, for estimators equal in ``PREPARE_KEY``), ``_check_params()``, ``_start(prepared)`` (the
    start as an array; it may set the estimator's own ``START_ATTRS``, which are not copied) and
    ``_fit_from(prepared, start, start_seconds)``, which returns the fitted estimator; its ``fit``
    is ``_fit_from(P, _start(P))`` with P = ``_prepare(K)``."""

    PREPARE_KEY: tuple = ()
    START_ATTRS: tuple = ()

    def fit(self, K, y=None):
        prepared = self._prepare(K)
        t0 = time.perf_counter()
        start = self._start(prepared)
        return self._fit_from(prepared, start, time.perf_counter() - t0)

    @classmethod
    def fit_batch(cls, estimators, K, done: dict | None = None) -> list:
        """Fit several estimators on one kernel K; returns them, fitted (see the class docstring).
        ``done``: the computations of earlier calls on the same K (start key -> fitted estimator),
        shared with this one and added to, so that several calls compute what one batch would."""
        estimators, groups = batch_groups(cls, estimators, cls.PREPARE_KEY)
        done = {} if done is None else done
        for group in groups:
            prepared = group[0]._prepare(K)
            for e in group:
                t0 = time.perf_counter()
                start = np.ascontiguousarray(e._start(prepared))
                key = (repr(sorted((k, v) for k, v in e.get_params().items() if k != "random_state")),
                       start.dtype.str, start.tobytes())
                if key in done:
                    for name, value in vars(done[key]).items():
                        if name.endswith("_") and not name.startswith("_") and name not in cls.START_ATTRS:
                            setattr(e, name, copy.deepcopy(value))
                    e.shared_fit_ = True
                else:
                    done[key] = e._fit_from(prepared, start, time.perf_counter() - t0)
        return estimators


class _OverBudget(RuntimeError):
    """An iterative eigensolver's products with the operator passed its budget."""


def leading_eigenvectors(matvec, n: int, k: int, dense: Callable, dense_limit: int, v0=None, tol: float = 0.0,
                         max_products: int | None = None, min_separation: float | None = None):
    """The k leading (largest algebraic) eigenpairs of a symmetric n x n operator, descending: the
    dense ``eigh`` of ``dense()`` (the explicit matrix) up to ``dense_limit`` samples (or when k >=
    n - 1), where it is faster and exact; ``eigsh`` (Lanczos on ``matvec``, O(n^2) per product, start
    ``v0``, tolerance ``tol``) above. With ``max_products``, a Lanczos run that needs more products
    than that (a spectrum clustered at the top) stops and the dense ``eigh`` answers instead, so the
    work is bounded by the budget plus the dense solve. With ``min_separation``, the dense ``eigh``
    also answers where two of the k eigenvalues Lanczos found are closer than that times the largest
    |eigenvalue|: Lanczos from one start vector may miss copies of a (nearly) repeated eigenvalue,
    and within such an eigenspace the vectors are each solver's own choice."""
    if n > dense_limit and k < n - 1:
        count = [0]

        def counted(v):
            count[0] += 1
            if max_products is not None and count[0] > max_products:
                raise _OverBudget
            return matvec(v)

        op = scipy.sparse.linalg.LinearOperator((n, n), matvec=counted, dtype=np.float64)
        try:
            lam, vec = scipy.sparse.linalg.eigsh(op, k=k, which="LA", v0=v0, tol=tol)
        except (_OverBudget, scipy.sparse.linalg.ArpackNoConvergence):
            if max_products is None:      # no budget asked for: ARPACK's own failure is the caller's
                raise
            logging.getLogger(__name__).info("eigsh: %d products without converging (budget %s, n = %d, k = %d): "
                                             "the dense eigensolver instead", count[0], max_products, n, k)
        else:
            order = np.argsort(lam)[::-1]
            lam, vec = lam[order], vec[:, order]
            spacing = float(np.min(-np.diff(lam))) if k > 1 else np.inf
            if min_separation is None or spacing > min_separation * np.abs(lam).max():
                return lam, vec
            logging.getLogger(__name__).info("eigsh: two of the %d eigenvalues %.3g apart (n = %d): the dense "
                                             "eigensolver instead", k, spacing, n)
    lam, vec = top_eigh(dense(), k)
    order = np.argsort(lam)[::-1]
    return lam[order], vec[:, order]


def check_affinity(W: np.ndarray, negative: str, allow_keep: bool = False) -> np.ndarray:
    """An affinity matrix for spectral methods must be non-negative. ``negative="error"`` raises on
    negative entries (beyond rounding), ``"clip"`` sets them to 0; ``"keep"`` keeps them, where the
    caller's embedding allows them (``allow_keep``: the unnormalised Laplacian)."""
    if allow_keep and negative == "keep":
        return W
    if negative not in ("error", "clip"):
        allowed = "'error', 'clip' or 'keep'" if allow_keep else "'error' or 'clip'"
        raise ValueError(f"negative must be {allowed}, got {negative!r}")
    mn, mx = W.min(), np.abs(W).max()
    if mn < -1e-12 * max(mx, 1e-300):
        if negative == "error":
            raise ValueError(
                f"affinity has negative entries (min {mn:.3g}); spectral clustering needs a "
                "non-negative affinity: use a non-negative kernel or pass negative='clip'"
            )
    return np.maximum(W, 0.0) if mn < 0 else W
