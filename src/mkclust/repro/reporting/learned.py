"""Does learning kernel weights beat the average kernel? A table's methods that learn weights against
their own method on the average of the same kernels (its ``learned_vs_average``: {learned column:
average column}), over the data sets: rows :data:`~mkclust.repro.reporting.ranks.LEARNED_ROW` of the
table, and the sentence that words them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mkclust.repro.reporting.pairwise import ROPE, bayes_signed_rank, holm, median_interval, prob_text, wilcoxon_p
from mkclust.repro.reporting.ranks import DECIMALS, LEARNED_ROW, is_rank_row, values_from_table

_LEARNED_HEAD = ("Learning the kernel weights against the same method on the average kernel ({metric} over {n} data "
                 "sets; the median difference learned - average with its 95 % bootstrap interval; the learned "
                 "method's wins/ties/losses; Wilcoxon p after Holm over the {k} pairs; Bayesian signed-rank "
                 "P(learned better / within {rope:g} / average better)): ")


def with_learned_rows(tidy: pd.DataFrame, pairs: dict, metric: str = "acc") -> tuple[pd.DataFrame, list[str]]:
    """``tidy`` with one row per pair of ``pairs`` ({learned column: its average-kernel column}),
    data set :data:`LEARNED_ROW`, on ``metric``: value the median difference over the data sets where
    both have a value (rounded as the ranks are), ``chosen`` the pair's whole result in words, and the
    summary line (:func:`learned_line`). Data sets not counted are left out."""
    rows = tidy[~tidy["dataset"].map(is_rank_row)] if len(tidy) else tidy
    v = values_from_table(rows, metric).round(DECIMALS) if len(rows) else pd.DataFrame()
    items = []
    for learned, average in pairs.items():
        if learned not in v.columns or average not in v.columns:
            continue
        both = v[[learned, average]].dropna()
        if both.empty:
            continue
        d = (both[learned] - both[average]).to_numpy(float)
        p = 1.0 if not np.any(d) else wilcoxon_p(d)
        items.append((learned, average, d, p))
    if not items:   # a rebuild from an archive without these runs yet
        return tidy, [f"No comparison of learned and average kernels on {metric}: no data set has both columns of a "
                      "pair."]
    adjusted = holm([p for *_, p in items])
    rows = []
    blank = {c: ("" if tidy[c].dtype == object else np.nan) for c in tidy.columns}
    blank.update({c: "" for c in ("flags", "derived", "na_reason", "vs", "cause", "evidence") if c in tidy.columns})
    blank.update(oracle=False, seeds_rule=tidy["seeds_rule"].iloc[0], params_rule=tidy["params_rule"].iloc[0])
    for (learned, average, d, _), p in zip(items, adjusted):
        med, lo, hi = median_interval(d)
        a, b, c = bayes_signed_rank(d, np.zeros_like(d)) if d.size else (np.nan,) * 3
        text = (f"{learned} against {average} {med:+.3f} [{lo:+.3f}, {hi:+.3f}], {int((d > 0).sum())}/"
                f"{int((d == 0).sum())}/{int((d < 0).sum())}, p = {p:.2g}, "
                f"P = {'/'.join(prob_text(x) for x in (a, b, c))}")
        rows.append({**blank, "dataset": LEARNED_ROW, "column": learned, "metric": metric, "value": med,
                     "n_runs": int(d.size), "chosen": text, "p_value": float(p)})
    out = pd.concat([tidy, pd.DataFrame(rows)], ignore_index=True)
    return out, [learned_line(out, metric)]


def learned_line(tidy: pd.DataFrame, metric: str = "acc") -> str:
    """The sentence of a table's :data:`LEARNED_ROW` rows on ``metric`` ("" without them)."""
    rows = tidy[(tidy["dataset"] == LEARNED_ROW) & (tidy["metric"] == metric)]
    if rows.empty:
        return ""
    head = _LEARNED_HEAD.format(metric=metric, n=int(rows["n_runs"].max()), k=len(rows), rope=ROPE)
    return head + "; ".join(rows["chosen"]) + "."
