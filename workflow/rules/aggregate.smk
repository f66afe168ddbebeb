# Stage 4: all run records of an experiment -> data/results/<experiment>.csv (one row per run)


rule aggregate:
    input:
        lambda wc: PLAN.group_targets(wc.experiment),
    output:
        f"{DATA}/results/{{experiment}}.csv",
    resources:
        mem_mb=lambda wc, input, attempt: RES.records_mem_mb(input, attempt),
        runtime=lambda wc, attempt: RES.BASE_MINUTES * attempt,
    log:
        f"{DATA}/logs/aggregate/{{experiment}}.log",
    conda:
        ENV
    script:
        "../scripts/aggregate.py"
