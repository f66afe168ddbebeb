import json
import math

import numpy as np
import pandas as pd
import pytest

from mkclust.repro.reporting import build_table
from mkclust.repro.reporting.shape import shape_lines, top_kernels, with_shape_metrics
from mkclust.repro.reporting.tables import _cell

NAMES = json.dumps(["a", "b", "c", "d"])


def runs():
    """Two data sets; MK: 4-kernel weights (one-hot on c, or half on c), a cluster of 1 point in 3 of its 4
    runs; SK: a single-kernel method, no weights, no small cluster. A third set, s3 (one seed), where
    kernels a and b tie for MK's largest weight."""
    rows = []
    for ds, weights, sizes in [("s1", [0, 0, 2, 0], [1, 1]), ("s2", [1, 1, 2, 0], [1, 30]), ("s3", [3, 3, 0, 1], [5])]:
        for seed, size in enumerate(sizes):
            base = {"dataset": ds, "param_id": "default", "seed": seed, "dataset_flags": "", "status": "ok", "acc": .5}
            rows.append({**base, "algorithm": "MK", "kernel_name": NAMES, "kernel_weights": json.dumps(weights),
                         "min_cluster_size": size})
            rows.append({**base, "algorithm": "SK", "kernel_name": "a", "kernel_weights": None,
                         "min_cluster_size": 40})
    return pd.DataFrame(rows)


def test_the_shape_metrics_of_single_runs():
    r = with_shape_metrics(runs()).set_index(["algorithm", "dataset", "seed"])
    assert r.loc[("MK", "s1", 0), "tiny_cluster"] == 1.0 and r.loc[("MK", "s2", 1), "tiny_cluster"] == 0.0
    assert r.loc[("MK", "s1", 0), "top_weight"] == 1.0 and r.loc[("MK", "s1", 0), "effective_kernels"] == 1.0
    assert r.loc[("MK", "s2", 0), "top_weight"] == 0.5 and r.loc[("MK", "s2", 0), "effective_kernels"] == \
        pytest.approx(1 / (2 * 0.25 ** 2 + 0.5 ** 2))
    assert math.isnan(r.loc[("SK", "s1", 0), "top_weight"]) and math.isnan(r.loc[("SK", "s1", 0), "effective_kernels"])
    one = with_shape_metrics(pd.DataFrame({"kernel_weights": [json.dumps([0.7])], "min_cluster_size": [np.nan]}))
    assert one[["tiny_cluster", "top_weight", "effective_kernels"]].isna().all(axis=None)   # nothing to say


def test_a_shape_table_and_its_generated_lines():
    spec = {"metrics": ["tiny_cluster", "top_weight", "effective_kernels"],
            "columns": {"SK": {"algorithm": "SK"}, "MK": {"algorithm": "MK"}}}
    tidy = build_table(with_shape_metrics(runs()), spec, ["s1", "s2"])
    tied = top_kernels(runs(), spec, ["s3"])   # two kernels share the largest weight: both named
    assert tied == {"MK": "a = b in 1 of 1 runs"}
    cell = tidy.set_index(["dataset", "column", "metric"])["value"]
    assert cell[("s1", "MK", "tiny_cluster")] == 1.0 and cell[("s2", "MK", "tiny_cluster")] == 0.5
    assert cell[("s2", "MK", "effective_kernels")] == pytest.approx(8 / 3)
    row = tidy[(tidy["column"] == "SK") & (tidy["metric"] == "top_weight")].iloc[0]
    assert _cell(row) == "–"   # undefined for a single kernel: no "nan" in the table
    lines = shape_lines(tidy, top_kernels(runs(), spec, ["s1", "s2"]), list(spec["columns"]))
    assert lines[0] == "SK: a cluster of at most 2 points in 0 of 4 runs (on 0 of 2 sets)."
    assert lines[1] == ("MK: a cluster of at most 2 points in 3 of 4 runs (on 2 of 2 sets); median top kernel weight "
                        "0.75 (range 0.50-1.00); median effective kernels 1.83 (range 1.00-2.67); "
                        "largest weight on c in 4 of 4 runs.")
