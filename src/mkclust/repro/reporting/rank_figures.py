"""Figures of a comparison over data sets beyond the critical-difference diagram
(:func:`mkclust.repro.reporting.figures.cd_diagram`), registered as figure kinds:

- ``rank_cost``: each column's average rank (the table's ranking: every column on every complete data
  set) against its median CPU seconds per fit (log scale): which methods are worth their cost. The
  methods no other one beats on both (a lower rank at a lower cost) are joined by a line, the Pareto
  front.
- ``ranks_by``: the average ranks of the whole comparison over each group of data sets of ``by``
  ({group: [data sets]}, e.g. by kind of data), one row per column (method), one cell per group: how a
  method's standing depends on the data (descriptive; the test is over all the sets).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mkclust.repro.reporting._titles import title as _title
from mkclust.repro.reporting.ranks import column_seconds, rank_test, values_from_table
from mkclust.repro.reporting.tables import build_table


def ranked(results: pd.DataFrame, spec: dict):
    """(metric, :func:`~mkclust.repro.reporting.ranks.rank_test`) of the table ``spec`` describes (its
    ``columns``, rules and ``datasets``) on its ``metric`` (default acc) at its ``alpha`` (0.05): what
    every ranking figure draws."""
    metric = spec.get("metric", "acc")
    tidy = build_table(results, {**spec, "metrics": [metric]}, spec.get("datasets"))
    return metric, rank_test(values_from_table(tidy, metric), metric, float(spec.get("alpha", 0.05)))


def pareto_front(cost: pd.Series, rank: pd.Series) -> list[str]:
    """The methods no other method beats on both counts (a rank at least as good at a cost at most as
    high, one of them strictly), in order of cost."""
    names = list(cost.sort_values(kind="stable").index)
    return [a for a in names
            if not any((cost[b] <= cost[a] and rank[b] <= rank[a]) and (cost[b] < cost[a] or rank[b] < rank[a])
                       for b in names if b != a)]


def rank_cost(results: pd.DataFrame, spec: dict) -> plt.Figure:
    """Average rank (1 the best, at the top) against median CPU seconds per fit (finished fits only),
    every column of the table ``spec`` describes, the Pareto front joined."""
    metric, test = ranked(results, spec)
    seconds = column_seconds(results, spec)
    cost = seconds.reindex(test.average.index).dropna() if seconds is not None else pd.Series(dtype=float)
    rank = test.average.reindex(cost.index)
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    ax.scatter(cost, rank, color="C0", zorder=3)
    for name in cost.index:
        ax.annotate(name, (cost[name], rank[name]), textcoords="offset points", xytext=(4, 3), fontsize=7)
    front = pareto_front(cost, rank)
    ax.plot(cost[front], rank[front], color="C3", lw=1, ls="--", label="no other method both better and cheaper")
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("median CPU seconds per fit")
    ax.set_ylabel(f"average rank on {metric} over {test.n_datasets} data sets (1 = best)")
    ax.legend(fontsize=7, loc="lower right")
    _title(fig, spec.get("title", ""), ax)
    fig.tight_layout()
    return fig


def group_ranks(ranks: pd.DataFrame, by: dict) -> pd.DataFrame:
    """Methods x groups: each method's rank averaged over the data sets of each group of ``by`` that
    the ranking holds (a group with none of them is left out), in the ranking's method order."""
    out = {}
    for name, sets in by.items():
        own = [d for d in sets if d in ranks.index]
        if own:
            out[f"{name} ({len(own)})"] = ranks.loc[own].mean()
    return pd.DataFrame(out).reindex(ranks.mean().sort_values(kind="stable").index)


def ranks_by(results: pd.DataFrame, spec: dict) -> plt.Figure:
    """A heat map of :func:`group_ranks` (``spec['by']``), the overall average rank as the last column."""
    metric, test = ranked(results, spec)
    table = group_ranks(test.ranks, spec["by"])
    table[f"all ({test.n_datasets})"] = test.average
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * table.shape[1], 0.8 + 0.32 * table.shape[0]))
    im = ax.imshow(table.to_numpy(), cmap="viridis_r", aspect="auto", vmin=1, vmax=len(test.average))
    for (i, j), v in np.ndenumerate(table.to_numpy()):
        ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=7,
                color="black" if v < (1 + len(test.average)) / 2 else "white")   # light cells: dark text
    ax.set_xticks(range(table.shape[1]), table.columns, fontsize=7, rotation=30, ha="right")
    ax.set_yticks(range(table.shape[0]), table.index, fontsize=7)
    fig.colorbar(im, ax=ax, label=f"average rank on {metric} (1 = best)")
    _title(fig, spec.get("title", ""), ax)
    fig.tight_layout()
    return fig
