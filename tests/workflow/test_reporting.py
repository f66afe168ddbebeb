import math

import matplotlib.colors
import numpy as np
import pandas as pd
import pytest

from mkclust.repro.reference import available, load_reference
from mkclust.repro.reporting import build_table, make_figure, reduce_runs, save_figure, write_table


def frame(rows):
    df = pd.DataFrame(rows)
    df["dataset_flags"] = ""
    return df


def runs():
    rows = []
    for pid, accs, objs in [("kernel=0", [0.6, 0.8], [5.0, 3.0]), ("kernel=1", [0.9, 0.7], [1.0, 2.0])]:
        for seed, (a, o) in enumerate(zip(accs, objs)):
            rows.append({"dataset": "digits1v7", "algorithm": "KKM", "param_id": pid, "seed": seed,
                         "param.kernel": float(pid[-1]), "acc": a, "ri": a / 2, "objective": o})
    return frame(rows)


def test_seed_rules():
    df = runs()
    one = df[df.param_id == "kernel=0"]
    r = reduce_runs(one, ["acc"], seeds="mean", params="only")
    assert r["acc"][0] == pytest.approx(0.7) and r["acc"][1] == pytest.approx(np.std([0.6, 0.8], ddof=1))
    b = reduce_runs(one, ["acc"], seeds="best_objective", params="only")
    assert b["acc"][0] == pytest.approx(0.8) and math.isnan(b["acc"][1])  # objective 3 < 5


def test_param_rules():
    df = runs()
    m = reduce_runs(df, ["acc"], "mean", "mean")
    assert m["acc"][0] == pytest.approx(0.75) and not m["oracle"]
    o = reduce_runs(df, ["acc", "ri"], "best_objective", "best_param_by_metric")
    assert o["oracle"] and o["chosen"] == "kernel=1" and o["acc"][0] == pytest.approx(0.9)
    assert o["ri"][0] == pytest.approx(0.45)  # the same chosen run for every metric
    with pytest.raises(ValueError, match="2 parameter sets"):
        reduce_runs(df, ["acc"], "mean", "only")


def test_best_parameter_per_metric():
    df = runs()
    df.loc[df.param_id == "kernel=0", "ri"] = 0.99  # kernel 0 is best by ri, kernel 1 by acc
    e = reduce_runs(df, ["acc", "ri"], "mean", "best_param_by_metric", select_by="each")
    assert e["oracle"] and e["acc"][0] == pytest.approx(0.8) and e["ri"][0] == pytest.approx(0.99)
    assert e["chosen"] == "acc: kernel=1; ri: kernel=0"


def test_build_table_with_reference_and_where():
    df = runs().rename(columns={"acc": "majority_acc"})  # the MKC paper's accuracy
    spec = {"metrics": ["majority_acc"], "reference": {"paper": "mkc", "table": "table2"},
            "columns": {"K1": {"algorithm": "KKM", "where": {"kernel": 0}},
                        "KM": {"algorithm": "KKM", "params": "mean"}}}
    t = build_table(df, spec)
    k1 = t[t.column == "K1"].iloc[0]
    assert k1["value"] == pytest.approx(0.7)
    assert k1["published"] == pytest.approx(1.0)  # MKC Table 2, digits1v7, K1: 100.00 %
    assert k1["diff"] == pytest.approx(-0.3)
    km = t[t.column == "KM"].iloc[0]
    assert km["published"] == pytest.approx(0.9945)


def test_column_from_a_list_of_algorithms():
    """A column may take each data set's runs from whichever of several labels ran on it (MKC's
    Table 3: subsets of 500, and of 1000 on mnist01234)."""
    a = runs()
    b = runs().assign(dataset="ringnorm", algorithm="KKM-big", acc=lambda d: d["acc"] / 2)
    t = build_table(pd.concat([a, b]), {"metrics": ["acc"], "params": "mean",
                                        "columns": {"sub": {"algorithm": ["KKM", "KKM-big"]}}})
    assert list(t["dataset"]) == ["digits1v7", "ringnorm"]
    assert t["value"].tolist() == pytest.approx([0.75, 0.375])


def test_reference_files():
    assert "mkc_table2" in available()
    ref = load_reference("mkc", "table2")
    assert len(ref) == 144  # 11 data sets x 7 columns x 2 metrics, less 4 blank IterSVR and NC's mnist '-'
    assert ref["value"].between(0, 1).all()
    r = load_reference("rmkkm", "table2")
    assert len(r) == 9 * 12 * 3 and r["value"].between(0, 1).all()
    cell = r.set_index(["dataset", "column", "metric"])["value"]
    assert cell[("YALE", "RMKKM", "acc")] == 0.5218 and cell[("TR45", "KKM-b", "nmi")] == 0.5787
    with pytest.raises(ValueError, match="available"):
        load_reference("mkc", "table9")


def test_write_table(tmp_path):
    t = build_table(runs(), {"metrics": ["acc", "ri"], "params": "best_param_by_metric"})
    paths = write_table(t, str(tmp_path / "t"), "title")
    assert all(__import__("os").path.getsize(p) > 0 for p in paths)
    md = (tmp_path / "t.md").read_text()
    assert "| digits1v7 | acc |" in md and "| digits1v7 | ri |" in md and "†" in md
    assert pd.read_csv(tmp_path / "t.csv").shape[0] == 2
    assert r"\begin{tabular}" in (tmp_path / "t.tex").read_text()
    assert not list(tmp_path.glob(".*tmp"))


def test_a_column_without_runs_on_the_first_data_set_keeps_its_place_in_the_written_table(tmp_path):
    """A partial run: B has no run on the first data set; the wide table still orders A, B, C as the
    spec does (not A, C, B by first appearance), in the Markdown and the LaTeX."""
    rows = [{"dataset": d, "algorithm": c, "param_id": "default", "seed": 0, "acc": .5}
            for d, cols in (("s1", "AC"), ("s2", "ABC")) for c in cols]
    spec = {"metrics": ["acc"], "columns": {c: {"algorithm": c} for c in "ABC"}}
    write_table(build_table(frame(rows), spec), str(tmp_path / "t"), "T", columns=list(spec["columns"]))
    assert "| dataset | metric | A | B | C |" in (tmp_path / "t.md").read_text()
    assert "| s1 | acc | 0.500 | – | 0.500 |" in (tmp_path / "t.md").read_text()
    assert "dataset & metric & A & B & C" in (tmp_path / "t.tex").read_text()


@pytest.mark.parametrize("spec", [
    {"kind": "bars", "metric": "acc", "columns": {"KKM": {"algorithm": "KKM", "params": "mean"}}},
    {"kind": "sweep", "algorithm": "KKM", "x": "kernel", "metric": "acc"},
    {"kind": "sweep", "algorithm": "KKM", "x": "kernel", "metric": "acc",
     "levels": {"KKM-a": {"algorithm": "KKM", "params": "mean"}}},
    {"kind": "timing", "x": "n", "loglog": True},
    {"kind": "heatmap", "algorithm": "KKM", "x": "kernel", "y": "seed", "metric": "acc"},
    {"kind": "heatmap", "algorithm": "KKM", "x": "kernel", "y": "seed", "metrics": ["acc", "ri"],
     "datasets": ["digits1v7", "absent"]},
    {"kind": "ranks", "metric": "acc", "columns": {"K0": {"algorithm": "KKM", "where": {"kernel": 0}},
                                                   "K1": {"algorithm": "KKM", "where": {"kernel": 1}}}},
])
def test_figures_render(spec, tmp_path):
    df = runs()
    df["kernel_name"] = df["param_id"]
    df["n"] = np.where(df["seed"] == 0, 100, 200)
    df["cpu_seconds"] = df["n"] / 100.0
    paths = save_figure(make_figure(df, spec), str(tmp_path / "f"))
    assert [p[-3:] for p in paths] == ["png", "pdf"]
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "f.pdf").read_bytes()[:4] == b"%PDF"
    with pytest.raises(ValueError, match="figure kind"):
        make_figure(df, {"kind": "pie"})


@pytest.mark.parametrize("spec", [
    {"kind": "bars", "metric": "acc", "columns": {"KKM": {"algorithm": "KKM", "params": "mean"}}},
    {"kind": "sweep", "algorithm": "KKM", "x": "kernel", "metric": "acc"},
    {"kind": "heatmap", "algorithm": "KKM", "x": "kernel", "y": "seed", "metric": "acc"},
])
def test_a_long_title_stays_inside_a_narrow_figure(spec):
    """The ODMC paper configuration's Figure 2 on two data sets (5 inches wide) had its one-line title
    clipped at the right edge: the title wraps to the figure's width."""
    title = "ODMC paper Figure 2: average seconds per iteration (mean over the grid and runs) " * 2
    df = runs()
    df["kernel_name"] = df["param_id"]
    fig = make_figure(df, {**spec, "title": title})
    fig.canvas.draw()
    box = fig.bbox
    texts = [t for t in [*(ax.title for ax in fig.axes), fig._suptitle] if t is not None and t.get_text()]
    assert texts and all(len(line) < len(title) / 2 for t in texts for line in t.get_text().splitlines())
    renderer = fig.canvas.get_renderer()
    for t in texts:
        ext = t.get_window_extent(renderer)
        assert box.x0 <= ext.x0 and ext.x1 <= box.x1, (ext, box)


def test_heatmap_panels_per_metric_and_dataset():
    df = pd.concat([runs(), runs().assign(dataset="other")], ignore_index=True)
    spec = {"kind": "heatmap", "algorithm": "KKM", "x": "kernel", "y": "seed", "metrics": ["acc", "ri"]}
    fig = make_figure(df, {**spec, "datasets": ["other", "digits1v7"]})
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["other: acc", "digits1v7: acc", "other: ri", "digits1v7: ri"]
    cells = [t.get_text() for t in fig.axes[1].texts]  # digits1v7, acc: mean over the one seed per cell
    assert sorted(cells) == ["0.60", "0.70", "0.80", "0.90"]
    with pytest.raises(ValueError, match="no runs of KKM"):
        make_figure(df, {**spec, "datasets": ["absent"]})


def test_heatmap_colours_span_each_panels_own_values():
    """On a fixed 0-1 scale 0.72 and 0.87 looked alike; each panel's scale is its own range."""
    df = runs()
    fig = make_figure(df, {"kind": "heatmap", "algorithm": "KKM", "x": "kernel", "y": "seed", "metrics": ["acc"]})
    image = fig.axes[0].images[0]
    values = [float(t.get_text()) for t in fig.axes[0].texts]
    assert image.norm.vmin == pytest.approx(min(values), abs=0.005)
    assert image.norm.vmax == pytest.approx(max(values), abs=0.005)


def test_the_bars_legend_stays_clear_of_the_bars():
    """mkc/table2_bars.png's legend covered bars; it sits below the axes."""
    fig = make_figure(runs(), {"kind": "bars", "metric": "acc",
                               "columns": {f"K{k}": {"algorithm": "KKM", "where": {"kernel": k}} for k in range(2)}})
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.y1 <= ax.get_window_extent().y0


def test_the_verdict_figure_keeps_claims_whole_and_drops_an_empty_panel():
    """verdict.png cut claim labels ("(Ta... †") and gave half its canvas to "no published values"."""
    from mkclust.repro.reporting.pages import verdict_figure

    claim = "MKC is better than the other competing algorithms in most cases (Table 2)"
    verdicts = pd.DataFrame([{"claim": claim, "oracle": True, "held": 3, "cases": 5, "holds": True,
                              "status": "holds", "published_held": math.nan, "published_cases": 0}])
    fig = verdict_figure("MKC", verdicts, {})
    assert len(fig.axes) == 1
    label = fig.axes[0].get_yticklabels()[0].get_text()
    assert label.replace("\n", " ") == claim + " †"


def test_markdown_cell_shows_published_value_and_difference(tmp_path):
    df = runs().rename(columns={"acc": "majority_acc"})
    spec = {"metrics": ["majority_acc"], "reference": {"paper": "mkc", "table": "table2"},
            "columns": {"K1": {"algorithm": "KKM", "where": {"kernel": 0}}}}
    write_table(build_table(df, spec), str(tmp_path / "t"), "t")
    md = (tmp_path / "t.md").read_text()
    assert "0.700 ± 0.141 (1.000, -0.300)" in md


def test_timing_totals_sum_parameter_sets(tmp_path):
    rows = []
    for n in (100, 200):
        for seed in (0, 1):
            rows.append({"dataset": "d", "algorithm": "MKC", "param_id": "default", "seed": seed, "n": n,
                         "cpu_seconds": n / 100})
            for k in range(3):
                rows.append({"dataset": "d", "algorithm": "MMC", "param_id": f"kernel={k}", "seed": seed, "n": n,
                             "cpu_seconds": n / 100 * (k + 1)})
    df = frame(rows)
    fig = make_figure(df, {"kind": "timing", "x": "n", "loglog": True, "totals": {"MMC (K1+K2+K3)": "MMC"}})
    series = {c.get_label(): c.lines[0] for c in fig.axes[0].containers}   # one error-bar series each
    assert list(series) == ["MKC (slope 1.00)", "MMC (K1+K2+K3) (slope 1.00)"]   # the kernels only as a total
    total = series["MMC (K1+K2+K3) (slope 1.00)"]    # per n: (1 + 2 + 3) x n / 100 in each seed
    assert list(total.get_xdata()) == [100, 200] and list(total.get_ydata()) == [6.0, 12.0]
    assert save_figure(fig, str(tmp_path / "t"))


# ------------------------------------------------------------- significance and N/A cells (ODMC Table 2)

def test_paired_outcome_against_scipy():
    from scipy import stats

    from mkclust.repro.reporting.tables import paired_outcome

    ref = pd.Series([0.80, 0.82, 0.79, 0.81, 0.83], index=range(5))
    worse = pd.Series([0.70, 0.71, 0.69, 0.72, 0.70], index=range(5))
    out, p = paired_outcome(ref, worse)
    assert out == "win" and p == pytest.approx(stats.ttest_rel(ref, worse).pvalue)
    assert paired_outcome(worse, ref)[0] == "loss"
    noisy = ref + pd.Series([0.02, -0.03, 0.01, -0.01, 0.005], index=range(5))
    assert paired_outcome(ref, noisy)[0] == "tie"
    # a deterministic column (one run) is a constant: a one-sample test of the reference's runs
    out, p = paired_outcome(ref, pd.Series([0.5], index=[0]))
    assert out == "win" and p == pytest.approx(stats.ttest_1samp(ref, 0.5).pvalue)
    assert paired_outcome(ref, ref.copy()) == ("tie", 1.0)
    # identical non-zero differences: decided by their sign
    assert paired_outcome(ref, ref - 0.1)[0] == "win"


def significance_runs():
    rows = []
    rng = np.random.default_rng(0)
    for ds, gap in [("a", 0.2), ("b", 0.0)]:
        for seed in range(6):
            base = 0.6 + 0.01 * rng.normal()
            for alg, val in [("ODMC", base + gap), ("KM", base)]:
                rows.append({"dataset": ds, "algorithm": alg, "param_id": "default", "seed": seed, "acc": val,
                             "ri": val, "objective": 0.0, "status": "ok", "reason": ""})
        rows.append({"dataset": ds, "algorithm": "GMMC", "param_id": "default", "seed": 0, "acc": math.nan,
                     "ri": math.nan, "objective": math.nan, "status": "not_finished", "reason": "n = 9 > max_n = 5"})
    return frame(rows)


def test_table_with_win_tie_loss_rows_and_na_cells(tmp_path):
    spec = {"metrics": ["acc"], "compare": {"against": "ODMC"},
            "columns": {"KM": {"algorithm": "KM"}, "GMMC": {"algorithm": "GMMC"}, "ODMC": {"algorithm": "ODMC"}}}
    significance_runs().to_csv(tmp_path / "r.csv", index=False)   # as the workflow reads it back
    tidy = build_table(pd.read_csv(tmp_path / "r.csv"), spec)
    vs = tidy.set_index(["dataset", "column"])["vs"]
    assert vs[("a", "KM")] == "win" and vs[("b", "KM")] == "tie" and vs[("a", "ODMC")] == "reference"
    gm = tidy[tidy["column"] == "GMMC"]
    assert gm["value"].isna().all() and (gm["na_reason"] == "n = 9 > max_n = 5").all() and (gm["vs"] == "").all()
    write_table(tidy, str(tmp_path / "t"), "T")
    md = (tmp_path / "t.md").read_text()
    assert "N/A" in md and "•" in md
    assert "| ODMC: w/t/l | acc | 1/1/0 |" in md  # KM: one win, one tie; GMMC N/A is not counted


def test_each_cell_is_built_from_its_own_data_sets_runs_in_any_row_order():
    """build_table splits the runs by data set once: a table of interleaved, shuffled runs has the cells of
    each data set's table built alone (values, runs counted, tests against the reference column)."""
    spec = {"metrics": ["acc", "ri"], "compare": {"against": "ODMC"},
            "columns": {"KM": {"algorithm": "KM"}, "GMMC": {"algorithm": "GMMC"}, "ODMC": {"algorithm": "ODMC"}}}
    runs_ = significance_runs()
    keys = ["dataset", "column", "metric"]
    whole = build_table(runs_.sample(frac=1.0, random_state=3), spec).set_index(keys)
    alone = pd.concat([build_table(runs_[runs_["dataset"] == ds], spec) for ds in ("b", "a")]).set_index(keys)
    assert sorted(whole.index) == sorted(alone.index) and len(whole) == 12
    alone = alone.loc[whole.index]
    assert whole["value"].tolist() == pytest.approx(alone["value"].tolist(), nan_ok=True)
    assert whole["n_runs"].tolist() == alone["n_runs"].tolist()
    assert whole["vs"].tolist() == alone["vs"].tolist()
    assert whole.loc[("a", "KM", "acc"), "vs"] == "win" and whole.loc[("a", "KM", "acc"), "n_runs"] == 6


def test_table_names_the_parameters_derived_from_each_data_set(tmp_path):
    """A record's derived_params (the imbalanced sets' balance bound) reach the tidy table's
    ``derived`` column and the legend, per data set; a set with none has none."""
    rows = []
    for ds, balance in (("imb", 30.0), ("bal", None)):
        for seed in (0, 1):
            row = {"dataset": ds, "algorithm": "IterSVR", "param_id": "C=1", "seed": seed, "acc": 0.9}
            if balance is not None:
                row["derived.balance"] = balance
            rows.append(row)
    tidy = build_table(frame(rows), {"metrics": ["acc"]})
    assert dict(zip(tidy["dataset"], tidy["derived"].fillna(""))) == {"imb": "balance=30", "bal": ""}
    write_table(tidy, str(tmp_path / "t"), "T")
    assert "Parameters derived from the data set: balance=30 on imb." in (tmp_path / "t.md").read_text()


def test_timing_draws_several_columns_each_with_its_slope():
    rows = [{"dataset": "d", "algorithm": "MKC", "param_id": "default", "seed": 0, "n": n,
             "cpu_seconds": 0.01 * n, "diag.solve_seconds": 0.5 * n ** 0.5} for n in (100, 400, 1600)]
    fig = make_figure(frame(rows), {"kind": "timing", "x": "n", "loglog": True,
                                    "time": {"with kernel PCA": "cpu_seconds", "without": "diag.solve_seconds"}})
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["MKC: with kernel PCA (slope 1.00)", "MKC: without (slope 0.50)"]


def test_timing_leaves_out_runs_that_did_not_finish():
    # GMMC declines above max_n in a hundredth of a second: in the benchmark's figure those runs made
    # its curve fall at n = 1000 and its slope 0.00 instead of the fits' 2
    rows = [{"dataset": f"d{n}", "algorithm": "GMMC", "param_id": "default", "seed": 0, "n": n, "status": "ok",
             "cpu_seconds": (n / 100) ** 2} for n in (100, 200, 400)]
    rows += [{"dataset": "big", "algorithm": "GMMC", "param_id": "default", "seed": 0, "n": 1000,
              "status": "not_finished", "cpu_seconds": 0.01}]
    fig = make_figure(frame(rows), {"kind": "timing", "x": "n", "loglog": True})
    (c,) = fig.axes[0].containers
    assert c.get_label() == "GMMC (slope 2.00)"
    assert list(c.lines[0].get_xdata()) == [100, 200, 400]


def test_timing_lines_look_different_beyond_ten_methods():
    algs = [f"M{i}" for i in range(16)]
    rows = [{"dataset": "d", "algorithm": a, "param_id": "default", "seed": 0, "n": n, "cpu_seconds": (i + 1) * n}
            for i, a in enumerate(algs) for n in (100, 200)]
    fig = make_figure(frame(rows), {"kind": "timing", "x": "n", "loglog": True})
    ax = fig.axes[0]
    styles = {(matplotlib.colors.to_hex(c.lines[0].get_color()), c.lines[0].get_marker(), c.lines[0].get_linestyle())
              for c in ax.containers}
    assert len(ax.containers) == 16 and len(styles) == 16
    legend = ax.get_legend()   # beside the axes, not over the curves
    assert legend.get_bbox_to_anchor().x0 >= ax.get_window_extent().x1


def test_where_accepts_a_list_of_values():
    df = frame([{"dataset": "d", "algorithm": "MMC", "param_id": f"kernel={k}", "seed": 0, "param.kernel": k,
                 "acc": k / 10} for k in range(5)])
    t = build_table(df, {"metrics": ["acc"], "columns": {
        "two-four": {"algorithm": "MMC", "where": {"kernel": [2, 4]}, "params": "mean"},
        "three": {"algorithm": "MMC", "where": {"kernel": 3}},
        "best-of-two-four": {"algorithm": "MMC", "where": {"kernel": [2, 4]}, "params": "best_param_by_metric"}}})
    value = dict(zip(t["column"], t["value"]))
    assert value["two-four"] == pytest.approx(0.3) and value["three"] == pytest.approx(0.3)
    assert value["best-of-two-four"] == pytest.approx(0.4)


def test_gap_causes_join_the_most_specific_row_and_name_unexplained_cells(tmp_path):
    from mkclust.repro.reporting import attach_causes
    tidy = pd.DataFrame({"dataset": ["A", "A", "B", "B"], "column": ["X", "Y", "X", "Y"], "metric": "acc",
                         "value": [0.50, 0.70, 0.80, 0.99], "published": [0.60, 0.60, 0.90, 1.00]})
    tidy["diff"] = tidy["value"] - tidy["published"]
    tidy = tidy.assign(std=math.nan, n_runs=1, seeds_rule="mean", params_rule="only", oracle=False, chosen="",
                       flags="", derived="", na_reason="", vs="", p_value=math.nan)
    causes = pd.DataFrame([
        ["p", "t", "*", "X", "*", "setting-open", "any X"],
        ["p", "t", "B", "X", "acc", "data-differs", "B's X"],
        ["p", "other", "*", "*", "*", "data-differs", "another table"]],
        columns=["paper", "table", "dataset", "column", "metric", "cause", "evidence"])
    out = attach_causes(tidy, "p", "t", causes)
    assert list(out["cause"]) == ["setting-open", "not-yet-explained", "data-differs", ""]   # B Y: 1 point off
    assert list(out["evidence"]) == ["any X", "", "B's X", ""]
    write_table(out, str(tmp_path / "t"), "T")
    md = (tmp_path / "t.md").read_text()
    assert "3 of 4 with a published value" in md and "*not-yet-explained*" in md and "A Y acc (+0.100)" in md


def test_every_gap_cause_names_a_cell_of_a_paper_table():
    """Each row of causes.tsv names a table of the paper configuration with a reference, one of its
    columns (or *), a metric it reports (or *) and a data set of its experiment (or *)."""
    from pathlib import Path
    from mkclust.repro.reference import load_causes
    from mkclust.repro.configuration import load
    cfg = load(Path(__file__).parents[2] / "workflow/configs/paper.yaml")
    tables = {}
    for exp in cfg["experiments"].values():
        for name, spec in (exp.get("tables") or {}).items():
            if spec.get("reference"):
                tables[(exp["paper"], name)] = (spec, set(exp["datasets"]))
    causes = load_causes()
    assert len(causes) > 0
    for r in causes.itertuples():
        assert (r.paper, r.table) in tables, (r.paper, r.table)
        spec, datasets = tables[(r.paper, r.table)]
        assert r.dataset == "*" or r.dataset in set(spec.get("datasets") or datasets), r
        assert r.column == "*" or r.column in spec["columns"], r
        assert r.metric == "*" or r.metric in spec["metrics"], r
        assert r.evidence.strip(), r


def test_standard_error_of_a_cell_follows_its_seed_and_parameter_rules():
    df = runs()
    one = reduce_runs(df[df.param_id == "kernel=0"], ["acc"], "mean", "only")
    assert one["se"]["acc"] == pytest.approx(np.std([0.6, 0.8], ddof=1) / math.sqrt(2))
    apart = df.assign(seed=df["seed"] + 2 * (df.param_id == "kernel=1"))   # seeds 0, 1 and 2, 3
    grid = reduce_runs(apart, ["acc"], "mean", "mean")   # a mean of two independent means
    se0, se1 = np.std([0.6, 0.8], ddof=1) / math.sqrt(2), np.std([0.9, 0.7], ddof=1) / math.sqrt(2)
    assert grid["se"]["acc"] == pytest.approx(math.sqrt(se0 ** 2 + se1 ** 2) / 2)
    # the same seeds in both sets: the per-seed means (.75, .75) carry the noise; the two kernels'
    # opposite responses to one start cancel, so the mean over kernels has none
    assert reduce_runs(df, ["acc"], "mean", "mean")["se"]["acc"] == pytest.approx(0.0)
    along = df.assign(acc=[0.6, 0.8, 0.7, 0.9])   # kernel 1 = kernel 0 + .1 at each seed
    same = reduce_runs(along, ["acc"], "mean", "mean")["se"]["acc"]   # one start moves both alike: no averaging out
    assert same == pytest.approx(np.std([0.65, 0.85], ddof=1) / math.sqrt(2))
    assert same > math.sqrt(2 * se0 ** 2) / 2
    assert math.isnan(reduce_runs(df, ["acc"], "best_objective", "best_param_by_metric")["se"]["acc"])


def _twenty_seeds(shift=0.0, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for alg in ("KKM", "RKKM"):
        for s in range(20):
            a = 0.6 + 0.05 * rng.standard_normal() + shift
            rows.append({"dataset": "YALE", "algorithm": alg, "param_id": "default", "seed": s, "acc": a,
                         "objective": 10 - a})
    return frame(rows)


def test_the_reference_sentence_names_the_packages_that_differ_from_the_reference_runs(tmp_path):
    """reference_packages reads the pieces' manifests: a package a fit depends on whose version here is
    none of theirs is named with theirs; snakemake and matplotlib (no fit depends on them) and packages
    an older manifest does not name are not."""
    import json

    from mkclust.repro.reporting.reference_run import reference_line, reference_packages

    for piece, numpy_version in (("a", "2.4.6"), ("b", "2.4.5")):
        (tmp_path / piece).mkdir()
        (tmp_path / piece / "manifest.json").write_text(json.dumps(
            {"python": "3.11.7", "versions": {"numpy": numpy_version, "scipy": "1.17.1", "snakemake": "9.27.1"}}))
    ours = {"numpy": "1.26.4", "scipy": "1.17.1", "snakemake": "8.0", "numba": "0.60.0", "python": "3.11.7"}
    assert reference_packages(tmp_path, ours) == "numpy 1.26.4 (reference 2.4.5 or 2.4.6)"
    assert reference_packages(tmp_path, {**ours, "numpy": "2.4.5"}) == ""
    counts = {"compared": 2, "differs": 0, "identical": 2, "within noise": 0, "differing": [],
              "packages": "numpy 1.26.4 (reference 2.4.6)"}
    assert "This run's packages differ from the reference run's: numpy 1.26.4 (reference 2.4.6)" in reference_line(
        counts, "results/x")
    assert "packages differ" not in reference_line({**counts, "packages": ""}, "results/x")


def test_a_run_is_compared_with_a_reference_run_cell_by_cell(tmp_path):
    from mkclust.repro.reporting.reference_run import compare_with_reference, reference_counts, reference_line
    spec = {"metrics": ["acc"], "columns": {"KKM": {"algorithm": "KKM"},
                                            "RKKM-best": {"algorithm": "RKKM", "seeds": "best_objective"}}}
    ours = build_table(_twenty_seeds(), spec)
    same = compare_with_reference(ours, build_table(_twenty_seeds(), spec))
    assert list(same["reference_state"]) == ["identical", "identical"] and (same["reference_diff"] == 0).all()

    other = build_table(_twenty_seeds(seed=1), spec)          # other seeds: the mean moves by noise only
    noisy = compare_with_reference(ours, other).set_index("column")
    se = ours.set_index("column").loc["KKM", "se"]
    assert 0 < abs(noisy.loc["KKM", "reference_diff"]) <= noisy.loc["KKM", "reference_limit"]
    assert noisy.loc["KKM", "reference_limit"] == pytest.approx(2 * math.sqrt(se ** 2 + other.loc[0, "se"] ** 2))
    assert noisy.loc["KKM", "reference_state"] == "within noise"
    assert noisy.loc["RKKM-best", "reference_limit"] == 0      # one run: no seed noise, must be identical
    assert noisy.loc["RKKM-best", "reference_state"] == "differs"

    shifted = compare_with_reference(ours, build_table(_twenty_seeds(shift=0.1), spec)).set_index("column")
    assert shifted.loc["KKM", "reference_state"] == "differs"   # 0.1 is about 6 standard errors
    assert shifted.loc["KKM", "reference_diff"] == pytest.approx(-0.1)

    part = compare_with_reference(ours, build_table(_twenty_seeds()[lambda d: d.algorithm == "KKM"], spec))
    assert list(part["reference_state"]) == ["identical", ""]    # a cell the reference does not hold

    counts = reference_counts({"t": shifted.reset_index()})
    assert counts["compared"] == 2 and counts["differs"] == 2 and counts["identical"] == 0
    assert counts["differing"][0].startswith("t YALE KKM acc: ")
    assert "2 of 2 cells differ" in reference_line(counts, "results/x")

    write_table(shifted.reset_index(), str(tmp_path / "t"), "t")
    md = (tmp_path / "t.md").read_text()
    assert f"[ref {shifted.loc['KKM', 'reference']:.3f} ≠]" in md and "the reference run's value" in md
    write_table(same, str(tmp_path / "s"), "s")
    assert "[ref =]" in (tmp_path / "s.md").read_text()


def test_a_gap_within_the_noise_of_two_means_of_runs_is_seed_noise():
    from mkclust.repro.reporting import attach_causes
    tidy = pd.DataFrame({"dataset": ["A", "A", "A", "B"], "column": ["X", "X", "Y", "X"],
                         "metric": ["acc", "nmi", "acc", "acc"], "value": [0.63, 0.70, 0.63, 0.63],
                         "published": [0.60, 0.60, 0.60, 0.60], "se": [0.011, 0.011, 0.011, 0.01]})
    tidy["diff"] = tidy["value"] - tidy["published"]
    causes = pd.DataFrame([["p", "t", "B", "X", "*", "data-differs", "B differs"]],
                          columns=["paper", "table", "dataset", "column", "metric", "cause", "evidence"])
    plain = attach_causes(tidy, "p", "t", causes)
    assert list(plain["cause"]) == ["not-yet-explained"] * 3 + ["data-differs"]
    out = attach_causes(tidy, "p", "t", causes, mean_of_runs=True)
    # 0.03 <= 2 sqrt(2) 0.011 = 0.0311: noise; 0.10 is not; a named cause stays
    assert list(out["cause"]) == ["seed-noise", "not-yet-explained", "seed-noise", "data-differs"]
    assert "acc 0.630 against 0.600 (+0.030; two standard errors of the difference 0.031)" in out.loc[0, "evidence"]
    assert "nmi" not in out.loc[0, "evidence"]
    only_y = attach_causes(tidy, "p", "t", causes, mean_of_runs=["Y"])
    assert list(only_y["cause"]) == ["not-yet-explained", "not-yet-explained", "seed-noise", "data-differs"]


def test_a_gap_beyond_the_noise_keeps_its_row_and_gets_its_numbers():
    from mkclust.repro.reporting import attach_causes
    tidy = pd.DataFrame({"dataset": ["A"], "column": ["X"], "metric": ["acc"], "value": [0.70], "published": [0.60],
                         "se": [0.011]})
    tidy["diff"] = tidy["value"] - tidy["published"]
    causes = pd.DataFrame([["p", "t", "*", "X", "*", "not-yet-explained", "tried: the authors' start"]],
                          columns=["paper", "table", "dataset", "column", "metric", "cause", "evidence"])
    out = attach_causes(tidy, "p", "t", causes, mean_of_runs=True)
    assert out.loc[0, "cause"] == "not-yet-explained"
    assert out.loc[0, "evidence"] == ("acc 0.700 against 0.600 (+0.100), beyond two standard errors of the difference "
                                      "of two means over random starts (0.031); tried: the authors' start")


def test_nemenyi_critical_difference_matches_demsars_table():
    """q_0.05 of Demsar (2006), Table 5(a), for k = 2 ... 10, and CD = q sqrt(k (k + 1) / (6 N))."""
    from mkclust.repro.reporting.ranks import nemenyi_cd
    q = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
    for k, qk in zip(range(2, 11), q):
        assert nemenyi_cd(k, 1) / math.sqrt(k * (k + 1) / 6) == pytest.approx(qk, abs=1.5e-3)
    assert nemenyi_cd(4, 14) == pytest.approx(2.569 * math.sqrt(4 * 5 / (6 * 14)), rel=1e-3)
    with pytest.raises(ValueError, match="at least 2 methods"):
        nemenyi_cd(1, 5)


def test_rank_test_ranks_friedman_groups_and_summary():
    """Ranks by hand on a small table (ties share their average rank), Friedman's chi-square by its
    formula 12 N / (k (k + 1)) (sum R_j^2 - k (k + 1)^2 / 4), a data set with a missing value left out,
    and the generated summary naming the best method and the cheapest of its group."""
    from mkclust.repro.reporting.ranks import rank_test, summary_lines
    v = pd.DataFrame({"A": [0.9, 0.8, 0.7, 0.9, 0.5], "B": [0.8, 0.8, 0.6, 0.7, np.nan],
                      "C": [0.5, 0.4, 0.3, 0.6, 0.2]}, index=["d1", "d2", "d3", "d4", "d5"])
    t = rank_test(v, "acc")
    assert t.dropped == ["d5"] and t.n_datasets == 4
    assert t.ranks.loc["d2"].tolist() == [1.5, 1.5, 3.0]
    assert t.average.to_dict() == pytest.approx({"A": 1.125, "B": 1.875, "C": 3.0})
    N, k, R = 4, 3, np.array([1.125, 1.875, 3.0])
    chi2 = 12 * N / (k * (k + 1)) * ((R ** 2).sum() - k * (k + 1) ** 2 / 4)
    ties = 1 - (2 ** 3 - 2) / (N * k * (k ** 2 - 1))   # d2's tie of two, the usual correction
    assert t.statistic == pytest.approx(chi2 / ties, rel=1e-12)
    assert t.p_value == pytest.approx(math.exp(-t.statistic / 2), rel=1e-12)   # chi-square, 2 degrees of freedom
    assert t.cd == pytest.approx(2.343 * math.sqrt(3 * 4 / (6 * 4)), rel=1e-3)   # 1.657: A-B .75, B-C 1.125, A-C 1.875
    assert t.groups() == [["A", "B"], ["B", "C"]]
    text = " ".join(summary_lines(t, pd.Series({"A": 2.0, "B": 0.5, "C": 0.1})))
    assert "A has the best average rank (1.12 of 3)" in text
    assert "so not separated from it by this test: B." in text and "beyond the critical difference: C." in text
    assert "Cheapest of the best group: B (median 0.5 CPU s per fit)" in text
    assert "Left out (a method has no value there): d5" in text


def test_a_setting_chosen_by_a_label_free_score_is_no_oracle_and_a_cell_without_it_is_na():
    """select_by: silhouette takes the parameter set with the highest mean silhouette (here not the one
    with the best accuracy), marks no †; runs without the score (an archive from before it) give an
    N/A cell naming why, and the table is still written."""
    rows = [{"dataset": "d", "algorithm": "A", "param_id": pid, "seed": s, "acc": acc + 0.01 * s, "silhouette": sil}
            for pid, acc, sil in (("kernel=0", 0.9, 0.1), ("kernel=1", 0.7, 0.4)) for s in range(2)]
    spec = {"metrics": ["acc"], "columns": {"A": {"algorithm": "A", "params": "best_param_by_metric",
                                                  "select_by": "silhouette"}}}
    t = build_table(frame(rows), spec)
    assert t.loc[0, "chosen"] == "kernel=1" and t.loc[0, "value"] == pytest.approx(0.705) and not t.loc[0, "oracle"]
    oracle = build_table(frame(rows), {**spec, "columns": {"A": {**spec["columns"]["A"], "select_by": "acc"}}})
    assert oracle.loc[0, "chosen"] == "kernel=0" and oracle.loc[0, "oracle"]
    old = frame([{k: v for k, v in r.items() if k != "silhouette"} for r in rows])
    na = build_table(old, spec)
    assert math.isnan(na.loc[0, "value"]) and "have no silhouette" in na.loc[0, "na_reason"]


def test_a_data_set_not_counted_is_left_out_of_the_ranks():
    """credit-g and german are one data set twice: the table's not_counted keeps german in the table
    but out of the ranking."""
    from mkclust.repro.reporting.ranks import rank_test, values_from_table
    rows = [{"dataset": d, "algorithm": c, "param_id": "default", "seed": 0, "acc": v}
            for d, vals in (("credit-g", (.7, .6)), ("german", (.7, .6)), ("x", (.5, .9))) for c, v in zip("AB", vals)]
    tidy = build_table(frame(rows), {"metrics": ["acc"], "not_counted": ["german"]})
    assert "german" in set(tidy["dataset"])
    test = rank_test(values_from_table(tidy, "acc"))
    assert list(test.ranks.index) == ["credit-g", "x"] and test.average.to_dict() == {"A": 1.5, "B": 1.5}


def test_values_are_rounded_to_the_tables_decimals_before_ranking():
    """Two means equal to the three decimals a table shows tie (ringnorm's 0.77799999999999991 and
    0.77800000000000014 were ranks 2 and 1); Friedman's chi-square falls with the tie."""
    from mkclust.repro.reporting.ranks import rank_test
    v = pd.DataFrame({"R": [0.77799999999999991, 0.6, 0.5], "G": [0.77800000000000014, 0.5, 0.6],
                      "K": [0.1, 0.1, 0.1]}, index=["ringnorm", "b", "c"])
    assert rank_test(v).ranks.loc["ringnorm"].tolist() == [1.5, 1.5, 3.0]
    assert rank_test(v, decimals=None).ranks.loc["ringnorm"].tolist() == [2.0, 1.0, 3.0]


def test_iman_davenport_f_by_its_formula_and_the_f_distribution():
    """F = (N - 1) chi2 / (N (k - 1) - chi2) with k - 1 and (k - 1)(N - 1) degrees of freedom, by hand
    on Demsar's (2006) Sect. 3.2.4 example: k = 4 methods, N = 14 data sets, chi2 = 9.28 -> F = 3.69
    (F(3, 39) at 0.05 is 2.85, so rejected); unanimous rankings give F = inf."""
    from scipy import stats

    from mkclust.repro.reporting.ranks import iman_davenport, rank_test
    F, p = iman_davenport(9.28, 14, 4)
    assert F == pytest.approx(13 * 9.28 / (14 * 3 - 9.28), rel=1e-12) and round(F, 2) == 3.69
    assert p == pytest.approx(1 - stats.f.cdf(F, 3, 39), rel=1e-9) and p < 0.05 < 1 - stats.f.cdf(2.84, 3, 39)
    v = pd.DataFrame({"A": [0.9, 0.8, 0.7], "B": [0.5, 0.4, 0.3], "C": [0.1, 0.2, 0.0]})
    t = rank_test(v)
    assert t.statistic == pytest.approx(3 * 2) and (t.f_statistic, t.f_p_value) == (math.inf, 0.0)


def test_holm_on_a_small_p_vector_by_hand():
    """Holm: sort, multiply the i-th smallest by (m - i + 1), carry the running maximum, cap at 1."""
    from mkclust.repro.reporting.pairwise import holm
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> 0.02, 0.03, 0.06, 0.06 (max(0.04, 0.06))
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]).tolist() == pytest.approx([1.0, 1.0])


def test_the_signed_rank_p_value_with_ties_is_scipys_exact_permutation_test():
    """With ties or zeros among at most 13 differences, wilcoxon_p enumerates every sign flip with a
    vectorised statistic: the same p-value, to the last bit, as scipy's wilcoxon doing the same
    permutation test one flip at a time; without ties, and above 13 differences, it is scipy's wilcoxon."""
    from scipy import stats

    from mkclust.repro.reporting.pairwise import wilcoxon_p

    rng = np.random.default_rng(11)
    seen = set()
    for n in range(2, 14):
        for _ in range(3 if n < 11 else 1):   # scipy's own test of 13 differences: 8,192 calls, a second
            d = np.round(rng.normal(0.01, 0.03, n), 2)   # rounded: ties and zeros, as rounded accuracies give
            d[rng.integers(n)] = 0.0
            if not np.any(d):
                continue
            want = stats.wilcoxon(d, zero_method="zsplit", method=stats.PermutationMethod(n_resamples=np.inf)).pvalue
            assert wilcoxon_p(d) == float(want), (n, d)
            seen.add(round(float(want), 12))
    assert len(seen) > 10   # the p-values vary: a constant would not pass
    d = rng.normal(0.02, 0.03, 9)   # no ties, no zeros: scipy's exact distribution
    assert wilcoxon_p(d) == float(stats.wilcoxon(d, zero_method="zsplit").pvalue)
    d = np.round(rng.normal(0.01, 0.03, 20), 2)   # ties above 13: the normal approximation
    assert wilcoxon_p(d) == float(stats.wilcoxon(d, zero_method="zsplit", method="asymptotic").pvalue)


def test_pairwise_wilcoxon_agrees_with_scipy_and_counts_wins_ties_losses():
    """Every pair's p-value is scipy's signed-rank test on the differences (zeros split), identical
    columns give p = 1, and the Holm-corrected p-values are Holm's of the raw ones."""
    from scipy import stats

    from mkclust.repro.reporting.pairwise import holm, pairwise_wilcoxon
    rng = np.random.default_rng(0)
    a = rng.random(20)
    v = pd.DataFrame({"A": a, "B": a + rng.normal(0.05, 0.05, 20), "C": a.copy()})
    v.loc[3, "B"] = v.loc[3, "A"]   # a tie
    pw = pairwise_wilcoxon(v)
    assert list(zip(pw["a"], pw["b"])) == [("A", "B"), ("A", "C"), ("B", "C")]
    ab = pw.iloc[0]
    assert ab["p"] == pytest.approx(stats.wilcoxon(v["A"], v["B"], zero_method="zsplit").pvalue, rel=1e-12)
    assert (ab["wins"], ab["ties"], ab["losses"]) == (int((v.A > v.B).sum()), 1, int((v.A < v.B).sum()))
    assert ab["median_diff"] == pytest.approx(np.median(v.A - v.B))
    assert pw.iloc[1]["p"] == 1.0 and pw.iloc[1]["ties"] == 20
    assert pw["p_holm"].tolist() == pytest.approx(holm(pw["p"]).tolist())


def test_bayesian_signed_rank_gives_the_known_answers():
    """All differences far beyond the region of practical equivalence: the better method's probability
    1; all within it: equivalence 1; the two orders of the arguments mirror each other."""
    from mkclust.repro.reporting.pairwise import bayes_signed_rank
    x = np.linspace(0.5, 0.9, 30)
    assert bayes_signed_rank(x + 0.05, x) == pytest.approx((1.0, 0.0, 0.0), abs=1e-3)
    assert bayes_signed_rank(x, x + 0.05) == pytest.approx((0.0, 0.0, 1.0), abs=1e-3)
    assert bayes_signed_rank(x + 0.002, x) == pytest.approx((0.0, 1.0, 0.0), abs=1e-3)
    mixed = x + np.where(np.arange(30) % 2, 0.03, -0.03)
    left, mid, right = bayes_signed_rank(mixed, x)
    assert left + mid + right == pytest.approx(1.0) and max(left, right) < 0.95


def test_the_bayesian_signed_rank_samples_are_baycomps_bit_for_bit():
    """signed_rank_samples (baycomp's loop over the posterior's draws, done as arrays) gives baycomp's own
    samples exactly: scores rounded to three decimals, with ties, zero differences and differences
    exactly at the region of practical equivalence, 2 to 40 data sets, a chunk that does not divide the
    draws; and the probabilities bayes_signed_rank reports are those of baycomp's own test."""
    from baycomp import SignedRankTest

    from mkclust.repro.reporting.pairwise import ROPE, bayes_signed_rank, signed_rank_samples
    rng = np.random.default_rng(7)
    for trial in range(30):
        m = int(rng.integers(2, 41))
        x = np.round(rng.random(m), 3)
        y = np.round(x + rng.normal(0, 0.03, m), 3)
        y[: m // 3] = x[: m // 3] + ROPE * (trial % 3)      # differences of 0, at the rope, at twice it
        want = SignedRankTest.sample(x, y, ROPE, nsamples=1500, random_state=trial)
        assert np.array_equal(signed_rank_samples(x, y, ROPE, 1500, trial, chunk=256), want), trial
        assert bayes_signed_rank(x, y, nsamples=1500, seed=trial) == SignedRankTest.probs(
            x, y, rope=ROPE, nsamples=1500, random_state=trial)
    with pytest.raises(ValueError, match="rope > 0"):
        signed_rank_samples(x, y, 0.0, 10, 0)


def test_the_best_against_each_other_method_with_effect_sizes_and_wording():
    """versus_best: the median difference lies in its bootstrap interval, the counts add to the data
    sets, the Holm p-values are those of the pairwise table; the summary says how many pairs each test
    separates and words what the test did not separate as such."""
    from mkclust.repro.reporting.pairwise import pairwise_wilcoxon
    from mkclust.repro.reporting.ranks import rank_test, summary_lines, versus_best
    rng = np.random.default_rng(1)
    base = rng.random(25) * 0.5 + 0.3
    v = pd.DataFrame({"best": base + 0.06, "near": base + 0.055 + rng.normal(0, 0.002, 25),
                      "far": base - 0.1 + rng.normal(0, 0.02, 25)})
    t = rank_test(v)
    vs = versus_best(t)
    assert t.average.index[0] == "best" and list(vs["method"]) == list(t.average.index[1:])
    pw = pairwise_wilcoxon(t.values[list(t.average.index)])
    for r in vs.itertuples():
        assert r.ci_low <= r.median_diff <= r.ci_high and r.wins + r.ties + r.losses == 25
        assert r.p_holm == pw[(pw.a == "best") & (pw.b == r.method)]["p_holm"].iloc[0]
    far = vs.set_index("method").loc["far"]
    assert far["p_best_better"] > 0.99 and far["wins"] == 25 and far["median_diff"] > 0.1
    near = vs.set_index("method").loc["near"]
    assert near["p_equivalent"] > 0.9   # within 0.01 on every set
    text = " ".join(summary_lines(t))
    assert "Wilcoxon signed-rank tests with Holm's correction separate" in text
    assert "by Iman and Davenport's F rejects" in text and "best against each other method" in text
    assert "best against each other method" not in " ".join(summary_lines(t, pairs=False))


def test_ranks_on_each_papers_own_sets_are_the_whole_ranks_averaged_over_them():
    """By hand: the ranks of the whole comparison averaged over a paper's sets (not a new ranking of
    those sets alone), the best of each paper named with ties, and a method named like a paper on its
    sets and on the others, the others' average equal to a direct average over them."""
    from mkclust.repro.reporting.ranks import paper_lines, paper_ranks, rank_test
    v = pd.DataFrame({"A": [0.9, 0.5, 0.7, 0.6], "B": [0.8, 0.9, 0.7, 0.9], "C": [0.1, 0.2, 0.3, 0.95]},
                     index=["d1", "d2", "d3", "d4"])
    t = rank_test(v, "acc")
    papers = paper_ranks(t, {"A": ["d1", "d3"], "X": ["d2", "d4"], "Y": ["nowhere"]})
    assert list(papers) == ["A", "X"] and papers["A"][0] == 2
    assert papers["A"][1].to_dict() == {"A": 1.25, "B": 1.75, "C": 3.0}   # d3: A and B tie at 1.5
    assert papers["X"][1].to_dict() == {"A": 2.5, "B": 1.5, "C": 2.0}     # d4: C 1, B 2, A 3
    lines = paper_lines(t, papers)
    assert lines[0] == ("Best average rank on each paper's own data sets (acc; descriptive, no test within one "
                        "paper's sets): A's 2 sets: A (1.25); X's 2 sets: B (1.50).")
    other = t.ranks.loc[["d2", "d4"], "A"].mean()
    assert other == 2.5 and lines[1] == ("A paper's own method, average rank on that paper's sets and on the "
                                         "others: A 1.25 on its 2 and 2.50 on the other 2.")
    # by source: A's block ranks A 1, B 2, C 3; X's block B 1, C 2, A 3
    assert lines[2].endswith("so no paper counts more for having more sets): B 1.50, A 2.00, C 2.50.")
    tie = paper_lines(t, {"Z": (1, t.ranks.loc[["d3"]].mean())})
    assert tie == ["Best average rank on each paper's own data sets (acc; descriptive, no test within one paper's "
                   "sets): Z's 1 set: B and A (1.50)."]   # B before A: the overall order (B 1.625, A 1.875)


def test_cpu_seconds_per_fit_count_only_runs_that_finished():
    """A method that declines a large set in a hundredth of a second (GMMC above max_n) is not made
    the cheapest by it: its median is over the fits it made."""
    from mkclust.repro.reporting.ranks import column_seconds
    rows = [{"dataset": "d", "algorithm": "G", "seed": s, "status": "ok", "cpu_seconds": 5.0} for s in range(2)]
    rows += [{"dataset": "big", "algorithm": "G", "seed": s, "status": "not_finished", "cpu_seconds": 0.01}
             for s in range(3)]
    rows += [{"dataset": "d", "algorithm": "K", "seed": s, "status": "ok", "cpu_seconds": 1.0} for s in range(2)]
    seconds = column_seconds(frame(rows), {"columns": {"G": {"algorithm": "G"}, "K": {"algorithm": "K"}}})
    assert seconds.to_dict() == {"G": 5.0, "K": 1.0}


def test_a_ranked_table_read_back_gives_its_test_and_its_methods_cpu_seconds(tmp_path):
    """The rank rows carry each method's median CPU seconds per fit, so a summary made from the written
    table alone (README, docs/benchmark.md) names the cheapest of the best group as the legend does."""
    from mkclust.repro.reporting.ranks import ranking, summary_lines, with_rank_rows
    from mkclust.repro.reporting.tables import read_tables
    runs = frame([{"dataset": d, "algorithm": c, "param_id": "default", "seed": 0, "acc": v}
                  for d, vals in (("a", (.9, .8, .1)), ("b", (.7, .9, .2)), ("c", (.8, .7, .3)))
                  for c, v in zip(("F", "S", "W"), vals)])
    tidy = build_table(runs, {"metrics": ["acc"]})
    tidy, legend = with_rank_rows(tidy, ["acc"], seconds=pd.Series({"F": 9.0, "S": 0.5, "W": 1.0}),
                                  paper_sets={"F": ["a", "c"], "P": ["b"], "Q": ["z"]})
    write_table(tidy, str(tmp_path / "t"), "T")
    test, seconds, papers = ranking(read_tables({"t": tmp_path / "t.csv"})["t"], "acc")
    assert test.average.to_dict() == {"F": pytest.approx(4 / 3), "S": pytest.approx(5 / 3), "W": 3.0}
    assert seconds.to_dict() == {"F": 9.0, "S": 0.5, "W": 1.0}
    assert list(papers) == ["F", "P"] and papers["F"][0] == 2 and papers["F"][1].to_dict() == {"F": 1.0, "S": 2.0,
                                                                                               "W": 3.0}
    assert summary_lines(test, seconds, papers) == legend
    assert any(line.startswith("Cheapest of the best group: S (median 0.5 CPU s") for line in legend)


def test_the_readme_benchmark_summary_of_a_partial_archive_counts_what_is_missing(tmp_path):
    """While groups are missing (stale ones besides), the README's benchmark block says how many and
    shows no ranking; ``mkclust results --readme`` writes it between the benchmark's markers only."""
    import json

    from mkclust.repro.cli.results import main
    from mkclust.repro.reporting.results import BENCH_BEGIN, BENCH_END, BEGIN, DOC_BEGIN, DOC_END, END
    summary = {"date": "d", "commit": "c", "experiments": [{"experiment": "benchmark", "paper": "benchmark"}],
               "papers": {"benchmark": {"headline": "all_defaults"}},
               "archive": {"path": "results/benchmark", "left_out": 3, "stale": 1, "pieces": [{}, {}]}}
    (tmp_path / "run_summary.json").write_text(json.dumps(summary))
    readme = tmp_path / "README.md"
    readme.write_text(f"a\n{BEGIN}\npapers\n{END}\nb\n{BENCH_BEGIN}\nold\n{BENCH_END}\nc\n")
    doc = tmp_path / "benchmark.md"
    doc.write_text(f"x\n{DOC_BEGIN}\nold\n{DOC_END}\ny\n")
    assert main(["--figures", str(tmp_path), "--pages", "results/benchmark/pages", "--readme", str(readme),
                 "--doc", str(doc)]) == 0
    text = readme.read_text()
    assert f"{BEGIN}\npapers\n{END}" in text and "old" not in text
    block = text.split(BENCH_BEGIN)[1].split(BENCH_END)[0]
    assert ("`results/benchmark`, 2 pieces): being computed, 3 run groups of the configuration not in the archive "
            "yet and 1 to be computed again;") in block
    assert "average rank (" not in block and "![" not in block
    section = doc.read_text()   # the document's results section says the same, between its own markers
    assert section.startswith("x\n") and section.endswith("\ny\n") and "old" not in section
    assert ("The benchmark is being computed, 3 run groups of the configuration not in the archive yet and 1 to be "
            "computed again;") in section and "![" not in section


def test_stale_benchmark_groups_alone_keep_the_ranking_and_are_named():
    """A whole archive with stale groups (code changed since; their rows stay) is ranked, with a sentence
    counting them; missing groups still withhold the ranking."""
    from mkclust.repro.reporting.results import _missing, _stale

    assert _missing({"left_out": 0, "stale": 100}) == "" and _missing({"left_out": 2, "stale": 0}).startswith(
        "being computed, 2 run groups")
    assert _stale({"left_out": 0, "stale": 100}).startswith(" 100 of its run groups come from code that has changed")
    assert _stale({"left_out": 0, "stale": 0}) == "" and _stale(None) == ""


def test_rank_rows_of_a_table_with_too_few_methods_say_why_instead_of_failing():
    """A benchmark table rebuilt from a partial archive can hold one method only: no rank rows, and
    the legend says why (the table is still written)."""
    from mkclust.repro.reporting.ranks import RANK_ROW, with_rank_rows
    tidy = pd.DataFrame({"dataset": ["a", "b"], "column": ["KKM", "KKM"], "metric": ["acc", "acc"],
                         "value": [0.7, 0.8], "seeds_rule": "mean", "params_rule": "only", "oracle": False})
    out, lines = with_rank_rows(tidy, ["acc"])
    assert not (out["dataset"] == RANK_ROW).any()
    assert lines and lines[0].startswith("No ranking on acc: ranking needs at least 2 methods")
    from mkclust.repro.reporting.learned import with_learned_rows   # a table without any run yet
    empty = tidy.iloc[0:0]
    assert with_rank_rows(empty, ["acc"])[1] == ["No ranking on acc: the table has no runs."]
    assert with_learned_rows(empty, {"MKKM": "KKM"})[1][0].startswith("No comparison of learned and average")


def test_a_table_or_verdict_job_imports_neither_matplotlib_nor_scipy_stats():
    """The modules of the table, verdict and summary scripts load neither (about 1.5 s of a job's start);
    a rank table's statistics and the critical-difference diagram load them where they are used."""
    import subprocess
    import sys

    mods = ("mkclust.repro.reporting, mkclust.repro.reporting.ranks, mkclust.repro.reporting.reference_run, "
            "mkclust.repro.reporting.pages, mkclust.repro.reporting.verdicts, mkclust.repro.reporting.tables")
    probe = "print('matplotlib.pyplot' in sys.modules, 'scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", f"import sys; import {mods}; {probe}"], capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    use = ("import pandas as pd; from mkclust.repro.reporting.ranks import rank_test; "
           "from mkclust.repro.reporting.figures import cd_diagram; "
           "cd_diagram(rank_test(pd.DataFrame({'a': [1., 2.], 'b': [2., 1.], 'c': [3., 0.]})))")
    out = subprocess.run([sys.executable, "-c", f"import sys; {use}; {probe}"], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["True", "True"]


def test_rank_against_cost_and_ranks_by_group_by_hand():
    """The Pareto front of (cost, rank) by hand, group ranks as the whole ranking's ranks averaged over
    each group's sets, and both figures drawn from runs (their points are the table's ranks)."""
    from mkclust.repro.reporting.rank_figures import group_ranks, pareto_front
    cost = pd.Series({"A": 1.0, "B": 10.0, "C": 5.0, "D": 0.5})
    rank = pd.Series({"A": 2.0, "B": 1.0, "C": 3.0, "D": 2.0})
    assert pareto_front(cost, rank) == ["D", "B"]   # A: D has its rank cheaper; C: A beats it on both
    ranks = pd.DataFrame({"A": [1, 2, 3], "B": [2, 1, 1], "C": [3, 3, 2]}, index=["x", "y", "z"], dtype=float)
    g = group_ranks(ranks, {"one": ["x"], "two": ["y", "z", "absent"], "none": ["q"]})
    assert list(g.columns) == ["one (1)", "two (2)"] and list(g.index) == ["B", "A", "C"]
    assert g.loc["A"].tolist() == [1.0, 2.5] and g.loc["C", "two (2)"] == 2.5
    rows = [{"dataset": d, "algorithm": c, "param_id": "default", "seed": 0, "acc": v, "cpu_seconds": t}
            for d, vals in (("x", (.9, .8, .1)), ("y", (.7, .9, .2)), ("z", (.8, .7, .3)))
            for c, v, t in zip("ABC", vals, (1.0, 2.0, 0.5))]
    spec = {"columns": {c: {"algorithm": c} for c in "ABC"}, "metric": "acc"}
    fig = make_figure(frame(rows), {**spec, "kind": "rank_cost", "title": "t"})
    xs, ys = fig.axes[0].collections[0].get_offsets().T
    assert sorted(zip(xs, ys)) == [(0.5, 3.0), (1.0, 4 / 3), (2.0, 5 / 3)]
    fig2 = make_figure(frame(rows), {**spec, "kind": "ranks_by", "by": {"g": ["x", "y"]}})
    assert fig2.axes[0].images[0].get_array().shape == (3, 2)


def test_learned_against_average_rows_by_hand(tmp_path):
    """with_learned_rows: per pair the median difference over the sets both have, wins/ties/losses,
    Holm over the pairs, the Bayesian probabilities (a learned method 0.05 better everywhere: P = 1/0/0),
    and a sentence the table's CSV alone regenerates; the rows stay out of the ranking."""
    from mkclust.repro.reporting.learned import learned_line, with_learned_rows
    from mkclust.repro.reporting.pairwise import holm, wilcoxon_p
    from mkclust.repro.reporting.ranks import LEARNED_ROW, ranking, with_rank_rows
    from mkclust.repro.reporting.tables import read_tables
    base = np.linspace(0.5, 0.9, 8)
    vals = {"KKM": base, "MKKM": base + 0.05, "SC": base, "AASC": base - np.r_[0.02, -0.01, 0.0, 0.03, 0, 0, 0, 0]}
    rows = [{"dataset": f"d{i}", "algorithm": c, "param_id": "default", "seed": 0, "acc": v[i]}
            for c, v in vals.items() for i in range(8)]
    tidy = build_table(frame(rows), {"metrics": ["acc"]})
    tidy, _ = with_rank_rows(tidy, ["acc"])
    out, lines = with_learned_rows(tidy, {"MKKM": "KKM", "AASC": "SC"})
    got = out[out["dataset"] == LEARNED_ROW].set_index("column")
    d = np.round(vals["AASC"] - vals["SC"], 3)
    assert got.loc["MKKM", "value"] == pytest.approx(0.05) and got.loc["AASC", "value"] == pytest.approx(np.median(d))
    assert got["p_value"].tolist() == pytest.approx(holm([wilcoxon_p(np.full(8, 0.05)), wilcoxon_p(d)]).tolist())
    assert got.loc["MKKM", "chosen"].startswith("MKKM against KKM +0.050 [+0.050, +0.050], 8/0/0") and \
        got.loc["MKKM", "chosen"].endswith("P = 1/0/0")
    assert ", 1/5/2, " in got.loc["AASC", "chosen"]
    assert lines == [learned_line(out)] and lines[0].startswith("Learning the kernel weights against the same method")
    write_table(out, str(tmp_path / "t"), "T")
    back = read_tables({"t": tmp_path / "t.csv"})["t"]
    assert learned_line(back) == lines[0] and ranking(back)[0].n_datasets == 8


def test_timing_small_multiples_draw_one_panel_per_algorithm_in_the_specs_order():
    """panels: true: a panel per algorithm in the spec's order, titled with its slope, the others' medians
    in grey behind it (one grey line per other algorithm)."""
    rows = [{"dataset": f"d{n}", "algorithm": a, "param_id": "default", "seed": s, "n": n, "status": "ok",
             "cpu_seconds": c * n ** k} for a, c, k in (("A", 1e-4, 2.0), ("B", 1e-3, 1.0), ("C", 1e-5, 3.0))
            for n in (100, 200, 400) for s in range(2)]
    fig = make_figure(frame(rows), {"kind": "timing", "algorithm": ["C", "A", "B"], "x": "n", "panels": True})
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in axes] == ["C, slope 3.00", "A, slope 2.00", "B, slope 1.00"]
    assert all(sum(line.get_color() == "0.85" for line in ax.get_lines()) == 2 for ax in axes)


def test_sets_no_method_beats_one_cluster_on_are_flagged_and_ranked_apart(tmp_path):
    """``trivial: true``: a set where the best column's accuracy is within 0.01 of the largest class's
    share (t: .710 against .700, the boundary) is flagged, kept in the table, left out of the main
    ranking and ranked apart in one line; a set whose runs record no share (u, an older archive) is
    not judged; the written table read back gives the same ranking and line."""
    from mkclust.repro.reporting.ranks import APART_ROW, apart_line, ranking, with_rank_rows
    from mkclust.repro.reporting.tables import TRIVIAL, read_tables, trivial_sets
    values = {"a": (.9, .8, .6, .5), "b": (.8, .9, .7, .5), "c": (.9, .7, .6, .5), "t": (.70, .705, .71, .70),
              "u": (.3, .2, .1, math.nan)}
    runs = frame([{"dataset": d, "algorithm": m, "param_id": "default", "seed": 0, "acc": v, "majority_share": share}
                  for d, (*vals, share) in values.items() for m, v in zip("ABC", vals)])
    spec = {"metrics": ["acc"], "trivial": True}
    tidy = build_table(runs, spec)
    assert trivial_sets(tidy, runs) == ["t"]
    assert set(tidy.loc[tidy["flags"] == TRIVIAL, "dataset"]) == {"t"} and "t" in set(tidy["dataset"])
    ranked, lines = with_rank_rows(tidy, ["acc"])
    main = ranked[(ranked["dataset"] == "average rank") & (ranked["metric"] == "acc")].set_index("column")["value"]
    assert main.to_dict() == {"A": 1.25, "B": 1.75, "C": 3.0} and set(ranked["n_runs"][ranked["dataset"] ==
                                                                                       "average rank"]) == {4}
    apart = ranked[ranked["dataset"] == APART_ROW].set_index("column")["value"]
    assert apart.to_dict() == {"C": 1.0, "B": 2.0, "A": 3.0}
    said = [ln for ln in lines if "one cluster" in ln]
    assert len(said) == 1 and said[0].startswith("Ranked apart: on 1 data set (t) no method's accuracy beats")
    write_table(ranked, str(tmp_path / "t"), "T")
    back = read_tables({"t": tmp_path / "t.csv"})["t"]
    assert ranking(back, "acc")[0].average.to_dict() == main.to_dict()
    assert apart_line(back, "acc")[1] == said[0]
    md = (tmp_path / "t.md").read_text()
    assert f"t [{TRIVIAL}]" in md and md.count(f"[{TRIVIAL}]:") == 1
    with pytest.raises(ValueError, match="needs acc"):
        build_table(runs.assign(nmi=runs["acc"]), {"metrics": ["nmi"], "trivial": True})


def test_label_free_against_oracle_rows_are_a_second_kind_of_pair(tmp_path):
    """label_free_vs_oracle: rows of their own label (out of any ranking), the difference label-free -
    oracle (here the silhouette picks the worse kernel on 3 of 6 sets, by 0.1), and a sentence of its
    own that the written table regenerates beside the learned-vs-average one."""
    from mkclust.repro.reporting.learned import learned_line, with_pair_rows
    from mkclust.repro.reporting.ranks import LABEL_FREE_ROW, values_from_table
    from mkclust.repro.reporting.tables import read_tables
    rows = [{"dataset": f"d{i}", "algorithm": "K-t", "param_id": pid, "seed": 0, "acc": acc + 0.01 * i,
             "silhouette": sil if i < 3 else -sil}
            for i in range(6) for pid, acc, sil in (("kernel=0", 0.8, 0.1), ("kernel=1", 0.7, 0.3))]
    cols = {f"K:{by}": {"algorithm": "K-t", "params": "best_param_by_metric", "select_by": by}
            for by in ("silhouette", "acc")}
    tidy = build_table(frame(rows), {"metrics": ["acc"], "columns": cols})
    out, lines = with_pair_rows(tidy, {"K:silhouette": "K:acc"}, "acc", "label_free_vs_oracle")
    got = out[out["dataset"] == LABEL_FREE_ROW].set_index("column")
    assert got.loc["K:silhouette", "value"] == pytest.approx(-0.05)   # median of three -0.1 and three 0
    assert ", 0/3/3, " in got.loc["K:silhouette", "chosen"]
    assert lines[0].startswith("Each grid's setting chosen without labels") and "P(label-free better" in lines[0]
    assert LABEL_FREE_ROW not in set(values_from_table(out, "acc").index)
    write_table(out, str(tmp_path / "t"), "T")
    assert learned_line(read_tables({"t": tmp_path / "t.csv"})["t"]) == lines[0]


def _budget_runs():
    """Runs of ODMC (at and below its budget max_iter: the run's own, else the default 2000), LG-MMC (at and
    below max_labels' default 50) and KM (no budget)."""
    rows = []
    for seed in range(4):
        rows += [{"dataset": "a", "algorithm": "ODMC", "estimator": "odmc", "param_id": "lam=1", "seed": seed,
                  "n_iter": 2000 if seed < 3 else 450, "acc": 0.9, "nmi": 0.5},
                 {"dataset": "a", "algorithm": "ODMC", "estimator": "odmc", "param_id": "lam=2", "seed": seed,
                  "param.max_iter": 100, "n_iter": 100 if seed < 1 else 60, "acc": 0.7, "nmi": 0.6},
                 {"dataset": "a", "algorithm": "LG-MMC", "estimator": "lgmmc", "param_id": "C=1", "seed": seed,
                  "n_iter": 50 if seed % 2 else 7, "acc": 0.8, "nmi": 0.4},
                 {"dataset": "a", "algorithm": "KM", "estimator": "km", "param_id": "default", "seed": seed,
                  "n_iter": 300, "acc": 0.6, "nmi": 0.3}]
    for r in rows:
        r.update(objective=0.0, status="ok", reason="")
    return frame(rows)


BUDGET_SPEC = {"metrics": ["acc", "nmi"], "params": "best_param_by_metric", "select_by": "each",
               "columns": {c: {"algorithm": c} for c in ("ODMC", "LG-MMC", "KM")}}


def test_a_cell_says_which_share_of_its_runs_stopped_at_their_budget(tmp_path):
    """ODMC's runs at n_iter = max_iter and LG-MMC's at max_labels stopped at their budget: the cell carries
    the share of the runs behind its value (the chosen set's, or the set chosen for each metric), marked ‡
    with the legend; a method without a budget gets no mark."""
    rows, spec = _budget_runs(), BUDGET_SPEC
    tidy = build_table(rows, spec).set_index(["column", "metric"])["at_budget"]
    assert tidy[("ODMC", "acc")] == 0.75 and tidy[("ODMC", "nmi")] == 0.25   # lam=1 for acc, lam=2 for nmi
    assert tidy[("LG-MMC", "acc")] == 0.5 and math.isnan(tidy[("KM", "acc")])
    mean = build_table(rows, {**spec, "params": "mean", "select_by": None})
    assert mean.set_index(["column", "metric"]).loc[("ODMC", "acc"), "at_budget"] == 0.5
    write_table(build_table(rows, spec), str(tmp_path / "t"), "T")
    md = (tmp_path / "t.md").read_text()
    assert "‡75%" in md and "‡25%" in md and "‡50%" in md and "stopped at their budget" in md
    km_cells = [line.rstrip(" |").rsplit("|", 1)[1] for line in md.splitlines() if line.startswith("| a ")]
    assert [c.strip() for c in km_cells] == ["0.600 ± 0.000 †", "0.300 ± 0.000 †"]


def test_the_budget_column_rule_aggregate_writes_gives_the_same_cells_and_a_table_job_imports_no_estimator(
        tmp_path):
    """Rule aggregate writes each run's stopped_at_budget once per experiment (1.0, 0.0, empty without a
    budget); the cells built from that column, read back from its CSV, equal those computed from the
    estimators, and building them imports neither an estimator nor scikit-learn (about 2.5 s a table job), also
    where a cell's parameter set is chosen by a score (mkclust.metrics imports scikit-learn lazily)."""
    import json
    import subprocess
    import sys

    from mkclust.repro.records import AT_BUDGET, stopped_at_budget

    runs = _budget_runs()
    column = stopped_at_budget(runs)
    assert column[runs["estimator"] == "km"].isna().all()
    assert column[runs["estimator"] == "odmc"].tolist() == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    runs.assign(**{AT_BUDGET: column}).to_csv(tmp_path / "results.csv", index=False)
    computed = build_table(runs, BUDGET_SPEC)
    script = (f"import sys, json\nfrom mkclust.repro.reporting import build_table, read_results\n"
              f"t = build_table(read_results([{str(tmp_path / 'results.csv')!r}]), json.loads(sys.argv[1]))\n"
              f"t.to_csv(sys.argv[2], index=False)\n"
              f"build_table(read_results([{str(tmp_path / 'results.csv')!r}]), {{**json.loads(sys.argv[1]), "
              f"'select_by': None}})\n"   # each cell's parameter set chosen by acc (reads the label-free names)
              f"print(sorted(m for m in sys.modules if m.startswith(('sklearn', 'mkclust.algorithms'))))")
    out = subprocess.run([sys.executable, "-c", script, json.dumps(BUDGET_SPEC), str(tmp_path / "t.csv")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["[]"]
    read = pd.read_csv(tmp_path / "t.csv")
    pd.testing.assert_series_equal(read["at_budget"], computed["at_budget"], check_names=False)
    assert read["at_budget"].notna().sum() == 4   # ODMC's and LG-MMC's cells; KM's none


def test_the_per_parameter_mean_and_std_are_pandas_own_to_the_last_bit():
    """reduce._per_params computes each parameter set's mean and std over its seeds with numpy (no Series
    per set and metric): the same floats as pandas' Series.mean() and Series.std(ddof=1) of each group,
    NaN skipped, for sets of one run, of one finite value, all NaN, and of more than 8 runs (where numpy's
    pairwise sum and a plain running sum part). The pages' CSVs print every digit, so a last bit that
    moved would change a rebuilt page."""
    from mkclust.repro.reporting.reduce import _per_params

    rng = np.random.default_rng(7)
    n = 600
    g = pd.DataFrame({"param_id": rng.choice([f"p{i:02d}" for i in range(17)], n),
                      "acc": rng.random(n) / 3 + 0.5, "nmi": rng.normal(0.4, 0.2, n)})
    g.loc[rng.random(n) < 0.15, "nmi"] = np.nan
    g = pd.concat([g, pd.DataFrame({"param_id": ["one", "nan_but_one", "nan_but_one", "all_nan"],
                                    "acc": [0.3, 0.1, 0.7, 0.2], "nmi": [0.9, np.nan, 0.25, np.nan]})],
                  ignore_index=True).sample(frac=1.0, random_state=3)
    rows = []
    for pid, h in g.groupby("param_id", sort=True):
        row = {"param_id": pid, "n_runs": len(h)}
        for m in ("acc", "nmi"):
            row[m] = h[m].mean()
            row[m + ":std"] = h[m].std(ddof=1) if len(h) > 1 else math.nan
            row[m + ":se"] = row[m + ":std"] / math.sqrt(len(h))
        rows.append(row)
    want = pd.DataFrame(rows)
    got = _per_params(g, ["acc", "nmi"], "mean")
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.set_index("param_id").loc["all_nan", "nmi"] != got.set_index("param_id").loc["all_nan", "nmi"]
    assert math.isnan(got.set_index("param_id").loc["nan_but_one", "nmi:std"])
    # the test tells sums apart: pandas' grouped mean (a compensated sum) differs in the last bits somewhere
    grouped = g.groupby("param_id", sort=True)["acc"].mean().to_numpy()
    assert (grouped != want["acc"].to_numpy()).any()
