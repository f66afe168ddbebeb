"""Rule verdict: a paper's tables and results -> figures/<paper>/verdict.{csv,md,html,png}."""

from mkclust.repro.jobs import job, summary
from mkclust.repro.reporting import read_results
from mkclust.repro.reporting.tables import read_tables
from mkclust.repro.reporting.pages import write_verdict
from mkclust.repro.reporting.verdicts import evaluate

with job(snakemake, "verdict") as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    tables = read_tables(sm.params.tables)
    verdicts = evaluate(sm.params.claims, tables, read_results(sm.input.results), partial=bool(sm.params.left_out))
    write_verdict(sm.output.csv[: -len(".csv")], sm.params.title, verdicts, tables, data=sm.params.data,
                  left_out=sm.params.left_out, stale=dict(sm.params.stale), reference_run=sm.params.reference_run)
    for v in verdicts.itertuples():
        log.info("%s: %s (%s)", v.claim, v.status, v.numbers[:200])
    counts = verdicts["status"].value_counts().items()
    summary(log, f"verdict {sm.params.title}: " + ", ".join(f"{n} {status}" for status, n in counts))
