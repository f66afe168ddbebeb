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
cell gets a cause (:data:`mkclust.reporting.tables.GAP`); "roughly O(n^d)" as a fitted exponent
within :data:`SLOPE_TOLERANCE` = 0.3 of d. Both are set per claim.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from mkclust._validation import CLAIM_KINDS as KINDS  # noqa: F401  (re-exported)
from mkclust._validation import as_list, claim_kind
from mkclust.reporting.tables import GAP, _where
from mkclust.reference import CAUSES

CLOSE = GAP
SLOPE_TOLERANCE = 0.3
SHOW_CASES = 8  # failing cases listed per claim


@dataclass
class Verdict:
    """One claim evaluated: ``holds`` is True / False, or None when no case could be evaluated."""
    claim: str
    form: str
    holds: bool | None
    cases: int
    held: int
    numbers: str
    published: str = ""
    oracle: bool = False

    @property
    def status(self) -> str:
        return {True: "holds", False: "does not hold", None: "not evaluated"}[self.holds]


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
    tidy = tables[name]
    metrics = claim.get("metrics")
    if metrics:
        tidy = tidy[tidy["metric"].isin(metrics)]
    return tidy


def _columns(tidy: pd.DataFrame, claim: dict, key: str) -> list[str]:
    """The columns a claim compares against: a list, or ``all`` (every other column, less ``except``)."""
    have = list(dict.fromkeys(tidy["column"]))
    want = claim[key]
    if want == "all":
        cols = [c for c in have if c != claim["column"] and c not in as_list(claim.get("except") or [])]
    else:
        cols = as_list(want)
    missing = [c for c in [claim["column"], *cols] if c not in have]
    if missing:
        raise ValueError(f"claim {claim['claim']!r}: columns {missing} are not in table {claim['table']!r} ({have})")
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


def _above(tables: dict, claim: dict, need: str) -> Verdict:
    tidy = _table(tables, claim)
    col, tol = claim["column"], float(claim.get("tolerance", 0.0))
    others = _columns(tidy, claim, "above")

    def evaluate(piv: pd.DataFrame) -> tuple[int, int, list[str]]:
        held, cases, fails = 0, 0, []
        for (ds, m), row in piv.iterrows():
            rest = row.reindex(others).dropna()
            if math.isnan(row.get(col, math.nan)) or rest.empty:
                continue
            cases += 1
            if row[col] >= rest.max() - tol - 1e-12:
                held += 1
            else:
                fails.append(f"{ds} {m} {row[col]:.3f} < {rest.max():.3f} ({rest.idxmax()})")
        return held, cases, fails

    held, cases, fails = evaluate(_cells(tidy))
    slack = f" - {tol:g}" if tol else ""
    form = (f"{col} ≥ max({', '.join(others)}){slack} per data set and metric "
            f"({', '.join(dict.fromkeys(tidy['metric']))}) of {claim['table']}")
    numbers = f"{_share(held, cases, need)}. " + _list(fails)
    pub = ""
    if tidy["published"].notna().any():
        ph, pc, _ = evaluate(_cells(tidy, "published"))
        pub = f"{ph} of {pc}" if pc else ""
    return Verdict(claim["claim"], form, _needed(held, cases, need), cases, held, numbers.strip(), pub,
                   _oracle(tidy, [col, *others]))


def _close(tables: dict, claim: dict, need: str) -> Verdict:
    tidy = _table(tables, claim)
    col, other, tol = claim["column"], claim["close"], float(claim.get("tolerance", CLOSE))
    _columns(tidy, {**claim, "above": [other]}, "above")

    def evaluate(piv: pd.DataFrame) -> tuple[int, int, list[str]]:
        held, cases, fails = 0, 0, []
        for (ds, m), row in piv.iterrows():
            a, b = row.get(col, math.nan), row.get(other, math.nan)
            if math.isnan(a) or math.isnan(b):
                continue
            cases += 1
            if abs(a - b) <= tol + 1e-12:
                held += 1
            else:
                fails.append(f"{ds} {m} {a:.3f} vs {b:.3f} ({a - b:+.3f})")
        return held, cases, fails

    held, cases, fails = evaluate(_cells(tidy))
    form = f"|{col} - {other}| ≤ {tol:g} per data set and metric of {claim['table']}"
    pub = ""
    if tidy["published"].notna().any():
        ph, pc, _ = evaluate(_cells(tidy, "published"))
        pub = f"{ph} of {pc}" if pc else ""
    return Verdict(claim["claim"], form, _needed(held, cases, need), cases, held,
                   f"{_share(held, cases, need)}. {_list(fails)}".strip(), pub, _oracle(tidy, [col, other]))


def _wins(tables: dict, claim: dict, need: str) -> Verdict:
    tidy = _table(tables, claim)
    col = claim["column"]
    others = _columns(tidy, claim, "wins")
    ref = tidy.loc[tidy["vs"] == "reference", "column"].unique()
    if list(ref) != [col]:
        raise ValueError(f"claim {claim['claim']!r}: table {claim['table']!r} compares against {list(ref)}, not {col!r}")
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
    return Verdict(claim["claim"], form, _needed(held, cases, need), cases, held, numbers, "",
                   _oracle(tidy, [col, *others]))


def _runs(results: pd.DataFrame, spec: dict, claim: dict) -> pd.DataFrame:
    g = results[results["algorithm"].isin(as_list(spec["algorithm"]))]
    if "status" in g.columns:
        g = g[g["status"].astype(str) != "not_finished"]
    g = _where(g, spec.get("where") or {})
    if g.empty:
        raise ValueError(f"claim {claim['claim']!r}: no runs of {spec['algorithm']}")
    return g


def _xcol(g: pd.DataFrame, x: str) -> str:
    return x if x in g.columns else f"param.{x}"


def _medians(results: pd.DataFrame, spec: dict, claim: dict, value: str) -> pd.Series:
    g = _runs(results, spec, claim)
    xc = _xcol(g, spec.get("x", "n"))
    if xc not in g.columns or value not in g.columns:
        raise ValueError(f"claim {claim['claim']!r}: results have no column {xc!r} or {value!r}")
    s = g.groupby(pd.to_numeric(g[xc], errors="coerce"))[value].median().dropna().sort_index()
    return s


def fitted_slope(x, y) -> float:
    """Least-squares slope of log(y) against log(x), as the papers' log-log plots (the same fit as the
    timing figures')."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def _slope(results: pd.DataFrame, claim: dict, need: str) -> Verdict:
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


def _below(results: pd.DataFrame, claim: dict, need: str) -> Verdict:
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
    others = as_list(claim["above"])
    missing = sorted(set(others) - set(tidy["column"]))
    if missing:
        raise ValueError(f"claim {claim['claim']!r}: columns {missing} are not in table {claim['table']!r}")
    g = _runs(results, spec, claim)
    xc = _xcol(g, spec["x"])
    xv = pd.to_numeric(g[xc], errors="coerce")
    g = g[(xv >= float(spec["from"]) - 1e-12) & (xv <= float(spec["to"]) + 1e-12)]
    means = g.groupby(["dataset", pd.to_numeric(g[xc])])[spec["metric"]].mean()
    levels = _cells(tidy)
    pub_levels = _cells(tidy, "published") if tidy["published"].notna().any() else None
    tol = float(claim.get("tolerance", 0.0))
    held, cases, fails, pub_ok, pub_cases = 0, 0, [], 0, 0
    for (ds, xval), v in means.items():
        if (ds, spec["metric"]) not in levels.index:
            continue
        rest = levels.loc[(ds, spec["metric"])].reindex(others).dropna()
        if rest.empty:
            continue
        cases += 1
        if v >= rest.max() - tol - 1e-12:
            held += 1
        else:
            fails.append(f"{ds} {spec['x']} = {xval:g}: {v:.3f} < {rest.max():.3f} ({rest.idxmax()})")
        if pub_levels is not None and (ds, spec["metric"]) in pub_levels.index:
            prest = pub_levels.loc[(ds, spec["metric"])].reindex(others).dropna()
            if len(prest):
                pub_cases += 1
                pub_ok += int(v >= prest.max() - tol - 1e-12)
    form = (f"{spec['algorithm']} ({spec['metric']}, mean over seeds) ≥ max({', '.join(others)}) of {claim['table']} "
            f"at each {spec['x']} in [{spec['from']:g}, {spec['to']:g}] per data set")
    pub = f"{pub_ok} of {pub_cases} (ours against the published levels)" if pub_cases else ""
    return Verdict(claim["claim"], form, _needed(held, cases, need), cases, held,
                   f"{_share(held, cases, need)}. {_list(fails)}".strip(), pub, _oracle(tidy, others))


def evaluate_claim(claim: dict, tables: dict, results: pd.DataFrame) -> Verdict:
    """One claim (a configuration entry, see the module docstring) on the paper's tables (name ->
    tidy frame) and its experiments' results."""
    need = claim.get("need", "all")
    kind = claim_kind(claim)
    if claim.get("sources") and "experiment" in results.columns:  # the claim's experiment and those it reuses
        results = results[results["experiment"].isin(claim["sources"])]
    if kind == "above":
        return _above(tables, claim, need)
    if kind == "close":
        return _close(tables, claim, need)
    if kind == "wins":
        return _wins(tables, claim, need)
    if kind == "slope":
        return _slope(results, claim, need)
    if kind == "below":
        return _below(results, claim, need)
    return _sweep(tables, results, claim, need)


def evaluate(claims: list[dict], tables: dict, results: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for c in claims:
        v = evaluate_claim(c, tables, results)
        rows.append({**asdict(v), "status": v.status})
    return pd.DataFrame(rows, columns=[*Verdict.__dataclass_fields__, "status"])


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


def gap_lines(tidy: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(cause, evidence, cells) of one table's cells far from the published values, one entry per
    cause and evidence."""
    if "cause" not in tidy.columns:
        return []
    off = tidy[tidy["cause"].fillna("") != ""]
    out = []
    for (cause, evidence), g in off.groupby(["cause", tidy.loc[off.index, "evidence"].fillna("")], sort=False):
        cells = ", ".join(f"{r.dataset} {r.column} {r.metric} ({r.diff:+.3f})" for r in g.itertuples())
        out.append((cause, evidence or "no evidence recorded", f"{len(g)}: {cells}"))
    return out


def cause_text(cause: str) -> str:
    return CAUSES.get(cause, cause)


def read_tables(paths: dict) -> dict:
    """name -> tidy table (the CSV :func:`mkclust.reporting.write_table` writes), text columns with
    empty strings where the CSV has none."""
    out = {}
    for name, path in paths.items():
        df = pd.read_csv(path)
        for c in ("vs", "cause", "evidence", "flags", "chosen", "na_reason"):
            if c in df.columns:
                df[c] = df[c].fillna("").astype(str)
        if "oracle" in df.columns:
            df["oracle"] = df["oracle"].astype(str).str.lower().eq("true")
        out[name] = df
    return out
