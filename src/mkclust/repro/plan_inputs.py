"""What a plan's jobs build from: its data sets (loader and options) and kernel banks (options),
looked up by name with a clear error for a name the plan does not use, and the facts about them the
rules and the estimate need (raw files to download, a bank's size, landmarks, truncation)."""

from __future__ import annotations

from pathlib import Path

from mkclust.datasets import REGISTRY as DATASETS
from mkclust.datasets.download import local_copy, sha256_file
from mkclust.kernels import bank_size
from mkclust.repro.errors import ConfigError
from mkclust.repro.inputs import bank_options


def bank_spec_for(spec: dict, dataset: str) -> dict:
    """A bank's spec as built on one data set: ``preprocess_by_dataset[dataset]``, where given, in
    place of ``preprocess`` and the mapping dropped, so a set without an entry builds from exactly
    the spec it had before the mapping existed (its bank is not rebuilt)."""
    out = {k: v for k, v in spec.items() if k != "preprocess_by_dataset"}
    by_set = spec.get("preprocess_by_dataset") or {}
    if dataset in by_set:
        out["preprocess"] = by_set[dataset]
    return out


class PlanInputs:
    """The data sets and kernel banks of a plan (``Plan.inputs``)."""

    def __init__(self, datasets: dict[str, dict], banks: dict[str, dict], data_dir: str):
        """``datasets``: name -> {loader, options}; ``banks``: name -> its options; ``data_dir``:
        where the built sets live (``<data_dir>/processed``) and raw files are kept (``<data_dir>/raw``)."""
        self.datasets, self.banks, self.data_dir = datasets, banks, data_dir

    def dataset_spec(self, name: str) -> dict:
        """The loader and options of a data set of the plan (a clear error for any other name: a
        target such as data/processed/<name>.npz of a set no experiment uses)."""
        if name not in self.datasets:
            raise ConfigError(f"data set {name!r} is not used by any experiment of this configuration "
                              f"(its data sets: {', '.join(sorted(self.datasets))})")
        return self.datasets[name]

    def missing_raw_files(self, mirror=None) -> dict[str, list[str]]:
        """data set -> its raw files that are neither in the mirror (``mirror``, else
        ``$MKCLUST_DATA_MIRROR``) nor under ``<data_dir>/raw``, for the downloadable sets of the plan
        not built yet (``<data_dir>/processed/<set>.npz`` absent): what the run will download."""
        raw = Path(self.data_dir) / "raw"
        out = {}
        for name, spec in self.datasets.items():
            reg = DATASETS[spec["loader"]]
            if reg.kind != "download" or (Path(self.data_dir) / "processed" / f"{name}.npz").is_file():
                continue
            gone = [f.path for f in reg.files if local_copy(f, raw, mirror) is None]
            if gone:
                out[name] = gone
        return out

    def data_files(self) -> dict[str, dict]:
        """data set -> {path, sha256} of each researcher's own file the plan reads (``file:``)."""
        return {name: {"path": str(spec["options"]["path"]), "sha256": sha256_file(spec["options"]["path"])}
                for name, spec in sorted(self.datasets.items()) if spec["loader"] == "file"}

    def bank_spec(self, name: str, dataset: str | None = None) -> dict:
        """The options of a kernel bank of the plan (a clear error for any other name); with
        ``dataset``, as built on that set (:func:`bank_spec_for`)."""
        if name not in self.banks:
            raise ConfigError(f"kernel bank {name!r} is not used by any experiment of this configuration "
                              f"(its banks: {', '.join(sorted(self.banks))})")
        spec = self.banks[name]
        return spec if dataset is None else bank_spec_for(spec, dataset)

    def bank_landmarks(self, bank: str) -> tuple[int | None, int]:
        """A bank's (``landmarks``, ``landmarks_above``): Nystroem features where n exceeds both; with
        ``fourier`` features for its Gaussians, the larger of the two counts is priced as its columns."""
        spec = self.banks[bank]
        marks = spec.get("landmarks")
        if marks is not None and spec.get("fourier"):
            marks = max(int(marks), int(spec["fourier"]))
        return marks, spec.get("landmarks_above") or 0

    def bank_decomposes(self, bank: str) -> bool:
        """Whether building the bank eigendecomposes each kernel (a ``rank`` or ``energy`` truncation)."""
        spec = self.banks[bank]
        return spec.get("rank") is not None or spec.get("energy") is not None

    def bank_size(self, bank: str) -> int | None:
        """The number of kernels of a configured bank (None when it depends on the data set)."""
        spec = self.banks[bank]
        return bank_size(spec["bank"], **bank_options(spec))
