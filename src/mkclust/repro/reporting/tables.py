"""Paper tables: many runs become one cell (:mod:`mkclust.repro.reporting.reduce`: a seed rule, then a
parameter rule), one row per (data set, column, metric), written as CSV, markdown, LaTeX and HTML with
the published values, the gaps' causes and the legend."""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from mkclust._io import atomic_open, read_csv_exact
from mkclust.repro.configuration import as_list
from mkclust.repro.records import AT_BUDGET, stopped_at_budget
from mkclust.repro.reference import CAUSES, load_reference
from mkclust.repro.reporting._html import html_page, html_table, write_text
from mkclust.repro.reporting.causes import GAP, cell_list, gap_groups
from mkclust.repro.reporting.pairwise import ROPE
from mkclust.repro.reporting.reduce import NoSelector, at_budget, behind, reduce_runs
from mkclust.repro.reporting.reference_run import REFERENCE_MARKS

def read_results(paths) -> pd.DataFrame:
    """The rows of one or more results tables (an experiment's and those it reuses), as one frame. Each
    column's type read from the whole file, as the archive reads it (:func:`mkclust._io.read_csv_exact`)."""
    return pd.concat([read_csv_exact(p) for p in paths], ignore_index=True)


def read_table(path) -> pd.DataFrame:
    """A tidy table read back from the CSV :func:`write_table` writes: text columns with empty strings
    where the CSV has none, ``oracle`` as booleans."""
    df = pd.read_csv(path)
    for c in ("vs", "cause", "evidence", "flags", "chosen", "na_reason", "reference_state"):
        if c in df.columns:
            df[c] = df[c].astype(object).fillna("").astype(str)   # an all-empty column is read as float
    if "oracle" in df.columns:
        df["oracle"] = df["oracle"].astype(str).str.lower().eq("true")
    return df


def read_tables(paths: dict) -> dict:
    """name -> tidy table (:func:`read_table`)."""
    return {name: read_table(path) for name, path in paths.items()}


def xcol(results: pd.DataFrame, x: str) -> str:
    """The results column of ``x``: a column itself (``n``, ``seed``) or the parameter ``param.<x>``."""
    if x in results.columns:
        return x
    if f"param.{x}" in results.columns:
        return f"param.{x}"
    raise ValueError(f"results have no column or parameter {x!r}")


def _where(g: pd.DataFrame, where: dict) -> pd.DataFrame:
    """Keep the runs whose parameters equal ``where``'s values, or one of them for a list (numbers
    compared as numbers: a CSV column holding 0 next to missing values reads back as 0.0)."""
    for k, v in where.items():
        col = f"param.{k}"
        if col not in g.columns:
            return g.iloc[0:0]
        keep = pd.Series(False, index=g.index)
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                keep |= pd.to_numeric(g[col], errors="coerce") == x
            else:
                keep |= g[col].astype(str) == str(x)
        g = g[keep]
    return g


def _per_seed(picked: pd.DataFrame, metric: str) -> pd.Series:
    """A cell's value per seed, for the significance tests, from the runs behind it (:func:`behind`): the
    runs of the chosen parameter set, or (for a mean over the grid) the mean over parameter sets per seed."""
    return picked.groupby("seed")[metric].mean()


def paired_outcome(ref: pd.Series, other: pd.Series, alpha: float = 0.05) -> tuple[str, float]:
    """Paired t-test of a reference column against another over the seeds they share: ``"win"`` when
    the reference is significantly better at level ``alpha`` (two-sided), ``"loss"`` when
    significantly worse, ``"tie"`` otherwise; with the p-value. A column with one run (a
    deterministic method) is compared as a constant (a one-sample test of the reference's runs).
    Differences that are all equal are decided by their sign (p = 0), or a tie when zero."""
    if len(other) == 1 and len(ref) > 1:
        d = ref.to_numpy(float) - float(other.iloc[0])
    else:
        common = ref.index.intersection(other.index)
        d = ref.loc[common].to_numpy(float) - other.loc[common].to_numpy(float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return "", math.nan
    if np.allclose(d, 0.0, atol=1e-12):
        return "tie", 1.0
    if np.ptp(d) <= 1e-12:
        p = 0.0
    else:
        from scipy import stats   # here: a second to import, for the tables that compare paired seeds

        p = float(stats.ttest_1samp(d, 0.0).pvalue)
    if p < alpha:
        return ("win" if d.mean() > 0 else "loss"), p
    return "tie", p


def finished_runs(results: pd.DataFrame) -> pd.DataFrame:
    """The runs that finished. A run with ``status`` "not_finished" (declined without trying, or stopped
    by its budget) has no result: it enters no table cell (:func:`build_table` makes the cell N/A), no
    claim, no timing figure and no method's CPU seconds per fit, which are those of the fits that gave
    a result (a declined run's hundredth of a second would count as a fit)."""
    return results[results["status"].astype(str) != "not_finished"] if "status" in results.columns else results


def column_runs(results: pd.DataFrame, spec: dict):
    """(label, its finished runs) for each column of a table spec: the runs of its algorithm labels."""
    results = finished_runs(results)
    for label, col in (spec.get("columns") or {}).items():
        yield label, results[results["algorithm"].isin(as_list(col.get("algorithm", label)))]


def build_table(results: pd.DataFrame, spec: dict, datasets: list[str] | None = None) -> pd.DataFrame:
    """The tidy table: one row per (dataset, column, metric) with value, std, published, diff.

    ``spec``: ``metrics`` (list), optional ``columns`` {label: {algorithm (a label or a list of
    labels), seeds, params, where, published}}, defaults ``seeds`` / ``params`` / ``select_by``, optional ``reference``
    {paper, table} naming the published numbers (matched by dataset, the column's ``published``
    name, default its label, and metric), optional ``compare`` {against: a column, alpha (0.05)}:
    paired t-tests of that column against every other per (dataset, metric), in ``vs`` (win / tie /
    loss for the reference column, the papers' bullet / circle) and ``p_value``.

    Runs with ``status`` "not_finished" (a method that declined or ran out of its budget) do not enter the
    reductions; a cell with no other run is N/A: value NaN and the runs' ``reason``.
    """
    metrics = list(spec.get("metrics") or ["acc", "nmi", "purity"])
    columns = spec.get("columns") or {a: {"algorithm": a} for a in results["algorithm"].unique()}
    datasets = datasets or list(dict.fromkeys(results["dataset"]))
    ref = None
    if spec.get("reference"):
        r = spec["reference"]
        ref = load_reference(r["paper"], r["table"]).set_index(["dataset", "column", "metric"])["value"]
    rows, series = [], {}
    compare = bool(spec.get("compare"))   # paired tests of the columns' per-seed values (_compare)
    # only the columns a cell reads (a results table also holds diagnostics, timings and parameters as
    # text), each data set's runs split off once and then each algorithm's, in their order: copies of
    # every run and column per cell were most of a benchmark table's time (60,000 runs, 600 cells)
    keys = {spec.get("select_by"), *(c.get("select_by") for c in columns.values())}
    if AT_BUDGET not in results.columns:   # results not written by rule aggregate: computed once, not per cell
        results = results.assign(**{AT_BUDGET: stopped_at_budget(results)})
    narrow = results[[c for c in results.columns if c in CELL_COLUMNS or c in metrics or c in keys
                      or c.startswith(("param.", "derived."))]]
    by_dataset = dict(tuple(narrow.groupby("dataset", sort=False, observed=True)))
    for ds in datasets:
        runs = by_dataset.get(ds, narrow.iloc[0:0])
        by_algorithm = dict(tuple(runs.groupby("algorithm", sort=False, observed=True)))
        for label, col in columns.items():
            algs = as_list(col.get("algorithm", label))  # a label, or a list of labels (e.g. one per subset size)
            g = (by_algorithm.get(algs[0], runs.iloc[0:0]) if len(algs) == 1
                 else runs[runs["algorithm"].isin(algs)])
            g = _where(g, col.get("where") or {})
            if g.empty:
                continue
            seeds = col.get("seeds", spec.get("seeds", "mean"))
            params = col.get("params", spec.get("params", "only"))
            na = (g["status"].astype(str).eq("not_finished") if "status" in g.columns
                  else pd.Series(False, index=g.index))
            ok = g[~na]
            stopped = at_budget(ok)
            flags = ";".join(sorted({f for f in g["dataset_flags"] if isinstance(f, str) and f}))   # NaN: none
            derived = ";".join(sorted({f"{c[len('derived.'):]}={v:g}" for c in g.columns if c.startswith("derived.")
                                       for v in g[c].dropna().unique()}))   # e.g. the imbalanced sets' balance
            red = None
            if not ok.empty:
                try:
                    red = reduce_runs(ok, metrics, seeds, params, col.get("select_by", spec.get("select_by")))
                    red["reason"] = ""
                except NoSelector as exc:
                    reason = str(exc)
            else:
                reason = str(g["reason"].iloc[0])
            if red is None:
                red = {m: (math.nan, math.nan) for m in metrics}
                red.update({"n_runs": 0, "oracle": False, "chosen": "", "reason": reason,
                            "se": {m: math.nan for m in metrics}})
            # the runs behind each value: for the share stopped at a budget and the paired tests only
            core = (ok[[c for c in ("param_id", "seed", *metrics) if c in ok.columns]]   # what behind() returns
                    if red["n_runs"] and (stopped is not None or compare) else None)
            for m in metrics:
                value, std = red[m]
                picked = behind(core, red["chosen"], m) if core is not None else None
                pub = math.nan
                if ref is not None:
                    pub = float(ref.get((ds, col.get("published", label), m), math.nan))
                rows.append({"dataset": ds, "column": label, "metric": m, "value": float(value),
                             "std": float(std), "published": pub, "diff": float(value) - pub,
                             "n_runs": red["n_runs"], "seeds_rule": seeds, "params_rule": params,
                             "oracle": red["oracle"], "chosen": red["chosen"], "flags": flags, "derived": derived,
                             "na_reason": red["reason"], "vs": "", "p_value": math.nan, "se": float(red["se"][m]),
                             "at_budget": (stopped[picked.index].mean()
                                           if stopped is not None and picked is not None else math.nan)})
                if compare and picked is not None and seeds == "mean" and ";" not in red["chosen"]:
                    series[(ds, label, m)] = _per_seed(picked, m)
    tidy = pd.DataFrame(rows, columns=TIDY_COLUMNS)
    skip = set(spec.get("not_counted") or {})
    if skip and len(tidy):
        _flag(tidy, skip, NOT_COUNTED)
    if spec.get("trivial") and len(tidy):
        _flag(tidy, trivial_sets(tidy, results), TRIVIAL)
    if compare and len(tidy):
        _compare(tidy, series, spec["compare"], skip)
    return tidy


#: the decimals the tables show, to which values are rounded before they are ranked (:mod:`.ranks`)
#: or compared with the one-cluster partition (:func:`trivial_sets`)
DECIMALS = 3


#: the flag of a data set on which no column's accuracy beats the one-cluster partition (every sample in
#: one cluster: the largest class's share, the runs' ``majority_share``) by more than :data:`ROPE`, in a
#: table whose spec asks (``trivial: true``): its ranks order noise, so it is shown but ranked apart
#: (:mod:`.ranks`)
TRIVIAL = "no better than one cluster"


def _flag(tidy: pd.DataFrame, sets, flag: str) -> None:
    """Add ``flag`` to the ``flags`` of the rows of ``sets`` (in place)."""
    rows = tidy["dataset"].isin(list(sets))
    tidy.loc[rows, "flags"] = [f"{f};{flag}" if f else flag for f in tidy.loc[rows, "flags"]]


def has_flag(tidy: pd.DataFrame, flag: str) -> np.ndarray:
    """A boolean mask of the rows of ``tidy`` whose ``flags`` hold ``flag``."""
    return np.asarray([flag in str(f).split(";") for f in tidy["flags"].fillna("")], dtype=bool)


def trivial_sets(tidy: pd.DataFrame, results: pd.DataFrame, margin: float = ROPE) -> list[str]:
    """The data sets of ``tidy`` where no column's accuracy exceeds the one-cluster partition's (the
    largest class's share, ``majority_share`` of the runs) by more than ``margin``, both rounded to the
    three decimals the tables show. A set without a run recording its share is not judged (records
    written before the field existed)."""
    if "acc" not in set(tidy["metric"]):
        raise ValueError("trivial: true compares accuracy with the one-cluster partition: the table needs acc "
                         f"among its metrics (it has {sorted(set(tidy['metric']))})")
    if "majority_share" not in results.columns:
        return []
    share = results.groupby("dataset")["majority_share"].max().dropna().round(DECIMALS)
    best = tidy[tidy["metric"] == "acc"].groupby("dataset", sort=False)["value"].max().round(DECIMALS)
    return [d for d, b in best.items() if d in share.index and not b - share[d] > margin + 1e-9]


#: the flag of a data set a table shows but leaves out of its w/t/l rows and of every claim
#: (the table's ``not_counted``: e.g. a second copy of another row's data)
NOT_COUNTED = "not counted"


def counted(tidy: pd.DataFrame) -> pd.DataFrame:
    """The rows of a table that count in its claims (not flagged :data:`NOT_COUNTED`)."""
    return tidy.loc[~has_flag(tidy, NOT_COUNTED)]   # a boolean mask, also for a table with no rows


#: the columns of a results table :func:`build_table` reads besides its metrics, the scores a column is
#: chosen by, the parameters (``param.*``: ``where``, budgets) and the derived values (``derived.*``)
CELL_COLUMNS = ("dataset", "algorithm", "status", "reason", "dataset_flags", "param_id", "seed", "objective",
                "estimator", "n_iter", AT_BUDGET)


TIDY_COLUMNS = ["dataset", "column", "metric", "value", "std", "published", "diff", "n_runs", "seeds_rule",
                "params_rule", "oracle", "chosen", "flags", "derived", "na_reason", "vs", "p_value", "se", "at_budget"]


def _compare(tidy: pd.DataFrame, series: dict, spec: dict, skip: set = frozenset()) -> None:
    """Fill ``vs`` and ``p_value`` of every column against ``spec['against']`` (in place), on every
    data set but those in ``skip``."""
    against, alpha = spec["against"], float(spec.get("alpha", 0.05))
    if against not in set(tidy["column"]):
        raise ValueError(f"compare.against: no column {against!r} in the table ({sorted(set(tidy['column']))})")
    for i, r in tidy.iterrows():
        key, refkey = (r["dataset"], r["column"], r["metric"]), (r["dataset"], against, r["metric"])
        if r["column"] == against:
            tidy.loc[i, "vs"] = "reference"
            continue
        if key not in series or refkey not in series or r["dataset"] in skip:
            continue
        tidy.loc[i, ["vs", "p_value"]] = paired_outcome(series[refkey], series[key], alpha)


def _gap_text(tidy: pd.DataFrame) -> tuple[str, list[tuple[str, str]]]:
    """The heading and, per (cause, evidence), the cause and the rest of its line, of the cells far
    from the published value (plain text; the markdown adds its emphasis); no heading when none."""
    groups = gap_groups(tidy)
    if not groups:
        return "", []
    heading = (f"Cells more than {GAP * 100:.0f} points from the published value: {sum(len(g) for *_, g in groups)} "
               f"of {int(tidy['published'].notna().sum())} with a published value.")
    return heading, [(c, f", {CAUSES[c]}: {e or 'no evidence recorded'} [{len(g)} cells: {cell_list(g)}]")
                     for c, e, g in groups]


def _gaps(tidy: pd.DataFrame) -> list[str]:
    """Markdown lines: the cells more than GAP from the published value, grouped by cause and
    evidence, each group with its cells (dataset column metric)."""
    heading, lines = _gap_text(tidy)
    if not heading:
        return []
    return [f"**{heading}**", "", *(f"- *{cause}*{rest}" for cause, rest in lines), ""]


MARKS = {"win": ("•", r"$\bullet$"), "loss": ("∘", r"$\circ$")}


def _cell(r, tex: bool = False) -> str:
    pm = r"$\pm$" if tex else "±"
    if math.isnan(r["value"]) and r.get("na_reason"):
        s = "N/A"
        if not math.isnan(r["published"]):
            s += f" ({r['published']:.3f})"
        return s
    if math.isnan(r["value"]) and math.isnan(r["published"]):
        return "–"   # a metric its runs do not define (a single-kernel run's kernel weights)
    s = f"{r['value']:.3f}"
    if not math.isnan(r["std"]):
        s += f" {pm} {r['std']:.3f}"
    if r["oracle"]:
        s += r"$^\dagger$" if tex else " †"
    share = r.get("at_budget")
    if isinstance(share, float) and share > 0:
        s += rf"$^\ddagger${100 * share:.0f}\%" if tex else f" ‡{100 * share:.0f}%"
    if r.get("vs") in MARKS:
        s += " " + MARKS[r["vs"]][int(tex)]
    state = r.get("reference_state")
    if isinstance(state, str) and state in REFERENCE_MARKS:
        mark = REFERENCE_MARKS[state][int(tex)]
        s += f" [ref {mark}]" if state == "identical" else f" [ref {r['reference']:.3f} {mark}]"
    if not math.isnan(r["published"]):
        s += f" ({r['published']:.3f}, {r['diff']:+.3f})"
    return s


def _wide(tidy: pd.DataFrame, tex: bool, order: list[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """The paper's layout: one row per (dataset, metric), one column per table column, in ``order``
    (the spec's; a column without runs on the first data sets would otherwise come last)."""
    present = list(dict.fromkeys(tidy["column"]))
    cols = [c for c in order or [] if c in present] + [c for c in present if c not in (order or [])]
    header = ["dataset", "metric"] + cols
    body = []
    for ds, g in tidy.groupby("dataset", sort=False):
        flags = g["flags"].iloc[0]
        name = ds + (f" [{flags}]" if flags else "")
        for m, h in g.groupby("metric", sort=False):
            cells = {r["column"]: _cell(r, tex) for _, r in h.iterrows()}
            body.append([name, m] + [cells.get(c, "–") for c in cols])
    compared = tidy[tidy["vs"].isin(["win", "tie", "loss"])]
    if len(compared):  # the papers' win/tie/loss rows, per metric
        against = tidy.loc[tidy["vs"] == "reference", "column"].iloc[0]
        for m, h in compared.groupby("metric", sort=False):
            counts = {c: "/".join(str(int((k["vs"] == o).sum())) for o in ("win", "tie", "loss"))
                      for c, k in h.groupby("column")}
            body.append([f"{against}: w/t/l", m] + [counts.get(c, "") for c in cols])
    return header, body


def _legend(tidy: pd.DataFrame, title: str, note: str = "") -> str:
    rules = sorted(set(zip(tidy["seeds_rule"], tidy["params_rule"])))
    text = (f"{title}. Ours: seed rule / parameter rule = "
            + "; ".join(f"{s} / {p}" for s, p in rules) + ".")
    if note:
        text += " " + note.strip()
    if tidy["published"].notna().any():
        text += " In parentheses: the published value and our difference from it."
    if "reference_state" in tidy.columns and tidy["reference_state"].fillna("").ne("").any():
        text += (" [ref ...]: the reference run's value; = identical, ≈ within two standard errors of the"
                 " difference of the two means, ≠ beyond them (a cell without seed noise must be identical).")
    if tidy["oracle"].any():
        text += " † oracle choice: the best parameter setting by the true labels (as the paper does)."
    if "at_budget" in tidy.columns and (tidy["at_budget"].fillna(0) > 0).any():
        text += (" ‡p%: p % of the runs behind the value stopped at their budget before their own stopping rule"
                 " held (ODMC: max_iter steps with the duality gap above gap_tol; LG-MMC: max_labels with a"
                 " violated label left): the value is what that budget reaches, not the converged method's.")
    if tidy["vs"].isin(["win", "tie", "loss"]).any():
        text += (" • / ∘: the reference column is significantly better / worse (paired t-test over the repeats"
                 " at 95%); w/t/l rows count its wins, ties and losses.")
    if (tidy["na_reason"].fillna("") != "").any():
        reasons = sorted(set(tidy["na_reason"].fillna("")) - {""})
        text += " N/A: not run or not finished (" + "; ".join(reasons[:3]) + (" ..." if len(reasons) > 3 else "") + ")."
    own = {NOT_COUNTED, TRIVIAL}
    if any(set(str(f).split(";")) - own - {""} for f in counted(tidy)["flags"].fillna("")):
        text += " [flags] mark data sets that differ from the paper's (see the dataset meta)."
    if has_flag(tidy, TRIVIAL).any():
        text += (f" [{TRIVIAL}]: no column's accuracy beats putting every sample in one cluster (the largest class's"
                 f" share) by more than {ROPE:g}: shown, ranked apart (the ranking's lines).")
    if len(counted(tidy)) < len(tidy):
        text += (f" [{NOT_COUNTED}]: shown, but left out of the w/t/l rows and of every claim"
                 " (the table's not_counted; its cause in the gaps below).")
    derived = tidy.loc[tidy["derived"].fillna("") != "", ["dataset", "derived"]].drop_duplicates()
    if len(derived):
        by = derived.groupby("derived", sort=False)["dataset"].apply(lambda d: ", ".join(dict.fromkeys(d)))
        pairs = "; ".join(f"{value} on {sets}" for value, sets in by.items())
        text += f" Parameters derived from the data set: {pairs}."
    return text


def write_table(tidy: pd.DataFrame, base: str, title: str = "", legend: str = "",
                columns: list[str] | None = None) -> list[str]:
    """Write ``base.csv`` (tidy), ``base.md``, ``base.tex`` and ``base.html`` (wide, the columns in the
    order ``columns`` gives), each atomically; ``legend`` (the table's own note, e.g. each column's
    search budget) follows the generated legend."""
    paths = [f"{base}.csv", f"{base}.md", f"{base}.tex", f"{base}.html"]
    with atomic_open(paths[0], "w", encoding="utf-8") as fh:
        tidy.to_csv(fh, index=False)
    header, body = _wide(tidy, tex=False, order=columns)
    md = [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in body]
    caption = _legend(tidy, title, legend) if len(tidy) else ""
    md += ["", caption or "(no runs)", ""]
    md += _gaps(tidy)
    with atomic_open(paths[1], "w", encoding="utf-8") as fh:
        fh.write("\n".join(md))
    theader, tbody = _wide(tidy, tex=True, order=columns)
    esc = lambda s: s.replace("_", r"\_").replace("%", r"\%").replace("#", r"\#")  # noqa: E731
    tex = [r"\begin{table}[t]", r"\centering", r"\small",
           r"\begin{tabular}{ll" + "c" * (len(theader) - 2) + "}", r"\hline",
           " & ".join(esc(h) for h in theader) + r" \\", r"\hline"]
    tex += [" & ".join([esc(r[0]), esc(r[1])] + r[2:]) + r" \\" for r in tbody]
    tex += [r"\hline", r"\end{tabular}", r"\caption{" + esc(caption or title) + "}",
            r"\end{table}", ""]
    with atomic_open(paths[2], "w", encoding="utf-8") as fh:
        fh.write("\n".join(tex))
    heading, lines = _gap_text(tidy)
    gaps = [f"<p>{html.escape(t)}</p>" for t in ([heading] if heading else []) + [f"- {c}{rest}" for c, rest in lines]]
    write_text(paths[3], html_page(title, [html_table(header, body, caption=caption or "(no runs)"), *gaps]))
    return paths
