# Stage 6: a paper's tables and results -> figures/<paper>/verdict.{csv,md,html,png} (its claims tested on
# this run, and the causes of the gaps); all results -> figures/run_summary.{json,rst,html} (what was run).
# Both are entries of the Snakemake report (snakemake --report report.html); the summary also fills its
# landing page (workflow/report/workflow.rst).

rule verdict:
    input:
        tables=lambda wc: list(PLAN.targets.paper_tables(wc.paper).values()),
        results=lambda wc: PLAN.targets.paper_results(wc.paper),
    output:
        csv=paper_output(FIGS, "{paper}", "verdict", "csv"),
        md=paper_output(FIGS, "{paper}", "verdict", "md"),
        html=report(paper_output(FIGS, "{paper}", "verdict", "html"), caption="../report/verdict.rst",
                    category=lambda wc: paper_name(wc.paper, PAPERS), subcategory="Verdict",
                    labels={"verdict": "claims and gaps"}),
        png=report(paper_output(FIGS, "{paper}", "verdict", "png"), caption="../report/verdict.rst",
                   category=lambda wc: paper_name(wc.paper, PAPERS), subcategory="Verdict",
                   labels={"verdict": "figure"}),
    params:
        claims=lambda wc: PLAN.claims(wc.paper),
        tables=lambda wc: PLAN.targets.paper_tables(wc.paper),
        title=lambda wc: f"{paper_name(wc.paper, PAPERS)}: does the paper hold up on this run?",
        data=lambda wc: PLAN.paper_data(wc.paper),
        left_out=lambda wc: [g for g in LEFT_OUT if _of_paper(g, wc.paper)],
        stale=lambda wc: {g: why for g, why in STALE.items() if _of_paper(g, wc.paper)},
        caption=lambda wc: verdict_caption(wc.paper, PLAN.claims(wc.paper), PAPERS),
        reference_run=REFERENCE_NAME,
    resources:
        mem_mb=lambda wc, input, attempt: RES.records_mem_mb(input, attempt),
        runtime=lambda wc, attempt: RES.BASE_MINUTES * attempt,
    log:
        f"{DATA}/logs/verdicts/{{paper}}.log",
    conda:
        ENV
    script:
        "../scripts/verdict.py"


rule run_summary:
    input:
        results=PLAN.targets.results_targets(),
        tables=[t for t in PLAN.targets.table_targets() if t.endswith(".csv")] if REFERENCE_RUN else [],
    output:
        json=summary_path(FIGS, "json"),
        rst=summary_path(FIGS, "rst"),
        html=report(summary_path(FIGS, "html"), caption="../report/summary.rst", category="Run",
                    labels={"summary": "what was run"}),
    params:
        configfiles=_configfile_names(),
        basedir=str(workflow.basedir),
        benchmarks=f"{DATA}/benchmarks",   # Snakemake's per-job measurements (run jobs): their CPU time
        reference_run=REFERENCE_NAME,
        archive=config.get("results_archive"),   # rebuilt from an archive: its pieces, and what it lacks
        left_out=LEFT_OUT,
        stale=STALE,
        data_files=PLAN.inputs.data_files(),   # the researcher's own files: path, sha256 (a changed one reruns this)
    resources:
        mem_mb=lambda wc, input, attempt: RES.records_mem_mb(input, attempt),
        runtime=lambda wc, attempt: RES.BASE_MINUTES * attempt,
    log:
        f"{DATA}/logs/run_summary.log",
    conda:
        ENV
    script:
        "../scripts/run_summary.py"
