"""Embedded data sets: files that scikit-learn ships, so nothing is downloaded.

- The MKC paper's digit sets (Table 1) are subsets of the UCI optical digits test set that
  scikit-learn bundles as ``load_digits`` (1797 8x8 images, 16 grey levels): ``digits1v7`` (361),
  ``digits2v7`` (356), ``digits0689`` (713), ``digits1279`` (718), and ``digits`` (all 1797).
- ``wine`` and ``breast_cancer``: scikit-learn's bundled UCI copies.
- ``digits_views``: a multi-view version of ``digits`` with four feature views computed from the
  8x8 images (see :func:`digit_views`).
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_wine

from mkclust.datasets import Dataset, DatasetSpec, PaperShape, register, view_blocks

SKLEARN = "scikit-learn bundled copy ({fn})"
DIGITS_CITATION = ("E. Alpaydin, C. Kaynak. Optical Recognition of Handwritten Digits. UCI Machine "
                   "Learning Repository, 1998 (scikit-learn load_digits)")


def per_class_subset(y: np.ndarray, per_class: int | None, seed: int = 0) -> np.ndarray:
    """Sorted indices of a stratified random subset: ``per_class`` samples of every class (all of a
    smaller class), drawn with ``numpy.random.default_rng(seed)``; all indices for ``None``."""
    if per_class is None:
        return np.arange(y.size)
    if int(per_class) < 1:
        raise ValueError(f"per_class must be a positive integer, got {per_class}")
    rng = np.random.default_rng(seed)
    idx = [rng.choice(np.flatnonzero(y == c), min(int(per_class), int((y == c).sum())), replace=False)
           for c in np.unique(y)]
    return np.sort(np.concatenate(idx))


def _subset_note(per_class, seed) -> str:
    return "" if per_class is None else f"; {per_class} random samples per class (seed {seed})"


def _digits_subset(classes: tuple[int, ...] | None, per_class: int | None = None, seed: int = 0):
    X, y = load_digits(return_X_y=True)
    if classes is not None:
        keep = np.isin(y, classes)
        X, y = X[keep], y[keep]
    keep = per_class_subset(y, per_class, seed)
    X, y = X[keep], y[keep]
    prep = "none" if classes is None else f"classes {list(classes)} of load_digits, labels re-coded 0..c-1"
    prep += _subset_note(per_class, seed)
    return Dataset(X.astype(np.float64), y, {"preprocessing": prep,
                                             "classes_kept": None if classes is None else list(classes)})


MKC_DIGIT_SETS = {  # name: (classes kept, the MKC paper's Table 1 size)
    "digits1v7": ((1, 7), 361),
    "digits2v7": ((2, 7), 356),
    "digits0689": ((0, 6, 8, 9), 713),
    "digits1279": ((1, 2, 7, 9), 718),
}

for _name, (_cls, _n) in MKC_DIGIT_SETS.items():
    register(DatasetSpec(
        name=_name,
        loader=(lambda cls=_cls: _digits_subset(cls)),
        description=f"digits {', '.join(map(str, _cls))} (MKC paper Table 1)",
        source=SKLEARN.format(fn="load_digits"),
        citation=DIGITS_CITATION,
        paper=(PaperShape("mkc", _n, 64, len(_cls)),),
    ))

register(DatasetSpec(
    name="digits", loader=lambda per_class=None, seed=0: _digits_subset(None, per_class, seed),
    description="all ten digit classes, 8x8 images (per_class, seed: a stratified random subset)",
    source=SKLEARN.format(fn="load_digits"),
    citation=DIGITS_CITATION,
))


def _sk_loader(fn):
    def load():
        X, y = fn(return_X_y=True)
        return Dataset(X.astype(np.float64), y, {"preprocessing": "none"})
    return load


register(DatasetSpec(
    name="wine", loader=_sk_loader(load_wine), description="UCI wine recognition (3 cultivars)",
    source=SKLEARN.format(fn="load_wine"),
    citation="M. Forina et al. Wine. UCI Machine Learning Repository, 1991",
))
register(DatasetSpec(
    name="breast_cancer", loader=_sk_loader(load_breast_cancer),
    description="UCI breast cancer Wisconsin (diagnostic)", source=SKLEARN.format(fn="load_breast_cancer"),
    citation="W. Wolberg, O. Mangasarian, N. Street, W. Street. Breast Cancer Wisconsin (Diagnostic). "
             "UCI Machine Learning Repository, 1995",
))


def digit_views(images: np.ndarray) -> tuple[np.ndarray, list[dict]]:
    """Four feature views of 8x8 digit images, all computed in one vectorised pass:

    - ``pixels`` (64): the raw grey levels;
    - ``profiles`` (16): the 8 row sums followed by the 8 column sums;
    - ``gradient_hist`` (32): gradient-orientation histograms, 8 orientation bins over [0, 2 pi)
      weighted by gradient magnitude (central differences, ``np.gradient``), in each of the four
      4x4 quadrants;
    - ``pooled`` (16): 2x2 average pooling to a 4x4 image.

    Returns the concatenated matrix and the view blocks [{name, start, stop}].
    """
    imgs = np.asarray(images, dtype=np.float64).reshape(-1, 8, 8)
    n = imgs.shape[0]
    pixels = imgs.reshape(n, 64)
    profiles = np.concatenate([imgs.sum(axis=2), imgs.sum(axis=1)], axis=1)
    gy, gx = np.gradient(imgs, axis=(1, 2))
    mag = np.hypot(gx, gy)
    ang = np.mod(np.arctan2(gy, gx), 2 * np.pi)
    nbins = 8
    obin = np.minimum((ang / (2 * np.pi) * nbins).astype(np.int64), nbins - 1)
    rr, cc = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    cell = (rr // 4) * 2 + (cc // 4)  # quadrant 0..3 of each pixel
    flat = (np.arange(n)[:, None, None] * 4 + cell[None]) * nbins + obin
    grad = np.bincount(flat.ravel(), weights=mag.ravel(), minlength=n * 4 * nbins).reshape(n, 4 * nbins)
    pooled = imgs.reshape(n, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(n, 16)
    blocks = [("pixels", pixels), ("profiles", profiles), ("gradient_hist", grad), ("pooled", pooled)]
    views = view_blocks([nm for nm, _ in blocks], [B.shape[1] for _, B in blocks])
    return np.concatenate([B for _, B in blocks], axis=1), views


def _digits_views(classes=None, per_class=None, seed=0):
    """``classes``: keep these digits (labels re-coded 0..c-1 in sorted order); ``per_class`` and
    ``seed``: a stratified random subset of that many samples per class."""
    d = load_digits()
    X, views = digit_views(d.images)
    y = d.target
    prep = "four views computed from the 8x8 images (mkclust.datasets.embedded.digit_views)"
    if classes is not None:
        keep = np.isin(y, classes)
        X, y = X[keep], y[keep]
        prep += f"; classes {sorted(int(c) for c in classes)}"
    keep = per_class_subset(y, per_class, seed)
    X, y = X[keep], y[keep]
    prep += _subset_note(per_class, seed)
    return Dataset(X, y, {"views": views, "preprocessing": prep})


register(DatasetSpec(
    name="digits_views", loader=_digits_views,
    description="digits with 4 feature views: pixels, profiles, gradient histograms, pooled",
    source=SKLEARN.format(fn="load_digits") + "; views computed by mkclust",
    citation=DIGITS_CITATION,
))
