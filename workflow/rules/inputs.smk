# The rules' input and parameter functions, kept apart from the rules (one file of functions, as
# `snakemake --lint` asks): included by the Snakefile after common.smk, whose names (PLAN, DATA,
# GROUPS, REFERENCE_RUN, ...) they read. Each section names the rule file whose rules call it.


# --- datasets.smk: dataset

def dataset_inputs(wc):
    """A researcher's own data file is the data set's input: a changed file rebuilds it and reruns
    everything that depends on it (registered sets have no input; their raw files are checked by sha256)."""
    spec = PLAN.inputs.dataset_spec(wc.dataset)
    return [spec["options"]["path"]] if spec["loader"] == "file" else []


# --- runs.smk: run

def group_key(wc):
    return (wc.experiment, wc.algorithm, wc.dataset, wc.bank, wc.param_id)


def group_of(wc):
    key = group_key(wc)
    if key not in GROUPS:
        raise ValueError(f"no run group {'/'.join(key)} in the configuration")
    return GROUPS[key]


@functools.lru_cache(maxsize=None)
def _group_params(key):
    return group_params(GROUPS[key])


def params_of(wc):
    group_of(wc)  # the clear error for a group the configuration does not plan
    return _group_params(group_key(wc))


def run_inputs(wc):
    r = group_of(wc)[0]
    inputs = {"dataset": f"{DATA}/processed/{r.dataset}.npz"}
    if r.bank != "none":
        inputs["bank"] = f"{DATA}/kernels/{r.dataset}/{r.bank}.npz"
    return inputs


# --- figures.smk: table and figure

def output_spec(kind, wc):
    for exp, outs in PLAN.outputs.items():
        if config["experiments"][exp]["paper"] == wc.paper and wc.name in outs[kind]:
            return exp, outs[kind][wc.name] or {}
    raise ValueError(f"no {kind[:-1]} {wc.paper}/{wc.name} in the configuration")


def table_inputs(wc):
    """The results a table reads and, for a table with published values, the package's reference
    files (its published values and causes.tsv): a table is rebuilt when a cause or a published value
    changes, not only when a result does."""
    exp, spec = output_spec("tables", wc)
    inputs = {"results": PLAN.targets.source_results(exp)}
    if REFERENCE_RUN:   # the reference run's rows of the same experiments (rule reference_results)
        inputs["reference_results"] = [reference_results_path(DATA, e) for e in PLAN.sources(exp)]
    if spec.get("reference"):
        ref = spec["reference"]
        inputs["reference"] = [str(REFERENCE_DIR / f"{ref['paper']}_{ref['table']}.csv"),
                               str(REFERENCE_DIR / "causes.tsv")]
    return inputs


# --- report.smk: verdict

def _of_paper(group, paper):
    """Whether the run group (experiment/algorithm/dataset/bank/group) feeds one of the paper's tables."""
    return group.split("/")[0] in {s for e in PLAN.experiments_of(paper) for s in PLAN.sources(e)}


# --- report.smk: run_summary

def _configfile_names():
    """The configuration files as given, those inside the working directory relative to it (a run's
    folder moved or copied elsewhere keeps its summary: no rerun for a changed absolute path)."""
    here = Path.cwd().resolve()
    names = []
    for f in workflow.configfiles:
        try:
            names.append(str(Path(f).resolve().relative_to(here)))
        except ValueError:
            names.append(str(f))
    return names or [str(Path(workflow.basedir) / "config.yaml")]
