"""Figures from a results table. Each kind is one function ``(results, spec) -> Figure``:

- ``bars``: one group of bars per dataset, one bar per table column (reduced by the same selection
  rules as tables), the published value as a black mark; ``metric`` may be any numeric column
  (e.g. ``diag.seconds_per_iteration``), ``logy: true`` for a log axis, ``ylabel`` to name it.
- ``sweep``: a metric against one parameter of one algorithm (mean over seeds, std as error bars),
  one line per dataset; ``x: kernel`` uses the kernel names of the bank as tick labels. With
  ``levels`` (table columns), one panel per dataset with those columns' values as dashed lines; with
  ``reference`` {paper, table}, the published values of the same columns as dotted lines, and
  ``published`` {column, x} draws the swept method's published value as a star at the x the paper
  used (RMKKM's Figure 1: RMKKM at gamma 0.3).
- ``timing``: fit time (``fit_seconds`` or ``cpu_seconds``, or any numeric column such as a
  ``diag.*`` diagnostic) against ``n`` or a parameter, median over repeats with min-max bars, one
  line per algorithm (``time: {label: column}``: one line per algorithm and column); ``loglog:
  true`` also fits the slope of log time against log x and writes it in the legend; ``totals:
  {label: algorithm}`` sums an algorithm's parameter sets per run (e.g. the total time of MMC on
  K1, K2 and K3). Runs that did not finish (a declined set) are left out; past ten lines, each round
  of ten colours has its own marker and dash, and the legend stands beside the axes; ``panels: true``
  draws small multiples instead, a panel per algorithm with the others in grey.
- ``heatmap``: a metric (or a row of panels per entry of ``metrics``) over a grid of two parameters
  of one algorithm, one panel per dataset (``datasets`` picks them).
- ``weights``: learned kernel weights per kernel (view), one bar per configured column, one panel
  per dataset.
- ``ranks``: the critical-difference diagram of a table's columns over its data sets on one
  ``metric`` (:mod:`mkclust.repro.reporting.ranks`): average ranks, Friedman's test, Nemenyi's
  critical difference at ``alpha`` (0.05).
- ``rank_cost`` and ``ranks_by``: average rank against median CPU seconds per fit, and average ranks
  by group of data sets (:mod:`mkclust.repro.reporting.rank_figures`).

``sweep`` and ``heatmap`` take an optional ``where`` filter on parameters; parameter values that are
not finite (GUMKL's p = inf) are placed at equally spaced positions with their values as labels.
"""

from __future__ import annotations

import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402,F401  (the NullFormatter of log-log timing figures)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mkclust._io import atomic_path  # noqa: E402
from mkclust.repro.configuration import as_list  # noqa: E402
from mkclust.repro.reference import load_reference  # noqa: E402
from mkclust.repro.reporting._titles import TITLE_FONTSIZE, title as _title  # noqa: E402
from mkclust.repro.reporting.rank_figures import rank_cost, ranked, ranks_by  # noqa: E402
from mkclust.repro.reporting.ranks import RankTest  # noqa: E402
from mkclust.repro.reporting.tables import _where, build_table, finished_runs, xcol  # noqa: E402
from mkclust.repro.reporting.verdicts import fitted_slope  # noqa: E402


PANELS_PER_ROW = 5  # sweep figures wrap their per-data-set panels into rows of at most this many
MAX_COLOURS = 10    # matplotlib's default colour cycle (C0-C9)


def bars(results: pd.DataFrame, spec: dict) -> plt.Figure:
    metric = spec.get("metric", "acc")
    tidy = build_table(results, {**spec, "metrics": [metric]}, spec.get("datasets"))
    datasets = list(dict.fromkeys(tidy["dataset"]))
    cols = list(dict.fromkeys(tidy["column"]))
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(datasets) * max(1, len(cols)) / 3), 3.6))
    w = 0.8 / max(len(cols), 1)
    for j, c in enumerate(cols):
        t = tidy[tidy["column"] == c].set_index("dataset").reindex(datasets)
        xs = np.arange(len(datasets)) + (j - (len(cols) - 1) / 2) * w
        label = c + (" †" if t["oracle"].fillna(False).astype(bool).any() else "")
        err = t["std"].fillna(0)
        if spec.get("logy"):  # asymmetric bars that stay above zero on a log axis
            err = np.vstack([np.minimum(err, 0.9 * t["value"]), err])
        ax.bar(xs, t["value"], w, yerr=err, capsize=2, label=label)
        pub = t["published"]
        if pub.notna().any():
            ax.plot(xs, pub, "k_", markersize=12, mew=2, label="published" if j == 0 else None)
    ax.set_xticks(np.arange(len(datasets)), datasets, rotation=20)
    ax.set_ylabel(spec.get("ylabel", metric))
    if spec.get("logy"):
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, 1.05)
    # below the axes, clear of the bars (inside, "best" still covered some)
    ax.legend(fontsize=7, ncol=min(len(cols) + 1, 6), loc="upper center", bbox_to_anchor=(0.5, -0.22),
              frameon=False)
    _title(fig, spec.get("title", ""), ax)
    fig.tight_layout()
    return fig


def sweep(results: pd.DataFrame, spec: dict) -> plt.Figure:
    if spec.get("levels"):
        return _sweep_panels(results, spec)
    metric, x = spec.get("metric", "acc"), spec["x"]
    df = _selected(results, spec)
    xc = xcol(df, x)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ticks, labels = None, None
    for ds, g in df.groupby("dataset", sort=False):
        xs, labels, mean, std = _curve(g, xc, metric)
        if x == "kernel":
            ticks = g.drop_duplicates(xc).set_index(xc)["kernel_name"].sort_index()
        ax.errorbar(xs, mean, yerr=std, marker="o", capsize=2, label=ds)
        if labels is not None:
            ax.set_xticks(xs, labels)
    if ticks is not None:
        ax.set_xticks(ticks.index.to_numpy(), [str(t)[:22] for t in ticks], rotation=30, ha="right", fontsize=7)
    elif spec.get("logx") and labels is None:
        ax.set_xscale("log")
    ax.set_xlabel(spec.get("xlabel", x))
    ax.set_ylabel(metric)
    ax.legend(fontsize=7)
    _title(fig, spec.get("title", ""), ax)
    fig.tight_layout()
    return fig


def _selected(results: pd.DataFrame, spec: dict) -> pd.DataFrame:
    df = results[results["algorithm"].isin(as_list(spec["algorithm"]))] if "algorithm" in spec else results
    return _where(df, spec.get("where") or {})


def _curve(g: pd.DataFrame, xc: str, metric: str):
    """Mean and std of ``metric`` per x value (sorted) and their plot positions and tick labels."""
    s = g.groupby(xc)[metric].agg(["mean", "std"]).sort_index()
    xs, labels = _positions(s.index.to_numpy(dtype=float))
    return xs, labels, s["mean"], s["std"].fillna(0)


def _positions(values: np.ndarray) -> tuple[np.ndarray, list[str] | None]:
    """x positions of sorted parameter values: the values themselves, or 0..k-1 with labels when
    some are not finite (e.g. GUMKL's p = inf)."""
    vals = np.asarray(values, dtype=float)
    if np.isfinite(vals).all():
        return vals, None
    return np.arange(vals.size, dtype=float), [f"{v:g}" for v in vals]


def _sweep_panels(results: pd.DataFrame, spec: dict) -> plt.Figure:
    """One panel per dataset: the swept metric (mean over seeds, std bars) and, as horizontal
    dashed lines, the ``levels`` (table columns reduced by the table rules, e.g. KKM-a, KKM-ew)."""
    metric, x = spec.get("metric", "acc"), spec["x"]
    df = _selected(results, spec)
    xc = xcol(df, x)
    datasets = list(dict.fromkeys(df["dataset"]))
    levels = build_table(results, {"metrics": [metric], "columns": spec["levels"],
                                   "reference": spec.get("reference")}, datasets)
    star = spec.get("published") or {}   # the swept method's published value, at the x the paper used
    if star and spec.get("reference"):
        r = spec["reference"]
        ref = load_reference(r["paper"], r["table"])
        star_values = ref[(ref["column"] == star["column"]) & (ref["metric"] == metric)].set_index("dataset")["value"]
    else:
        star_values = pd.Series(dtype=float)
    ncols = min(len(datasets), PANELS_PER_ROW)
    nrows = -(-len(datasets) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 3.2 * nrows + 0.3), squeeze=False)
    for ax in axes.flat[len(datasets):]:
        ax.set_axis_off()
    for ax, ds in zip(axes.flat, datasets):
        xs, ticks, mean, std = _curve(df[df["dataset"] == ds], xc, metric)
        ax.errorbar(xs, mean, yerr=std, marker="o", capsize=2, label=spec.get("algorithm", metric))
        if ticks is not None:
            ax.set_xticks(xs, ticks)
        for k, (_, lv) in enumerate(levels[levels["dataset"] == ds].iterrows()):
            ax.axhline(lv["value"], ls="--", color=f"C{k + 1}", label=lv["column"])
            if not math.isnan(lv["published"]):   # the paper's printed value of the same column
                ax.axhline(lv["published"], ls=":", lw=1.5, color=f"C{k + 1}", label=f"{lv['column']} published")
        if ds in star_values.index:
            ax.plot([float(star["x"])], [star_values[ds]], "k*", markersize=10,
                    label=f"{star['column']} published ({spec['x']} = {star['x']:g})")
        ax.set_xlabel(spec.get("xlabel", x))
        ax.set_ylabel(metric)
        ax.set_title(ds, fontsize=TITLE_FONTSIZE)
        ax.legend(fontsize=7)
    _title(fig, spec.get("title", ""))
    fig.tight_layout()
    return fig


def _with_totals(results: pd.DataFrame, xc: str, y: str, totals: dict) -> pd.DataFrame:
    """Replace each algorithm named in ``totals`` ({label: algorithm}) by one pseudo-algorithm whose
    value per (dataset, x, seed) is the sum over its parameter sets (e.g. MMC on K1 + K2 + K3)."""
    out = results[~results["algorithm"].isin(list(totals.values()))]
    for label, alg in totals.items():
        g = results[results["algorithm"] == alg]
        summed = g.groupby(["dataset", xc, "seed"], as_index=False)[y].sum()
        summed["algorithm"] = label
        out = pd.concat([out, summed], ignore_index=True)
    return out


def timing(results: pd.DataFrame, spec: dict) -> plt.Figure:
    if spec.get("panels"):
        return _timing_panels(results, spec)
    x, time = spec.get("x", "n"), spec.get("time", "cpu_seconds")
    # one column, or {label: column}: several lines per algorithm (e.g. CPU time with and without
    # the kernel PCA), each with its own slope
    series = time if isinstance(time, dict) else {None: time}
    results = finished_runs(_selected(results, spec))     # a declined run's seconds are not a fit's
    xc = xcol(results, x)
    lines = len(series) * results["algorithm"].nunique()
    fig, ax = plt.subplots(figsize=(5.5 + (2.0 if lines > MAX_COLOURS else 0.0), 3.6))
    for name, y in series.items():
        res = _with_totals(results, xc, y, spec["totals"]) if spec.get("totals") else results
        for alg, g in res.groupby("algorithm", sort=False):
            s = g.groupby(xc)[y].agg(["median", "min", "max"]).sort_index()
            xs = s.index.to_numpy(dtype=float)
            label = alg if name is None else f"{alg}: {name}"
            if spec.get("loglog") and len(s) >= 2 and (s["median"] > 0).all():
                slope = fitted_slope(xs, s["median"].to_numpy())
                label += f" (slope {slope:.2f})"
            ax.errorbar(xs, s["median"], yerr=[s["median"] - s["min"], s["max"] - s["median"]], capsize=2,
                        label=label, **_line_style(len(ax.containers)))
    if spec.get("loglog"):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = np.unique(pd.to_numeric(results[xc], errors="coerce").dropna().to_numpy(dtype=float))
        if 0 < ticks.size <= 12:  # label the measured x values only (log minor labels overlap)
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(spec.get("xlabel", x))
    ax.set_ylabel(spec.get("ylabel", f"{time if isinstance(time, str) else 'seconds'} (median, min-max)"))
    if lines > MAX_COLOURS:   # beside the axes: inside, sixteen entries hid the curves
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    else:
        ax.legend(fontsize=7)
    _title(fig, spec.get("title", ""), ax)
    fig.tight_layout()
    return fig


def _timing_panels(results: pd.DataFrame, spec: dict) -> plt.Figure:
    """Small multiples of the timing figure (``panels: true``): one log-log panel per algorithm, its
    medians and min-max bars in colour with its fitted slope, every other algorithm's medians in light
    grey behind it, all panels on the same axes (sixteen lines in one panel cannot be told apart)."""
    x, y = spec.get("x", "n"), spec.get("time", "cpu_seconds")
    results = finished_runs(_selected(results, spec))
    xc = xcol(results, x)
    order = [a for a in as_list(spec.get("algorithm")) if a in set(results["algorithm"])] or \
        list(dict.fromkeys(results["algorithm"]))   # the spec's order, one panel each
    curves = {alg: results[results["algorithm"] == alg].groupby(xc)[y].agg(["median", "min", "max"]).sort_index()
              for alg in order}
    cols = min(PANELS_PER_ROW - 1, len(curves))
    rows = math.ceil(len(curves) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.1 * rows + 0.5), sharex=True, sharey=True,
                             squeeze=False)
    for ax, (alg, c) in zip(axes.flat, curves.items()):
        for other, o in curves.items():
            if other != alg:
                ax.plot(o.index.to_numpy(float), o["median"], color="0.85", lw=0.8)
        xs = c.index.to_numpy(float)
        slope = (f", slope {fitted_slope(xs, c['median'].to_numpy()):.2f}"
                 if len(c) >= 2 and (c["median"] > 0).all() else "")
        ax.errorbar(xs, c["median"], yerr=[c["median"] - c["min"], c["max"] - c["median"]], color="C0",
                    marker="o", ms=3, capsize=1.5, lw=1.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{alg}{slope}", fontsize=8)
    for ax in list(axes.flat)[len(curves):]:
        ax.axis("off")
    fig.supxlabel(spec.get("xlabel", x), fontsize=8)
    fig.supylabel(spec.get("ylabel", f"{y} (median, min-max)"), fontsize=8)
    _title(fig, spec.get("title", ""))
    fig.tight_layout()
    return fig


def _line_style(i: int) -> dict:
    """The i-th line's colour, marker and dash: matplotlib's ten colours, then again with another
    marker and dash per round of ten, so that no two lines of a figure look alike (the benchmark's
    timing figure has sixteen); the first ten are matplotlib's defaults with a circle."""
    k = i // MAX_COLOURS
    return {"color": f"C{i % MAX_COLOURS}", "marker": "os^Dv"[k % 5], "linestyle": ["-", "--", ":", "-."][k % 4]}


def _tick(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def heatmap(results: pd.DataFrame, spec: dict) -> plt.Figure:
    """A metric (or each of ``metrics``, one row of panels each) over a grid of two parameters ``x``
    and ``y`` of one algorithm, mean over seeds, one panel per dataset (``datasets`` picks and
    orders them; default every dataset with runs)."""
    metrics = spec.get("metrics") or [spec.get("metric", "acc")]
    df = _selected(results, spec)
    xc, yc = xcol(df, spec["x"]), xcol(df, spec["y"])
    datasets = [d for d in (spec.get("datasets") or dict.fromkeys(df["dataset"])) if (df["dataset"] == d).any()]
    if not datasets:
        raise ValueError(f"heatmap: no runs of {spec.get('algorithm')} on the datasets {spec.get('datasets')}")
    fig, axes = plt.subplots(len(metrics), len(datasets), figsize=(3.6 * len(datasets) + 1.0, 2.9 * len(metrics) + 0.4),
                             squeeze=False, layout="constrained")
    for r, metric in enumerate(metrics):
        for ax, ds in zip(axes[r], datasets):
            piv = df[df["dataset"] == ds].pivot_table(index=yc, columns=xc, values=metric, aggfunc="mean")
            vals = piv.to_numpy(dtype=float)
            # each panel its own scale: on a fixed 0-1 scale 0.72 and 0.87 looked alike
            lo, hi = (np.nanmin(vals), np.nanmax(vals)) if np.isfinite(vals).any() else (0.0, 1.0)
            if hi - lo < 0.02:    # (nearly) one value: a span of 0.04 around it, not a scale of rounding
                lo, hi = (lo + hi) / 2 - 0.02, (lo + hi) / 2 + 0.02
            im = ax.imshow(vals, origin="lower", aspect="auto", vmin=lo, vmax=hi, cmap="viridis")
            ax.set_xticks(range(piv.shape[1]), [_tick(v) for v in piv.columns], rotation=45, fontsize=7)
            ax.set_yticks(range(piv.shape[0]), [_tick(v) for v in piv.index], fontsize=7)
            for (i, j), v in np.ndenumerate(vals):
                if not math.isnan(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                            color="w" if v < (lo + hi) / 2 else "k")
            fig.colorbar(im, ax=ax, shrink=0.8).formatter.set_useOffset(False)
            ax.set_xlabel(spec["x"])
            ax.set_ylabel(spec["y"])
            ax.set_title(f"{ds}: {metric}", fontsize=TITLE_FONTSIZE)
    if spec.get("title"):
        _title(fig, spec["title"])
    return fig


def weights(results: pd.DataFrame, spec: dict) -> plt.Figure:
    """Kernel weights: one panel per dataset, one group of bars per kernel (view), one bar per
    ``columns`` entry ({label: {algorithm, where}}; the mean weight vector over its runs)."""
    datasets = list(dict.fromkeys(results["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.2), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        names = None
        cols = list(spec["columns"].items())
        bw = 0.8 / max(len(cols), 1)
        for j, (label, col) in enumerate(cols):
            g = _where(results[(results["dataset"] == ds) & results["algorithm"].isin(as_list(col["algorithm"]))],
                       col.get("where") or {})
            g = g[g["kernel_weights"].notna()]
            if g.empty:
                continue
            W = np.array([json.loads(w) for w in g["kernel_weights"]], dtype=float)
            names = names or json.loads(g["kernel_name"].iloc[0])
            ax.bar(np.arange(W.shape[1]) + (j - (len(cols) - 1) / 2) * bw, W.mean(axis=0), bw, label=label)
        if names:
            ax.set_xticks(np.arange(len(names)), [n.replace("linear(", "").rstrip(")") for n in names],
                          rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("weight")
        ax.set_ylim(0, 1.05)
        ax.set_title(ds, fontsize=TITLE_FONTSIZE)
        ax.legend(fontsize=6)
    _title(fig, spec.get("title", ""))
    fig.tight_layout()
    return fig


def cd_diagram(test: RankTest, title: str = "") -> plt.Figure:
    """The critical-difference diagram: an axis of average ranks (1, the best, on the left), each
    method hung from its average rank, a bar joining each group of methods within the critical
    difference, and the critical difference drawn above the axis."""
    names, r = list(test.average.index), test.average.to_numpy()
    k = len(names)
    half = (k + 1) // 2
    fig, ax = plt.subplots(figsize=(7.5, 1.6 + 0.28 * half))
    ax.set_xlim(0.5, k + 0.5)
    ax.set_ylim(-(half + 1.5), 2.2)
    ax.axis("off")
    ax.hlines(0, 1, k, color="black", lw=1)
    for t in range(1, k + 1):
        ax.vlines(t, 0, 0.18, color="black", lw=1)
        ax.text(t, 0.35, str(t), ha="center", va="bottom", fontsize=8)
    ax.hlines(1.4, 1, 1 + test.cd, color="black", lw=1.5)
    ax.vlines([1, 1 + test.cd], 1.3, 1.5, color="black", lw=1.5)
    ax.text(1 + test.cd / 2, 1.6, f"CD = {test.cd:.2f}", ha="center", va="bottom", fontsize=8)
    for i, (name, x) in enumerate(zip(names, r)):
        left = i < half
        row = -(i + 1) if left else -(k - i)
        end = 0.6 if left else k + 0.4
        ax.plot([x, x, end], [0, row, row], color="black", lw=0.8)
        ax.text(end + (-0.05 if left else 0.05), row, f"{name} ({x:.2f})", ha="right" if left else "left",
                va="center", fontsize=8)
    for j, grp in enumerate(test.groups()):
        lo, hi = test.average[grp[0]], test.average[grp[-1]]
        y = -0.35 - 0.18 * j
        ax.hlines(y, lo - 0.04, hi + 0.04, color="tab:red", lw=3)
    stats = (f"Friedman chi2 = {test.statistic:.2f}, p = {test.p_value:.2g}" if not math.isnan(test.statistic)
             else "Friedman test not defined (fewer than 3 methods or 2 data sets)")
    fig.suptitle(f"{title}\n{test.metric}: average ranks over {test.n_datasets} data sets; {stats}; "
                 f"Nemenyi alpha = {test.alpha:g}", fontsize=8)
    fig.tight_layout()
    return fig


def ranks(results: pd.DataFrame, spec: dict) -> plt.Figure:
    """The critical-difference diagram of the table ``spec`` describes (its ``columns``, rules and
    ``datasets``) on ``metric`` (default acc): average ranks, Friedman's test, Nemenyi at ``alpha``."""
    return cd_diagram(ranked(results, spec)[1], spec.get("title", ""))


FIGURE_KINDS = {"bars": bars, "sweep": sweep, "timing": timing, "heatmap": heatmap, "weights": weights,
                "ranks": ranks, "rank_cost": rank_cost, "ranks_by": ranks_by}


def make_figure(results: pd.DataFrame, spec: dict, empty: str | None = None) -> plt.Figure:
    """The figure ``spec`` asks for, from ``results``. Without runs it is an error, unless ``empty``
    says why there are none (a rebuild from a partial results archive): the figure is then its title
    and that sentence."""
    kind = spec.get("kind")
    if kind not in FIGURE_KINDS:
        raise ValueError(f"unknown figure kind {kind!r}; known: {', '.join(FIGURE_KINDS)}")
    if results.empty:
        if not empty:
            raise ValueError("no runs to plot")
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, empty, ha="center", va="center", wrap=True, fontsize=9)
        _title(fig, spec.get("title", ""))
        return fig
    return FIGURE_KINDS[kind](results, spec)


def save_figure(fig: plt.Figure, base: str, formats: tuple[str, ...] = ("png", "pdf")) -> list[str]:
    """Write ``base.png`` and ``base.pdf`` (or ``formats``) atomically and close the figure."""
    paths = []
    for ext in formats:
        with atomic_path(f"{base}.{ext}") as tmp:
            fig.savefig(tmp, format=ext, dpi=150)
        paths.append(f"{base}.{ext}")
    plt.close(fig)
    return paths
