"""``mkclust check``: the checks the workflow makes before any job (:mod:`mkclust.repro.checks` and
the plan), without Snakemake."""

from __future__ import annotations

from mkclust._cli import Parser
from mkclust.repro.errors import ConfigError


def main(argv=None) -> int:
    """``mkclust check CONFIG [OVERLAY ...]``: what the workflow checks before any job (each file read,
    a YAML error with its line and column; the protocols resolved; the schema; the plan with its
    names, folders, size, tables, figures and claims; the archive and reference run it names; the raw
    files it would download: :mod:`mkclust.repro.preflight`, as the Snakefile), without Snakemake.
    Snakemake reads a
    ``--configfile`` itself before the workflow starts, and its message for a YAML error names
    neither line nor column; this names them."""
    import sys
    from pathlib import Path

    from mkclust.repro.configuration import load, protocol_folder, schema_errors, schema_file
    from mkclust.repro.preflight import preflight

    ap = Parser(prog="mkclust check", description=main.__doc__)
    ap.add_argument("configfiles", nargs="*", help="configuration files, merged as --configfile does "
                    "(default: config.yaml)")
    args = ap.parse_args(argv)
    files = args.configfiles or ["config.yaml"]
    config = load(*files)   # a file or configuration error: one line (mkclust._cli.run_tool)
    folder = protocol_folder(files[0])
    # a checkout's protocols are in its workflow/; installed ones are not in a checkout
    checkout = folder.parents[1] if folder.parent.name == "workflow" else Path.cwd()
    errors = schema_errors(config, schema_file(files[0]))
    if errors:
        raise ConfigError("; ".join(errors))
    pre = preflight(config, checkout)
    for note in pre.notes:
        print(f"mkclust check: {note}", file=sys.stderr)
    p = pre.plan
    print(f"{' + '.join(files)}: {len(config.get('experiments', {}))} experiment(s), {len(p.runs):,} runs in "
          f"{len(p.run_groups()):,} run groups (jobs), data in {p.data_dir}, figures in {p.figures_dir}; "
          "`mkclust estimate` gives their cost")
    return 0
