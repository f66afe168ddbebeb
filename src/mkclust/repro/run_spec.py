"""A run: one fit of one estimator on one data set's input with one parameter set and seed, the unit
:func:`mkclust.repro.planning.plan` plans, the run rule groups and :mod:`mkclust.repro.runner` fits; and the
file names of its group's records."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from types import SimpleNamespace

NO_BANK = "none"  # bank component of runs of estimators that take the data matrix


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
    scores: str = ""  # comma-separated label-free scores the records store (mkclust.metrics.LABEL_FREE)

    @property
    def params(self) -> dict:
        return json.loads(self.params_json)

    @property
    def param_id(self) -> str:
        return _ids(self.params_json, "")[0]

    @property
    def group_id(self) -> str:
        """The group's folder name: the param_id with every batched parameter shown as ``each``."""
        return _ids(self.params_json, self.batch)[1]

    @property
    def group(self) -> tuple[str, str, str, str, str]:
        """The run group, fitted by one job into one file: runs differing only in their seed, and in
        the values of the batched parameters when the algorithm entry has ``batch``."""
        return (self.experiment, self.algorithm, self.dataset, self.bank, self.group_id)

    def spec(self) -> dict:
        """The fields that recreate this run (``Run(**spec)``), as the run rule's params. ``batch``
        and ``scores`` are left out when empty, so that groups planned before they existed keep their
        params and Snakemake does not rerun them."""
        return {k: v for k, v in vars(self).items() if k not in ("batch", "scores") or v}

    def path(self, data_dir: str = "data") -> str:
        """The group's records file: a JSON list with one run record per seed."""
        return group_path(self.group, data_dir)


@functools.lru_cache(maxsize=None)
def _ids(params_json: str, batch: str) -> tuple[str, str]:
    """(param_id, group_id) of a parameter set and its batched parameters, computed once per distinct
    pair: a plan asks for them several times for each of its runs (grouping, sorting, paths), and
    runs that differ only in their seed share them."""
    params = json.loads(params_json)
    if not batch:
        pid = param_id(params)
        return pid, pid
    return param_id(params), param_id({**params, **{k: "each" for k in batch.split(",")}})


#: a run group's records file under the data folder: the run rule's output (workflow/rules/runs.smk),
#: :func:`group_path` and the archive read this one pattern
RECORDS_PATTERN = "runs/{experiment}/{algorithm}/{dataset}/{bank}/{param_id}.json"


def group_path(group: tuple, data_dir: str = "data") -> str:
    """The records file of ``group`` (experiment, algorithm, dataset, bank, group id) under ``data_dir``."""
    experiment, algorithm, dataset, bank, pid = group
    return f"{data_dir}/" + RECORDS_PATTERN.format(experiment=experiment, algorithm=algorithm, dataset=dataset,
                                                   bank=bank, param_id=pid)


def _spans(values) -> str:
    """``0-9,12`` for the integers 0..9 and 12; other values comma-joined."""
    if not all(isinstance(v, int) for v in values):
        return ",".join(_fmt(v) for v in values)
    out, values = [], sorted(set(values))
    start = prev = values[0]
    for v in values[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = v
    return ",".join(out)


def group_params(runs: list[Run]) -> dict:
    """The run rule's params for one run group: ``runs``, a one-line description of the group that
    Snakemake records and compares (its rerun trigger), and ``specs``, the runs themselves.

    ``runs`` names the number of runs, the estimator, the seeds, the batched parameters' values and a
    sha256 of every run's fields, so that any change of a run reruns the group, while a dry run's
    "Params have changed" reason stays one short line (the list of run specs it showed before was
    up to 60 KB per job). ``specs`` is a ``SimpleNamespace``: Snakemake records only params of
    built-in types and leaves other values out of its comparison (``UNREPRESENTABLE`` in
    ``snakemake.persistence``), so the specs reach the job without being printed twice per job."""
    specs = [r.spec() for r in runs]
    digest = hashlib.sha256(json.dumps(specs, sort_keys=True).encode()).hexdigest()[:12]
    first = runs[0]
    batched = [k for k in first.batch.split(",") if k]
    params = [r.params for r in runs] if batched else []
    values = "".join(f"; {k} {_spans(list(dict.fromkeys(p.get(k) for p in params)))}" for k in batched)
    line = (f"{len(runs)} run(s) of {first.estimator}{' (timing)' if first.timing else ''}: "
            f"seeds {_spans([r.seed for r in runs])}{values}; spec sha256 {digest}")
    return {"runs": line, "specs": SimpleNamespace(runs=specs)}
