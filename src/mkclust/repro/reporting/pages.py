"""Pages a person reads: a table as HTML (for the Snakemake report), a paper's verdict (markdown,
HTML, CSV and a figure) and the run summary (what was run: configuration, data sets and their flags,
commit, package versions, CPU time). Every file is written atomically."""

from __future__ import annotations

import html
import json
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from mkclust._io import atomic_open
from mkclust.repro.reference import CAUSES
from mkclust.repro.provenance import commit, versions
from mkclust.repro.reporting._html import html_page, html_table, write_text
from mkclust.repro.reporting.reference_run import reference_counts, reference_line, reference_packages
from mkclust.repro.reporting.causes import cell_list, gap_groups
from mkclust.repro.reporting.tables import finished_runs
from mkclust.repro.reporting.verdicts import VERDICT_COLUMNS, gap_counts

# ------------------------------------------------------------------------------------------------
# verdict
# ------------------------------------------------------------------------------------------------

VERDICT_HEADER = ["claim", "tested as", "verdict", "ours", "published values"]


def _verdict_rows(verdicts: pd.DataFrame) -> list[list[str]]:
    return [[r.claim + (" †" if r.oracle else ""), r.form, r.status, r.numbers, r.published or "–"]
            for r in verdicts.itertuples()]


def _gap_sections(tables: dict):
    """(table, cells with a published value, its gap groups) of each table with published values."""
    for name, tidy in tables.items():
        pub = int(tidy["published"].notna().sum()) if "published" in tidy.columns else 0
        if pub:
            yield name, pub, gap_groups(tidy)


def _sets(names: list[str]) -> str:
    return f"{len(names)} ({', '.join(names)})"


def data_lines(data: list[dict] | None) -> list[str]:
    """One sentence per experiment of the paper (:meth:`mkclust.repro.planning.Plan.paper_data`): which
    of its data sets are the paper's own and which are stand-ins, so a verdict on stand-ins is not
    read as a verdict on the paper's data."""
    out = []
    for d in data or []:
        e, own, other = d["experiment"], d["own"], d["stand_in"]
        if not d["known"]:
            out.append(f"`{e}`: data sets {_sets(other)}; the experiment names none of the paper's own.")
        elif own and other:
            out.append(f"`{e}`: the paper's own data sets {_sets(own)}; stand-ins {_sets(other)}, which are "
                       "not the paper's data and have no published values.")
        elif own:
            out.append(f"`{e}`: the paper's own data sets {_sets(own)}.")
        else:
            out.append(f"`{e}`: stand-ins only {_sets(other)}: none of the paper's data sets runs here, so its "
                       "claims are tested on other data than the paper's and no cell has a published value.")
    return out


def not_evaluated_note(verdicts: pd.DataFrame) -> str:
    """' (k not evaluated)' for claims that no case of this run could test, else ''."""
    k = int((verdicts["status"] == "not evaluated").sum())
    return f" ({k} not evaluated)" if k else ""


def _headline(verdicts: pd.DataFrame, data: list[dict] | None) -> str:
    held = int((verdicts["holds"] == True).sum())  # noqa: E712  (None: not evaluated)
    text = f"{held} of {len(verdicts)} claims hold on our runs{not_evaluated_note(verdicts)}"
    if data and not any(d["own"] for d in data):
        return text + ", on stand-in data sets, none of them the paper's own (see Data)."
    return text + "."


def archive_lines(left_out: list[str] | None, stale: dict[str, str] | None = None) -> list[str]:
    """What a rebuild from a results archive lacks: the run groups a partial archive left out
    (``archive_partial``), and those it holds from code that has changed since (``stale``: group ->
    why, :func:`mkclust.repro.archive.mark_stale`), per algorithm and reason."""
    out = []
    if left_out:
        out.append(f"Left out: {len(left_out)} run group(s) not in the results archive, so their cells are missing: "
                   + ", ".join(left_out[:20]) + (" ..." if len(left_out) > 20 else "") + ".")
    if stale:
        count: dict[tuple[str, str], int] = {}
        for g, why in stale.items():
            key = (g.split("/")[1], why)
            count[key] = count.get(key, 0) + 1
        out.append(f"To be computed again: {len(stale)} run group(s) of the results archive come from code that has "
                   "changed since, and their cells show those results until a later piece replaces them: "
                   + "; ".join(f"{alg}, {n} group(s) ({why})" for (alg, why), n in sorted(count.items())) + ".")
    return out


def _reference(tables: dict, reference_run: str | None) -> str:
    """The sentence on the reference run (:func:`mkclust.repro.reporting.reference_run.reference_line`), or ""."""
    if not reference_run:
        return ""
    return reference_line({**reference_counts(tables), "packages": reference_packages(reference_run)}, reference_run)


def verdict_markdown(title: str, verdicts: pd.DataFrame, tables: dict, data: list[dict] | None = None,
                     left_out: list[str] | None = None, reference_run: str | None = None,
                     stale: dict[str, str] | None = None) -> str:
    lines = [f"# {title}", "", f"**{_headline(verdicts, data)}**", ""]
    if data:
        lines += ["Data: " + " ".join(data_lines(data)), ""]
    for line in archive_lines(left_out, stale):
        lines += [line, ""]
    if reference_run:
        lines += [_reference(tables, reference_run), ""]
    lines += ["| " + " | ".join(VERDICT_HEADER) + " |", "|" + "---|" * len(VERDICT_HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in _verdict_rows(verdicts)]
    lines += ["", LEGEND, "", "## Cells more than 2 points from the published value, by cause", ""]
    sections = list(_gap_sections(tables))
    if not sections:
        lines += ["No table of this paper has published values in this configuration.", ""]
    for name, pub, groups in sections:
        lines += [f"### {name}: {sum(len(g) for *_, g in groups)} of {pub} cells with a published value", ""]
        lines += [f"- **{c}** ({CAUSES[c]}): {e or 'no evidence recorded'} [{len(g)}: {cell_list(g)}]"
                  for c, e, g in groups]
        lines += [""]
    return "\n".join(lines)


LEGEND = ("Each claim is the paper's, in the form its table or figure tests it; 'ours' evaluates that comparison "
          "on this run's tables and results, 'published values' the same comparison on the paper's printed "
          "numbers where it prints them. † a column of the claim was chosen by looking at the true labels "
          "(an oracle, as the paper does). Cause categories: "
          + "; ".join(f"{k}: {v}" for k, v in CAUSES.items()) + ".")


def verdict_html(title: str, verdicts: pd.DataFrame, tables: dict, data: list[dict] | None = None,
                 left_out: list[str] | None = None, reference_run: str | None = None,
                 stale: dict[str, str] | None = None) -> str:
    cls = ["holds" if h is True else "fails" if h is False else "na" for h in verdicts["holds"]]
    parts = [f"<p><b>{html.escape(_headline(verdicts, data))}</b></p>"]
    if data:
        parts.append("<p>Data: " + html.escape(" ".join(data_lines(data)).replace("`", "")) + "</p>")
    parts += [f"<p>{html.escape(line)}</p>" for line in archive_lines(left_out, stale)]
    if reference_run:
        parts.append(f"<p>{html.escape(_reference(tables, reference_run))}</p>")
    parts += [html_table(VERDICT_HEADER, _verdict_rows(verdicts), cls), f"<p>{html.escape(LEGEND)}</p>"]
    for name, _, groups in _gap_sections(tables):
        parts.append(f"<h4>{html.escape(name)}: cells more than 2 points from the published value</h4>")
        parts.append(html_table(["cause", "evidence", "cells"],
                                [[f"{c} ({CAUSES[c]})", e or "no evidence recorded", f"{len(g)}: {cell_list(g)}"]
                                 for c, e, g in groups])
                     if groups else "<p>none</p>")
    return html_page(title, parts)


def verdict_figure(title: str, verdicts: pd.DataFrame, tables: dict):
    """Left: each claim's share of cases that hold (green: the claim holds, red: it does not), with
    the same comparison on the published numbers as a diamond. Right: the cells far from the
    published values per table, stacked by cause."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mkclust.repro.reporting._titles import title as _title

    counts = gap_counts(tables)
    # each claim whole, wrapped (a cut label hid the table it names); no right panel without published values
    labels = ["\n".join(textwrap.wrap(c + (" †" if o else ""), 58)) for c, o in zip(verdicts["claim"],
                                                                                 verdicts["oracle"])]
    lines = sum(max(label.count("\n") + 1, 1) for label in labels) or 1
    height = 0.32 * lines + 0.2 * len(labels) + 1.8
    if counts.empty:
        fig, ax = plt.subplots(figsize=(8.5, height))
        axes = [ax]
    else:
        fig, axes = plt.subplots(1, 2, figsize=(12, height), gridspec_kw={"width_ratios": [3, 2]})
    ax = axes[0]
    label = "published values"
    for i, r in enumerate(verdicts.itertuples()):
        share = r.held / r.cases if r.cases else 0.0
        color = {True: "tab:green", False: "tab:red"}.get(r.holds, "tab:gray")
        ax.barh(i, 1.0, color=color, alpha=0.15)      # the verdict's colour across the row
        ax.barh(i, share, color=color)
        ax.text(0.01, i, f"{r.held}/{r.cases}  {r.status}", va="center", fontsize=7)
        if pd.notna(r.published_held) and r.published_cases:   # the same comparison on the published numbers
            ax.plot([r.published_held / r.published_cases], [i], "kD", markersize=5, label=label)
            label = None
    ax.set_yticks(range(len(verdicts)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.03)     # a diamond at 1 shown whole
    ax.set_xlabel("share of cases where the claim's comparison holds")
    if label is None:
        ax.legend(fontsize=7, loc="lower right")
    if not counts.empty:
        ax = axes[1]
        piv = counts.pivot_table(index="table", columns="cause", values="cells", aggfunc="sum", fill_value=0)
        left = pd.Series(0.0, index=piv.index)
        for k, cause in enumerate(piv.columns):
            ax.barh(range(len(piv)), piv[cause], left=left, label=cause, color=f"C{k}")
            left += piv[cause]
        total = counts.groupby("table")["published_cells"].first().reindex(piv.index)
        ax.set_yticks(range(len(piv)), [f"{t} (of {int(p)})" for t, p in zip(piv.index, total)], fontsize=7)
        ax.set_xlabel("cells > 2 points off the published value")
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    _title(fig, title)
    fig.tight_layout()
    return fig


def write_verdict(base: str, title: str, verdicts: pd.DataFrame, tables: dict,
                  data: list[dict] | None = None, left_out: list[str] | None = None,
                  reference_run: str | None = None, stale: dict[str, str] | None = None) -> list[str]:
    """``base.{csv,md,html,png}``: the claims (:func:`mkclust.repro.reporting.verdicts.evaluate`) and the
    gaps of one paper; ``data`` (:meth:`mkclust.repro.planning.Plan.paper_data`) says in the pages which
    data sets are the paper's own and which stand in for them; ``left_out``: the run groups a
    rebuild from a partial results archive left out, ``stale`` those it holds from code that has
    changed since (group -> why); ``reference_run``: the archive the tables were
    compared with (their cells that differ from it beyond their noise are counted and named)."""
    from mkclust.repro.reporting.figures import save_figure

    with atomic_open(f"{base}.csv", "w", encoding="utf-8") as fh:
        verdicts[VERDICT_COLUMNS].to_csv(fh, index=False)
    write_text(f"{base}.md", verdict_markdown(title, verdicts, tables, data, left_out, reference_run, stale))
    write_text(f"{base}.html", verdict_html(title, verdicts, tables, data, left_out, reference_run, stale))
    fig = verdict_figure(title, verdicts, tables)
    save_figure(fig, base, formats=("png",))
    return [f"{base}.{e}" for e in ("csv", "md", "html", "png")]


# ------------------------------------------------------------------------------------------------
# run summary
# ------------------------------------------------------------------------------------------------

def job_cpu_seconds(folder: str | Path) -> float | None:
    """The CPU seconds of the run jobs as Snakemake's ``benchmark:`` files measured them (start-up,
    imports and fits), summed over ``folder``; None when there are none."""
    files = list(Path(folder).rglob("*.tsv"))
    if not files:
        return None
    total = 0.0
    for f in files:
        col = pd.read_csv(f, sep="\t").get("cpu_time")
        if col is not None:
            total += float(pd.to_numeric(col, errors="coerce").fillna(0).iloc[-1])   # the latest measurement
    return total


def run_summary(results: dict[str, pd.DataFrame], config: dict, configfiles: list[str], basedir: str | Path,
                finished: float | None = None, job_cpu: float | None = None, tables: dict | None = None,
                reference_run: str | None = None, archive: str | None = None,
                left_out: list[str] | None = None, data_files: dict | None = None,
                stale: dict[str, str] | None = None) -> dict:
    """What was run: per experiment its paper, data sets (with their flags), runs and fit CPU time;
    the commit, package versions, the date the summary was written and ``finished``, the time (epoch
    seconds) the newest results table was written; with ``reference_run``, ``reference``: the
    archive and :func:`~mkclust.repro.reporting.reference_run.reference_counts` over ``tables`` (name -> tidy).

    Rebuilt from a results archive (``archive``, as the configuration names it): ``archive`` holds its
    pieces (name, commit, date archived, runs, fit CPU, groups) and the number of run groups
    ``left_out`` (``experiment/algorithm/dataset/bank/group``) and of those it holds ``stale`` (from code
    that has changed since; group -> why), and ``finished`` is the latest piece's
    date, so that what the README's Results section takes from the summary depends on the archive
    only, not on when it was rebuilt. An experiment's ``datasets`` are then those with no group left
    out. ``data_files``: data set -> {path, sha256} of the researcher's own files the run read;
    ``papers``: the configuration's ``papers:`` entries (name, headline table) of the run's papers."""
    exps = []
    gone = [g.split("/") for g in left_out or []]
    for name, df in results.items():
        e = config["experiments"][name]
        incomplete = {g[2] for g in gone if g[0] == name}
        flags = {}
        if len(df):
            for ds, f in df.groupby("dataset")["dataset_flags"].first().items():
                flags[ds] = f if isinstance(f, str) else ""
        ok = finished_runs(df)
        exps.append({"experiment": name, "paper": e["paper"],
                     "datasets": [d for d in e["datasets"] if d not in incomplete],
                     "flags": {d: flags.get(d, "") for d in e["datasets"] if flags.get(d)},
                     "runs": int(len(df)), "not_finished": int(len(df) - len(ok)),
                     "cpu_seconds": (float(pd.to_numeric(df.get("cpu_seconds"), errors="coerce").sum())
                                     if len(df) else 0.0)})
    stamp = lambda t: datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")  # noqa: E731
    built = None
    if archive:
        from mkclust.repro.archive import pieces
        built = {"path": archive, "left_out": len(left_out or []), "stale": len(stale or {}),
                 "pieces": [{"piece": m["piece"], "commit": m["commit"], "archived": m["archived"], "runs": m["runs"],
                             "fit_cpu_seconds": m["fit_cpu_seconds"], "groups": len(m["groups"])}
                            for m in pieces(archive)]}
    out = {"date": stamp(datetime.now(timezone.utc).timestamp()), "commit": commit(basedir),
            "finished": (max((m["archived"] for m in built["pieces"]), default="") if built
                         else stamp(finished) if finished else ""),
            "archive": built,
            "configfiles": list(configfiles), "versions": versions(), "experiments": exps,
            "papers": {p: (config.get("papers") or {})[p] for p in dict.fromkeys(e["paper"] for e in exps)
                       if p in (config.get("papers") or {})},
            "cpu_seconds": sum(e["cpu_seconds"] for e in exps), "runs": sum(e["runs"] for e in exps),
            "job_cpu_seconds": job_cpu,
            "reference": ({"archive": reference_run, **reference_counts(tables or {}),
                           "packages": reference_packages(reference_run)} if reference_run else None)}
    if data_files:
        out["data_files"] = data_files
    return out


def _data_files(summary: dict) -> str:
    return "; ".join(f"{name}: {f['path']} (sha256 {f['sha256'][:16]})" for name, f in summary["data_files"].items())


def _hours(s: float) -> str:
    return f"{s / 3600:.2f} h ({s:.0f} s)"


def summary_rows(summary: dict) -> list[list[str]]:
    return [[e["experiment"], e["paper"], ", ".join(d + (f" [{e['flags'][d]}]" if d in e["flags"] else "")
                                                   for d in e["datasets"]),
             str(e["runs"]) + (f" ({e['not_finished']} N/A)" if e["not_finished"] else ""), _hours(e["cpu_seconds"])]
            for e in summary["experiments"]]


SUMMARY_HEADER = ["experiment", "paper", "data sets [flags: differs from the paper's]", "runs", "fit CPU time"]


def summary_rst(summary: dict) -> str:
    """The summary as reStructuredText, for the report's landing page."""
    def esc(s: str) -> str:
        return s.replace("*", r"\*").replace("|", r"\|").replace("_", r"\_")

    lines = [f"**Commit** ``{summary['commit']}``, written {summary['date']}"
             + (f" (runs finished {summary['finished']})" if summary.get("finished") else "")
             + "; configuration files: "
             + (", ".join(f"``{c}``" for c in summary["configfiles"]) or "the default ``config.yaml``") + ".", "",
             f"**Total fit CPU time** {_hours(summary['cpu_seconds'])} over {summary['runs']} runs (CPU seconds "
             "measured around each fit)"
             + (f"; the run jobs' CPU time with their start-up: {_hours(summary['job_cpu_seconds'])}"
                if summary.get("job_cpu_seconds") else "") + ".", "",
             "**Package versions** " + ", ".join(f"{k} {v}" for k, v in summary["versions"].items()) + ".", "",
             *(["**Data files** " + esc(_data_files(summary)) + ".", ""] if summary.get("data_files") else []),
             ".. list-table::", "   :header-rows: 1", ""]
    for row in [SUMMARY_HEADER, *summary_rows(summary)]:
        lines.append("   * - " + esc(row[0]))
        lines += [f"     - {esc(c)}" for c in row[1:]]
    if summary.get("reference"):
        lines += ["", "**Reference run** " + esc(_summary_reference(summary))]
    return "\n".join(lines) + "\n"


def _summary_reference(summary: dict) -> str:
    ref = summary["reference"]
    return reference_line(ref, ref["archive"])


def write_summary(base: str, summary: dict) -> list[str]:
    """``base.{json,rst,html}``."""
    write_text(f"{base}.json", json.dumps(summary, indent=1) + "\n")
    write_text(f"{base}.rst", summary_rst(summary))
    head = (f"<p><b>Commit</b> {html.escape(summary['commit'])}, written {summary['date']}"
            + (f" (runs finished {summary['finished']})" if summary.get("finished") else "") + "; configuration files: "
            f"{html.escape(', '.join(summary['configfiles']) or 'config.yaml')}.</p>"
            f"<p><b>Total fit CPU time</b> {_hours(summary['cpu_seconds'])} over {summary['runs']} runs"
            + (f"; the run jobs' CPU time with their start-up: {_hours(summary['job_cpu_seconds'])}"
               if summary.get("job_cpu_seconds") else "") + ".</p>"
            "<p><b>Package versions</b> "
            f"{html.escape(', '.join(f'{k} {v}' for k, v in summary['versions'].items()))}</p>"
            + (f"<p><b>Data files</b> {html.escape(_data_files(summary))}</p>" if summary.get("data_files") else ""))
    parts = [head, html_table(SUMMARY_HEADER, summary_rows(summary))]
    if summary.get("reference"):
        parts.append(f"<p><b>Reference run</b> {html.escape(_summary_reference(summary))}</p>")
    write_text(f"{base}.html", html_page("What was run", parts))
    return [f"{base}.{e}" for e in ("json", "rst", "html")]
