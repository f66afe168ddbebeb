"""A researcher's own data file as a :class:`~mkclust.datasets.Dataset`: the registered loader
``file`` (``load("file", path=...)``; in a configuration, ``datasets: {mine: {file: PATH}}``).

Formats, by the file's extension unless ``format`` says otherwise:

- ``csv``, ``tsv`` (and ``txt``, any delimiter pandas can sniff): a header row; the label column is
  ``label`` (or ``class``, ``y``), every other column a numeric feature;
- ``libsvm`` / ``svmlight`` (``.libsvm``, ``.svm``, ``.svmlight``): scikit-learn's reader, sparse;
- ``arff``: the label attribute as for CSV; nominal features are coded by declaration order;
- ``mat`` (MATLAB): the variables ``x`` and ``y`` name the data (default: ``X`` and the first of
  ``y``, ``Y``, ``gnd``, ``labels``), samples in rows;
- ``npz``: the arrays ``x`` and ``y`` name (default ``X`` and ``y``).

Labels may be numbers or strings (coded 0 .. c-1). A missing feature value is an error naming the
rows, unless ``missing="mean"`` (each column's mean over the samples that have it) or ``"drop"``
(the rows are left out; a missing label always drops its row then). ``views`` splits the features
into column blocks for the multi-view methods: a list of ``{name, columns: [...]}`` (CSV, ARFF: the
columns by name, each block made contiguous in that order) or ``{name, start, stop}`` (any format).
The same checks as the registered sets: finite values, at least two samples and two classes. The
file's sha256 is recorded in the data set's ``raw_files``, which the run summary shows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mkclust.datasets import DatasetSpec, register
from mkclust.datasets.download import sha256_file


class FileProblem(ValueError):
    """What is wrong with a data file, its path first."""


FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".libsvm": "libsvm", ".svm": "libsvm",
           ".svmlight": "libsvm", ".arff": "arff", ".mat": "mat", ".npz": "npz"}
LABEL_NAMES = ("label", "class", "y")
MISSING = ("error", "mean", "drop")


def read_file(path, label: str | None = None, format: str | None = None, missing: str = "error",
              views: list | None = None, x: str | None = None, y: str | None = None,
              delimiter: str | None = None):
    """Load ``path`` (see the module docstring); a ValueError names the file and what is wrong."""
    from mkclust.datasets import Dataset, view_blocks

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file {path} does not exist")
    kind = format or FORMATS.get(path.suffix.lower())
    if kind not in set(FORMATS.values()):
        raise FileProblem(f"{path}: unknown format {format or path.suffix!r}; give format: one of "
                         f"{', '.join(sorted(set(FORMATS.values())))}")
    if missing not in MISSING:
        raise FileProblem(f"{path}: missing must be one of {', '.join(MISSING)}, got {missing!r}")
    try:
        if kind in ("csv", "tsv", "arff"):
            frame = _frame(path, kind, delimiter)
            X, labels, names = _from_frame(path, frame, label)
        elif kind == "libsvm":
            from sklearn.datasets import load_svmlight_file
            X, labels = load_svmlight_file(str(path))
            names = None
        elif kind == "mat":
            X, labels = _from_mat(path, x, y)
            names = None
        else:
            X, labels = _from_npz(path, x, y)
            names = None
    except FileProblem:
        raise
    except (ValueError, KeyError, OSError, UnicodeDecodeError) as exc:   # the parser's own, naming no file
        raise FileProblem(f"{path}: cannot be read as {kind} ({type(exc).__name__}: {exc})") from None
    X, labels, dropped = _missing(path, X, labels, missing)
    blocks = None
    if views:
        X, names, blocks = _views(path, X, names, views)
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        finite = np.isfinite(X.data).all()
    else:
        X = np.asarray(X, dtype=np.float64)
        finite = np.isfinite(X).all()
    if not finite:
        raise FileProblem(f"{path}: the features hold infinite values")
    if X.shape[0] < 2 or len(np.unique(labels)) < 2:
        raise FileProblem(f"{path}: clustering needs at least 2 samples and 2 classes; the file has {X.shape[0]} "
                         f"sample(s) of {len(np.unique(labels))} class(es)")
    prep = f"{kind} file {path.name}" + (f"; {dropped} row(s) with missing values dropped" if dropped and
                                          missing == "drop" else f"; {dropped} missing value(s) imputed by "
                                          "the column mean" if dropped else "")
    meta = {"preprocessing": prep, "raw_files": [{"path": str(path), "sha256": sha256_file(path),
                                                   "obtained_from": "local file"}]}
    if names is not None:
        meta["feature_names"] = list(map(str, names))
    if blocks:
        meta["views"] = view_blocks([b[0] for b in blocks], [b[1] for b in blocks])
    classes, codes = np.unique(np.asarray(labels).astype(str) if np.asarray(labels).dtype.kind in "OUS"
                               else np.asarray(labels), return_inverse=True)
    meta["class_names"] = [str(c) for c in classes]
    return Dataset(X, codes, meta)


def _frame(path: Path, kind: str, delimiter: str | None) -> pd.DataFrame:
    if kind == "arff":
        import scipy.io.arff
        records, meta = scipy.io.arff.loadarff(str(path))
        frame = pd.DataFrame(records)
        for col in frame.columns:   # nominal values come as bytes; "?" is missing
            if frame[col].dtype == object:
                frame[col] = frame[col].map(lambda v: v.decode() if isinstance(v, bytes) else v).replace("?", np.nan)
        frame.attrs["nominal"] = [c for c in frame.columns if meta[c][0] == "nominal"]
        return frame
    sep = delimiter or ("\t" if kind == "tsv" else None)
    return pd.read_csv(path, sep=sep, engine="python" if sep is None else "c")


def _from_frame(path: Path, frame: pd.DataFrame, label: str | None):
    cols = [str(c) for c in frame.columns]
    frame.columns = cols
    if label is None:
        label = next((c for c in LABEL_NAMES if c in cols), None)
        if label is None:
            raise FileProblem(f"{path}: no label column (looked for {', '.join(LABEL_NAMES)}); name it with "
                             f"label: (columns: {', '.join(cols[:12])}{' ...' if len(cols) > 12 else ''})")
    elif label not in cols:
        raise FileProblem(f"{path}: no column {label!r} (columns: {', '.join(cols[:12])}"
                         f"{' ...' if len(cols) > 12 else ''})")
    labels = frame[label].to_numpy()
    features = frame.drop(columns=[label])
    nominal = set(frame.attrs.get("nominal", [])) - {label}
    for c in nominal:   # ARFF nominal features: codes in declaration order (missing stays missing)
        features[c] = pd.Categorical(features[c]).codes.astype(float)
        features.loc[features[c] < 0, c] = np.nan
    text = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if text:
        raise FileProblem(f"{path}: column(s) {text[:6]} are not numeric; features must be numbers "
                         "(encode them, or leave the columns out of the file)")
    if features.shape[1] == 0:
        raise FileProblem(f"{path}: no feature column besides the label {label!r}")
    return features.to_numpy(dtype=np.float64), labels, list(features.columns)


def _from_mat(path: Path, x: str | None, y: str | None):
    import scipy.io
    m = scipy.io.loadmat(str(path))
    names = sorted(k for k in m if not k.startswith("__"))
    xk = x or "X"
    yk = y or next((k for k in ("y", "Y", "gnd", "labels") if k in m), None)
    if xk not in m or yk is None or yk not in m:
        wanted = repr(y) if y else "y, Y, gnd or labels"
        raise FileProblem(f"{path}: needs the data in variable {xk!r} and the labels in {wanted}; it holds "
                         f"{', '.join(names)} (give x: and y:)")
    X = m[xk]
    return (X if sp.issparse(X) else np.asarray(X, dtype=np.float64)), np.asarray(m[yk]).ravel()


def _from_npz(path: Path, x: str | None, y: str | None):
    with np.load(path, allow_pickle=False) as z:
        xk, yk = x or "X", y or "y"
        if xk not in z or yk not in z:
            raise FileProblem(f"{path}: needs arrays {xk!r} and {yk!r}; it holds {', '.join(z.files)} (give x: and y:)")
        return np.asarray(z[xk], dtype=np.float64), np.asarray(z[yk]).ravel()


def _missing(path: Path, X, labels, how: str):
    """(X, labels, how many values or rows were handled) after the ``missing`` rule."""
    labels = np.asarray(labels, dtype=object if np.asarray(labels).dtype.kind in "OUS" else None)
    no_label = pd.isna(pd.Series(labels)).to_numpy()
    if sp.issparse(X):
        gap = np.zeros(X.shape[0], dtype=bool)
        holes = np.isnan(X.data).any()
        if holes:
            raise FileProblem(f"{path}: a sparse file with missing values is not supported")
    else:
        gap = np.isnan(X).any(axis=1)
    if not gap.any() and not no_label.any():
        return X, labels, 0
    rows = np.flatnonzero(gap | no_label)
    if how == "error":
        raise FileProblem(f"{path}: {len(rows)} row(s) have missing values (first data rows: "
                         f"{', '.join(str(r + 1) for r in rows[:5])}); give missing: mean (impute each feature's "
                         "mean) or missing: drop (leave the rows out)")
    if how == "drop":
        keep = ~(gap | no_label)
        return X[keep], labels[keep], int((~keep).sum())
    keep = ~no_label   # mean: impute features; a row without a label cannot be scored and is left out
    X = X[keep].copy()
    means = np.nanmean(X, axis=0)
    if np.isnan(means).any():
        raise FileProblem(f"{path}: column(s) {np.flatnonzero(np.isnan(means)).tolist()} have no value at all")
    filled = int(np.isnan(X).sum())
    X[np.isnan(X)] = np.take(means, np.nonzero(np.isnan(X))[1])
    return X, labels[keep], filled


def _views(path: Path, X, names, views: list):
    """Features reordered so that each view is one contiguous block: (X, names, [(view, width)])."""
    d = X.shape[1]
    order, blocks = [], []
    for v, view in enumerate(views):
        if not isinstance(view, dict):
            raise FileProblem(f"{path}: a view is {{name, columns: [...]}} or {{name, start, stop}}, got {view!r}")
        name = str(view.get("name", f"view{v}"))
        if "columns" in view:
            if names is None:
                raise FileProblem(f"{path}: view {name!r} names columns, but this format has no column names; "
                                 "give start and stop")
            unknown = [c for c in view["columns"] if str(c) not in names]
            if unknown:
                raise FileProblem(f"{path}: view {name!r}: no column(s) {unknown[:6]}")
            idx = [names.index(str(c)) for c in view["columns"]]
        else:
            start, stop = int(view.get("start", -1)), int(view.get("stop", -1))
            if not 0 <= start < stop <= d:
                raise FileProblem(f"{path}: view {name!r}: columns [{start}, {stop}) are not within 0 .. {d}")
            idx = list(range(start, stop))
        order += idx
        blocks.append((name, len(idx)))
    if len(set(order)) != len(order):
        raise FileProblem(f"{path}: the views overlap; each column belongs to one view at most")
    X = X[:, order]
    return X, (None if names is None else [names[i] for i in order]), blocks


register(DatasetSpec(
    "file", read_file, "a local data file: CSV/TSV, LIBSVM/svmlight, ARFF, MATLAB .mat or .npz (X, y)",
    "the researcher's own file (its sha256 is recorded)", "", kind="local"))

