# Stage 1: a registered dataset -> data/processed/<dataset>.npz (X, y, meta). Downloadable sets read
# their raw files from the data mirror (config data_mirror, else $MKCLUST_DATA_MIRROR) in place, or
# download them into data/raw/<dataset>/ (sha256-checked, renamed into place only once verified).


rule dataset:
    output:
        f"{DATA}/processed/{{dataset}}.npz",
    params:
        spec=lambda wc: PLAN.datasets[wc.dataset],
        raw_dir=f"{DATA}/raw",
    log:
        f"{DATA}/logs/dataset/{{dataset}}.log",
    conda:
        ENV
    script:
        "../scripts/dataset.py"
