"""Helpers of the end-to-end workflow tests: snakemake on tests/configs/tiny.yaml in a temporary
working directory (``snakemake --directory``)."""

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "configs" / "tiny.yaml"


def smk_cmd(workdir, *args):
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(workdir / "config.yaml"), *args]


def smk(workdir, *args, check=True, cores="2", env=None, timeout=900):
    cmd = smk_cmd(workdir, *(("--cores", cores) if cores else ()), *args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"snakemake failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-6000:]}")
    return p


def new_workdir(tmp_path_factory, name, config=None):
    wd = tmp_path_factory.mktemp(name)
    (wd / "config.yaml").write_text(yaml.safe_dump(config or yaml.safe_load(TINY.read_text())))
    return wd


def local_tiny_run(tmp_path_factory) -> tuple[Path, Path]:
    """Run the tiny configuration locally; returns its folder and a copy of its tables (csv, md, tex)
    taken at once, before any test changes the folder."""
    wd = new_workdir(tmp_path_factory, "wf")
    p = smk(wd)
    (wd / "run.stderr").write_text(p.stderr)   # what a person sees on the console
    tables = tmp_path_factory.mktemp("wf_tables")
    for f in (wd / "figures").rglob("*"):
        if f.suffix in (".csv", ".md", ".tex"):
            dest = tables / f.relative_to(wd / "figures")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
    return wd, tables
