"""docs/architecture.md names modules, functions and files; each must exist, so the map stays true
when the code moves."""

import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILE_EXT = (".py", ".yaml", ".md", ".csv", ".tsv", ".json", ".smk", ".rst", ".toml")
PREFIXES = ("mkclust.", "mkclust.repro.", "mkclust.algorithms.", "mkclust.datasets.", "mkclust.kernels.")


def _resolves(dotted: str) -> bool:
    """Some prefix + ``dotted`` is an importable module followed by attributes."""
    for prefix in PREFIXES:
        parts = (prefix + dotted).split(".")
        for cut in range(len(parts), 1, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for name in parts[cut:]:
                    obj = getattr(obj, name)
                return True
            except AttributeError:
                break
    return False


def test_every_module_function_and_file_architecture_md_names_exists():
    text = (REPO / "docs" / "architecture.md").read_text()
    missing = []
    for token in sorted(set(re.findall(r"`([^`\s]+)`", text))):
        if any(c in token for c in "<>*{}()=") or token.startswith("."):
            continue                                          # a pattern, an expression or an extension
        path, _, test = token.partition("::")
        if "/" in path or path.endswith(FILE_EXT):
            target = REPO / path
            if not target.exists():
                missing.append(token)
            elif test and f"def {test}(" not in target.read_text():
                missing.append(token)
        elif re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", token) and not _resolves(token):
            missing.append(token)
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"


def readme_run_line(rec: dict) -> str:
    """The README's numbers of the default run, as the measurement ``rec`` (docs/figures/default_run.json,
    written by ``python benchmarks/bench_workflow.py --run DIR --record FILE``) gives them."""
    minutes, seconds = divmod(round(rec["wall_s"]), 60)
    return (f"{rec['jobs']} jobs; {minutes} min {seconds:02d} s on a {rec['machine']['cpus']}-core machine "
            f"({rec['conditions']}), measured {rec['measured']} at {rec['commit']}")


def test_the_readmes_run_numbers_are_the_recorded_measurement_and_todays_job_count(tmp_path):
    """The README's job count and time of the default run cannot go stale unseen: they are the recorded
    measurement's, and its job count is what a dry run of the default configuration plans today (a
    change of the DAG fails here until the run is measured again)."""
    import json
    import subprocess
    import sys
    rec = json.loads((REPO / "docs" / "figures" / "default_run.json").read_text())
    readme = " ".join((REPO / "README.md").read_text().split())
    assert readme_run_line(rec) in readme
    dry = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                          str(tmp_path), "-n"], capture_output=True, text=True, timeout=600)
    planned = re.findall(r"^total\s+(\d+)$", dry.stdout + dry.stderr, flags=re.M)
    assert planned and int(planned[0]) == rec["jobs"], (planned, rec["jobs"])
