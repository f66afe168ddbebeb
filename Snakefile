# mkclust: datasets -> kernel banks -> runs -> results tables -> paper tables and figures.
# All science lives in src/mkclust; the rules only wire its functions to files (docs/architecture.md).
from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/common.smk"
include: "workflow/rules/inputs.smk"

wildcard_constraints:
    dataset=r"[^/]+",
    bank=r"[^/]+",
    experiment=r"[^/]+",
    algorithm=r"[^/]+",
    param_id=r"[^/]+",
    seed=r"\d+",
    paper=r"[^/]+",
    name=r"[^/]+",

# Under a cluster executor these run where snakemake runs instead of waiting in the queue: datasets
# may download (compute nodes often have no network), the others read small text files for seconds.
localrules: dataset, aggregate, reference_results, table, figure, verdict, run_summary

# snakemake --report report.html: this landing page, then one category per paper (verdict, tables, figures)
report: "workflow/report/workflow.rst"

include: "workflow/rules/datasets.smk"
include: "workflow/rules/kernels.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        PLAN.targets.results_targets(),
        PLAN.targets.table_targets(),
        PLAN.targets.figure_targets(),
        PLAN.targets.verdict_targets(),
        PLAN.targets.summary_targets(),
    default_target: True
