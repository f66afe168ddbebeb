"""The conda environment (envs/mkclust.yaml) must provide what `pip install -e .` does."""

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
# pip name -> conda-forge name where they differ; snakemake itself runs outside the job env
CONDA_NAME = {"cvxpy": "cvxpy-base", "matplotlib": "matplotlib-base"}
NOT_IN_JOB_ENV = {"snakemake"}


def test_conda_env_matches_pip_dependencies():
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pip_names = {re.split(r"[\[<>=!~ ]", d, maxsplit=1)[0].lower() for d in deps} - NOT_IN_JOB_ENV
    env = yaml.safe_load((REPO / "envs/mkclust.yaml").read_text())
    conda_names = {re.split(r"[<>=!~ ]", d, maxsplit=1)[0].lower() for d in env["dependencies"] if isinstance(d, str)}
    missing = {CONDA_NAME.get(n, n) for n in pip_names} - conda_names
    assert not missing, f"envs/mkclust.yaml lacks {sorted(missing)}"
    assert any(d.startswith("python>=3.11") for d in env["dependencies"] if isinstance(d, str))


def test_every_rule_uses_the_conda_env():
    rules = list((REPO / "workflow/rules").glob("*.smk"))
    assert {p.stem for p in rules} == {"datasets", "kernels", "runs", "aggregate", "figures", "report"}
    for p in rules:
        text = p.read_text()
        assert text.count("script:") == text.count("conda:"), f"{p.name}: a rule without conda:"
