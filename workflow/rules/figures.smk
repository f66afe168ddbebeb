# Stage 5: results -> figures/<paper>/<table>.{csv,md,tex,html} and figures/<paper>/<figure>.{png,pdf}
# The .html table and the .png figure are the Snakemake report's entries, under their paper's category.
# An experiment's outputs read its own results and those of the experiments it reuses.


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
