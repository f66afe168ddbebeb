"""The job set-up shared by the workflow scripts (mkclust.repro.jobs)."""

import logging
from types import SimpleNamespace

import pytest

from mkclust.repro.jobs import job, summary


def test_the_console_gets_one_line_per_job_and_each_warning_once(tmp_path, capsys):
    """Per-run and per-iteration lines (5,531 INFO lines on a default run's console) and every repeat
    of a warning (384 ODMC "stopped after max_iter", most twice) go to the job's log only; the console
    gets the job's summary with its time, and a repeated warning once, then its count."""
    import warnings

    smk = SimpleNamespace(threads=1, log=[str(tmp_path / "job.log")])
    with job(smk, "demo") as log:
        logging.getLogger("mkclust.algorithms.demo").debug("iteration detail")
        logging.getLogger("mkclust.algorithms.demo").info("fit done")
        logging.getLogger("matplotlib.font_manager").debug("findfont: scoring")
        logging.getLogger("matplotlib.font_manager").info("font cache rebuilt")
        logging.getLogger("cvxpy").warning("solver inaccurate")
        for gap in (0.5, 0.25, 0.125):
            logging.getLogger("mkclust.algorithms.odmc").warning("ODMC stopped with duality gap %.4g", gap)
        for k in range(3):
            warnings.warn(f"objective rose by {k}", UserWarning)
        summary(log, "demo: 3 fits, acc 0.9")
    err = capsys.readouterr().err.splitlines()
    text = (tmp_path / "job.log").read_text()
    assert [line for line in err if "fit done" in line or "iteration" in line or "font" in line] == []
    assert sum("solver inaccurate" in line for line in err) == 1
    assert sum(line.startswith("WARNING") and "ODMC stopped with duality gap" in line for line in err) == 1
    assert any("2 more warning(s) like 'ODMC stopped with duality gap 0.5'" in line for line in err)
    assert sum(line.startswith("WARNING") and "objective rose by" in line for line in err) == 1
    assert err[-1].startswith("mkclust: demo: 3 fits, acc 0.9 (") and err[-1].endswith(" s)")
    assert len(err) == 6
    for line in ("iteration detail", "fit done", "solver inaccurate", "duality gap 0.125", "objective rose by 2"):
        assert line in text
    assert "findfont" not in text and "font cache" not in text


def test_a_failure_is_logged_with_its_traceback_and_raised(tmp_path):
    smk = SimpleNamespace(threads=1, log=[str(tmp_path / "job.log")])
    with pytest.raises(ZeroDivisionError):
        with job(smk, "demo"):
            1 / 0
    text = (tmp_path / "job.log").read_text()
    assert "demo failed" in text and "Traceback" in text and "ZeroDivisionError" in text


def test_progress_lines_reach_info_at_most_once_per_interval(caplog):
    from mkclust.algorithms.base import Progress
    slow = Progress(logging.getLogger("mkclust.test.progress"), every=3600.0)
    with caplog.at_level(logging.DEBUG, logger="mkclust.test.progress"):
        for k in range(5):
            slow.info("iteration %d", k)
    assert [r.levelname for r in caplog.records] == ["INFO"] + ["DEBUG"] * 4
    assert [r.getMessage() for r in caplog.records] == [f"iteration {k}" for k in range(5)]
