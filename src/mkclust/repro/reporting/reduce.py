"""How a table cell is reduced from many runs, through named selection rules.

A cell (dataset x column x metric) is reduced in two explicit steps:

1. over seeds, per parameter set: ``mean`` (mean and sample std over the repeats) or
   ``best_objective`` (the run with the lowest final objective, as a paper that keeps the best of k
   restarts does);
2. over parameter sets: ``only`` (there must be one), ``mean`` (the average over the grid, e.g.
   the papers' "-a" average over kernels; std is then the spread over the grid) or
   ``best_param_by_metric`` (the parameter set with the best ``select_by`` value, or with
   ``select_by: each`` every metric at its own best set, as the papers' "-b" columns: an oracle
   choice, as some papers make, and always labelled as such in the output; chosen by a label-free
   score, :data:`mkclust.metrics.LABEL_FREE`, it reads no label and is no oracle).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mkclust.repro.records import AT_BUDGET

SEED_RULES = ("mean", "best_objective")
PARAM_RULES = ("only", "mean", "best_param_by_metric")


def _mean_std(x: np.ndarray) -> tuple[float, float]:
    """pandas' ``Series.mean()`` and ``Series.std(ddof=1)`` of a float64 array (NaN skipped), bit for bit:
    the same sum of the same values in the same order (pandas' nanmean and two-pass nanvar without
    bottleneck, which pandas never uses for a mean), without a Series per group and metric, which was
    most of a benchmark table's time (tested against pandas in tests/workflow/test_reporting.py)."""
    nan = np.isnan(x)
    n = x.size - int(nan.sum())
    if n == 0:
        return math.nan, math.nan
    v = np.where(nan, 0.0, x) if n < x.size else x
    mean = v.sum(dtype=np.float64) / np.float64(n)
    if n <= 1:
        return mean, math.nan
    sqr = (mean - v) ** 2
    if n < x.size:
        sqr[nan] = 0.0
    return mean, np.sqrt(sqr.sum(dtype=np.float64) / np.float64(n - 1))


def _per_params(g: pd.DataFrame, metrics: list[str], seeds: str) -> pd.DataFrame:
    """One row per param_id (in sorted order, as ``groupby``): value and std of each metric after the
    seed rule."""
    floats = seeds == "mean" and all(g[m].dtype == np.float64 for m in metrics)
    if floats and g["param_id"].notna().all():
        codes, pids = pd.factorize(g["param_id"], sort=True)
        order = np.argsort(codes, kind="stable")          # each set's runs in their order
        sizes = np.bincount(codes, minlength=len(pids))
        starts = np.cumsum(sizes) - sizes
        cols = {"param_id": list(pids), "n_runs": sizes.astype(np.int64)}
        for m in metrics:
            x = g[m].to_numpy(dtype=np.float64)
            stats = np.array([_mean_std(x[order[a:a + k]]) for a, k in zip(starts, sizes)], dtype=np.float64)
            cols[m], cols[m + ":std"] = stats.reshape(-1, 2).T
            cols[m + ":se"] = cols[m + ":std"] / np.sqrt(sizes)
        return pd.DataFrame(cols)
    rows = []
    for pid, h in g.groupby("param_id", sort=True):
        row = {"param_id": pid, "n_runs": len(h)}
        if seeds == "mean":
            for m in metrics:
                row[m] = h[m].mean()
                row[m + ":std"] = h[m].std(ddof=1) if len(h) > 1 else math.nan
                row[m + ":se"] = row[m + ":std"] / math.sqrt(len(h))
        elif seeds == "best_objective":
            if h["objective"].isna().all():
                raise ValueError(f"best_objective needs run objectives; {pid} has none")
            best = h.loc[h["objective"].idxmin()]
            for m in metrics:
                row[m], row[m + ":std"], row[m + ":se"] = best[m], math.nan, math.nan
        else:
            raise ValueError(f"unknown seed rule {seeds!r}; known: {SEED_RULES}")
        rows.append(row)
    return pd.DataFrame(rows)


def _shared_seed_means(g: pd.DataFrame, metrics: list[str]) -> pd.DataFrame | None:
    """Per seed, the mean of each metric over the parameter sets, when every parameter set holds one
    run at each of the same two or more seeds; None otherwise (no seed column, a seed missing from
    a set, or a repeated one)."""
    if "seed" not in g.columns:
        return None
    counts = g.groupby(["param_id", "seed"]).size()
    seeds = g.groupby("param_id")["seed"].apply(lambda s: tuple(sorted(s)))
    if counts.max() != 1 or seeds.nunique() != 1 or len(seeds.iloc[0]) < 2:
        return None
    return g.groupby("seed")[metrics].mean()


def reduce_runs(g: pd.DataFrame, metrics: list[str], seeds: str = "mean", params: str = "only",
                select_by: str | None = None) -> dict:
    """Reduce the runs of one (dataset, column) to {metric: (value, std)} plus bookkeeping, among it
    ``se``: {metric: the standard error of the value over the seeds} (NaN for a value without seed
    noise: one run, or the best objective's run). For a mean over parameter sets whose runs share their
    seeds (every set run at the same seeds, so the same random starts: the papers' "-a" columns, whose
    authors reset the generator before each kernel) it is that of the per-seed means over the sets,
    std / sqrt(number of seeds): one unlucky start lowers every set at once, so the sets' means are not
    independent (:func:`_shared_seed_means`); otherwise that of a mean of independent means, sqrt(sum
    of their squared standard errors) / their number."""
    if params not in PARAM_RULES:
        raise ValueError(f"unknown parameter rule {params!r}; known: {PARAM_RULES}")
    pp = _per_params(g, metrics, seeds)
    out = {"n_runs": int(pp["n_runs"].sum()), "oracle": False, "chosen": ""}
    if params == "only":
        if len(pp) != 1:
            raise ValueError(f"parameter rule 'only' found {len(pp)} parameter sets "
                             f"({', '.join(pp['param_id'])}); choose 'mean' or 'best_param_by_metric'")
        out.update({m: (pp[m].iloc[0], pp[m + ":std"].iloc[0]) for m in metrics})
        out["se"] = {m: pp[m + ":se"].iloc[0] for m in metrics}
        out["chosen"] = pp["param_id"].iloc[0]
    elif params == "mean":
        out.update({m: (pp[m].mean(), pp[m].std(ddof=1) if len(pp) > 1 else pp[m + ":std"].iloc[0])
                    for m in metrics})
        shared = _shared_seed_means(g, metrics) if seeds == "mean" and len(pp) > 1 else None
        if shared is not None:
            out["se"] = {m: shared[m].std(ddof=1) / math.sqrt(len(shared)) for m in metrics}
        else:
            out["se"] = {m: math.sqrt(float((pp[m + ":se"] ** 2).sum(skipna=False))) / len(pp) for m in metrics}
        out["chosen"] = f"mean of {len(pp)}"
    elif select_by == "each":  # every metric at its own best parameter set (the papers' "-b")
        best = {m: pp.loc[pp[m].idxmax()] for m in metrics}
        out.update({m: (best[m][m], best[m][m + ":std"]) for m in metrics})
        out["se"] = {m: best[m][m + ":se"] for m in metrics}
        out["oracle"] = True
        out["chosen"] = "; ".join(f"{m}: {best[m]['param_id']}" for m in metrics)
    else:
        from mkclust.metrics import LABEL_FREE   # the score names (the module imports scikit-learn lazily)

        key = select_by or metrics[0]
        pp = _with_selector(pp, g, key)
        best = pp.loc[pp[key].idxmax()]
        out.update({m: (best[m], best[m + ":std"]) for m in metrics})
        out["se"] = {m: best[m + ":se"] for m in metrics}
        # a choice by a label-free score (mkclust.metrics.LABEL_FREE) reads no label: no oracle
        out["oracle"], out["chosen"] = key not in LABEL_FREE, best["param_id"]
    return out


class NoSelector(ValueError):
    """The runs of a cell lack the score its parameter set is chosen by: the cell is N/A with this
    reason (an archive whose groups from before the score existed are still to be computed again)."""


def _with_selector(pp: pd.DataFrame, g: pd.DataFrame, key: str) -> pd.DataFrame:
    """``pp`` (one row per parameter set) with the column ``key`` the choice is made by, when it is not
    one of the table's metrics: its mean over the runs of each set (a label-free score, say). A set whose
    runs lack it cannot be chosen by it: an error naming the sets."""
    if key in pp.columns:
        return pp
    if key not in g.columns or g[key].isna().any():
        missing = sorted(set(g.loc[g[key].isna(), "param_id"])) if key in g.columns else sorted(set(g["param_id"]))
        raise NoSelector(f"select_by {key!r}: the runs of {', '.join(missing[:3])}"
                         f"{' ...' if len(missing) > 3 else ''} have no {key} (an experiment's scores: list)")
    return pp.assign(**{key: pp["param_id"].map(g.groupby("param_id")[key].mean())})


def at_budget(g: pd.DataFrame) -> pd.Series | None:
    """Per run of ``g``, whether it stopped at its budget, from its column
    :data:`~mkclust.repro.records.AT_BUDGET` (:func:`mkclust.repro.records.stopped_at_budget`: rule aggregate
    writes it, :func:`mkclust.repro.reporting.tables.build_table` fills it once for a table without it);
    False for a run of an estimator without one. None when no run of ``g`` is of an estimator with a budget."""
    stopped = g[AT_BUDGET]
    return None if stopped.isna().all() else stopped.fillna(0.0).astype(bool)


def behind(g: pd.DataFrame, chosen: str, metric: str) -> pd.DataFrame:
    """The runs behind a cell's value of ``metric`` once :func:`reduce_runs` chose ``chosen``: the chosen
    parameter set's runs, the set chosen for this metric (``select_by: each``), or all of them (a mean over
    the grid)."""
    picks = dict(part.split(": ", 1) for part in chosen.split("; ")) if ": " in chosen else {}
    same = g["param_id"] == picks.get(metric, chosen)
    return g[same] if same.any() else g
