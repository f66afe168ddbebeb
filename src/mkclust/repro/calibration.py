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
same); then

- per (method, data set), the factor left over (log measured / estimated after the two above),
  shrunk toward 1 by one pseudo-observation against its archived groups (G groups: G / (G + 1) of
  it): the iterative max-margin methods' cost follows neither n nor the data set alone (CPMMC
  measured 0.35x the estimate on credit-a, n = 690, and 3.98x on diabetes, n = 768, at one grid),
  so the kernels of a pair not yet archived are priced from those that are.

A group of a method the archive has not seen keeps the class model's typical time; a data set the
archive has not seen gets factor 1. ``mkclust estimate CONFIG --archive results/paper`` uses it,
``--calibration`` prints the measured/estimated ratio of every archived (method, data set) with its
own factor and as if it were not archived yet, and ``--backtest`` prices each piece from the pieces
archived before it (:func:`backtest`): how well the estimate predicts, not how well it fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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
    #: per (experiment, algorithm, dataset) the shrunk log factor left over by curve and data set
    pairs: dict = field(default_factory=dict)

    def per_run(self, experiment: str, algorithm: str, dataset: str, typical: float,
                own: bool = True) -> float | None:
        """Calibrated seconds of one run whose class model says ``typical``; None for a method the
        archive has not seen. ``own=False`` leaves out the (method, data set) pair's own factor: the
        price of a pair the archive has not seen yet."""
        curve = self.curves.get((experiment, algorithm))
        if curve is None:
            return None
        c0, a, b = curve
        lo, hi = self.ranges.get((experiment, algorithm), (typical, typical))
        u = min(max(typical, lo), hi)
        log_factor = self.factors.get((experiment, dataset), 0.0)
        if own:
            log_factor += self.pairs.get((experiment, algorithm, dataset), 0.0)
        return float((c0 + a * u ** b) * (typical / u) * np.exp(log_factor))

    def group_seconds(self, group: tuple, runs, typical_seconds: float) -> float:
        """A run group's calibrated seconds from its class-model ``typical_seconds`` (0 stays 0: a
        group the class declines)."""
        if typical_seconds <= 0 or not runs:
            return typical_seconds
        per = self.per_run(group[0], group[1], group[2], typical_seconds / len(runs))
        return typical_seconds if per is None else per * len(runs)


def group_rows(frames, plan) -> pd.DataFrame:
    """One row per archived planned group with finished runs: experiment, algorithm, dataset, the
    group, its finished runs' CPU seconds (``cpu``) and count (``runs``), the class model's typical
    seconds of the whole group (``typical``) and its planned runs (``planned``). ``frames``: the
    archive's tables (columns of the results table)."""
    columns = ["experiment", "algorithm", "dataset", "group", "cpu", "runs", "typical", "planned"]
    if not frames:   # an archive without pieces yet: nothing measured, the class models stand
        return pd.DataFrame(columns=columns)
    groups = plan.run_groups()
    owner = _owners(groups)
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
            rows.append((g[0], g[1], g[2], g, float(s["cpu_seconds"].sum()), len(s), typical, len(runs)))
    return pd.DataFrame(rows, columns=columns)


def _owners(groups: dict) -> dict[tuple, tuple]:
    """A run's results-row key (:func:`mkclust.repro.archive.run_key`) -> its run group."""
    from mkclust.repro.archive import run_key

    return {run_key(r): g for g, rs in groups.items() for r in rs}


def measured_groups(frames, plan) -> pd.DataFrame:
    """One row per archived (experiment, algorithm, dataset) of :func:`group_rows`: the measured CPU
    seconds per finished run (``t``), the class model's typical seconds per run (``u``) and the
    count of its groups (``groups``)."""
    t = group_rows(frames, plan).drop(columns="group").assign(groups=1)
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
    left = np.log(t) - np.log(pred) - log_factor
    groups = table["groups"].to_numpy(float) if "groups" in table else np.ones(len(table))
    cal.pairs = {(e, a, d): float(g * r / (g + 1)) for (e, a), (_, d), r, g in zip(method, place, left, groups)}
    return cal


def ratios(cal: Calibration, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the calibrated estimate per run (``estimate``) and measured / estimated
    (``ratio``; the class model's alone: ``ratio_uncalibrated``)."""
    keys = list(zip(table["experiment"], table["algorithm"], table["dataset"], table["u"]))
    out = table.assign(estimate=[cal.per_run(*k) for k in keys], unseen=[cal.per_run(*k, own=False) for k in keys])
    return out.assign(ratio=out["t"] / out["estimate"], ratio_unseen=out["t"] / out["unseen"],
                      ratio_uncalibrated=out["t"] / out["u"])


def _piece_frames(archive) -> list[tuple[str, list[pd.DataFrame]]]:
    """(piece name, its tables) of every piece of an archive, in name order (the order they were
    archived in: names begin with the date)."""
    from mkclust.repro.archive import pieces, read_csv_exact

    return [(man["piece"], [read_csv_exact(f) for f in sorted(Path(man["folder"]).glob("*.csv.gz"))])
            for man in pieces(archive)]


def from_archive(archive, plan) -> tuple[Calibration, pd.DataFrame]:
    """(the calibration, :func:`ratios` of every archived (method, data set)) of an archive's pieces."""
    table = measured_groups([f for _, frames in _piece_frames(archive) for f in frames], plan)
    cal = fit(table)
    return cal, ratios(cal, table)


def backtest(archive, plan, progress=None) -> pd.DataFrame:
    """Each piece's groups priced by the calibration of the pieces archived before it (the first piece
    by the class models alone), beside their measured CPU seconds: one row per group with piece,
    experiment, algorithm, dataset, ``measured`` (CPU seconds per finished run times the planned
    runs), ``estimate`` (calibrated) and ``class_model``. ``progress(piece)`` is called per piece."""
    rows, before, groups = [], [], plan.run_groups()
    for name, frames in _piece_frames(archive):
        if progress:
            progress(name)
        cal = fit(measured_groups(before, plan)) if before else Calibration()
        for r in group_rows(frames, plan).itertuples(index=False):
            measured = max(r.cpu / r.runs, MIN_SECONDS) * r.planned
            rows.append((name, r.experiment, r.algorithm, r.dataset, measured,
                         cal.group_seconds(r.group, groups[r.group], r.typical), r.typical))
        before += frames
    table = pd.DataFrame(rows, columns=["piece", "experiment", "algorithm", "dataset", "measured", "estimate",
                                        "class_model"])
    if table["piece"].nunique() < 2:
        raise ValueError(f"{archive} holds {table['piece'].nunique()} piece(s) of this configuration's groups: "
                         "a backtest prices a piece from the pieces before it, so it needs two")
    return table


def measured(archive, plan) -> pd.DataFrame:
    """What the archive measured of the configuration, per experiment, then per paper, then in total
    (``kind``): the planned run groups, those archived, those marked stale, the archived runs' fit
    CPU hours (every archived planned run, finished or not) and ``complete`` (every group archived,
    none stale: the hours are then the configuration's measured cost at the pieces' commits)."""
    from mkclust.repro.archive import group_name, holdings

    groups = plan.run_groups()
    held, stale = holdings(archive)
    owner = _owners(groups)
    cpu: dict[str, float] = {}
    for _, frames in _piece_frames(archive):
        for f in frames:
            for key, sec in zip(f[_COLUMNS[:6]].itertuples(index=False, name=None),
                                pd.to_numeric(f["cpu_seconds"], errors="coerce").fillna(0.0)):
                g = owner.get(tuple(key))
                if g is not None:
                    cpu[g[0]] = cpu.get(g[0], 0.0) + float(sec)
    rows = []
    for exp in plan.config.get("experiments", {}):
        mine = [group_name(g) for g in groups if g[0] == exp]
        rows.append(("experiment", exp, plan.config["experiments"][exp]["paper"], len(mine),
                     sum(n in held for n in mine), sum(n in stale for n in mine), cpu.get(exp, 0.0) / 3600))
    df = pd.DataFrame(rows, columns=["kind", "name", "paper", "groups", "archived", "stale", "fit_cpu_h"])
    papers = df.groupby("paper", sort=False)[["groups", "archived", "stale", "fit_cpu_h"]].sum().reset_index()
    papers = papers.assign(kind="paper", name=papers["paper"])
    total = df[["groups", "archived", "stale", "fit_cpu_h"]].sum().to_frame().T.assign(kind="total", name="total")
    out = pd.concat([df, papers, total], ignore_index=True)
    return out.assign(complete=(out["archived"] == out["groups"]) & (out["stale"] == 0))


def format_measured(table: pd.DataFrame) -> str:
    """:func:`measured` as text: the experiments, then (after a blank line) the papers and the total."""
    lines, kind = [f"{'':26s} {'groups':>7s} {'archived':>9s} {'stale':>6s} {'fit CPU h measured':>19s}"], "experiment"
    for r in table.itertuples(index=False):
        if r.kind != kind and kind == "experiment":
            lines.append("")
        kind = r.kind
        lines.append(f"{r.name:26s} {int(r.groups):7d} {int(r.archived):9d} {int(r.stale):6d} {r.fit_cpu_h:19.2f}"
                     + ("  complete" if r.complete else ""))
    return "\n".join(lines)


def _within(ratio: pd.Series) -> int:
    return int(ratio.between(0.5, 2.0).sum())


def format_backtest(table: pd.DataFrame) -> str:
    """Per piece: its groups, measured and estimated CPU hours (from the pieces before it; the class
    models alone), their ratio and the groups within a factor 2; then the totals."""
    lines = [f"{'piece':28s} {'groups':>6s} {'measured h':>10s} {'estimate h':>10s} {'ratio':>6s} "
             f"{'class h':>8s} {'ratio':>6s}  groups within 2x (class model)"]

    def line(name, s):
        m, e, c = s["measured"].sum(), s["estimate"].sum(), s["class_model"].sum()
        return (f"{name:28s} {len(s):6d} {m / 3600:10.3f} {e / 3600:10.3f} {m / e:6.2f} {c / 3600:8.3f} "
                f"{m / c:6.2f}  {_within(s['measured'] / s['estimate'])} ({_within(s['measured'] / s['class_model'])})")
    for name, s in table.groupby("piece", sort=True):
        lines.append(line(name, s))
    later = table[table["piece"] != table["piece"].min()]
    lines.append(line("all but the first piece", later))
    per = later.groupby("piece")[["measured", "estimate", "class_model"]].sum()
    lines.append(f"pieces within 2x: {_within(per['measured'] / per['estimate'])} of {len(per)} (each priced from "
                 f"the pieces before it; class models alone: {_within(per['measured'] / per['class_model'])})")
    return "\n".join(lines)


def format_ratios(table: pd.DataFrame) -> str:
    """Per method: data sets, measured / estimated with the pair's own factor (in sample), as if the
    pair were not archived yet, and by the class model alone; the data sets outside a factor 2 as
    if not archived yet."""
    lines = [f"{'experiment':22s} {'algorithm':16s} {'sets':>4s} {'calibrated':>12s} {'as unseen':>12s} "
             f"{'class model':>12s}  outside 2x as unseen"]
    for (e, a), s in table.groupby(["experiment", "algorithm"], sort=True):
        off = s[~s["ratio_unseen"].between(0.5, 2.0)]
        lines.append(f"{e:22s} {a:16s} {len(s):4d} " + " ".join(
            f"{s[c].min():5.2f}-{s[c].max():<6.2f}" for c in ("ratio", "ratio_unseen", "ratio_uncalibrated"))
            + "  " + ", ".join(f"{d} {r:.2f}" for d, r in zip(off["dataset"], off["ratio_unseen"])))
    lines.append(f"within 2x: {_within(table['ratio'])} of {len(table)} (method, data set) with their own "
                 f"factor; {_within(table['ratio_unseen'])} as if not archived yet; class model alone: "
                 f"{_within(table['ratio_uncalibrated'])}")
    return "\n".join(lines)
