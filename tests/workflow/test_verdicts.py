"""A paper's verdict (mkclust.repro.reporting.verdicts): every claim kind on tables and results whose answer is
known, the same comparison on the published values, and the plan's checks of a claim."""

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mkclust.repro.planning import ConfigError, plan
from mkclust.repro.reporting.pages import verdict_markdown, write_verdict
from mkclust.repro.reporting.tables import TIDY_COLUMNS
from mkclust.repro.reporting.verdicts import evaluate, evaluate_claim, fitted_slope

from _wf import TINY


def tidy(cells: dict, published: dict | None = None, oracle=(), vs: dict | None = None) -> pd.DataFrame:
    """A tidy table from {(dataset, column, metric): value}."""
    rows = []
    for (ds, col, m), v in cells.items():
        pub = (published or {}).get((ds, col, m), np.nan)
        rows.append({"dataset": ds, "column": col, "metric": m, "value": v, "std": np.nan, "published": pub,
                     "diff": v - pub, "n_runs": 1, "seeds_rule": "mean", "params_rule": "only",
                     "oracle": col in oracle, "chosen": "", "flags": "", "derived": "", "na_reason": "",
                     "vs": (vs or {}).get((ds, col, m), ""), "p_value": np.nan})
    return pd.DataFrame(rows, columns=TIDY_COLUMNS)


GRID = {("A", "X", "acc"): 0.9, ("A", "Y", "acc"): 0.8, ("A", "Z", "acc"): 0.85,
        ("B", "X", "acc"): 0.7, ("B", "Y", "acc"): 0.75, ("B", "Z", "acc"): 0.6,
        ("C", "X", "acc"): 0.5, ("C", "Y", "acc"): 0.4, ("C", "Z", "acc"): np.nan}   # Z not run on C


def test_above_counts_cells_where_the_column_is_best_and_skips_missing_values():
    t = {"t": tidy(GRID)}
    v = evaluate_claim({"claim": "X best", "table": "t", "column": "X", "above": "all"}, t, pd.DataFrame())
    assert (v.held, v.cases, v.holds) == (2, 3, False)
    assert "B acc 0.700 < 0.750 (Y)" in v.numbers
    most = evaluate_claim({"claim": "X best", "table": "t", "column": "X", "above": "all", "need": "most"}, t,
                          pd.DataFrame())
    assert most.holds is True
    # within a tolerance of 0.05 the B cell holds too
    tol = evaluate_claim({"claim": "X close to best", "table": "t", "column": "X", "above": ["Y", "Z"],
                          "tolerance": 0.05}, t, pd.DataFrame())
    assert (tol.held, tol.holds) == (3, True)
    # except leaves a column out
    ex = evaluate_claim({"claim": "X above Z", "table": "t", "column": "X", "above": "all", "except": ["Y"]}, t,
                        pd.DataFrame())
    assert (ex.held, ex.cases) == (2, 2)


def test_the_same_comparison_on_the_published_values_and_the_oracle_mark():
    pub = {("A", "X", "acc"): 0.9, ("A", "Y", "acc"): 0.95, ("B", "X", "acc"): 0.8, ("B", "Y", "acc"): 0.7}
    t = {"t": tidy(GRID, pub, oracle=("Y",))}
    v = evaluate_claim({"claim": "X above Y", "table": "t", "column": "X", "above": ["Y"]}, t, pd.DataFrame())
    assert v.published == "1 of 2" and v.oracle
    assert (v.held, v.cases) == (2, 3)


def test_close_uses_the_absolute_difference():
    t = {"t": tidy({("A", "sub", "acc"): 0.91, ("A", "whole", "acc"): 0.9,
                    ("B", "sub", "acc"): 0.8, ("B", "whole", "acc"): 0.9})}
    v = evaluate_claim({"claim": "c", "table": "t", "column": "sub", "close": "whole"}, t, pd.DataFrame())
    assert (v.held, v.cases, v.holds) == (1, 2, False)
    assert "-0.100" in v.numbers


def test_wins_read_the_tables_paired_tests():
    cells, vs = {}, {}
    for i, ds in enumerate("ABCD"):
        for col in ("ODMC", "P", "Q"):
            cells[(ds, col, "acc")] = 0.5
            vs[(ds, col, "acc")] = "reference" if col == "ODMC" else ("win" if (col == "P" or i == 0) else "tie")
    t = {"t": tidy(cells, vs=vs)}
    v = evaluate_claim({"claim": "w", "table": "t", "column": "ODMC", "wins": ["P", "Q"]}, t, pd.DataFrame())
    assert (v.held, v.cases, v.holds) == (1, 2, False)
    assert "P 4/0/0" in v.numbers and "Q 1/3/0" in v.numbers
    with pytest.raises(ValueError, match="compares against"):
        evaluate_claim({"claim": "w", "table": "t", "column": "P", "wins": ["Q"]}, t, pd.DataFrame())


def timing_results(exponent: float, algorithm="MKC") -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for n in (250, 500, 1000, 2000):
        for seed in range(3):
            rows.append({"experiment": "e", "algorithm": algorithm, "dataset": f"r{n}", "n": n, "seed": seed,
                         "status": "ok", "cpu_seconds": 1e-3 * n ** exponent * (1 + 0.01 * rng.standard_normal()),
                         "diag.avg_cccp_iterations": 5.0 + n / 250})
    return pd.DataFrame(rows)


def test_slope_recovers_a_known_exponent():
    res = timing_results(1.5)
    assert fitted_slope([1, 2, 4], [3, 12, 48]) == pytest.approx(2.0)
    v = evaluate_claim({"claim": "O(n)", "slope": {"algorithm": "MKC", "x": "n"}, "expected": 1}, {}, res)
    assert v.holds is False and "slope 1.50" in v.numbers
    v = evaluate_claim({"claim": "O(n)", "slope": {"algorithm": "MKC", "x": "n"}, "expected": 1, "tolerance": 0.6},
                       {}, res)
    assert v.holds is True


def test_below_uses_the_median_at_every_x():
    res = timing_results(1.0)   # 6, 7, 9, 13 CCCP iterations at n = 250 ... 2000
    v = evaluate_claim({"claim": "< 10", "below": {"algorithm": "MKC", "value": "diag.avg_cccp_iterations"},
                        "limit": 10}, {}, res)
    assert (v.held, v.cases, v.holds) == (3, 4, False)
    assert "n = 2000: 13" in v.numbers


def test_sweep_compares_each_swept_value_with_the_levels_of_a_table():
    t = {"t": tidy({("A", "KKM-a", "nmi"): 0.5, ("A", "KKM-ew", "nmi"): 0.6},
                   {("A", "KKM-a", "nmi"): 0.7, ("A", "KKM-ew", "nmi"): 0.65})}
    res = pd.DataFrame([{"experiment": "e", "algorithm": "R", "dataset": "A", "param.gamma": g, "seed": s,
                         "status": "ok", "nmi": nmi} for g, nmi in ((0.1, 0.9), (0.3, 0.65), (0.5, 0.55))
                        for s in (0, 1)])
    claim = {"claim": "s", "table": "t", "above": ["KKM-a", "KKM-ew"],
             "sweep": {"algorithm": "R", "x": "gamma", "from": 0.3, "to": 0.9, "metric": "nmi"}}
    v = evaluate_claim(claim, t, res)
    assert (v.held, v.cases, v.holds) == (1, 2, False)     # gamma 0.1 is outside [0.3, 0.9]
    assert v.published.startswith("0 of 2")


def test_claims_of_an_experiment_use_its_own_results():
    res = pd.concat([timing_results(1.0), timing_results(3.0).assign(experiment="other")])
    claim = {"claim": "O(n)", "slope": {"algorithm": "MKC", "x": "n"}, "expected": 1, "sources": ["e"]}
    assert evaluate_claim(claim, {}, res).holds is True


def test_a_claim_naming_a_missing_column_or_table_is_an_error():
    t = {"t": tidy(GRID)}
    with pytest.raises(ValueError, match=r"columns \['W'\] are not in table"):
        evaluate_claim({"claim": "c", "table": "t", "column": "X", "above": ["W"]}, t, pd.DataFrame())
    with pytest.raises(ValueError, match="no table 'u'"):
        evaluate_claim({"claim": "c", "table": "u", "column": "X", "above": ["Y"]}, t, pd.DataFrame())
    with pytest.raises(ValueError, match="exactly one of"):
        evaluate_claim({"claim": "c", "table": "t", "column": "X", "above": ["Y"], "close": "Z"}, t, pd.DataFrame())


def test_verdict_files_list_the_gaps_with_their_causes(tmp_path):
    pub = {("A", "X", "acc"): 0.95, ("B", "X", "acc"): 0.71}
    t = tidy(GRID, pub)
    t["cause"] = ["not-yet-explained" if (r.dataset, r.column) == ("A", "X") else "" for r in t.itertuples()]
    t["evidence"] = ""
    tables = {"t": t}
    v = evaluate([{"claim": "X best", "table": "t", "column": "X", "above": "all"}], tables, pd.DataFrame())
    md = verdict_markdown("P", v, tables)
    assert "**0 of 1 claims hold on our runs.**" in md
    assert "t: 1 of 2 cells with a published value" in md and "**not-yet-explained**" in md and "A X acc (-0.050)" in md
    paths = write_verdict(str(tmp_path / "verdict"), "P", v, tables)
    assert all((tmp_path / f"verdict.{e}").stat().st_size > 0 for e in ("csv", "md", "html", "png"))
    assert pd.read_csv(paths[0])["status"].tolist() == ["does not hold"]


def test_a_verdict_says_which_data_sets_are_the_papers_and_which_stand_in():
    """The default configuration runs RMKKM only on stand-ins (digits), MKC on four of its own digit
    sets plus two stand-ins: the verdict's headline and its Data line say so."""
    from mkclust.repro.configuration import load as load_config

    repo = Path(__file__).resolve().parents[2]
    p = plan(load_config(repo / "config.yaml"))
    t = {"t": tidy(GRID)}
    v = evaluate([{"claim": "X best", "table": "t", "column": "X", "above": "all"}], t, pd.DataFrame())
    md = verdict_markdown("RMKKM", v, t, p.paper_data("rmkkm"))
    assert "claims hold on our runs, on stand-in data sets, none of them the paper's own" in md
    assert "`rmkkm_embedded`: stand-ins only 2 (digits, digits_views)" in md
    md = verdict_markdown("MKC", v, t, p.paper_data("mkc"))
    assert "**0 of 1 claims hold on our runs.**" in md
    assert ("`baselines_digits`: the paper's own data sets 4 (digits1v7, digits2v7, digits0689, digits1279); "
            "stand-ins 2 (ringnorm_1000, digits)") in md
    paper = plan(load_config(repo / "workflow/configs/paper.yaml"))
    assert all(not d["stand_in"] for d in paper.paper_data("rmkkm") + paper.paper_data("mkc"))
    assert [d["own"] for d in paper.paper_data("gumkl")] == [[]]   # Corel D1-D5 are not obtainable


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["experiments"]["tiny"]["claims"].append({"claim": "c", "table": "nope", "column": "KM",
                                                          "above": ["NC"]}),
     "table 'nope' is not a table of paper tinypaper"),
    (lambda c: c["experiments"]["tiny_timing"]["claims"].append({"claim": "c", "slope": {"algorithm": "XYZ"},
                                                                 "expected": 1}),
     "algorithm 'XYZ' is not one of paper tinypaper's"),
    (lambda c: c["experiments"]["tiny"]["claims"].append({"claim": "c", "table": "table2", "column": "KM"}),
     "give exactly one of"),
    (lambda c: c["experiments"]["tiny"]["tables"].update({"verdict": {"metrics": ["acc"]}}),
     "reserved for the paper's verdict"),
])
def test_the_plan_checks_claims(mutate, message):
    cfg = copy.deepcopy(yaml.safe_load(TINY.read_text()))
    mutate(cfg)
    with pytest.raises(ConfigError, match=message):
        plan(cfg)


def test_every_configured_claim_is_planned():
    cfg = yaml.safe_load(TINY.read_text())
    p = plan(cfg)
    assert p.verdict_papers() == ["tinypaper"]
    assert [c["claim"] for c in p.claims("tinypaper")] == [c["claim"] for e in cfg["experiments"].values()
                                                         for c in e.get("claims", [])]
    assert "figures/tinypaper/verdict.md" in p.targets.verdict_targets()


def test_the_readme_results_section_is_generated_from_a_runs_outputs(tmp_path):
    from mkclust.repro.cli.results import main as results_cli
    from mkclust.repro.reporting import results as R
    from mkclust.repro.reporting.pages import run_summary, write_summary

    figs = tmp_path / "figures"
    res = {"rmkkm_table2": pd.DataFrame({"dataset": ["YALE", "JAFFE"], "dataset_flags": ["", "f"],
                                         "status": ["ok", "ok"], "cpu_seconds": [3600.0, 1800.0]})}
    # the paper's name and headline table come from the configuration's papers: (the protocol files')
    cfg = {"experiments": {"rmkkm_table2": {"paper": "rmkkm", "datasets": ["YALE", "JAFFE"]}},
           "papers": {"rmkkm": {"name": "RMKKM", "headline": "table2_mean"}, "other": {"name": "Not run"}}}
    write_summary(str(figs / "run_summary"), run_summary(res, cfg, ["paper.yaml", "paper_results.yaml"], tmp_path))
    t = {"table2_mean": tidy(GRID)}
    write_verdict(str(figs / "rmkkm" / "verdict"), "RMKKM",
                  evaluate([{"claim": "X best", "table": "table2_mean", "column": "X", "above": "all"}], t,
                           pd.DataFrame()), t)
    (figs / "rmkkm" / "table2_mean.md").write_text("**title**\n\n| dataset | X |\n|---|---|\n| A | 0.9 |\n\nlegend\n")
    t["table2_mean"].to_csv(figs / "rmkkm" / "table2_mean.csv", index=False)
    full = {"experiments": {"rmkkm_table2": {"datasets": ["YALE", "JAFFE", "ORL"]}}}
    text = R.section(figs, full)
    assert "## RMKKM: 0 of 1 claims hold" in text
    assert "| X best | does not hold | 2 of 3 (need all)." in text
    assert "not run here: ORL (1 of 3)" in text and "1.50 h of fit CPU" in text
    assert "| A | 0.9 |" in text and "legend" not in text
    full["experiments"]["rmkkm_table2"]["paper"] = "rmkkm"
    readme, page = tmp_path / "README.md", tmp_path / "docs" / "results.md"
    page.parent.mkdir()
    readme.write_text(f"head\n{R.BEGIN}\nstale text\n{R.END}\ntail\n")
    assert results_cli(["--figures", str(figs), "--readme", str(readme), "--output", str(page),
                        "--pages", "res/pages"]) == 0
    new = readme.read_text()
    assert new.startswith("head\n") and new.endswith("\ntail\n") and "stale text" not in new
    assert "| RMKKM | 0 of 1 | 2 | 1.50 | [verdict](res/pages/rmkkm/verdict.md) |" in new
    assert "1.50 h in all." in new
    assert "[docs/results.md](docs/results.md)" in new
    whole = page.read_text()
    assert whole.startswith("# Results\n") and "X best" in whole and R.BEGIN not in whole
    assert "[res/pages/rmkkm/verdict.md](../res/pages/rmkkm/verdict.md)" in whole   # links from docs/
    block = R.summary_block(figs, full, "res/pages")
    assert "| RMKKM | 0 of 1 | 2 of 3 | 1.50 | [verdict](res/pages/rmkkm/verdict.md) |" in block   # ORL not covered
    from mkclust._cli import run_tool     # a missing run: one line and status 2, as the command ends
    assert run_tool(results_cli, ["--figures", str(tmp_path / "nothing")], "mkclust results") == 2


@pytest.mark.parametrize("path", ["config.yaml", "workflow/configs/paper.yaml"])
def test_both_configurations_give_every_paper_a_verdict(path):
    from _wf import REPO

    from mkclust.repro.configuration import load

    p = plan(load(REPO / path))
    assert sorted(p.verdict_papers()) == ["gumkl", "mkc", "odmc", "rmkkm", "scmk"]
    for paper in p.verdict_papers():
        assert len(p.claims(paper)) >= 2, paper


def test_job_cpu_time_sums_the_benchmark_files(tmp_path):
    from mkclust.repro.reporting.pages import job_cpu_seconds

    assert job_cpu_seconds(tmp_path) is None
    for i, cpu in enumerate((1.5, 2.25)):
        f = tmp_path / "runs" / f"b{i}.tsv"
        f.parent.mkdir(exist_ok=True)
        f.write_text("s\th:m:s\tmax_rss\tcpu_time\n3.0\t0:00:03\t100\t%s\n" % cpu)
    assert job_cpu_seconds(tmp_path) == pytest.approx(3.75)


def test_a_claim_whose_columns_were_left_out_is_not_evaluated_only_in_a_partial_rebuild(tmp_path):
    from mkclust.repro.reporting.figures import make_figure
    claims = [{"claim": "X best", "table": "t", "column": "X", "above": "all"},
              {"claim": "W best", "table": "t", "column": "W", "above": ["X"]}]
    t = {"t": tidy(GRID)}
    with pytest.raises(ValueError, match=r"columns \['W'\] are not in table"):
        evaluate(claims, t, pd.DataFrame())                     # a configuration error stays an error
    v = evaluate(claims, t, pd.DataFrame(), partial=True)
    assert list(v["status"]) == ["does not hold", "not evaluated"]
    assert "columns ['W'] are not in table" in v["numbers"].iloc[1] and "left out" in v["numbers"].iloc[1]
    md = verdict_markdown("T", v, t)
    assert "0 of 2 claims hold on our runs (1 not evaluated)" in md
    # a table with no cells at all (every group left out): its claims are not evaluated, not a crash
    close = [{"claim": "S close to W", "table": "e", "column": "S", "close": "W"}]
    from mkclust.repro.reporting.tables import TIDY_COLUMNS
    v = evaluate(close, {"e": pd.DataFrame(columns=TIDY_COLUMNS)}, pd.DataFrame(), partial=True)
    assert list(v["status"]) == ["not evaluated"] and "are not in table 'e' ([])" in v["numbers"].iloc[0]
    with pytest.raises(ValueError, match="no runs to plot"):
        make_figure(pd.DataFrame(), {"kind": "bars"})
    fig = make_figure(pd.DataFrame(), {"kind": "bars", "title": "B"}, "No runs: left out.")
    assert "No runs: left out." in [t.get_text() for t in fig.axes[0].texts]
