"""``mkclust archive``: the command line of :mod:`mkclust.repro.archive` (add a piece, list and price
the missing run groups, drop stale groups or mark them to be computed again, compare a rerun); its
usage is in that module's docstring."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mkclust._cli import Parser
from mkclust.repro import archive as A
from mkclust.repro.archive import (
    carry_kept, compare_runs, drop_groups, group_name, holdings, mark_stale, records_file, write_piece,
)


def _plan(configfiles):
    from mkclust.repro.configuration import load
    from mkclust.repro.planning import plan
    return plan(load(*configfiles))


def main(argv=None) -> int:
    ap = Parser(prog="mkclust archive", description=A.__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add", help="archive the complete run groups of a data folder as one piece")
    a.add_argument("archive")
    a.add_argument("--piece", required=True)
    a.add_argument("--data", required=True, help="the run's data folder (its runs/ holds the records)")
    a.add_argument("--note", default="")
    a.add_argument("--commit", help="the commit the runs were computed at (default: this checkout's)")
    a.add_argument("configfiles", nargs="+")
    m = sub.add_parser("missing", help="the configuration's run groups that no piece holds, and those marked stale")
    m.add_argument("archive")
    m.add_argument("configfiles", nargs="+")
    m.add_argument("--list", action="store_true", help="name every missing group and every stale one")
    m.add_argument("--kept", metavar="DIR", help="also count the runs kept for them under DIR (its runs/ in the "
                   "data folder's layout: a stopped run's data folder, or results/in_progress)")
    m.add_argument("--targets", metavar="DATA_DIR",
                   help="print only the records files of the missing and stale groups under DATA_DIR, one per line: "
                        "the targets of a snakemake run that computes them (and nothing else an earlier piece holds)")
    d = sub.add_parser("drop", help="take stale run groups out of a piece (they become missing)")
    d.add_argument("archive")
    d.add_argument("--piece", required=True)
    d.add_argument("--groups", required=True,
                   help="a file of group names, one per line (as mkclust archive missing --list names them)")
    d.add_argument("--reason", required=True, help="why their results are stale (kept in the manifest)")
    d.add_argument("configfiles", nargs="+")
    t = sub.add_parser("stale", help="mark archived run groups as to be computed again (their rows stay until "
                                     "a piece replaces them)")
    t.add_argument("archive")
    t.add_argument("--groups", required=True, help="a file of group names, one per line")
    t.add_argument("--reason", required=True, help="what changed their results (kept in the manifests, shown on "
                                                   "the pages)")
    t.add_argument("configfiles", nargs="+")
    k = sub.add_parser("carry", help="a stopped run's kept runs of the groups still to compute, into a folder "
                                     "kept in the repository (and those of archived groups out of it)")
    k.add_argument("archive")
    k.add_argument("--data", required=True, help="the stopped run's data folder")
    k.add_argument("--into", required=True,
                   help="the folder that carries them (its runs/ has the data folder's layout)")
    k.add_argument("configfiles", nargs="+")
    s = sub.add_parser("pieces", help="every piece of the archive as a markdown table (from the manifests)")
    s.add_argument("archive")
    s.add_argument("--write", metavar="FILE", help="replace the file's archive-pieces block with the table instead")
    c = sub.add_parser("compare", help="a rerun's groups against the archive, run by run")
    c.add_argument("archive")
    c.add_argument("--data", required=True)
    c.add_argument("configfiles", nargs="+")
    args = ap.parse_args(argv)
    if args.command != "add":   # a mistyped archive would read as an empty one
        A.require(args.archive)
    if getattr(args, "data", None) and not Path(args.data).is_dir():   # and a mistyped data folder as an empty run
        raise FileNotFoundError(2, "no data folder there (a run's data_dir, with runs/ under it)", args.data)
    if args.command == "pieces":
        from mkclust.repro.reporting.pieces import pieces_markdown, write_pieces_block
        if args.write:
            write_pieces_block(args.archive, args.write)
        else:
            print(pieces_markdown(args.archive))
        return 0
    p = _plan(args.configfiles)
    if args.command == "add":
        path = write_piece(args.archive, args.piece, p, args.data, args.configfiles, commit=args.commit, note=args.note)
        man = json.loads(path.read_text())
        print(f"{path}: {len(man['groups'])} run groups, {man['runs']} runs, "
              f"{man['fit_cpu_seconds'] / 3600:.3f} h of fit CPU, commit {man['commit']}")
        return 0
    if args.command == "drop":
        names = [ln.strip() for ln in Path(args.groups).read_text().splitlines() if ln.strip()]
        path = drop_groups(args.archive, args.piece, p, names, args.reason)
        man = json.loads(path.read_text())
        print(f"{path}: {len(names)} run groups dropped; {len(man['groups'])} left, {man['runs']} runs")
        return 0
    if args.command == "stale":
        names = [ln.strip() for ln in Path(args.groups).read_text().splitlines() if ln.strip()]
        paths = mark_stale(args.archive, names, args.reason)
        print(f"{len(names)} run groups marked stale in {len(paths)} pieces: "
              + ", ".join(x.parent.name for x in paths))
        return 0
    if args.command == "missing":
        return _missing(p, args)
    if args.command == "carry":
        carried, removed = carry_kept(args.archive, p, args.data, args.into)
        for name in carried:
            print(f"  carried: {name}")
        print(f"{len(carried)} groups' kept runs carried into {args.into}; {len(removed)} archived groups' removed")
        return 0
    df = compare_runs(args.archive, p, args.data)
    if df.empty:
        raise ValueError(f"no complete run group under {args.data}/runs is in the archive {args.archive}")
    print(df.drop(columns=["packages", "blas"]).to_string(index=False))
    bad = df["runs_differing"] > 0
    other = (df["packages"] != "") | (df["blas"] != "")
    print(f"{len(df)} groups, {int(df['runs'].sum())} runs compared; {int(bad.sum())} groups differ "
          f"(largest metric difference {df['max_metric_diff'].max():.3g})")
    if other.any():
        for column, what in (("packages", "packages"), ("blas", "BLAS kernels")):
            for text, n in df.loc[df[column] != "", column].value_counts().items():
                print(f"the rerun's {what} differ from the archive's in {n} of {len(df)} groups: {text}")
        print(f"  of the groups that differ, {int((bad & other).sum())} ran with other packages or BLAS kernels and "
              f"{int((bad & ~other).sum())} with the archive's (docs/running.md, 'Reruns across package versions')")
        for r in df[bad & other].itertuples():
            print(f"  moved with other packages or BLAS kernels: {r.group}: {r.runs_differing} of {r.runs} runs, "
                  f"mean acc {r.acc_archive:.4f} -> {r.acc_rerun:.4f}")
    return 0 if not bad.any() else 1



def _missing(p, args) -> int:
    """``mkclust archive missing``: the missing groups and the stale ones, each priced."""
    held, marked = holdings(args.archive)
    gone = [g for g in p.run_groups() if group_name(g) not in held]
    stale = {g: marked[group_name(g)][1] for g in p.run_groups() if group_name(g) in marked}
    if args.targets:
        for g in gone + sorted(stale):
            print(records_file(args.targets, g))
        return 0 if not (gone or stale) else 1
    print(f"{len(gone)} of {len(p.run_groups())} run groups of {' + '.join(args.configfiles)} are missing "
          f"from {args.archive}")
    _price(p, args.archive, gone)
    if stale:
        print(f"{len(stale)} more are in it from code that has changed since, to be computed again (stale):")
        _price(p, args.archive, sorted(stale))
        for why in sorted(set(stale.values())):
            print(f"    stale, {sum(w == why for w in stale.values())} groups: {why}")
    if args.kept:
        from mkclust.repro.checkpoint import kept_folder, kept_runs
        groups = p.run_groups()
        for g in gone + sorted(stale):
            kept = len(kept_runs(kept_folder(records_file(args.kept, g))))
            if kept:
                print(f"    kept under {args.kept}: {kept} of {len(groups[g])} runs of {group_name(g)}")
    if args.list:
        for g in gone:
            print("  " + group_name(g))
        for g in sorted(stale):
            print("  " + group_name(g) + " (stale)")
    return 0 if not (gone or stale) else 1


def _price(p, archive, gone: list[tuple]) -> None:
    """Per experiment and algorithm, the fits of the groups ``gone`` and their CPU hours (calibrated on the
    archive, and by the class models)."""
    if not gone:
        return
    from mkclust.repro.calibration import from_archive
    from mkclust.repro.estimate import dataset_size, group_rows
    groups = p.run_groups()
    cal = from_archive(archive, p)[0]
    sizes = {name: dataset_size(p, name) for name in {g[2] for g in gone}}   # read once for every row below
    for row, model in zip(group_rows(p, {g: groups[g] for g in gone}, sizes, cal=cal),
                          group_rows(p, {g: groups[g] for g in gone}, sizes)):
        cost = (f"about {row.cpu_hours:.2f} CPU h calibrated on the archive, {model.cpu_hours:.2f} by the class "
                "models" + (f", {row.unknown} of unknown size" if row.unknown else ""))
        print(f"  {row.name}: {row.jobs} ({row.fits} fits, {cost})")
        for alg in sorted({g[1] for g in gone if g[0] == row.name}):
            sub = group_rows(p, {g: groups[g] for g in gone if g[:2] == (row.name, alg)}, sizes, cal=cal)[0]
            print(f"    {alg}: {sub.jobs} ({sub.fits} fits, about {sub.cpu_hours:.2f} CPU h)")
