"""Rule figure: results CSVs (the experiment's and those it reuses) -> figures/<paper>/<figure>.{png,pdf}."""

from mkclust.repro.jobs import job, summary
from mkclust.repro.reporting import make_figure, read_results, save_figure

with job(snakemake, "figure") as log:  # noqa: F821
    spec = {"datasets": snakemake.params.datasets, **snakemake.params.spec}  # noqa: F821
    results = read_results(snakemake.input)  # noqa: F821
    try:
        fig = make_figure(results, spec)
    except ValueError as exc:   # a rebuild from a partial archive: a figure whose runs are left out says so
        if not snakemake.params.partial:  # noqa: F821
            raise
        fig = make_figure(results.iloc[0:0], spec, "No runs: the run groups of this figure are left out "
                          f"(not in the results archive yet): {exc}.")
    save_figure(fig, snakemake.output.png[: -len(".png")])  # noqa: F821
    summary(log, f"figure {snakemake.output.png}")  # noqa: F821
