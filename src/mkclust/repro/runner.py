"""Running: a planned group of runs on its data set and kernel bank -> one run record per run
(the record's fields: ``docs/architecture.md``). Called by the workflow's scripts with the
:class:`~mkclust.repro.run_spec.Run` specs the planner wrote; the input each run is fitted on is
chosen by :func:`mkclust.repro.inputs.run_input`."""

from __future__ import annotations

import logging
import time

import numpy as np
from threadpoolctl import threadpool_info

from mkclust import metrics as _metrics
from mkclust._validation import assume_psd, check_psd
from mkclust.repro.errors import ConfigError
from mkclust.algorithms import ALGORITHMS, get_estimator
from mkclust.algorithms.base import NotFinished, SharedStartBatch
from mkclust.datasets import Dataset
from mkclust.kernels import KernelBank
from mkclust.lowrank import LowRankBank
from mkclust.repro.checkpoint import GroupCheckpoint
from mkclust.repro.inputs import run_input
from mkclust.repro.provenance import blas_architectures, record_versions
from mkclust.repro.pseudo import IMBALANCED_ABOVE, class_imbalance, lockstep_inputs, resolve_balance, split_pseudo
from mkclust.repro.resources import peak_rss_mb
from mkclust.repro.run_spec import Run

log = logging.getLogger("mkclust.repro.runner")

# ------------------------------------------------------------------------------------------------
# one run
# ------------------------------------------------------------------------------------------------


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


STANDARD_ATTRS = {"labels_", "objective_", "objective_trace_", "n_iter_", "kernel_weights_"}


def _diagnostics(est, max_size: int = 1000) -> dict:
    """Fitted attributes beyond the standard ones that are small enough to keep in a record."""
    out = {}
    for k, v in vars(est).items():
        if not k.endswith("_") or k.startswith("_") or k in STANDARD_ATTRS:
            continue
        if isinstance(v, np.ndarray) and v.size > max_size:
            continue
        if isinstance(v, (list, tuple)) and len(v) > max_size:
            continue
        if v is None or isinstance(v, (int, float, str, bool, np.ndarray, np.generic, list, tuple, dict)):
            out[k] = _jsonable(v)
    return out


def run_one(run: Run, dataset_path, bank_path=None) -> dict:
    """Fit ``run``'s estimator on its dataset and bank and return the run record (docs/architecture.md)."""
    return run_group([run], dataset_path, bank_path)[0]


def run_group(runs: list[Run], dataset_path, bank_path=None, checkpoint=None) -> list[dict]:
    """Fit the runs of one group (same estimator, dataset and bank; one per seed, and one per value
    of each batched parameter), loading the dataset and the bank once; returns their records in
    order. With ``checkpoint`` (a folder), each finished run's record is kept there and a run kept
    by an earlier attempt is not fitted again (:mod:`mkclust.repro.checkpoint`)."""
    if len({r.group for r in runs}) != 1:
        raise ValueError("run_group takes the runs of one group")
    ds = Dataset.load(dataset_path)
    input_kind = ALGORITHMS[runs[0].estimator].input_kind
    bank = None if input_kind == "features" else KernelBank.load(bank_path)
    split = [split_pseudo(r.params) for r in runs]
    imbalance = class_imbalance(ds.y)
    derived = []
    for params, pseudo in split:
        params.setdefault("n_clusters", ds.n_classes)
        derived.append(resolve_balance(params, pseudo, ds.n, imbalance))
    if any(derived):
        log.info("%s is imbalanced (class imbalance %.3f > %g): balance %s", runs[0].dataset, imbalance,
                 IMBALANCED_ABOVE, sorted({d["balance"] for d in derived if d}))
    records: list = [None] * len(runs)
    saved = None if checkpoint is None else GroupCheckpoint(checkpoint, [dataset_path, bank_path])
    if saved is not None and len(saved):
        log.info("%d run record(s) kept in %s by an earlier attempt", len(saved), checkpoint)
    # per input (a batch over alpha, beta shares one): the runs fitted alone, then those in one batch;
    # ODMC (batch_alone_first) fits the first alone, so that its seconds per iteration are those of one fit
    cls = ALGORITHMS[runs[0].estimator]
    declined = cls.two_class_only and any(int(params["n_clusters"]) != 2 for params, _ in split)
    dense_only = _dense_only(cls, bank, ds.n, runs[0].params)
    declined = declined or dense_only is not None
    if not declined:
        t0 = time.process_time()
        cls.load_compiled()                                   # outside the fits' timings
        log.info("%s: compiled loops loaded in %.2f CPU s", cls.__name__, time.process_time() - t0)
    for alone, batch in lockstep_inputs([r.params for r in runs], cls):
        if declined:   # a two-class method on a data set of more classes, a dense-only one on landmarks: N/A
            alone, batch = alone + batch, []
        pseudo = split[(alone or batch)[0]][1]
        data, kernel_name = ((None, None) if dense_only else
                             run_input(ds, bank, input_kind, pseudo, low_rank=cls.takes_low_rank))
        if (dense_only is None and input_kind != "features" and cls.requires_psd
                and not isinstance(data, (list, LowRankBank))):
            # once per input here, exactly at any n, so the fits (and their timings) skip it (assume_psd below)
            check_psd(data, f"{runs[0].dataset}/{runs[0].bank} kernel {kernel_name}", exact=True)
        with assume_psd():
            for k in alone:
                run, params = runs[k], split[k][0]
                log.info("run %d of %d: params %s, seed %d", k + 1, len(runs), run.params_json, run.seed)
                records[k] = _kept_or_fit(saved, run, lambda: _fit_record(
                    run, get_estimator(run.estimator, random_state=run.seed, **params), data, ds, params,
                    kernel_name, pseudo.get("fit_subset"), declined=dense_only))
            if batch:
                pairs = [(runs[k], split[k][0]) for k in batch]
                if saved is not None and issubclass(cls, SharedStartBatch):
                    fitted = _fit_shared_kept(pairs, data, ds, kernel_name, saved)
                else:
                    fitted = [None if saved is None else saved.get(run) for run, _ in pairs]
                    if any(rec is None for rec in fitted):
                        fitted = _fit_batch_records(pairs, data, ds, kernel_name)
                        for (run, _), rec in zip(pairs, fitted):
                            if saved is not None:
                                saved.put(run, rec)
                for k, rec in zip(batch, fitted):
                    records[k] = rec
    for rec, d in zip(records, derived):
        rec["derived_params"] = d
    if runs[0].scores and bank is not None:
        _label_free_scores(records, runs[0].scores.split(","), bank)
    return records


def _label_free_scores(records: list[dict], names: list[str], bank: KernelBank) -> None:
    """Add each label-free score of ``names`` (:data:`mkclust.metrics.LABEL_FREE`) to the metrics of
    every record with labels, computed on the equal-weight mean of ``bank``'s kernels (one distance for
    every setting and method of the data set); NaN for a record without labels."""
    # the bank's equal-weight mean, as "ew" runs fit (low-rank for a features bank: no n x n matrix)
    Kavg = run_input(None, bank, "kernel", {"kernel": "ew"}, low_rank=True)[0]
    for rec in records:
        for name in names:
            lab = rec["labels"]
            rec["metrics"][name] = _metrics.LABEL_FREE[name](Kavg, np.asarray(lab)) if len(lab) else float("nan")


def _kept_or_fit(saved: GroupCheckpoint | None, run: Run, fit) -> dict:
    """``run``'s record kept in ``saved``, or ``fit()``'s, then kept there (no checkpoint: ``fit()``)."""
    rec = None if saved is None else saved.get(run)
    if rec is None:
        rec = fit()
        if saved is not None:
            saved.put(run, rec)
    return rec


def _fit_shared_kept(pairs: list, data, ds: Dataset, kernel_name, saved: GroupCheckpoint) -> list[dict]:
    """The records of a batch of a :class:`~mkclust.algorithms.base.SharedStartBatch` estimator,
    fitted one run at a time (one start-sharing cache across them, so the computations are those of
    the whole batch) and each kept in ``saved`` as it ends: an interruption loses one fit, not the
    batch. The seconds are then shared as a whole batch shares them: each run gets the sum over the
    batch divided by its runs (a kept record holds the seconds of its own fit)."""
    done: dict = {}
    fitted = []
    for pair in pairs:       # fit() runs inside the call, so the lambda's pair is this one
        fitted.append(dict(_kept_or_fit(saved, pair[0],
                                        lambda: _fit_batch_records([pair], data, ds, kernel_name, done=done)[0])))
    for field in ("fit_seconds", "cpu_seconds"):
        share = sum(rec[field] for rec in fitted) / len(fitted)
        for rec in fitted:
            rec[field] = share
    return fitted


def _fit_batch_records(batch: list, data, ds: Dataset, kernel_name, done: dict | None = None) -> list[dict]:
    """Records of (run, estimator parameters) pairs fitted together by their estimator's
    ``fit_batch``; each run's fit_seconds and cpu_seconds are the batch's divided by its runs. A
    fit that did not finish inside the batch holds its NotFinished in ``not_finished_`` (GMMC) and
    is recorded as N/A with its reason, as a NotFinished raised by ``fit``. ``done``: the
    start-sharing cache of a :class:`~mkclust.algorithms.base.SharedStartBatch` estimator, shared
    with other calls."""
    ests = [get_estimator(run.estimator, random_state=run.seed, **params) for run, params in batch]
    log.info("fit %d runs of %s (%s) on %s/%s in one batch", len(batch), batch[0][0].algorithm,
             batch[0][0].estimator, batch[0][0].dataset, batch[0][0].bank)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    type(ests[0]).fit_batch(ests, data, **({} if done is None else {"done": done}))
    share = ((time.perf_counter() - wall0) / len(batch), (time.process_time() - cpu0) / len(batch))
    return [_fit_record(run, est, data, ds, params, kernel_name, fitted=share)
            for (run, params), est in zip(batch, ests)]


def _subset_fit(est, data, n: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Fit on a random subset of ``size`` samples and label all n with ``predict``; returns (the n
    labels, the subset's sample indices)."""
    if not 2 <= size <= n:
        raise ConfigError(f"fit_subset={size} must lie in [2, {n}]")
    S = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))
    if isinstance(data, list):
        est.fit([F[S] for F in data])
        return np.asarray(est.predict(data)), S
    est.fit(data[:, S][:, :, S])
    return np.asarray(est.predict(data[:, :, S])), S


def _dense_only(cls, bank: KernelBank | None, n: int, params: dict) -> str | None:
    """Why a method that needs the n x n kernels (with these ``params``:
    :meth:`~mkclust.algorithms.base.BaseClusterer.low_rank_refusal`) is not run on a bank built from
    landmarks (its Gram matrices would be formed from the factors: the memory the landmarks were chosen
    to avoid); None where it runs."""
    if bank is None or bank.kind != "features" or "nystroem" not in bank.meta or cls.input_kind not in ("kernel",
                                                                                                     "kernels"):
        return None
    why = cls.low_rank_refusal(params)
    if why is None:
        return None
    gib = bank.n_kernels * n * n * 8 / 2**30
    return (f"{cls.__name__} {why} ({gib:.1f} GiB at n = {n}); the bank is built from "
            f"{bank.meta['nystroem']['landmarks']} landmarks, which only the low-rank methods take")


def _fit_record(run: Run, est, data, ds: Dataset, params: dict, kernel_name, fit_subset=None,
                fitted: tuple[float, float] | None = None, declined: str | None = None) -> dict:
    """Fit ``est`` and return the run's record; ``fitted`` = (wall, cpu seconds): ``est`` was fitted
    already (in a batch) and those are its seconds; ``declined``: the reason it is not fitted (N/A)."""
    libraries = threadpool_info()
    blas_threads = max((p["num_threads"] for p in libraries), default=None)
    if fitted is None:
        log.info("fit %s (%s) on %s/%s params=%s seed=%d n=%d, BLAS threads %s", run.algorithm, run.estimator,
                 run.dataset, run.bank, run.params_json, run.seed, ds.n, blas_threads)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    status, reason = "ok", ""
    try:
        if declined:
            raise NotFinished(declined)
        if type(est).two_class_only and int(params["n_clusters"]) != 2:
            raise NotFinished(f"{run.algorithm} clusters two classes only; {run.dataset} has {ds.n_classes}")
        if fitted is not None:
            if getattr(est, "not_finished_", None) is not None:  # declined within its batch
                raise est.not_finished_
            labels = np.asarray(est.labels_)
        elif fit_subset is None:
            est.fit(data)
            labels = np.asarray(est.labels_)
        else:
            labels, subset = _subset_fit(est, data, ds.n, int(fit_subset), run.seed)
    except NotFinished as exc:  # declined or out of budget (GMMC): an N/A cell with the reason
        status, reason, labels = "not_finished", str(exc), None  # not "n/a": pandas reads that as NA
        log.warning("%s on %s: N/A (%s)", run.algorithm, run.dataset, reason)
    fit_seconds, cpu_seconds = fitted or (time.perf_counter() - wall0, time.process_time() - cpu0)
    if labels is None:
        scores = {name: float("nan") for name in _metrics.METRICS}
    else:
        scores = _metrics.evaluate(ds.y, labels)
    rec = {
        "experiment": run.experiment, "algorithm": run.algorithm, "estimator": run.estimator,
        "dataset": run.dataset, "bank": run.bank, "params": run.params, "param_id": run.param_id,
        "seed": run.seed, "n": ds.n, "n_clusters": int(params["n_clusters"]), "kernel_name": kernel_name,
        "majority_share": _metrics.majority_share(ds.y),
        "status": status, "reason": reason,
        "labels": [] if labels is None else labels.tolist(), "metrics": scores,
        "cluster_sizes": [] if labels is None else np.bincount(labels, minlength=int(params["n_clusters"])).tolist(),
        "objective": _jsonable(getattr(est, "objective_", None)),
        "objective_trace": _jsonable(getattr(est, "objective_trace_", None)),
        "kernel_weights": _jsonable(getattr(est, "kernel_weights_", None)),
        "n_iter": _jsonable(getattr(est, "n_iter_", None)),
        "fit_seconds": fit_seconds, "cpu_seconds": cpu_seconds,
        "peak_rss_mb": peak_rss_mb(),
        "timing": run.timing, "blas_threads": blas_threads, "dataset_flags": ds.meta.get("flags", []),
        "versions": record_versions(), "blas": blas_architectures(libraries), "diagnostics": _diagnostics(est),
    }
    if labels is not None and not run.timing and hasattr(est, "objective_at"):
        # the model's objective at its own labels and at the true ones (labels fixed, same kernels and
        # parameters): a diagnostic of where a gap comes from, read after the fit and never used to
        # choose anything; for a fit on a subset, on that subset (its labels and its true labels)
        own, true = (labels, ds.y) if fit_subset is None else (est.labels_, ds.y[subset])
        rec["diagnostics"]["objective_at_labels"] = est.objective_at(own)
        rec["diagnostics"]["objective_at_true_labels"] = est.objective_at(true)
    log.info("done in %.3f s (cpu %.3f s): %s", fit_seconds, cpu_seconds,
             ", ".join(f"{k}={v:.4f}" for k, v in scores.items()))
    return rec
