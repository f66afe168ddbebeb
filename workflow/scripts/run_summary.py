"""Rule run_summary: every results table -> figures/run_summary.{json,rst,html} (what was run)."""
from pathlib import Path

from mkclust.repro.jobs import job, summary as job_summary
from mkclust.repro.reporting import read_results
from mkclust.repro.reporting.pages import job_cpu_seconds, run_summary, write_summary
from mkclust.repro.reporting.tables import read_tables

with job(snakemake, "run_summary") as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    results = {Path(p).stem: read_results([p]) for p in sm.input.results}
    finished = max(Path(p).stat().st_mtime for p in sm.input.results)   # the newest results table
    # with a reference run: every table, named figures/<paper>/<table>, for the cells that differ from it
    tables = read_tables({f"{Path(t).parent.name}/{Path(t).stem}": t for t in sm.input.tables})
    summary = run_summary(results, sm.config, sm.params.configfiles, sm.params.basedir, finished,
                          job_cpu_seconds(sm.params.benchmarks), tables, sm.params.reference_run,
                          sm.params.archive, list(sm.params.left_out), dict(sm.params.data_files),
                          stale=dict(sm.params.stale))
    write_summary(sm.output.json[: -len(".json")], summary)
    job_summary(log, f"run summary: {summary['runs']} runs, {summary['cpu_seconds']:.0f} s of fit CPU time, "
                     f"commit {summary['commit']}")
