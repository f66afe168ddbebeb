"""Rule run: fit one estimator on one dataset and bank; write the run record JSON atomically."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1] / "src"))  # noqa: F821
from mkclust._io import write_json  # noqa: E402
from mkclust._jobs import job  # noqa: E402
from mkclust.experiments import Run, run_one  # noqa: E402

with job(snakemake, "run") as log:  # noqa: F821
    run = Run(**snakemake.params.run)  # noqa: F821
    rec = run_one(run, snakemake.input.dataset, snakemake.input.get("bank"))  # noqa: F821
    rec["threads"] = snakemake.threads  # noqa: F821
    write_json(snakemake.output[0], rec)  # noqa: F821
