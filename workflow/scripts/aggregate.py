"""Rule aggregate: run records of one experiment -> data/results/<experiment>.csv."""

from mkclust._io import atomic_open
from mkclust.repro.jobs import job, summary
from mkclust.repro.records import AT_BUDGET, load_records, records_to_frame, stopped_at_budget

with job(snakemake, "aggregate") as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    if sm.params.archive:
        from mkclust.repro.archive import archived_results
        from mkclust.repro.planning import plan
        df, missing = archived_results(sm.params.archive, plan(sm.config), sm.wildcards.experiment, sm.params.partial)
        log.info("%d runs from the archive %s%s", len(df), sm.params.archive,
                 f"; {len(missing)} run groups left out" if missing else "")
    else:
        df = records_to_frame(load_records(sm.input))
        log.info("%d runs", len(df))
    df[AT_BUDGET] = stopped_at_budget(df)   # here once, so that no table job imports the estimators
    with atomic_open(snakemake.output[0], "w", encoding="utf-8") as fh:  # noqa: F821
        df.to_csv(fh, index=False)
    summary(log, f"results of {sm.wildcards.experiment}: {len(df)} runs")
