"""Rule kernel_bank: build one named kernel bank of a processed dataset."""

from mkclust.repro.jobs import job, summary
from mkclust.datasets import Dataset
from mkclust.repro.inputs import make_bank

with job(snakemake, "kernel_bank") as log:  # noqa: F821
    ds = Dataset.load(snakemake.input[0])  # noqa: F821
    bank = make_bank(snakemake.params.spec, ds)  # noqa: F821
    log.info("bank %s: %d kernels (%s) on n=%d", bank.meta["bank"], bank.n_kernels, ", ".join(bank.names),
             bank.n_samples)
    summary(log, f"kernel bank {snakemake.wildcards.bank} on {snakemake.wildcards.dataset}: "  # noqa: F821
                 f"{bank.n_kernels} kernels, n={bank.n_samples}")
    bank.save(snakemake.output[0])  # noqa: F821
