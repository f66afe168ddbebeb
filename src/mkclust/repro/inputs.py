"""The input of a run, chosen in one place: the data set and kernel bank built from their planned
specs, and, for one run, what its estimator is given (the data matrix, one kernel of the bank, the
equal-weight mean of the bank, the first M kernels, or the bank's feature matrices), as its
pseudo-parameters (:mod:`mkclust.repro.pseudo`) select it."""

from __future__ import annotations

import numpy as np

from mkclust.lowrank import LowRankBank
from mkclust.repro.errors import ConfigError
from mkclust.datasets import Dataset, load
from mkclust.kernels import BANKS, KernelBank, apply_preprocess, build_bank
from mkclust.repro.pseudo import check_kernel_choice

#: bank-spec keys that are arguments of :func:`mkclust.kernels.build_bank`, not options of the bank
BUILD_KEYS = ("rank", "energy", "landmarks", "landmarks_above", "landmark_seed", "factor_dtype", "fourier")


def bank_options(spec: dict) -> dict:
    """The bank's own options of a planned bank spec (``widths``, ``normalize``, ...): every key but
    the bank's name, its preprocessing and :data:`BUILD_KEYS`."""
    return {k: v for k, v in spec.items() if k not in ("bank", "preprocess", "preprocess_by_dataset", *BUILD_KEYS)}


def make_dataset(spec: dict, raw_dir=None, mirror=None) -> Dataset:
    """Load a dataset from its planned spec ``{loader, options}``; downloadable sets take their raw
    files from ``mirror`` (else ``$MKCLUST_DATA_MIRROR``) or download them into ``raw_dir``."""
    return load(spec["loader"], raw_dir=raw_dir, mirror=mirror, **spec.get("options", {}))


def make_bank(spec: dict, ds: Dataset) -> KernelBank:
    """Build a kernel bank from its config spec on a dataset; a per-view bank (``views_linear``) takes
    the dataset's view blocks from its meta unless given."""
    if "preprocess_by_dataset" in spec:
        raise ValueError("make_bank takes a bank's spec as built on one data set: "
                         "Plan.inputs.bank_spec(bank, dataset) resolves preprocess_by_dataset")
    opts = bank_options(spec)
    if BANKS[spec["bank"]].per_view and "views" not in opts:
        if "views" not in ds.meta:
            raise ConfigError(f"bank {spec['bank']} needs a multi-view dataset; {ds.meta.get('name')} has no views")
        opts["views"] = ds.meta["views"]
    build = {k: spec[k] for k in BUILD_KEYS if spec.get(k) is not None}
    return build_bank(spec["bank"], ds.X, preprocess=spec.get("preprocess", "none"), **build, **opts)


def run_input(ds: Dataset, bank: KernelBank | None, input_kind: str, pseudo: dict, low_rank: bool = False):
    """``(data, kernel name(s))``: what an estimator of ``input_kind`` (``features``, ``kernel``,
    ``kernels`` or ``feature_maps``, :attr:`~mkclust.algorithms.base.BaseClusterer.input_kind`) is
    fitted on, as the run's pseudo-parameters ``pseudo`` select it:

    - ``features``: the data matrix, dense, after the ``preprocess`` pseudo-parameter;
    - ``kernel``: one Gram matrix, the bank's ``kernel``-th or (``"ew"``) the equal-weight mean of all
      of them; ``kernel`` may be left out only for a bank of one kernel;
    - ``kernels``: the Gram stack (m, n, n), its first ``n_kernels``, the one ``kernel``, or (``"ew"``)
      a stack of one, the equal-weight mean (a multiple-kernel method on the average kernel);
    - ``feature_maps``: the feature matrices of a features bank, the same way (a Gram bank: the stack).

    With ``low_rank`` (an estimator that takes one, :attr:`~mkclust.algorithms.base.BaseClusterer.takes_low_rank`)
    a features bank is given as a :class:`~mkclust.lowrank.LowRankBank` the same way (one kernel, the
    equal-weight mean, or the bank), so no n x n matrix is formed.
    """
    if low_rank and bank is not None and bank.kind == "features" and input_kind in ("kernel", "kernels"):
        return _low_rank_input(LowRankBank.from_kernel_bank(bank), input_kind, pseudo)
    if input_kind == "features":
        data = apply_preprocess(ds.X, pseudo.get("preprocess"))
        return (data.toarray() if hasattr(data, "toarray") else data), None
    m = bank.n_kernels
    choice = pseudo.get("kernel")
    if input_kind == "kernel":
        if choice is None:
            if m != 1:
                raise ConfigError(f"the bank holds {m} kernels; set the parameter kernel "
                                  "(an index, 'ew', or 'all' in a grid)")
            choice = 0
        if choice == "ew":
            return bank.gram().mean(axis=0), "equal-weight mean of " + "+".join(bank.names)
        check_kernel_choice({"kernel": choice}, m)
        return bank.kernel(choice), bank.names[choice]
    if choice == "ew":   # a multiple-kernel method on the one average kernel (CPMMC: MKC on one kernel)
        return bank.gram().mean(axis=0)[None], ["equal-weight mean of " + "+".join(bank.names)]
    check_kernel_choice(pseudo, m)
    idx = [int(choice)] if choice is not None else list(range(pseudo.get("n_kernels") or m))
    names = [bank.names[i] for i in idx]
    if input_kind == "feature_maps" and bank.kind == "features":
        feats = bank.feature_list()
        return [feats[i] for i in idx], names
    if len(idx) == 1:
        return bank.kernel(idx[0])[None], names
    K = bank.gram()
    return (K if len(idx) == K.shape[0] else K[idx]), names


def _low_rank_input(low: LowRankBank, input_kind: str, pseudo: dict):
    """:func:`run_input` on a low-rank bank (its ``low_rank`` case)."""
    m, choice = low.n_kernels, pseudo.get("kernel")
    mean_name = "equal-weight mean of " + "+".join(low.names)
    if choice == "ew":
        mean = low.combine(np.full(m, 1.0 / m))
        return (mean, mean_name) if input_kind == "kernel" else (LowRankBank([np.hstack(
            [F * np.sqrt(1.0 / m) for F in low.factors])]), [mean_name])
    if input_kind == "kernel":
        if choice is None and m != 1:
            raise ConfigError(f"the bank holds {m} kernels; set the parameter kernel "
                              "(an index, 'ew', or 'all' in a grid)")
        choice = 0 if choice is None else choice
        check_kernel_choice({"kernel": choice}, m)
        return low.kernel(int(choice)), low.names[int(choice)]
    check_kernel_choice(pseudo, m)
    idx = [int(choice)] if choice is not None else list(range(pseudo.get("n_kernels") or m))
    return LowRankBank([low.factors[i] for i in idx], names=[low.names[i] for i in idx]), [low.names[i] for i in idx]
