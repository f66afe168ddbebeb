"""The results of a run in two generated texts (never edited by hand):

- a results page (``--output docs/results.md``), written whole: for each paper its verdict
  (``figures/<paper>/verdict.csv``) and its headline table (the ``headline`` of the paper's
  ``papers:`` entry in its protocol file), with where the results
  came from (a run's commit and date, or a results archive's pieces) and, given the full
  configuration, which of its data sets they cover;
- the README's results summary (``--readme README.md``): one line per paper, the claims that hold,
  the data sets covered and the fit CPU hours, between :data:`BEGIN` and :data:`END`; for the benchmark's run
  (``workflow/configs/benchmark.yaml``) its own summary between :data:`BENCH_BEGIN` and
  :data:`BENCH_END` (:func:`benchmark_block`).

From the reference run (``results/paper``, rebuilt without fitting; its pages committed)::

    snakemake --cores 2 --configfile workflow/configs/paper.yaml --config results_archive=results/paper \
        archive_partial=true figures_dir=results/paper/pages data_dir=/tmp/rebuild
    mkclust results --figures results/paper/pages --full workflow/configs/paper.yaml \
        --pages results/paper/pages --output docs/results.md --readme README.md

and from the benchmark's archive (``results/benchmark``, its pages committed too)::

    snakemake --cores 2 --configfile workflow/configs/benchmark.yaml --config results_archive=results/benchmark \
        archive_partial=true figures_dir=results/benchmark/pages data_dir=/tmp/rebuild-benchmark
    mkclust results --figures results/benchmark/pages --pages results/benchmark/pages --readme README.md
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mkclust._io import read_json
from mkclust.repro.captions import paper_name
from mkclust.repro.reporting.pages import not_evaluated_note
from mkclust.repro.reporting.learned import learned_line
from mkclust.repro.reporting.ranks import RANK_ROW, apart_line, ranking, summary_lines
from mkclust.repro.reporting.tables import read_table
from mkclust.repro.targets import paper_output, summary_path

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
BENCH_BEGIN, BENCH_END = "<!-- benchmark:begin -->", "<!-- benchmark:end -->"
BENCHMARK = "benchmark"     # the benchmark protocol's paper name (workflow/protocols/benchmark.yaml)
#: the markers of the benchmark's results in its document (docs/benchmark.md; :func:`benchmark_doc_block`)
DOC_BEGIN, DOC_END = "<!-- benchmark-results:begin -->", "<!-- benchmark-results:end -->"


def run_summary(figures: Path) -> dict:
    """The run summary (``run_summary.json``) of the figures folder ``figures``."""
    return read_json(summary_path(str(figures), "json"), "run summary")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 3600:.2f} h"


def coverage(summary: dict, full: dict | None, paper: str) -> list[str]:
    lines = []
    for e in summary["experiments"]:
        if e["paper"] != paper:
            continue
        ds = e["datasets"]
        text = (f"`{e['experiment']}`: {len(ds)} data sets ({', '.join(ds)}), {e['runs']} runs, "
                f"{_duration(e['cpu_seconds'])} of fit CPU")
        if full and e["experiment"] in full.get("experiments", {}):
            every = full["experiments"][e["experiment"]]["datasets"]
            missing = [d for d in every if d not in ds]
            where = "not in the archive yet" if summary.get("archive") else "not run here"
            text += (f"; the full configuration's {len(every)} data sets" if not missing else
                     f"; {where}: {', '.join(missing)} ({len(missing)} of {len(every)})")
        lines.append(f"- {text}")
    return lines


def _origin(summary: dict) -> str:
    """Where the results came from: a run (its date and commit) or a results archive (its pieces)."""
    arch = summary.get("archive")
    if not arch:
        return (f"the run whose last results were written {summary.get('finished') or summary['date']}, summarised at "
                f"commit `{summary['commit']}`")
    pieces = "; ".join(f"`{m['piece']}` ({m['groups']} run groups, computed at `{m['commit']}`, "
                       f"archived {m['archived']})"
                       for m in arch["pieces"])
    missing = (f"; {arch['left_out']} run groups of the configuration are not in it yet (their cells are missing, "
               "each verdict lists them)" if arch["left_out"] else "")
    if arch["stale"]:
        missing += (f"; {arch['stale']} run groups in it come from code that has changed since and are to be "
                    "computed again (each verdict says which; `mkclust archive missing` lists them)")
    return f"the results archive `{arch['path']}`, rebuilt without fitting (pieces: {pieces}{missing})"


def _verdicts(figures: Path, summary: dict) -> list[tuple[str, str | None, pd.DataFrame]]:
    """(paper, headline table, verdict rows) of each paper of the run with a verdict page, in the
    order of its experiments; the headline table is the ``headline`` of the paper's ``papers:`` entry
    (the protocol files'), None without one."""
    papers = summary.get("papers") or {}
    out = []
    for paper in dict.fromkeys(e["paper"] for e in summary["experiments"]):
        vpath = Path(paper_output(str(figures), paper, "verdict", "csv"))
        if vpath.exists():
            out.append((paper, (papers.get(paper) or {}).get("headline"), pd.read_csv(vpath, keep_default_na=False)))
    return out


def _header(summary: dict) -> str:
    return (f"Generated by `mkclust results` from {_origin(summary)}: configuration "
            f"{', '.join(Path(c).name for c in summary['configfiles'])}; "
            f"{summary['runs']} runs, {summary['cpu_seconds'] / 3600:.2f} h of fit CPU time in all"
            + (f" ({summary['job_cpu_seconds'] / 3600:.2f} h of CPU in the run jobs, with their start-up). "
               if summary.get("job_cpu_seconds") else ". ") +
            "Each claim is tested as the paper tests it; 'published' is the same comparison on the paper's "
            "printed numbers. † marks a claim or cell that involves a choice made by looking at the true labels.")


def section(figures: Path, full: dict | None = None, pages: str | None = None, link_prefix: str = "") -> str:
    """Per paper: the claims, the data covered and the headline table. ``pages``: the folder of the
    repository holding the run's generated pages, linked as ``link_prefix + pages`` (``../`` from
    ``docs/``); else the run's ``figures/`` is named."""
    summary = run_summary(figures)
    out = [_header(summary), ""]
    for paper, table, v in _verdicts(figures, summary):
        held = int((v["status"] == "holds").sum())
        name = paper_name(paper, summary.get("papers"))
        out += [f"## {name}: {held} of {len(v)} claims hold{not_evaluated_note(v)}", ""]
        out += coverage(summary, full, paper) + [""]
        out += ["| claim | verdict | ours | published |", "|---|---|---|---|"]
        for r in v.itertuples():
            mark = " †" if str(r.oracle).lower() == "true" else ""
            cells = [r.claim + mark, r.status, r.numbers, r.published or "–"]
            out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
        tpath = Path(paper_output(str(figures), paper, table, "md")) if table else None
        if tpath and tpath.exists():
            published = pd.read_csv(tpath.with_suffix(".csv"))["published"].notna().any()
            note = "; in parentheses the published value and our difference" if published else ""
            out += ["", f"Headline table (`{paper}/{table}.md`{note}):", ""]
            out += [ln for ln in tpath.read_text().splitlines() if ln.startswith("|")]   # the rows, not the legend
        if pages:
            link = f"{link_prefix}{pages}/{paper}"
            out += ["", f"Full verdict with the cause of every gap: [{pages}/{paper}/verdict.md]({link}/verdict.md); "
                    f"every table of the paper: [{pages}/{paper}/]({link}/).", ""]
        else:
            out += ["", f"Full verdict with the cause of every gap: `figures/{paper}/verdict.md` of the run.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def page(figures: Path, full: dict | None = None, pages: str | None = None) -> str:
    """The whole results page (``docs/results.md``): a title, how it is regenerated, :func:`section`."""
    return ("# Results\n\nWhat the papers' claims came to, generated from a run's outputs by "
            "`mkclust results` (do not edit by hand; its docstring gives the commands that "
            "rebuild it from the reference run).\n\n" + section(figures, full, pages, link_prefix="../"))


def summary_block(figures: Path, full: dict | None = None, pages: str | None = None,
                  results_page: str = "docs/results.md") -> str:
    """The README's results summary: per paper the claims that hold, the data sets covered and the fit
    CPU hours its runs recorded (for a results archive, the sum over its pieces: once no group is
    missing, the configuration's measured cost)."""
    summary = run_summary(figures)
    arch = summary.get("archive")
    k = len(arch["pieces"]) if arch else 0
    where = (f"the reference run `{arch['path']}` ({k} piece{'s' if k != 1 else ''}"
             + (f"; {arch['left_out']} run groups of the configuration not in it yet" if arch["left_out"] else "")
             + (f"; {arch['stale']} from code since changed, to be computed again" if arch["stale"] else "")
             + ")") if arch else (f"the run of {summary.get('finished') or summary['date']} "
                                  f"(commit `{summary['commit']}`)")
    hours = summary["cpu_seconds"] / 3600
    out = [BEGIN, "", f"Generated from {where}; per claim, with our numbers and the published ones: "
           f"[{results_page}]({results_page}). Fit CPU hours: the CPU time its runs recorded, "
           f"{hours:.2f} h in all" + (" (the groups not in it yet not counted)." if arch and arch["left_out"]
                                      else "."), "",
           "| paper | claims that hold | data sets covered | fit CPU hours | full verdict |", "|---|---|---|---|---|"]
    for paper, _, v in _verdicts(figures, summary):
        held = int((v["status"] == "holds").sum())
        mine = [e for e in summary["experiments"] if e["paper"] == paper]
        ran = {e["experiment"]: set(e["datasets"]) for e in mine}
        ours = sorted(set().union(*ran.values()))
        planned = {name: e.get("datasets", []) for name, e in (full or {}).get("experiments", {}).items()
                   if e.get("paper") == paper}
        every = sorted({d for sets in planned.values() for d in sets})
        # a set is covered when every experiment of the paper that lists it ran it whole
        whole = [d for d in every if all(d in ran.get(name, ()) for name, sets in planned.items() if d in sets)]
        covered = f"{len(whole)} of {len(every)}" if every else str(len(ours))
        link = f"[verdict]({pages}/{paper}/verdict.md)" if pages else f"`figures/{paper}/verdict.md`"
        name = paper_name(paper, summary.get("papers"))
        cpu = sum(e["cpu_seconds"] for e in mine) / 3600
        out.append(f"| {name} | {held} of {len(v)}{not_evaluated_note(v)} | {covered} | {cpu:.2f} | {link} |")
    return "\n".join(out + ["", END])


def is_benchmark(figures: Path) -> bool:
    """Whether the run of ``figures`` is the benchmark's (its experiments belong to :data:`BENCHMARK`)."""
    return {e["paper"] for e in run_summary(figures)["experiments"]} == {BENCHMARK}


def benchmark_block(figures: Path, pages: str | None = None, doc: str = "docs/benchmark.md", paper: str = BENCHMARK,
                    table: str | None = None, figure: str = "cd_all_defaults", metric: str = "acc") -> str:
    """The README's benchmark summary: while groups of the configuration are missing from its archive,
    how many; once it is whole, the ranking of ``paper``'s ``table`` (default its ``headline`` in the
    protocol's ``papers:`` entry: every method at its defaults) on ``metric`` as
    :func:`~mkclust.repro.reporting.ranks.summary_lines` words it, and the critical-difference diagram
    ``figure``."""
    summary = run_summary(figures)
    arch = summary.get("archive")
    k = len(arch["pieces"]) if arch else 0
    where = (f"generated from its archive `{arch['path']}`, {k} piece{'s' if k != 1 else ''}" if arch else
             f"generated from the run of {summary.get('finished') or summary['date']}")
    head = f"**Every method on every paper's data sets** ([{doc}]({doc}), {where})"
    if _missing(arch):
        return "\n".join([BENCH_BEGIN, "", f"{head}: {_missing(arch)}", "", BENCH_END])
    table = table or summary["papers"][paper]["headline"]
    tidy = read_table(paper_output(str(figures), paper, table, "csv"))
    lines = summary_lines(*ranking(tidy, metric), pairs=False) + [t for t in [apart_line(tidy, metric)[1]] if t]
    text = f"{head}, every method at its defaults: " + " ".join(lines)
    text += _stale(arch)
    folder = f"{pages}/{paper}" if pages else f"figures/{paper}"
    return "\n".join([BENCH_BEGIN, "", text, "", f"![The critical-difference diagram]({folder}/{figure}.png)",
                      "", BENCH_END])


def _missing(arch: dict | None) -> str:
    """What a partial benchmark archive lacks, in words; empty when no group is missing (or there is no
    archive). Stale groups alone do not withhold the ranking: their rows stay until a piece replaces
    them, as a paper's cells do (:func:`_stale` says so)."""
    if not arch or not arch["left_out"]:
        return ""
    stale = f" and {arch['stale']} to be computed again" if arch["stale"] else ""
    return (f"being computed, {arch['left_out']} run groups of the configuration not in the archive yet{stale}; "
            "its average ranks, Friedman's test and critical-difference diagram are written here once it is whole.")


def _stale(arch: dict | None) -> str:
    """" N of its run groups ..." where a whole archive holds groups from code changed since, else ""."""
    if not arch or not arch["stale"]:
        return ""
    return (f" {arch['stale']} of its run groups come from code that has changed since and are to be computed "
            "again; the ranks use their archived results until then.")


def benchmark_doc_block(figures: Path, link: str, paper: str = BENCHMARK, metric: str = "acc") -> str:
    """The benchmark's results in its document (docs/benchmark.md), between :data:`DOC_BEGIN` and
    :data:`DOC_END`: per table with average-rank rows, its title, a link to it and its summary on
    ``metric`` (:func:`~mkclust.repro.reporting.ranks.summary_lines`, generated from the table's own
    values), then every figure of the run. ``link``: the figures folder as the document reaches it
    (e.g. ../results/benchmark/pages). While its archive lacks groups, what it lacks instead."""
    arch = run_summary(figures).get("archive")
    if _missing(arch):
        return "\n".join([DOC_BEGIN, "", f"The benchmark is {_missing(arch)}", "", DOC_END])
    out, folder = [DOC_BEGIN, ""], Path(figures) / paper
    for csv in sorted(folder.glob("*.csv")):
        tidy = read_table(csv)
        if not (tidy["dataset"] == RANK_ROW).any():
            continue
        title = csv.with_suffix(".md").read_text(encoding="utf-8").split("\n", 1)[0].strip("*")
        lines = summary_lines(*ranking(tidy, metric)) + [t for t in [apart_line(tidy, metric)[1],
                                                                      learned_line(tidy, metric)] if t]
        out += [f"**{title}** ([{csv.stem}]({link}/{paper}/{csv.stem}.md)): " + " ".join(lines) + _stale(arch), ""]
    for png in sorted(folder.glob("*.png")):
        out += [f"![{png.stem}]({link}/{paper}/{png.name})", ""]
    return "\n".join(out + [DOC_END])


def replace_section(readme: str, new: str, begin: str = BEGIN, end: str = END) -> str:
    if begin not in readme or end not in readme:
        raise ValueError(f"the README has no {begin} ... {end} markers")
    head, rest = readme.split(begin, 1)
    return head + new + rest.split(end, 1)[1]
