"""Captions of the Snakemake report's entries, from the configuration alone (they are computed when the
workflow is planned, before any output exists): a table's or figure's title, the selection rule of
each column, and what its marks mean. Kept free of heavy imports: the Snakefile calls it at parse time.
"""

from __future__ import annotations

from mkclust.repro.configuration import as_list

SEEDS = {"mean": "mean over seeds", "best_objective": "the seed with the best objective"}
PARAMS = {"only": "", "mean": "mean over its parameter sets",
          "best_param_by_metric": "the best parameter set by {by} (an oracle choice, †)"}

MARKS = ("† marks an oracle choice: a parameter setting picked by looking at the true labels, as the paper "
         "does. [flags] after a data set: it differs from the paper's (see its meta). In parentheses: the "
         "published value and our difference from it. • / ∘: the reference column is significantly better / "
         "worse (paired t-test, 95%).")


def paper_name(paper: str, papers: dict | None) -> str:
    """A paper's name in reports: its ``name`` in ``papers`` (a resolved configuration's ``papers:``,
    from the protocol files), else its key (the folder under figures/)."""
    return ((papers or {}).get(paper) or {}).get("name", paper)


def rst(text: str) -> str:
    """``text`` as one plain reStructuredText paragraph (inline markup characters escaped)."""
    for ch in ("\\", "*", "`", "|", "_"):
        text = text.replace(ch, "\\" + ch)
    return " ".join(text.split())


def column_rule(label: str, col: dict, spec: dict) -> str:
    """How one column's cell is reduced from runs, in words."""
    algs = ", ".join(as_list(col.get("algorithm", label)))
    seeds = col.get("seeds", spec.get("seeds", "mean"))
    params = col.get("params", spec.get("params", "only"))
    by = col.get("select_by", spec.get("select_by")) or "the first metric"
    by = "each metric separately" if by == "each" else by
    parts = [algs if algs != label else "", ", ".join(f"{k} = {v}" for k, v in (col.get("where") or {}).items()),
             SEEDS.get(seeds, seeds), PARAMS.get(params, params).format(by=by)]
    if col.get("published") and col["published"] != label:
        parts.append(f"published as {col['published']}")
    return f"{label}: " + ", ".join(p for p in parts if p)


def table_caption(name: str, spec: dict) -> str:
    spec = spec or {}
    text = f"{spec.get('title', name)}. Metrics: {', '.join(spec.get('metrics') or ['acc', 'nmi', 'purity'])}."
    cols = spec.get("columns") or {}
    if cols:
        text += " Columns: " + "; ".join(column_rule(k, v or {}, spec) for k, v in cols.items()) + "."
    if spec.get("compare"):
        text += f" Paired t-tests of {spec['compare']['against']} against every column (w/t/l rows count them)."
    if spec.get("legend"):
        text += " " + spec["legend"]
    text += (" " + MARKS + " Cells more than 2 points from the published value are listed below the table "
             "with the cause of the gap.")
    return rst(text)


#: what each figure kind draws (the kinds: mkclust.repro.reporting.figures.FIGURE_KINDS)
FIGURE_TEXT = {
    "bars": "one bar per column (reduced by the table selection rules), error bars the std over seeds, "
            "black marks the published values",
    "sweep": "the metric against a parameter, mean over seeds with std bars; dashed lines: table columns as "
             "levels; dotted black lines and stars: the published values where the paper prints them",
    "timing": "median over repeats with min-max bars; on log-log axes the legend gives the fitted slope",
    "heatmap": "mean over seeds at each grid point",
    "weights": "the learned kernel weight of each view, mean over runs",
    "ranks": "each method at its average rank over the data sets (1 the best); a red bar joins methods within "
             "Nemenyi's critical difference (CD), which the test cannot tell apart; Friedman's test in the title",
}


def figure_caption(name: str, spec: dict) -> str:
    spec = spec or {}
    text = f"{spec.get('title', name)}. {FIGURE_TEXT.get(spec.get('kind'), '').capitalize()}."
    cols = spec.get("columns") or spec.get("levels") or {}
    if cols:
        text += " Columns: " + "; ".join(column_rule(k, v or {}, spec) for k, v in cols.items()) + "."
    text += " " + MARKS
    return rst(text)


def verdict_caption(paper: str, claims: list[dict], papers: dict | None = None) -> str:
    """The report caption of a paper's verdict page (``papers``: as :func:`paper_name`)."""
    return rst(f"{paper_name(paper, papers)}: {len(claims)} headline claims of the paper, each tested as the paper "
               "tests it on this run (green: holds, red: does not hold), the same comparison on the published numbers, "
               "and every table cell more than 2 points from its published value with the cause of the gap "
               "(not-yet-explained where none is known).")
