"""Tables and figures from ``data/results/*.csv``, with the papers' published numbers beside ours.

Reporting reads results tables only; it never imports the algorithms.
"""

from mkclust.repro.reporting.causes import attach_causes
from mkclust.repro.reporting.tables import build_table, read_results, reduce_runs, write_table

_FIGURES = ("FIGURE_KINDS", "make_figure", "save_figure")


def __getattr__(name):
    """The figure functions, imported on first use: matplotlib is for the figure jobs only."""
    if name in _FIGURES:
        from mkclust.repro.reporting import figures
        return getattr(figures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["attach_causes", "build_table", "read_results", "reduce_runs", "write_table", "make_figure", "save_figure",
           "FIGURE_KINDS"]
