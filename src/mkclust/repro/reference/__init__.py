"""The papers' published numbers, transcribed once as CSV (one file per paper table), and the causes
of the gaps between them and ours (``causes.tsv``).

Columns of a published table: ``paper, table, dataset, column, metric, value, note``. Values are on
[0, 1] (accuracies printed in percent are divided by 100); ``metric`` uses mkclust's metric names.

``causes.tsv`` names, for cells of our tables (``figures/<paper>/<table>``) that differ from the
published value by more than 2 points, a cause category (:data:`CAUSES`) and its one-line evidence.
Its ``table``, ``dataset`` and ``column`` may list several values separated by commas (the row names
every combination; :func:`load_causes` returns one row per combination), its ``dataset``,
``column`` and ``metric`` may be ``*`` (any); the most specific matching row wins.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

COLUMNS = ["paper", "table", "dataset", "column", "metric", "value", "note"]
CAUSE_COLUMNS = ["paper", "table", "dataset", "column", "metric", "cause", "evidence"]
#: cause categories of a gap, in the order a reader checks them
CAUSES = {
    "data-differs": "our data set differs from the paper's (flagged in the table)",
    "setting-open": "a setting the paper leaves open; ours is a documented choice",
    "published-degenerate": "the published value is the trivial one-cluster (or otherwise degenerate) value",
    "published-inconsistent": "the published value contradicts another published value of the same cell (a misprint)",
    "follows-other-metric": ("the cell's other metric is within 2 points of its published value and this one is a "
                             "function of it (two clusters): the gap is that one's, carried over"),
    "model-prefers-other": "the method's objective prefers another labelling than the true one",
    "seed-noise": ("within two standard errors of the difference between two means over random starts "
                   "(ours and the authors')"),
    "authors-starts": ("the authors' own random starts, replayed, give the published value: the gap is the "
                       "draw of the starts, ours other draws of the same kind"),
    "authors-code-differs": "the authors' code runs differently from the paper's text",
    "not-yet-explained": "no cause found yet",
}


def available() -> list[str]:
    """The reference files, as ``<paper>_<table>`` stems."""
    return sorted(p.name[:-4] for p in resources.files(__name__).iterdir() if p.name.endswith(".csv"))


#: fields of causes.tsv that may list several values, separated by commas
CAUSE_LISTS = ("table", "dataset", "column")


def load_causes() -> pd.DataFrame:
    """The gap causes (``causes.tsv``), one row per (table, dataset, column) its lists name; an
    unknown cause category is a ValueError."""
    with (resources.files(__name__) / "causes.tsv").open() as fh:
        df = pd.read_csv(fh, sep="\t", comment="#", dtype=str, keep_default_na=False)
    if list(df.columns) != CAUSE_COLUMNS:
        raise ValueError(f"causes.tsv: columns {list(df.columns)}, expected {CAUSE_COLUMNS}")
    bad = sorted(set(df["cause"]) - set(CAUSES))
    if bad:
        raise ValueError(f"causes.tsv: unknown cause categories {bad}; known: {sorted(CAUSES)}")
    for field in CAUSE_LISTS:
        df = df.assign(**{field: df[field].str.split(",")}).explode(field)
    return df.reset_index(drop=True)


def load_reference(paper: str, table: str) -> pd.DataFrame:
    """Published values of one paper table; an unknown one is a ValueError listing what exists."""
    name = f"{paper}_{table}.csv"
    path = resources.files(__name__) / name
    if not path.is_file():
        raise ValueError(f"no published reference {name}; available: {', '.join(available())}")
    with path.open() as fh:
        df = pd.read_csv(fh, comment="#", dtype={"note": str})
    missing = set(COLUMNS) - set(df.columns)
    if missing:
        raise ValueError(f"{name} lacks columns {sorted(missing)}")
    return df
