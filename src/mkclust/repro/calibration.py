"""The cost estimate calibrated on the reference run's own measured CPU seconds.

The estimators' cost models (``cost`` and ``fit_seconds`` of each class: n, classes, restarts, the
bank's Nystroem rank, lockstep batches; :func:`mkclust.repro.resources.group_seconds`) were calibrated
on the default run's small sets. The archive holds every reference-run fit's CPU seconds, so each
piece added to it is more calibration data. From it:

- per method (experiment, algorithm): measured seconds per run = c0 + a u^b, where u is the class
  model's typical seconds per run of the same group (so the shape in n, classes and grid is the
  class's, and c0, a, b correct its scale, its slope and the fixed per-fit costs it leaves out:
  Python, solver calls, solver start-up on small sets); b in [0.3, 2]; with fewer than three data
  sets only a (b = 1, c0 = 0). Outside the range of u the archive measured, the curve is continued
  in proportion to u (the class model's shape, not the fitted slope: LG-MMC's curve, fitted on
  sets of n <= 270 with b = 2, would otherwise put splice, n = 3,175, at hundreds of hours);
- per data set of an experiment, one factor shared by its methods (how much longer than its size
  says the fits on it run: iterations to convergence), shrunk toward 1 by one pseudo-observation
  (log factor = the sum of the methods' log residuals over their count plus one);

fitted together by alternating least squares on log seconds (a factor of 2 either way weighs the
same). A group of a method the archive has not seen keeps the class model's typical time; a data
set the archive has not seen gets factor 1. ``mkclust estimate CONFIG --archive results/paper`` uses
it, and ``--calibration`` prints the measured/estimated ratio of every archived (method, data set).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from mkclust.repro import resources as RES
from mkclust.repro.run_spec import NO_BANK

#: the exponent's range, and the sweeps of the alternating fit
B_RANGE = (0.3, 2.0)
SWEEPS = 30
#: the least CPU seconds per run the fit reads (a recorded 0 would have no logarithm)
MIN_SECONDS = 1e-4
_COLUMNS = ["experiment", "algorithm", "dataset", "bank", "param_id", "seed", "n", "n_clusters", "cpu_seconds",
            "status"]


@dataclass
class Calibration:
    """Per method (experiment, algorithm) the curve (c0, a, b), the range of u it was fitted on, and
    per (experiment, data set) the log factor; :meth:`group_seconds` applies them."""

    curves: dict = field(default_factory=dict)
    factors: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)

    def per_run(self, experiment: str, algorithm: str, dataset: str, typical: float) -> float | None:
        """Calibrated seconds of one run whose class model says ``typical``; None for a method the
        archive has not seen."""
        curve = self.curves.get((experiment, algorithm))
        if curve is None:
            return None
        c0, a, b = curve
        lo, hi = self.ranges.get((experiment, algorithm), (typical, typical))
        u = min(max(typical, lo), hi)
        return float((c0 + a * u ** b) * (typical / u) * np.exp(self.factors.get((experiment, dataset), 0.0)))

    def group_seconds(self, group: tuple, runs, typical_seconds: float) -> float:
        """A run group's calibrated seconds from its class-model ``typical_seconds`` (0 stays 0: a
        group the class declines)."""
        if typical_seconds <= 0 or not runs:
            return typical_seconds
        per = self.per_run(group[0], group[1], group[2], typical_seconds / len(runs))
        return typical_seconds if per is None else per * len(runs)


def measured_groups(frames, plan) -> pd.DataFrame:
    """One row per archived planned group with finished runs: experiment, algorithm, dataset, the
    measured CPU seconds per finished run (``t``) and the class model's typical seconds per run
    (``u``). ``frames``: the archive's tables (columns of the results table)."""
    groups = plan.run_groups()
    owner = {(r.experiment, r.algorithm, r.dataset, r.bank, r.param_id, r.seed): g for g, rs in groups.items()
             for r in rs}
    if not frames:   # an archive without pieces yet: nothing measured, the class models stand
        return pd.DataFrame(columns=["experiment", "algorithm", "dataset", "t", "u"])
    df = pd.concat([f[[c for c in _COLUMNS if c in f.columns]] for f in frames], ignore_index=True)
    df = df[df["status"] == "ok"]
    keys = df[_COLUMNS[:6]].itertuples(index=False, name=None)
    df = df.assign(group=[owner.get(tuple(k)) for k in keys]).dropna(subset=["group"])
    rows = []
    for g, s in df.groupby("group", sort=True):
        n, c = int(s["n"].iloc[0]), int(s["n_clusters"].iloc[0])
        rank = None if g[3] == NO_BANK else RES.bank_rank(n, plan.inputs.bank_landmarks(g[3]))
        runs = groups[g]
        typical = RES.group_seconds(runs, n, typical=True, n_classes=c, input_rank=rank)
        if typical > 0:
            rows.append((g[0], g[1], g[2], float(s["cpu_seconds"].sum()), len(s), typical, len(runs)))
    t = pd.DataFrame(rows, columns=["experiment", "algorithm", "dataset", "cpu", "runs", "typical", "planned"])
    t = t.groupby(["experiment", "algorithm", "dataset"], as_index=False).sum()
    # a fit below the clock's resolution records 0 s: floored at MIN_SECONDS, so its log is finite
    return t.assign(t=np.maximum(t["cpu"] / t["runs"], MIN_SECONDS), u=t["typical"] / t["planned"])


def _curve(u: np.ndarray, t: np.ndarray, start=None) -> tuple[float, float, float]:
    """(c0, a, b) of t = c0 + a u^b by least squares on log t; a alone with fewer than 3 points."""
    if len(u) < 3:
        return 0.0, float(np.exp(np.mean(np.log(t / u)))), 1.0

    def residual(q):
        return np.log(np.exp(q[0]) + np.exp(q[1]) * u ** q[2]) - np.log(t)
    q0 = start if start is not None else [np.log(t.min() / 4), 0.0, 1.0]
    q = least_squares(residual, q0, bounds=([-30.0, -30.0, B_RANGE[0]], [10.0, 10.0, B_RANGE[1]])).x
    return float(np.exp(q[0])), float(np.exp(q[1])), float(q[2])


def fit(table: pd.DataFrame) -> Calibration:
    """The calibration of :func:`measured_groups`' table (columns experiment, algorithm, dataset,
    t, u), by :data:`SWEEPS` alternating sweeps: each method's curve on its times less the data
    sets' factors, then each data set's factor from the methods' log residuals."""
    method = list(zip(table["experiment"], table["algorithm"]))
    place = list(zip(table["experiment"], table["dataset"]))
    u, t = table["u"].to_numpy(float), table["t"].to_numpy(float)
    cal = Calibration()
    log_factor = np.zeros(len(table))
    for _ in range(SWEEPS):
        pred = np.empty(len(table))
        for key in dict.fromkeys(method):
            rows = np.array([m == key for m in method])
            c0, a, b = _curve(u[rows], t[rows] * np.exp(-log_factor[rows]))
            cal.curves[key] = (c0, a, b)
            cal.ranges[key] = (float(u[rows].min()), float(u[rows].max()))
            pred[rows] = c0 + a * u[rows] ** b
        resid = pd.Series(np.log(t) - np.log(pred)).groupby(pd.Series(place)).agg(["sum", "count"])
        cal.factors = {k: float(v["sum"] / (v["count"] + 1)) for k, v in resid.iterrows()}
        log_factor = np.array([cal.factors[p] for p in place])
    return cal


def ratios(cal: Calibration, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the calibrated estimate per run (``estimate``) and measured / estimated
    (``ratio``; the class model's alone: ``ratio_uncalibrated``)."""
    est = [cal.per_run(e, a, d, u) for e, a, d, u in
           zip(table["experiment"], table["algorithm"], table["dataset"], table["u"])]
    out = table.assign(estimate=est)
    return out.assign(ratio=out["t"] / out["estimate"], ratio_uncalibrated=out["t"] / out["u"])


def from_archive(archive, plan) -> tuple[Calibration, pd.DataFrame]:
    """(the calibration, :func:`ratios` of every archived (method, data set)) of an archive's pieces."""
    from mkclust.repro.archive import pieces, read_csv_exact
    from pathlib import Path

    frames = [read_csv_exact(f) for man in pieces(archive) for f in sorted(Path(man["folder"]).glob("*.csv.gz"))]
    table = measured_groups(frames, plan)
    cal = fit(table)
    return cal, ratios(cal, table)


def format_ratios(table: pd.DataFrame) -> str:
    """Per method: data sets, the measured / estimated range calibrated and not, and the data sets
    outside a factor 2 (measured / calibrated estimate)."""
    lines = [f"{'experiment':22s} {'algorithm':16s} {'sets':>4s} {'calibrated':>12s} {'class model':>12s}  outside 2x"]
    for (e, a), s in table.groupby(["experiment", "algorithm"], sort=True):
        off = s[(s["ratio"] < 0.5) | (s["ratio"] > 2)]
        lines.append(f"{e:22s} {a:16s} {len(s):4d} {s['ratio'].min():5.2f}-{s['ratio'].max():<6.2f} "
                     f"{s['ratio_uncalibrated'].min():5.2f}-{s['ratio_uncalibrated'].max():<6.2f}  "
                     + ", ".join(f"{d} {r:.2f}" for d, r in zip(off["dataset"], off["ratio"])))
    inside = ((table["ratio"] >= 0.5) & (table["ratio"] <= 2)).sum()
    lines.append(f"within 2x: {inside} of {len(table)} (method, data set) (class model alone: "
                 f"{((table['ratio_uncalibrated'] >= 0.5) & (table['ratio_uncalibrated'] <= 2)).sum()})")
    return "\n".join(lines)
