"""Experiments: from a configuration to run specifications (planning).

:func:`plan` expands every ``experiments:`` entry of the configuration into :class:`Run` objects,
one per (experiment, algorithm, dataset, bank, parameter set, seed), and checks the configuration's
meaning (registered datasets, banks, algorithms, parameters, claims) so that a wrong configuration
stops before any job runs, with a message naming the key. Running a group of runs is
:mod:`mkclust.repro.runner`'s; flattening their records into a results table is :mod:`mkclust.repro.records`'s.

Parameter grids: in an algorithm's ``grid`` every key lists values; the runs cover their Cartesian
product (combined with the fixed ``params``). The special parameter ``kernel`` picks the kernel of
a bank for single-kernel estimators: an index, ``"ew"`` (the equal-weight average of the bank's
kernels), or, in a grid, ``"all"`` (every index of the bank).
"""

from __future__ import annotations

import itertools
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from mkclust._bank_options import check_bank_options
from mkclust.repro.errors import ConfigError
from mkclust.algorithms import ALGORITHMS
from mkclust.metrics import LABEL_FREE
from mkclust.algorithms.base import default_params
from mkclust.datasets import REGISTRY as DATASETS
from mkclust.kernels import BANKS, PREPROCESS
from mkclust.repro.checks import Budget, check_claims, check_names, check_outputs, grid_axes, grid_size
from mkclust.repro.configuration import as_list, canonical
from mkclust.repro.inputs import BUILD_KEYS, bank_options
from mkclust.repro.plan_inputs import PlanInputs
from mkclust.repro.pseudo import PSEUDO_PARAMS, check_kernel_choice, split_pseudo
from mkclust.repro.run_spec import NO_BANK, Run, param_id  # noqa: F401  (param_id: re-exported with Run)
from mkclust.repro.targets import Targets

log = logging.getLogger("mkclust.repro.planning")

@dataclass
class Plan:
    """Everything the workflow needs to know, computed once from the configuration."""

    config: dict
    runs: list[Run] = field(default_factory=list)
    datasets: dict[str, dict] = field(default_factory=dict)  # name -> {loader, options}
    banks: dict[str, dict] = field(default_factory=dict)  # name -> {bank, preprocess, ...}
    outputs: dict[str, dict] = field(default_factory=dict)  # experiment -> tables, figures

    @property
    def data_dir(self) -> str:
        return self.config.get("data_dir", "data")

    @property
    def figures_dir(self) -> str:
        return self.config.get("figures_dir", "figures")

    @property
    def inputs(self) -> PlanInputs:
        """Its data sets and kernel banks, looked up by name (:class:`~mkclust.repro.plan_inputs.PlanInputs`)."""
        return PlanInputs(self.datasets, self.banks, self.data_dir)

    @property
    def targets(self) -> Targets:
        """The files it makes (:class:`~mkclust.repro.targets.Targets`)."""
        return Targets(self)

    def run_groups(self) -> dict[tuple, list[Run]]:
        """group -> its runs in (parameter set, seed) order (one job each; see :attr:`Run.group`)."""
        groups: dict[tuple, list[Run]] = {}
        for r in self.runs:
            groups.setdefault(r.group, []).append(r)
        return {g: sorted(rs, key=lambda r: (r.params_json, r.seed)) for g, rs in groups.items()}

    def runs_of(self, experiment: str) -> list[Run]:
        return [r for r in self.runs if r.experiment == experiment]

    def sources(self, experiment: str) -> list[str]:
        """The experiments whose results feed ``experiment``'s tables and figures: itself, then the
        ones it ``reuse``s (their runs are theirs; reusing adds no runs)."""
        return [experiment, *self.config["experiments"][experiment].get("reuse", [])]

    def experiments_of(self, paper: str) -> list[str]:
        return [e for e, spec in self.config.get("experiments", {}).items() if spec["paper"] == paper]

    def claims(self, paper: str) -> list[dict]:
        """The headline claims of one paper, from its experiments' ``claims:`` in order."""
        return [canonical({**c, "sources": self.sources(e)}) for e in self.experiments_of(paper)
                for c in self.config["experiments"][e].get("claims") or []]

    def paper_data(self, paper: str) -> list[dict]:
        """Per experiment of the paper: its data sets that are the paper's own (``own``: named by its
        protocol, ``paper_datasets``) and the stand-ins for them (``stand_in``: any other), each in
        the experiment's order; ``known`` is False where the experiment names no paper data sets
        (an experiment written without a protocol), and then every set is listed under ``stand_in``."""
        out = []
        for e in self.experiments_of(paper):
            spec = self.config["experiments"][e]
            own = spec.get("paper_datasets")
            sets = list(spec["datasets"])
            out.append({"experiment": e, "known": own is not None,
                        "own": [d for d in sets if own and d in own],
                        "stand_in": [d for d in sets if not own or d not in own]})
        return out

    def verdict_papers(self) -> list[str]:
        """The papers with at least one claim: each gets a verdict page."""
        papers = dict.fromkeys(e["paper"] for e in self.config.get("experiments", {}).values())
        return [p for p in papers if self.claims(p)]


def _grid(values: dict, where: str, bank_sizes: dict[str, int | None], bank: str) -> list[dict]:
    keys, lists = grid_axes(values, bank_sizes.get(bank), where)
    return [dict(zip(keys, combo)) for combo in itertools.product(*lists)]


def _bank_spec(config: dict, name: str, where: str) -> dict:
    banks = config.get("kernel_banks") or {}
    spec = dict(banks.get(name) or {})
    if name not in banks and name not in BANKS:
        raise ConfigError(f"{where}: kernel bank {name!r} is neither declared under kernel_banks nor a "
                          f"built-in bank ({', '.join(sorted(BANKS))})")
    spec.setdefault("bank", name)
    if spec["bank"] not in BANKS:
        raise ConfigError(f"kernel_banks.{name}.bank: unknown bank {spec['bank']!r}; known: {', '.join(sorted(BANKS))}")
    _check_preprocess(spec.get("preprocess"), f"kernel_banks.{name}.preprocess")
    try:   # every option in range before any job (the bank's builder would meet them only in its job)
        check_bank_options(spec["bank"], bank_options(spec), {k: spec[k] for k in BUILD_KEYS if k in spec})
    except ValueError as exc:
        raise ConfigError(f"kernel_banks.{name}: {exc}") from None
    by_set = spec.get("preprocess_by_dataset")
    if by_set is not None:
        if not isinstance(by_set, dict):
            raise ConfigError(f"kernel_banks.{name}.preprocess_by_dataset: a mapping data set -> preprocessing, "
                              f"got {by_set!r}")
        for ds, how in by_set.items():
            _check_preprocess(how, f"kernel_banks.{name}.preprocess_by_dataset.{ds}")
    return canonical(spec)


def _check_preprocess(how, where: str) -> None:
    if how is not None and how not in PREPROCESS:
        raise ConfigError(f"{where}: unknown preprocessing {how!r}; known: {', '.join(sorted(PREPROCESS))}")


def _dataset_spec(config: dict, name: str, where: str) -> dict:
    """A data set's loader and options: its ``datasets:`` entry, or, for a name not declared there,
    the registered loader of that name with its defaults."""
    declared = config.get("datasets") or {}
    if name not in declared and name not in DATASETS:
        raise ConfigError(f"{where}: dataset {name!r} is neither declared under datasets: nor a registered "
                          "loader (python -m mkclust.datasets --list)")
    opts = dict(declared.get(name) or {})
    if "file" in opts:   # a researcher's own file: the registered loader "file" (mkclust.datasets.files)
        if "loader" in opts:
            raise ConfigError(f"datasets.{name}: give file: or loader:, not both")
        opts["loader"], opts["path"] = "file", opts.pop("file")
    loader = opts.pop("loader", name)
    if loader not in DATASETS:
        raise ConfigError(f"datasets.{name}: unknown dataset loader {loader!r}; registered: "
                          f"{', '.join(sorted(DATASETS))}")
    if DATASETS[loader].kind == "unavailable":
        raise ConfigError(f"datasets.{name}: {loader} is not obtainable ({DATASETS[loader].reason}); "
                          "remove it from the experiments")
    if DATASETS[loader].kind == "local":
        path = opts.get("path")
        if not path or not Path(str(path)).is_file():
            raise ConfigError(f"datasets.{name}: data file {path!r} does not exist" if path else
                              f"datasets.{name}: name the data file (file: PATH)")
    return {"loader": loader, "options": canonical(opts)}


def plan(config: dict) -> Plan:
    """Expand the configuration into runs and outputs, checking its meaning. Each algorithm entry's
    size is counted before its runs are built, so an oversized grid is refused at once (naming it)
    rather than after filling memory."""
    p = Plan(config=config)
    budget = Budget(config)
    check_names(config)
    for exp, e in (config.get("experiments") or {}).items():
        where = f"experiments.{exp}"
        for ds in e["datasets"]:
            p.datasets[ds] = _dataset_spec(config, ds, f"{where}.datasets")
        for b in e.get("banks", []):
            p.banks[b] = _bank_spec(config, b, f"{where}.banks")
        for label, a in e["algorithms"].items():
            p.runs += _algorithm_runs(p, exp, e, label, a or {}, budget)
        p.outputs[exp] = {kind: {name: canonical(spec or {}) for name, spec in (e.get(kind) or {}).items()}
                          for kind in ("tables", "figures")}
    check_outputs(p)
    check_claims(p)
    seen: set[tuple] = set()
    for r in p.runs:
        if (r.group, r.param_id, r.seed) in seen:
            raise ConfigError(f"experiments.{r.experiment}: two runs write seed {r.seed} of {r.path()}; make "
                              "the algorithm labels or parameter grids distinct")
        seen.add((r.group, r.param_id, r.seed))
    return p


def _given(fixed: dict, grid: dict, key: str) -> list:
    """Every value an algorithm entry gives ``key``: its fixed value, then its grid values."""
    return ([fixed[key]] if key in fixed else []) + as_list(grid.get(key, []))


def _algorithm_runs(p: Plan, exp: str, e: dict, label: str, a: dict, budget: Budget | None = None) -> list[Run]:
    """The runs of one algorithm entry: banks x parameter grid x datasets x seeds (the algorithm's
    own ``datasets``, a subset of the experiment's, where it cannot run on all of them)."""
    where = f"experiments.{exp}.algorithms.{label}"
    est_name = a.get("algorithm", label)
    if est_name not in ALGORITHMS:
        raise ConfigError(f"{where}: unknown algorithm {est_name!r}; registered: {', '.join(sorted(ALGORITHMS))}")
    cls = ALGORITHMS[est_name]
    own = set(default_params(cls))
    valid = own | {k for k, kinds in PSEUDO_PARAMS.items() if cls.input_kind in kinds}
    fixed = dict(a.get("params") or {})
    grid = a.get("grid") or {}
    bad = sorted((set(fixed) | set(grid)) - valid)
    if bad:
        raise ConfigError(f"{where}: {est_name} has no parameter(s) {bad}; it takes {sorted(valid)}")
    if "random_state" in fixed or "random_state" in grid:
        raise ConfigError(f"{where}: random_state comes from the experiment's seeds, not params")
    for how in _given(fixed, grid, "preprocess"):
        _check_preprocess(how, f"{where}.preprocess")
    shares = _given(fixed, grid, "imbalanced_balance")
    if shares:
        if "balance" not in own:
            raise ConfigError(f"{where}: imbalanced_balance sets a balance bound; {est_name} has none")
        if "balance" in fixed or "balance" in grid:
            raise ConfigError(f"{where}: give either balance or imbalanced_balance, not both")
        for share in shares:
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
                raise ConfigError(f"{where}.imbalanced_balance: a share of n in (0, 1], got {share!r}")
    batch = _batched(a.get("batch"), grid, where) | _batched(e.get("batch"), grid, f"experiments.{exp}", strict=False)
    if cls.input_kind == "features":
        banks = [NO_BANK]
    else:
        banks = a.get("banks", e.get("banks", []))
        if not banks:
            raise ConfigError(f"{where}: {est_name} needs a kernel bank (experiment or algorithm banks:)")
        for b in banks:
            p.banks[b] = _bank_spec(p.config, b, f"{where}.banks")
    datasets = a.get("datasets", e["datasets"])
    stray = sorted(set(datasets) - set(e["datasets"]))
    if stray:
        raise ConfigError(f"{where}.datasets: {stray} are not datasets of experiment {exp}")
    seeds = a.get("seeds", e.get("seeds", [0]))
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise ConfigError(f"{where if 'seeds' in a else f'experiments.{exp}'}.seeds: seed(s) {twice} listed twice")
    scores = a.get("scores", e.get("scores", []))
    unknown = sorted(set(scores) - set(LABEL_FREE))
    if unknown:
        raise ConfigError(f"{where}.scores: unknown label-free score(s) {unknown}; known: {sorted(LABEL_FREE)}")
    scores = ",".join(sorted(scores)) if cls.input_kind != "features" else ""   # scored on the bank's kernels
    runs = []
    for bank in banks:
        sizes = {} if bank == NO_BANK else {bank: p.inputs.bank_size(bank)}
        if budget is not None:
            points = grid_size(grid, sizes.get(bank))
            batched = grid_size({k: v for k, v in grid.items() if k in batch}, sizes.get(bank))
            budget.add(where, points, len(datasets), len(seeds), len(datasets) * max(points // batched, 1))
        for combo in _grid(grid, where, sizes, bank):
            _check_values(cls, {**fixed, **combo}, where, bank, sizes.get(bank))
            params = json.dumps({**fixed, **combo}, sort_keys=True)
            runs += [Run(exp, label, est_name, ds, bank, params, int(seed), bool(e.get("timing", False)),
                         ",".join(sorted(batch)), scores)
                     for ds in datasets for seed in seeds]
    return runs


def _batched(batch, grid: dict, where: str, strict: bool = True) -> set[str]:
    """The grid parameters a ``batch`` entry names: ``all`` is every one, a list names them (each a
    parameter of the algorithm's grid; an experiment's list applies to the algorithms whose grid has
    the parameter)."""
    if batch == "all":
        return set(grid)
    named = set(batch or [])
    if strict and named - set(grid):
        raise ConfigError(f"{where}.batch: {sorted(named - set(grid))} are not parameters of its grid")
    return named & set(grid)


def _check_values(cls, params: dict, where: str, bank: str, size: int | None) -> None:
    """One parameter set's values, before any job: the estimator built and its parameters validated
    (its ``_parameter_constraints``), a kernel index or count within the bank's size."""
    own, pseudo = split_pseudo(params)
    try:
        cls(**own)._check_params()
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    try:
        check_kernel_choice(pseudo, size, f"bank {bank}")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
