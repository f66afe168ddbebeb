"""``mkclust estimate``: what a configuration will cost, before it runs (:mod:`mkclust.repro.estimate`,
whose docstring gives the model; ``--archive`` calibrates it, :mod:`mkclust.repro.calibration`)."""

from __future__ import annotations

import argparse
import sys

from mkclust._cli import Parser
from mkclust.repro import archive as A
from mkclust.repro.configuration import load
from mkclust.repro.estimate import JOB_SECONDS, estimate, format_rows
from mkclust.repro.estimate import __doc__ as ESTIMATE_DOC
from mkclust.repro.planning import plan


def main(argv=None) -> int:
    ap = Parser(prog="mkclust estimate", description=ESTIMATE_DOC,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configfiles", nargs="*", help="configuration files, merged as --configfile does "
                    "(default: config.yaml)")
    ap.add_argument("--cores", type=int, default=8, help="cores for the wall-time column (default 8)")
    ap.add_argument("--archive", help="calibrate the fits' times on this reference-run archive's measured CPU "
                    "seconds (mkclust.repro.calibration), e.g. results/paper")
    ap.add_argument("--calibration", action="store_true", help="with --archive: print measured / estimated of "
                    "every archived (method, data set) instead")
    ap.add_argument("--backtest", action="store_true", help="with --archive: price each piece from the pieces "
                    "archived before it and print measured / estimated per piece instead (one calibration per piece)")
    ap.add_argument("--measured", action="store_true", help="with --archive: print what it measured instead (per "
                    "experiment and paper: groups archived and stale, fit CPU hours; complete when nothing is "
                    "missing or stale)")
    args = ap.parse_args(argv)
    config = load(*(args.configfiles or ["config.yaml"]))   # an error: one line (mkclust._cli)
    p = plan(config)
    cal = None
    if args.backtest and not args.archive:
        ap.error("--backtest needs --archive (the archive whose pieces it prices)")
    if args.archive:
        from mkclust.repro import calibration
        A.require(args.archive)
        if args.backtest:
            print(calibration.format_backtest(calibration.backtest(args.archive, p, progress=lambda name: print(
                f"calibrating on the pieces before {name}", file=sys.stderr, flush=True))))
            return 0
        if args.measured:
            print(calibration.format_measured(calibration.measured(args.archive, p)))
            return 0
        cal, table = calibration.from_archive(args.archive, p)
        if args.calibration:
            print(calibration.format_ratios(table))
            return 0
    rows, papers, total = estimate(config, p, cal)
    missing = p.inputs.missing_raw_files(config.get("data_mirror"))
    if missing:   # their sizes are known only from their loaders' published shapes, or not at all
        files = sorted({f for fs in missing.values() for f in fs})
        print(f"mkclust estimate: {len(files)} raw file(s) of {len(missing)} data set(s) are not local "
              f"({', '.join(sorted(missing)[:6])}{' ...' if len(missing) > 6 else ''}): a run downloads them into "
              f"{p.data_dir}/raw, or give a mirror (data_mirror: or $MKCLUST_DATA_MIRROR)", file=sys.stderr)
    print(format_rows(rows + [total], args.cores))
    print()
    print(format_rows(papers + [total], args.cores, "paper"))
    source = f"calibrated on {args.archive}'s measured fits" if cal else "the class models, calibrated on measured fits"
    print(f"\nTypical times on one core ({source}), {JOB_SECONDS} s of start-up per job; "
          f"wall = max(CPU h / {args.cores}, the longest job). Peak MB: the run jobs' memory bound.", file=sys.stderr)
    return 0

