"""Rule dataset: load a registered dataset and write data/processed/<dataset>.npz."""

from mkclust.repro.jobs import job, summary
from mkclust.repro.inputs import make_dataset

with job(snakemake, "dataset") as log:  # noqa: F821
    # the mirror is read from the config, not a rule parameter: where the raw bytes come from does
    # not change the data set (each file's sha256 is checked), so it must not trigger a rerun
    ds = make_dataset(snakemake.params.spec, raw_dir=snakemake.params.raw_dir,  # noqa: F821
                      mirror=snakemake.config.get("data_mirror"))  # noqa: F821
    for f in ds.meta["raw_files"]:
        log.info("raw file %s (sha256 %s) from %s", f["path"], f["sha256"][:12], f["obtained_from"])
    for flag in ds.meta["flags"]:
        log.warning("%s differs from the paper: %s", ds.meta["name"], flag)
    summary(log, f"data set {ds.meta['name']}: n={ds.n}, d={ds.d}, {ds.n_classes} classes"
                 + (f", {len(ds.meta['flags'])} difference(s) from the paper" if ds.meta["flags"] else ""))
    ds.save(snakemake.output[0])  # noqa: F821
