"""A run's tables against a reference run of the same configuration (an archive of this project's own
run, :mod:`mkclust.repro.archive`): each cell beside the reference's value, and whether it is identical,
within its seed noise or different."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd


#: the columns :func:`compare_with_reference` adds
REFERENCE_COLUMNS = ["reference", "reference_diff", "reference_limit", "reference_state"]


#: a cell compared with a reference run (:func:`compare_with_reference`): state -> (plain, TeX) mark
REFERENCE_MARKS = {"identical": ("=", "$=$"), "within noise": ("≈", r"$\approx$"), "differs": ("≠", r"$\neq$")}


#: two values closer than this are the same number (a float written to CSV and read back is exact)
EXACT = 1e-9


def noise_limit(se: float, se_other: float) -> float:
    """Two standard errors of the difference of two independent means, 2 sqrt(se^2 + se_other^2);
    0 when either has no seed noise (NaN or 0: one run, or the best objective's run)."""
    if not all(math.isfinite(x) and x > 0 for x in (se, se_other)):
        return 0.0
    return 2 * math.sqrt(se ** 2 + se_other ** 2)


def compare_with_reference(tidy: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """``tidy`` with the same cells of a reference run's table (built by :func:`build_table` from the
    reference run's results with the same spec) beside its own: ``reference`` (its value),
    ``reference_diff`` (ours minus it), ``reference_limit`` and ``reference_state``:

    - ``identical``: both values within :data:`EXACT` (or both N/A);
    - ``within noise``: a difference no larger than ``reference_limit``, two standard errors of the
      difference of two independent means, 2 sqrt(se^2 + se_ref^2) (each ``se`` from
      :func:`reduce_runs`); a cell without seed noise (one run, the best objective's run) has limit 0,
      so it must be identical;
    - ``differs``: anything else, including a value on one side only;
    - empty: the reference run has no such cell (a run group it does not hold).
    """
    out = tidy.copy()
    ref = reference.set_index(["dataset", "column", "metric"])
    vals, diffs, limits, states = [], [], [], []
    for r in out.itertuples(index=False):
        key = (r.dataset, r.column, r.metric)
        if key not in ref.index:
            vals.append(math.nan), diffs.append(math.nan), limits.append(math.nan), states.append("")
            continue
        q = ref.loc[key]
        v, w = float(r.value), float(q["value"])
        limit = noise_limit(float(r.se), float(q["se"]))
        d = v - w
        if math.isnan(v) and math.isnan(w):
            state = "identical"
        elif math.isnan(d):
            state = "differs"
        elif abs(d) <= EXACT:
            state = "identical"
        else:
            state = "within noise" if abs(d) <= limit else "differs"
        vals.append(w), diffs.append(d), limits.append(limit), states.append(state)
    out["reference"], out["reference_diff"] = vals, diffs
    out["reference_limit"], out["reference_state"] = limits, states
    return out


def reference_counts(tables: dict) -> dict:
    """Over a run's tables (name -> tidy), the cells compared with the reference run: ``compared``,
    one count per state of :data:`REFERENCE_MARKS`, and ``differing``: 'table dataset column
    metric: ours vs reference (diff; limit)' of each cell that differs."""
    counts = {"compared": 0, **{s: 0 for s in REFERENCE_MARKS}, "differing": []}
    for name, t in tables.items():
        if "reference_state" not in t.columns:
            continue
        st = t["reference_state"].fillna("").astype(str)
        counts["compared"] += int((st != "").sum())
        for s in REFERENCE_MARKS:
            counts[s] += int((st == s).sum())
        for r in t[st == "differs"].itertuples(index=False):
            counts["differing"].append(f"{name} {r.dataset} {r.column} {r.metric}: {r.value:.4f} vs {r.reference:.4f} "
                                       f"({r.reference_diff:+.4f}; noise limit {r.reference_limit:.4f})")
    return counts


def reference_packages(archive: str | Path, ours: dict | None = None) -> str:
    """The packages a fit depends on (:data:`mkclust.repro.provenance.RECORD_PACKAGES` and Python) whose
    versions in this environment (``ours``: :func:`mkclust.repro.provenance.versions` and the Python
    version) are none of those the reference run's pieces were computed with, as
    "numpy 1.26.4 (reference 2.4.6), ..."; "" where every one matches (or the archive has no pieces).
    Read from the pieces' manifests without checking their files (:func:`mkclust.repro.archive.pieces`
    does that where results are read)."""
    import json
    import platform

    from mkclust.repro.archive import MANIFEST
    from mkclust.repro.provenance import RECORD_PACKAGES, differences_text, versions

    theirs: dict[str, set] = {}
    for m in sorted(Path(archive).glob(f"*/{MANIFEST}")):
        man = json.loads(m.read_text())
        for k, v in {**man.get("versions", {}), "python": man.get("python")}.items():
            if v is not None:
                theirs.setdefault(k, set()).add(str(v))
    ours = ours if ours is not None else {**versions(), "python": platform.python_version()}
    fits = (set(RECORD_PACKAGES) - {"mkclust"}) | {"python"}   # what a fit's result can depend on
    diff = {k: (str(ours[k]), " or ".join(sorted(theirs[k]))) for k in sorted(set(ours) & set(theirs) & fits)
            if ours[k] is not None and str(ours[k]) not in theirs[k]}
    return differences_text(diff, "reference")


def reference_line(counts: dict, archive: str = "") -> str:
    """One sentence: how many cells of the run differ from the reference run beyond their noise; where
    ``counts`` has ``packages`` (:func:`reference_packages`), a second one naming them."""
    where = f" ({archive})" if archive else ""
    packages = (f" This run's packages differ from the reference run's: {counts['packages']}; a cell can move "
                "with them where a method leaves a choice to rounding (docs/running.md, 'Reruns across package "
                "versions'), and the cells that differ are named above." if counts.get("packages") else "")
    if not counts["compared"]:
        return f"Reference run{where}: no cell of this run is in it." + packages
    return (f"Against the reference run{where}: {counts['differs']} of {counts['compared']} cells differ by more than "
            f"their seed noise ({counts['identical']} identical, {counts['within noise']} within two standard errors"
            " of the difference; a cell without seed noise must be identical)"
            + (": " + "; ".join(counts["differing"][:30]) + (" ..." if len(counts["differing"]) > 30 else "") + "."
               if counts["differing"] else ".") + packages)
