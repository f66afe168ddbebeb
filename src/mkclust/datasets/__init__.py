"""Dataset registry: ``load(name, **options) -> Dataset(X, y, meta)``.

Every data set the workflow uses is a registered name. Embedded sets need no download: they come
from files scikit-learn ships (:mod:`mkclust.datasets.embedded`) or from documented generators
(:mod:`mkclust.datasets.generators`). ``python -m mkclust.datasets --list`` prints the registry.
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from mkclust._io import atomic_savez, read_npz
from mkclust.datasets.download import fetch, local_copy


@dataclass
class Dataset:
    """Samples ``X`` (n, d) float64 (dense, or scipy-sparse for tf-idf sets), labels ``y`` int64
    coded 0..c-1, and ``meta`` (name, n, d, classes, source, citation, preprocessing, ...)."""

    X: np.ndarray
    y: np.ndarray
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if not sp.issparse(self.X):
            self.X = np.asarray(self.X, dtype=np.float64)
        self.y = np.asarray(self.y)
        if self.X.ndim != 2 or self.y.ndim != 1 or self.X.shape[0] != self.y.shape[0]:
            raise ValueError(f"X {self.X.shape} and y {self.y.shape} do not describe the same samples")
        _, self.y = np.unique(self.y, return_inverse=True)
        self.y = self.y.astype(np.int64)
        self.meta = {**self.meta, "n": self.n, "d": self.d, "classes": self.n_classes}

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        return int(self.y.max()) + 1 if self.y.size else 0

    def save(self, path) -> None:
        """Write the processed-dataset ``.npz`` contract (docs/architecture.md) atomically."""
        arrays = {"y": self.y, "meta": np.array(json.dumps(self.meta))}
        if sp.issparse(self.X):
            X = sp.csr_matrix(self.X)
            arrays.update(X_data=X.data, X_indices=X.indices, X_indptr=X.indptr,
                          X_shape=np.array(X.shape))
        else:
            arrays["X"] = self.X
        atomic_savez(path, **arrays)

    @classmethod
    def load(cls, path) -> "Dataset":
        with read_npz(path, "data set (.npz)") as z:
            meta = json.loads(str(z["meta"]))
            if "X" in z:
                X = z["X"]
            else:
                X = sp.csr_matrix((z["X_data"], z["X_indices"], z["X_indptr"]), shape=tuple(z["X_shape"]))
            return cls(X, z["y"], meta)


def view_blocks(names, widths) -> list[dict]:
    """The ``meta["views"]`` entries [{name, start, stop}] of consecutive column blocks."""
    views, start = [], 0
    for name, width in zip(names, widths):
        views.append({"name": name, "start": start, "stop": start + int(width)})
        start += int(width)
    return views


@dataclass(frozen=True)
class PaperShape:
    """The size a paper's table gives for a data set, and the loader options that build the paper's
    version (e.g. ``{"drop_constant": True}``); ``deviation`` explains a known, documented
    difference (empty when the set is rebuilt exactly)."""

    paper: str
    n: int
    d: int
    c: int
    options: tuple = ()
    deviation: str = ""

    @property
    def opts(self) -> dict:
        return dict(self.options)


@dataclass(frozen=True)
class DatasetSpec:
    """A registry entry: how to obtain a data set and what it is.

    ``kind`` is embedded | generated | download | local (a file the configuration names) |
    unavailable. A download loader takes a first
    argument ``get(path) -> Path`` that returns a verified local copy of one of ``files``.
    ``paper`` lists the sizes the papers report (checked by the tests and ``--list``).
    """

    name: str
    loader: Callable[..., Dataset]
    description: str
    source: str
    citation: str
    kind: str = "embedded"  # embedded | generated | download | local | unavailable
    files: tuple = ()
    paper: tuple = ()
    reason: str = ""  # why an unavailable set cannot be obtained


class DatasetUnavailable(RuntimeError):
    """A registered data set that cannot be obtained (the reason says why)."""


REGISTRY: dict[str, DatasetSpec] = {}


def register(spec: DatasetSpec) -> DatasetSpec:
    if spec.name in REGISTRY:
        raise ValueError(f"dataset {spec.name!r} is registered twice")
    REGISTRY[spec.name] = spec
    return spec


def list_datasets(kind: str | None = None) -> list[str]:
    """Registered names (optionally of one kind), sorted."""
    return sorted(n for n, s in REGISTRY.items() if kind is None or s.kind == kind)


def static_meta(name: str, raw_dir=None, mirror=None) -> dict:
    """What the registry knows of a data set without loading it (no download, no parsing): its
    description, source, citation, the sizes the papers give, and each raw file with its URL, sha256
    and whether a copy is present in the mirror or the raw-data folder (not verified here)."""
    if name not in REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; registered: {', '.join(list_datasets())}")
    spec = REGISTRY[name]
    rdir = default_raw_dir() if raw_dir is None else Path(raw_dir)
    files = []
    for f in spec.files:
        where = local_copy(f, rdir, mirror)
        files.append({**f.describe(), "present": None if where is None else str(where)})
    meta = {"name": spec.name, "kind": spec.kind, "description": spec.description, "source": spec.source,
            "citation": spec.citation,
            "paper": [{"paper": s.paper, "n": s.n, "d": s.d, "classes": s.c, "options": s.opts,
                       **({"deviation": s.deviation} if s.deviation else {})} for s in spec.paper],
            "raw_files": files}
    if spec.kind == "unavailable":
        meta["unavailable"] = spec.reason
    return meta


def default_raw_dir() -> Path:
    """Where downloads are kept: ``$MKCLUST_RAW_DIR``, else ``data/raw`` under the working folder."""
    return Path(os.environ.get("MKCLUST_RAW_DIR", "data/raw"))


def load(name: str, *, raw_dir=None, mirror=None, download: bool = True, **options) -> Dataset:
    """Load a registered data set. ``options`` are the loader's own (e.g. ``n`` and ``seed`` for the
    generators); an unknown name or option is a ValueError saying what exists.

    Downloadable sets take their raw files from ``mirror`` (default ``$MKCLUST_DATA_MIRROR``) or
    download them into ``raw_dir`` (default :func:`default_raw_dir`), verifying each sha256
    (``download=False``: a file that is not local raises :class:`~.download.NotLocal`). The
    meta records each raw file used, and ``flags`` where the result differs from a paper's size.
    """
    if name not in REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; registered: {', '.join(list_datasets())}")
    spec = REGISTRY[name]
    if spec.kind == "unavailable":
        raise DatasetUnavailable(f"dataset {name!r} is not obtainable: {spec.reason}")
    used: list[dict] = []
    args = ()
    if spec.kind == "download":
        files = {f.path: f for f in spec.files}
        rdir = default_raw_dir() if raw_dir is None else Path(raw_dir)

        def get(path: str) -> Path:
            local, how = fetch(files[path], rdir, mirror, download=download)
            used.append({**files[path].describe(), "obtained_from": how})
            return local
        args = (get,)
    try:
        inspect.signature(spec.loader).bind(*args, **options)
    except TypeError as exc:
        raise ValueError(f"bad option for dataset {name!r}: {exc}") from None
    ds = spec.loader(*args, **options)
    flags = list(ds.meta.get("flags", []))
    notes = list(ds.meta.get("flag_notes", []))
    for shape in spec.paper:
        if shape.opts != {k: v for k, v in options.items() if k != "seed"}:
            continue
        got, want = (ds.n, ds.d, ds.n_classes), (shape.n, shape.d, shape.c)
        for what, g, w in zip("ndc", got, want):
            if g != w:
                flags.append(f"{what}={g} ({shape.paper}: {w})")
        if got != want:
            notes.append(f"{shape.paper} reports {want[0]} x {want[1]}, {want[2]} classes: {shape.deviation}")
    ds.meta = {"name": name, "source": spec.source, "citation": spec.citation,
               "kind": spec.kind, **ds.meta, "options": options, "flags": flags, "flag_notes": notes}
    ds.meta.setdefault("preprocessing", "none")
    ds.meta["raw_files"] = used or ds.meta.get("raw_files", [])
    return ds


# registry entries (imported for their side effect)
from mkclust.datasets import embedded as _embedded  # noqa: E402,F401
from mkclust.datasets import files as _files  # noqa: E402,F401
from mkclust.datasets import generators as _generators  # noqa: E402,F401
from mkclust.datasets import paper as _paper  # noqa: E402,F401

__all__ = ["Dataset", "DatasetSpec", "PaperShape", "DatasetUnavailable", "REGISTRY", "register", "load",
           "list_datasets", "static_meta"]
