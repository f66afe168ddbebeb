"""``python -m mkclust.datasets --list``: load every registered data set and print its size."""

from __future__ import annotations

import argparse
import json
import sys

from mkclust.datasets import REGISTRY, list_datasets, load


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mkclust.datasets", description=__doc__)
    ap.add_argument("--list", action="store_true", help="load every registered data set and print n, d, classes, source")
    ap.add_argument("--show", metavar="NAME", help="print one data set's meta as JSON")
    args = ap.parse_args(argv)
    if args.show:
        ds = load(args.show)
        print(json.dumps(ds.meta, indent=1))
        return 0
    if not args.list:
        ap.print_help()
        return 0
    rows = []
    failed = 0
    for name in list_datasets():
        try:
            ds = load(name)
            rows.append((name, str(ds.n), str(ds.d), str(ds.n_classes), REGISTRY[name].source))
        except Exception as exc:  # report and go on: --list is a survey
            failed += 1
            rows.append((name, "-", "-", "-", f"NOT LOADED: {exc}"))
    header = ("name", "n", "d", "classes", "source")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for r in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
