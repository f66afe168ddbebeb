"""Pairs of a table's columns compared over the data sets, each pair one method two ways:

- ``learned_vs_average`` ({learned column: average column}): does learning kernel weights beat the
  average kernel? The methods that learn weights against their own method on the average of the same
  kernels; rows :data:`~mkclust.repro.reporting.ranks.LEARNED_ROW`.
- ``label_free_vs_oracle`` ({label-free column: oracle column}): what choosing a grid's setting without
  labels costs against the oracle that looks at them; rows
  :data:`~mkclust.repro.reporting.ranks.LABEL_FREE_ROW`.

Each kind gives its rows and the sentence that words them."""

from __future__ import annotations

import pandas as pd

from mkclust.repro.reporting.pairwise import ROPE, compare_pair, holm, pair_text, wilcoxon_p
from mkclust.repro.reporting.ranks import DECIMALS, LABEL_FREE_ROW, LEARNED_ROW, summary_blank, values_from_table

_HEAD = ("({metric} over {n} data sets; the median difference {x} - {y} with its 95 % bootstrap interval; the {x} "
         "column's wins/ties/losses; Wilcoxon p after Holm over the {k} pairs; Bayesian signed-rank P({x} better / "
         "within {rope:g} / {y} better)): ")
#: per kind of pair (a table spec's key): its row label, its sentence's opening and the names of its two sides
KINDS = {
    "learned_vs_average": (LEARNED_ROW, "Learning the kernel weights against the same method on the average kernel ",
                           "learned", "average"),
    "label_free_vs_oracle": (LABEL_FREE_ROW, "Each grid's setting chosen without labels (the highest silhouette on the"
                             " average kernel) against the oracle's choice by accuracy (†) ", "label-free", "oracle"),
}


def with_pair_rows(tidy: pd.DataFrame, pairs: dict, metric: str = "acc",
                   kind: str = "learned_vs_average") -> tuple[pd.DataFrame, list[str]]:
    """``tidy`` with one row per pair of ``pairs`` ({column: the column it is compared with}), data set
    the ``kind``'s row label (:data:`KINDS`), on ``metric``: value the median difference over the data
    sets where both have a value (rounded as the ranks are), ``chosen`` the pair's whole result in
    words, and the summary line (:func:`pair_line`). Data sets not counted, or ranked apart, are left
    out."""
    row, _, x_side, y_side = KINDS[kind]
    v = values_from_table(tidy, metric).round(DECIMALS) if len(tidy) else pd.DataFrame()
    found = [(x, y, v[[x, y]].dropna()) for x, y in pairs.items() if x in v.columns and y in v.columns]
    found = [(x, y, both) for x, y, both in found if len(both)]
    if not found:   # a rebuild from an archive without these runs yet
        return tidy, [f"No comparison of {x_side} and {y_side} columns on {metric}: no data set has both columns of a "
                      "pair."]
    adjusted = holm([wilcoxon_p(both[x] - both[y]) for x, y, both in found])
    blank, rows = summary_blank(tidy), []
    for (x, y, both), p in zip(found, adjusted):
        r = {**compare_pair(both[x], both[y]), "p_holm": float(p)}
        rows.append({**blank, "dataset": row, "column": x, "metric": metric, "value": r["median_diff"],
                     "n_runs": len(both), "chosen": f"{x} against {y} {pair_text(r)}", "p_value": float(p)})
    out = pd.concat([tidy, pd.DataFrame(rows)], ignore_index=True)
    return out, [pair_line(out, metric, kind)]


def with_learned_rows(tidy: pd.DataFrame, pairs: dict, metric: str = "acc") -> tuple[pd.DataFrame, list[str]]:
    """:func:`with_pair_rows` of the kind ``learned_vs_average``."""
    return with_pair_rows(tidy, pairs, metric, "learned_vs_average")


def pair_line(tidy: pd.DataFrame, metric: str = "acc", kind: str = "learned_vs_average") -> str:
    """The sentence of a table's rows of the ``kind`` on ``metric`` ("" without them)."""
    row, opening, x, y = KINDS[kind]
    rows = tidy[(tidy["dataset"] == row) & (tidy["metric"] == metric)]
    if rows.empty:
        return ""
    head = opening + _HEAD.format(metric=metric, n=int(rows["n_runs"].max()), k=len(rows), rope=ROPE, x=x, y=y)
    return head + "; ".join(rows["chosen"]) + "."


def learned_line(tidy: pd.DataFrame, metric: str = "acc") -> str:
    """The sentences of a table's paired rows of every kind on ``metric``, joined ("" without them)."""
    return " ".join(t for t in (pair_line(tidy, metric, kind) for kind in KINDS) if t)
