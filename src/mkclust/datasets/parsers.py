"""Parsers for the raw formats the papers' data sets are published in.

Each returns plain arrays; the loaders in :mod:`mkclust.datasets.paper` turn them into a
:class:`~mkclust.datasets.Dataset` (class selection, missing values, encodings).

- ARFF (Weka): :func:`read_arff`, through ``scipy.io.arff``. Numeric attributes become floats,
  nominal ones their **code**: the 0-based position of the value in the attribute's declaration
  (``{no, yes}`` -> 0, 1). Missing values (``?``) are NaN. ``nominal="onehot"`` instead expands each
  nominal feature into one 0/1 column per declared value (a missing value gives a row of NaN).
- LIBSVM / svmlight: :func:`read_libsvm`, through ``sklearn.datasets.load_svmlight_file``.
- MATLAB ``.mat``: :func:`read_mat`, through ``scipy.io.loadmat``; sparse matrices stay sparse.
- KEEL ``.dat``: :func:`read_keel`, with or without the ``@relation/@attribute/@data`` header; the
  class is the last column; ``?`` and ``<null>`` are missing.
- MNIST IDX: :func:`read_idx` (raw or gzip, told apart by the gzip magic bytes).
- UCI text: :func:`read_table`, comma- or whitespace-separated numbers with ``?`` for missing.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp

MISSING = ("?", "<null>", "")


@dataclass
class Table:
    """A parsed attribute table: ``data`` float (n, a) with NaN for missing values, the attribute
    ``names``, and for each attribute its declared nominal values (None for numeric ones)."""

    data: np.ndarray
    names: list[str]
    nominal: list[list[str] | None]

    def column(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no attribute {name!r}; attributes: {', '.join(self.names)}") from None

    def values(self, name: str) -> np.ndarray:
        """A nominal column as its declared strings (None where missing)."""
        j = self.column(name)
        cats = self.nominal[j]
        if cats is None:
            raise ValueError(f"attribute {name!r} is numeric")
        col = self.data[:, j]
        out = np.empty(col.shape, dtype=object)
        ok = ~np.isnan(col)
        out[ok] = np.asarray(cats, dtype=object)[col[ok].astype(np.int64)]
        return out

    def drop(self, names) -> "Table":
        keep = [j for j, nm in enumerate(self.names) if nm not in set(names)]
        return Table(self.data[:, keep], [self.names[j] for j in keep], [self.nominal[j] for j in keep])


def codes(values, categories) -> np.ndarray:
    """Position of each value in ``categories`` (float, NaN where absent: missing or undeclared)."""
    values = np.asarray(values, dtype=object).astype(str)
    cats = np.asarray(list(categories), dtype=object).astype(str)
    if cats.size == 0:
        return np.full(values.shape, np.nan)
    order = np.argsort(cats, kind="stable")
    pos = np.clip(np.searchsorted(cats[order], values), 0, cats.size - 1)
    return np.where(cats[order][pos] == values, order[pos].astype(np.float64), np.nan)


def read_arff(path: str | os.PathLike) -> Table:
    """Read a dense ARFF file; nominal values are coded by declaration order, ``?`` is NaN."""
    records, meta = scipy.io.arff.loadarff(str(path))
    names = list(meta.names())
    n = len(records)
    data = np.empty((n, len(names)), dtype=np.float64)
    nominal: list[list[str] | None] = []
    for j, name in enumerate(names):
        kind, cats = meta[name]
        col = records[name]
        if kind == "nominal":
            cats = [str(c) for c in cats]
            strs = np.char.strip(np.char.decode(col.astype(bytes), "utf-8"))
            data[:, j] = codes(strs, cats)  # '?' (or an undeclared value) is missing
            nominal.append(cats)
        elif kind == "numeric":
            data[:, j] = col.astype(np.float64)
            nominal.append(None)
        else:
            raise ValueError(f"{path}: attribute {name!r} has unsupported ARFF type {kind!r}")
    return Table(data, names, nominal)


def encode_features(table: Table, nominal: str = "codes") -> tuple[np.ndarray, list[str]]:
    """The feature matrix of ``table``: nominal attributes as codes (default) or one-hot columns."""
    if nominal == "codes":
        return table.data.copy(), list(table.names)
    if nominal != "onehot":
        raise ValueError(f"nominal must be 'codes' or 'onehot', got {nominal!r}")
    blocks, names = [], []
    for j, (name, cats) in enumerate(zip(table.names, table.nominal)):
        col = table.data[:, j]
        if cats is None:
            blocks.append(col[:, None])
            names.append(name)
            continue
        onehot = (col[:, None] == np.arange(len(cats))[None, :]).astype(np.float64)
        onehot[np.isnan(col)] = np.nan
        blocks.append(onehot)
        names += [f"{name}={c}" for c in cats]
    return np.concatenate(blocks, axis=1), names


def read_libsvm(paths, n_features: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Read one or more LIBSVM/svmlight files into one sparse matrix (rows in file order)."""
    from sklearn.datasets import load_svmlight_files

    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    parts = load_svmlight_files([str(p) for p in paths], n_features=n_features)
    Xs, ys = parts[0::2], parts[1::2]
    return sp.vstack(Xs, format="csr"), np.concatenate(ys)


def read_mat(path: str | os.PathLike) -> dict:
    """The variables of a MATLAB (v5) file; sparse matrices stay scipy-sparse."""
    return {k: v for k, v in scipy.io.loadmat(str(path)).items() if not k.startswith("__")}


def mat_views(cell) -> list:
    """The entries of a MATLAB 1 x V cell array of views (each n x d_v)."""
    return [cell.flat[v] for v in range(cell.size)]


def read_keel(path: str | os.PathLike) -> Table:
    """Read a KEEL ``.dat`` file with or without its header. Columns are comma-separated, the class
    last. With a header, nominal attributes (``{a, b}``) are coded by declaration order; without one,
    a column is nominal when any of its values is not a number, coded by sorted value."""
    names: list[str] = []
    declared: list[list[str] | None] = []
    rows: list[list[str]] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            if s.startswith("@"):
                low = s.lower()
                if low.startswith("@attribute"):
                    body = s.split(None, 1)[1]
                    if "{" in body:
                        name, vals = body.split("{", 1)
                        declared.append([v.strip() for v in vals.rstrip("}").split(",")])
                    else:
                        name = body.split()[0]
                        declared.append(None)
                    names.append(name.strip())
                continue
            rows.append([c.strip() for c in s.split(",")])
    if not rows:
        raise ValueError(f"{path}: no data rows")
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise ValueError(f"{path}: rows have different numbers of columns")
    if names and len(names) != width:
        raise ValueError(f"{path}: header declares {len(names)} attributes, rows have {width} columns")
    names = names or [f"a{j}" for j in range(width - 1)] + ["class"]
    declared = declared or [None] * width
    raw = np.array(rows, dtype=object)
    data = np.empty((len(rows), width), dtype=np.float64)
    nominal: list[list[str] | None] = []
    for j in range(width):
        col = raw[:, j]
        missing = np.isin(col, MISSING)
        nums = pd.to_numeric(pd.Series(col[~missing]), errors="coerce")
        if declared[j] is None and not nums.isna().any():
            data[:, j] = np.nan
            data[~missing, j] = nums.to_numpy(np.float64)
            nominal.append(None)
            continue
        cats = declared[j] or sorted(set(col[~missing]))
        data[:, j] = np.where(missing, np.nan, codes(col, cats))
        nominal.append(list(cats))
    return Table(data, names, nominal)


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an MNIST IDX file (unsigned-byte data), gzip-compressed or not."""
    with open(path, "rb") as fh:
        head = fh.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        buf = fh.read()
    zero, dtype_code, ndim = buf[0] << 8 | buf[1], buf[2], buf[3]
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {buf[:4].hex()})")
    shape = tuple(int.from_bytes(buf[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(buf, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape} but holds {data.size} values")
    return data.reshape(shape)


def read_table(path: str | os.PathLike, sep: str | None = None) -> np.ndarray:
    """Read a UCI-style numeric text table (``sep=None``: runs of whitespace) with ``?`` missing.
    Non-numeric columns (e.g. a name column) come back as NaN."""
    df = pd.read_csv(path, header=None, sep=r"\s+" if sep is None else sep, na_values=list(MISSING[:2]),
                     skipinitialspace=True, engine="python" if sep is None else "c")
    return df.apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)
