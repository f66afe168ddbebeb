"""What a configuration will cost, before it runs: per experiment the jobs, the fits, the estimated CPU
hours and the largest run job's memory; per paper and in total the same, with the wall time on a
given number of cores. No data set is built and nothing is downloaded.

    mkclust estimate                                   # config.yaml
    mkclust estimate workflow/configs/paper.yaml [overlay.yaml ...] [--cores 8]

Sizes: a built data set's file (``<data_dir>/processed/<set>.npz``) where it exists; else a generated
or embedded set loaded (a second at most); else a downloadable set's size as its paper reports it;
else (e.g. a class subset) the set loaded where its raw files are local (``data_mirror`` or
``<data_dir>/raw``), or, without them, its paper's size of the whole set.

Time: each fit's calibrated typical seconds on one core (``fit_seconds(..., typical=True)`` of its
class: ``cost.typical_at_1000`` (n/1000) ** ``cost.exponent``, per restart; lockstep batches at
``cost.batch_time`` of a fit alone; :func:`mkclust.repro.resources.group_seconds`), plus
:data:`JOB_SECONDS` of start-up per job; a kernel bank job its BLAS work
(:func:`mkclust.repro.resources.bank_seconds`). The calibration and the
comparison with a measured run: ``benchmarks/bench_workflow.py``. The wall time on c cores is the
larger of the CPU hours over c and the longest single job (a job runs on one core).

Memory: the run job model of :mod:`mkclust.repro.resources` (the bound given to SLURM, without its attempt
factor), largest over the experiment's jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mkclust.repro import resources as RES
from mkclust.datasets import REGISTRY, DatasetUnavailable
from mkclust.datasets import load as load_dataset
from mkclust.datasets.download import NotLocal
from mkclust.repro.planning import Plan, plan
from mkclust.repro.run_spec import NO_BANK

#: seconds a job spends outside its fits: interpreter start-up, imports, Snakemake's script set-up,
#: reading its inputs and writing its outputs (``benchmarks/bench_workflow.py`` on the default run,
#: 2026-11-25: run jobs 0.72 s of CPU outside their fits, the other jobs 1.4 s of wall time each)
JOB_SECONDS = 1.0


def dataset_size(p: Plan, name: str, load: bool = True) -> tuple[int, int, int | None] | None:
    """(n, d, classes) of a planned data set without building it (classes None where only n and d
    are known), or None where nothing tells; ``load=False`` loads only a file of one's own, an
    embedded or a generated set, never raw files (a paper's size of the whole set where they are not local)."""
    built = Path(p.data_dir) / "processed" / f"{name}.npz"
    if built.is_file():
        with np.load(built, allow_pickle=False) as z:
            classes = int(np.unique(z["y"]).size) if "y" in z.files else None
        return (*RES.dataset_shape(built), classes)
    spec = p.datasets[name]
    reg = REGISTRY[spec["loader"]]
    opts = spec["options"]
    exact = [s for s in reg.paper if s.opts == {k: v for k, v in opts.items() if k != "seed"}]
    if reg.kind == "download" and exact:
        return exact[0].n, exact[0].d, exact[0].c
    if not load and reg.kind == "download":
        return (reg.paper[0].n, reg.paper[0].d, None) if reg.paper else None
    try:   # an embedded or generated set (a second at most), or one whose raw files are local (never downloaded)
        ds = load_dataset(spec["loader"], raw_dir=Path(p.data_dir) / "raw", mirror=p.config.get("data_mirror"),
                          download=False, **opts)
        return ds.n, ds.d, ds.n_classes
    except (NotLocal, DatasetUnavailable):
        return (reg.paper[0].n, reg.paper[0].d, None) if reg.paper else None


@dataclass
class Row:
    name: str
    jobs: int = 0
    fits: int = 0
    fit_hours: float = 0.0
    cpu_hours: float = 0.0
    longest_hours: float = 0.0  # the longest single job
    peak_mb: int = 0
    unknown: int = 0  # run groups on data sets of unknown size

    def add(self, other: "Row") -> None:
        self.jobs += other.jobs
        self.fits += other.fits
        self.fit_hours += other.fit_hours
        self.cpu_hours += other.cpu_hours
        self.longest_hours = max(self.longest_hours, other.longest_hours)
        self.peak_mb = max(self.peak_mb, other.peak_mb)
        self.unknown += other.unknown

    def wall_hours(self, cores: int) -> float:
        return max(self.cpu_hours / cores, self.longest_hours)


def _bank_floats(p: Plan, bank: str, n: int) -> float:
    """Floats a bank of n samples holds: m n r (:func:`mkclust.repro.resources.bank_rank`)."""
    if bank == NO_BANK:
        return 0.0
    return (p.inputs.bank_size(bank) or 4) * n * RES.bank_rank(n, p.inputs.bank_landmarks(bank))


def _run_row(p: Plan, exp: str, groups: dict, sizes: dict, cal=None) -> Row:
    row = Row(exp)
    for group, runs in groups.items():
        dataset, bank = group[2], group[3]
        row.jobs += 1
        row.fits += len(runs)
        size = sizes.get(dataset)
        if size is None:
            row.unknown += 1
            row.cpu_hours += JOB_SECONDS / 3600
            continue
        n, d, classes = size
        rank = None if bank == NO_BANK else RES.bank_rank(n, p.inputs.bank_landmarks(bank))
        m = None if bank == NO_BANK else (p.inputs.bank_size(bank) or d)
        seconds = RES.group_seconds(runs, n, typical=True, n_classes=classes, input_rank=rank, input_kernels=m)
        if cal is not None:
            seconds = cal.group_seconds(group, runs, seconds)
        row.fit_hours += seconds / 3600
        row.cpu_hours += (seconds + JOB_SECONDS) / 3600
        row.longest_hours = max(row.longest_hours, (seconds + JOB_SECONDS) / 3600)
        low = (m, rank) if rank is not None and rank < n else None
        row.peak_mb = max(row.peak_mb, int(RES.group_mem_mb(runs, n, d, _bank_floats(p, bank, n), low)))
    return row


def group_rows(p: Plan, groups: dict, sizes: dict | None = None, cal=None) -> list[Row]:
    """One :class:`Row` per experiment of ``groups`` (run group -> its runs, a subset of
    ``p.run_groups()``): their jobs, fits and estimated CPU hours; ``sizes`` (data set -> n, d,
    classes) computed with :func:`dataset_size` where not given; ``cal``: a
    :class:`mkclust.repro.calibration.Calibration` of the fits' times (None: the class models')."""
    sizes = dict(sizes or {})
    for name in {g[2] for g in groups} - set(sizes):
        sizes[name] = dataset_size(p, name)
    by_exp: dict[str, dict] = {}
    for g, runs in groups.items():
        by_exp.setdefault(g[0], {})[g] = runs
    return [_run_row(p, exp, gs, sizes, cal) for exp, gs in by_exp.items()]


def estimate(config: dict, p: Plan | None = None, cal=None) -> tuple[list[Row], list[Row], Row]:
    """(one :class:`Row` per experiment, then one for the data set and kernel bank jobs and one for the
    aggregate, table, figure, verdict and summary jobs; one row per paper; the total); ``p``: the
    configuration's plan, where the caller has it; ``cal`` as for :func:`group_rows`."""
    p = plan(config) if p is None else p
    groups = p.run_groups()
    used = sorted({g[2] for g in groups})
    sizes = {name: dataset_size(p, name) for name in used}
    rows = group_rows(p, groups, sizes, cal)

    inputs = Row("data sets and banks", jobs=len(used))
    inputs.cpu_hours = len(used) * JOB_SECONDS / 3600
    for dataset, bank in sorted({(g[2], g[3]) for g in groups if g[3] != NO_BANK}):
        inputs.jobs += 1
        size = sizes.get(dataset)
        m = p.inputs.bank_size(bank) or 1   # a bank of one kernel per view: its products add up to one over all d
        seconds = (0.0 if size is None else
                   RES.bank_seconds(*size[:2], m, p.inputs.bank_landmarks(bank), p.inputs.bank_decomposes(bank)))
        inputs.cpu_hours += (seconds + JOB_SECONDS) / 3600
        inputs.longest_hours = max(inputs.longest_hours, (seconds + JOB_SECONDS) / 3600)
    outputs = Row("tables and figures")
    # aggregate, tables, figures
    outputs.jobs = (sum(1 + len(o["tables"]) + len(o["figures"]) for o in p.outputs.values())
                    + len(p.verdict_papers()) + 1)
    outputs.cpu_hours = outputs.jobs * JOB_SECONDS / 3600

    papers: dict[str, Row] = {}
    for row in rows:
        paper = p.config["experiments"][row.name]["paper"]
        papers.setdefault(paper, Row(paper)).add(row)
    total = Row("total")
    for row in rows + [inputs, outputs]:
        total.add(row)
    return rows + [inputs, outputs], list(papers.values()), total


def format_rows(rows: list[Row], cores: int = 8, title: str = "experiment") -> str:
    head = (f"{title:24s} {'jobs':>6s} {'fits':>8s} {'fit CPU h':>10s} {'CPU h':>9s} "
            f"{'wall h/' + str(cores):>9s} {'peak MB':>8s}")
    lines = [head]
    for r in rows:
        extra = f"  ({r.unknown} run jobs on data sets of unknown size)" if r.unknown else ""
        lines.append(f"{r.name:24s} {r.jobs:6d} {r.fits:8d} {r.fit_hours:10.3f} {r.cpu_hours:9.3f} "
                     f"{r.wall_hours(cores):9.3f} {r.peak_mb or '':>8}{extra}")
    return "\n".join(lines)
