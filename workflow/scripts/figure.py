"""Rule figure: results CSVs (the experiment's and those it reuses) -> figures/<paper>/<figure>.{png,pdf}."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))  # noqa: F821
from mkclust._jobs import job  # noqa: E402
from mkclust.reporting import make_figure, read_results, save_figure  # noqa: E402

with job(snakemake, "figure"):  # noqa: F821
    spec = {"datasets": snakemake.params.datasets, **snakemake.params.spec}  # noqa: F821
    fig = make_figure(read_results(snakemake.input), spec)  # noqa: F821
    save_figure(fig, snakemake.output.png[: -len(".png")])  # noqa: F821
