"""Experiments: from a configuration to run specifications, one run to a run record, run records to
a results table.

The workflow (``Snakefile``) only wires these functions to files:

- :func:`plan` expands every ``experiments:`` entry of the configuration into :class:`Run` objects,
  one per (experiment, algorithm, dataset, bank, parameter set, seed), and checks the
  configuration's meaning (registered datasets, banks, algorithms, parameters) so that a wrong
  configuration stops before any job runs, with a message naming the key.
- :func:`run_one` loads a processed dataset and a kernel bank, fits one estimator and returns the run
  record of DESIGN.md.
- :func:`records_to_frame` flattens run records into the rows of ``data/results/<experiment>.csv``.

Parameter grids: in an algorithm's ``grid`` every key lists values; the runs cover their Cartesian
product (combined with the fixed ``params``). The special parameter ``kernel`` picks the kernel of
a bank for single-kernel estimators: an index, ``"ew"`` (the equal-weight average of the bank's
kernels), or, in a grid, ``"all"`` (every index of the bank).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import platform
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

from mkclust import metrics as _metrics
from mkclust._validation import as_list, claim_kind
from mkclust.algorithms import ALGORITHMS, get_estimator
from mkclust.algorithms.base import NotFinished
from mkclust.datasets import REGISTRY as DATASETS
from mkclust.datasets import Dataset, load
from mkclust.kernels import BANKS, PREPROCESS, KernelBank, apply_preprocess, bank_size, build_bank
from mkclust.resources import fit_size, peak_rss_mb

log = logging.getLogger("mkclust.experiments")

NO_BANK = "none"  # bank component of runs of estimators that take the data matrix


class ConfigError(ValueError):
    """A configuration that cannot be run; the message names the offending key."""


# ------------------------------------------------------------------------------------------------
# planning
# ------------------------------------------------------------------------------------------------


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def param_id(params: dict) -> str:
    """A stable, readable file name for a parameter set: ``k1=v1+k2=v2`` (sorted keys), or
    ``default`` for no parameters; long or unusual ones become ``p-<sha1 prefix>``.

    No commas: the name is a wildcard of the run rule, and Snakemake passes a remote job (SLURM) its
    wildcards as ``--target-jobs rule:k=v,k=v``, splitting on every comma, so a comma inside a
    value breaks every cluster job."""
    if not params:
        return "default"
    pieces = [f"{k}={_fmt(params[k])}" for k in sorted(params)]
    slug = "+".join(pieces)
    if len(slug) <= 80 and all(re.fullmatch(r"[A-Za-z0-9_.=\-]+", p) for p in pieces):
        return slug
    digest = hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    return f"p-{digest[:12]}"


@dataclass(frozen=True)
class Run:
    experiment: str
    algorithm: str  # the label in the config (a column of the tables)
    estimator: str  # registry name
    dataset: str
    bank: str
    params_json: str
    seed: int
    timing: bool = False
    batch: str = ""  # comma-separated grid parameters whose values share one job (the entry's ``batch``)

    @property
    def params(self) -> dict:
        return json.loads(self.params_json)

    @property
    def param_id(self) -> str:
        return param_id(self.params)

    @property
    def group_id(self) -> str:
        """The group's folder name: the param_id with every batched parameter shown as ``each``."""
        if not self.batch:
            return self.param_id
        return param_id({**self.params, **{k: "each" for k in self.batch.split(",")}})

    @property
    def group(self) -> tuple[str, str, str, str, str]:
        """The run group, fitted by one job into one file: runs differing only in their seed, and in
        the values of the batched parameters when the algorithm entry has ``batch``."""
        return (self.experiment, self.algorithm, self.dataset, self.bank, self.group_id)

    def spec(self) -> dict:
        """The fields that recreate this run (``Run(**spec)``), as the run rule's params. ``batch``
        is left out when empty, so that groups planned before batching existed keep their params
        and Snakemake does not rerun them."""
        return {k: v for k, v in vars(self).items() if k != "batch" or v}

    def path(self, data_dir: str = "data") -> str:
        """The group's records file: a JSON list with one run record per seed."""
        return group_path(self.group, data_dir)


def group_path(group: tuple, data_dir: str = "data") -> str:
    experiment, algorithm, dataset, bank, pid = group
    return f"{data_dir}/runs/{experiment}/{algorithm}/{dataset}/{bank}/{pid}.json"


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

    def bank_size(self, bank: str) -> int | None:
        """The number of kernels of a configured bank (None when it depends on the data set)."""
        spec = self.banks[bank]
        return bank_size(spec["bank"], **_bank_options(spec))

    def run_groups(self) -> dict[tuple, list[Run]]:
        """group -> its runs in (parameter set, seed) order (one job each; see :attr:`Run.group`)."""
        groups: dict[tuple, list[Run]] = {}
        for r in self.runs:
            groups.setdefault(r.group, []).append(r)
        return {g: sorted(rs, key=lambda r: (r.params_json, r.seed)) for g, rs in groups.items()}

    def runs_of(self, experiment: str) -> list[Run]:
        return [r for r in self.runs if r.experiment == experiment]

    def group_targets(self, experiment: str) -> list[str]:
        """The records files of one experiment's run groups."""
        return sorted({r.path(self.data_dir) for r in self.runs_of(experiment)})

    def _targets(self, kind: str, exts: tuple[str, ...]) -> list[str]:
        return [f"{self.figures_dir}/{self.config['experiments'][exp]['paper']}/{name}.{ext}"
                for exp, outs in self.outputs.items() for name in outs[kind] for ext in exts]

    def table_targets(self) -> list[str]:
        return self._targets("tables", ("csv", "md", "tex", "html"))

    def figure_targets(self) -> list[str]:
        return self._targets("figures", ("png", "pdf"))

    def sources(self, experiment: str) -> list[str]:
        """The experiments whose results feed ``experiment``'s tables and figures: itself, then the
        ones it ``reuse``s (their runs are theirs; reusing adds no runs)."""
        return [experiment, *self.config["experiments"][experiment].get("reuse", [])]

    def results_path(self, experiment: str) -> str:
        return f"{self.data_dir}/results/{experiment}.csv"

    def source_results(self, experiment: str) -> list[str]:
        return [self.results_path(e) for e in self.sources(experiment)]

    def results_targets(self) -> list[str]:
        return [self.results_path(e) for e in self.config.get("experiments", {})]

    def experiments_of(self, paper: str) -> list[str]:
        return [e for e, spec in self.config.get("experiments", {}).items() if spec["paper"] == paper]

    def claims(self, paper: str) -> list[dict]:
        """The headline claims of one paper, from its experiments' ``claims:`` in order."""
        return [{**c, "sources": self.sources(e)} for e in self.experiments_of(paper)
                for c in self.config["experiments"][e].get("claims") or []]

    def verdict_papers(self) -> list[str]:
        """The papers with at least one claim: each gets a verdict page."""
        papers = dict.fromkeys(e["paper"] for e in self.config.get("experiments", {}).values())
        return [p for p in papers if self.claims(p)]

    def paper_tables(self, paper: str) -> dict[str, str]:
        """table name -> its tidy CSV, for every table of the paper's experiments."""
        return {name: f"{self.figures_dir}/{paper}/{name}.csv"
                for e in self.experiments_of(paper) for name in self.outputs[e]["tables"]}

    def paper_results(self, paper: str) -> list[str]:
        """The results tables the paper's experiments read (their own and those they reuse)."""
        return list(dict.fromkeys(p for e in self.experiments_of(paper) for p in self.source_results(e)))

    def verdict_targets(self) -> list[str]:
        return [f"{self.figures_dir}/{p}/verdict.{ext}" for p in self.verdict_papers()
                for ext in ("csv", "md", "html", "png")]

    def summary_targets(self) -> list[str]:
        return [f"{self.figures_dir}/run_summary.{ext}" for ext in ("json", "rst", "html")]


#: parameters the runner consumes (not passed to the estimator), and the input kinds that take them:
#: ``kernel`` picks one kernel of the bank (an index or "ew"); ``n_kernels`` keeps the first M
#: kernels; ``fit_subset`` fits on a random subset of that size (drawn with the run's seed) and labels
#: every sample with ``predict`` (the MKC paper's Table 3); ``preprocess`` transforms the data matrix
#: of an estimator on features (:data:`mkclust.kernels.PREPROCESS`, as a bank's ``preprocess:`` does
#: before its kernels), e.g. KM on the columns scaled to [-1, 1] that the ODMC protocol's kernels use;
#: ``imbalanced_balance`` (estimators with a ``balance`` bound) sets ``balance`` to that share of n on
#: an imbalanced data set (:func:`resolve_balance`) and leaves the estimator's default (0.03 n) on the
#: others: the MMC protocol of Zhang, Tsang and Kwok (2007) that the ODMC paper follows.
PSEUDO_PARAMS = {
    "kernel": ("kernel", "feature_maps"),
    "n_kernels": ("kernels", "feature_maps"),
    "fit_subset": ("feature_maps",),
    "preprocess": ("features",),
    "imbalanced_balance": ("kernel", "kernels", "feature_maps"),
}

#: a data set is imbalanced when its largest and smallest classes differ by more than this share of
#: n (for two classes, |e'y| > 0.1 n: the minority is under 45 %). 0.1 is about the geometric mean of
#: the protocol's two bounds, 0.03 n and 0.3 n: each set gets the bound nearer, in ratio, to its own
#: class imbalance. The papers (ODMC, IterSVR) do not say which of their sets they counted as
#: imbalanced; this rule is our choice.
IMBALANCED_ABOVE = 0.1


def class_imbalance(y) -> float:
    """(largest class - smallest class) / n of the labels y."""
    counts = np.unique(np.asarray(y), return_counts=True)[1]
    return float((counts.max() - counts.min()) / counts.sum())


def resolve_balance(params: dict, pseudo: dict, n: int, imbalance: float) -> dict:
    """The parameters the runner derives from the data set (n samples, :func:`class_imbalance`
    ``imbalance``): ``balance`` = share x n under the ``imbalanced_balance`` pseudo-parameter when the
    imbalance exceeds :data:`IMBALANCED_ABOVE` (set in ``params``, and returned for the record);
    nothing otherwise. Under ``fit_subset`` the bound is a share of the samples fitted, the subset."""
    share = pseudo.get("imbalanced_balance")
    if share is None or imbalance <= IMBALANCED_ABOVE:
        return {}
    params["balance"] = float(share) * fit_size(pseudo, n)
    return {"balance": params["balance"]}


def _grid(values: dict, where: str, bank_sizes: dict[str, int | None], bank: str) -> list[dict]:
    keys, lists = [], []
    for k, v in values.items():
        if k == "kernel" and v == "all":
            m = bank_sizes.get(bank)
            if m is None:
                raise ConfigError(f"{where}: kernel: all needs a bank of known size; list the indices")
            v = list(range(m))
        if not isinstance(v, list) or not v:
            raise ConfigError(f"{where}.grid.{k}: a grid entry must be a non-empty list, got {v!r}")
        keys.append(k)
        lists.append(v)
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
    return spec


def _check_preprocess(how, where: str) -> None:
    if how is not None and how not in PREPROCESS:
        raise ConfigError(f"{where}: unknown preprocessing {how!r}; known: {', '.join(sorted(PREPROCESS))}")


def _dataset_spec(config: dict, name: str, where: str) -> dict:
    declared = config.get("datasets") or {}
    if name not in declared:
        raise ConfigError(f"{where}: dataset {name!r} is not declared under datasets:")
    opts = dict(declared[name] or {})
    loader = opts.pop("loader", name)
    if loader not in DATASETS:
        raise ConfigError(f"datasets.{name}: unknown dataset loader {loader!r}; registered: "
                          f"{', '.join(sorted(DATASETS))}")
    if DATASETS[loader].kind == "unavailable":
        raise ConfigError(f"datasets.{name}: {loader} is not obtainable ({DATASETS[loader].reason}); "
                          "remove it from the experiments")
    return {"loader": loader, "options": opts}


def plan(config: dict) -> Plan:
    """Expand the configuration into runs and outputs, checking its meaning."""
    p = Plan(config=config)
    for exp, e in (config.get("experiments") or {}).items():
        where = f"experiments.{exp}"
        for ds in e["datasets"]:
            p.datasets[ds] = _dataset_spec(config, ds, f"{where}.datasets")
        for b in e.get("banks", []):
            p.banks[b] = _bank_spec(config, b, f"{where}.banks")
        for label, a in e["algorithms"].items():
            p.runs += _algorithm_runs(p, exp, e, label, a or {})
        p.outputs[exp] = {"tables": dict(e.get("tables") or {}), "figures": dict(e.get("figures") or {})}
    _check_outputs(p)
    _check_claims(p)
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


def _algorithm_runs(p: Plan, exp: str, e: dict, label: str, a: dict) -> list[Run]:
    """The runs of one algorithm entry: banks x parameter grid x datasets x seeds (the algorithm's
    own ``datasets``, a subset of the experiment's, where it cannot run on all of them)."""
    where = f"experiments.{exp}.algorithms.{label}"
    est_name = a.get("algorithm", label)
    if est_name not in ALGORITHMS:
        raise ConfigError(f"{where}: unknown algorithm {est_name!r}; registered: {', '.join(sorted(ALGORITHMS))}")
    cls = ALGORITHMS[est_name]
    own = set(cls().get_params())
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
    batch = list(a.get("batch") or [])
    if set(batch) - set(grid):
        raise ConfigError(f"{where}.batch: {sorted(set(batch) - set(grid))} are not parameters of its grid")
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
    runs = []
    for bank in banks:
        sizes = {} if bank == NO_BANK else {bank: p.bank_size(bank)}
        for combo in _grid(grid, where, sizes, bank):
            params = json.dumps({**fixed, **combo}, sort_keys=True)
            runs += [Run(exp, label, est_name, ds, bank, params, int(seed), bool(e.get("timing", False)),
                         ",".join(sorted(batch)))
                     for ds in datasets for seed in a.get("seeds", e.get("seeds", [0]))]
    return runs


def _check_outputs(p: Plan) -> None:
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


def _check_claims(p: Plan) -> None:
    """Every claim names one kind (:mod:`mkclust.reporting.verdicts`), a table of its paper and
    algorithms of its paper's experiments, so a typo stops the plan instead of the verdict job."""
    for exp, e in p.config.get("experiments", {}).items():
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
                        raise ConfigError(f"{where}: algorithm {a!r} is not one of paper {e['paper']}'s ({sorted(algs)})")


#: bank-spec keys that are arguments of :func:`mkclust.kernels.build_bank`, not options of the bank
_BUILD_KEYS = ("rank", "energy", "landmarks", "landmarks_above", "landmark_seed")


def _bank_options(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k not in ("bank", "preprocess", *_BUILD_KEYS)}


# ------------------------------------------------------------------------------------------------
# building datasets and banks (called by the workflow's scripts)
# ------------------------------------------------------------------------------------------------


def make_dataset(spec: dict, raw_dir=None, mirror=None) -> Dataset:
    """Load a dataset from its planned spec ``{loader, options}``; downloadable sets take their raw
    files from ``mirror`` (else ``$MKCLUST_DATA_MIRROR``) or download them into ``raw_dir``."""
    return load(spec["loader"], raw_dir=raw_dir, mirror=mirror, **spec.get("options", {}))


def make_bank(spec: dict, ds: Dataset) -> KernelBank:
    """Build a kernel bank from its config spec on a dataset; ``views_linear`` takes the dataset's
    view blocks from its meta unless given."""
    opts = _bank_options(spec)
    if spec["bank"] == "views_linear" and "views" not in opts:
        if "views" not in ds.meta:
            raise ConfigError(f"bank views_linear needs a multi-view dataset; {ds.meta.get('name')} has no views")
        opts["views"] = ds.meta["views"]
    build = {k: spec[k] for k in _BUILD_KEYS if spec.get(k) is not None}
    return build_bank(spec["bank"], ds.X, preprocess=spec.get("preprocess", "none"), **build, **opts)


# ------------------------------------------------------------------------------------------------
# one run
# ------------------------------------------------------------------------------------------------


def _versions() -> dict:
    """Versions of the packages a result depends on (read from metadata: nothing is imported)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("mkclust", "numpy", "scipy", "scikit-learn", "cvxpy", "pandas"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


STANDARD_ATTRS = {"labels_", "objective_", "objective_trace_", "n_iter_", "kernel_weights_"}


def _diagnostics(est, max_size: int = 1000) -> dict:
    """Fitted attributes beyond the standard ones that are small enough to keep in a record."""
    out = {}
    for k, v in vars(est).items():
        if not k.endswith("_") or k.startswith("_") or k in STANDARD_ATTRS:
            continue
        if isinstance(v, np.ndarray) and v.size > max_size:
            continue
        if isinstance(v, (list, tuple)) and len(v) > max_size:
            continue
        if v is None or isinstance(v, (int, float, str, bool, np.ndarray, np.generic, list, tuple, dict)):
            out[k] = _jsonable(v)
    return out


def select_kernel(bank: KernelBank, choice) -> tuple[np.ndarray, str]:
    """The kernel a single-kernel run uses: an index into the bank or ``"ew"`` (equal weights)."""
    m = bank.n_kernels
    if choice is None:
        if m != 1:
            raise ConfigError(f"the bank holds {m} kernels; set the parameter kernel "
                              "(an index, 'ew', or 'all' in a grid)")
        choice = 0
    if choice == "ew":
        return bank.gram().mean(axis=0), "equal-weight mean of " + "+".join(bank.names)
    idx = int(choice)
    if not 0 <= idx < m:
        raise ConfigError(f"kernel={choice} is out of range for a bank of {m} kernels")
    return bank.kernel(idx), bank.names[idx]


def run_one(run: Run, dataset_path, bank_path=None) -> dict:
    """Fit ``run``'s estimator on its dataset and bank and return the run record (DESIGN.md)."""
    return run_group([run], dataset_path, bank_path)[0]


def run_group(runs: list[Run], dataset_path, bank_path=None) -> list[dict]:
    """Fit the runs of one group (same estimator, dataset and bank; one per seed, and one per value
    of each batched parameter), loading the dataset and the bank once; returns their records in
    order."""
    if len({r.group for r in runs}) != 1:
        raise ValueError("run_group takes the runs of one group")
    ds = Dataset.load(dataset_path)
    input_kind = ALGORITHMS[runs[0].estimator].input_kind
    bank = None if input_kind == "features" else KernelBank.load(bank_path)
    split = [split_pseudo(r.params) for r in runs]
    imbalance = class_imbalance(ds.y)
    derived = []
    for params, pseudo in split:
        params.setdefault("n_clusters", ds.n_classes)
        derived.append(resolve_balance(params, pseudo, ds.n, imbalance))
    if any(derived):
        log.info("%s is imbalanced (class imbalance %.3f > %g): balance %s", runs[0].dataset, imbalance,
                 IMBALANCED_ABOVE, sorted({d["balance"] for d in derived if d}))
    inputs: dict[str, list[int]] = {}  # the runs on each input (a batch over alpha, beta shares one)
    for k, (_, pseudo) in enumerate(split):
        inputs.setdefault(input_key(pseudo), []).append(k)
    batching = hasattr(ALGORITHMS[runs[0].estimator], "fit_batch")
    records: list = [None] * len(runs)
    for idx in inputs.values():
        pseudo = split[idx[0]][1]
        if input_kind == "features":
            data, kernel_name = apply_preprocess(ds.X, pseudo.get("preprocess")), None
            data = data.toarray() if hasattr(data, "toarray") else data
        elif input_kind == "kernel":
            data, kernel_name = select_kernel(bank, pseudo.get("kernel"))
        else:
            data, kernel_name = _bank_input(bank, input_kind, pseudo)
        # an estimator with fit_batch fits the runs on one input together; one that says
        # batch_alone_first (ODMC) fits the first alone, so that its seconds per iteration are
        # those of one fit
        first = getattr(ALGORITHMS[runs[0].estimator], "batch_alone_first", False)
        alone = (idx[:1] if first else []) if batching and pseudo.get("fit_subset") is None else idx
        for k in alone:
            run, params = runs[k], split[k][0]
            log.info("run %d of %d: params %s, seed %d", k + 1, len(runs), run.params_json, run.seed)
            est = get_estimator(run.estimator, random_state=run.seed, **params)
            records[k] = _fit_record(run, est, data, ds, params, kernel_name, pseudo.get("fit_subset"))
        batch = idx[len(alone):]
        if batch:
            fitted = _fit_batch_records([(runs[k], split[k][0]) for k in batch], data, ds, kernel_name)
            for k, rec in zip(batch, fitted):
                records[k] = rec
    for rec, d in zip(records, derived):
        rec["derived_params"] = d
    return records


def split_pseudo(params: dict) -> tuple[dict, dict]:
    """(the estimator's parameters, the pseudo-parameters that select its input) of a run."""
    pseudo = {k: params[k] for k in PSEUDO_PARAMS if k in params}
    return {k: v for k, v in params.items() if k not in pseudo}, pseudo


def input_key(pseudo: dict) -> str:
    """Runs with equal keys share one input (and, for a batching estimator, one batch)."""
    return json.dumps(pseudo, sort_keys=True)


def _fit_batch_records(batch: list, data, ds: Dataset, kernel_name) -> list[dict]:
    """Records of (run, estimator parameters) pairs fitted together by their estimator's
    ``fit_batch``; each run's fit_seconds and cpu_seconds are the batch's divided by its runs. A
    fit that did not finish inside the batch holds its NotFinished in ``not_finished_`` (GMMC) and
    is recorded as N/A with its reason, as a NotFinished raised by ``fit``."""
    ests = [get_estimator(run.estimator, random_state=run.seed, **params) for run, params in batch]
    log.info("fit %d runs of %s (%s) on %s/%s in one batch", len(batch), batch[0][0].algorithm,
             batch[0][0].estimator, batch[0][0].dataset, batch[0][0].bank)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    type(ests[0]).fit_batch(ests, data)
    share = ((time.perf_counter() - wall0) / len(batch), (time.process_time() - cpu0) / len(batch))
    return [_fit_record(run, est, data, ds, params, kernel_name, fitted=share)
            for (run, params), est in zip(batch, ests)]


def _bank_input(bank: KernelBank, input_kind: str, pseudo: dict):
    """The input of a multi-kernel estimator: the Gram stack, or for ``feature_maps`` estimators the
    feature matrices of a features bank; restricted by the ``kernel`` / ``n_kernels`` pseudo-params."""
    idx = list(range(bank.n_kernels))
    if pseudo.get("n_kernels") is not None:
        M = int(pseudo["n_kernels"])
        if not 1 <= M <= bank.n_kernels:
            raise ConfigError(f"n_kernels={M} is out of range for a bank of {bank.n_kernels} kernels")
        idx = idx[:M]
    if pseudo.get("kernel") is not None:
        choice = pseudo["kernel"]
        if choice == "ew":
            raise ConfigError("kernel=ew is for single-kernel estimators")
        if not 0 <= int(choice) < bank.n_kernels:
            raise ConfigError(f"kernel={choice} is out of range for a bank of {bank.n_kernels} kernels")
        idx = [int(choice)]
    names = [bank.names[i] for i in idx]
    if input_kind == "feature_maps" and bank.kind == "features":
        feats = bank.feature_list()
        return [feats[i] for i in idx], names
    if len(idx) == 1:
        return bank.kernel(idx[0])[None], names
    K = bank.gram()
    return (K if len(idx) == K.shape[0] else K[idx]), names


def _subset_fit(est, data, n: int, size: int, seed: int) -> np.ndarray:
    """Fit on a random subset of ``size`` samples and label all n with ``predict``."""
    if not 2 <= size <= n:
        raise ConfigError(f"fit_subset={size} must lie in [2, {n}]")
    S = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))
    if isinstance(data, list):
        est.fit([F[S] for F in data])
        return est.predict(data)
    est.fit(data[:, S][:, :, S])
    return est.predict(data[:, :, S])


def _fit_record(run: Run, est, data, ds: Dataset, params: dict, kernel_name, fit_subset=None,
                fitted: tuple[float, float] | None = None) -> dict:
    """Fit ``est`` and return the run's record; ``fitted`` = (wall, cpu seconds): ``est`` was fitted
    already (in a batch) and those are its seconds."""
    blas_threads = max((p["num_threads"] for p in threadpool_info()), default=None)
    if fitted is None:
        log.info("fit %s (%s) on %s/%s params=%s seed=%d n=%d, BLAS threads %s", run.algorithm, run.estimator,
                 run.dataset, run.bank, run.params_json, run.seed, ds.n, blas_threads)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    status, reason = "ok", ""
    try:
        if fitted is not None:
            if getattr(est, "not_finished_", None) is not None:  # declined within its batch
                raise est.not_finished_
            labels = np.asarray(est.labels_)
        elif fit_subset is None:
            est.fit(data)
            labels = np.asarray(est.labels_)
        else:
            labels = np.asarray(_subset_fit(est, data, ds.n, int(fit_subset), run.seed))
    except NotFinished as exc:  # declined or out of budget (GMMC): an N/A cell with the reason
        status, reason, labels = "not_finished", str(exc), None  # not "n/a": pandas reads that as NA
        log.warning("%s on %s: N/A (%s)", run.algorithm, run.dataset, reason)
    fit_seconds, cpu_seconds = fitted or (time.perf_counter() - wall0, time.process_time() - cpu0)
    if labels is None:
        scores = {name: float("nan") for name in _metrics.METRICS}
    else:
        scores = _metrics.evaluate(ds.y, labels)
    rec = {
        "experiment": run.experiment, "algorithm": run.algorithm, "estimator": run.estimator,
        "dataset": run.dataset, "bank": run.bank, "params": run.params, "param_id": run.param_id,
        "seed": run.seed, "n": ds.n, "n_clusters": int(params["n_clusters"]), "kernel_name": kernel_name,
        "status": status, "reason": reason,
        "labels": [] if labels is None else labels.tolist(), "metrics": scores,
        "cluster_sizes": [] if labels is None else np.bincount(labels, minlength=int(params["n_clusters"])).tolist(),
        "objective": _jsonable(getattr(est, "objective_", None)),
        "objective_trace": _jsonable(getattr(est, "objective_trace_", None)),
        "kernel_weights": _jsonable(getattr(est, "kernel_weights_", None)),
        "n_iter": _jsonable(getattr(est, "n_iter_", None)),
        "fit_seconds": fit_seconds, "cpu_seconds": cpu_seconds,
        "peak_rss_mb": peak_rss_mb(),
        "timing": run.timing, "blas_threads": blas_threads, "dataset_flags": ds.meta.get("flags", []),
        "versions": _versions(), "diagnostics": _diagnostics(est),
    }
    if labels is not None and fit_subset is None and not run.timing and hasattr(est, "objective_at"):
        # the model's objective at its own labels and at the true ones (labels fixed, same kernels and
        # parameters): a diagnostic of where a gap comes from, read after the fit and never used to
        # choose anything
        rec["diagnostics"]["objective_at_labels"] = est.objective_at(labels)
        rec["diagnostics"]["objective_at_true_labels"] = est.objective_at(ds.y)
    log.info("done in %.3f s (cpu %.3f s): %s", fit_seconds, cpu_seconds,
             ", ".join(f"{k}={v:.4f}" for k, v in scores.items()))
    return rec


# ------------------------------------------------------------------------------------------------
# aggregation
# ------------------------------------------------------------------------------------------------

RESULT_COLUMNS = ["experiment", "algorithm", "estimator", "dataset", "bank", "param_id", "params", "seed",
                  "status", "reason", "n", "n_clusters", "kernel_name", "objective", "n_iter", "fit_seconds", "cpu_seconds",
                  "peak_rss_mb", "timing", "dataset_flags", "kernel_weights"]


def records_to_frame(records: list[dict]):
    """One flat row per run record: identifiers, ``params`` as JSON plus one ``param.<name>``
    column per parameter, every metric, objective, iterations, timings."""
    import pandas as pd

    rows = []
    for r in records:
        row = {k: r.get(k) for k in RESULT_COLUMNS}
        row["status"], row["reason"] = r.get("status", "ok"), r.get("reason", "")  # records before N/A existed
        row["params"] = json.dumps(r["params"], sort_keys=True)
        row["dataset_flags"] = ";".join(r.get("dataset_flags") or [])
        sizes = r.get("cluster_sizes")
        row["min_cluster_size"] = min(sizes) if sizes else None  # 0: an empty cluster
        if isinstance(row["kernel_name"], list):  # a multi-kernel run: its bank's kernel names
            row["kernel_name"] = json.dumps(row["kernel_name"])
        row["kernel_weights"] = None if r.get("kernel_weights") is None else json.dumps(r["kernel_weights"])
        for k, v in (r.get("diagnostics") or {}).items():  # scalar diagnostics as diag.<name> columns
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                row[f"diag.{k.rstrip('_')}"] = v
        row.update({f"param.{k}": v for k, v in r["params"].items()})
        row.update({f"derived.{k}": v for k, v in (r.get("derived_params") or {}).items()})
        row.update(r["metrics"])
        rows.append(row)
    df = pd.DataFrame(rows)
    if len(df):
        df = df.sort_values(["algorithm", "dataset", "bank", "param_id", "seed"], kind="stable")
    return df.reset_index(drop=True)


def load_records(paths) -> list[dict]:
    """The run records in records files (each a JSON list, one record per seed, or one record)."""
    out: list[dict] = []
    for p in paths:
        data = json.loads(Path(p).read_text())
        out += as_list(data)
    return out
