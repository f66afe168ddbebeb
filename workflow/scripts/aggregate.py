"""Rule aggregate: run records of one experiment -> data/results/<experiment>.csv."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))  # noqa: F821
from mkclust._io import atomic_open  # noqa: E402
from mkclust.repro.jobs import job, summary  # noqa: E402
from mkclust.repro.records import load_records, records_to_frame  # noqa: E402

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
    with atomic_open(snakemake.output[0], "w", encoding="utf-8") as fh:  # noqa: F821
        df.to_csv(fh, index=False)
    summary(log, f"results of {sm.wildcards.experiment}: {len(df)} runs")
