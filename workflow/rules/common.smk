# The workflow's set-up, included first by the Snakefile, before the rules: the default configuration,
# the protocols resolved, the schema, the pre-job checks (mkclust.repro.preflight, as `mkclust check`),
# and the names the rules share (PLAN, DATA, FIGS, GROUPS, ARCHIVE, REFERENCE_RUN, ENV).
import functools
import os
import sys
from pathlib import Path

from snakemake.utils import validate


def refuse(message: str):
    """Stop before any job with the message alone (a configuration error needs no traceback)."""
    sys.exit(f"mkclust: {message}")


# the workflow always uses this checkout's package, installed or not: here, and in the jobs' scripts
# (each a Python process of its own, which inherits PYTHONPATH)
_SRC = str(Path(workflow.basedir) / "src")
sys.path.insert(0, _SRC)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC, os.environ.get("PYTHONPATH")) if p)
# declared, so that Snakemake passes it on to jobs it starts elsewhere (a cluster executor's jobs)
envvars:
    "PYTHONPATH",

# The default run is config.yaml. A --configfile replaces it (instead of being deep-merged into it,
# which would mix the default experiments into every other configuration).
if not workflow.overwrite_configfiles:
    from mkclust.repro.configuration import read_yaml
    try:   # Snakemake's own message for a YAML error names neither line nor column
        read_yaml(Path(workflow.basedir) / "config.yaml")
    except ValueError as exc:
        refuse(f"config: {exc}")
    configfile: str(Path(workflow.basedir) / "config.yaml")

from mkclust.repro.configuration import SCHEMA_FILE, command_line_values, resolve, schema_errors
from mkclust.repro.planning import ConfigError, plan
from mkclust.repro.run_spec import RECORDS_PATTERN, group_params
from mkclust.repro.targets import paper_output, reference_results_path, results_path, summary_path

# experiments that name a protocol (workflow/protocols/) become the protocol with their overrides
try:
    _resolved = resolve(command_line_values(config), Path(workflow.basedir) / "workflow/protocols")
except ConfigError as exc:
    refuse(f"config: {exc}")
config.clear()
config.update(_resolved)

_SCHEMA = str(Path(workflow.basedir) / SCHEMA_FILE)
try:
    validate(config, _SCHEMA)
except Exception:   # jsonschema's message is the whole schema and instance: one line per violation instead
    refuse("config: " + "; ".join(schema_errors(config, _SCHEMA)))
from mkclust.repro.captions import figure_caption, paper_name, table_caption, verdict_caption
import mkclust.repro.reference
import mkclust.repro.resources as RES

from mkclust.repro.archive import archive_files
from mkclust.repro.preflight import preflight

try:   # the pre-job checks, as mkclust check makes them (mkclust.repro.preflight)
    _PRE = preflight(config, workflow.basedir)
except ConfigError as exc:
    refuse(f"config: {exc}" if not str(exc).startswith(("results_archive:", "reference_run:")) else str(exc))
for _note in _PRE.notes:
    print(f"mkclust: {_note}", file=sys.stderr)
PLAN = _PRE.plan
REFERENCE_DIR = Path(mkclust.repro.reference.__file__).parent   # published values and causes.tsv
# --config results_archive=results/paper: every results table from the archive's rows, no fitting
ARCHIVE, LEFT_OUT, STALE = _PRE.archive, _PRE.left_out, _PRE.stale   # STALE: archived groups to compute again
# reference_run: results/paper (workflow/configs/paper.yaml): this project's own run of the configuration;
# every table cell it also holds shows its value beside ours (not when rebuilding from an archive)
REFERENCE_RUN, REFERENCE_NAME = _PRE.reference_run, _PRE.reference_name

DATA = PLAN.data_dir
FIGS = PLAN.figures_dir
PAPERS = config.get("papers")   # each paper's name in the report (the protocol files' papers:)
GROUPS = PLAN.run_groups()
ENV = "../../envs/mkclust.yaml"  # relative to workflow/rules/
