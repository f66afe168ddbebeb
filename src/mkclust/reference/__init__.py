"""The papers' published numbers, transcribed once as CSV (one file per paper table).

Columns: ``paper, table, dataset, column, metric, value, note``. Values are on [0, 1] (accuracies
printed in percent are divided by 100); ``metric`` uses mkclust's metric names.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

COLUMNS = ["paper", "table", "dataset", "column", "metric", "value", "note"]


def available() -> list[str]:
    """The reference files, as ``<paper>_<table>`` stems."""
    return sorted(p.name[:-4] for p in resources.files(__name__).iterdir() if p.name.endswith(".csv"))


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
