"""``python -m mkclust.datasets --list``: load every registered data set and print its size beside
the papers' (one line per paper that uses it, loaded with that paper's options).

Downloadable sets come from the data mirror (``--mirror``, else ``$MKCLUST_DATA_MIRROR``), then
from ``--raw-dir`` (default ``data/raw``), else they are downloaded (``--no-download`` lists them as
not local instead). The exit status is 1 if any set failed to load.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from mkclust._cli import Parser, run_tool
from mkclust.datasets import REGISTRY, DatasetUnavailable, list_datasets, load, static_meta
from mkclust.datasets.download import NotLocal, Unreachable

PROG = "python -m mkclust.datasets"


def _rows(name: str, where: dict, offline: list) -> list[tuple]:
    spec = REGISTRY[name]
    shapes = spec.paper or (None,)
    rows = []
    for shape in shapes:
        opts = shape.opts if shape else {}
        paper = "-" if shape is None else f"{shape.paper}: {shape.n} x {shape.d}, {shape.c}"
        label = name + (" " + ",".join(f"{k}={v}" for k, v in opts.items()) if opts else "")
        try:
            ds = load(name, **where, **opts)
        except DatasetUnavailable:
            rows.append((label, "-", "-", "-", paper, "UNAVAILABLE: " + spec.reason, "unavailable"))
            continue
        except Unreachable as exc:   # no network: the other sets are listed as not local, no more tries
            offline.append(str(exc))
            where["download"] = False
            rows.append((label, "-", "-", "-", paper, "not local (no network)", "not_local"))
            continue
        except NotLocal as exc:
            rows.append((label, "-", "-", "-", paper, f"not local: {exc}", "not_local"))
            continue
        except Exception as exc:  # report and go on: --list is a survey
            rows.append((label, "-", "-", "-", paper, f"NOT LOADED: {exc}", "failed"))
            continue
        flags = "; ".join(ds.meta.get("flags", []))
        rows.append((label, str(ds.n), str(ds.d), str(ds.n_classes), paper, f"[{flags}]" if flags else "", "ok"))
    return rows


def main(argv=None) -> int:
    ap = Parser(prog=PROG if not sys.argv[0].startswith("mkclust ") else sys.argv[0], description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="load every registered data set and print n, d, classes")
    ap.add_argument("--show", metavar="NAME", help="print what the registry knows of one data set as JSON "
                    "(description, source, the papers' sizes, raw files and whether they are here), without loading it")
    ap.add_argument("--mirror", help="data mirror folder (default: $MKCLUST_DATA_MIRROR)")
    ap.add_argument("--raw-dir", help="folder for downloaded raw files (default: $MKCLUST_RAW_DIR or data/raw)")
    ap.add_argument("--no-download", action="store_true", help="never download; list missing sets as not local")
    ap.add_argument("files", nargs="*", help="with --list: data files of your own too (CSV, TSV, LIBSVM, ARFF, .mat, "
                    ".npz; mkclust.datasets.files), each loaded and checked as the workflow does")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    where = {"mirror": args.mirror, "raw_dir": args.raw_dir, "download": not args.no_download}
    if args.show:
        # an unknown name: a ValueError listing the registered ones, one line (mkclust._cli.run_tool)
        print(json.dumps(static_meta(args.show, raw_dir=args.raw_dir, mirror=args.mirror), indent=1))
        return 0
    if not args.list:
        if args.files:
            ap.error("give --list to load and check the files")
        ap.print_help()
        return 0
    offline: list = []
    rows = [r for name in list_datasets() if REGISTRY[name].kind != "local" for r in _rows(name, where, offline)]
    for path in args.files:
        try:
            ds = load("file", path=path)
            rows.append((path, str(ds.n), str(ds.d), str(ds.n_classes), "-", "your file", "ok"))
        except (OSError, ValueError) as exc:
            rows.append((path, "-", "-", "-", "-", f"NOT LOADED: {exc}", "failed"))
    header = ("name", "n", "d", "classes", "paper", "flags / status")
    table = [header, *[r[:6] for r in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5])
    status = [r[6] for r in rows]
    print(f"\n{status.count('ok')} loaded, {status.count('unavailable')} unavailable, "
          f"{status.count('not_local')} not local, {status.count('failed')} failed")
    if offline:
        print(f"no network: {offline[0]}", file=sys.stderr)
    return 1 if "failed" in status else 0


if __name__ == "__main__":
    sys.exit(run_tool(main, sys.argv[1:], PROG))
