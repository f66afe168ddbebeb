"""Pseudo-parameters: run parameters that the runner consumes to choose an estimator's input (which
kernel, how many, which subset, which preprocessing) or to derive a parameter from the data set
(``imbalanced_balance``), instead of passing them to the estimator. The planner, the runner and the
resource model read them through this module alone."""

from __future__ import annotations

import json

import numpy as np

from mkclust.repro.errors import ConfigError

#: parameters the runner consumes (not passed to the estimator), and the input kinds that take them:
#: ``kernel`` picks one kernel of the bank (an index or "ew"); ``n_kernels`` keeps the first M
#: kernels; ``fit_subset`` fits on a random subset of that size (drawn with the run's seed) and labels
#: every sample with ``predict`` (the MKC paper's Table 3); ``preprocess`` transforms the data matrix
#: of an estimator on features (:data:`mkclust.kernels.PREPROCESS`, as a bank's ``preprocess:`` does
#: before its kernels), e.g. KM on the columns scaled to [-1, 1] that the ODMC protocol's kernels use;
#: ``imbalanced_balance`` (estimators with a ``balance`` bound) sets ``balance`` to that share of n on
#: an imbalanced data set (:func:`resolve_balance`) and leaves the estimator's default (0.03 n) on the
#: others: the MMC protocol of Zhang, Tsang and Kwok (2007) that the ODMC paper follows.
PSEUDO_PARAMS = {
    "kernel": ("kernel", "feature_maps"),
    "n_kernels": ("kernels", "feature_maps"),
    "fit_subset": ("feature_maps",),
    "preprocess": ("features",),
    "imbalanced_balance": ("kernel", "kernels", "feature_maps"),
}

#: a data set is imbalanced when its largest and smallest classes differ by more than this share of
#: n (for two classes, |e'y| > 0.1 n: the minority is under 45 %). 0.1 is about the geometric mean of
#: the protocol's two bounds, 0.03 n and 0.3 n: each set gets the bound nearer, in ratio, to its own
#: class imbalance. The papers (ODMC, IterSVR) do not say which of their sets they counted as
#: imbalanced; this rule is our choice.
IMBALANCED_ABOVE = 0.1


def class_imbalance(y) -> float:
    """(largest class - smallest class) / n of the labels y."""
    counts = np.unique(np.asarray(y), return_counts=True)[1]
    return float((counts.max() - counts.min()) / counts.sum())


def resolve_balance(params: dict, pseudo: dict, n: int, imbalance: float) -> dict:
    """The parameters the runner derives from the data set (n samples, :func:`class_imbalance`
    ``imbalance``): ``balance`` = share x n under the ``imbalanced_balance`` pseudo-parameter when the
    imbalance exceeds :data:`IMBALANCED_ABOVE` (set in ``params``, and returned for the record);
    nothing otherwise. Under ``fit_subset`` the bound is a share of the samples fitted, the subset."""
    share = pseudo.get("imbalanced_balance")
    if share is None or imbalance <= IMBALANCED_ABOVE:
        return {}
    params["balance"] = float(share) * fit_size(pseudo, n)
    return {"balance": params["balance"]}



def split_pseudo(params: dict) -> tuple[dict, dict]:
    """(the estimator's parameters, the pseudo-parameters that select its input) of a run."""
    pseudo = {k: params[k] for k in PSEUDO_PARAMS if k in params}
    return {k: v for k, v in params.items() if k not in pseudo}, pseudo


def input_key(pseudo: dict) -> str:
    """Runs with equal keys share one input (and, for a batching estimator, one batch)."""
    return json.dumps(pseudo, sort_keys=True)


def lockstep_inputs(params: list[dict], cls) -> list[tuple[list[int], list[int]]]:
    """How the runner fits a group's runs (their ``params``, in order) with estimator class ``cls``:
    per input (equal :func:`input_key`), the indices fitted one by one and those fitted together in
    one lockstep batch (``cls.fit_batch``). A batching estimator batches every run of an input,
    after the first where ``cls.batch_alone_first`` (fitted alone, for its timing); runs on a subset
    (``fit_subset``) are never batched. The runner, the job's memory and the time estimates read it."""
    inputs: dict[str, list[int]] = {}
    for k, p in enumerate(params):
        inputs.setdefault(input_key(split_pseudo(p)[1]), []).append(k)
    batching = hasattr(cls, "fit_batch")
    first = getattr(cls, "batch_alone_first", False)
    layout = []
    for idx in inputs.values():
        subset = split_pseudo(params[idx[0]])[1].get("fit_subset") is not None
        alone = idx if not batching or subset else (idx[:1] if first else [])
        layout.append((alone, idx[len(alone):]))
    return layout


def fit_size(run_params: dict, n: int) -> int:
    """The samples a run fits on a data set of n: its ``fit_subset`` size, else n."""
    sub = run_params.get("fit_subset")
    return min(n, int(sub)) if sub else n


def check_kernel_choice(pseudo: dict, m: int | None, bank: str = "a bank") -> None:
    """A run's ``kernel`` (an index of the bank or ``"ew"``) and ``n_kernels`` (1 .. m) against a bank
    of m kernels (m None: where the size depends on the data, only their types); a ConfigError names
    the value. The planner checks every grid point with it before any job, the bank and the runner
    each input they select."""
    kernel, count = pseudo.get("kernel"), pseudo.get("n_kernels")
    if kernel is not None and kernel != "ew":
        if isinstance(kernel, bool) or not isinstance(kernel, (int, np.integer)):
            raise ConfigError(f"kernel={kernel!r}; a kernel is an index of the bank, ew or (in a grid) all")
        if m is not None and not 0 <= kernel < m:
            raise ConfigError(f"kernel={kernel} is out of range for {bank} of {m} kernels (0 .. {m - 1})")
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1 \
                or (m is not None and count > m):
            raise ConfigError(f"n_kernels={count!r} is out of range for {bank} of {m} kernels")

