"""Run records -> the rows of ``data/results/<experiment>.csv`` (one row per run)."""

from __future__ import annotations

import json
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
