"""Setup shared by the workflow's job scripts: logging to the rule's log file, the BLAS thread
limit of the job, and a logged traceback on failure."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Iterator


def _ours_or_warning(record: logging.LogRecord) -> bool:
    """This package's records at any level; other libraries' (matplotlib's font search, cvxpy,
    snakemake's helpers) from WARNING up only."""
    return record.name == "mkclust" or record.name.startswith("mkclust.") or record.levelno >= logging.WARNING


@contextlib.contextmanager
def job(smk, name: str) -> Iterator[logging.Logger]:
    """Run a workflow job's body: log to ``smk.log[0]`` (this package's DEBUG and up; other
    libraries' WARNING and up) and to stderr (the same from INFO up), limit BLAS/OpenMP threads to
    ``smk.threads`` for the whole job, log any exception with its traceback, then re-raise it."""
    from threadpoolctl import threadpool_limits

    threads = int(getattr(smk, "threads", 1) or 1)
    # BLAS already loaded in this process is limited by threadpool_limits below; the variables reach
    # libraries loaded later (e.g. a solver's OpenMP runtime) and any subprocess
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.INFO)          # DEBUG goes to the job's log file only
    handlers = [console]
    if smk.log:
        handlers.append(logging.FileHandler(smk.log[0], mode="w"))
    for h in handlers:
        h.addFilter(_ours_or_warning)
    logging.basicConfig(level=logging.DEBUG, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger(f"mkclust.job.{name}")
    log.info("start %s with %d thread(s)", name, threads)
    with threadpool_limits(limits=threads):
        try:
            yield log
        except Exception:
            log.exception("%s failed", name)
            raise
    log.info("done %s", name)
