import numpy as np
import pytest
from sklearn.datasets import make_blobs


@pytest.fixture
def blobs():
    """Three well-separated Gaussian blobs in 5-d (known structure)."""
    X, y = make_blobs(n_samples=150, centers=3, n_features=5, cluster_std=0.5, center_box=(-20, 20),
                      random_state=3)
    return X, y


def gaussian_gram(X, sigma):
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-D / (2 * sigma**2))


@pytest.fixture(scope="session")
def tiny_local(tmp_path_factory, request):
    """The tiny workflow configuration run locally once per session (once for all pytest-xdist
    workers): (its folder, a copy of its tables taken before any test changes the folder)."""
    from _wf import local_tiny_run

    return local_tiny_run(tmp_path_factory, shared=hasattr(request.config, "workerinput"))


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """The package built as a wheel once per session (pip, with build isolation, so it needs the package
    index: skipped without it, a failure under CI=true)."""
    import subprocess
    import sys
    from pathlib import Path

    from _machine import require_index

    require_index()
    out = tmp_path_factory.mktemp("wheel")
    repo = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(repo), "-w", str(out)],
                   check=True, capture_output=True, timeout=600)
    return next(out.glob("mkclust-*.whl"))


#: the BLAS/OpenMP thread limit of this test worker (set in pytest_configure; None outside pytest-xdist)
WORKER_THREADS = None
_limits = None


def pytest_configure(config):
    """Each pytest-xdist worker limits its BLAS and OpenMP threads to its share of the cores (cores //
    workers, at least 1), so that the workers together ask for no more threads than there are cores.
    With the default two threads per library on CI's two cores and two workers, OpenBLAS's threads wait
    for cores the other worker holds: the five numerics-heavy library files (test_mkc, test_mmc_baselines,
    test_odmc, test_lowrank, test_scmk) took 144-149 s with two workers, 92 s with one thread each
    (2026-12-07). The libraries loaded by now are limited, in this process only (threadpoolctl): the
    processes a test starts keep the machine's default, so that a workflow job's own limit (its rule's
    threads) is what the tests of jobs see."""
    global WORKER_THREADS, _limits
    workers = getattr(config, "workerinput", {}).get("workercount")
    if not workers:
        return
    import os

    import scipy.linalg  # noqa: F401  (scipy's own BLAS, loaded before the limit)
    from threadpoolctl import threadpool_limits

    WORKER_THREADS = max(1, len(os.sched_getaffinity(0)) // int(workers))
    _limits = threadpool_limits(limits=WORKER_THREADS)


def pytest_report_header(config):
    """Where the tests look for what the machine may lack (tests/_machine.py)."""
    import sys

    from _machine import MIRROR, NO_MIRROR, site_dirs

    mirror = f"data mirror: {MIRROR}" if (MIRROR / "MANIFEST.tsv").is_file() else NO_MIRROR
    return [mirror, f"packages: {sys.prefix} ({', '.join(site_dirs())})"]


#: the skip reasons that name something the machine lacks, as tests/_machine.py and the SLURM test word them
MACHINE_REASONS = ("no data mirror", "no package index", "no loopback SLURM cluster")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line counting the tests skipped for what this machine lacks, per reason, so a summary of
    "N skipped" says why."""
    counts: dict[str, int] = {}
    for rep in terminalreporter.stats.get("skipped", []):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reason = reason.removeprefix("Skipped: ")
        key = next((k for k in MACHINE_REASONS if reason.startswith(k)), None)
        if key:
            counts[reason] = counts.get(reason, 0) + 1
    if counts:
        terminalreporter.write_sep("-", "skipped for what this machine lacks")
        for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{n} tests: {reason}")
