# Stage 3: one cached job per run group (experiment, algorithm, dataset, bank, parameter set with the
# batched grid parameters as "each"): it fits every run of the group, loading the dataset and kernel
# once, and writes the group's run records (a JSON list) atomically. One job per seed would pay
# about a second of interpreter and library start-up per seed, which dominates cheap fits. Timing
# experiments run single-threaded (threads: 1, BLAS pinned inside the job) so that their fit times
# are comparable. mem_mb and runtime are estimated from n, d and the bank's size (mkclust.repro.resources)
# and grow with each attempt; threads become the job's cpus_per_task under SLURM and its BLAS limit.


rule run:
    input:
        unpack(run_inputs),
    output:
        f"{DATA}/{RECORDS_PATTERN}",
    params:
        # 'runs' is a one-line description with a digest (what Snakemake compares and a dry run shows),
        # 'specs' the runs themselves (not compared): mkclust.repro.run_spec.group_params
        runs=lambda wc: params_of(wc)["runs"],
        specs=lambda wc: params_of(wc)["specs"],
    threads: lambda wc: 1 if group_of(wc)[0].timing else config.get("run_threads", 1)
    resources:
        mem_mb=lambda wc, input, attempt: RES.run_mem_mb(group_of(wc), input.dataset, input.get("bank"), attempt),
        runtime=lambda wc, input, attempt: RES.run_runtime(group_of(wc), input.dataset, attempt),
        cpus_per_task=lambda wc, threads: threads,
    log:
        f"{DATA}/logs/runs/{{experiment}}/{{algorithm}}/{{dataset}}/{{bank}}/{{param_id}}.log",
    benchmark:
        f"{DATA}/benchmarks/runs/{{experiment}}/{{algorithm}}/{{dataset}}/{{bank}}/{{param_id}}.tsv"
    conda:
        ENV
    script:
        "../scripts/run.py"
