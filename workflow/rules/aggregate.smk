# Stage 4: all run records of an experiment -> data/results/<experiment>.csv (one row per run); with
# results_archive, the archive's rows of the experiment's planned runs instead (mkclust.repro.archive)


rule aggregate:
    input:
        lambda wc: archive_files(ARCHIVE) if ARCHIVE else PLAN.targets.group_targets(wc.experiment),
    output:
        results_path(DATA, "{experiment}"),
    params:
        archive=ARCHIVE,   # with results_archive: the rows of the archive, no run records
        partial=bool(config.get("archive_partial")),
    resources:
        mem_mb=lambda wc, input, attempt: RES.records_mem_mb(input, attempt),
        runtime=lambda wc, attempt: RES.BASE_MINUTES * attempt,
    log:
        f"{DATA}/logs/aggregate/{{experiment}}.log",
    conda:
        ENV
    script:
        "../scripts/aggregate.py"


# With reference_run: the reference archive's rows of the runs this configuration plans (the groups it
# holds), to set beside this run's cells in every table (rule table)
rule reference_results:
    input:
        lambda wc: archive_files(REFERENCE_RUN),
    output:
        reference_results_path(DATA, "{experiment}"),
    params:
        archive=REFERENCE_RUN,
        partial=True,
    resources:
        mem_mb=lambda wc, input, attempt: RES.records_mem_mb(input, attempt),
        runtime=lambda wc, attempt: RES.BASE_MINUTES * attempt,
    log:
        f"{DATA}/logs/reference/{{experiment}}.log",
    conda:
        ENV
    script:
        "../scripts/aggregate.py"
