# Stage 1: a registered dataset -> data/processed/<dataset>.npz (X, y, meta)


rule dataset:
    output:
        f"{DATA}/processed/{{dataset}}.npz",
    params:
        spec=lambda wc: PLAN.datasets[wc.dataset],
    log:
        f"{DATA}/logs/dataset/{{dataset}}.log",
    conda:
        ENV
    script:
        "../scripts/dataset.py"
