"""Resource estimates of the workflow's jobs, from the sizes they handle.

The rules ask these functions for ``mem_mb`` and ``runtime`` (minutes), which the SLURM executor turns
into ``--mem`` and ``--time``, and which a local run uses to keep concurrent jobs within
``--resources mem_mb=...``. Every estimate reads the sizes from the job's input files (the array
headers of the ``.npz`` files; nothing is loaded), so it is exact in n, d and the number of kernels m.
An input that does not exist yet raises FileNotFoundError, which Snakemake shows as ``<TBD>`` in a
dry run and evaluates again just before it schedules the job, when the input exists.

The models (calibrated with ``benchmarks/bench_resources.py``, which prints the measured peak memory
and seconds next to these estimates):

- memory: ``BASE_MB`` for the interpreter and its libraries, plus the arrays a job holds. A run holds
  the bank (8 m n^2 bytes for Gram banks, 8 n r per kernel for feature maps), the data (8 n d) and an
  algorithm's working space, ``cost.work_n2`` n x n float64 matrices of its class (e.g. ODMC's centred
  copy and its label pool; GMMC's interior point, about 20 n x n matrices).
- runtime: the estimator class's ``fit_seconds(n, params)`` per fit (by default
  ``cost.seconds_at_1000 (n/1000) ** cost.exponent``; GMMC's with SCS is bounded by its ``max_iter``
  budget, and 0 where it ``declines``), times ``SAFETY``, plus ``BASE_MINUTES`` of start-up.
- batches: an estimator that fits the runs of one input in one lockstep batch (``ODMC.fit_batch``)
  holds ``cost.batch_bytes_per_n`` bytes per sample for each batched run, ``cost.batch_fixed_bytes_per_n``
  once and ``cost.batch_n2`` more n x n matrices, and each batched run costs ``cost.batch_time`` of a
  fit alone.
- both grow with the attempt: ``attempt`` multiplies the estimate, so a job that SLURM killed for memory
  or time (``retries`` in the profile) is resubmitted with twice, then three times the request.
"""

from __future__ import annotations

import math
import resource
import sys
import zipfile
from pathlib import Path

import numpy as np

from mkclust.repro.pseudo import fit_size, lockstep_inputs
from mkclust.algorithms import ALGORITHMS
from mkclust.kernels import nystroem_landmarks

MB = 2**20
BASE_MB = 600  # python, numpy, scipy, scikit-learn and cvxpy imported: 250-450 MB resident (measured)
BASE_MINUTES = 5
SAFETY = 3.0

#: each estimator's memory and time come from its class (``cost``, ``declines``, ``fit_seconds``:
#: :class:`mkclust.algorithms.base.BaseClusterer`)


def _cls(estimator: str):
    return ALGORITHMS[estimator]


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB since it started its program.

    Linux's ``VmHWM`` (``/proc/self/status``) belongs to the process's own address space, which
    ``exec`` replaces. ``getrusage(...).ru_maxrss`` does not reset at ``exec``: a child started by
    ``subprocess`` (fork or vfork, then exec) reports at least its parent's peak. Under pytest or
    snakemake that is the parent's memory, not the job's. Elsewhere (macOS, where ru_maxrss is in
    bytes) the rusage value is the fallback.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024.0


def npz_shapes(path) -> dict[str, tuple[int, ...]]:
    """The shape of every array in an ``.npz`` file, read from the member headers only."""
    shapes = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with z.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, _, _ = read(fh)
            shapes[info.filename[:-4]] = tuple(int(s) for s in shape)
    return shapes


def _shapes(path) -> dict[str, tuple[int, ...]]:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(2, "no such file (yet)", str(path))
    return npz_shapes(p)


def dataset_shape(path) -> tuple[int, int]:
    """(n, d) of a processed data set file (dense ``X``, or sparse ``X_data`` ... ``X_shape``, whose
    shape is the value of the small ``X_shape`` array)."""
    shapes = _shapes(path)
    if "X" not in shapes and "X_shape" in shapes:
        with np.load(path, allow_pickle=False) as z:
            X = tuple(int(v) for v in z["X_shape"])
    else:
        X = shapes["X"]
    return X[0], (X[1] if len(X) > 1 else 1)


def bank_floats(path) -> tuple[int, int]:
    """(n, the number of float64 values) of a kernel bank file: m n^2 for Gram banks, sum n r_k for
    feature maps."""
    s = _shapes(path)
    if "K" in s:
        return s["K"][1], math.prod(s["K"])
    feats = [v for k, v in s.items() if k.startswith("F_")]
    return feats[0][0], sum(math.prod(v) for v in feats)


def _mb(n_floats: float) -> float:
    return 8 * n_floats / MB


def raw_bytes(spec: dict) -> int:
    """Bytes of the raw files a data set's loader reads (0 for embedded and generated sets); ``spec``
    is a planned data set, ``{"loader": name, "options": {...}}``."""
    from mkclust.datasets import REGISTRY

    return sum(f.size or 0 for f in REGISTRY[spec["loader"]].files)


def dataset_mem_mb(raw: int = 0, attempt: int = 1) -> int:
    """The dataset job: parsing a raw file holds a few copies of it (text, tokens, the array)."""
    return int(attempt * (BASE_MB + 6 * raw / MB))


def dataset_runtime(raw: int = 0, attempt: int = 1) -> int:
    """Minutes of the dataset job: a download at 1 MB/s at worst, then the parse."""
    return int(attempt * math.ceil(BASE_MINUTES + 2 * raw / MB / 60))


def _bank_sizes(dataset_path, n_kernels: int | None) -> tuple[int, int, int]:
    """(n, d, m) of a bank job; ``n_kernels`` None (a bank whose size depends on the data, e.g. one
    kernel per view) is bounded by d."""
    n, d = dataset_shape(dataset_path)
    return n, d, n_kernels or d


def bank_rank(n: int, landmarks: tuple[int | None, int] = (None, 0)) -> int:
    """The columns each kernel of a bank holds: n for a Gram matrix, the number of landmarks for a
    Nystroem bank (``landmarks`` = the bank's (``landmarks``, ``landmarks_above``): features from
    landmarks where n exceeds both)."""
    return nystroem_landmarks(n, *landmarks) or n


def bank_seconds(n: int, d: int, m: int, landmarks: tuple[int | None, int] = (None, 0),
                 decompose: bool = False) -> float:
    """Seconds of building a bank on one core: per kernel a BLAS product of n x r x d flops and an exp
    (r = :func:`bank_rank`), plus, for a Nystroem bank or one truncated to a rank (``decompose``), an
    eigendecomposition (r^3)."""
    r = bank_rank(n, landmarks)
    eig = r ** 3 if decompose or r < n else 0
    return m * (2e-9 * n * r * (d + 20) + 1e-9 * eig)


def bank_job_mb(n: int, d: int, m: int, landmarks: tuple[int | None, int] = (None, 0)) -> float:
    """MB of building a bank of m kernels on n x d data: the bank (m n r), and the squared distances
    plus two scratch n x r matrices while a kernel is formed."""
    return BASE_MB + _mb((m + 3) * n * bank_rank(n, landmarks) + 2 * n * d)


def bank_mem_mb(dataset_path, n_kernels: int | None, attempt: int = 1,
                landmarks: tuple[int | None, int] = (None, 0)) -> int:
    """The kernel-bank job: :func:`bank_job_mb` for its input's size."""
    n, d, m = _bank_sizes(dataset_path, n_kernels)
    return int(attempt * bank_job_mb(n, d, m, landmarks))


def bank_runtime(dataset_path, n_kernels: int | None, attempt: int = 1,
                 landmarks: tuple[int | None, int] = (None, 0), decompose: bool = False) -> int:
    """Minutes of the kernel-bank job: :func:`bank_seconds` times ``SAFETY`` (measured 0.3 s for 6
    kernels at n = 3175, d = 60), plus start-up."""
    n, d, m = _bank_sizes(dataset_path, n_kernels)
    return int(attempt * math.ceil(BASE_MINUTES + SAFETY * bank_seconds(n, d, m, landmarks, decompose) / 60))


def group_mem_mb(runs, n: int, d: int, bank: float, low_rank: tuple[int, int] | None = None) -> float:
    """MB a run job holds for a group of runs on a data set of n x d with a bank of ``bank`` float64
    values: the data, the bank and the estimator's working space for the largest fit of the group
    (fits run one after another, so memory does not add up over seeds or settings), plus, for an
    estimator that fits one input's runs in a lockstep batch, the largest batch's state.

    ``low_rank`` = (m, r): the bank is m Nystroem factors of r columns (r < n). An estimator of
    ``feature_maps`` holds 1.6 times the features more; one that takes
    them (``takes_low_rank``) holds its copies of the factors (``low_rank_copies``, two more with the
    authors' kernel preparation), the factors' cross Gram matrix where it needs leading eigenvectors
    (``low_rank_cross``: (m r)^2, or the m n x n kernels where m r >= n, :mod:`mkclust.lowrank`) and
    ``low_rank_vectors`` n-vectors per kernel, instead of n x n working space;
    any other is not run on it (an N/A record saying so) and holds the bank alone."""
    cls = _cls(runs[0].estimator)
    cost, params = cls.cost, [r.params for r in runs]
    fit = max(fit_size(p, n) for p in params)
    work = 0 if all(cls.declines(fit, p) for p in params) else cost.work_n2
    if low_rank is not None and low_rank[1] < n and cls.input_kind == "feature_maps":
        # the features' own copies (centred, projected), no n x n matrix: MKC on mnist01234, n = 28911 and
        # 6 kernels of 2000 columns, peaked at 7,543 MB (reference run), this gives 7,568
        return BASE_MB + _mb(2.6 * bank + 2 * n * d)
    if low_rank is not None and low_rank[1] < n and cls.input_kind in ("kernel", "kernels"):
        m, r = low_rank
        if all(cls.low_rank_refusal(p) is None for p in params):   # measured: tests/workflow/test_memory.py
            copies = cls.low_rank_copies + 2 * any(p.get("protocol") == "authors" for p in params)
            cross = min((m * r) ** 2, m * n * n) if cls.low_rank_cross else 0
            return BASE_MB + _mb((1 + copies) * bank + 2 * n * d + cross + cls.low_rank_vectors * m * n)
        return BASE_MB + _mb(bank + 2 * n * d)   # not run: N/A (mkclust.repro.runner, a dense-only method)
    batched, size = 0.0, _batch_size(params, cls) if cost.batch_bytes_per_n else 0
    if size > 0:
        batched = cost.batch_n2 * fit * fit + (size * cost.batch_bytes_per_n + cost.batch_fixed_bytes_per_n) * fit / 8
    return BASE_MB + _mb(bank + 2 * n * d + work * fit * fit + batched)


def run_mem_mb(runs, dataset_path, bank_path=None, attempt: int = 1) -> int:
    """A run job: :func:`group_mem_mb` for its inputs' sizes (read from the files' headers)."""
    n, d = dataset_shape(dataset_path)
    bank = bank_floats(bank_path)[1] if bank_path else 0
    feats = [v for k, v in _shapes(bank_path).items() if k.startswith("F_")] if bank_path else []
    low = (len(feats), max(v[1] for v in feats)) if feats and _from_landmarks(bank_path) else None
    return int(attempt * group_mem_mb(runs, n, d, bank, low))


def _from_landmarks(bank_path) -> bool:
    """Whether a features bank file was built from landmarks (its meta says so): the low-rank models
    of :func:`group_mem_mb` apply to those, measured there; a bank truncated to a rank keeps the
    dense model (its run jobs are small)."""
    import json
    with np.load(bank_path, allow_pickle=False) as z:
        return "nystroem" in json.loads(str(z["meta"])) if "meta" in z.files else False


def batch_size(runs) -> int:
    """The runs of a group that a batching estimator fits in one batch: on each input (the same
    pseudo-parameters, e.g. ``kernel``), every run after the first (which ODMC, the estimator of
    ``batch_alone_first``, fits alone for its timing; :func:`mkclust.repro.pseudo.lockstep_inputs`); the
    largest such batch."""
    return _batch_size([r.params for r in runs], _cls(runs[0].estimator))


def _batch_size(params: list[dict], cls) -> int:
    return max((len(batch) for _, batch in lockstep_inputs(params, cls)), default=0)


def run_seconds(estimator: str, n: int, params: dict | None = None, typical: bool = False) -> float:
    """Estimated seconds of one fit on one core (before ``SAFETY``): the estimator's ``fit_seconds``,
    its bound or (``typical``) its calibrated typical time."""
    return float(_cls(estimator).fit_seconds(n, params or {}, typical))


def group_seconds(runs, n: int, typical: bool = False, n_classes: int | None = None,
                  input_rank: int | None = None, input_kernels: int | None = None) -> float:
    """Seconds of one run group's fits on one core, fitted in turn: each fit's estimate (bound or
    typical), where an estimator whose lockstep batch costs ``cost.batch_time`` of a fit alone per run
    pays that for each run the runner batches (:func:`mkclust.repro.pseudo.lockstep_inputs`). ``n_classes``,
    where known, is the data set's class count: the runner's default ``n_clusters``; ``input_rank``
    the bank's features per kernel where it is built as Nystroem features (:func:`bank_rank`), and
    ``input_kernels`` its kernels: a kernel method that takes the factors then costs its dense model
    with one factor n of the work n^exponent replaced by min(n, R) per further power (R = the columns
    of all the factors: products of n x R, eigenproblems of R x R; KKM at n = 10,000, 12 x 1,000:
    185 CPU s measured, 216 modelled), and one that needs the n x n kernels is not run (N/A, 0 s)."""
    cls = _cls(runs[0].estimator)
    if input_rank is not None and input_rank < n and cls.input_kind in ("kernel", "kernels"):
        if any(cls.low_rank_refusal(r.params) is not None for r in runs):
            return 0.0
        R = input_rank * (input_kernels or 1)
        ratio = (min(n, R) / n) ** (cls.cost.exponent - 1)
        return ratio * group_seconds(runs, n, typical, n_classes)
    params = [r.params for r in runs]
    fit = [p if n_classes is None or "n_clusters" in p else {**p, "n_clusters": n_classes} for p in params]
    seconds = [cls.fit_seconds(fit_size(p, n), q, typical, input_rank) for p, q in zip(params, fit)]
    if cls.cost.batch_time is not None:
        for _, batch in lockstep_inputs(params, cls):
            for k in batch:
                seconds[k] *= cls.cost.batch_time
    return float(sum(seconds))


def dataset_classes(path) -> int:
    """The number of classes of a processed data set file (its labels ``y``; n integers)."""
    with np.load(path, allow_pickle=False) as z:
        return int(np.unique(z["y"]).size)


def run_runtime(runs, dataset_path, attempt: int = 1) -> int:
    """Minutes of a run job: its fits' bound (:func:`group_seconds`, with the data set's class count
    as the default ``n_clusters``: some fits' work grows with it) times ``SAFETY``, plus start-up."""
    n, _ = dataset_shape(dataset_path)
    seconds = group_seconds(runs, n, n_classes=dataset_classes(dataset_path))
    return int(attempt * math.ceil(BASE_MINUTES + SAFETY * seconds / 60))


def records_mem_mb(paths, attempt: int = 1) -> int:
    """Aggregate, table and figure jobs read run records or results tables: pandas holds a few copies
    of their text."""
    size = sum(Path(p).stat().st_size for p in paths if Path(p).exists())
    return int(attempt * (BASE_MB + 10 * size / MB))

