# mkclust: datasets -> kernel banks -> runs -> results tables -> paper tables and figures.
# All science lives in src/mkclust; the rules only wire its functions to files (docs/architecture.md).
import functools
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")



def refuse(message: str):
    """Stop before any job with the message alone (a configuration error needs no traceback)."""
    sys.exit(f"mkclust: {message}")


# the workflow always uses this checkout's package, installed or not
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

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
import mkclust.repro.resources as RES

try:
    PLAN = plan(config)
except ConfigError as exc:
    refuse(f"config: {exc}")

# before any job: the raw files the run will have to download (none when a mirror or data/raw has them)
_MISSING = PLAN.missing_raw_files(config.get("data_mirror"))
if _MISSING:
    _files = sorted({f for fs in _MISSING.values() for f in fs})
    print(f"mkclust: {len(_files)} raw file(s) of {len(_MISSING)} data set(s) are not local "
          f"({', '.join(sorted(_MISSING)[:6])}{' ...' if len(_MISSING) > 6 else ''}): their dataset jobs will "
          f"download them into {PLAN.data_dir}/raw/<path> (sha256-checked). Offline, give a mirror folder with the "
          "same layout: --config data_mirror=/path (or $MKCLUST_DATA_MIRROR).", file=sys.stderr)

import mkclust.repro.reference
REFERENCE_DIR = Path(mkclust.repro.reference.__file__).parent   # published values and causes.tsv

# --config results_archive=results/paper: every results table from the archive's rows, no fitting
ARCHIVE = config.get("results_archive")
LEFT_OUT = []
if ARCHIVE:
    from mkclust.repro.archive import archive_files, group_name, missing_groups
    try:
        LEFT_OUT = [group_name(g) for g in missing_groups(PLAN, ARCHIVE)]
    except ValueError as exc:
        refuse(f"results_archive: {exc}")
    if LEFT_OUT and not config.get("archive_partial"):
        refuse(f"results_archive: {len(LEFT_OUT)} run group(s) of this configuration are not in {ARCHIVE}: "
               + ", ".join(LEFT_OUT[:8]) + (" ..." if len(LEFT_OUT) > 8 else "")
               + " (mkclust archive missing --list; or --config archive_partial=true leaves them out)")

# reference_run: results/paper (set in workflow/configs/paper.yaml): an archive of this project's own
# run of the configuration; every table cell it also holds shows its value beside ours, and the
# verdicts and run summary count the cells that differ beyond their seed noise (none when rebuilding
# from an archive: the tables are then the archive's own)
REFERENCE_RUN = None
if config.get("reference_run") and not ARCHIVE:
    from mkclust.repro.archive import archive_files, archived_groups
    _ref = Path(config["reference_run"])
    if not _ref.is_absolute() and not _ref.exists():
        _ref = Path(workflow.basedir) / _ref   # a path in the repository, from any working directory
    if not _ref.is_dir():
        print(f"mkclust: reference_run {config['reference_run']} not found: the tables are not compared with a "
              "reference run", file=sys.stderr)
    else:
        try:
            archived_groups(_ref)
        except ValueError as exc:
            refuse(f"reference_run: {exc}")
        REFERENCE_RUN = str(_ref)
REFERENCE_NAME = config.get("reference_run") if REFERENCE_RUN else None   # as the pages name it

DATA = PLAN.data_dir
FIGS = PLAN.figures_dir
# a relative output folder stays inside the working folder (the planner refuses ".."); an absolute one
# outside it is allowed, on purpose, and said once
for _key, _dir in (("data_dir", DATA), ("figures_dir", FIGS)):
    if Path(_dir).is_absolute() and not Path(_dir).resolve().is_relative_to(Path.cwd().resolve()):
        print(f"mkclust: {_key} is {_dir}, outside the working folder {Path.cwd()}", file=sys.stderr)
GROUPS = PLAN.run_groups()
ENV = "../../envs/mkclust.yaml"  # relative to workflow/rules/

wildcard_constraints:
    dataset=r"[^/]+",
    bank=r"[^/]+",
    experiment=r"[^/]+",
    algorithm=r"[^/]+",
    param_id=r"[^/]+",
    seed=r"\d+",
    paper=r"[^/]+",
    name=r"[^/]+",

# Under a cluster executor these run where snakemake runs instead of waiting in the queue: datasets
# may download (compute nodes often have no network), the others read small text files for seconds.
localrules: dataset, aggregate, reference_results, table, figure, verdict, run_summary

# snakemake --report report.html: this landing page, then one category per paper (verdict, tables, figures)
report: "workflow/report/workflow.rst"

include: "workflow/rules/datasets.smk"
include: "workflow/rules/kernels.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        PLAN.results_targets(),
        PLAN.table_targets(),
        PLAN.figure_targets(),
        PLAN.verdict_targets(),
        PLAN.summary_targets(),
    default_target: True
