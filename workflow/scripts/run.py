"""Rule run: fit one run group (every seed of one estimator, dataset, bank and parameter set) and
write its run records as a JSON list, atomically. Each finished run is kept in ``<output>.partial/``
until then, so that a job stopped part-way resumes from its unfinished runs
(:mod:`mkclust.repro.checkpoint`)."""

import shutil

from mkclust._io import write_json
from mkclust.repro.jobs import job, summary
from mkclust.repro.run_spec import Run
from mkclust.repro.runner import run_group

with job(snakemake, "run") as log:  # noqa: F821
    runs = [Run(**r) for r in snakemake.params.specs.runs]  # noqa: F821
    partial = f"{snakemake.output[0]}.partial"  # noqa: F821
    records = run_group(runs, snakemake.input.dataset, snakemake.input.get("bank"), checkpoint=partial)  # noqa: F821
    for rec in records:
        rec["threads"] = snakemake.threads  # noqa: F821
    write_json(snakemake.output[0], records)  # noqa: F821
    shutil.rmtree(partial, ignore_errors=True)
    ok = [r["metrics"]["acc"] for r in records if r["status"] == "ok"]
    summary(log, f"{'/'.join(runs[0].group)}: {len(records)} run(s)"
                 + (f", mean acc {sum(ok) / len(ok):.3f}" if ok else "")
                 + (f", {len(records) - len(ok)} N/A" if len(ok) < len(records) else ""))
