"""CPU seconds and peak memory against n, from 1,000 to 70,000 samples, on low-rank kernel banks
(:mod:`mkclust.lowrank`): the scale table and figure of docs/scaling.md.

The data: MNIST's training and test sets together (70,000 digits, 10 classes, 2 x 2 mean pooling to
196 pixels, the package's ``mnist01234`` loader with every digit), subsets of the first n of one
fixed permutation (seed 0); or ``--data letter`` (UCI letter, 20,000 x 16, 26 classes). The bank:
the benchmark's 12 kernels (``rmkkm12`` on z-scored, unit-length rows, each kernel normalised to a
unit diagonal) as Nystroem factors from ``--rank`` landmarks (1,000), built once per n.

Per n, each in a child process of its own (its peak resident memory, ``ru_maxrss``, is the job's:
the bank it loads included), on one BLAS thread:

- ``bank``: building the factors (CPU s, peak memory, MB of factors);
- the methods on the low-rank bank: KKM, SC and NC on the equal-weight mean (10 k-means++ restarts;
  SC and NC: the normalised affinity's eigenvectors by products with the factors), RMKKM (its
  defaults: Algorithm 1 from one random partition, gamma 0.3), MKKM (10
  restarts), SimpleMKKM, MKKM-MiR (lambda 0.5), LF-MVC (lambda 2) (k-means on H: 10 starts), the
  benchmark's defaults; CPU s of the fit, peak MB, accuracy (Hungarian matching);
- where n <= ``--dense-upto`` (5,000) the same method on the dense bank of the same n (exact
  kernels): its accuracy and CPU beside the low-rank fit's;
- what a researcher would use otherwise at that size: scikit-learn's ``Nystroem`` (RBF, the same
  number of components, gamma 1 / (d var X)) + ``KMeans`` (10 starts), ``MiniBatchKMeans`` on the
  z-scored pixels (10 starts), ``SpectralClustering`` with a 10-nearest-neighbour affinity.

Prints one JSON line per measurement (and appends it to ``--out``). Targets (issue 79): at
n = 70,000 with rank 1,000, KKM, MKKM and SimpleMKKM each at most 10 CPU minutes and 8 GB peak;
accuracy within .02 of the dense fit at n = 5,000.

Usage: ``python benchmarks/bench_scale.py [--sizes 1000,2000,5000,10000,20000,70000] [--rank 1000]
[--methods kkm,sc,nc,mkkm,rmkkm,simplemkkm,mkkmmir,lfmvc] [--peers] [--dense-upto 5000] [--float32] [--out F]``
(``MKCLUST_DATA_MIRROR`` or ``data/raw`` must hold the MNIST files).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: the methods and their parameters (the benchmark's defaults)
METHODS = {
    "kkm": ("kkm", {"n_init": 10}),
    "sc": ("sc", {"n_init": 10}),
    "nc": ("nc", {"n_init": 10}),
    "mkkm": ("mkkm", {"n_init": 10}),
    "rmkkm": ("rmkkm", {}),
    "simplemkkm": ("simplemkkm", {}),
    "mkkmmir": ("mkkmmir", {"lam": 0.5}),
    "lfmvc": ("lfmvc", {"lam": 2.0}),
}
#: the single-kernel methods, fitted on the bank's equal-weight mean
SINGLE = ("kkm", "sc", "nc")
PEERS = ("sk_nystroem_kmeans", "sk_minibatch", "sk_spectral_knn")


def _data(name: str, n: int):
    """The first n samples of one fixed permutation (seed 0) of MNIST (70,000) or letter (20,000)."""
    from mkclust.datasets import load
    if name == "mnist":
        ds = load("mnist01234", split="both", digits=tuple(range(10)))
    else:   # every letter: the registered letter sets' file, no class kept out
        from mkclust.datasets import REGISTRY, default_raw_dir
        from mkclust.datasets.download import fetch
        from mkclust.datasets.paper import _arff_loader
        files = {f.path: f for f in REGISTRY["letterAvB"].files}
        ds = _arff_loader("letter/letter.arff")(lambda p: fetch(files[p], default_raw_dir(), None)[0])
    if n > ds.X.shape[0]:
        raise ValueError(f"{name} has {ds.X.shape[0]} samples, not {n}")
    order = np.random.default_rng(0).permutation(ds.X.shape[0])[:n]
    return ds.X[order], ds.y[order]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(args) -> dict:
    """One measurement in this process (``--child``): the bank job saves the subset and the factors,
    the others load them (so their peak memory is that of the subset, not of the whole set)."""
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
    from mkclust.kernels import KernelBank, build_bank
    from mkclust.lowrank import LowRankBank
    from mkclust.metrics import acc

    rec = {"data": args.data, "n": args.n, "what": args.what, "rank": args.rank, "dense": bool(args.dense)}
    if args.fourier:
        rec["fourier"] = args.fourier
    stem = Path(args.work) / f"{args.data}_{args.n}"
    bank_file = f"{stem}_{args.rank}" + (f"_fourier{args.fourier}" if args.fourier else "") + ".npz"
    if args.what == "bank":
        X, y = _data(args.data, args.n)
        np.savez(f"{stem}_data.npz", X=X, y=y)
        t = time.process_time()
        bank = build_bank("rmkkm12", X, preprocess="zscore_unit", landmarks=args.rank, fourier=args.fourier)
        if args.float32 and bank.features is not None:   # at n <= rank the bank is the dense one
            bank.features = [F.astype(np.float32) for F in bank.features]
        rec.update(cpu_s=time.process_time() - t, peak_mb=_peak_mb(), kind=bank.kind,
                   bank_mb=sum(a.nbytes for a in (bank.features or [bank.K])) / 2**20)
        bank.save(bank_file)
        return rec
    with np.load(f"{stem}_data.npz") as z:
        X, y = z["X"], z["y"]
    c = int(np.unique(y).size)
    t = time.process_time()
    if args.what in PEERS:
        labels = _peer(args.what, X, c, args.rank)
    else:
        from mkclust.algorithms import get_estimator
        algo, params = METHODS[args.what]
        if args.dense:
            K = build_bank("rmkkm12", X, preprocess="zscore_unit").K
            data = K.mean(axis=0) if algo in SINGLE else K
        else:
            low = LowRankBank.from_kernel_bank(KernelBank.load(bank_file))
            data = low.combine(np.full(low.n_kernels, 1.0 / low.n_kernels)) if algo in SINGLE else low
        t = time.process_time()
        est = get_estimator(algo, n_clusters=c, random_state=0, **params).fit(data)
        labels = est.labels_
        rec["n_iter"] = int(getattr(est, "n_iter_", 0))
        rec["model_mb"] = _model_mb(algo, params, X.shape, data)
    rec.update(cpu_s=time.process_time() - t, peak_mb=_peak_mb(), acc=acc(y, labels))
    return rec


def _model_mb(algo: str, params: dict, shape, data) -> float:
    """The workflow's memory estimate of this fit (mkclust.repro.resources.group_mem_mb), to set beside
    the measured peak."""
    from types import SimpleNamespace
    from mkclust.lowrank import LowRankBank
    from mkclust.repro.resources import group_mem_mb
    n, d = shape
    run = SimpleNamespace(estimator=algo, params={**params, "kernel": "ew"} if algo in SINGLE else params)
    if isinstance(data, LowRankBank):
        m, r = data.n_kernels, max(data.ranks)
        return group_mem_mb([run], n, d, m * n * r, (m, r))
    return group_mem_mb([run], n, d, 12 * n * n)


def _peer(name: str, X, c: int, rank: int):
    from sklearn.cluster import KMeans, MiniBatchKMeans, SpectralClustering
    from sklearn.kernel_approximation import Nystroem
    from sklearn.preprocessing import StandardScaler
    Z = StandardScaler().fit_transform(X)
    if name == "sk_nystroem_kmeans":
        F = Nystroem(kernel="rbf", gamma=1.0 / (Z.shape[1] * Z.var()), n_components=min(rank, len(Z) - 1),
                     random_state=0).fit_transform(Z)
        return KMeans(c, n_init=10, random_state=0).fit(F).labels_
    if name == "sk_minibatch":
        return MiniBatchKMeans(c, n_init=10, random_state=0).fit(Z).labels_
    return SpectralClustering(c, affinity="nearest_neighbors", n_neighbors=10, random_state=0).fit(Z).labels_


def report(lines_file: str, figure: str | None = None) -> str:
    """The scale table (markdown) from the JSON lines of earlier runs (the last line of each (n, what,
    dense) wins), and, with ``figure``, CPU seconds and peak memory against n drawn to that file."""
    rows = {}
    for line in Path(lines_file).read_text().splitlines():
        rec = json.loads(line)
        if "error" not in rec:
            rows[(rec["n"], rec["what"], rec.get("dense", False))] = rec
    sizes = sorted({k[0] for k in rows})
    whats = [w for w in ["bank", *METHODS, *PEERS] if any(k[1] == w for k in rows)]
    out = ["| method | " + " | ".join(f"n = {n:,}" for n in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    for what in whats:
        cells = []
        for n in sizes:
            r, d = rows.get((n, what, False)), rows.get((n, what, True))
            cell = "" if r is None else f"{r['cpu_s']:.1f} s, {r['peak_mb'] / 1024:.2f} GB"
            if r is not None and "acc" in r:
                cell += f", acc {r['acc']:.3f}"
            if d is not None:
                dense = f"dense {d['cpu_s']:.1f} s, {d['peak_mb'] / 1024:.2f} GB, acc {d['acc']:.3f}"
                cell += (" / " if cell else "") + dense
            cells.append(cell or "-")
        out.append(f"| {what} | " + " | ".join(cells) + " |")
    if figure:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
        # one colour per row of the table (tab10, then four more: no two rows share one); the dense
        # fits (and a bank at n <= rank, which is the Gram matrices) as open markers of the row's colour
        palette = [*plt.get_cmap("tab10").colors, "black", "gold", "navy", "lime"]
        for i, what in enumerate(whats):
            colour = palette[i % len(palette)]
            low = sorted((n, r) for (n, w, dense), r in rows.items()
                         if w == what and not dense and r.get("kind") != "gram")
            exact = sorted((n, r) for (n, w, dense), r in rows.items()
                           if w == what and (dense or r.get("kind") == "gram"))
            for pts, style, face in ((low, "--" if what in PEERS else "-", colour), (exact, "none", "white")):
                if pts:
                    ns = [n for n, _ in pts]
                    label = what if pts is low or not low else None
                    axes[0].loglog(ns, [r["cpu_s"] for _, r in pts], ls=style, marker="o", color=colour,
                                   markerfacecolor=face, label=label)
                    axes[1].loglog(ns, [r["peak_mb"] / 1024 for _, r in pts], ls=style, marker="o",
                                   color=colour, markerfacecolor=face, label=label)
        if any(d or r.get("kind") == "gram" for (_, _, d), r in rows.items()):
            axes[1].plot([], [], ls="none", marker="o", color="grey", markerfacecolor="white",
                         label="open: exact kernels")
        if max(n for n, _, _ in rows) >= 70000:   # the goals at n = 70,000: 10 CPU minutes and 8 GB a fit
            axes[0].axhline(600, color="grey", ls=":", lw=1, label="goal at 70,000: 600 s")
            axes[1].axhline(8, color="grey", ls=":", lw=1, label="goal at 70,000: 8 GB")
            axes[0].legend(fontsize=7, loc="upper left", handles=axes[0].get_legend_handles_labels()[0][-1:])
        axes[0].set(xlabel="n", ylabel="CPU seconds (one thread)", title="Time of one fit (bank: its build)")
        axes[1].set(xlabel="n", ylabel="peak memory (GB)", title="Peak resident memory of the process")
        axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))   # beside, not over the points
        sizes = sorted({n for n, _, _ in rows})
        for ax in axes:   # the measured sizes as ticks, written out (log axes' minor labels overlap)
            ax.set_xticks(sizes, [f"{n:,}" for n in sizes], minor=False)
            ax.set_xticks([], minor=True)
            ax.tick_params(axis="x", labelrotation=30)
        fig.tight_layout()
        tmp = Path(figure).with_suffix(".tmp.png")
        fig.savefig(tmp, dpi=110)
        tmp.replace(figure)
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,2000,5000,10000,20000,70000")
    ap.add_argument("--rank", type=int, default=1000)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--peers", action="store_true", help="also scikit-learn's alternatives")
    ap.add_argument("--dense-upto", type=int, default=5000)
    ap.add_argument("--data", default="mnist", choices=["mnist", "letter"])
    ap.add_argument("--float32", action="store_true", help="store the factors in float32 (half the memory)")
    ap.add_argument("--fourier", type=int, default=None,
                    help="the bank's seven Gaussians as this many random Fourier features each (build_bank's fourier)")
    ap.add_argument("--out", default=None, help="append the JSON lines to this file too")
    ap.add_argument("--work", default=None, help="folder for the banks (default: a temporary one)")
    ap.add_argument("--report", metavar="JSONL", help="print the table of earlier runs' lines (and --figure)")
    ap.add_argument("--figure", help="with --report: draw CPU and memory against n to this PNG")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--what", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dense", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)), flush=True)
        return
    if args.report:
        print(report(args.report, args.figure))
        return
    work = args.work or tempfile.mkdtemp(prefix="bench_scale_")
    Path(work).mkdir(parents=True, exist_ok=True)
    jobs = []
    for n in (int(s) for s in args.sizes.split(",")):
        jobs.append((n, "bank", False))
        for m in [m for m in args.methods.split(",") if m]:
            jobs.append((n, m, False))
            if n <= args.dense_upto:
                jobs.append((n, m, True))
        jobs += [(n, p, False) for p in PEERS] if args.peers else []
    for n, what, dense in jobs:
        if not dense and n <= args.rank and what in METHODS:
            continue   # no landmarks below n = rank: the bank is the dense one, measured by the dense line
        cmd = [sys.executable, __file__, "--child", "--what", what, "--n", str(n), "--rank", str(args.rank),
               "--data", args.data, "--work", work] + ["--dense"] * dense + ["--float32"] * args.float32
        cmd += ["--fourier", str(args.fourier)] if args.fourier else []
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if proc.returncode == 0 and proc.stdout.strip():
            line = proc.stdout.strip().splitlines()[-1]
        else:
            err = (proc.stderr.strip().splitlines() or ["?"])[-1]
            line = json.dumps({"data": args.data, "n": n, "what": what, "dense": dense, "error": err})
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(line + "\n")


if __name__ == "__main__":
    main()
