"""The cause of each table cell far from its published value: the rows of the causes file
(:func:`mkclust.repro.reference.load_causes`) matched to the cells, and the seed-noise rule for
columns whose published values are means over random starts; and the yardstick of a published
value at chance level (:func:`closest_independent_labelling`); and the two-cluster models' objectives with
the labels held fixed (:func:`lgmmc_objective_at`, :func:`odmc_objective_at`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mkclust.repro.reference import load_causes
from mkclust.repro.reporting.reference_run import noise_limit


#: a cell further than this from its published value gets a cause (``attach_causes``)
GAP = 0.02


def attach_causes(tidy: pd.DataFrame, paper: str, table: str, causes: pd.DataFrame | None = None,
                  mean_of_runs: bool | list[str] = False) -> pd.DataFrame:
    """``tidy`` with ``cause`` and ``evidence`` for every cell more than :data:`GAP` from its
    published value: the most specific row of ``causes`` (default :func:`load_causes`) for
    (``paper``, ``table``, dataset, column, metric), ``*`` matching anything; a cell no row names is
    ``not-yet-explained``. Other cells get empty strings.

    ``mean_of_runs``: the published values (True: all; a list: those of these columns) are the
    authors' means over as many random starts as ours (``reference: {mean_of_runs: ...}``). A cell
    that would be ``not-yet-explained`` and whose difference is within two standard errors of the
    difference of two such means, 2 sqrt(2) times its own standard error (the authors' runs assumed
    as spread as ours), is ``seed-noise``, with the
    numbers of each such metric of its (dataset, column) as evidence; one beyond that stays
    ``not-yet-explained``, its numbers put before the matching row's evidence (what was tried)."""
    causes = load_causes() if causes is None else causes
    rows = causes[(causes["paper"] == paper) & (causes["table"] == table)]
    out = tidy.copy()
    out["cause"], out["evidence"] = "", ""
    off = out["published"].notna() & (out["diff"].abs() > GAP + 1e-12)
    noise: dict[tuple, list[int]] = {}
    for i in out.index[off]:
        r = out.loc[i]
        hit = rows[rows["dataset"].isin([r["dataset"], "*"]) & rows["column"].isin([r["column"], "*"])
                   & rows["metric"].isin([r["metric"], "*"])]
        if hit.empty:
            cause, evidence = "not-yet-explained", ""
        else:
            best = hit.loc[(hit[["dataset", "column", "metric"]] != "*").sum(axis=1).idxmax()]
            cause, evidence = best["cause"], best["evidence"]
        se = float(r["se"]) if "se" in out.columns else math.nan
        means = mean_of_runs is True or (isinstance(mean_of_runs, list) and r["column"] in mean_of_runs)
        limit = noise_limit(se, se)   # the authors' runs assumed as spread as ours
        if means and cause == "not-yet-explained" and limit > 0:
            if abs(r["diff"]) <= limit:
                noise.setdefault((r["dataset"], r["column"]), []).append((i, limit))
                continue
            evidence = (f"{r['metric']} {r['value']:.3f} against {r['published']:.3f} ({r['diff']:+.3f}), beyond two "
                        f"standard errors of the difference of two means over random starts ({limit:.3f})"
                        + (f"; {evidence}" if evidence else ""))
        out.loc[i, ["cause", "evidence"]] = [cause, evidence]
    for cells in noise.values():
        parts = [f"{out.loc[i, 'metric']} {out.loc[i, 'value']:.3f} against {out.loc[i, 'published']:.3f} "
                 f"({out.loc[i, 'diff']:+.3f}; two standard errors of the difference {limit:.3f})"
                 for i, limit in cells]
        text = ("the published value is the authors' mean over their own random starts, ours over ours: "
                + "; ".join(parts))
        for i, _ in cells:
            out.loc[i, ["cause", "evidence"]] = ["seed-noise", text]
    return out


def gap_groups(tidy: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(cause, evidence, cells) of the cells more than GAP from their published value, one entry per
    cause and evidence in table order; [] for a table without causes (:func:`attach_causes`)."""
    if "cause" not in tidy.columns:
        return []
    off = tidy[tidy["cause"].fillna("") != ""]
    return [(c, e, g) for (c, e), g in off.groupby([off["cause"], off["evidence"].fillna("")], sort=False)]


def cell_list(cells: pd.DataFrame) -> str:
    """'dataset column metric (diff)' of each cell, comma-separated."""
    return ", ".join(f"{r.dataset} {r.column} {r.metric} ({r.diff:+.3f})" for r in cells.itertuples())


def two_cluster_rand_index(acc, n: int):
    """The Rand index of a two-cluster labelling of n samples of two classes from its one-to-one
    accuracy alone: the pairs the two partitions split differently are the correctly times the wrongly
    assigned samples, so RI = 1 - 2 acc (1 - acc) n / (n - 1) (the identity behind the
    ``published-inconsistent`` causes of two-class tables)."""
    return 1.0 - 2.0 * acc * (1.0 - acc) * n / (n - 1)


def independent_labelling(class_sizes: tuple[int, int], cluster_size: int) -> dict[str, float]:
    """Mean and standard deviation of the one-to-one accuracy (Hungarian; for two clusters the better
    of the two matchings) and the Rand index of a two-cluster labelling with clusters of
    ``cluster_size`` and n - ``cluster_size`` samples drawn independently of a two-class labelling
    with ``class_sizes``: exact, from the hypergeometric law of the contingency table's one free count
    (class 1 in cluster 1), which fixes both metrics. The yardstick of chance-level
    ``published-degenerate`` causes (:func:`closest_independent_labelling`)."""
    a, n = int(class_sizes[1]), int(sum(class_sizes))
    m = int(cluster_size)
    if not 0 < m < n or min(class_sizes) < 1:
        raise ValueError(f"cluster size {m} and class sizes {class_sizes}: both must split n = {n} into two parts")
    from scipy.stats import hypergeom   # here: a second to import, for the few tables with such causes

    k = np.arange(max(0, m + a - n), min(a, m) + 1)
    p = hypergeom(n, a, m).pmf(k)
    n11, n10, n01 = k, a - k, m - k
    n00 = n - a - n01
    acc = np.maximum(n11 + n00, n10 + n01) / n
    ri = two_cluster_rand_index(acc, n)
    out = {}
    for name, v in (("acc", acc), ("ri", ri)):
        mean = float(p @ v)
        out[name], out[name + "_sd"] = mean, float(np.sqrt(max(p @ (v - mean) ** 2, 0.0)))
    return out


def closest_independent_labelling(class_sizes: tuple[int, int], acc: float, ri: float) -> tuple[int, float, dict]:
    """The cluster size m (m <= n/2; m and n - m are one labelling) whose independent labelling
    (:func:`independent_labelling`) lies nearest the pair (``acc``, ``ri``), measured by the larger of
    the two distances in standard deviations; returns (m, that distance, its moments). What a pair
    within two standard deviations shows is weaker than it looks: over m, chance covers every accuracy
    from the equal split's to the one-cluster value (the majority rate), and with two clusters the Rand
    index follows from the accuracy (RI = 1 - 2 acc (1 - acc) n / (n - 1)), so such a pair scores no
    better than a labelling blind to the classes; it is not shown to be one."""
    best = None
    for m in range(1, sum(class_sizes) // 2 + 1):
        mo = independent_labelling(class_sizes, m)
        z = max(abs(acc - mo["acc"]) / max(mo["acc_sd"], 1e-12), abs(ri - mo["ri"]) / max(mo["ri_sd"], 1e-12))
        if best is None or z < best[1]:
            best = (m, z, mo)
    return best


def _factor(K: np.ndarray, center: bool) -> np.ndarray:
    """F with F F' = the (centred) kernel (:func:`mkclust.kernels.feature_map`, every eigenpair above
    rounding)."""
    from mkclust.kernels import center_kernel, feature_map

    return feature_map(center_kernel(K) if center else K)


def _solve(objective, constraints) -> float:
    """The optimal value of a concave maximisation, by cvxpy and Clarabel (an interior point, a solver
    independent of the fits' own)."""
    import cvxpy as cp

    problem = cp.Problem(cp.Maximize(objective), constraints)
    value = problem.solve(solver=cp.CLARABEL)
    if problem.status != cp.OPTIMAL:
        raise RuntimeError(f"the fixed-label objective's maximisation ended {problem.status}")
    return float(value)


def _signs(labels) -> np.ndarray:
    labels = np.asarray(labels)
    if np.unique(labels).size > 2:
        raise ValueError("a two-cluster objective takes two clusters")
    return np.where(labels == labels[0], 1.0, -1.0)


def lgmmc_objective_at(K: np.ndarray, labels, C: float, center: bool = True) -> float:
    """LG-MMC's objective with its labels held fixed: one label kernel, J(y) = max_{0 <= a <= C} e'a -
    1/2 a'(K o yy')a (the minimax problem of :mod:`mkclust.algorithms.lgmmc` with B = {y}), on the
    centred kernel as the fit uses it. The minimax chooses the labelling of smallest J (largest
    margin), so J(own labels) < J(true labels) says the model prefers what it found: the
    ``model-prefers-other`` evidence of the ODMC table's LG-MMC cells. The labels' balance is not
    imposed (J is defined for any y)."""
    import cvxpy as cp

    y = _signs(labels)
    L = _factor(K, center)
    a = cp.Variable(len(y))
    return _solve(cp.sum(a) - 0.5 * cp.sum_squares(L.T @ cp.multiply(y, a)), [a >= 0, a <= float(C)])


def odmc_objective_at(K: np.ndarray, labels, lam: float, nu: float, theta: float, center: bool = True) -> float:
    """ODMC's objective with its labels held fixed: max over alpha >= 0 of G(alpha, y) of Eq. 3 (the
    optimal margin distribution machine's dual, :mod:`mkclust.algorithms.odmc`), on the centred
    kernel as the fit uses it. G is strongly concave, so the maximiser is unique and bounded (ODMC's
    box [0, tau] holds it); the minimax relaxation prefers the labelling of smallest value, so the
    value at the fit's labels against the true ones is the ``model-prefers-other`` evidence of the
    ODMC table's ODMC cells."""
    import cvxpy as cp

    from mkclust.algorithms._odm import odm_kappa

    y = _signs(labels)
    n = len(y)
    L = _factor(K, center)
    kappa = odm_kappa(n, lam, theta)
    a1, a2 = cp.Variable(n), cp.Variable(n)
    G = (-0.5 * cp.sum_squares(L.T @ cp.multiply(y, a1 - a2)) - kappa * (cp.sum_squares(a1) + cp.sum_squares(a2) / nu)
         + (1.0 - theta) * cp.sum(a1) - (1.0 + theta) * cp.sum(a2))
    return _solve(G, [a1 >= 0, a2 >= 0])
