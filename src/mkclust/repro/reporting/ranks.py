"""Methods compared over many data sets (Demsar, "Statistical comparisons of classifiers over
multiple data sets", JMLR 2006; Benavoli, Corani, Demsar, Zaffalon, "Time for a change: a tutorial for
comparing multiple classifiers through Bayesian analysis", JMLR 2017).

Per data set the methods are ranked by one metric, their values first rounded to the three decimals the
tables show (two means equal to that precision tie and share their average rank; float noise in the
last digits would otherwise order them), 1 the best. Then:

- Friedman's test that all methods rank alike, with Iman and Davenport's F (less conservative than its
  chi-square; Demsar Sect. 3.2.2), and the Nemenyi critical difference of average ranks, drawn as a
  critical-difference diagram;
- every pair of methods by the Wilcoxon signed-rank test over the data sets (a zero difference's rank
  split between the two sums, as Demsar Sect. 3.1.3 does), the p-values corrected by Holm's step-down
  procedure (statsmodels), which separates more pairs than Nemenyi's single critical difference;
- the best method against each other: the median difference with a 95 % bootstrap interval over the data
  sets (scipy), wins / ties / losses, and the Bayesian signed-rank test (baycomp) with a region of
  practical equivalence of :data:`ROPE`: the probabilities that the best is better by more than it,
  that the two are within it, that the other is better.

scipy, statsmodels and baycomp do the statistics; the generated summary is written here, and the
diagram in :func:`mkclust.repro.reporting.figures.cd_diagram`. A pair "not separated by this test" is
what the test found at its power, not evidence that the two are equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mkclust.repro.reporting.pairwise import ROPE, compare_pair, pair_text, pairwise_wilcoxon
from mkclust.repro.reporting.tables import DECIMALS, TRIVIAL, column_runs, counted, has_flag

# scipy.stats (about 1 s to import) is imported where it is used: a table job imports this module for
# its rank rows and needs it only if it ranks


#: the row label of the comparison of methods learning kernel weights with their own method on the
#: average kernel (:func:`mkclust.repro.reporting.learned.with_learned_rows`)
LEARNED_ROW = "learned vs average"
#: the row label of the comparison of settings chosen without labels with the oracle's (the same module)
LABEL_FREE_ROW = "label-free vs oracle"


@dataclass
class RankTest:
    """Average ranks of ``k`` methods over ``n`` data sets and the tests on them."""

    metric: str
    ranks: pd.DataFrame          # data sets x methods, 1 = best
    average: pd.Series           # methods, ascending (best first)
    dropped: list[str]           # data sets left out: a method has no value there
    statistic: float             # Friedman's chi-square (NaN with fewer than 3 methods or 2 data sets)
    p_value: float
    cd: float                    # Nemenyi critical difference at ``alpha``
    alpha: float
    values: pd.DataFrame | None = None   # the values ranked (rounded to DECIMALS), data sets x methods
    f_statistic: float = math.nan        # Iman and Davenport's F and its p-value
    f_p_value: float = math.nan

    @property
    def n_datasets(self) -> int:
        return int(self.ranks.shape[0])

    def groups(self) -> list[list[str]]:
        """The maximal runs of methods (in rank order) whose average ranks lie within the critical
        difference of each other: the methods the test cannot separate, each run not inside another."""
        names, r = list(self.average.index), self.average.to_numpy()
        out = []
        for i in range(len(names)):
            j = i
            while j + 1 < len(names) and r[j + 1] - r[i] <= self.cd + 1e-12:
                j += 1
            if j > i and not (out and out[-1][-1] == names[j]):
                out.append(names[i:j + 1])
        return out

    def nemenyi_separated(self) -> int:
        """How many pairs of methods the critical difference separates."""
        r = self.average.to_numpy()
        return int(sum(abs(r[i] - r[j]) > self.cd + 1e-12 for i in range(len(r)) for j in range(i + 1, len(r))))


def nemenyi_cd(k: int, n: int, alpha: float = 0.05) -> float:
    """The Nemenyi critical difference of average ranks of ``k`` methods over ``n`` data sets:
    q_alpha sqrt(k (k + 1) / (6 n)), q_alpha the studentized range quantile over sqrt(2) (Demsar 2006,
    Sect. 3.2.2; q_0.05 = 1.960, 2.343, 2.569 for k = 2, 3, 4)."""
    if k < 2 or n < 1:
        raise ValueError(f"a critical difference needs at least 2 methods and 1 data set, got {k} and {n}")
    from scipy.stats import studentized_range

    q = studentized_range.ppf(1.0 - alpha, k, np.inf) / math.sqrt(2.0)
    return float(q * math.sqrt(k * (k + 1) / (6.0 * n)))


def iman_davenport(chi2: float, n: int, k: int) -> tuple[float, float]:
    """Iman and Davenport's F from Friedman's chi-square of ``k`` methods over ``n`` data sets,
    F = (n - 1) chi2 / (n (k - 1) - chi2), and its p-value under the F distribution with k - 1 and
    (k - 1)(n - 1) degrees of freedom (Demsar 2006, Sect. 3.2.2). Every data set ranking the methods in
    the same order (chi2 = n (k - 1)) gives F = inf and p = 0."""
    if not math.isfinite(chi2) or k < 2 or n < 2:
        return math.nan, math.nan
    from scipy.stats import f

    denom = n * (k - 1) - chi2
    if denom <= 1e-12 * n * k:
        return math.inf, 0.0
    stat = (n - 1) * chi2 / denom
    return float(stat), float(f.sf(stat, k - 1, (k - 1) * (n - 1)))


def rank_test(values: pd.DataFrame, metric: str = "acc", alpha: float = 0.05,
              decimals: int | None = DECIMALS) -> RankTest:
    """Ranks, Friedman's test (with Iman and Davenport's F) and the critical difference of ``values``
    (data sets x methods, higher is better), rounded to ``decimals`` first (None: as they are). Data
    sets where a method has no value (N/A, or not applicable: a two-class method on a multi-class set)
    are left out and named, so every remaining data set ranks every method."""
    from scipy.stats import friedmanchisquare, rankdata

    values = values.astype(float)
    if decimals is not None:
        values = values.round(decimals)
    complete = values.notna().all(axis=1)
    dropped = list(values.index[~complete])
    v = values[complete]
    if v.shape[1] < 2 or v.empty:
        raise ValueError(f"ranking needs at least 2 methods with values on one data set; got {v.shape[1]} "
                         f"methods on {len(v)} complete data sets")
    ranks = pd.DataFrame([rankdata(-row) for row in v.to_numpy()], index=v.index, columns=v.columns)
    average = ranks.mean().sort_values(kind="stable")
    if v.shape[1] >= 3 and len(v) >= 2 and (v.nunique(axis=1) > 1).any():
        stat, p = friedmanchisquare(*[v[c].to_numpy() for c in v.columns])
    else:
        stat, p = math.nan, math.nan
    f_stat, f_p = iman_davenport(float(stat), len(v), v.shape[1])
    return RankTest(metric, ranks, average, dropped, float(stat), float(p), nemenyi_cd(v.shape[1], len(v), alpha),
                    alpha, v, f_stat, f_p)


def versus_best(test: RankTest, rope: float = ROPE, pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The best-ranked method against each other one, in rank order (:func:`compare_pair`: wins / ties
    / losses, the median difference best - other with its 95 % bootstrap interval, the Bayesian
    signed-rank probabilities ``p_best_better``, ``p_equivalent``, ``p_other_better``) and the Wilcoxon
    p-value after Holm's correction over every pair of the test (``pairs``, :func:`pairwise_wilcoxon` of
    the test's values, computed here when not given)."""
    v, best = test.values, test.average.index[0]
    pairs = pairwise_wilcoxon(v[list(test.average.index)]) if pairs is None else pairs
    holm_p = {b: p for a, b, p in zip(pairs["a"], pairs["b"], pairs["p_holm"]) if a == best}
    out = pd.DataFrame([{"method": other, **compare_pair(v[best], v[other], rope), "p_holm": float(holm_p[other])}
                        for other in test.average.index[1:]])
    return out.rename(columns={"p_x_better": "p_best_better", "p_y_better": "p_other_better"})


def values_from_table(tidy: pd.DataFrame, metric: str, apart: bool = False) -> pd.DataFrame:
    """data sets x columns of one metric's values from a tidy table (:func:`build_table`), without its
    summary rows (:func:`is_rank_row`) and the data sets the table does not count (``not_counted``: a
    second copy of another set's data); without the sets flagged :data:`~.tables.TRIVIAL` (no column
    beats one cluster there), or (``apart``) those alone."""
    t = counted(tidy) if "flags" in tidy.columns else tidy
    if "flags" in t.columns:
        t = t[has_flag(t, TRIVIAL) == apart]
    elif apart:
        t = t.iloc[0:0]
    t = t[(t["metric"] == metric) & ~t["dataset"].map(is_rank_row).astype(bool)]
    return t.pivot_table(index="dataset", columns="column", values="value", sort=False, dropna=False)


def pairs_line(test: RankTest, rope: float = ROPE, pairs: pd.DataFrame | None = None) -> str:
    """The best method against each other one, in words (:func:`versus_best`)."""
    vs, best = versus_best(test, rope, pairs), test.average.index[0]
    keys = ("p_best_better", "p_equivalent", "p_other_better")
    parts = [f"{r['method']} {pair_text(r, keys)}" for r in vs.to_dict("records")]
    return (f"{best} against each other method (median difference in {test.metric} with its 95 % bootstrap "
            f"interval; {best}'s wins/ties/losses; Wilcoxon p after Holm; Bayesian signed-rank P({best} better"
            f" / within {rope:g} / worse)): {'; '.join(parts)}.")


def summary_lines(test: RankTest, seconds: pd.Series | None = None,
                  papers: dict[str, tuple[int, pd.Series]] | None = None, pairs: bool = True) -> list[str]:
    """"Which method when", generated from the numbers: the best average rank, Friedman's test, the
    methods the Nemenyi test cannot separate from it and those it can, how many pairs the Wilcoxon
    tests with Holm's correction separate, (``pairs``) the best against each other method
    (:func:`pairs_line`), (given median CPU seconds per fit, by method) the cheapest method among the
    best group, and (given the average ranks on each paper's own data sets, :func:`paper_ranks`) the
    lines of :func:`paper_lines`."""
    best = test.average.index[0]
    top = [m for m in test.average.index if test.average[m] - test.average[best] <= test.cd + 1e-12]
    rest = [m for m in test.average.index if m not in top]
    lines = [f"On {test.metric} over {test.n_datasets} data sets (values rounded to {DECIMALS} decimals, then "
             f"ranked), {best} has the best average rank ({test.average[best]:.2f} of {len(test.average)})."]
    if math.isnan(test.p_value):
        lines.append("Friedman's test is not defined here (fewer than 3 methods or 2 data sets).")
    else:
        verb = "does not reject" if test.f_p_value >= test.alpha else "rejects"
        lines.append(f"Friedman's test by Iman and Davenport's F {verb} that all methods rank alike "
                     f"(F = {test.f_statistic:.2f}, p = {test.f_p_value:.2g}; its chi-square {test.statistic:.2f}, "
                     f"p = {test.p_value:.2g})"
                     + (": the ranking is not evidence of a difference." if verb == "does not reject" else "."))
    others = [m for m in top if m != best]
    if others:
        lines.append(f"Within the Nemenyi critical difference ({test.cd:.2f}) of {best}, so not separated from it "
                     f"by this test: {', '.join(others)}.")
    if rest:
        lines.append(f"Ranked below it beyond the critical difference: {', '.join(rest)}.")
    if test.values is not None and test.n_datasets >= 2:   # rank_test has at least 2 methods
        pw = pairwise_wilcoxon(test.values[list(test.average.index)])
        sep = pw[pw["p_holm"] < test.alpha]
        from_best = [b for a, b in zip(sep["a"], sep["b"]) if a == best]
        lines.append(f"Wilcoxon signed-rank tests with Holm's correction separate {len(sep)} of {len(pw)} pairs at "
                     f"{test.alpha:g} (the Nemenyi test {test.nemenyi_separated()}); {best} from "
                     f"{', '.join(from_best) if from_best else 'none'}.")
        if pairs:
            lines.append(pairs_line(test, pairs=pw))
    if seconds is not None:
        s = seconds.reindex(top).dropna()
        if len(s):
            cheap = s.idxmin()
            lines.append(f"Cheapest of the best group: {cheap} (median {s[cheap]:.3g} CPU s per fit).")
    lines += paper_lines(test, papers or {})
    if test.dropped:
        lines.append(f"Left out (a method has no value there): {', '.join(map(str, test.dropped))}.")
    return lines


def paper_ranks(test: RankTest, paper_sets: dict[str, list[str]]) -> dict[str, tuple[int, pd.Series]]:
    """Per paper (``paper_sets``: its name -> its data sets, as the configuration writes them into a
    table's ``ranks``), the number of its sets the test ranks and each method's average rank over
    them: the ranks of the whole comparison (every method on each set), averaged over that paper's
    sets only. A paper with none of its sets in the test is left out."""
    out = {}
    for name, sets in paper_sets.items():
        own = [d for d in sets if d in test.ranks.index]
        if own:
            out[name] = (len(own), test.ranks.loc[own].mean())
    return out


def paper_lines(test: RankTest, papers: dict[str, tuple[int, pd.Series]]) -> list[str]:
    """How the methods rank outside their own paper, in words: the best average rank on each paper's
    own data sets (descriptive: one paper's sets, 3-19 in the benchmark, are too few for a test of
    their own), and each method named like a paper, on its paper's sets and on the others (the
    others' average follows from the whole one: (n R - k R_own) / (n - k))."""
    if not papers:
        return []
    parts = []
    for name, (k, avg) in papers.items():
        best = [m for m in test.average.index if avg[m] <= avg.min() + 1e-12]   # ties in the overall order
        parts.append(f"{name}'s {k} set{'s' if k != 1 else ''}: {' and '.join(best)} ({avg.min():.2f})")
    lines = [f"Best average rank on each paper's own data sets ({test.metric}; descriptive, no test within "
             f"one paper's sets): {'; '.join(parts)}."]
    n, own = test.n_datasets, []
    for name, (k, avg) in papers.items():
        if name in avg.index and k < n:
            rest = (n * test.average[name] - k * avg[name]) / (n - k)
            own.append(f"{name} {avg[name]:.2f} on its {k} and {rest:.2f} on the other {n - k}")
    if own:
        lines.append(f"A paper's own method, average rank on that paper's sets and on the others: {'; '.join(own)}.")
    if len(papers) >= 2:
        by_source = source_ranks(papers)
        lines.append(f"Ranked by source instead of by set (each paper's sets one block: its methods ranked by their "
                     f"average rank there, then averaged over the {len(papers)} papers, so no paper counts more for "
                     f"having more sets): " + ", ".join(f"{m} {r:.2f}" for m, r in by_source.items()) + ".")
    return lines


def source_ranks(papers: dict[str, tuple[int, pd.Series]]) -> pd.Series:
    """Each method's rank within each paper's block of sets (by its average rank there, ties sharing),
    averaged over the papers, best first."""
    table = pd.DataFrame({name: avg for name, (_, avg) in papers.items()})
    return table.rank(axis=0, method="average").mean(axis=1).sort_values(kind="stable")


def paper_row(name: str) -> str:
    """The row label of a paper's average ranks in a table (:func:`with_rank_rows`)."""
    return f"{RANK_ROW}, {name}'s sets"


def _paper_of(label) -> str | None:
    head, tail = f"{RANK_ROW}, ", "'s sets"
    text = str(label)
    return text[len(head):-len(tail)] if text.startswith(head) and text.endswith(tail) else None


def is_rank_row(label) -> bool:
    """Whether a table row is one of the summary rows (:data:`RANK_ROW`, a paper's, or
    :data:`LEARNED_ROW`, :data:`LABEL_FREE_ROW`) rather than a data set."""
    return str(label).startswith(RANK_ROW) or str(label) in (LEARNED_ROW, LABEL_FREE_ROW)


#: the row label of the average ranks appended to a table (:func:`with_rank_rows`)
RANK_ROW = "average rank"
#: the row label of the average ranks over the sets ranked apart (:func:`apart_line`)
APART_ROW = f"{RANK_ROW}, ranked apart"
#: the column of a rank row holding its method's median CPU seconds per fit (:func:`column_seconds`), so
#: a summary made from the table alone (:func:`ranking`) names the cheapest of the best group as its legend does
SECONDS = "cpu_seconds_per_fit"


def summary_blank(tidy: pd.DataFrame) -> dict:
    """A summary row of ``tidy`` before its own fields (rank rows, :data:`LEARNED_ROW` rows): blank
    where a value row has text or numbers, with the table's rules."""
    blank = {c: ("" if tidy[c].dtype == object else np.nan) for c in tidy.columns}
    blank.update({c: "" for c in ("flags", "derived", "na_reason", "vs", "cause", "evidence") if c in tidy.columns})
    blank.update(oracle=False, seeds_rule=tidy["seeds_rule"].iloc[0], params_rule=tidy["params_rule"].iloc[0])
    return blank


def apart_line(tidy: pd.DataFrame, metric: str) -> tuple[list[dict], str]:
    """The ranking of the sets flagged :data:`~.tables.TRIVIAL` apart from the others: rows
    :data:`APART_ROW` (each column's average rank over them, on ``metric``) and the one sentence that
    names them; none without such sets."""
    try:
        test = rank_test(values_from_table(tidy, metric, apart=True), metric)
    except ValueError:   # no such set, or fewer than 2 methods with values on one
        return [], ""
    avg, sets = test.average, [str(d) for d in test.ranks.index]
    blank = summary_blank(tidy)
    rows = [{**blank, "dataset": APART_ROW, "column": col, "metric": metric, "value": float(r), "n_runs": len(sets),
             "chosen": f"over {len(sets)} data sets"} for col, r in avg.items()]
    line = (f"Ranked apart: on {len(sets)} data set{'s' if len(sets) != 1 else ''} ({', '.join(sets)}) no "
            f"method's accuracy beats putting every sample in one cluster (the largest class's share) by more than "
            f"{ROPE:g}, so their ranks order noise and the ranking above leaves them out; their average ranks on "
            f"{metric}: " + ", ".join(f"{m} {r:.2f}" for m, r in avg.items()) + ".")
    return rows, line


def with_rank_rows(tidy: pd.DataFrame, metrics: list[str], alpha: float = 0.05, seconds: pd.Series | None = None,
                   paper_sets: dict[str, list[str]] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """``tidy`` with one more row per column and metric, data set :data:`RANK_ROW`, holding the
    column's average rank over the data sets where every column has a value; given ``paper_sets``,
    one more per paper (:func:`paper_row`), the average over that paper's sets (:func:`paper_ranks`);
    the sets no method beats one cluster on ranked apart (:func:`apart_line`); and the generated summary
    lines (:func:`summary_lines`) of each metric, for the table's legend (the sets ranked apart said
    once, under the first metric).
    A metric with no data set where two columns both have values gets no rows and a line saying why."""
    if tidy.empty:   # a rebuild from an archive without any of the table's runs yet
        return tidy, [f"No ranking on {', '.join(metrics)}: the table has no runs."]
    rows, lines, blank = [], [], summary_blank(tidy)
    for m in metrics:
        try:
            test = rank_test(values_from_table(tidy, m), m, alpha)
        except ValueError as exc:   # a partial run (an archive rebuilt before every method ran): say so
            lines.append(f"No ranking on {m}: {exc}.")
            continue
        for col, r in test.average.items():
            rows.append({**blank, "dataset": RANK_ROW, "column": col, "metric": m, "value": float(r),
                         "n_runs": test.n_datasets, "chosen": f"over {test.n_datasets} data sets",
                         SECONDS: math.nan if seconds is None else float(seconds.get(col, math.nan))})
        papers = paper_ranks(test, paper_sets or {})
        for name, (k, avg) in papers.items():
            rows += [{**blank, "dataset": paper_row(name), "column": col, "metric": m, "value": float(avg[col]),
                      "n_runs": k, "chosen": f"over {k} of its data sets", SECONDS: math.nan}
                     for col in test.average.index]
        lines += summary_lines(test, seconds, papers, pairs=m == metrics[0])   # effect sizes on the first metric
        apart, line = apart_line(tidy, m)
        rows += apart
        lines += [line] if line and m == metrics[0] else []
    return pd.concat([tidy, pd.DataFrame(rows)], ignore_index=True), lines


def ranking(tidy: pd.DataFrame, metric: str = "acc") -> tuple[RankTest, pd.Series | None, dict]:
    """The rank test of a ranked table read back (its value rows), its methods' CPU seconds per fit
    (from its rank rows; None for a table written without them) and its papers' average ranks (from
    their rows, :func:`paper_row`; empty without them): what :func:`summary_lines` takes."""
    test = rank_test(values_from_table(tidy, metric), metric)
    rows = tidy[(tidy["dataset"] == RANK_ROW) & (tidy["metric"] == metric)]
    seconds = rows.set_index("column")[SECONDS].dropna() if SECONDS in rows.columns else None
    papers = {}
    for label, g in tidy[tidy["metric"] == metric].groupby("dataset", sort=False):
        name = _paper_of(label)
        if name is not None:
            papers[name] = (int(g["n_runs"].iloc[0]), g.set_index("column")["value"].astype(float))
    return test, (seconds if seconds is not None and len(seconds) else None), papers


def column_seconds(results: pd.DataFrame, spec: dict) -> pd.Series | None:
    """Median CPU seconds per fit of each column of a table spec (its algorithms' finished runs: a
    declined run's hundredth of a second is not a fit's); None when the results carry no CPU times."""
    if "cpu_seconds" not in results.columns:
        return None
    out = {}
    for label, runs in column_runs(results, spec):
        t = runs["cpu_seconds"].dropna()
        if len(t):
            out[label] = float(t.median())
    return pd.Series(out, dtype=float)
