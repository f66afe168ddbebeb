# Stage 5: results -> figures/<paper>/<table>.{csv,md,tex,html} and figures/<paper>/<figure>.{png,pdf}
# The .html table and the .png figure are the Snakemake report's entries, under their paper's category.
# An experiment's outputs read its own results and those of the experiments it reuses.


def output_spec(kind, wc):
    for exp, outs in PLAN.outputs.items():
        if config["experiments"][exp]["paper"] == wc.paper and wc.name in outs[kind]:
            return exp, outs[kind][wc.name] or {}
    raise ValueError(f"no {kind[:-1]} {wc.paper}/{wc.name} in the configuration")


def table_inputs(wc):
    """The results a table reads and, for a table with published values, the package's reference
    files (its published values and causes.tsv): a table is rebuilt when a cause or a published value
    changes, not only when a result does."""
    exp, spec = output_spec("tables", wc)
    inputs = {"results": PLAN.targets.source_results(exp)}
    if REFERENCE_RUN:   # the reference run's rows of the same experiments (rule reference_results)
        inputs["reference_results"] = [reference_results_path(DATA, e) for e in PLAN.sources(exp)]
    if spec.get("reference"):
        ref = spec["reference"]
        inputs["reference"] = [str(REFERENCE_DIR / f"{ref['paper']}_{ref['table']}.csv"),
                               str(REFERENCE_DIR / "causes.tsv")]
    return inputs


rule table:
    wildcard_constraints:
        name=r"(?!verdict\.)[^/]+",   # figures/<paper>/verdict.* is rule verdict's
    input:
        unpack(table_inputs),
    output:
        csv=paper_output(FIGS, "{paper}", "{name}", "csv"),
        md=paper_output(FIGS, "{paper}", "{name}", "md"),
        tex=paper_output(FIGS, "{paper}", "{name}", "tex"),
        html=report(paper_output(FIGS, "{paper}", "{name}", "html"), caption="../report/table.rst",
                    category=lambda wc: paper_name(wc.paper, PAPERS), subcategory="Tables", labels={"table": "{name}"}),
    params:
        spec=lambda wc: output_spec("tables", wc)[1],
        caption=lambda wc: table_caption(wc.name, output_spec("tables", wc)[1]),
        datasets=lambda wc: config["experiments"][output_spec("tables", wc)[0]]["datasets"],
    resources:
        mem_mb=lambda wc, input, attempt: RES.records_mem_mb(input, attempt),
        runtime=lambda wc, attempt: RES.BASE_MINUTES * attempt,
    log:
        f"{DATA}/logs/tables/{{paper}}/{{name}}.log",
    conda:
        ENV
    script:
        "../scripts/table.py"


rule figure:
    wildcard_constraints:
        name=r"(?!verdict\.)[^/]+",   # figures/<paper>/verdict.* is rule verdict's
    input:
        lambda wc: PLAN.targets.source_results(output_spec("figures", wc)[0]),
    output:
        png=report(paper_output(FIGS, "{paper}", "{name}", "png"), caption="../report/figure.rst",
                   category=lambda wc: paper_name(wc.paper, PAPERS), subcategory="Figures",
                   labels={"figure": "{name}"}),
        pdf=paper_output(FIGS, "{paper}", "{name}", "pdf"),
    params:
        spec=lambda wc: output_spec("figures", wc)[1],
        caption=lambda wc: figure_caption(wc.name, output_spec("figures", wc)[1]),
        datasets=lambda wc: config["experiments"][output_spec("figures", wc)[0]]["datasets"],
        partial=bool(ARCHIVE and config.get("archive_partial")),
    resources:
        mem_mb=lambda wc, input, attempt: RES.records_mem_mb(input, attempt),
        runtime=lambda wc, attempt: RES.BASE_MINUTES * attempt,
    log:
        f"{DATA}/logs/figures/{{paper}}/{{name}}.log",
    conda:
        ENV
    script:
        "../scripts/figure.py"
