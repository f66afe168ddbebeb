"""Protocols and the configurations built on them (mkclust.repro.configuration)."""

import re
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from mkclust.repro.configuration import load, overlay, read_protocols, resolve
from mkclust.repro.planning import ConfigError, plan

REPO = Path(__file__).resolve().parents[2]
SCHEMA = str(REPO / "workflow/schemas/config.schema.yaml")
CONFIGS = [("config.yaml",), ("workflow/configs/paper.yaml",),
           ("workflow/configs/paper.yaml", "workflow/configs/paper_results.yaml"),
           ("workflow/configs/paper.yaml", "workflow/configs/paper_odmc_quick.yaml"),
           ("workflow/configs/benchmark.yaml",)]


def test_overlay_merges_mappings_replaces_lists_and_deletes_on_null():
    base = {"a": {"x": 1, "y": [1, 2], "z": {"k": 1}}, "b": 2, "c": 3}
    change = {"a": {"y": [3], "z": {"j": 2}, "w": 4}, "b": None, "d": 5}
    out = overlay(base, change)
    assert out == {"a": {"x": 1, "y": [3], "z": {"k": 1, "j": 2}, "w": 4}, "c": 3, "d": 5}
    assert list(out) == ["a", "c", "d"] and list(out["a"]) == ["x", "y", "z", "w"]  # base order, new keys after
    assert base == {"a": {"x": 1, "y": [1, 2], "z": {"k": 1}}, "b": 2, "c": 3}   # neither input changes
    out["a"]["z"]["k"] = 9
    assert base["a"]["z"]["k"] == 1


def _write(folder: Path, name: str, doc: dict) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(yaml.safe_dump(doc))


def test_resolve_expands_a_protocol_and_seed_ranges(tmp_path):
    proto = {"paper": "p", "datasets": ["digits1v7"], "banks": ["b"], "seeds": {"range": 3},
             "algorithms": {"KKM": {"algorithm": "kkm", "grid": {"kernel": "all"}}, "SC": {"algorithm": "sc"}},
             "tables": {"t": {"title": "T", "metrics": ["acc"], "columns": {"KKM": {"algorithm": "KKM"},
                                                                              "SC": {"algorithm": "SC"}}}}}
    _write(tmp_path, "p.yaml", {"protocols": {"proto": proto}, "kernel_banks": {"b": {"bank": "mkc3"}}})
    config = {"kernel_banks": {"b": {"preprocess": "zscore"}},
              "experiments": {"e": {"protocol": "proto", "seeds": [0], "algorithms": {"SC": None},
                                    "tables": {"t": {"columns": {"SC": None}}}},
                              "f": {"protocol": "proto", "paper": "q"}}}
    out = resolve(config, tmp_path)
    assert "protocol" in config["experiments"]["e"]            # the input is not modified
    e, f = out["experiments"]["e"], out["experiments"]["f"]
    assert e["seeds"] == [0] and f["seeds"] == [0, 1, 2]
    assert list(e["algorithms"]) == ["KKM"] and list(e["tables"]["t"]["columns"]) == ["KKM"]
    assert f == {**proto, "paper": "q", "seeds": [0, 1, 2], "paper_datasets": ["digits1v7"]}   # the protocol's sets
    assert out["kernel_banks"] == {"b": {"bank": "mkc3", "preprocess": "zscore"}}
    p = plan(out)
    assert {(r.experiment, r.seed) for r in p.runs} == {("e", 0), ("f", 0), ("f", 1), ("f", 2)}
    assert p.datasets["digits1v7"] == {"loader": "digits1v7", "options": {}}   # not declared: the loader's defaults


def test_a_table_ranked_by_paper_gets_each_papers_sets_from_the_protocols_lists(tmp_path):
    """``ranks: {by_paper: true}``: the configuration writes, per other paper (by its name), the
    experiment's data sets its protocols run, in the experiment's order, papers in the order of their
    first set; a paper with none of them, and the experiment's own paper, are left out."""
    def proto(paper, sets, **more):
        return {"paper": paper, "datasets": sets, "banks": ["b"], "seeds": [0],
                "algorithms": {"KKM": {"algorithm": "kkm"}}, **more}
    table = {"metrics": ["acc"], "ranks": {"by_paper": True}, "columns": {"KKM": {"algorithm": "KKM"}}}
    _write(tmp_path, "p.yaml", {"papers": {"pa": {"name": "PA"}, "pb": {"name": "PB"}},
                                "protocols": {"a1": proto("pa", ["d3", "d1"]), "a2": proto("pa", ["d4"]),
                                              "b1": proto("pb", ["d2", "d9"]), "c1": proto("pc", ["d8"]),
                                              "bench": proto("bench", ["d1", "d2", "d3", "d4", "d5"],
                                                             tables={"t": table, "u": {"metrics": ["acc"]}})},
                                "kernel_banks": {"b": {"bank": "mkc3"}}})
    out = resolve({"experiments": {"e": {"protocol": "bench"}}}, tmp_path)["experiments"]["e"]
    assert out["tables"]["t"]["ranks"] == {"by_paper": True, "paper_sets": {"PA": ["d1", "d3", "d4"], "PB": ["d2"]}}
    assert "ranks" not in out["tables"]["u"]
    bench = resolve({"experiments": {"e": {"protocol": "benchmark"}}}, REPO / "workflow/protocols")
    sets = bench["experiments"]["e"]["tables"]["all_defaults"]["ranks"]["paper_sets"]
    assert {k: len(v) for k, v in sets.items()} == {"MKC": 8, "ODMC": 19, "RMKKM": 9, "SCMK": 8, "GUMKL": 10}
    assert "ionosphere" in sets["MKC"] and "heart-statlog" in sets["ODMC"] and "COIL20" not in sets["SCMK"]


@pytest.mark.parametrize("experiment,match", [
    ({"protocol": "nope"}, r"experiments.e.protocol: unknown protocol 'nope'; known: proto"),
    ({"protocol": "proto", "seeds": {"range": 0}},
     r"experiments.e.seeds: seeds are a list of integers or \{range: n\}"),
    ({"protocol": "proto", "algorithms": {"A": {"seeds": {"upto": 3}}}}, r"experiments.e.algorithms.A.seeds"),
])
def test_resolve_names_what_is_wrong(tmp_path, experiment, match):
    _write(tmp_path, "p.yaml", {"protocols": {"proto": {"paper": "p", "datasets": ["digits"], "algorithms": {}}}})
    with pytest.raises(ConfigError, match=match):
        resolve({"experiments": {"e": experiment}}, tmp_path)


def test_a_protocol_declared_twice_names_both_files(tmp_path):
    _write(tmp_path, "a.yaml", {"protocols": {"x": {}}})
    _write(tmp_path, "b.yaml", {"protocols": {"x": {}}})
    with pytest.raises(ConfigError, match="protocols.x is declared in both a.yaml and b.yaml"):
        read_protocols(tmp_path)
    _write(tmp_path, "b.yaml", {"protocol": {"y": {}}})
    with pytest.raises(ConfigError, match=r"b.yaml: unknown top-level key\(s\) \['protocol'\]"):
        read_protocols(tmp_path)


@pytest.mark.parametrize("files", CONFIGS, ids=lambda f: "+".join(Path(x).stem for x in f))
def test_every_configuration_resolves_validates_and_plans(files):
    config = load(*(REPO / f for f in files))
    validate(config, SCHEMA)
    assert plan(config).runs


def test_the_paper_configuration_runs_each_protocol_as_written():
    """paper.yaml names every protocol once and changes none of it: the protocol files are the
    paper configuration's experiments."""
    protocols, _ = read_protocols(REPO / "workflow/protocols")
    config = load(REPO / "workflow/configs/paper.yaml")
    benchmark = load(REPO / "workflow/configs/benchmark.yaml")   # the benchmark's protocol is its own configuration's
    assert sorted(config["experiments"]) == sorted(set(protocols) - set(benchmark["experiments"]))
    assert {protocols[e]["paper"] for e in benchmark["experiments"]} == {"benchmark"}
    for name, e in config["experiments"].items():
        assert e == resolve({"experiments": {"x": {"protocol": name}}}, REPO / "workflow/protocols")["experiments"]["x"]


def test_the_overlays_run_part_of_the_paper_configurations_runs():
    """An overlay restricts data sets; its runs keep the paper configuration's paths and parameters."""
    whole = set(plan(load(REPO / "workflow/configs/paper.yaml")).runs)
    for overlay_file in ("paper_results.yaml", "paper_odmc_quick.yaml"):
        part = set(plan(load(REPO / "workflow/configs/paper.yaml", REPO / "workflow/configs" / overlay_file)).runs)
        assert part and part <= whole, overlay_file


def test_a_configuration_that_runs_fewer_sets_narrows_the_protocols_lists(tmp_path):
    """A configuration naming fewer data sets than its protocol: each data set list of the protocol's
    algorithms, tables and figures keeps only those, and one left empty is dropped; without that
    narrowing the configuration would name sets its experiment does not run."""
    from mkclust.repro.planning import plan as make_plan
    config = load(REPO / "workflow/configs/benchmark.yaml")
    small = resolve({**config, "experiments": {"benchmark": {"protocol": "benchmark",
                                                             "datasets": ["hepatitis", "JAFFE"]}}},
                    REPO / "workflow/protocols")["experiments"]["benchmark"]
    assert small["algorithms"]["MKC"]["datasets"] == small["algorithms"]["ODMC"]["datasets"] == ["hepatitis"]
    assert "datasets" not in small["algorithms"]["SCMK"]   # every set of the experiment
    assert small["tables"]["two_class_defaults"]["datasets"] == ["hepatitis"]
    only_multi = resolve({**config, "experiments": {"benchmark": {"protocol": "benchmark", "datasets": ["YALE"]}}},
                         REPO / "workflow/protocols")["experiments"]["benchmark"]
    assert "ODMC" not in only_multi["algorithms"] and "MKC" not in only_multi["algorithms"]
    assert "two_class_tuned" not in only_multi["tables"] and "cd_two_class_defaults" not in only_multi["figures"]
    lines = only_multi["figures"]["cpu_vs_n"]["algorithm"]   # the dropped methods' lines go, the others stay
    assert "ODMC" not in lines and "MKC" not in lines and "SCMK" in lines and "KKM" in lines
    for e, sets in ((small, {"hepatitis", "JAFFE"}), (only_multi, {"YALE"})):
        assert {r.dataset for r in make_plan({**config, "experiments": {"benchmark": e}}).runs} == sets


def test_the_default_runs_every_paper_from_its_protocol():
    raw = yaml.safe_load((REPO / "config.yaml").read_text())
    protocols, _ = read_protocols(REPO / "workflow/protocols")
    papers = {protocols[e["protocol"]]["paper"] for e in raw["experiments"].values() if "protocol" in e}
    assert papers == {"mkc", "gumkl", "odmc", "rmkkm", "scmk"}


def test_each_paper_is_named_once_in_its_protocol_file_with_a_headline_table_it_makes():
    """papers: of the protocol files: every paper a protocol reproduces has a name and a headline
    table among its experiments' tables; a configuration's own entry (config.yaml's core) is added
    to them, and one of its entries overrides the protocols'."""
    cfg = load(REPO / "config.yaml")
    protocols, _ = read_protocols(REPO / "workflow/protocols")
    for paper in {p["paper"] for p in protocols.values()}:
        entry = cfg["papers"][paper]
        tables = {t for p in protocols.values() if p["paper"] == paper for t in p.get("tables") or {}}
        assert entry["name"] and entry["headline"] in tables, paper
    assert cfg["papers"]["core"] == {"name": "Baselines"}
    renamed = resolve({"papers": {"mkc": {"name": "Zhao et al."}}, "experiments": {}}, REPO / "workflow/protocols")
    assert renamed["papers"]["mkc"]["name"] == "Zhao et al." and renamed["papers"]["mkc"]["headline"] == "table2"


def test_the_reference_run_pieces_partition_the_paper_configuration():
    """workflow/configs/pieces/*.yaml: every run of the paper configuration in exactly one piece, with
    the same paths and parameters, so the pieces' archives add up to the whole run."""
    whole = plan(load(REPO / "workflow/configs/paper.yaml"))
    seen: dict = {}
    for piece in sorted((REPO / "workflow/configs/pieces").glob("*.yaml")):
        for run in plan(load(REPO / "workflow/configs/paper.yaml", piece)).runs:
            assert run not in seen, f"{run} is in {seen.get(run)} and {piece.name}"
            seen[run] = piece.name
    assert set(seen) == set(whole.runs)


def test_command_line_switches_read_as_yaml_reads_them():
    from mkclust.repro.configuration import command_line_values
    got = command_line_values({"archive_partial": "true", "reference_run": "null", "results_archive": "results/x",
                               "data_mirror": "None", "data_dir": "null"})
    assert got == {"archive_partial": True, "reference_run": None, "results_archive": "results/x",
                   "data_mirror": None, "data_dir": "null"}     # only the switches; a data folder may be named null
    assert command_line_values({"archive_partial": "no"})["archive_partial"] is False
    with pytest.raises(ConfigError, match="archive_partial: 'maybe' is not true or false"):
        command_line_values({"archive_partial": "maybe"})


def test_a_yaml_error_names_the_file_line_and_column(tmp_path):
    """Snakemake says only "Config file is not valid JSON or YAML"; the workflow's own reading of a
    configuration (config.yaml in the Snakefile, mkclust estimate / archive / results) names where."""
    bad = tmp_path / "bad config.yaml"
    bad.write_text("data_dir: data\nexperiments:\n  tiny: {paper: x\n  datasets: [a]\n")
    with pytest.raises(ValueError, match=r"bad config.yaml: not valid YAML: line 4, column 11: .*expected ',' or '}'"):
        load(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ValueError, match="a configuration is a mapping of keys"):
        load(bad)


def test_mkclust_check_names_a_yaml_errors_line_and_a_schema_violation_and_passes_a_good_configuration(
        tmp_path, capsys):
    """What `snakemake --configfile` cannot say (it reads the file before the workflow starts)."""
    from mkclust.__main__ import main
    bad = tmp_path / "my config.yaml"
    bad.write_text("experiments:\n  foo:\n    datasets: [a, b\n    seeds: 1\n")
    assert main(["check", str(bad)]) == 2
    assert re.search(r"my config.yaml: not valid YAML: line 4, column 10: .*expected ',' or ']'",
                     capsys.readouterr().err)
    bad.write_text(yaml.safe_dump({"experiments": {"foo": {"paper": "p", "datasetz": ["digits"]}}}))
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "'datasetz' was unexpected" in err and "'algorithms' is a required property" in err
    assert main(["check", str(REPO / "tests/configs/tiny.yaml")]) == 0
    assert re.search(r"tiny.yaml: 6 experiment\(s\), 77 runs in \d+ run groups", capsys.readouterr().out)


def test_mkclust_check_makes_the_workflows_archive_and_reference_checks(tmp_path, capsys):
    """The pre-job checks are one function (mkclust.repro.preflight) that the Snakefile and mkclust check
    both call: an archive that lacks planned groups stops both, naming the groups; a reference run that
    is not there is a note; with archive_partial the missing groups are left out."""
    from mkclust.__main__ import main
    from mkclust.repro.configuration import load
    from mkclust.repro.preflight import preflight
    empty = tmp_path / "archive"
    empty.mkdir()
    over = tmp_path / "over.yaml"
    over.write_text(yaml.safe_dump({"results_archive": str(empty)}))
    assert main(["check", str(REPO / "tests/configs/tiny.yaml"), str(over)]) == 2
    assert re.search(r"results_archive: \d+ run group\(s\) of this configuration are not in", capsys.readouterr().err)
    pre = preflight({**load(REPO / "tests/configs/tiny.yaml"), "results_archive": str(empty), "archive_partial": True},
                    REPO)
    assert len(pre.left_out) == len(pre.plan.run_groups()) > 0
    over.write_text(yaml.safe_dump({"reference_run": "no/such/archive"}))
    assert main(["check", str(REPO / "tests/configs/tiny.yaml"), str(over)]) == 0
    assert "reference_run no/such/archive not found" in capsys.readouterr().err
