"""A results archive: a configuration's run results kept in the repository, in pieces, so that every
table, figure and verdict can be rebuilt without refitting, and any user's run compared with it.

Layout, ``<archive>/<piece>/``:

- ``<experiment>.csv.gz``: the rows of ``<data_dir>/results/<experiment>.csv`` (parameters, seed,
  every metric, objective, iterations, times; no label vectors) of the run groups the piece covers,
  gzip-compressed with no time stamp, so the same rows give the same bytes;
- ``manifest.json``: the configuration files and their sha256, the commit, package and BLAS
  versions, the BLAS thread count, the machine, the date, the CPU time of the runs, the run groups
  the piece covers (``experiment/algorithm/dataset/bank/group``) and the sha256 of each file.

A piece is what one session can compute: a run of the configuration, usually with an overlay that
restricts it, archived with :func:`write_piece` from the run's data folder. Pieces computed at
different commits must agree; :func:`compare_runs` compares a rerun of some groups with the archive.

A run group is the unit: a piece holds a group only when every run of the group, as the
configuration plans it, is in the data folder. :func:`archived_results` gives the rows of the
planned runs of one experiment, and the groups missing from the archive.

Command line (``mkclust archive --help``; :mod:`mkclust.repro.cli.archive`)::

    mkclust archive add results/paper --piece rmkkm --data /work/run/data workflow/configs/paper.yaml
    mkclust archive missing results/paper workflow/configs/paper.yaml
    snakemake --cores 2 --configfile workflow/configs/paper.yaml --config data_dir=/work/run/data -- \
        $(mkclust archive missing results/paper workflow/configs/paper.yaml --targets /work/run/data)
    mkclust archive compare results/paper --data /tmp/rerun/data workflow/configs/paper.yaml
    mkclust archive drop results/paper --piece 2026-11-26d_odmc --groups stale.txt --reason "..." \
        workflow/configs/paper.yaml
    mkclust archive stale results/paper --groups changed.txt --reason "..." workflow/configs/paper.yaml
    mkclust archive carry results/paper --data /work/run/data --into results/in_progress workflow/configs/paper.yaml
    mkclust archive pieces results/paper [--write workflow/configs/README.md]

A group whose code changed after it was archived is either dropped (it becomes missing, its cells
empty) or marked stale (:func:`mark_stale`: its rows stay and its cells keep them, the pages and
``mkclust archive missing`` count it as to be computed again); the piece that computes it again
replaces it (:func:`write_piece` drops it from its old piece).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from mkclust._io import atomic_open, read_csv_exact
from mkclust.datasets.download import sha256_file
from mkclust.repro.provenance import blas, commit as checkout_commit, versions
from mkclust.repro.records import load_records, records_to_frame
from mkclust.repro.run_spec import group_path

#: the columns that identify a run in a results table
RUN_KEY = ["experiment", "algorithm", "dataset", "bank", "param_id", "seed"]
MANIFEST = "manifest.json"


def group_name(group: tuple) -> str:
    """A run group as one string: ``experiment/algorithm/dataset/bank/group``."""
    return "/".join(group)


def run_key(run) -> tuple:
    """A planned :class:`~mkclust.repro.run_spec.Run` as the values of :data:`RUN_KEY` in its results row."""
    return (run.experiment, run.algorithm, run.dataset, run.bank, run.param_id, run.seed)


def _write_gz_csv(df: pd.DataFrame, path: Path) -> None:
    """``df`` as CSV, gzip-compressed with mtime 0 (the same rows give the same bytes), atomically."""
    text = df.to_csv(index=False).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(text)
    with atomic_open(path, "wb") as fh:
        fh.write(buf.getvalue())


def records_file(data_dir, group: tuple) -> Path:
    """The records file of a run group under ``data_dir`` (``runs/<experiment>/.../<group>.json``)."""
    return Path(group_path(group, str(data_dir)))


def complete_groups(plan, data_dir) -> list[tuple]:
    """The planned run groups whose records file exists under ``data_dir``/runs."""
    return [g for g in plan.run_groups() if records_file(data_dir, g).is_file()]


def write_piece(archive: str | Path, piece: str, plan, data_dir: str | Path, configfiles: list[str | Path],
                groups: list[tuple] | None = None, commit: str | None = None, note: str = "") -> Path:
    """Archive the run groups ``groups`` (default: every planned group complete under ``data_dir``
    that no other piece of the archive holds, or holds marked stale) of ``plan`` as
    ``<archive>/<piece>/``; returns the manifest's path. A piece of that name is replaced whole. A
    stale group of another piece that this one computes again is dropped from that piece once this
    one is written (the reason names this piece)."""
    where, stale = holdings(archive) if Path(archive).is_dir() else ({}, {})
    if groups is None:   # every complete group that no other piece holds yet, or holds stale
        held = {g for g, p in where.items() if p != piece and g not in stale}
        groups = [g for g in complete_groups(plan, data_dir) if group_name(g) not in held]
    groups = list(groups)
    if not groups:
        raise ValueError(f"no run group of the configuration is complete under {data_dir}/runs "
                         "and missing from the archive's other pieces")
    planned = plan.run_groups()
    unknown = [g for g in groups if g not in planned]
    if unknown:
        raise ValueError(f"not run groups of the configuration: {', '.join(map(group_name, unknown[:5]))}")
    folder = Path(archive) / piece
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.csv.gz"):
        old.unlink()
    by_exp: dict[str, list[tuple]] = {}
    for g in groups:
        by_exp.setdefault(g[0], []).append(g)
    files, cpu, runs = {}, 0.0, 0
    for exp, gs in sorted(by_exp.items()):
        paths = [records_file(data_dir, g) for g in sorted(gs)]
        df = records_to_frame(load_records(paths))
        want = {run_key(r) for g in gs for r in planned[g]}
        have = set(map(tuple, df[RUN_KEY].itertuples(index=False, name=None)))
        if want - have:
            raise ValueError(f"{exp}: the records under {data_dir} lack {len(want - have)} planned runs of the "
                             "groups to archive (rerun them with the configuration)")
        df = df[[k in want for k in df[RUN_KEY].itertuples(index=False, name=None)]]
        # the archived text is exactly what the results CSV holds, read back as it is written
        df = read_csv_exact(io.StringIO(df.to_csv(index=False)))
        out = folder / f"{exp}.csv.gz"
        _write_gz_csv(df, out)
        files[out.name] = sha256_file(out)
        cpu += float(pd.to_numeric(df.get("cpu_seconds"), errors="coerce").fillna(0).sum())
        runs += len(df)
    manifest = {
        "piece": piece, "note": note,
        "configfiles": [{"path": str(p), "sha256": sha256_file(Path(p)), "text": Path(p).read_text()}
                        for p in configfiles],
        "commit": commit or checkout_commit(Path(configfiles[0]).resolve().parent),
        "versions": versions(), "blas": blas(), "python": sys.version.split()[0],
        "run_threads": plan.config.get("run_threads", 1),
        "machine": {"system": platform.system(), "machine": platform.machine(), "processor": platform.processor(),
                    "node": platform.node()},
        "archived": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "runs": runs, "fit_cpu_seconds": round(cpu, 3),
        "groups": sorted(group_name(g) for g in groups),
        "files": files,
    }
    with atomic_open(folder / MANIFEST, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    replaced: dict[tuple[str, str], list[str]] = {}
    for name in manifest["groups"]:
        if name in stale and stale[name][0] != piece:
            replaced.setdefault(stale[name], []).append(name)
    for (old, why), names in sorted(replaced.items()):
        drop_groups(archive, old, plan, names, f"computed again in piece {piece} (stale: {why})")
    return folder / MANIFEST


def mark_stale(archive: str | Path, names: list[str], reason: str) -> list[Path]:
    """Mark the archived run groups ``names`` as stale: computed by code that has changed since in a
    way that changes their results. Unlike :func:`drop_groups` their rows stay, and the pages keep
    showing them, counted and named as to be computed again, until a piece replaces them
    (:func:`write_piece`). Each piece's manifest keeps when and why (``stale``). Returns the manifests
    written."""
    where, known = holdings(archive)
    names = sorted(set(names))
    foreign = [n for n in names if n not in where]
    if foreign:
        raise ValueError(f"not in the archive {archive}: {', '.join(foreign[:5])}")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = []
    for piece in sorted({where[n] for n in names if n not in known}):
        path = Path(archive) / piece / MANIFEST
        man = _manifest(path)
        mine = [n for n in names if where[n] == piece and n not in known]
        man["stale"] = man.get("stale", []) + [{"date": when, "reason": reason, "groups": mine}]
        with atomic_open(path, "w", encoding="utf-8") as fh:
            json.dump(man, fh, indent=1)
            fh.write("\n")
        out.append(path)
    return out


def carry_kept(archive: str | Path, plan, data_dir: str | Path, into: str | Path) -> tuple[list[str], list[str]]:
    """Carry a stopped run's kept runs (``<records file>.partial/*.json.kept``,
    :mod:`mkclust.repro.checkpoint`) to the next session: the planned groups the archive lacks or holds
    stale, with kept runs under ``data_dir``, replace their folders under ``into`` (the same layout,
    ``<into>/runs/...``; the run's data folder started from a copy of it, so it holds at least as
    much); the folders under ``into`` of groups the archive now holds (and not stale) are removed.
    Returns (group names carried, group names removed)."""
    import shutil
    from mkclust.repro.checkpoint import kept_folder, kept_runs

    held, stale = holdings(archive)
    carried, removed = [], []
    for g in plan.run_groups():
        name = group_name(g)
        dst = kept_folder(records_file(into, g))
        if name in held and name not in stale:
            if dst.is_dir():
                shutil.rmtree(dst)
                removed.append(name)
            continue
        kept = kept_runs(kept_folder(records_file(data_dir, g)))
        if kept:
            if dst.is_dir():
                shutil.rmtree(dst)
            dst.mkdir(parents=True)
            for f in kept:
                shutil.copy2(f, dst / f.name)
            carried.append(name)
    return carried, removed


def _in_group(key: tuple, group: tuple) -> bool:
    """Whether the run with results-row key ``key`` (:data:`RUN_KEY`) belongs to the run group
    ``group`` (experiment, algorithm, dataset, bank, group id): the same first four, and the same
    parameters with each batched one (``each`` in the group id) at any value."""
    if tuple(map(str, key[:4])) != group[:4]:
        return False
    if str(key[4]) == group[4]:
        return True
    run = dict(kv.partition("=")[::2] for kv in str(key[4]).split("+"))
    grp = dict(kv.partition("=")[::2] for kv in group[4].split("+"))
    return run.keys() == grp.keys() and all(v == "each" or run[k] == v for k, v in grp.items())


def drop_groups(archive: str | Path, piece: str, plan, names: list[str], reason: str) -> Path:
    """Take the run groups ``names`` out of ``piece`` (their rows out of its tables, their names out of
    its manifest's groups), where a code change made their results stale: they become missing, and a
    later piece computes them again. The manifest keeps what was dropped, when and why (``dropped``);
    its runs, fit CPU and file digests are those of what remains. A group the configuration ``plan``
    no longer plans (a fixed parameter changed its name) is dropped by its name. Returns the
    manifest's path."""
    folder = Path(archive) / piece
    man = _manifest(folder / MANIFEST)
    names = sorted(set(names))
    foreign = [n for n in names if n not in man["groups"]]
    if foreign:
        raise ValueError(f"not groups of piece {piece}: {', '.join(foreign[:5])}")
    planned = {group_name(g): runs for g, runs in plan.run_groups().items()}
    gone = {run_key(r) for n in names if n in planned for r in planned[n]}
    # a group the configuration no longer plans (a fixed parameter changed, and with it the group's
    # name): its rows by name, a batched parameter ("each") matching any value
    unplanned = [tuple(n.split("/", 4)) for n in names if n not in planned]
    kept, matched = {}, set()
    for name in sorted(man["files"]):
        df = read_csv_exact(folder / name)
        keep = []
        for k in df[RUN_KEY].itertuples(index=False, name=None):
            hit = [g for g in unplanned if _in_group(k, g)]
            matched.update(hit)
            keep.append(k not in gone and not hit)
        kept[name] = df[keep]
    unmatched = ["/".join(g) for g in unplanned if g not in matched]
    if unmatched:
        # a batched group's id that is a digest (p-...) names no parameter values to match rows by
        raise ValueError(f"no rows of piece {piece} match {', '.join(unmatched[:3])}: the configuration no longer "
                         "plans them and their names do not say their runs' parameters; drop them with the "
                         "configuration that planned them (a worktree at the commit they were computed at)")
    files, cpu, runs = {}, 0.0, 0
    for name, df in kept.items():
        if df.empty:
            (folder / name).unlink()
            continue
        _write_gz_csv(df, folder / name)
        files[name] = sha256_file(folder / name)
        cpu += float(pd.to_numeric(df.get("cpu_seconds"), errors="coerce").fillna(0).sum())
        runs += len(df)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    man.update(groups=[g for g in man["groups"] if g not in names], files=files, runs=runs,
               fit_cpu_seconds=round(cpu, 3),
               dropped=man.get("dropped", []) + [{"date": when, "reason": reason, "groups": names}])
    with atomic_open(folder / MANIFEST, "w", encoding="utf-8") as fh:
        json.dump(man, fh, indent=1)
        fh.write("\n")
    return folder / MANIFEST


def require(archive: str | Path) -> Path:
    """The archive's folder; one that is not there (a mistyped path, which would read as an empty
    archive) is an error. Only ``write_piece`` starts a new archive."""
    if not Path(archive).is_dir():
        raise FileNotFoundError(2, "no results archive there (a folder of pieces, each with a manifest.json)",
                                str(archive))
    return Path(archive)


def _manifest(path: Path) -> dict:
    """A piece's manifest, read; one that is not JSON or lacks a key every manifest has is an error naming it."""
    try:
        man = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a manifest (not JSON: {exc}); restore it (git checkout -- {path}) "
                         "or archive the piece again") from None
    lacking = [k for k in ("piece", "commit", "groups", "files", "runs", "fit_cpu_seconds") if k not in man]
    if lacking:
        raise ValueError(f"{path} lacks {', '.join(lacking)}: restore it (git checkout -- {path}) "
                         "or archive the piece again")
    return man


def pieces(archive: str | Path) -> list[dict]:
    """Every piece's manifest (with its folder under ``"folder"``), in name order; a file whose
    sha256 differs from its manifest's is an error naming it."""
    out = []
    for m in sorted(Path(archive).glob(f"*/{MANIFEST}")):
        man = _manifest(m)
        for name, digest in man["files"].items():
            f = m.parent / name
            if not f.is_file() or sha256_file(f) != digest:
                raise ValueError(f"archive file {f} is missing or differs from its manifest's sha256; "
                                 f"restore it (git checkout -- {f}) or archive the piece again")
        out.append({**man, "folder": str(m.parent)})
    return out


def archive_files(archive: str | Path) -> list[str]:
    """Every file of every piece (manifests and tables): what a rebuild from the archive reads."""
    return sorted(str(p) for p in Path(archive).glob("*/*") if p.name == MANIFEST or p.name.endswith(".csv.gz"))


def holdings(archive: str | Path) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """(group name -> the piece that holds it, group name -> (piece, reason) of those marked stale,
    :func:`mark_stale`), from one read of the manifests; a group in two pieces is an error naming both."""
    where: dict[str, str] = {}
    stale: dict[str, tuple[str, str]] = {}
    for man in pieces(archive):
        for g in man["groups"]:
            if g in where:
                raise ValueError(f"run group {g} is in two pieces of {archive}: {where[g]} and {man['piece']}")
            where[g] = man["piece"]
        for entry in man.get("stale", []):
            stale.update({g: (man["piece"], entry["reason"]) for g in entry["groups"] if g in man["groups"]})
    return where, stale


def archived_groups(archive: str | Path) -> dict[str, str]:
    """group name -> the piece that holds it (:func:`holdings`)."""
    return holdings(archive)[0]


def stale_groups(archive: str | Path) -> dict[str, tuple[str, str]]:
    """group name -> (piece, reason) of every archived group marked stale (:func:`holdings`)."""
    return holdings(archive)[1]


def missing_groups(plan, archive: str | Path) -> list[tuple]:
    """The planned run groups that no piece of the archive holds."""
    have = archived_groups(archive)
    return [g for g in plan.run_groups() if group_name(g) not in have]


def archived_results(archive: str | Path, plan, experiment: str, partial: bool = False):
    """(rows, missing): the archived rows of ``experiment``'s planned runs, in the results table's
    order, and the planned groups no piece holds. Missing groups are an error naming them unless
    ``partial``."""
    where = archived_groups(archive)
    planned = {g: rs for g, rs in plan.run_groups().items() if g[0] == experiment}
    missing = [g for g in planned if group_name(g) not in where]
    if missing and not partial:
        raise ValueError(f"{experiment}: {len(missing)} run group(s) are not in the archive {archive}: "
                         + ", ".join(map(group_name, missing[:8])) + (" ..." if len(missing) > 8 else "")
                         + " (compute them, or set archive_partial to leave them out)")
    frames = []
    for piece in sorted({where[group_name(g)] for g in planned if group_name(g) in where}):
        path = Path(archive) / piece / f"{experiment}.csv.gz"
        frames.append(read_csv_exact(path))
    # a column reduces over several groups (one per kernel where the kernels are not batched): with
    # one of them missing, every run of that algorithm on that data set and bank is left out, so no
    # cell averages over part of its grid
    gone = {g[1:4] for g in missing}
    want = {run_key(r) for g, rs in planned.items() if g[1:4] not in gone for r in rs}
    if not frames:
        return pd.DataFrame(columns=RUN_KEY), missing
    df = pd.concat(frames, ignore_index=True, sort=False)
    df = df[[k in want for k in df[RUN_KEY].itertuples(index=False, name=None)]]
    df = df.sort_values(["algorithm", "dataset", "bank", "param_id", "seed"], kind="stable").reset_index(drop=True)
    return df, missing


# ------------------------------------------------------------------------------------------------
# a rerun against the archive
# ------------------------------------------------------------------------------------------------

#: metrics compared run by run
METRICS = ("acc", "majority_acc", "nmi", "purity", "ri", "ari")


def compare_runs(archive: str | Path, plan, data_dir: str | Path, tolerance: float = 1e-9) -> pd.DataFrame:
    """Run by run, the metrics of the groups complete under ``data_dir`` against the archive's: one
    row per compared group with the runs compared, the largest metric difference, the runs that
    differ by more than ``tolerance``, the group's mean accuracy in the archive and in the rerun
    (``acc_archive``, ``acc_rerun``: the cell that moved), and ``packages``: the packages whose
    versions in the rerun's records differ from those of the piece's manifest (its Python included),
    as "numpy 1.26.4 (archive 2.4.6), ..." or "" where they are the same
    (:func:`mkclust.repro.provenance.version_differences`); and ``blas``: the rerun's BLAS kernels against
    those of the machine that archived the piece (:func:`mkclust.repro.provenance.architecture_difference`)."""
    from mkclust.repro.provenance import (architecture_difference, blas_architectures, differences_text,
                                          version_differences)

    where = archived_groups(archive)
    planned = plan.run_groups()
    rows = []
    cache: dict[tuple, pd.DataFrame] = {}
    manifests: dict[str, tuple[dict, str]] = {}   # piece -> (its versions, its BLAS kernels)
    for g in complete_groups(plan, data_dir):
        name = group_name(g)
        if name not in where:
            continue
        key = (where[name], g[0])
        if key not in cache:
            cache[key] = read_csv_exact(Path(archive) / key[0] / f"{g[0]}.csv.gz").set_index(RUN_KEY)
        if key[0] not in manifests:
            man = _manifest(Path(archive) / key[0] / MANIFEST)
            manifests[key[0]] = ({**man.get("versions", {}), "python": man.get("python")},
                                 blas_architectures(man.get("blas", [])))
        ref = cache[key]
        records = load_records([records_file(data_dir, g)])
        new = records_to_frame(records)
        new = read_csv_exact(io.StringIO(new.to_csv(index=False))).set_index(RUN_KEY)
        keys = [run_key(r) for r in planned[g]]
        worst, differ = 0.0, 0
        for k in keys:
            a, b = new.loc[k], ref.loc[k]
            diffs = [abs(float(a[m]) - float(b[m])) for m in METRICS if m in a.index and m in b.index
                     and not (math.isnan(float(a[m])) and math.isnan(float(b[m])))]
            d = max(diffs, default=0.0)
            if any(math.isnan(x) for x in diffs):
                d = math.inf
            worst = max(worst, d)
            differ += d > tolerance
        ours = next((r.get("versions") for r in records if r.get("versions")), {}) or {}
        ours_blas = next((r["blas"] for r in records if r.get("blas")), "")
        versions, kernels = manifests[key[0]]
        rows.append({"group": name, "piece": where[name], "runs": len(keys), "max_metric_diff": worst,
                     "runs_differing": differ, "acc_archive": _mean_acc(ref, keys), "acc_rerun": _mean_acc(new, keys),
                     "packages": differences_text(version_differences(ours, versions), "archive"),
                     "blas": architecture_difference(ours_blas, kernels, "archive")})
    return pd.DataFrame(rows, columns=["group", "piece", "runs", "max_metric_diff", "runs_differing", "acc_archive",
                                       "acc_rerun", "packages", "blas"])


def _mean_acc(frame: pd.DataFrame, keys: list[tuple]) -> float:
    """The mean accuracy of the runs ``keys`` of ``frame`` (NaN where it has no ``acc``)."""
    return float(frame.loc[keys, "acc"].astype(float).mean()) if "acc" in frame.columns else math.nan
