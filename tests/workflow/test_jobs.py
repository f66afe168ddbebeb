"""The job set-up shared by the workflow scripts (mkclust.repro.jobs)."""

import logging
from types import SimpleNamespace

import pytest

from mkclust.repro.jobs import job


def test_console_gets_info_the_log_file_debug_and_other_libraries_only_warnings(tmp_path, capsys):
    smk = SimpleNamespace(threads=1, log=[str(tmp_path / "job.log")])
    with job(smk, "demo"):
        logging.getLogger("mkclust.algorithms.demo").debug("iteration detail")
        logging.getLogger("mkclust.algorithms.demo").info("fit done")
        logging.getLogger("matplotlib.font_manager").debug("findfont: scoring")
        logging.getLogger("matplotlib.font_manager").info("font cache rebuilt")
        logging.getLogger("cvxpy").warning("solver inaccurate")
    err = capsys.readouterr().err
    text = (tmp_path / "job.log").read_text()
    assert "fit done" in err and "solver inaccurate" in err and "start demo" in err
    assert "DEBUG" not in err and "findfont" not in err and "font cache" not in err
    assert "iteration detail" in text and "fit done" in text and "solver inaccurate" in text
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
