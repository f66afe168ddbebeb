"""``mkclust archive``: the command line of :mod:`mkclust.repro.archive` (add a piece, list and price
the missing run groups, drop stale groups, compare a rerun); its usage is in that module's docstring."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mkclust.repro import archive as A
from mkclust.repro.archive import compare_runs, drop_groups, group_name, missing_groups, records_file, write_piece


def _plan(configfiles):
    from mkclust.repro.configuration import load
    from mkclust.repro.planning import plan
    return plan(load(*configfiles))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mkclust archive", description=A.__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add", help="archive the complete run groups of a data folder as one piece")
    a.add_argument("archive")
    a.add_argument("--piece", required=True)
    a.add_argument("--data", required=True, help="the run's data folder (its runs/ holds the records)")
    a.add_argument("--note", default="")
    a.add_argument("--commit", help="the commit the runs were computed at (default: this checkout's)")
    a.add_argument("configfiles", nargs="+")
    m = sub.add_parser("missing", help="the configuration's run groups that no piece holds")
    m.add_argument("archive")
    m.add_argument("configfiles", nargs="+")
    m.add_argument("--list", action="store_true", help="name every missing group")
    m.add_argument("--targets", metavar="DATA_DIR",
                   help="print only the records files of the missing groups under DATA_DIR, one per line: the "
                        "targets of a snakemake run that computes them (and nothing an earlier piece holds)")
    d = sub.add_parser("drop", help="take stale run groups out of a piece (they become missing)")
    d.add_argument("archive")
    d.add_argument("--piece", required=True)
    d.add_argument("--groups", required=True,
                   help="a file of group names, one per line (as mkclust archive missing --list names them)")
    d.add_argument("--reason", required=True, help="why their results are stale (kept in the manifest)")
    d.add_argument("configfiles", nargs="+")
    c = sub.add_parser("compare", help="a rerun's groups against the archive, run by run")
    c.add_argument("archive")
    c.add_argument("--data", required=True)
    c.add_argument("configfiles", nargs="+")
    args = ap.parse_args(argv)
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
    if args.command == "missing":
        gone = missing_groups(p, args.archive)
        if args.targets:
            for g in gone:
                print(records_file(args.targets, g))
            return 0 if not gone else 1
        total = len(p.run_groups())
        print(f"{len(gone)} of {total} run groups of {' + '.join(args.configfiles)} are missing from {args.archive}")
        from mkclust.repro.calibration import from_archive
        from mkclust.repro.estimate import dataset_size, group_rows
        groups = p.run_groups()
        cal = from_archive(args.archive, p)[0] if gone else None
        sizes = {name: dataset_size(p, name) for name in {g[2] for g in gone}}   # read once for every row below
        for row, model in zip(group_rows(p, {g: groups[g] for g in gone}, sizes, cal=cal),
                              group_rows(p, {g: groups[g] for g in gone}, sizes)):
            cost = (f"about {row.cpu_hours:.2f} CPU h calibrated on the archive, {model.cpu_hours:.2f} by the class "
                    "models" + (f", {row.unknown} of unknown size" if row.unknown else ""))
            print(f"  {row.name}: {row.jobs} ({row.fits} fits, {cost})")
            for alg in sorted({g[1] for g in gone if g[0] == row.name}):
                sub = group_rows(p, {g: groups[g] for g in gone if g[:2] == (row.name, alg)}, sizes, cal=cal)[0]
                print(f"    {alg}: {sub.jobs} ({sub.fits} fits, about {sub.cpu_hours:.2f} CPU h)")
        if args.list:
            for g in gone:
                print("  " + group_name(g))
        return 0 if not gone else 1
    df = compare_runs(args.archive, p, args.data)
    if df.empty:
        print("no group of the data folder is in the archive")
        return 1
    print(df.to_string(index=False))
    bad = int((df["runs_differing"] > 0).sum())
    print(f"{len(df)} groups, {int(df['runs'].sum())} runs compared; {bad} groups differ "
          f"(largest metric difference {df['max_metric_diff'].max():.3g})")
    return 0 if bad == 0 else 1

