"""mkclust: kernel clustering papers re-implemented, with a workflow that regenerates their tables.

Subpackages: :mod:`mkclust.datasets` (registry of data sets), :mod:`mkclust.kernels` (kernel
functions and named banks), :mod:`mkclust.metrics` (clustering metrics) and
:mod:`mkclust.algorithms` (scikit-learn style estimators).
"""

__version__ = "0.1.0"
