"""A paper's verdict: each headline claim, stated once in the form the paper tests it, evaluated on our
runs with the same comparison, and beside it every table cell far from its published value with the
cause of the gap.

A claim is a configuration entry (an experiment's ``claims:``) of one of these kinds, told apart by
its keys:

- ``above``: ``column`` is at least the best of the ``above`` columns (``all``: every other column
  of the table, less ``except``) minus ``tolerance`` (default 0), in every cell (data set x metric)
  of ``table``; the form of "best on every data set" (RMKKM, SCMK, ODMC) and "above the best single
  kernel" (MKC, GUMKL).
- ``close``: ``column`` within ``tolerance`` (default :data:`CLOSE`) of the ``close`` column in every
  cell (MKC's Table 3: a model learned on a subset against the whole set).
- ``wins``: the paired t-tests of ``table`` (its ``compare``): ``column`` significantly better than
  each of the ``wins`` columns on the data sets (ODMC's win/tie/loss rows); a baseline counts as
  beaten when the wins outnumber half of its compared cells.
- ``slope``: {algorithm, x, time}: the fitted slope of log(median time) against log(x) within
  ``tolerance`` (default :data:`SLOPE_TOLERANCE`) of ``expected`` (MKC: roughly O(n), O(M^2),
  O(eps^-0.2)).
- ``below``: {algorithm, x, value}: the median of ``value`` at every x below ``limit`` (MKC: fewer
  than 10 CCCP iterations per round).
- ``sweep``: {algorithm, x, from, to, metric}: at every swept value in [from, to], the algorithm's
  mean over seeds is at least the best of the ``above`` columns of ``table`` minus ``tolerance``
  (RMKKM's Figure 1: better than KKM-a and KKM-ew for gamma from 0.3 to 0.9).

``need`` is ``all`` (default: every case) or ``most`` (more than half of the cases, as the papers'
"in most cases"). Where the table has published values, ``above``, ``close`` and ``sweep`` claims are
also evaluated on the published numbers alone, so a reader sees whether the paper's own table
supports the claim as stated. A claim that involves a column chosen by looking at the true labels is
marked †.

Choices: "comparable" (MKC's Table 3) is read as within :data:`CLOSE` = 0.02, the gap above which a
cell gets a cause (:data:`mkclust.repro.reporting.tables.GAP`); "roughly O(n^d)" as a fitted exponent
within :data:`SLOPE_TOLERANCE` = 0.3 of d. Both are set per claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from mkclust.repro.configuration import as_list, claim_kind
from mkclust.repro.reporting.causes import GAP
from mkclust.repro.reporting.tables import _where, counted, finished_runs, xcol

CLOSE = GAP
SLOPE_TOLERANCE = 0.3
SHOW_CASES = 8  # failing cases listed per claim
#: the columns of a paper's verdict.csv
VERDICT_COLUMNS = ["claim", "form", "holds", "cases", "held", "numbers", "published", "oracle", "status"]


@dataclass
class Verdict:
    """One claim evaluated: ``holds`` is True / False, or None when no case could be evaluated;
    ``published_held`` of ``published_cases``: the same comparison on the published numbers
    (None where the paper prints none for it)."""
    claim: str
    form: str
    holds: bool | None
    cases: int
    held: int
    numbers: str
    published_held: int | None = None
    published_cases: int = 0
    published_note: str = ""
    oracle: bool = False

    @property
    def status(self) -> str:
        return {True: "holds", False: "does not hold", None: "not evaluated"}[self.holds]

    @property
    def published(self) -> str:
        if self.published_held is None or not self.published_cases:
            return ""
        note = f" ({self.published_note})" if self.published_note else ""
        return f"{self.published_held} of {self.published_cases}{note}"


def _needed(held: int, cases: int, need: str) -> bool | None:
    if cases == 0:
        return None
    if need == "all":
        return held == cases
    if need == "most":
        return held > cases / 2
    raise ValueError(f"need: {need!r}; known: all, most")


def _share(held: int, cases: int, need: str) -> str:
    return f"{held} of {cases}" + (" (need all)" if need == "all" else " (need more than half)")


def _table(tables: dict, claim: dict) -> pd.DataFrame:
    name = claim.get("table")
    if name not in tables:
        raise ValueError(f"claim {claim['claim']!r}: no table {name!r} (tables: {', '.join(sorted(tables)) or 'none'})")
    tidy = counted(tables[name])
    metrics = claim.get("metrics")
    if metrics:
        tidy = tidy[tidy["metric"].isin(metrics)]
    return tidy


class MissingColumns(ValueError):
    """A claim's columns are not in its table, or its algorithm has no runs: a configuration error, or
    in a rebuild from a partial results archive, run groups that were left out. ``what`` says which."""

    def __init__(self, claim: dict, what: str):
        super().__init__(f"claim {claim['claim']!r}: {what}")
        self.what = what


def _columns(tidy: pd.DataFrame, claim: dict, key: str) -> list[str]:
    """The columns a claim compares against: ``claim[key]`` (a column or a list), or ``all`` (every
    column but the claim's own, less ``except``); they, and the claim's ``column``, must exist (a
    table with no cells, every group of a partial archive's rebuild left out, has none)."""
    have = list(dict.fromkeys(tidy["column"])) if "column" in tidy.columns else []
    own = claim.get("column")
    if claim[key] == "all":
        cols = [c for c in have if c != own and c not in as_list(claim.get("except") or [])]
    else:
        cols = as_list(claim[key])
    missing = [c for c in ([own] if own else []) + cols if c not in have]
    if missing:
        raise MissingColumns(claim, f"columns {missing} are not in table {claim['table']!r} ({have})")
    return cols


def _cells(tidy: pd.DataFrame, value: str = "value") -> pd.DataFrame:
    """dataset x metric rows, one column per table column."""
    return tidy.pivot_table(index=["dataset", "metric"], columns="column", values=value, aggfunc="first", sort=False)


def _oracle(tidy: pd.DataFrame, cols: list[str]) -> bool:
    return bool(tidy.loc[tidy["column"].isin(cols), "oracle"].fillna(False).astype(bool).any())


def _list(fails: list[str]) -> str:
    if not fails:
        return ""
    more = f"; and {len(fails) - SHOW_CASES} more" if len(fails) > SHOW_CASES else ""
    return "fails: " + "; ".join(fails[:SHOW_CASES]) + more


def _count(cases) -> tuple[int, int, list[str]]:
    """(held, cases, failure texts) of (holds, failure text) pairs; a None case is not evaluated."""
    done = [c for c in cases if c is not None]
    return sum(bool(ok) for ok, _ in done), len(done), [text for ok, text in done if not ok]


def _cellwise(tidy: pd.DataFrame, claim: dict, need: str, form: str, cols: list[str],
              test: Callable[[tuple, pd.Series], tuple[bool, str] | None]) -> Verdict:
    """A claim tested cell by cell (dataset x metric) of a table: ``test(cell, row)`` gives (holds,
    failure text) or None where the cell cannot be compared; the same test on the published values."""
    held, cases, fails = _count(test(cell, row) for cell, row in _cells(tidy).iterrows())
    pub = (None, 0)
    if tidy["published"].notna().any():
        ph, pc, _ = _count(test(cell, row) for cell, row in _cells(tidy, "published").iterrows())
        pub = (ph, pc)
    return Verdict(claim["claim"], form, _needed(held, cases, need), cases, held,
                   f"{_share(held, cases, need)}. {_list(fails)}".strip(), *pub, oracle=_oracle(tidy, cols))


def _at_least(value: float, rest: pd.Series, tol: float) -> bool:
    """value >= the best of ``rest`` less ``tol`` (to rounding)."""
    return value >= rest.max() - tol - 1e-12


def _above(tables: dict, results: pd.DataFrame, claim: dict, need: str) -> Verdict:
    tidy = _table(tables, claim)
    col, tol = claim["column"], float(claim.get("tolerance", 0.0))
    others = _columns(tidy, claim, "above")

    def test(cell, row):
        rest = row.reindex(others).dropna()
        if math.isnan(row.get(col, math.nan)) or rest.empty:
            return None
        return (_at_least(row[col], rest, tol),
                f"{cell[0]} {cell[1]} {row[col]:.3f} < {rest.max():.3f} ({rest.idxmax()})")

    slack = f" - {tol:g}" if tol else ""
    form = (f"{col} ≥ max({', '.join(others)}){slack} per data set and metric "
            f"({', '.join(dict.fromkeys(tidy['metric']))}) of {claim['table']}")
    return _cellwise(tidy, claim, need, form, [col, *others], test)


def _close(tables: dict, results: pd.DataFrame, claim: dict, need: str) -> Verdict:
    tidy = _table(tables, claim)
    col, tol = claim["column"], float(claim.get("tolerance", CLOSE))
    other = _columns(tidy, claim, "close")[0]

    def test(cell, row):
        a, b = row.get(col, math.nan), row.get(other, math.nan)
        if math.isnan(a) or math.isnan(b):
            return None
        return abs(a - b) <= tol + 1e-12, f"{cell[0]} {cell[1]} {a:.3f} vs {b:.3f} ({a - b:+.3f})"

    form = f"|{col} - {other}| ≤ {tol:g} per data set and metric of {claim['table']}"
    return _cellwise(tidy, claim, need, form, [col, other], test)


def _wins(tables: dict, results: pd.DataFrame, claim: dict, need: str) -> Verdict:
    tidy = _table(tables, claim)
    col = claim["column"]
    others = _columns(tidy, claim, "wins")
    ref = tidy.loc[tidy["vs"] == "reference", "column"].unique()
    if list(ref) != [col]:
        raise ValueError(f"claim {claim['claim']!r}: table {claim['table']!r} compares against {list(ref)}, "
                         f"not {col!r}")
    held, cases, counts = 0, 0, []
    for c in others:
        vs = tidy.loc[tidy["column"] == c, "vs"]
        w, t, lo = (int((vs == o).sum()) for o in ("win", "tie", "loss"))
        if w + t + lo == 0:
            continue
        cases += 1
        held += int(w > (w + t + lo) / 2)
        counts.append(f"{c} {w}/{t}/{lo}")
    form = (f"{col} significantly better (paired t-test, 95%) than each of {', '.join(others)} on more than "
            f"half of the data sets x metrics of {claim['table']}")
    numbers = f"{_share(held, cases, need)} baselines beaten; win/tie/loss: " + ", ".join(counts)
    return Verdict(claim["claim"], form, _needed(held, cases, need), cases, held, numbers,
                   oracle=_oracle(tidy, [col, *others]))


def _runs(results: pd.DataFrame, spec: dict, claim: dict) -> pd.DataFrame:
    g = finished_runs(results[results["algorithm"].isin(as_list(spec["algorithm"]))])
    g = _where(g, spec.get("where") or {})
    if g.empty:
        raise MissingColumns(claim, f"no runs of {spec['algorithm']}")
    return g


def _medians(results: pd.DataFrame, spec: dict, claim: dict, value: str) -> pd.Series:
    g = _runs(results, spec, claim)
    xc = xcol(g, spec.get("x", "n"))
    if value not in g.columns:
        raise ValueError(f"claim {claim['claim']!r}: results have no column {value!r}")
    return g.groupby(pd.to_numeric(g[xc], errors="coerce"))[value].median().dropna().sort_index()


def fitted_slope(x, y) -> float:
    """Least-squares slope of log(y) against log(x): the exponent a log-log plot shows (the timing
    figures' legend, :func:`mkclust.repro.reporting.figures.timing`, and the papers' scaling claims)."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def _slope(tables: dict, results: pd.DataFrame, claim: dict, need: str) -> Verdict:
    spec = claim["slope"]
    time = spec.get("time", "cpu_seconds")
    s = _medians(results, spec, claim, time)
    s = s[(s.index > 0) & (s > 0)]
    x = spec.get("x", "n")
    expected, tol = float(claim["expected"]), float(claim.get("tolerance", SLOPE_TOLERANCE))
    form = f"slope of log(median {time}) against log({x}) of {spec['algorithm']} within {tol:g} of {expected:g}"
    if len(s) < 2:
        return Verdict(claim["claim"], form, None, 0, 0, f"fewer than 2 values of {x}")
    slope = fitted_slope(s.index, s.to_numpy())
    ok = abs(slope - expected) <= tol + 1e-12
    numbers = (f"slope {slope:.2f} over {x} = {s.index.min():g} ... {s.index.max():g} ({len(s)} values; "
               f"medians {', '.join(f'{v:.3g}' for v in s.to_numpy())})")
    return Verdict(claim["claim"], form, ok, 1, int(ok), numbers)


def _below(tables: dict, results: pd.DataFrame, claim: dict, need: str) -> Verdict:
    spec = claim["below"]
    s = _medians(results, spec, claim, spec["value"])
    limit = float(claim["limit"])
    held = int((s < limit).sum())
    x = spec.get("x", "n")
    form = f"median {spec['value']} of {spec['algorithm']} below {limit:g} at every {x}"
    fails = [f"{x} = {k:g}: {v:.3g}" for k, v in s.items() if not v < limit]
    numbers = f"{_share(held, len(s), need)}; medians " + ", ".join(f"{k:g}: {v:.3g}" for k, v in s.items())
    if fails:
        numbers += ". " + _list(fails)
    return Verdict(claim["claim"], form, _needed(held, len(s), need), len(s), held, numbers)


def _sweep(tables: dict, results: pd.DataFrame, claim: dict, need: str) -> Verdict:
    spec = claim["sweep"]
    tidy = _table(tables, {**claim, "metrics": [spec["metric"]]})
    others = _columns(tidy, claim, "above")
    g = _runs(results, spec, claim)
    xv = pd.to_numeric(g[xcol(g, spec["x"])], errors="coerce")
    g = g[(xv >= float(spec["from"]) - 1e-12) & (xv <= float(spec["to"]) + 1e-12)]
    means = g.groupby(["dataset", xv.loc[g.index]])[spec["metric"]].mean()
    tol = float(claim.get("tolerance", 0.0))

    def levels(value: str) -> dict:
        """dataset -> the ``above`` columns' values on it (those the table has)."""
        piv = _cells(tidy, value)
        return {ds: row.reindex(others).dropna() for (ds, _), row in piv.iterrows()}

    ours = levels("value")
    held, cases, fails = _count(
        None if ours.get(ds) is None or ours[ds].empty else
        (_at_least(v, ours[ds], tol), f"{ds} {spec['x']} = {x:g}: {v:.3f} < {ours[ds].max():.3f} ({ours[ds].idxmax()})")
        for (ds, x), v in means.items())
    pub = (None, 0)
    if tidy["published"].notna().any():
        printed = levels("published")
        ph, pc, _ = _count(None if ours.get(ds) is None or ours[ds].empty or printed.get(ds) is None
                           or printed[ds].empty else (_at_least(v, printed[ds], tol), "")
                           for (ds, _), v in means.items())
        pub = (ph, pc)
    form = (f"{spec['algorithm']} ({spec['metric']}, mean over seeds) ≥ max({', '.join(others)}) of {claim['table']} "
            f"at each {spec['x']} in [{spec['from']:g}, {spec['to']:g}] per data set")
    return Verdict(claim["claim"], form, _needed(held, cases, need), cases, held,
                   f"{_share(held, cases, need)}. {_list(fails)}".strip(), *pub,
                   published_note="ours against the published levels", oracle=_oracle(tidy, others))


#: claim kind -> its test, each ``(tables, results, claim, need) -> Verdict``
KINDS: dict[str, Callable] = {"above": _above, "close": _close, "wins": _wins, "slope": _slope, "below": _below,
                              "sweep": _sweep}


def evaluate_claim(claim: dict, tables: dict, results: pd.DataFrame) -> Verdict:
    """One claim (a configuration entry, see the module docstring) on the paper's tables (name ->
    tidy frame) and its experiments' results."""
    if claim.get("sources") and "experiment" in results.columns:  # the claim's experiment and those it reuses
        results = results[results["experiment"].isin(claim["sources"])]
    return KINDS[claim_kind(claim)](tables, results, claim, claim.get("need", "all"))


def evaluate(claims: list[dict], tables: dict, results: pd.DataFrame, partial: bool = False) -> pd.DataFrame:
    """The verdicts of ``claims``, one row each (:data:`VERDICT_COLUMNS`, then the published counts).
    ``partial`` (a rebuild that left run groups out): a claim whose columns are not in its table is
    not evaluated, saying so, instead of an error."""
    rows = []
    for c in claims:
        try:
            v = evaluate_claim(c, tables, results)
        except MissingColumns as exc:
            if not partial:
                raise
            v = Verdict(c["claim"], claim_kind(c), None, 0, 0,
                        f"not evaluated: {exc.what} (their run groups are left out of this rebuild)")
        rows.append({"claim": v.claim, "form": v.form, "holds": v.holds, "cases": v.cases, "held": v.held,
                     "numbers": v.numbers, "published": v.published, "oracle": v.oracle, "status": v.status,
                     "published_held": v.published_held, "published_cases": v.published_cases})
    return pd.DataFrame(rows, columns=[*VERDICT_COLUMNS, "published_held", "published_cases"])


def gap_counts(tables: dict) -> pd.DataFrame:
    """Cells more than GAP from their published value, counted per (table, cause)."""
    rows = []
    for name, tidy in tables.items():
        if "cause" not in tidy.columns:
            continue
        pub = int(tidy["published"].notna().sum())
        off = tidy[tidy["cause"].fillna("") != ""]
        for cause, g in off.groupby("cause", sort=False):
            rows.append({"table": name, "cause": cause, "cells": len(g), "published_cells": pub})
    return pd.DataFrame(rows, columns=["table", "cause", "cells", "published_cells"])
