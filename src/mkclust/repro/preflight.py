"""What a run checks before any job, once, for the Snakefile and ``mkclust check`` alike.

On a resolved and schema-valid configuration (protocols merged, :mod:`mkclust.repro.configuration`):

- the plan (:func:`mkclust.repro.planning.plan`: names, folders, size, tables, figures, claims);
- the raw files its data set jobs would download (a note, not an error: a mirror or ``data/raw`` may
  hold them);
- ``results_archive``: every planned run group in the archive, or ``archive_partial`` to leave the
  missing ones out (an error naming them otherwise; a damaged piece is an error naming its file),
  and the planned groups it holds marked stale (:func:`mkclust.repro.archive.mark_stale`), whose pages
  say so;
- ``reference_run``: the archive the tables are compared with, found from the working folder or the
  checkout, its pieces intact (a note when it is not there);
- an output folder given as an absolute path outside the working folder (a note);
- memory: every kernel-bank and run job the plan will run (not those the archive holds) priced from
  its data set's size, its bank and its method (:mod:`mkclust.repro.resources`), against
  ``memory_limit_mb`` or this machine's memory: a job above it is an error naming the job, the GiB
  and the ways out (:func:`check_memory`).

Errors are :class:`~mkclust.repro.errors.ConfigError`; notes are lines for the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mkclust.repro.errors import ConfigError
from mkclust.repro.planning import Plan, plan


@dataclass
class Preflight:
    """The plan and what the checks found (module docstring)."""

    plan: Plan
    archive: str | None = None
    left_out: list[str] = field(default_factory=list)     # planned groups missing from the archive
    stale: dict[str, str] = field(default_factory=dict)   # planned groups archived stale -> why
    reference_run: str | None = None                      # the reference archive's folder, when found
    reference_name: str | None = None                     # as the configuration names it (the pages show it)
    notes: list[str] = field(default_factory=list)


def preflight(config: dict, checkout: str | Path, cwd: str | Path | None = None) -> Preflight:
    """The pre-job checks of a resolved configuration (module docstring); ``checkout`` is the
    repository's folder (where a relative ``reference_run`` is also looked for), ``cwd`` the
    working folder (default: the current one)."""
    from mkclust.repro.archive import archived_groups, group_name, holdings

    cwd = Path.cwd() if cwd is None else Path(cwd)
    pre = Preflight(plan(config))
    missing = pre.plan.inputs.missing_raw_files(config.get("data_mirror"))
    if missing:
        files = sorted({f for fs in missing.values() for f in fs})
        pre.notes.append(
            f"{len(files)} raw file(s) of {len(missing)} data set(s) are not local ({', '.join(sorted(missing)[:6])}"
            f"{' ...' if len(missing) > 6 else ''}): their dataset jobs will download them into "
            f"{pre.plan.data_dir}/raw/<path> (sha256-checked). Offline, give a mirror folder with the same layout: "
            "--config data_mirror=/path (or $MKCLUST_DATA_MIRROR).")
    pre.archive = config.get("results_archive")
    if pre.archive:
        try:
            held, stale = holdings(pre.archive)
            planned = [group_name(g) for g in pre.plan.run_groups()]
            pre.left_out = [g for g in planned if g not in held]
            pre.stale = {g: stale[g][1] for g in sorted(planned) if g in stale}
        except ValueError as exc:
            raise ConfigError(f"results_archive: {exc}") from exc
        if pre.left_out and not config.get("archive_partial"):
            raise ConfigError(
                f"results_archive: {len(pre.left_out)} run group(s) of this configuration are not in {pre.archive}: "
                + ", ".join(pre.left_out[:8]) + (" ..." if len(pre.left_out) > 8 else "")
                + " (mkclust archive missing --list; or --config archive_partial=true leaves them out)")
    if config.get("reference_run") and not pre.archive:
        ref = Path(config["reference_run"])
        if not ref.is_absolute() and not (cwd / ref).exists():
            ref = Path(checkout) / ref            # a path in the repository, from any working folder
        if not (ref if ref.is_absolute() else cwd / ref).is_dir():
            pre.notes.append(f"reference_run {config['reference_run']} not found: the tables are not compared "
                             "with a reference run")
        else:
            try:
                archived_groups(ref if ref.is_absolute() else cwd / ref)
            except ValueError as exc:
                raise ConfigError(f"reference_run: {exc}") from exc
            pre.reference_run, pre.reference_name = str(ref), config["reference_run"]
    if not pre.archive:   # an archive's tables fit nothing
        check_memory(pre.plan, config.get("memory_limit_mb"))
    # a relative output folder stays inside the working folder (the planner refuses ".."); an absolute
    # one outside it is allowed, on purpose, and said once
    for key, folder in (("data_dir", pre.plan.data_dir), ("figures_dir", pre.plan.figures_dir)):
        if Path(folder).is_absolute() and not Path(folder).resolve().is_relative_to(cwd.resolve()):
            pre.notes.append(f"{key} is {folder}, outside the working folder {cwd}")
    return pre


def machine_mb() -> float:
    """This machine's physical memory in MB (os.sysconf; 0 where the system does not tell)."""
    import os
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    except (ValueError, OSError, AttributeError):
        return 0.0


def check_memory(p: Plan, limit_mb: float | None = None, skip=frozenset()) -> tuple[str, float] | None:
    """The largest job of the plan and its MB, from each data set's size where it is known without
    building it (:func:`mkclust.repro.estimate.dataset_size`, no raw file read): the kernel-bank jobs
    (:func:`~mkclust.repro.resources.bank_job_mb`) and the run jobs (:func:`~mkclust.repro.resources.group_mem_mb`,
    low-rank where the bank is built from landmarks) but the groups in ``skip``. A job above
    ``limit_mb`` (default: this machine's memory) raises a ConfigError naming it."""
    from mkclust.repro import resources as RES
    from mkclust.repro.estimate import dataset_size
    from mkclust.repro.run_spec import NO_BANK

    limit = float(limit_mb) if limit_mb else machine_mb()
    groups = {g: runs for g, runs in p.run_groups().items() if g not in skip}
    sizes = {name: dataset_size(p, name, load=False) for name in sorted({g[2] for g in groups})}
    jobs = []   # (MB, the job, what it holds, the bank or None)
    for dataset, bank in sorted({(g[2], g[3]) for g in groups if g[3] != NO_BANK}):
        if sizes[dataset] is not None:
            n, d, _ = sizes[dataset]
            m, marks = p.inputs.bank_size(bank) or d, p.inputs.bank_landmarks(bank)
            r = RES.bank_rank(n, marks)
            jobs.append((RES.bank_job_mb(n, d, m, marks), f"kernel bank {bank} of {dataset}",
                         f"n = {n}, {m} kernels of {r} columns", bank))
    for g, runs in groups.items():
        if sizes[g[2]] is None:
            continue
        n, d, _ = sizes[g[2]]
        m = (p.inputs.bank_size(g[3]) or d) if g[3] != NO_BANK else 0
        r = RES.bank_rank(n, p.inputs.bank_landmarks(g[3])) if m else 0
        mb = RES.group_mem_mb(runs, n, d, m * n * r, (m, r) if m and r < n else None)
        jobs.append((mb, f"run {'/'.join(g[:4])}", f"n = {n}" + (f", {m} kernels of {r} columns" if m else ""),
                     g[3] if m else None))
    if not jobs:
        return None
    mb, job, holds, bank = max(jobs, key=lambda j: j[0])
    if limit and mb > limit:
        way = (f"build bank {bank} from landmarks (kernel_banks: {{{bank}: {{landmarks: 1000}}}}), which KKM, SC, NC, "
               "RKKM, MKKM, RMKKM, SimpleMKKM, MKKM-MiR and LF-MVC take without an n x n matrix; " if bank else "")
        raise ConfigError(f"memory: the {job} job needs about {mb / 1024:.1f} GiB ({holds}), above "
                          f"{'memory_limit_mb' if limit_mb else 'this machine'}'s {limit / 1024:.1f} GiB: {way}"
                          "or a smaller data set, or memory_limit_mb for a machine that has more")
    return job, mb
