"""Every error a user can cause through ``mkclust`` ends in one line on stderr, naming the command, and
a non-zero exit (mkclust._cli.run_tool and mkclust._cli.Parser): a missing or malformed file, a
changed or missing archive piece, a bad configuration, a bad option. A defect of the package still
shows its traceback (the last test)."""

import json
from pathlib import Path

import pytest

from mkclust.__main__ import main

REPO = Path(__file__).resolve().parents[2]
TINY = str(REPO / "tests" / "configs" / "tiny.yaml")


@pytest.fixture
def files(tmp_path, monkeypatch):
    """Inputs a user gets wrong, in a folder of their own; the working directory is the checkout (whose
    protocols a configuration outside it is resolved with)."""
    (tmp_path / "syntax.yaml").write_text("experiments: [1,\n")
    (tmp_path / "not_mapping.yaml").write_text("experiments: 3\n")
    (tmp_path / "schema.yaml").write_text((REPO / "tests/configs/tiny.yaml").read_text() + "\nrun_threads: many\n")
    (tmp_path / "doc.md").write_text("no markers here\n")
    (tmp_path / "not_json" / "p1").mkdir(parents=True)
    (tmp_path / "not_json" / "p1" / "manifest.json").write_text("{not json")
    changed = tmp_path / "changed" / "p1"
    changed.mkdir(parents=True)
    (changed / "e.csv.gz").write_bytes(b"edited by hand")
    (changed / "manifest.json").write_text(json.dumps({"piece": "p1", "commit": "0" * 40, "groups": [], "runs": 0,
                                                       "fit_cpu_seconds": 0, "files": {"e.csv.gz": "0" * 64}}))
    (tmp_path / "figs").mkdir()
    (tmp_path / "figs" / "run_summary.json").write_text('{"runs": ')
    (tmp_path / "empty_data").mkdir()
    monkeypatch.chdir(REPO)
    return tmp_path


#: (argv with {t} for the folder of bad inputs, what the one line must say)
CASES = {
    "unknown tool": (["nope"], "unknown tool 'nope'"),
    "check: no file": (["check", "{t}/none.yaml"], "none.yaml: No such file or directory"),
    "check: YAML syntax": (["check", "{t}/syntax.yaml"], "not valid YAML: line 2"),
    "check: not a mapping": (["check", "{t}/not_mapping.yaml"], "experiments: a mapping"),
    "check: schema": (["check", "{t}/schema.yaml"], "run_threads"),
    "estimate: no file": (["estimate", "{t}/none.yaml"], "No such file or directory"),
    "estimate: bad option": (["estimate", TINY, "--cores", "x"], "invalid int value: 'x'"),
    "estimate: no archive": (["estimate", TINY, "--archive", "{t}/none"], "no results archive there"),
    "estimate: backtest alone": (["estimate", TINY, "--backtest"], "--backtest needs --archive"),
    "datasets: unknown set": (["datasets", "--show", "nope"], "unknown dataset 'nope'"),
    "datasets: files without --list": (["datasets", "x.csv"], "give --list"),
    "archive: no command": (["archive"], "required: command"),
    "archive: no archive": (["archive", "missing", "{t}/none", TINY], "no results archive there"),
    "archive: manifest not JSON": (["archive", "missing", "{t}/not_json", TINY], "is not a manifest"),
    "archive: a changed piece": (["archive", "pieces", "{t}/changed"], "differs from its manifest's sha256"),
    "archive: pieces of no archive": (["archive", "pieces", "{t}/none"], "no results archive there"),
    "archive: pieces of a folder without pieces": (["archive", "pieces", "{t}/empty_data"], "no piece there"),
    "archive: no such piece": (["archive", "drop", "{t}/changed", "--piece", "p9", "--groups", "{t}/doc.md",
                                "--reason", "r", TINY], "p9/manifest.json: No such file or directory"),
    "archive: nothing to add": (["archive", "add", "{t}/new", "--piece", "x", "--data", "{t}/empty_data", TINY],
                                "no run group of the configuration is complete"),
    "archive: no data folder": (["archive", "compare", "{t}/changed", "--data", "{t}/none", TINY],
                                "no data folder there"),
    "archive: no block to write": (["archive", "pieces", str(REPO / "results/paper"), "--write", "{t}/doc.md"],
                                   "has no <!-- archive-pieces:begin -->"),
    "results: no run": (["results", "--figures", "{t}/none"], "run_summary.json: not found"),
    "results: summary not JSON": (["results", "--figures", "{t}/figs"], "is not a readable run summary"),
    # results/benchmark/pages: its run summary is committed (the reference run's is not, .gitignore)
    "results: no markers": (["results", "--figures", str(REPO / "results/benchmark/pages"), "--readme", "{t}/doc.md"],
                            "has no <!-- benchmark:begin -->"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_users_error_is_one_line_naming_the_command(case, files, capsys):
    argv, says = CASES[case]
    argv = [a.replace("{t}", str(files)) for a in argv]
    try:
        status = main(argv)
    except SystemExit as exc:   # argparse's errors exit from inside the tool
        status = exc.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2, err
    assert len(lines) == 1, err
    prefix = "mkclust:" if argv[0] == "nope" else f"mkclust {argv[0]}:"
    assert lines[0].startswith(prefix) and says in lines[0], lines[0]
    assert not (files / "new").exists()   # nothing written by a command that failed


def test_a_defect_of_the_package_keeps_its_traceback(monkeypatch):
    """Only a user's errors (OSError, ValueError, YAML's) become one line: any other exception is a
    defect, and hiding its traceback would hide where it is."""
    import mkclust.repro.cli.check as check

    def broken(argv):
        raise TypeError("a defect")

    monkeypatch.setattr(check, "main", broken)
    with pytest.raises(TypeError, match="a defect"):
        main(["check"])


def test_mkclust_traceback_shows_a_users_error_in_full(files, monkeypatch):
    monkeypatch.setenv("MKCLUST_TRACEBACK", "1")
    with pytest.raises(FileNotFoundError):
        main(["check", str(files / "none.yaml")])
