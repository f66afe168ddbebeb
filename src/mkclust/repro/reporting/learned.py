"""Does learning kernel weights beat the average kernel? A table's methods that learn weights against
their own method on the average of the same kernels (its ``learned_vs_average``: {learned column:
average column}), over the data sets: rows :data:`~mkclust.repro.reporting.ranks.LEARNED_ROW` of the
table, and the sentence that words them."""

from __future__ import annotations

import pandas as pd

from mkclust.repro.reporting.pairwise import ROPE, compare_pair, holm, pair_text, wilcoxon_p
from mkclust.repro.reporting.ranks import DECIMALS, LEARNED_ROW, summary_blank, values_from_table

_LEARNED_HEAD = ("Learning the kernel weights against the same method on the average kernel ({metric} over {n} data "
                 "sets; the median difference learned - average with its 95 % bootstrap interval; the learned "
                 "method's wins/ties/losses; Wilcoxon p after Holm over the {k} pairs; Bayesian signed-rank "
                 "P(learned better / within {rope:g} / average better)): ")


def with_learned_rows(tidy: pd.DataFrame, pairs: dict, metric: str = "acc") -> tuple[pd.DataFrame, list[str]]:
    """``tidy`` with one row per pair of ``pairs`` ({learned column: its average-kernel column}),
    data set :data:`LEARNED_ROW`, on ``metric``: value the median difference over the data sets where
    both have a value (rounded as the ranks are), ``chosen`` the pair's whole result in words, and the
    summary line (:func:`learned_line`). Data sets not counted are left out."""
    v = values_from_table(tidy, metric).round(DECIMALS) if len(tidy) else pd.DataFrame()
    found = [(learned, average, v[[learned, average]].dropna()) for learned, average in pairs.items()
             if learned in v.columns and average in v.columns]
    found = [(learned, average, both) for learned, average, both in found if len(both)]
    if not found:   # a rebuild from an archive without these runs yet
        return tidy, [f"No comparison of learned and average kernels on {metric}: no data set has both columns of a "
                      "pair."]
    adjusted = holm([wilcoxon_p(both[learned] - both[average]) for learned, average, both in found])
    blank, rows = summary_blank(tidy), []
    for (learned, average, both), p in zip(found, adjusted):
        r = {**compare_pair(both[learned], both[average]), "p_holm": float(p)}
        rows.append({**blank, "dataset": LEARNED_ROW, "column": learned, "metric": metric, "value": r["median_diff"],
                     "n_runs": len(both), "chosen": f"{learned} against {average} {pair_text(r)}", "p_value": float(p)})
    out = pd.concat([tidy, pd.DataFrame(rows)], ignore_index=True)
    return out, [learned_line(out, metric)]


def learned_line(tidy: pd.DataFrame, metric: str = "acc") -> str:
    """The sentence of a table's :data:`LEARNED_ROW` rows on ``metric`` ("" without them)."""
    rows = tidy[(tidy["dataset"] == LEARNED_ROW) & (tidy["metric"] == metric)]
    if rows.empty:
        return ""
    head = _LEARNED_HEAD.format(metric=metric, n=int(rows["n_runs"].max()), k=len(rows), rope=ROPE)
    return head + "; ".join(rows["chosen"]) + "."
