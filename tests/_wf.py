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
    _write_config(wd, config)
    return wd


def _write_config(wd: Path, config=None) -> None:
    (wd / "config.yaml").write_text(yaml.safe_dump(config or yaml.safe_load(TINY.read_text())))


def _tiny_run_into(wd: Path, tables: Path) -> None:
    """Run the tiny configuration in ``wd``; copy its tables (csv, md, tex) to ``tables`` at once,
    before any test changes the folder."""
    wd.mkdir(parents=True)
    _write_config(wd)
    p = smk(wd)
    (wd / "run.stderr").write_text(p.stderr)   # what a person sees on the console
    for f in (wd / "figures").rglob("*"):
        if f.suffix in (".csv", ".md", ".tex"):
            dest = tables / f.relative_to(wd / "figures")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)


def local_tiny_run(tmp_path_factory, shared: bool = False) -> tuple[Path, Path]:
    """Run the tiny configuration locally; returns its folder and a copy of its tables. ``shared``
    (pytest-xdist workers): the first worker to ask runs it in the folder the workers share, under a
    lock; each worker gets its own copy (Snakemake's metadata and the files' times with it), so a
    test that changes its folder changes no other worker's."""
    own_wd, own_tables = tmp_path_factory.mktemp("wf") / "wd", tmp_path_factory.mktemp("wf_tables")
    if not shared:
        _tiny_run_into(own_wd, own_tables)
        return own_wd, own_tables
    import fcntl

    root = tmp_path_factory.getbasetemp().parent / "tiny_local"
    root.mkdir(exist_ok=True)
    with open(root.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").exists():
            _tiny_run_into(root / "wd", root / "tables")
            (root / "done").write_text("")
    shutil.copytree(root / "wd", own_wd, symlinks=True)
    shutil.copytree(root / "tables", own_tables, dirs_exist_ok=True)
    return own_wd, own_tables
