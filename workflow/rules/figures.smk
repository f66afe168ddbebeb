# Stage 5: results -> figures/<paper>/<table>.{csv,md,tex} and figures/<paper>/<figure>.{png,pdf}
# An experiment's outputs read its own results and those of the experiments it reuses.


def output_spec(kind, wc):
    for exp, outs in PLAN.outputs.items():
        if config["experiments"][exp]["paper"] == wc.paper and wc.name in outs[kind]:
            return exp, outs[kind][wc.name] or {}
    raise ValueError(f"no {kind[:-1]} {wc.paper}/{wc.name} in the configuration")


rule table:
    input:
        lambda wc: PLAN.source_results(output_spec("tables", wc)[0]),
    output:
        csv=f"{FIGS}/{{paper}}/{{name}}.csv",
        md=f"{FIGS}/{{paper}}/{{name}}.md",
        tex=f"{FIGS}/{{paper}}/{{name}}.tex",
    params:
        spec=lambda wc: output_spec("tables", wc)[1],
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
    input:
        lambda wc: PLAN.source_results(output_spec("figures", wc)[0]),
    output:
        png=f"{FIGS}/{{paper}}/{{name}}.png",
        pdf=f"{FIGS}/{{paper}}/{{name}}.pdf",
    params:
        spec=lambda wc: output_spec("figures", wc)[1],
        datasets=lambda wc: config["experiments"][output_spec("figures", wc)[0]]["datasets"],
    resources:
        mem_mb=lambda wc, input, attempt: RES.records_mem_mb(input, attempt),
        runtime=lambda wc, attempt: RES.BASE_MINUTES * attempt,
    log:
        f"{DATA}/logs/figures/{{paper}}/{{name}}.log",
    conda:
        ENV
    script:
        "../scripts/figure.py"
