# Stage 3: one cached job per (experiment, algorithm, dataset, bank, parameter set, seed),
# writing a run record JSON. Timing experiments run single-threaded (threads: 1, BLAS pinned
# inside the job) so that their fit times are comparable.


def run_of(wc):
    key = (wc.experiment, wc.algorithm, wc.dataset, wc.bank, wc.param_id, wc.seed)
    if key not in RUNS:
        raise ValueError(f"no run {'/'.join(key)} in the configuration")
    return RUNS[key]


def run_inputs(wc):
    r = run_of(wc)
    inputs = {"dataset": f"{DATA}/processed/{r.dataset}.npz"}
    if r.bank != "none":
        inputs["bank"] = f"{DATA}/kernels/{r.dataset}/{r.bank}.npz"
    return inputs


rule run:
    input:
        unpack(run_inputs),
    output:
        f"{DATA}/runs/{{experiment}}/{{algorithm}}/{{dataset}}/{{bank}}/{{param_id}}/seed{{seed}}.json",
    params:
        run=lambda wc: vars(run_of(wc)),
    threads: lambda wc: 1 if run_of(wc).timing else config.get("run_threads", 1)
    log:
        f"{DATA}/logs/runs/{{experiment}}/{{algorithm}}/{{dataset}}/{{bank}}/{{param_id}}/seed{{seed}}.log",
    benchmark:
        f"{DATA}/benchmarks/runs/{{experiment}}/{{algorithm}}/{{dataset}}/{{bank}}/{{param_id}}/seed{{seed}}.tsv"
    conda:
        ENV
    script:
        "../scripts/run.py"
