"""The committed pages are the rebuild of the committed archives: results/paper/pages, docs/results.md and
the README's results summary from results/paper; results/benchmark/pages, the README's benchmark summary and
docs/benchmark.md's results from results/benchmark, each rebuilt with the README's command, byte for byte.
(In a file of their own, apart from test_archive.py's tiny archive: pytest-xdist gives each file to one
worker, and these two rebuilds took 120 and 95 s of CI's run on 2026-12-07.)"""

import json
import subprocess
import sys

import pytest

from mkclust.repro.configuration import load as load_config
from mkclust.repro.planning import plan

pytestmark = pytest.mark.workflow


def _rebuilt_pages(tmp_path, name: str, figures: bool = False):
    """The committed pages of ``results/<name>/pages`` (.md, .csv) and their rebuild from the committed
    archive ``results/<name>`` with workflow/configs/<name>.yaml, as the README's command makes it.
    ``figures``: the committed .png figures are drawn too (not compared: matplotlib's bytes are not
    the point), for a summary that links every figure of the run."""
    from _wf import REPO

    pages = REPO / "results" / name / "pages"
    kept = sorted(f.relative_to(pages) for f in pages.rglob("*") if f.is_file() and f.suffix in (".md", ".csv"))
    if not kept:
        pytest.skip(f"no pages of results/{name} committed")
    drawn = sorted(f.relative_to(pages) for f in pages.rglob("*.png")) if figures else []
    figs = tmp_path / "pages"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--cores", "2", "--configfile", str(REPO / f"workflow/configs/{name}.yaml"),
           "--config", f"results_archive=results/{name}",
           "archive_partial=true", f"figures_dir={figs}", f"data_dir={tmp_path / 'data'}", "--",
           *(str(figs / p) for p in kept + drawn), str(figs / "run_summary.json")]
    (tmp_path / "results").symlink_to(REPO / "results")      # the archive as the README's command names it
    # the benchmark's pages: 120 s in CI on 2026-12-07 (307 s before the tables' and the signed-rank test's
    # speed-ups); beside two other jobs it once passed 900 s
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=2400)
    assert r.returncode == 0, r.stderr[-4000:]
    for p in kept:
        assert (figs / p).read_bytes() == (pages / p).read_bytes(), f"results/{name}/pages/{p} differs from its rebuild"
    return figs


def test_the_readme_results_and_pages_are_the_rebuild_of_the_reference_run(tmp_path):
    """README.md's results summary, docs/results.md and results/paper/pages/ are what the rebuild from
    the committed archive gives, byte for byte (the commands in mkclust.repro.reporting.results' docstring)."""
    from _wf import REPO
    from mkclust.repro.reporting.results import BEGIN, END, page, summary_block

    figs = _rebuilt_pages(tmp_path, "paper")
    full = load_config(REPO / "workflow/configs/paper.yaml")
    assert page(figs, full, "results/paper/pages") == (REPO / "docs" / "results.md").read_text()
    readme = (REPO / "README.md").read_text()
    committed = BEGIN + readme.split(BEGIN, 1)[1].split(END, 1)[0] + END
    assert summary_block(figs, full, "results/paper/pages") == committed
    # the README's fit CPU hours per paper are the archive's own (the pieces' runs, `mkclust estimate
    # --measured`): equal where every group of the paper is in, never more where some are missing
    from mkclust.repro.calibration import measured
    summary = json.loads((figs / "run_summary.json").read_text())
    for r in measured(REPO / "results" / "paper", plan(full)).query("kind == 'paper'").itertuples():
        ours = sum(e["cpu_seconds"] for e in summary["experiments"] if e["paper"] == r.paper) / 3600
        assert ours <= r.fit_cpu_h + 1e-9, r.paper
        if r.complete:
            assert ours == pytest.approx(r.fit_cpu_h, rel=1e-9), r.paper


def test_the_readme_benchmark_summary_and_pages_are_the_rebuild_of_the_benchmark_archive(tmp_path):
    """The same for the benchmark: results/benchmark/pages/ and the README's benchmark summary."""
    from _wf import REPO
    from mkclust.repro.reporting.results import (BENCH_BEGIN, BENCH_END, DOC_BEGIN, DOC_END, benchmark_block,
                                                 benchmark_doc_block)

    figs = _rebuilt_pages(tmp_path, "benchmark", figures=True)
    readme = (REPO / "README.md").read_text()
    committed = BENCH_BEGIN + readme.split(BENCH_BEGIN, 1)[1].split(BENCH_END, 1)[0] + BENCH_END
    assert benchmark_block(figs, "results/benchmark/pages") == committed
    doc = (REPO / "docs/benchmark.md").read_text()   # and the results section of docs/benchmark.md
    committed = DOC_BEGIN + doc.split(DOC_BEGIN, 1)[1].split(DOC_END, 1)[0] + DOC_END
    assert benchmark_doc_block(figs, "../results/benchmark/pages") == committed
