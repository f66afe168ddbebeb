"""Where a result came from: the checkout's commit, the versions of the packages it depends on and
the BLAS it ran on. The run records, the run summary and the results archive's manifests read them
here."""

from __future__ import annotations

import functools
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

#: the packages a run record names: those a result can depend on (the BLAS numpy and scipy ship, the
#: solvers cvxpy and scipy call, numba's compiled loops); snakemake and matplotlib do not fit
RECORD_PACKAGES = ("mkclust", "numpy", "scipy", "scikit-learn", "cvxpy", "pandas", "numba", "clarabel", "ecos",
                   "scs", "threadpoolctl")

#: the packages named in the run summary and an archive piece's manifest (pieces archived before
#: 2026-12-03 name the first eight only)
PACKAGES = ("mkclust", "snakemake", "numpy", "scipy", "scikit-learn", "cvxpy", "pandas", "matplotlib",
            *RECORD_PACKAGES[6:])


def commit(path: str | Path) -> str:
    """The commit of the checkout holding ``path`` (``git describe --always --dirty``), or "unknown"
    outside git."""
    try:
        out = subprocess.run(["git", "-C", str(path), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def versions(packages=PACKAGES, missing="not installed") -> dict:
    """Installed versions of ``packages`` (read from metadata: nothing is imported); ``missing`` for
    one that is not installed."""
    out = {}
    for p in packages:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = missing
    return out


def record_versions() -> dict:
    """What a run record keeps: the Python version and :data:`RECORD_PACKAGES` (None if absent). Read
    once per process (a new dict each call): reading the packages' metadata took 6 ms, which a group of
    fast runs paid on every run."""
    return dict(_record_versions())


@functools.cache
def _record_versions() -> dict:
    return {"python": platform.python_version(), **versions(RECORD_PACKAGES, missing=None)}


def blas() -> list[dict]:
    """The BLAS and OpenMP libraries loaded in this process (threadpoolctl): API, version, threads."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{k: d.get(k) for k in ("internal_api", "version", "num_threads", "threading_layer", "architecture")}
            for d in threadpool_info()]


def blas_architectures(libraries: list[dict] | None = None) -> str:
    """The compute kernels the BLAS libraries chose for the CPU they run on: threadpoolctl's
    ``architecture`` (OpenBLAS picks its core type, "Haswell" or "SkylakeX", from the CPU when it
    loads), sorted and joined ("Haswell", or "Haswell, SkylakeX" where two libraries chose apart); of
    ``libraries`` (:func:`blas`'s list, as a piece's manifest keeps it, or threadpoolctl's own) or of
    this process. "" where no library names one (an OpenMP runtime, a BLAS threadpoolctl cannot read).
    Two machines with the same package versions and other kernels can order a sum differently: a
    method whose answer hangs on rounding moves with them (docs/running.md, 'Reruns across package
    versions')."""
    libs = blas() if libraries is None else libraries
    return ", ".join(sorted({str(d["architecture"]) for d in libs if d.get("architecture")}))


def architecture_difference(ours: str, theirs: str, label: str = "reference") -> str:
    """"Haswell (archive SkylakeX)" for two :func:`blas_architectures` that share no kernels; "" where
    they share one or either side does not say (run records written before 2026-12-07 do not). Sharing
    is enough: a piece's manifest names the libraries of the process that archived it, which can hold
    more than a run job's (on CI's machine a solver's own OpenBLAS added "Zen" to the run jobs' "Haswell");
    on one CPU, numpy's and scipy's BLAS choose the same kernels in every process."""
    return (f"{ours} ({label} {theirs})" if ours and theirs
            and not set(ours.split(", ")) & set(theirs.split(", ")) else "")


def version_differences(ours: dict, theirs: dict, skip=("mkclust",)) -> dict[str, tuple[str, str]]:
    """package -> (our version, theirs) for the packages both name with different versions (``python``
    included where both name it; ``skip``: the project itself, whose code is compared by other means).
    A package one side does not name (an older manifest lists fewer) is left out."""
    return {k: (str(ours[k]), str(theirs[k])) for k in sorted(set(ours) & set(theirs))
            if k not in skip and ours[k] is not None and theirs[k] is not None and str(ours[k]) != str(theirs[k])}


def differences_text(diff: dict[str, tuple[str, str]], theirs: str = "reference") -> str:
    """``numpy 1.26.4 (reference 2.4.6), scipy ...`` for :func:`version_differences`' result."""
    return ", ".join(f"{k} {a} ({theirs} {b})" for k, (a, b) in diff.items())
