"""The results archive (mkclust.repro.archive): the tiny configuration's run archived, then every table and
verdict rebuilt from the archive alone in a fresh folder, byte for byte; missing groups named or
left out; a tampered file detected; a rerun compared with the archive run by run."""

import gzip
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mkclust.repro.archive import (archive_files, archived_groups, carry_kept, compare_runs, drop_groups,
                                   mark_stale, missing_groups, records_file, stale_groups, write_piece)
from mkclust.repro.reporting.pieces import PIECES_BEGIN, PIECES_END, pieces_markdown, write_pieces_block
from mkclust.repro.cli.archive import main as archive_cli
from mkclust.repro.configuration import load as load_config
from mkclust.repro.planning import plan

from _wf import TINY, new_workdir, smk

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def tiny_plan(tiny_local):
    """The tiny configuration as run by ``tiny_local``, with its data folder."""
    wd = tiny_local[0]
    cfg = load_config(TINY)
    cfg["data_dir"] = str(wd / "data")
    return plan(cfg), wd


@pytest.fixture(scope="module")
def archive(tiny_plan, tmp_path_factory):
    p, wd = tiny_plan
    root = tmp_path_factory.mktemp("archive") / "tiny"
    write_piece(root, "all", p, wd / "data", [TINY])
    return root


def test_a_piece_holds_every_complete_group_with_its_manifest(archive, tiny_plan):
    p, _ = tiny_plan
    man = json.loads((archive / "all" / "manifest.json").read_text())
    assert sorted(man["groups"]) == sorted("/".join(g) for g in p.run_groups())
    assert man["runs"] == len(p.runs) and man["fit_cpu_seconds"] > 0
    assert {"numpy", "scikit-learn"} <= set(man["versions"]) and man["configfiles"][0]["sha256"]
    assert missing_groups(p, archive) == []
    for name in man["files"]:                     # no label vectors, and the bytes do not depend on the time
        text = gzip.decompress((archive / "all" / name).read_bytes()).decode()
        assert "labels" not in text.splitlines()[0].split(",")
    again = archive.parent / "again"
    write_piece(again, "all", p, tiny_plan[1] / "data", [TINY])
    assert all((again / "all" / f).read_bytes() == (archive / "all" / f).read_bytes() for f in man["files"])


def test_tables_and_verdicts_rebuilt_from_the_archive_are_byte_identical(archive, tiny_local, tmp_path_factory):
    cfg = yaml.safe_load(TINY.read_text())
    cfg["results_archive"] = str(archive)
    wd = new_workdir(tmp_path_factory, "from_archive", cfg)
    smk(wd)
    assert not (wd / "data" / "runs").exists() and not (wd / "data" / "kernels").exists()   # nothing was fitted
    reference = tiny_local[1]
    files = [f for f in reference.rglob("*") if f.is_file()]
    assert any(f.name == "verdict.md" for f in files) and len(files) > 10
    for f in files:
        rebuilt = wd / "figures" / f.relative_to(reference)
        assert rebuilt.read_bytes() == f.read_bytes(), f"{f.relative_to(reference)} differs"
    # the README's Results section from a rebuild depends on the archive only: what it reads (the verdicts,
    # the run summary) written again, later and elsewhere, gives the same text, which names the archive's
    # piece and not the rebuild's time. A copy of the rebuild with those jobs forced: the tables they read
    # are the byte-identical ones above (a second whole rebuild took 13 jobs, about 40 s)
    from mkclust.repro.reporting.results import section
    again = tmp_path_factory.mktemp("from_archive_again") / "wd"
    shutil.copytree(wd, again, symlinks=True)
    verdicts = sorted(str(f.relative_to(reference).parent / "verdict.md") for f in reference.rglob("verdict.md"))
    first = {v: (again / "figures" / v).stat().st_mtime_ns for v in [*verdicts, "run_summary.json"]}
    smk(again, "--forcerun", "verdict", "run_summary", "--",
        *(f"figures/{v}" for v in verdicts), "figures/run_summary.json")     # what the section reads
    assert all((again / "figures" / v).stat().st_mtime_ns > t for v, t in first.items())   # written again
    text = section(wd / "figures", pages="results/tiny/pages")
    assert text == section(again / "figures", pages="results/tiny/pages")
    man = json.loads((archive / "all" / "manifest.json").read_text())
    assert f"the results archive `{archive}`, rebuilt without fitting (pieces: `all`" in text
    assert f"archived {man['archived']})" in text


def test_a_group_missing_from_the_archive_is_named_or_left_out(tiny_plan, tmp_path_factory, capsys):
    p, wd = tiny_plan
    groups = sorted(p.run_groups())
    gone = next(g for g in groups if g[0] == "tiny" and g[1] == "KKM")
    root = tmp_path_factory.mktemp("partial") / "tiny"
    write_piece(root, "part", p, wd / "data", [TINY], groups=[g for g in groups if g != gone])
    assert missing_groups(p, root) == [gone]
    assert archive_cli(["missing", str(root), str(TINY)]) == 1
    out = capsys.readouterr().out
    assert "1 of " in out and "tiny: 1 (" in out and "CPU h" in out     # with the estimated cost of what is missing
    assert archive_cli(["missing", str(root), str(TINY), "--targets", "/scratch/d"]) == 1
    assert capsys.readouterr().out.split() == [str(records_file("/scratch/d", gone))]   # a snakemake target list
    cfg = yaml.safe_load(TINY.read_text())
    cfg["results_archive"] = str(root)
    out = new_workdir(tmp_path_factory, "partial_run", cfg)
    r = smk(out, "-n", check=False)
    assert r.returncode != 0 and "/".join(gone) in r.stderr + r.stdout
    cfg["archive_partial"] = True
    old = next(g for g in groups if g[0] == "tiny" and g[1] != "KKM")   # archived, and marked to compute again
    mark_stale(root, ["/".join(old)], "its solver changed")
    out = new_workdir(tmp_path_factory, "partial_ok", cfg)
    smk(out, "figures/tinypaper/verdict.md", "figures/run_summary.json")   # what is read below: no figure
    verdict = (out / "figures" / "tinypaper" / "verdict.md").read_text()
    assert "Left out: 1 run group(s) not in the results archive" in verdict and "/".join(gone) in verdict
    assert "To be computed again: 1 run group(s) of the results archive" in verdict
    assert f"{old[1]}, 1 group(s) (its solver changed)" in verdict
    summary = json.loads((out / "figures" / "run_summary.json").read_text())
    assert summary["archive"]["left_out"] == 1 and summary["archive"]["pieces"][0]["piece"] == "part"
    assert summary["archive"]["stale"] == 1
    from mkclust.repro.reporting.results import summary_block
    assert "1 run groups of the configuration not in it yet; 1 from code since changed" in summary_block(
        out / "figures")
    tiny = next(e for e in summary["experiments"] if e["experiment"] == "tiny")
    assert gone[2] not in tiny["datasets"] and len(tiny["datasets"]) == len(cfg["experiments"]["tiny"]["datasets"]) - 1


def test_a_changed_archive_file_or_a_group_in_two_pieces_is_an_error(archive, tiny_plan, tmp_path):
    copy = tmp_path / "tiny"
    shutil.copytree(archive, copy)
    shutil.copytree(copy / "all", copy / "second")
    with pytest.raises(ValueError, match="is in two pieces"):
        archived_groups(copy)
    shutil.rmtree(copy / "second")
    gz = next((copy / "all").glob("*.csv.gz"))
    gz.write_bytes(gzip.compress(b"experiment\nx\n"))
    with pytest.raises(ValueError, match="differs from its manifest's sha256"):
        archive_files(copy) and archived_groups(copy)


def test_a_rerun_is_compared_with_the_archive_run_by_run(archive, tiny_plan):
    p, wd = tiny_plan
    same = compare_runs(archive, p, wd / "data")
    assert len(same) == len(p.run_groups()) and (same["runs_differing"] == 0).all()
    assert same["max_metric_diff"].max() == 0.0
    assert (same["packages"] == "").all() and (same["acc_archive"] == same["acc_rerun"]).all()
    assert (same["blas"] == "").all()   # the piece was archived on the machine that ran it


def test_a_rerun_with_other_packages_says_which_and_which_cells_moved(archive, tiny_plan, tmp_path, capsys):
    """A piece whose manifest names other versions than the rerun's records (as a rerun on older numpy
    and scipy would): each group names the packages, the command line says so once, and a group whose
    runs moved is listed with its mean accuracy before and after."""
    p, wd = tiny_plan
    copy = tmp_path / "tiny"
    shutil.copytree(archive, copy)
    man_path = copy / "all" / "manifest.json"
    man = json.loads(man_path.read_text())
    man["versions"] = {**man["versions"], "numpy": "0.0.1", "scipy": "0.0.2"}
    man_path.write_text(json.dumps(man))
    data = tmp_path / "data"
    shutil.copytree(wd / "data" / "runs", data / "runs")
    moved = sorted(p.run_groups())[0]
    rec_file = records_file(data, moved)
    recs = json.loads(rec_file.read_text())
    recs = recs if isinstance(recs, list) else [recs]
    recs[0]["metrics"]["acc"] = recs[0]["metrics"]["acc"] - 0.25
    rec_file.write_text(json.dumps(recs))
    df = compare_runs(copy, p, data)
    import numpy
    import scipy
    assert (df["packages"] == f"numpy {numpy.__version__} (archive 0.0.1), scipy {scipy.__version__} "
                              "(archive 0.0.2)").all()
    row = df[df["group"] == "/".join(moved)].iloc[0]
    assert row["runs_differing"] == 1 and row["acc_archive"] - row["acc_rerun"] == pytest.approx(0.25 / len(recs))
    assert archive_cli(["compare", str(copy), "--data", str(data), str(TINY)]) == 1
    out = capsys.readouterr().out
    assert f"the rerun's packages differ from the archive's in {len(df)} of {len(df)} groups: numpy" in out
    assert f"moved with other packages or BLAS kernels: {'/'.join(moved)}: 1 of {len(recs)} runs" in out
    assert "BLAS kernels differ" not in out and (df["blas"] == "").all()


def test_a_rerun_on_other_blas_kernels_says_so(archive, tiny_plan, tmp_path, capsys):
    """Same packages, another CPU: OpenBLAS chose other kernels (its core type) for the rerun than for
    the piece, as when a piece archived on a SkylakeX machine is rerun on a Haswell one. Each group
    names both, from the run records and the manifest; records that do not say (before 2026-12-07)
    compare as unknown, not as different."""
    from mkclust.repro.provenance import architecture_difference, blas_architectures

    assert architecture_difference("Haswell", "SkylakeX", "archive") == "Haswell (archive SkylakeX)"
    assert architecture_difference("Haswell", "Haswell, Zen", "archive") == ""   # an extra library archiving
    assert architecture_difference("", "SkylakeX", "archive") == ""              # a record that does not say
    p, wd = tiny_plan
    copy = tmp_path / "tiny"
    shutil.copytree(archive, copy)
    man_path = copy / "all" / "manifest.json"
    man = json.loads(man_path.read_text())
    ours = blas_architectures(man["blas"])   # archived here: the kernels of the test's process
    assert ours
    man["blas"] = [{**d, "architecture": "Elsewhere"} if d.get("architecture") else d for d in man["blas"]]
    man_path.write_text(json.dumps(man))
    data = tmp_path / "data"
    shutil.copytree(wd / "data" / "runs", data / "runs")
    old = sorted(p.run_groups())[0]      # one group's records as written before records named their kernels
    rec_file = records_file(data, old)
    recs = json.loads(rec_file.read_text())
    assert all(r["blas"] and set(r["blas"].split(", ")) & set(ours.split(", ")) for r in recs)
    rec_file.write_text(json.dumps([{k: v for k, v in r.items() if k != "blas"} for r in recs]))
    df = compare_runs(copy, p, data).set_index("group")
    assert df.loc["/".join(old), "blas"] == ""
    others = df.drop(index="/".join(old))["blas"]
    assert others.str.endswith(" (archive Elsewhere)").all() and (others.str.len() > len(" (archive Elsewhere)")).all()
    assert (df["packages"] == "").all() and (df["runs_differing"] == 0).all()
    assert archive_cli(["compare", str(copy), "--data", str(data), str(TINY)]) == 0
    out = capsys.readouterr().out
    assert sum(int(n) for n in re.findall(r"the rerun's BLAS kernels differ from the archive's in (\d+) of "
                                          rf"{len(df)} groups: \S.* \(archive Elsewhere\)", out)) == len(df) - 1
    assert "packages differ" not in out and "moved with" not in out


def test_a_new_piece_takes_only_the_groups_no_other_piece_holds(archive, tiny_plan, tmp_path):
    p, wd = tiny_plan
    copy = tmp_path / "tiny"
    shutil.copytree(archive, copy)
    with pytest.raises(ValueError, match="missing from the archive's other pieces"):
        write_piece(copy, "second", p, wd / "data", [TINY])
    write_piece(copy, "all", p, wd / "data", [TINY])          # the same piece again replaces itself
    assert set(archived_groups(copy).values()) == {"all"}


def test_dropped_groups_become_missing_and_the_rest_of_the_piece_is_unchanged(archive, tiny_plan, tmp_path):
    """Stale groups out of a piece: their rows and names go, the manifest says why, every other row is
    as it was, the archive still verifies, and a piece computing them again is accepted."""
    p, wd = tiny_plan
    copy = tmp_path / "tiny"
    shutil.copytree(archive, copy)
    groups = sorted(archived_groups(copy))
    drop = groups[:2]
    before = {f.name: pd.read_csv(f, low_memory=False) for f in (copy / "all").glob("*.csv.gz")}
    (tmp_path / "stale.txt").write_text("\n".join(drop) + "\n")
    assert archive_cli(["drop", str(copy), "--piece", "all", "--groups", str(tmp_path / "stale.txt"),
                        "--reason", "code changed", str(TINY)]) == 0
    assert sorted(archived_groups(copy)) == groups[2:]
    assert sorted("/".join(g) for g in missing_groups(p, copy)) == drop
    man = json.loads((copy / "all" / "manifest.json").read_text())
    assert man["dropped"][0]["groups"] == drop and man["dropped"][0]["reason"] == "code changed"
    planned = {"/".join(g): runs for g, runs in p.run_groups().items()}
    gone = {(r.experiment, r.algorithm, r.dataset, r.bank, r.param_id, r.seed) for n in drop for r in planned[n]}
    after = {f.name: pd.read_csv(f, low_memory=False) for f in (copy / "all").glob("*.csv.gz")}
    key = ["experiment", "algorithm", "dataset", "bank", "param_id", "seed"]
    kept = pd.concat([df[[k not in gone for k in df[key].itertuples(index=False, name=None)]]
                      for df in before.values()]).reset_index(drop=True)
    pd.testing.assert_frame_equal(pd.concat(after.values()).reset_index(drop=True), kept)
    assert man["runs"] == len(kept)
    write_piece(copy, "again", p, wd / "data", [TINY])        # the dropped groups, computed again
    assert sorted(archived_groups(copy)) == groups
    with pytest.raises(ValueError, match="not groups of piece"):
        drop_groups(copy, "all", p, drop, "twice")


def test_stale_groups_stay_priced_and_listed_until_a_piece_computes_them_again(archive, tiny_plan, tmp_path, capsys):
    """Groups marked stale keep their rows (nothing is missing), are priced, listed and given as targets
    by ``missing``, and a new piece with them takes them over: dropped from the old piece, which says
    by which piece and why."""
    p, wd = tiny_plan
    copy = tmp_path / "tiny"
    shutil.copytree(archive, copy)
    groups = sorted(archived_groups(copy))
    old = groups[:2]
    rows = {f.name: f.read_bytes() for f in (copy / "all").glob("*.csv.gz")}
    (tmp_path / "changed.txt").write_text("\n".join(old) + "\n")
    assert archive_cli(["stale", str(copy), "--groups", str(tmp_path / "changed.txt"), "--reason",
                        "its solver changed", str(TINY)]) == 0
    assert "2 run groups marked stale in 1 pieces: all" in capsys.readouterr().out
    assert {f.name: f.read_bytes() for f in (copy / "all").glob("*.csv.gz")} == rows    # the rows stay
    assert missing_groups(p, copy) == [] and stale_groups(copy) == {g: ("all", "its solver changed") for g in old}
    assert archive_cli(["missing", str(copy), str(TINY), "--list"]) == 1
    out = capsys.readouterr().out
    assert "0 of " in out and "2 more are in it from code that has changed since" in out and "CPU h" in out
    assert "stale, 2 groups: its solver changed" in out and all(f"  {g} (stale)" in out for g in old)
    assert archive_cli(["missing", str(copy), str(TINY), "--targets", "/scratch/d"]) == 1
    planned = {"/".join(g): g for g in p.run_groups()}
    assert capsys.readouterr().out.split() == [str(records_file("/scratch/d", planned[g])) for g in old]
    with pytest.raises(ValueError, match="not in the archive"):
        mark_stale(copy, ["tiny/none/x/y/z"], "typo")
    write_piece(copy, "again", p, wd / "data", [TINY])        # computed again: only the stale groups
    assert archived_groups(copy) == {g: ("again" if g in old else "all") for g in groups}
    assert stale_groups(copy) == {}
    man = json.loads((copy / "all" / "manifest.json").read_text())
    assert man["dropped"][0]["groups"] == old
    assert man["dropped"][0]["reason"] == "computed again in piece again (stale: its solver changed)"


def test_kept_runs_of_groups_still_to_compute_are_carried_and_those_of_archived_groups_removed(
        archive, tiny_plan, tmp_path, capsys):
    p, wd = tiny_plan
    copy = tmp_path / "tiny"
    shutil.copytree(archive, copy)
    groups = sorted(p.run_groups())
    gone, old, held, done = groups[:4]
    drop_groups(copy, "all", p, ["/".join(gone)], "to compute")
    mark_stale(copy, ["/".join(old)], "its code changed")
    data, into = tmp_path / "data", tmp_path / "in_progress"

    def kept(root, g, *names):
        folder = records_file(root, g).with_name(records_file(root, g).name + ".partial")
        folder.mkdir(parents=True, exist_ok=True)
        for n in names:
            (folder / f"{n}.json.kept").write_text(n)
        (folder / "x.tmp").write_text("a write that never finished")
        return folder

    kept(data, gone, "a", "b")
    kept(data, old, "c")
    kept(data, held, "d")                   # archived: nothing to carry
    kept(into, gone, "stale-key")           # replaced by what the run kept
    kept(into, done, "e")                   # archived since: removed
    assert archive_cli(["carry", str(copy), "--data", str(data), "--into", str(into), str(TINY)]) == 0
    assert "2 groups' kept runs carried" in capsys.readouterr().out
    assert archive_cli(["missing", str(copy), str(TINY), "--kept", str(into)]) == 1
    out = capsys.readouterr().out
    planned = p.run_groups()
    assert f"kept under {into}: 2 of {len(planned[gone])} runs of {'/'.join(gone)}" in out
    assert f"kept under {into}: 1 of {len(planned[old])} runs of {'/'.join(old)}" in out
    found = sorted(str(f.relative_to(into)) for f in into.rglob("*") if f.is_file())
    want = [kept(tmp_path / "want", g, *n) for g, n in ((gone, ("a", "b")), (old, ("c",)))]
    assert found == sorted(str(f.relative_to(tmp_path / "want")) for w in want for f in w.glob("*.kept"))
    again = carry_kept(copy, p, data, into)                  # again: the same
    assert (sorted(again[0]), again[1]) == (["/".join(gone), "/".join(old)], [])


def test_the_pieces_table_comes_from_the_manifests_and_the_docs_hold_it(archive, tmp_path, capsys):
    """``pieces`` prints one row per piece and a total from the manifests; ``--write`` replaces only the
    block between the markers; the committed docs hold the committed archives' tables."""
    assert archive_cli(["pieces", str(archive)]) == 0
    out = capsys.readouterr().out.splitlines()
    man = json.loads((archive / "all" / "manifest.json").read_text())
    assert out[2].startswith(f"| `all` | {man['commit'][:7]} |") and f"| {len(man['groups'])} |" in out[2]
    assert out[-1].startswith("| 1 pieces |")
    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{PIECES_BEGIN}\nold table\n{PIECES_END}\nafter\n")
    assert archive_cli(["pieces", str(archive), "--write", str(doc)]) == 0
    assert doc.read_text() == f"before\n{PIECES_BEGIN}\n{pieces_markdown(archive)}\n{PIECES_END}\nafter\n"
    doc.write_text("no block")
    with pytest.raises(ValueError, match="no <!-- archive-pieces:begin -->"):
        write_pieces_block(archive, doc)
    root = Path(__file__).resolve().parents[2]
    for folder, path in (("results/paper", "workflow/configs/README.md"), ("results/benchmark", "docs/benchmark.md")):
        text = (root / path).read_text()
        block = text.split(PIECES_BEGIN)[1].split(PIECES_END)[0].strip()
        assert block == pieces_markdown(root / folder), f"{path}: mkclust archive pieces {folder} --write {path}"


def test_groups_the_configuration_no_longer_plans_are_dropped_by_name(archive, tiny_plan, tmp_path):
    """A fixed parameter changed, so the archived groups' names are no longer planned: dropping them by
    name (a batched parameter's "each" matching any value) takes out exactly the rows that dropping
    them with the configuration that planned them does."""
    p, _ = tiny_plan
    batched = sorted(n for n in archived_groups(archive) if "=each" in n)[:2]
    assert batched
    runs = {"/".join(g): rs for g, rs in p.run_groups().items()}
    assert all(len(runs[n]) > 1 for n in batched)

    class NoLongerPlanned:
        def run_groups(self):
            return {}

    rows = {}
    for how, plan in (("planned", p), ("by_name", NoLongerPlanned())):
        copy = tmp_path / how
        shutil.copytree(archive, copy)
        drop_groups(copy, "all", plan, batched, "a fixed parameter changed")
        rows[how] = pd.concat(pd.read_csv(f, low_memory=False) for f in sorted((copy / "all").glob("*.csv.gz")))
    assert len(rows["by_name"]) < sum(len(pd.read_csv(f, low_memory=False))
                                      for f in (archive / "all").glob("*.csv.gz"))
    pd.testing.assert_frame_equal(rows["by_name"].reset_index(drop=True), rows["planned"].reset_index(drop=True))


def test_an_unplanned_group_whose_name_says_no_parameters_is_refused(archive, tmp_path):
    """A batched group's id can be a digest (p-...): once the configuration no longer plans it, its name
    matches no rows, and dropping it by name would leave its rows in the piece under no group. It is
    refused, and the piece is left as it was."""
    copy = tmp_path / "copy"
    shutil.copytree(archive, copy)
    man_path = copy / "all" / "manifest.json"
    man = json.loads(man_path.read_text())
    real = sorted(man["groups"])[0]
    digest = "/".join(real.split("/")[:4] + ["p-0123456789ab"])
    man["groups"].append(digest)
    man_path.write_text(json.dumps(man, indent=1) + "\n")
    before = {f.name: f.read_bytes() for f in (copy / "all").iterdir()}

    class NoLongerPlanned:
        def run_groups(self):
            return {}

    with pytest.raises(ValueError, match="configuration that planned them"):
        drop_groups(copy, "all", NoLongerPlanned(), [digest], "a fixed parameter changed")
    assert {f.name: f.read_bytes() for f in (copy / "all").iterdir()} == before


def test_a_run_beside_the_reference_run_names_the_cells_that_differ(archive, tiny_plan, tmp_path_factory):
    """The tiny run compared with its own archive, in which the k-means runs on digits1v7 were moved by
    0.3: exactly that cell differs, named in the table, the verdict and the run summary, and every other
    cell is identical. (A second run against the unchanged archive, every cell identical, took 15 jobs
    and about 44 s and showed nothing this one does not: its cells are this run's other cells.)"""
    p, wd = tiny_plan
    km = next(g for g in p.run_groups() if g[:3] == ("tiny", "KM", "digits1v7"))
    doctored = tmp_path_factory.mktemp("doctored")
    shutil.copytree(wd / "data" / "runs", doctored / "runs")
    path = records_file(doctored, km)
    records = json.loads(path.read_text())
    for r in records:
        r["metrics"]["majority_acc"] += 0.3
    path.write_text(json.dumps(records))
    moved = doctored / "archive"
    write_piece(moved, "all", p, doctored, [TINY])

    differ = 1                                       # the one cell moved
    run = tmp_path_factory.mktemp("beside") / "wd"
    shutil.copytree(wd, run, symlinks=True)          # this run's results, with Snakemake's metadata
    cfg = yaml.safe_load(TINY.read_text())
    cfg["reference_run"] = str(moved)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    r = smk(run)
    log = r.stdout + r.stderr
    assert "rule reference_results:" in log and "rule run:" not in log and "rule table:" in log   # nothing refitted
    table = (run / "figures" / "tinypaper" / "table2.csv")
    t = pd.read_csv(table, keep_default_na=False)
    compared = int((t["reference_state"] != "").sum())
    assert compared == len(t) and int((t["reference_state"] == "differs").sum()) == differ
    assert int((t["reference_state"] == "identical").sum()) == len(t) - differ   # the others, to the bit
    summary = json.loads((run / "figures" / "run_summary.json").read_text())["reference"]
    assert summary["archive"] == str(moved) and summary["differs"] == differ and summary["compared"] > compared
    verdict = (run / "figures" / "tinypaper" / "verdict.md").read_text()
    own = sum(int((pd.read_csv(f, keep_default_na=False)["reference_state"] != "").sum())
              for f in (run / "figures" / "tinypaper").glob("*.csv") if f.name != "verdict.csv")
    assert summary["compared"] > own   # the run summary counts every paper's cells, the verdict its own
    assert f"Against the reference run ({moved}): {differ} of {own} cells differ" in verdict
    bad = t[t["reference_state"] == "differs"].iloc[0]
    assert (bad["dataset"], bad["column"], bad["metric"]) == ("digits1v7", "KM", "majority_acc")
    assert bad["reference_diff"] == pytest.approx(-0.3)
    assert "table2 digits1v7 KM majority_acc" in verdict
    assert "[ref " in (run / "figures" / "tinypaper" / "table2.md").read_text()
