"""The cost estimate calibrated on an archive's measured CPU seconds (mkclust.repro.calibration)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mkclust.repro import calibration as CAL

ROOT = Path(__file__).parents[2]


def synthetic(factors: dict | None = None, seed: int = 0) -> pd.DataFrame:
    """Three methods on eight data sets: t = (c0 + a u^b) times a factor per data set."""
    rng = np.random.default_rng(seed)
    truth = {("e", "A"): (0.05, 2.0, 1.3), ("e", "B"): (0.0, 0.5, 0.8), ("e", "C"): (0.2, 1.0, 1.0)}
    rows = []
    for (e, a), (c0, k, b) in truth.items():
        for d in range(8):
            u = float(rng.uniform(0.01, 5.0))
            t = (c0 + k * u ** b) * (factors or {}).get(d, 1.0)
            rows.append((e, a, f"set{d}", u, t))
    return pd.DataFrame(rows, columns=["experiment", "algorithm", "dataset", "u", "t"]), truth


def test_the_curves_are_recovered_where_the_data_sets_add_nothing():
    table, truth = synthetic()
    cal = CAL.fit(table)
    for key, (c0, a, b) in truth.items():
        got = cal.curves[key]
        assert got[1] == pytest.approx(a, rel=1e-3) and got[2] == pytest.approx(b, rel=1e-3)
        assert got[0] == pytest.approx(c0, abs=1e-4)
    r = CAL.ratios(cal, table)
    assert np.allclose(r["ratio"], 1.0, rtol=1e-3)


def test_a_data_set_that_slows_every_method_gets_a_factor_and_stays_within_2x():
    """set3 runs 4x longer for every method (its fits iterate longer than its size says): the shared
    factor takes a large part of it (shrunk by one pseudo-observation), the curves the rest, and
    every (method, data set) ends within 2x."""
    table, _ = synthetic({3: 4.0})
    cal = CAL.fit(table)
    r = CAL.ratios(cal, table)
    assert r["ratio"].between(0.5, 2.0).all()
    others = max(abs(v) for k, v in cal.factors.items() if k[1] != "set3")
    assert cal.factors[("e", "set3")] > max(np.log(1.5), 2 * others)


def test_a_method_slow_on_one_data_set_alone_gets_a_pair_factor_that_prices_its_other_groups():
    """Method A runs 20x longer on set3 and the other methods do not (an iterative method's iteration
    count on one data set): the data set's shared factor and A's curve take part of it, the pair's
    own factor (the largest of all pairs) takes G / (G + 1) of what is left, so with G = 5 archived
    groups every pair ends within 2x, while as if not archived yet the pair is outside 2x (what
    the factor is for: pricing that pair's groups not yet run)."""
    table, _ = synthetic()
    slow = (table["algorithm"] == "A") & (table["dataset"] == "set3")
    table.loc[slow, "t"] *= 20.0
    table = table.assign(groups=np.where(slow, 5, 1))
    cal = CAL.fit(table)
    r = CAL.ratios(cal, table)
    assert r["ratio"].between(0.5, 2.0).all()
    assert not r.loc[slow, "ratio_unseen"].between(0.5, 2.0).any()
    assert max(cal.pairs, key=lambda k: abs(cal.pairs[k])) == ("e", "A", "set3")
    assert cal.pairs[("e", "A", "set3")] > np.log(1.5)
    assert r.loc[slow, "ratio"].iloc[0] == pytest.approx(r.loc[slow, "ratio_unseen"].iloc[0] ** (1 / 6), rel=1e-9)


def test_the_backtest_prices_each_piece_from_the_pieces_before_it(monkeypatch):
    """Two pieces of one configuration whose runs take a constant 0.05 s each, where the class models
    say otherwise: the first piece is priced by the class models alone, the second by the first's
    calibration, which has seen every method and data set of it and prices its groups exactly."""
    import yaml
    from mkclust.repro.planning import plan
    p = plan(yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text()))
    groups = p.run_groups()
    pairs: dict = {}
    for g in groups:
        pairs.setdefault(g[:3], []).append(g)
    first = [gs[0] for gs in pairs.values() if len(gs) > 1]
    second = [gs[1] for gs in pairs.values() if len(gs) > 1]

    def frame(gs):
        return pd.DataFrame([{"experiment": r.experiment, "algorithm": r.algorithm, "dataset": r.dataset,
                              "bank": r.bank, "param_id": r.param_id, "seed": r.seed, "n": 100, "n_clusters": 2,
                              "status": "ok", "cpu_seconds": 0.05} for g in gs for r in groups[g]])
    monkeypatch.setattr(CAL, "_piece_frames", lambda archive: [("a", [frame(first)]), ("b", [frame(second)])])
    bt = CAL.backtest("unused", p)
    a, b = bt[bt["piece"] == "a"], bt[bt["piece"] == "b"]
    assert len(a) == len(first) and len(b) == len(second)
    assert np.allclose(a["estimate"], a["class_model"])
    assert np.allclose(b["estimate"], b["measured"], rtol=1e-3)
    assert not np.allclose(b["class_model"], b["measured"], rtol=0.5)
    assert "pieces within 2x: 1 of 1 (each priced from the pieces before it; class models alone: 0)" \
        in CAL.format_backtest(bt)
    monkeypatch.setattr(CAL, "_piece_frames", lambda archive: [("a", [frame(first)])])
    with pytest.raises(ValueError, match="needs two"):
        CAL.backtest("one piece", p)


def test_group_seconds_keeps_the_class_model_where_the_archive_has_not_seen_the_method():
    cal = CAL.Calibration(curves={("e", "A"): (1.0, 2.0, 1.0)}, factors={("e", "d"): np.log(2.0)})
    runs = [object()] * 4
    assert cal.group_seconds(("e", "A", "d", "b", "g"), runs, 4.0) == pytest.approx(4 * (1 + 2 * 1.0) * 2)
    assert cal.group_seconds(("e", "A", "new", "b", "g"), runs, 4.0) == pytest.approx(4 * 3.0)
    assert cal.group_seconds(("e", "Z", "d", "b", "g"), runs, 4.0) == 4.0
    assert cal.group_seconds(("e", "A", "d", "b", "g"), runs, 0.0) == 0.0      # a declined group stays 0
    cal.ranges[("e", "A")] = (0.5, 2.0)          # beyond the measured range: in proportion to the class model
    assert cal.group_seconds(("e", "A", "new", "b", "g"), runs, 40.0) == pytest.approx(4 * (1 + 2 * 2.0) * 5)
    assert cal.group_seconds(("e", "A", "new", "b", "g"), runs, 0.4) == pytest.approx(4 * (1 + 2 * 0.5) / 5)


def test_the_reference_run_calibrates_within_2x_on_nearly_every_method_and_data_set():
    """On the committed archive: the calibrated estimate without the pairs' own factors (each
    (method, data set) priced as if not archived yet) is within a factor 2 of the measured CPU
    seconds per run on at least 95 % of the archived (method, data set), where the class models alone
    are on about half; with them, on every one."""
    from mkclust.repro.configuration import load
    from mkclust.repro.planning import plan
    archive = ROOT / "results" / "paper"
    p = plan(load(ROOT / "workflow" / "configs" / "paper.yaml"))
    _, r = CAL.from_archive(archive, p)
    inside = r["ratio_unseen"].between(0.5, 2.0).mean()
    assert len(r) > 400 and inside >= 0.95
    assert r["ratio_uncalibrated"].between(0.5, 2.0).mean() < inside
    assert r["ratio"].between(0.5, 2.0).all()     # with each pair's own factor (in sample)


def test_what_the_reference_run_measured_adds_up_to_its_manifests(capsys):
    """``--measured`` on the committed archive: the archived groups and fit CPU of every experiment sum
    to the manifests' (every archived row is a planned run), the stale groups are the archive's, a
    paper is complete exactly when none of its groups is missing or stale."""
    import json
    from mkclust.repro.archive import archived_groups, stale_groups
    from mkclust.repro.cli import main
    from mkclust.repro.configuration import load
    from mkclust.repro.planning import plan
    archive = ROOT / "results" / "paper"
    p = plan(load(ROOT / "workflow" / "configs" / "paper.yaml"))
    t = CAL.measured(archive, p)
    total = t[t["kind"] == "total"].iloc[0]
    mans = [json.loads(m.read_text()) for m in archive.glob("*/manifest.json")]
    assert total["fit_cpu_h"] == pytest.approx(sum(m["fit_cpu_seconds"] for m in mans) / 3600, abs=1e-3)
    assert total["archived"] == len(archived_groups(archive)) and total["stale"] == len(stale_groups(archive))
    exps = t[t["kind"] == "experiment"]
    assert exps["groups"].sum() == len(p.run_groups()) == total["groups"]
    for r in t[t["kind"] == "paper"].itertuples():
        mine = exps[exps["paper"] == r.name]
        assert r.complete == bool(((mine["archived"] == mine["groups"]) & (mine["stale"] == 0)).all())
    assert main(["estimate", str(ROOT / "workflow/configs/paper.yaml"), "--archive", str(archive), "--measured"]) == 0
    out = capsys.readouterr().out
    assert f"{total['fit_cpu_h']:19.2f}" in out.splitlines()[-1] and "complete" in out


def test_a_fit_that_recorded_no_cpu_time_is_floored_not_a_crash():
    """Runs below the clock's resolution record 0 CPU seconds: measured_groups floors them at
    MIN_SECONDS (a finite logarithm), so the calibration fits."""
    import yaml
    from mkclust.repro.planning import plan
    p = plan(yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text()))
    rows = []
    for g, runs in p.run_groups().items():
        for r in runs:
            rows.append({"experiment": r.experiment, "algorithm": r.algorithm, "dataset": r.dataset, "bank": r.bank,
                         "param_id": r.param_id, "seed": r.seed, "n": 100, "n_clusters": 2, "status": "ok",
                         "cpu_seconds": 0.0 if r.algorithm == "KM" else 0.05})
    table = CAL.measured_groups([pd.DataFrame(rows)], p)
    assert (table.loc[table["algorithm"] == "KM", "t"] == CAL.MIN_SECONDS).all()
    r = CAL.ratios(CAL.fit(table), table)
    assert len(r) > 0 and np.isfinite(r["ratio"]).all()


def test_an_archive_without_pieces_calibrates_nothing_and_leaves_the_class_models(tmp_path, capsys):
    """A new archive (results/benchmark before its first piece): the calibration is empty, every
    estimate stays the class model's, and `mkclust archive missing` lists every group with its cost
    instead of failing."""
    from mkclust.repro.cli import main
    from mkclust.repro.configuration import load
    from mkclust.repro.planning import plan
    p = plan(load(ROOT / "tests/configs/tiny.yaml"))
    cal, table = CAL.from_archive(tmp_path, p)
    assert table.empty and not cal.curves
    g = next(iter(p.run_groups()))
    assert cal.group_seconds(g, p.run_groups()[g], 3.5) == 3.5
    assert main(["archive", "missing", str(tmp_path), str(ROOT / "tests/configs/tiny.yaml")]) == 1
    out = capsys.readouterr().out
    total = len(p.run_groups())
    assert f"{total} of {total} run groups" in out and "by the class models" in out
