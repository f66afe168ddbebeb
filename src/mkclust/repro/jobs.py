"""Setup shared by the workflow's job scripts: logging to the rule's log file, a console that stays
readable, the BLAS thread limit of the job, and a logged traceback on failure.

The console (stderr, which Snakemake shows) gets one line per job when it finishes (its
:func:`summary` and its time), its warnings and errors, and a warning that repeats (the same message for every fit
of a group, say) only the first time, with a count at the end of the job. Everything else (per-run
and per-iteration detail, every repeat of a warning, other libraries' warnings) goes to the job's
log file, ``data/logs/...``."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from typing import Iterator

import mkclust

#: the ``extra`` of a log record that belongs on the console: a job's headline
CONSOLE = {"console": True}


def _ours_or_warning(record: logging.LogRecord) -> bool:
    """This package's records at any level; other libraries' (matplotlib's font search, cvxpy,
    snakemake's helpers) from WARNING up only."""
    return record.name == "mkclust" or record.name.startswith("mkclust.") or record.levelno >= logging.WARNING


class _ConsoleFormat(logging.Formatter):
    """A headline as it is; a warning or an error with its level and where it comes from."""

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "console", False):
            return "mkclust: " + record.getMessage()
        return super().format(record)


class _Console(logging.Filter):
    """Headlines, errors, and each warning the first time its message template is seen in the job;
    the repeats are counted (:meth:`repeats`)."""

    def __init__(self):
        super().__init__()
        self.seen: dict[tuple, int] = {}
        self.first: dict[tuple, str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "console", False) or record.levelno >= logging.ERROR:
            return True
        if record.levelno < logging.WARNING:
            return False
        # a Python warning's text holds its numbers; its file, line and category identify it
        key = (record.name, ":".join(str(record.msg).split(":")[:3]) if record.name == "py.warnings"
               else str(record.msg))
        self.seen[key] = self.seen.get(key, 0) + 1
        self.first.setdefault(key, record.getMessage())
        return self.seen[key] == 1

    def repeats(self) -> list[tuple[str, int]]:
        """(the first message, how many more came) of each warning that repeated."""
        return [(self.first[key], n - 1) for key, n in self.seen.items() if n > 1]


def _one_line(message, category, filename, lineno, line=None) -> str:
    """A Python warning as one line: where it was raised, its category and its message."""
    return f"{filename}:{lineno}: {category.__name__}: {message}"


def headline(log: logging.Logger, message: str, *args) -> None:
    """A line for the console (and the log) now."""
    log.info(message, *args, extra=CONSOLE)


def summary(log: logging.Logger, text: str) -> None:
    """What the job did, in a few words: its console line when it finishes, with its time."""
    log.job_summary = text


@contextlib.contextmanager
def job(smk, name: str) -> Iterator[logging.Logger]:
    """Run a workflow job's body: log to ``smk.log[0]`` (this package's DEBUG and up; other
    libraries' and Python's warnings too) and to the console as the module docstring says, limit
    BLAS/OpenMP threads to ``smk.threads`` for the whole job, log any exception with its traceback,
    then re-raise it."""
    from threadpoolctl import threadpool_limits

    threads = int(getattr(smk, "threads", 1) or 1)
    # BLAS already loaded in this process is limited by threadpool_limits below; the variables reach
    # libraries loaded later (e.g. a solver's OpenMP runtime) and any subprocess
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(_ConsoleFormat("%(levelname)s %(name)s: %(message)s"))
    shown = _Console()
    console.addFilter(_ours_or_warning)
    console.addFilter(shown)
    handlers = [console]
    log_file = smk.log[0] if smk.log else None
    if log_file:
        handler = logging.FileHandler(log_file, mode="w")
        handler.addFilter(_ours_or_warning)
        handlers.append(handler)
    if log_file:
        handlers[-1].setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG, handlers=handlers, force=True)
    logging.captureWarnings(True)     # warnings.warn (solvers, GUMKL) into the log, deduplicated like the rest
    warnings.formatwarning = _one_line
    log = logging.getLogger(f"mkclust.job.{name}")
    log.info("start %s with %d thread(s), mkclust from %s", name, threads, mkclust.__path__[0])
    t0 = time.perf_counter()
    with threadpool_limits(limits=threads):
        try:
            yield log
        except Exception:
            log.exception("%s failed", name)
            raise
    where = f" (all in {log_file})" if log_file else ""
    for msg, n in shown.repeats():
        headline(log, "... and %d more warning(s) like %r%s", n, msg[:80], where)
    headline(log, "%s (%.1f s)", getattr(log, "job_summary", None) or f"{name} done", time.perf_counter() - t0)
