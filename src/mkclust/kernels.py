"""Named kernel banks and the container that stores them.

A *bank* is a named, documented list of kernels (:data:`BANKS`, one :class:`BankSpec` each);
:func:`build_bank` computes it from data with a single Gram product ``X X'`` (one BLAS call), from
which every squared-distance, polynomial and Gaussian kernel of the bank is derived elementwise
(:mod:`mkclust.kernel_functions`), or, for large n, as Nystroem features from landmarks. A
:class:`KernelBank` holds the result as Gram matrices or low-rank features and is the ``.npz``
file contract of ``data/kernels/`` (``docs/architecture.md``). The kernel functions are re-exported
here, so ``from mkclust.kernels import gaussian_kernel`` keeps working.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from mkclust._bank_options import check_bank_options
from mkclust._factor_banks import FEATURE_NORMALIZATIONS, landmark_factors, nystroem_features  # noqa: F401
from mkclust._io import atomic_savez, read_npz
from mkclust._validation import check_features
from mkclust.kernel_functions import (  # noqa: F401  (re-exported: the public kernel functions)
    GAUSS_REFERENCES, GAUSSIAN_CONVENTIONS, NORMALIZATIONS, PREPROCESS, _normalize, _row_sq_norms, _symmetrize,
    apply_preprocess,
    center_kernel, combine, cosine_kernel, feature_map, gaussian_from_sqdist, gaussian_kernel,
    gaussian_scale, gram, linear_kernel, normalize_centered_trace, normalize_trace,
    normalize_unit_diagonal, polynomial_from_gram, polynomial_kernel, principal_directions,
    rescale_feature_sqdist, rescale_max, sq_dists_from_gram,
)


@dataclass
class KernelBank:
    """A list of kernels on the same n samples: ``kind="gram"`` holds ``K`` (m, n, n);
    ``kind="features"`` holds ``features`` [F_0, ..., F_{m-1}], F_k (n, r_k), K_k ~= F_k F_k'."""

    kind: str
    names: list[str]
    K: np.ndarray | None = None
    features: list[np.ndarray] | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind == "gram":
            if self.K is None or self.K.ndim != 3:
                raise ValueError("a gram bank needs K of shape (m, n, n)")
            m = self.K.shape[0]
        elif self.kind == "features":
            if not self.features:
                raise ValueError("a features bank needs a non-empty list of feature matrices")
            m = len(self.features)
        else:
            raise ValueError(f"kind must be 'gram' or 'features', got {self.kind!r}")
        if len(self.names) != m:
            raise ValueError(f"{len(self.names)} names for {m} kernels")

    @property
    def n_kernels(self) -> int:
        return len(self.names)

    @property
    def n_samples(self) -> int:
        return self.K.shape[1] if self.kind == "gram" else self.features[0].shape[0]

    def kernel(self, k: int) -> np.ndarray:
        """The k-th Gram matrix (F_k F_k' for a features bank), without forming the others."""
        if self.kind == "gram":
            return self.K[k]
        F = self.features[k]
        return _symmetrize(F @ F.T)

    def gram(self) -> np.ndarray:
        """Gram matrices (m, n, n) (computed as F F' for a features bank)."""
        if self.kind == "gram":
            return self.K
        return np.stack([self.kernel(k) for k in range(self.n_kernels)])

    def feature_list(self, rank: int | None = None, energy: float | None = None) -> list[np.ndarray]:
        """Feature matrices F_k (from an eigendecomposition for a gram bank)."""
        if self.kind == "features":
            return self.features
        return [feature_map(K, rank=rank, energy=energy) for K in self.K]

    def save(self, path) -> None:
        """Write the bank ``.npz`` contract (docs/architecture.md) atomically."""
        arrays = {"kind": np.array(self.kind), "names": np.array(self.names, dtype=str),
                  "meta": np.array(json.dumps(self.meta))}
        if self.kind == "gram":
            arrays["K"] = self.K
        else:
            arrays.update({f"F_{k}": F for k, F in enumerate(self.features)})
        atomic_savez(path, **arrays)

    @classmethod
    def load(cls, path) -> "KernelBank":
        with read_npz(path, "kernel bank (.npz)") as z:
            kind = str(z["kind"])
            names = [str(s) for s in z["names"]]
            meta = json.loads(str(z["meta"]))
            if kind == "gram":
                return cls(kind, names, K=z["K"], meta=meta)
            return cls(kind, names, features=[z[f"F_{k}"] for k in range(len(names))], meta=meta)


def _bank_mkc3(X, G, D, d: int = 2, sigma: float | None = None, widths: Sequence[float] | None = None,
               normalize: str = "center_trace"):
    """MKC paper Sect. 5.2: K1 = x'y, K2 = (1 + x'y)^d, K3 = exp(-||x-y||^2 / 2 sigma).

    The paper gives neither d nor sigma. Defaults (our choice): d = 2, sigma = the mean squared
    pairwise distance (over i != j). ``widths`` replaces K3 by one Gaussian per entry w, sigma = w
    times that mean (``widths=[1]`` is the default K3): MKC weights the widths itself, so no width is
    picked by looking at labels; the configurations use w in {1, 1/2, 1/4, 1/8} on z-scored features
    (docs/papers.md, "MKC"). The beta-weighted regulariser of problem (2.6) compares kernels
    on one scale, so each is normalised; the paper does not say how. Default (our choice):
    ``center_trace``, the centred kernel has trace n (:func:`normalize_centered_trace`), because MKC
    centres its features (kernel PCA) and its bias absorbs the mean. Plain trace normalisation
    favours the linear kernel on ringnorm, where the wide Gaussian kernel keeps much of its trace in
    the constant direction (measured on ringnorm n = 1000, C = 30, rank 50: MKC acc 0.526 with beta
    on the linear kernel and 100 rounds with ``trace``; 0.953 with beta_3 = 0.95 in 13 rounds with
    ``center_trace``). ``normalize="trace"`` or ``"none"`` give the alternatives.
    """
    if sigma is not None and widths is not None:
        raise ValueError("bank mkc3 takes sigma or widths, not both")
    mean = float(D.sum() / max(D.size - min(D.shape), 1))  # mean over i != j (self pairs on D's diagonal)
    sigmas = [float(sigma)] if sigma is not None else [float(w) * mean for w in (widths or [1.0])]
    if not sigmas or min(sigmas) <= 0:
        raise ValueError(f"bank mkc3: Gaussian widths must be positive, got {widths if sigma is None else sigma}")

    def kernels():  # one at a time, so build_bank holds a single temporary
        yield G
        yield polynomial_from_gram(G, 1.0, d)
        for s_ in sigmas:
            yield gaussian_from_sqdist(D, s_, "mkc")

    names = ["linear", f"poly(a=1,b={d})"] + [f"gauss(mkc,sigma={s_:.6g})" for s_ in sigmas]
    info = {"d": d, "sigma": sigmas[0] if len(sigmas) == 1 else sigmas, "normalize": normalize,
            "gaussian_scales": [None, None] + [gaussian_scale(D, s_, "mkc") for s_ in sigmas]}
    if widths is not None:
        info["widths"] = [float(w) for w in widths]
    return kernels(), names, info


RMKKM_T0 = (0.01, 0.05, 0.1, 1.0, 10.0, 50.0, 100.0)


def _bank_rmkkm12(X, G, D, t0: Sequence[float] = RMKKM_T0, normalize: str = "unit_diag"):
    """RMKKM paper Sect. 4.3, built as the authors' public code builds it (github.com/csliangdu/RMKKM): seven
    Gaussian kernels exp(-D / (2 (t0 sqrt(max D))^2)), t0 in {0.01, 0.05, 0.1, 1, 10, 50, 100};
    four polynomial kernels (a + x'y)^b, a in {0, 1}, b in {2, 4}; the linear kernel, which after
    the normalisation K_ij / sqrt(K_ii K_jj) is the paper's cosine kernel. The paper's extra
    "rescaled to [0, 1]" is not in the code and is not applied (``normalize`` can change that).
    Note: with t0 = 50 and 100 the Gaussian kernels are numerically constant 1, as in the code.
    The authors' data files are row-normalised first: use ``preprocess="unit"`` (or
    ``"zscore_unit"`` for YALE and ORL) to match them.
    """
    polys = [(a, b) for a in (0.0, 1.0) for b in (2, 4)]
    names = [f"gauss(rmkkm,t0={t:g})" for t in t0] + [f"poly(a={a:g},b={b})" for a, b in polys] + ["cosine"]
    kernels = itertools.chain((gaussian_from_sqdist(D, t, "rmkkm") for t in t0),
                              (polynomial_from_gram(G, a, b) for a, b in polys), [G])
    return kernels, names, {"t0": list(t0), "normalize": normalize,
                            "gaussian_scales": [gaussian_scale(D, t, "rmkkm") for t in t0] + [None] * 5}


SCMK_T = (0.01, 0.05, 0.1, 1.0, 10.0, 50.0, 100.0)


def _bank_scmk12(X, G, D, t: Sequence[float] = SCMK_T, normalize: str = "max"):
    """SCMK paper, Experiment Setup: seven Gaussian kernels exp(-D / (t d_max^2)), t in
    {0.01, 0.05, 0.1, 1, 10, 50, 100}; the linear kernel x'y; four polynomial kernels (a + x'y)^b,
    a in {0, 1}, b in {2, 4}; "all kernels are rescaled to [0, 1] by dividing each element by the
    largest pair-wise squared distance".

    That sentence cannot hold literally (dividing by a distance does not map onto [0, 1]). Our
    choice, ``normalize="max"``: divide each kernel by its largest entry, a positive rescaling (PSD
    kept) after which every entry lies in [0, 1] for the non-negative kernels and the largest is 1.
    ``normalize="feature_sqdist"`` is the literal reading (divide by the largest squared distance
    the kernel induces). The 12 YALE kernels a later paper by the SCMK authors ships equal the
    ``rmkkm12`` bank to 1e-15, which reproduces their numbers more closely.
    """
    polys = [(a, b) for a in (0.0, 1.0) for b in (2, 4)]
    names = [f"gauss(scmk,t={ti:g})" for ti in t] + ["linear"] + [f"poly(a={a:g},b={b})" for a, b in polys]
    kernels = itertools.chain((gaussian_from_sqdist(D, ti, "scmk") for ti in t), [G],
                              (polynomial_from_gram(G, a, b) for a, b in polys))
    return kernels, names, {"t": list(t), "normalize": normalize,
                            "gaussian_scales": [gaussian_scale(D, ti, "scmk") for ti in t] + [None] * 5}


GAUSS_GRID_WIDTHS = (0.25, 0.5, 1.0, 2.0, 4.0)


def _bank_gauss_grid(X, G, D, widths: Sequence[float] = GAUSS_GRID_WIDTHS,
                     reference: str = "mean", normalize: str = "none", linear: bool = False):
    """Gaussian kernels exp(-D / (2 sigma^2)) with sigma = w * sqrt(ref) for each w in ``widths``;
    ref is the mean (default), median or max squared pairwise distance over i != j, or 1 for
    ``reference="none"`` (widths are then absolute sigmas). ``linear=True`` puts the linear kernel
    x'y first (the ODMC protocol: "both the linear and Gaussian kernels are used").

    ``reference="mean_distance"``: ref is the mean of the distances themselves, not squared: the ODMC
    paper's sentence read word for word ("sigma is picked from {0.25 sqrt(gamma), ..., 4 sqrt(gamma)},
    where gamma is the average distance between instances"). The protocol's default, the mean squared
    distance, keeps sigma in the features' units; on the ODMC paper's sets the literal reading's sigmas
    are 0.42-0.90 of it, about one step of the width grid narrower (docs/papers.md, ODMC)."""
    off = D[~np.eye(*D.shape, dtype=bool)]  # square, or a Nystroem block with the self pairs on its diagonal
    if reference not in GAUSS_REFERENCES:
        raise ValueError(f"reference must be one of {sorted(GAUSS_REFERENCES)}, got {reference!r}")
    ref = float(GAUSS_REFERENCES[reference](off)) if off.size else 1.0
    sigmas = [float(w) * np.sqrt(ref) for w in widths]
    kernels = (gaussian_from_sqdist(D, s, "sigma") for s in sigmas)
    names = [f"gauss(w={w:g},ref={reference})" for w in widths]  # sigma = w * sqrt(ref)
    if linear:
        kernels, names = itertools.chain([G], kernels), ["linear"] + names
    scales = [None] * bool(linear) + [gaussian_scale(D, s, "sigma") for s in sigmas]
    return kernels, names, {"widths": list(map(float, widths)), "reference": reference, "reference_value": ref,
                            "sigmas": sigmas, "normalize": normalize, "linear": bool(linear), "gaussian_scales": scales}


def _view_columns(X, views, bank: str) -> list[tuple[int, int, str]]:
    """(start, stop, name) of each view block: ``views`` as ``[start, stop]`` pairs or dicts with
    ``name``, ``start``, ``stop`` (the ``views`` entry of a multi-view Dataset's meta)."""
    if not views:
        raise ValueError(f"bank {bank!r} needs the option views=[...] (the dataset's view blocks)")
    out = []
    for v, view in enumerate(views):
        if isinstance(view, dict):
            name, start, stop = view.get("name", f"view{v}"), int(view["start"]), int(view["stop"])
        else:
            (start, stop), name = view, f"view{v}"
        if not (0 <= start < stop <= X.shape[1]):
            raise ValueError(f"view {name!r} columns [{start}, {stop}) out of range for d={X.shape[1]}")
        out.append((start, stop, name))
    return out


def _views_linear(X, G, D, views=None, normalize: str = "none"):
    """One linear kernel per view (the GUMKL paper's setup, Sect. 5: "the linear kernel function was
    applied on the attribute vectors of each modality"). ``views`` lists the column blocks
    (:func:`_view_columns`)."""
    blocks = _view_columns(X, views, "views_linear")
    kernels = (gram(X[:, a:b]) for a, b, _ in blocks)
    return kernels, [f"linear({name})" for *_, name in blocks], {"views": list(views), "normalize": normalize}


def _views_lg(X, G, D, views=None, normalize: str = "unit_diag"):
    """Two kernels per view, the linear one and a Gaussian exp(-||x - y||^2 / (2 sigma^2)) with sigma^2
    the view's mean squared distance over i != j (the usual width; the benchmark's multi-view bank: a
    kernel per view, as multiple kernel clustering is meant to be used), each with a unit diagonal by
    default (the views' scales differ by orders of magnitude)."""
    blocks = _view_columns(X, views, "views_lg")

    def kernels():   # per view the gauss_grid bank of one width (w = 1, the mean reference) with the linear first
        for a, b, _ in blocks:
            Gv = gram(X[:, a:b])
            yield from _bank_gauss_grid(X[:, a:b], Gv, sq_dists_from_gram(Gv), widths=(1.0,), linear=True)[0]

    names = [f"{k}({name})" for *_, name in blocks for k in ("linear", "gauss")]
    return kernels(), names, {"views": list(views), "normalize": normalize}


@dataclass(frozen=True)
class BankSpec:
    """One kernel bank of the registry: everything the workflow needs to know about it.

    ``build(X, G, D, **options)`` returns (kernels, names, info) from the data X, its Gram product G
    and squared distances D (None for a ``per_view`` bank); ``size(options)`` is the number of
    kernels it yields, known without data, or None where it depends on the data; a ``per_view``
    bank works on column blocks of X (the data set's ``meta["views"]`` unless its ``views`` option
    gives them), needs no shared Gram product and cannot be built from landmarks."""

    build: Callable
    size: Callable[[dict], int | None]
    per_view: bool = False


#: the named kernel banks: one entry each (a new bank is a builder and one line here; tests/workflow/test_planning.py
#: checks every entry's size against what it builds)
BANKS: dict[str, BankSpec] = {
    "mkc3": BankSpec(_bank_mkc3, lambda o: 2 + (len(o["widths"]) if o.get("widths") else 1)),
    "rmkkm12": BankSpec(_bank_rmkkm12, lambda o: len(o.get("t0", RMKKM_T0)) + 5),
    "scmk12": BankSpec(_bank_scmk12, lambda o: len(o.get("t", SCMK_T)) + 5),
    "gauss_grid": BankSpec(_bank_gauss_grid,
                           lambda o: len(o.get("widths", GAUSS_GRID_WIDTHS)) + bool(o.get("linear", False))),
    "views_linear": BankSpec(_views_linear, lambda o: len(o["views"]) if o.get("views") else None, per_view=True),
    "views_lg": BankSpec(_views_lg, lambda o: 2 * len(o["views"]) if o.get("views") else None, per_view=True),
}
BANK_NAMES = tuple(sorted(BANKS))


def bank_size(name: str, **options) -> int | None:
    """How many kernels bank ``name`` yields with these options, known without data; None where it
    depends on the data (a ``per_view`` bank without explicit views)."""
    return _spec(name).size(options)


def _spec(name: str) -> BankSpec:
    if name not in BANKS:
        raise ValueError(f"unknown kernel bank {name!r}; known banks: {', '.join(BANK_NAMES)}")
    return BANKS[name]


def nystroem_landmarks(n: int, landmarks: int | None, landmarks_above: int | None = 0) -> int | None:
    """The number of landmarks a bank of n samples is built from as Nystroem features (``landmarks``,
    where n exceeds both it and ``landmarks_above``), or None for Gram matrices."""
    if landmarks is not None and n > max(int(landmarks), int(landmarks_above or 0)):
        return int(landmarks)
    return None


def build_bank(name: str, X, *, preprocess: str | None = "none", rank: int | None = None,
               energy: float | None = None, landmarks: int | None = None, landmarks_above: int = 0,
               landmark_seed: int = 0, factor_dtype: str = "float64", fourier: int | None = None,
               **options) -> KernelBank:
    """Compute the named kernel bank on data X (n, d), dense or scipy-sparse.

    ``preprocess`` transforms X first (:data:`PREPROCESS`); ``options`` are the bank's own (see
    each bank's docstring, e.g. ``d``/``sigma`` for ``mkc3``, ``widths`` for ``gauss_grid``,
    ``views`` for a per-view bank such as ``views_linear``, ``normalize`` for all). With ``rank`` or ``energy`` the bank
    is returned as low-rank features (``kind="features"``, see :func:`feature_map`).

    With ``landmarks`` (and n > max(``landmarks``, ``landmarks_above``)) no n x n matrix is formed:
    the bank is returned as Nystroem features (:func:`nystroem_features`) from that many landmarks
    drawn uniformly without replacement (``landmark_seed``), then normalised and truncated to
    ``rank`` / ``energy`` as above. Data-dependent kernel parameters (the mean or largest squared
    distance of a Gaussian width) are then estimated over the (sample, landmark) pairs.

    With ``fourier`` (and landmarks) each Gaussian kernel of the bank is that many random Fourier
    features instead (:mod:`mkclust._factor_banks`: no eigendecomposition, an error in each entry of
    O(1 / sqrt(fourier)) whatever the kernel's spectrum), its width estimated on the landmark block.

    ``factor_dtype="float32"`` stores a features bank's factors in float32: half the memory and about
    half the time of every product of the low-rank estimators (:mod:`mkclust.lowrank`), their results
    within float32 rounding; a Gram bank is unaffected.
    """
    spec = _spec(name)
    check_bank_options(name, options, {"rank": rank, "energy": energy, "landmarks": landmarks,
                                       "landmarks_above": landmarks_above, "landmark_seed": landmark_seed,
                                       "factor_dtype": factor_dtype, "fourier": fourier})
    bank = _build(name, spec, X, preprocess, rank, energy, landmarks, landmarks_above, landmark_seed, options,
                  fourier)
    if bank.kind == "features" and factor_dtype == "float32":
        bank.features = [F.astype(np.float32) for F in bank.features]
        bank.meta["factor_dtype"] = "float32"
    return bank


def _build(name, spec, X, preprocess, rank, energy, landmarks, landmarks_above, landmark_seed, options,
           fourier=None) -> KernelBank:
    """:func:`build_bank` but the factors' dtype."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not np.isfinite(X.data).all():
            raise ValueError("X contains NaN or infinite values")
    else:
        X = check_features(X)
    prep = "none" if preprocess is None else preprocess
    X = apply_preprocess(X, prep)
    n = X.shape[0]
    if nystroem_landmarks(n, landmarks, landmarks_above) is not None:
        return _nystroem_bank(name, X, prep, int(landmarks), int(landmark_seed), rank, energy, options, fourier)
    # a per-view bank works per column block; every other bank shares one Gram product
    G, D = (None, None) if spec.per_view else (gram(X), None)
    if G is not None:
        D = sq_dists_from_gram(G)
    kernels, names, info = _call_bank(name, X, G, D, options)
    how = info.get("normalize", "none")
    K = np.empty((len(names), n, n))  # one allocation; each kernel is written into its slot
    for k, mat in enumerate(kernels):
        K[k] = _normalize(mat, how)
    meta = {"bank": name, "preprocess": prep, "n_samples": int(K.shape[1]), **info}
    if rank is None and energy is None:
        return KernelBank("gram", names, K=K, meta=meta)
    feats, infos = [], []
    for k in K:
        F, inf = feature_map(k, rank=rank, energy=energy, return_info=True)
        feats.append(F)
        infos.append({"rank": inf["rank"], "retained_energy": inf["retained_energy"]})
    meta.update({"rank": rank, "energy": energy, "spectrum": infos})
    return KernelBank("features", names, features=feats, meta=meta)


def _call_bank(name, X, G, D, options):
    try:
        return BANKS[name].build(X, G, D, **options)
    except TypeError as exc:
        raise ValueError(f"bad option for kernel bank {name!r}: {exc}") from None


def _nystroem_bank(name, X, prep, m, seed, rank, energy, options, fourier=None) -> KernelBank:
    """:func:`build_bank` for a large n: every kernel of the bank as Nystroem features from m landmarks
    (:func:`mkclust._factor_banks.landmark_factors`), its Gaussians as random Fourier features with
    ``fourier``."""
    if _spec(name).per_view:
        raise ValueError(f"bank {name} has explicit features per view; it needs no landmarks")
    feats, names, info, infos, L = landmark_factors(name, X, m, seed, rank, energy,
                                                    lambda Xo, G, D: _call_bank(name, Xo, G, D, options), fourier)
    meta = {"bank": name, "preprocess": prep, "n_samples": int(X.shape[0]), **info, "rank": rank, "energy": energy,
            "spectrum": infos, "nystroem": {"landmarks": m, "seed": seed, "indices": L.tolist()}}
    if fourier is not None:
        meta["fourier"] = {"features": int(fourier),
                           "kernels": [names[p] for p, sc in enumerate(info.get("gaussian_scales") or []) if sc]}
    return KernelBank("features", names, features=feats, meta=meta)
