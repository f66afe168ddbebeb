"""The reproduction machinery: what turns a configuration into the papers' tables, figures and
verdicts. The scientific library (:mod:`mkclust.algorithms`, :mod:`mkclust.kernels`,
:mod:`mkclust.datasets`, :mod:`mkclust.metrics`) never imports it.

From a configuration to a plan: :mod:`~mkclust.repro.configuration` (configurations built from
protocols), :mod:`~mkclust.repro.planning` (every run group, data set, bank and output),
:mod:`~mkclust.repro.run_spec` (one planned run), :mod:`~mkclust.repro.pseudo` (run parameters that
choose an estimator's input).

Running: :mod:`~mkclust.repro.inputs` (the data set, bank and input of a run),
:mod:`~mkclust.repro.runner` (a run group -> its run records), :mod:`~mkclust.repro.records`,
:mod:`~mkclust.repro.resources` (each job's memory and time), :mod:`~mkclust.repro.estimate` (what a
configuration costs), :mod:`~mkclust.repro.jobs` (a workflow job's logging and threads),
:mod:`~mkclust.repro.provenance` (commit, versions, BLAS).

Reporting: :mod:`~mkclust.repro.reporting` (tables, figures, verdicts, pages),
:mod:`~mkclust.repro.reference` (the published values and the causes of gaps),
:mod:`~mkclust.repro.captions`, :mod:`~mkclust.repro.archive` (the results archive of a reference run).
"""
