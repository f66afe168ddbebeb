"""Rule verdict: a paper's tables and results -> figures/<paper>/verdict.{csv,md,html,png}."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))  # noqa: F821
from mkclust.repro.jobs import job, summary  # noqa: E402
from mkclust.repro.reporting import read_results  # noqa: E402
from mkclust.repro.reporting.tables import read_tables  # noqa: E402
from mkclust.repro.reporting.pages import write_verdict  # noqa: E402
from mkclust.repro.reporting.verdicts import evaluate  # noqa: E402

with job(snakemake, "verdict") as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    tables = read_tables(sm.params.tables)
    verdicts = evaluate(sm.params.claims, tables, read_results(sm.input.results), partial=bool(sm.params.left_out))
    write_verdict(sm.output.csv[: -len(".csv")], sm.params.title, verdicts, tables, data=sm.params.data,
                  left_out=sm.params.left_out, reference_run=sm.params.reference_run)
    for v in verdicts.itertuples():
        log.info("%s: %s (%s)", v.claim, v.status, v.numbers[:200])
    counts = verdicts["status"].value_counts().items()
    summary(log, f"verdict {sm.params.title}: " + ", ".join(f"{n} {status}" for status, n in counts))
