"""Run records -> the rows of ``data/results/<experiment>.csv`` (one row per run)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from mkclust._io import corrupt
from mkclust.repro.configuration import as_list

RESULT_COLUMNS = ["experiment", "algorithm", "estimator", "dataset", "bank", "param_id", "params", "seed",
                  "status", "reason", "n", "n_clusters", "majority_share", "kernel_name", "objective", "n_iter",
                  "fit_seconds", "cpu_seconds", "peak_rss_mb", "timing", "dataset_flags", "kernel_weights"]


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


#: the results table's column :func:`stopped_at_budget` fills (rule aggregate, once per experiment): 1.0 for a
#: run that stopped at its budget, 0.0 for one that did not, empty for a run whose estimator has no budget
AT_BUDGET = "stopped_at_budget"


def stopped_at_budget(results):
    """Per run of ``results``, whether it stopped at its budget before its own stopping rule held: its
    ``n_iter`` reached the parameter its estimator names as ``budget``
    (:attr:`mkclust.algorithms.base.BaseClusterer.budget`: ODMC's ``max_iter``, LG-MMC's ``max_labels``), at
    the run's own value of it, else the estimator's default: 1.0 or 0.0, NaN for a run of an estimator
    without a budget (or a table without ``estimator`` and ``n_iter``). (ODMC checks its duality gap every
    ``check_every`` steps, so a run whose gap met its tolerance at exactly the last step counts as stopped.)

    It reads the estimator classes, and importing them imports scikit-learn (about 2.5 s a process), so
    rule aggregate computes it once per experiment into the column :data:`AT_BUDGET`, and a table job,
    which reads that column (:func:`mkclust.repro.reporting.reduce.at_budget`), never imports an estimator."""
    import pandas as pd

    from mkclust.algorithms import ALGORITHMS
    from mkclust.algorithms.base import default_params

    out = pd.Series(math.nan, index=results.index)
    if "estimator" not in results.columns or "n_iter" not in results.columns:
        return out
    for name, h in results.groupby("estimator"):
        cls = ALGORITHMS.get(str(name))
        budget = getattr(cls, "budget", None)
        if budget is None:
            continue
        cap = pd.to_numeric(h.get(f"param.{budget}", pd.Series(math.nan, index=h.index)), errors="coerce")
        cap = cap.fillna(default_params(cls)[budget])
        out[h.index] = (pd.to_numeric(h["n_iter"], errors="coerce") >= cap).astype(float)
    return out


def load_records(paths) -> list[dict]:
    """The run records in records files (each a JSON list, one record per seed, or one record)."""
    out: list[dict] = []
    for p in paths:
        try:
            data = json.loads(Path(p).read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise corrupt(p, "records file (JSON)", exc) from None
        out += as_list(data)
    return out
