# Stage 4: all run records of an experiment -> data/results/<experiment>.csv (one row per run)


rule aggregate:
    input:
        lambda wc: PLAN.group_targets(wc.experiment),
    output:
        f"{DATA}/results/{{experiment}}.csv",
    log:
        f"{DATA}/logs/aggregate/{{experiment}}.log",
    conda:
        ENV
    script:
        "../scripts/aggregate.py"
