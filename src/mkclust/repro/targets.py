"""Where the workflow writes what it makes: each path pattern once, for the rules' outputs (filled
with Snakemake wildcards such as ``"{paper}"``) and for a plan's targets (:class:`Targets`, the same
patterns filled with the plan's names). A run group's records file is :data:`mkclust.repro.run_spec.RECORDS_PATTERN`."""

from __future__ import annotations

#: the files of one table, one figure, one verdict page and the run summary
TABLE_EXTS = ("csv", "md", "tex", "html")
FIGURE_EXTS = ("png", "pdf")
VERDICT_EXTS = ("csv", "md", "html", "png")
SUMMARY_EXTS = ("json", "rst", "html")


def paper_output(figures_dir: str, paper: str, name: str, ext: str) -> str:
    """A paper's table, figure or verdict file: ``<figures_dir>/<paper>/<name>.<ext>``."""
    return f"{figures_dir}/{paper}/{name}.{ext}"


def results_path(data_dir: str, experiment: str) -> str:
    """An experiment's results table (its run records flattened): ``<data_dir>/results/<experiment>.csv``."""
    return f"{data_dir}/results/{experiment}.csv"


def reference_results_path(data_dir: str, experiment: str) -> str:
    """The reference run's rows of an experiment: ``<data_dir>/reference/<experiment>.csv``."""
    return f"{data_dir}/reference/{experiment}.csv"


def summary_path(figures_dir: str, ext: str) -> str:
    """The run summary: ``<figures_dir>/run_summary.<ext>``."""
    return f"{figures_dir}/run_summary.{ext}"


class Targets:
    """The files a plan makes, by the patterns above: what the Snakefile asks for and what each
    rule reads."""

    def __init__(self, plan):
        """``plan``: the :class:`~mkclust.repro.planning.Plan` whose files these are."""
        self.plan = plan

    def group_targets(self, experiment: str) -> list[str]:
        """The records files of one experiment's run groups."""
        return sorted({r.path(self.plan.data_dir) for r in self.plan.runs_of(experiment)})

    def _outputs(self, kind: str, exts: tuple[str, ...]) -> list[str]:
        p = self.plan
        return [paper_output(p.figures_dir, p.config["experiments"][exp]["paper"], name, ext)
                for exp, outs in p.outputs.items() for name in outs[kind] for ext in exts]

    def table_targets(self) -> list[str]:
        """Every table's files (:data:`TABLE_EXTS`)."""
        return self._outputs("tables", TABLE_EXTS)

    def figure_targets(self) -> list[str]:
        """Every figure's files (:data:`FIGURE_EXTS`)."""
        return self._outputs("figures", FIGURE_EXTS)

    def source_results(self, experiment: str) -> list[str]:
        """The results tables ``experiment``'s tables and figures read: its own, then those of the
        experiments it reuses."""
        return [results_path(self.plan.data_dir, e) for e in self.plan.sources(experiment)]

    def results_targets(self) -> list[str]:
        """Every experiment's results table."""
        return [results_path(self.plan.data_dir, e) for e in self.plan.config.get("experiments", {})]

    def paper_tables(self, paper: str) -> dict[str, str]:
        """table name -> its tidy CSV, for every table of the paper's experiments."""
        p = self.plan
        return {name: paper_output(p.figures_dir, paper, name, "csv")
                for e in p.experiments_of(paper) for name in p.outputs[e]["tables"]}

    def paper_results(self, paper: str) -> list[str]:
        """The results tables the paper's experiments read (their own and those they reuse)."""
        return list(dict.fromkeys(r for e in self.plan.experiments_of(paper) for r in self.source_results(e)))

    def verdict_targets(self) -> list[str]:
        """Each verdict page's files (:data:`VERDICT_EXTS`)."""
        return [paper_output(self.plan.figures_dir, p, "verdict", ext) for p in self.plan.verdict_papers()
                for ext in VERDICT_EXTS]

    def summary_targets(self) -> list[str]:
        """The run summary's files (:data:`SUMMARY_EXTS`)."""
        return [summary_path(self.plan.figures_dir, ext) for ext in SUMMARY_EXTS]
