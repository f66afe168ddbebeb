"""How a method's solutions look, as metrics a table can show beside accuracy: whether a run left a
cluster of (almost) no points, and how its kernel weights spread over the bank.

A run record carries its cluster sizes (``min_cluster_size`` in the results) and, for a multiple
kernel method, the estimator's ``kernel_weights_`` (``kernel_weights``, a JSON list). From them, per run:

- ``tiny_cluster``: 1 when the smallest cluster holds at most :data:`TINY` points, else 0, so a cell
  (the mean over seeds) is the share of runs that did: a degenerate partition, whatever its accuracy;
- ``top_weight``: the largest kernel weight, the weights scaled to sum 1;
- ``effective_kernels``: (sum w)^2 / sum w^2, the inverse Simpson index of the weights: 1 when one
  kernel takes all the weight, the number of kernels when they share it equally.

The weights are each estimator's ``kernel_weights_`` as it reports them. The coefficient of kernel
k in the combined kernel is w_k for RMKKM, SCMK and MKC, but w_k^2 for MKKM (Huang et al.'s
sum w_k^2 K_k), w_k^p for GUMKL and v_k^p for AASC, so the same weights stand for a more
concentrated combination there.
A single-kernel run (no weights, or one) has no ``top_weight`` or ``effective_kernels``.
"""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pandas as pd

from mkclust.repro.reporting.tables import column_runs

#: a cluster of at most this many points counts as degenerate (``tiny_cluster``)
TINY = 2

SHAPE_METRICS = ("tiny_cluster", "top_weight", "effective_kernels")


def _weights(text) -> np.ndarray | None:
    if not isinstance(text, str) or not text:
        return None
    w = np.asarray(json.loads(text), dtype=float)
    return w if w.size > 1 and w.sum() > 0 else None


def with_shape_metrics(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` with the columns of :data:`SHAPE_METRICS` (NaN where a run does not define one), for
    a table (:func:`~mkclust.repro.reporting.tables.build_table`) that names them as metrics."""
    out = results.copy()
    if "min_cluster_size" in out.columns:
        size = out["min_cluster_size"].astype(float)
        out["tiny_cluster"] = np.where(size.isna(), np.nan, (size <= TINY).astype(float))
    else:
        out["tiny_cluster"] = np.nan
    top, eff = [], []
    for text in (out["kernel_weights"] if "kernel_weights" in out.columns else [None] * len(out)):
        w = _weights(text)
        if w is None:
            top.append(math.nan)
            eff.append(math.nan)
        else:
            w = w / w.sum()
            top.append(float(w.max()))
            eff.append(float(1.0 / np.square(w).sum()))
    out["top_weight"], out["effective_kernels"] = top, eff
    return out


def top_kernels(results: pd.DataFrame, spec: dict, datasets: list[str] | None = None) -> dict[str, str]:
    """Per column of a table spec, the kernel that most of its finished runs (on ``datasets``) weight
    the most, as "name in i of n runs"; kernels tied for a run's largest weight (within 1e-9 of it: two
    Gaussians narrow enough to be the same identity matrix in floating point get the same weight) are
    named together, "a = b"; a tie between such names in the count goes to the first in sort order.
    Columns without kernel weights are left out."""
    if datasets:
        results = results[results["dataset"].isin(datasets)]
    out = {}
    for label, g in column_runs(results, spec):
        tops = []
        for names, text in zip(g.get("kernel_name", []), g.get("kernel_weights", [])):
            w = _weights(text)
            if w is not None and isinstance(names, str) and names.startswith("["):
                names = json.loads(names)
                tops.append(" = ".join(names[k] for k in np.flatnonzero(w >= w.max() * (1 - 1e-9))))
        if tops:
            counts = Counter(tops)
            name = min(counts, key=lambda k: (-counts[k], k))
            out[label] = f"{name} in {counts[name]} of {len(tops)} runs"
    return out


def shape_lines(tidy: pd.DataFrame, tops: dict[str, str] | None = None,
                order: list[str] | None = None) -> list[str]:
    """One generated line per column of a table of shape metrics: over the data sets where it ran,
    how many of its runs left a cluster of at most :data:`TINY` points (and on how many sets), the
    median over those sets of its top weight and effective number of kernels, and (``tops``, from
    :func:`top_kernels`) the kernel it weights the most; columns in ``order`` (default: as they
    first appear)."""
    lines, tops = [], tops or {}
    for col in order or list(dict.fromkeys(tidy["column"])):
        g = tidy[tidy["column"] == col]
        parts = []
        t = g[(g["metric"] == "tiny_cluster") & g["value"].notna()]
        if len(t):
            runs = int(t["n_runs"].sum())
            tiny = int(round(float((t["value"] * t["n_runs"]).sum())))
            parts.append(f"a cluster of at most {TINY} points in {tiny} of {runs} runs "
                         f"(on {int((t['value'] > 0).sum())} of {len(t)} sets)")
        for m, what in (("top_weight", "top kernel weight"), ("effective_kernels", "effective kernels")):
            v = g.loc[g["metric"] == m, "value"].dropna()
            if len(v):
                parts.append(f"median {what} {v.median():.2f} (range {v.min():.2f}-{v.max():.2f})")
        if col in tops:
            parts.append(f"largest weight on {tops[col]}")
        if parts:
            lines.append(f"{col}: {'; '.join(parts)}.")
    return lines
