"""Rule table: results CSVs (the experiment's and those it reuses) -> figures/<paper>/<table>.{csv,md,tex};
with a reference run, its cells beside ours (mkclust.repro.reporting.reference_run.compare_with_reference)."""
from pathlib import Path

from mkclust.repro.jobs import job, summary
from mkclust.repro.reporting import attach_causes, build_table, read_results, write_table
from mkclust.repro.reporting.learned import KINDS, with_pair_rows
from mkclust.repro.reporting.ranks import column_seconds, with_rank_rows
from mkclust.repro.reporting.reference_run import compare_with_reference
from mkclust.repro.reporting.shape import SHAPE_METRICS, shape_lines, top_kernels, with_shape_metrics

with job(snakemake, "table") as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    spec = sm.params.spec
    rows = spec.get("datasets") or sm.params.datasets  # a table's own rows, as figure.py
    results = read_results(sm.input.results)
    shape = any(m in SHAPE_METRICS for m in spec.get("metrics") or [])
    if shape:   # per-run metrics of how the solutions look (reporting.shape)
        results = with_shape_metrics(results)
    tidy = build_table(results, spec, rows)
    base = sm.output.csv[: -len(".csv")]
    if spec.get("reference"):  # figures/<paper>/<table>: the key of the gap causes
        tidy = attach_causes(tidy, Path(base).parent.name, Path(base).name,
                             mean_of_runs=spec["reference"].get("mean_of_runs", False))
    if "reference_results" in sm.input.keys():
        ref = read_results(sm.input.reference_results)
        ref = with_shape_metrics(ref) if shape else ref
        # the reference run's table, built the same way; its published values and tests are not needed
        ref_tidy = (build_table(ref, {k: v for k, v in spec.items() if k not in ("compare", "reference")}, rows)
                    if len(ref) else tidy.iloc[0:0])
        tidy = compare_with_reference(tidy, ref_tidy)
        log.info("reference run: %s", tidy["reference_state"].replace("", "not in it").value_counts().to_dict())
    legend = spec.get("legend", "")
    if spec.get("ranks"):   # a comparison over data sets: average ranks, Friedman, Nemenyi, a summary
        alpha = float(spec["ranks"].get("alpha", 0.05))
        tidy, lines = with_rank_rows(tidy, list(spec.get("metrics") or ["acc"]), alpha,
                                     column_seconds(results, spec), spec["ranks"].get("paper_sets"))
        legend = " ".join([legend, *lines]).strip()
    for kind in KINDS:   # pairs of columns: learned weights vs the average kernel, label-free vs oracle choices
        if spec.get(kind):
            tidy, lines = with_pair_rows(tidy, spec[kind], (spec.get("metrics") or ["acc"])[0], kind)
            legend = " ".join([legend, *lines]).strip()
    if shape:   # the shape metrics summed up per column
        lines = shape_lines(tidy, top_kernels(results, spec, rows), list(spec.get("columns") or {}))
        legend = " ".join([legend, *lines]).strip()
    write_table(tidy, base, spec.get("title", Path(base).name), legend, list(spec.get("columns") or {}))
    summary(log, f"table {base}: {len(tidy)} cells")
