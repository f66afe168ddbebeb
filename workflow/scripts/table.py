"""Rule table: results CSVs (the experiment's and those it reuses) -> figures/<paper>/<table>.{csv,md,tex}."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))  # noqa: F821
from mkclust._jobs import job  # noqa: E402
from mkclust.reporting import attach_causes, build_table, read_results, write_table  # noqa: E402

with job(snakemake, "table") as log:  # noqa: F821
    spec = snakemake.params.spec  # noqa: F821
    rows = spec.get("datasets") or snakemake.params.datasets  # noqa: F821  (a table's own rows, as figure.py)
    tidy = build_table(read_results(snakemake.input.results), spec, rows)  # noqa: F821
    base = snakemake.output.csv[: -len(".csv")]  # noqa: F821
    if spec.get("reference"):  # figures/<paper>/<table>: the key of the gap causes
        tidy = attach_causes(tidy, Path(base).parent.name, Path(base).name)
    write_table(tidy, base, spec.get("title", Path(base).name), spec.get("legend", ""))
    log.info("%d cells", len(tidy))
