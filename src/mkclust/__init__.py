"""mkclust: kernel clustering papers re-implemented, with a workflow that regenerates their tables.

The scientific library: :mod:`mkclust.algorithms` (scikit-learn style estimators on precomputed
kernels), :mod:`mkclust.kernels` (kernel functions and named banks), :mod:`mkclust.datasets`
(registry of data sets) and :mod:`mkclust.metrics` (clustering metrics). The reproduction machinery
(configurations, planning, running, reporting, the results archive) is :mod:`mkclust.repro`; the
library never imports it. ``mkclust <tool>`` (:mod:`mkclust.__main__`) is the command line of both.
"""

__version__ = "0.1.0"
