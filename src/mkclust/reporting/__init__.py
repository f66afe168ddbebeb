"""Tables and figures from ``data/results/*.csv``, with the papers' published numbers beside ours.

Reporting reads results tables only; it never imports the algorithms.
"""

from mkclust.reporting.figures import FIGURE_KINDS, make_figure, save_figure
from mkclust.reporting.tables import attach_causes, build_table, read_results, reduce_runs, write_table

__all__ = ["attach_causes", "build_table", "read_results", "reduce_runs", "write_table", "make_figure", "save_figure", "FIGURE_KINDS"]
