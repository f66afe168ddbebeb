# Stage 2: a dataset -> data/kernels/<dataset>/<bank>.npz, computed once and shared by every run.
# protected(): a bank is made read-only once written, so no later job (or failed job) can delete
# or overwrite it; to rebuild it after changing its options, delete the file.


rule kernel_bank:
    input:
        f"{DATA}/processed/{{dataset}}.npz",
    output:
        protected(f"{DATA}/kernels/{{dataset}}/{{bank}}.npz"),
    params:
        spec=lambda wc: PLAN.inputs.bank_spec(wc.bank, wc.dataset),
    resources:
        mem_mb=lambda wc, input, attempt: RES.bank_mem_mb(input[0], PLAN.inputs.bank_size(wc.bank), attempt,
                                                          PLAN.inputs.bank_landmarks(wc.bank)),
        runtime=lambda wc, input, attempt: RES.bank_runtime(input[0], PLAN.inputs.bank_size(wc.bank), attempt,
                                                            PLAN.inputs.bank_landmarks(wc.bank),
                                                            PLAN.inputs.bank_decomposes(wc.bank)),
    log:
        f"{DATA}/logs/kernels/{{dataset}}/{{bank}}.log",
    conda:
        ENV
    script:
        "../scripts/kernel_bank.py"
