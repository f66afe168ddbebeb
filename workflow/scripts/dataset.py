"""Rule dataset: load a registered dataset and write data/processed/<dataset>.npz."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1] / "src"))  # noqa: F821
from mkclust._jobs import job  # noqa: E402
from mkclust.experiments import make_dataset  # noqa: E402

with job(snakemake, "dataset") as log:  # noqa: F821
    ds = make_dataset(snakemake.params.spec)  # noqa: F821
    log.info("%s: n=%d d=%d classes=%d", ds.meta["name"], ds.n, ds.d, ds.n_classes)
    ds.save(snakemake.output[0])  # noqa: F821
