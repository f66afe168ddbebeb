# Stage 1: a registered dataset -> data/processed/<dataset>.npz (X, y, meta). Downloadable sets read
# their raw files from the data mirror (config data_mirror, else $MKCLUST_DATA_MIRROR) in place, or
# download them into data/raw/<dataset>/ (sha256-checked, renamed into place only once verified).
# Raw files are not outputs of any rule, so no failed or rerun job deletes them; a processed file is
# written atomically (temp file, then rename).


rule dataset:
    input:
        dataset_inputs,
    output:
        f"{DATA}/processed/{{dataset}}.npz",
    params:
        spec=lambda wc: PLAN.inputs.dataset_spec(wc.dataset),
        raw_dir=f"{DATA}/raw",
    resources:
        mem_mb=lambda wc, attempt: RES.dataset_mem_mb(RES.raw_bytes(PLAN.inputs.dataset_spec(wc.dataset)), attempt),
        runtime=lambda wc, attempt: RES.dataset_runtime(RES.raw_bytes(PLAN.inputs.dataset_spec(wc.dataset)), attempt),
    log:
        f"{DATA}/logs/dataset/{{dataset}}.log",
    conda:
        ENV
    script:
        "../scripts/dataset.py"
