"""Checks of a whole configuration beside its run-by-run planning (:mod:`mkclust.repro.planning`):
the names that become paths, the output folders, its size (runs and run groups, counted before they
are built), and, on the finished :class:`~mkclust.repro.planning.Plan`, its tables, figures and
claims."""

from __future__ import annotations

import math

import re
from pathlib import Path

from mkclust.repro.errors import ConfigError
from mkclust.repro.configuration import as_list, claim_kind


#: a configuration planning more runs, or more run groups (one Snakemake job each), is refused unless
#: its ``max_runs`` / ``max_run_groups`` say otherwise: the paper configuration plans 123,679 runs in
#: 1,543 groups; 4 x 10^5 runs plan in about 8 s, while Snakemake's DAG of 10^4 jobs takes about a
#: minute to build before it prints anything, and a grid of 10^6 points grew past 4.7 GB
MAX_RUNS = 500_000


MAX_RUN_GROUPS = 10_000


#: the names that become folders and files (data sets, banks, experiments, algorithm labels, tables,
#: figures): letters, digits and _ . + -, not starting with a dot or a dash
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def _check_name(name, where: str) -> None:
    if not isinstance(name, str) or not NAME.match(name):
        raise ConfigError(f"{where}: {name!r} is not a usable name: letters, digits and _ . + - only, not starting "
                          "with . or - (it becomes a folder or file name under the data and figures folders)")


def check_names(config: dict) -> None:
    """Every name that becomes a path, and the output folders: ``data_dir`` and ``figures_dir`` stay
    inside the working folder when relative (no ``..``); an absolute path is the documented way to
    put them elsewhere (the Snakefile says so when a run starts)."""
    for key in ("data_dir", "figures_dir"):
        value = config.get(key)
        if value is not None and not Path(value).is_absolute() and ".." in Path(value).parts:
            raise ConfigError(f"{key}: {value!r} leaves the working folder; give a folder inside it, or an absolute "
                              "path to put the outputs elsewhere on purpose")
    for section in ("datasets", "kernel_banks"):
        for name in config.get(section) or {}:
            _check_name(name, f"{section}")
    for exp, e in (config.get("experiments") or {}).items():
        _check_name(exp, "experiments")
        if not isinstance(e, dict):
            continue
        for ds in e.get("datasets") or []:
            _check_name(ds, f"experiments.{exp}.datasets")
        for bank in e.get("banks") or []:
            _check_name(bank, f"experiments.{exp}.banks")
        for label, a in (e.get("algorithms") or {}).items():
            _check_name(label, f"experiments.{exp}.algorithms")
            for bank in (a or {}).get("banks") or []:
                _check_name(bank, f"experiments.{exp}.algorithms.{label}.banks")
        for kind in ("tables", "figures"):
            for name in e.get(kind) or {}:
                _check_name(name, f"experiments.{exp}.{kind}")


class Budget:
    """The runs and run groups planned so far against :data:`MAX_RUNS` and :data:`MAX_RUN_GROUPS`
    (or the configuration's ``max_runs`` / ``max_run_groups``)."""

    def __init__(self, config: dict):
        self.max_runs = int(config.get("max_runs") or MAX_RUNS)
        self.max_groups = int(config.get("max_run_groups") or MAX_RUN_GROUPS)
        self.runs = self.groups = 0

    def add(self, where: str, points: int, n_sets: int, n_seeds: int, groups: int) -> None:
        self.runs += points * n_sets * n_seeds
        self.groups += groups
        for what, have, limit, key in (("runs", self.runs, self.max_runs, "max_runs"),
                                       ("run groups (one job each)", self.groups, self.max_groups, "max_run_groups")):
            if have > limit:
                raise ConfigError(f"{where}: the configuration reaches {have:,} {what} here ({points:,} grid points "
                                  f"x {n_sets} data sets x {n_seeds} seeds in this entry), more than {limit:,}; make "
                                  f"the grid smaller, batch it (batch: all), or raise the limit with {key}: N "
                                  f"(--config {key}=N)")


def grid_axes(values: dict, bank_size: int | None, where: str) -> tuple[list[str], list[list]]:
    """The axes of a parameter grid, (names, value lists): ``kernel: all`` is every index of a bank of
    ``bank_size`` kernels; every other entry must be a non-empty list (a ConfigError naming
    ``where`` otherwise). The one statement of the grid's rules: the planner expands the axes, the
    budget counts them."""
    keys, lists = [], []
    for k, v in values.items():
        if k == "kernel" and v == "all":
            if bank_size is None:
                raise ConfigError(f"{where}: kernel: all needs a bank of known size; list the indices")
            v = list(range(bank_size))
        if not isinstance(v, list) or not v:
            raise ConfigError(f"{where}.grid.{k}: a grid entry must be a non-empty list, got {v!r}")
        keys.append(k)
        lists.append(v)
    return keys, lists


def grid_size(values: dict, bank_size: int | None) -> int:
    """The number of points of a parameter grid, counted without building it; a malformed grid counts
    1 here and is reported where the planner expands it (:func:`grid_axes`)."""
    try:
        return math.prod(len(v) for v in grid_axes(values, bank_size, "grid")[1])
    except ConfigError:
        return 1


def check_outputs(p) -> None:
    """Table and figure columns name algorithms of their experiment (or of an experiment it reuses);
    no two outputs share a file."""
    owners: dict[tuple, str] = {}
    experiments = p.config["experiments"]
    for exp, outs in p.outputs.items():
        e = experiments[exp]
        known = set(e["algorithms"])
        for other in e.get("reuse", []):
            if other == exp or other not in experiments:
                raise ConfigError(f"experiments.{exp}.reuse: {other!r} is not another experiment of this "
                                  f"configuration ({', '.join(sorted(set(experiments) - {exp}))})")
            clash = sorted(known & set(experiments[other]["algorithms"]))
            if clash:
                raise ConfigError(f"experiments.{exp}.reuse: algorithm label(s) {clash} exist in both {exp} and "
                                  f"{other}; rename them so that table columns are unambiguous")
            known |= set(experiments[other]["algorithms"])
        for kind in ("tables", "figures"):
            for name, spec in outs[kind].items():
                where = f"experiments.{exp}.{kind}.{name}"
                key = (e["paper"], kind, name)
                if key in owners:
                    raise ConfigError(f"{where}: {e['paper']}/{name} is also a {kind[:-1]} of {owners[key]}; "
                                      "names must be unique within a paper")
                owners[key] = f"experiments.{exp}"
                if name == "verdict":
                    raise ConfigError(f"{where}: the name 'verdict' is reserved for the paper's verdict page")
                spec = spec or {}
                cols = [*spec.get("columns", {}).values(), *spec.get("levels", {}).values()]
                named = [a for col in cols for a in as_list(col.get("algorithm", ""))]
                named += [*as_list(spec.get("algorithm", [])), *(spec.get("totals") or {}).values()]
                for alg in named:
                    if alg not in known:
                        raise ConfigError(f"{where}: refers to algorithm {alg!r}, not one of {sorted(known)}")
                extra = sorted(set(spec.get("datasets") or []) - set(e["datasets"]))
                if extra:
                    raise ConfigError(f"{where}: datasets {extra} are not datasets of experiments.{exp}")


def check_claims(p) -> None:
    """Every claim names one kind (:mod:`mkclust.repro.reporting.verdicts`), a table of its paper and
    algorithms of its paper's experiments, so a typo stops the plan instead of the verdict job."""
    for exp, e in p.config.get("experiments", {}).items():
        if not e.get("claims"):
            continue
        tables = {name for x in p.experiments_of(e["paper"]) for name in p.outputs[x]["tables"]}
        algs = {a for x in p.experiments_of(e["paper"]) for s in p.sources(x)
                for a in p.config["experiments"][s]["algorithms"]}
        for i, c in enumerate(e.get("claims") or []):
            where = f"experiments.{exp}.claims[{i}] ({c.get('claim', '')!r})"
            try:
                kind = claim_kind(c)
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            if kind in ("above", "close", "wins", "sweep") and c.get("table") not in tables:
                raise ConfigError(f"{where}: table {c.get('table')!r} is not a table of paper {e['paper']} "
                                  f"({', '.join(sorted(tables)) or 'none'})")
            if kind in ("slope", "below", "sweep"):
                for a in as_list(c[kind].get("algorithm", "")):
                    if a not in algs:
                        raise ConfigError(f"{where}: algorithm {a!r} is not one of paper {e['paper']}'s "
                                          f"({sorted(algs)})")
