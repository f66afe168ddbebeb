"""``mkclust results``: a run's results page and the README's results summary
(:mod:`mkclust.repro.reporting.results`)."""

from __future__ import annotations

import os
from pathlib import Path

from mkclust._cli import Parser
from mkclust._io import atomic_open
from mkclust.repro.configuration import load as load_config
from mkclust.repro.reporting.results import __doc__ as RESULTS_DOC
from mkclust.repro.reporting.results import (
    BENCH_BEGIN, BENCH_END, DOC_BEGIN, DOC_END, benchmark_block, benchmark_doc_block, is_benchmark, page,
    replace_section, summary_block,
)
from mkclust.repro.targets import summary_path


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="mkclust results", description=RESULTS_DOC.split("\n\n")[0])
    ap.add_argument("--figures", default="figures", type=Path, help="the run's figures folder")
    ap.add_argument("--full", type=Path, help="the full configuration, to say which of its data sets were run")
    ap.add_argument("--output", type=Path, help="write the results page here, whole (e.g. docs/results.md)")
    ap.add_argument("--readme", type=Path, help="rewrite this README's results summary, between its markers (the "
                                                "benchmark's summary, between its own, for the benchmark's run)")
    ap.add_argument("--pages", help="link the full verdicts at this folder of the repository (the run's figures "
                                    "folder, committed), e.g. results/paper/pages")
    ap.add_argument("--doc", type=Path, help="rewrite the benchmark's results in this document, between its markers "
                                             "(docs/benchmark.md): each ranked table's summary and every figure")
    a = ap.parse_args(argv)
    summary = summary_path(str(a.figures), "json")
    if not Path(summary).exists():
        raise FileNotFoundError(2, "not found: run the workflow first (or give its figures folder: --figures)", summary)
    full = load_config(a.full) if a.full else None
    if a.output:
        with atomic_open(a.output, "w", encoding="utf-8") as fh:
            fh.write(page(a.figures, full, a.pages))
    if a.readme and is_benchmark(a.figures):
        new = replace_section(a.readme.read_text(), benchmark_block(a.figures, a.pages), BENCH_BEGIN, BENCH_END)
        with atomic_open(a.readme, "w", encoding="utf-8") as fh:
            fh.write(new)
    elif a.readme:
        results_page = (str(Path(a.output).resolve().relative_to(a.readme.resolve().parent))
                        if a.output else "docs/results.md")
        new = replace_section(a.readme.read_text(), summary_block(a.figures, full, a.pages, results_page))
        with atomic_open(a.readme, "w", encoding="utf-8") as fh:
            fh.write(new)
    if a.doc:
        if not is_benchmark(a.figures):
            ap.error(f"--doc writes a benchmark's results; {a.figures} holds another run")
        link = os.path.relpath(a.pages or a.figures, a.doc.parent)   # both as seen from here (the repository)
        new = replace_section(a.doc.read_text(), benchmark_doc_block(a.figures, link), DOC_BEGIN, DOC_END)
        with atomic_open(a.doc, "w", encoding="utf-8") as fh:
            fh.write(new)
    if not a.output and not a.readme and not a.doc:
        print(page(a.figures, full, a.pages))
    return 0

