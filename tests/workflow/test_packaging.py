"""The conda environment (envs/mkclust.yaml) must provide what `pip install -e .` does."""

import ast
import json
import re
import sys
import tomllib
from pathlib import Path

import yaml
from _machine import borrowing_venv

REPO = Path(__file__).resolve().parents[2]
# pip name -> conda-forge name where they differ; snakemake itself runs outside the job env
CONDA_NAME = {"cvxpy": "cvxpy-base", "matplotlib": "matplotlib-base"}
NOT_IN_JOB_ENV = {"snakemake"}


def _pip_names() -> set[str]:
    """The library's dependencies and the workflow extra's: what the package and its jobs import."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["workflow"]
    return {re.split(r"[\[<>=!~ ]", d, maxsplit=1)[0].lower() for d in deps}


def test_conda_env_matches_pip_dependencies_pinned():
    env = yaml.safe_load((REPO / "envs/mkclust.yaml").read_text())
    specs = [d for d in env["dependencies"] if isinstance(d, str)]
    conda_names = {re.split(r"[<>=!~ ]", d, maxsplit=1)[0].lower() for d in specs}
    missing = {CONDA_NAME.get(n, n) for n in _pip_names() - NOT_IN_JOB_ENV} - conda_names
    assert not missing, f"envs/mkclust.yaml lacks {sorted(missing)}"
    unpinned = [d for d in specs if not re.fullmatch(r"[A-Za-z0-9_.\-]+=[0-9][0-9.]*", d)]
    assert not unpinned, f"envs/mkclust.yaml: not pinned to one version: {unpinned}"
    assert "python=3.11" in specs


def _imported_modules(paths) -> set[str]:
    mods = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods.add(node.module.split(".")[0])
    return mods - set(sys.stdlib_module_names) - {"mkclust", "__future__"}


def test_every_runtime_import_and_solver_is_a_declared_dependency():
    """What the package and the job scripts import (and the cvxpy solvers the estimators name) is
    declared in pyproject.toml: SCS, GMMC's solver, and PyYAML were missing or test-only."""
    from importlib.metadata import packages_distributions

    code = list((REPO / "src/mkclust").rglob("*.py")) + list((REPO / "workflow/scripts").glob("*.py"))
    dists = packages_distributions()
    declared = _pip_names()
    needed = {}
    for mod in _imported_modules(code) - {"snakemake"}:   # the job scripts' `snakemake` object
        names = {d.lower() for d in dists.get(mod, [])}
        assert names, f"{mod} is imported but no installed distribution provides it"
        needed[mod] = names
    undeclared = {m: n for m, n in needed.items() if not n & declared}
    assert not undeclared, f"imported but not in pyproject dependencies: {undeclared}"
    solvers = set(re.findall(r"cp\.(SCS|CLARABEL|ECOS|OSQP|MOSEK)\b",
                             "".join(p.read_text() for p in code)))
    assert solvers and {s.lower() for s in solvers} <= declared, solvers


def test_every_rule_uses_the_conda_env():
    rules = list((REPO / "workflow/rules").glob("*.smk"))
    assert {p.stem for p in rules} == {"common", "datasets", "kernels", "runs", "aggregate", "figures", "report",
                                      "inputs"}
    for p in rules:
        text = p.read_text()
        assert text.count("script:") == text.count("conda:"), f"{p.name}: a rule without conda:"


def test_one_command_reaches_every_tool(capsys):
    """``mkclust <tool>`` (the console script of pyproject.toml) runs each tool's own main."""
    import pytest
    from mkclust.__main__ import TOOLS, main

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"mkclust": "mkclust.__main__:main"}
    assert main([]) == 0
    out = capsys.readouterr().out
    assert all(t in out for t in TOOLS)
    assert main(["nope"]) == 2 and "unknown tool 'nope'" in capsys.readouterr().err
    for tool in TOOLS:
        with pytest.raises(SystemExit) as exc:
            main([tool, "--help"])
        assert exc.value.code == 0 and "usage:" in capsys.readouterr().out
    assert main(["datasets", "--show", "digits1v7"]) == 0 and '"name": "digits1v7"' in capsys.readouterr().out


def test_a_tool_piped_into_a_reader_that_closes_early_ends_quietly():
    """``mkclust datasets --list | head -1``: the reader closes the pipe after one line; the tool
    ends with 0 and no traceback (BrokenPipeError handled once, for every tool)."""
    import subprocess
    proc = subprocess.Popen([sys.executable, "-m", "mkclust", "datasets", "--list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()                                   # as head does after its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_every_package_of_the_source_tree_is_installed():
    """pyproject.toml lists the packages (the protocols and the schema are mapped in from workflow/):
    a new subpackage of src/mkclust must be added there, or a wheel would leave it out."""
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO / "src").parts) for p in (REPO / "src/mkclust").rglob("__init__.py")}
    assert found <= listed, f"not listed in pyproject.toml [tool.setuptools] packages: {sorted(found - listed)}"
    assert {"mkclust.repro.protocols", "mkclust.repro.schemas"} <= listed


def test_the_installed_tools_work_outside_the_checkout(tmp_path, wheel):
    """A wheel carries the protocols and the schema: installed in a fresh virtual environment (the
    dependencies borrowed from the environment the tests run in, never from the base interpreter's
    global packages: tests/_machine.py; the package from the wheel alone), `mkclust check`
    and `mkclust estimate` plan a configuration that names the papers' protocols, run from a folder
    that is no checkout, and the papers' names come from the installed protocol files."""
    import subprocess
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "mkclust/repro/protocols/mkc.yaml" in names and "mkclust/repro/schemas/config.schema.yaml" in names
    venv = tmp_path / "venv"
    py = borrowing_venv(venv)   # the dependencies of the environment the tests run in, not the base's
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "mine.yaml").write_text("experiments:\n  odmc_table2_baselines: {protocol: odmc_table2_baselines}\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    where = subprocess.run([str(py), "-c", "import mkclust.repro.configuration as c; print(c.__file__); "
                            "print(c.protocol_folder('mine.yaml')); "
                            "print(c.load('mine.yaml')['papers']['odmc']['name'])"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr
    module, folder, name = where.stdout.split()
    assert str(venv) in module and str(venv) in folder and name == "ODMC"
    for tool in (["check"], ["estimate"]):
        out = subprocess.run([str(venv / "bin" / "mkclust"), *tool, "mine.yaml"], cwd=work, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert "odmc_table2_baselines" in out.stdout or "experiment(s)" in out.stdout, out.stdout


def _lock() -> dict[str, str]:
    """envs/reference-run.txt as name (lower case) -> version."""
    pins = {}
    for line in (REPO / "envs/reference-run.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][0-9A-Za-z.+]*", line), f"not pinned to one version: {line}"
            name, ver = line.split("==")
            pins[name.lower().replace("_", "-")] = ver
    return pins


def test_the_lock_file_is_the_reference_runs_environment():
    """envs/reference-run.txt pins every package the workflow extra needs, at the versions every piece of
    both archives names in its manifest, at the versions envs/mkclust.yaml pins, within pyproject.toml's
    bounds: an exact rerun of the reference run is one pip command (README)."""
    from packaging.requirements import Requirement

    pins = _lock()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for req in map(Requirement, project["dependencies"] + project["optional-dependencies"]["workflow"]):
        name = req.name.lower()
        assert name in pins, f"envs/reference-run.txt lacks {name}"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name} {pins[name]} outside {req.specifier}"
    manifests = [json.loads(p.read_text()) for p in REPO.glob("results/*/*/manifest.json")]
    assert manifests
    for man in manifests:
        named = {k.lower(): v for k, v in man["versions"].items() if k != "mkclust"}
        assert {k: pins.get(k) for k in named} == named, man["piece"]
        assert man["python"] in (REPO / "envs/reference-run.txt").read_text()   # the header names it
    env = yaml.safe_load((REPO / "envs/mkclust.yaml").read_text())
    conda = dict(d.split("=", 1) for d in env["dependencies"] if isinstance(d, str) and not d.startswith("python="))
    by_pip = {v: k for k, v in CONDA_NAME.items()}
    assert {by_pip.get(k, k): v for k, v in conda.items()} == {by_pip.get(k, k): pins[by_pip.get(k, k)]
                                                              for k in conda}


def test_snakemake_lint_is_clean(tmp_path):
    """``snakemake --lint`` finds nothing to say about the workflow (rules and functions in separate
    files; the environment variable the workflow sets for its jobs declared with ``envvars:``)."""
    import subprocess
    p = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                        "--lint"], capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "Lints for" not in out, out[-3000:]


def test_citation_names_this_version_and_the_five_papers():
    """CITATION.cff (validated against its schema by .ci/package) cites this version of the software and,
    as references, the five papers the README names."""
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert cff["version"] == project["version"] and cff["license"] == project["license"]
    readme = (REPO / "README.md").read_text()
    titles = [r["title"] for r in cff["references"]]
    assert len(titles) == 5
    for title in titles:   # the README writes l2,1 the same way and breaks long titles across lines
        assert " ".join(title.split()) in " ".join(readme.split()), title


def test_the_changelog_names_every_archived_piece_under_its_date():
    """Each piece of the reference run and of the benchmark is named in CHANGELOG.md in the section of
    the date its manifest says it was archived."""
    text = (REPO / "CHANGELOG.md").read_text()
    sections = dict(re.findall(r"^## (\d{4}-\d\d-\d\d)\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S))
    unnamed = []
    for manifest in sorted(REPO.glob("results/*/*/manifest.json")):
        man = json.loads(manifest.read_text())
        if f"`{man['piece']}` ({man['commit'][:7]})" not in " ".join(sections.get(man["archived"][:10], "").split()):
            unnamed.append(f"{manifest.parent.parent.name}/{man['piece']} ({man['archived'][:10]})")
    assert not unnamed, f"CHANGELOG.md does not name: {unnamed}"
