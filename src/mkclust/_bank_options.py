"""The options of each named kernel bank (:data:`mkclust.kernels.BANKS`) and their ranges, checked
before any kernel is computed: by :func:`mkclust.kernels.build_bank`, and by the workflow's planner
for every bank of a configuration before any job runs. A value out of range is a ValueError naming
the bank, the option and the value (a negative Gaussian width, for instance, would otherwise give
the same kernel as its absolute value under a misleading name)."""

from __future__ import annotations

import math
from numbers import Integral, Real

from mkclust.kernel_functions import GAUSS_REFERENCES, NORMALIZATIONS


def _number(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool)


def positive_list(bank: str, option: str, v) -> None:
    """A non-empty list of positive finite numbers (Gaussian widths, t0, t)."""
    if not isinstance(v, (list, tuple)) or not v:
        raise ValueError(f"bank {bank}: {option} must be a non-empty list of positive numbers, got {v!r}")
    bad = [w for w in v if not (_number(w) and math.isfinite(w) and w > 0)]
    if bad:
        raise ValueError(f"bank {bank}: {option} must be positive and finite; {bad} in {list(v)} is not")


def positive_number(bank: str, option: str, v) -> None:
    if not (_number(v) and math.isfinite(v) and v > 0):
        raise ValueError(f"bank {bank}: {option} must be a positive number (or null), got {v!r}")


def positive_int(bank: str, option: str, v) -> None:
    if not (isinstance(v, Integral) and not isinstance(v, bool) and v >= 1):
        raise ValueError(f"bank {bank}: {option} must be an integer >= 1, got {v!r}")


def nonneg_int(bank: str, option: str, v) -> None:
    if not (isinstance(v, Integral) and not isinstance(v, bool) and v >= 0):
        raise ValueError(f"bank {bank}: {option} must be an integer >= 0, got {v!r}")


def fraction(bank: str, option: str, v) -> None:
    if not (_number(v) and 0 < v <= 1):
        raise ValueError(f"bank {bank}: {option} must be a number in (0, 1], got {v!r}")


def optional(check):
    """``check``, or None (the option left at its default)."""
    def maybe(bank: str, option: str, v) -> None:
        if v is not None:
            check(bank, option, v)
    return maybe


def one_of(*allowed):
    def check(bank: str, option: str, v) -> None:
        if v not in allowed:
            raise ValueError(f"bank {bank}: {option} must be one of {', '.join(map(str, allowed))}; got {v!r}")
    return check


def boolean(bank: str, option: str, v) -> None:
    if not isinstance(v, bool):
        raise ValueError(f"bank {bank}: {option} must be true or false, got {v!r}")


def view_blocks(bank: str, option: str, v) -> None:
    """``[start, stop]`` pairs or ``{name, start, stop}`` mappings with 0 <= start < stop (the upper
    bound, the data's d, is checked when the bank is built)."""
    if v is None:
        return
    if not isinstance(v, (list, tuple)) or not v:
        raise ValueError(f"bank {bank}: {option} must be a non-empty list of column blocks, got {v!r}")
    for block in v:
        start, stop = ((block.get("start"), block.get("stop")) if isinstance(block, dict)
                       else tuple(block) if isinstance(block, (list, tuple)) and len(block) == 2 else (None, None))
        if not (isinstance(start, Integral) and isinstance(stop, Integral) and 0 <= start < stop):
            raise ValueError(f"bank {bank}: {option}: a block is [start, stop] or {{name, start, stop}} with "
                             f"0 <= start < stop; got {block!r}")


NORMALIZE = one_of(*NORMALIZATIONS)

#: bank -> option -> its check (every option a bank's builder takes; any other is refused)
BANK_OPTIONS = {
    "mkc3": {"d": positive_int, "sigma": optional(positive_number), "normalize": NORMALIZE,
             "widths": optional(positive_list)},
    "rmkkm12": {"t0": positive_list, "normalize": NORMALIZE},
    "scmk12": {"t": positive_list, "normalize": NORMALIZE},
    "gauss_grid": {"widths": positive_list, "reference": one_of(*GAUSS_REFERENCES),
                   "normalize": NORMALIZE, "linear": boolean},
    "views_linear": {"views": view_blocks, "normalize": NORMALIZE},
    "views_lg": {"views": view_blocks, "normalize": NORMALIZE},
}

#: the options :func:`mkclust.kernels.build_bank` applies to every bank, with their checks
BUILD_OPTIONS = {"rank": optional(positive_int), "energy": optional(fraction), "landmarks": optional(positive_int),
                 "landmarks_above": nonneg_int, "landmark_seed": nonneg_int,
                 "factor_dtype": one_of("float64", "float32"), "fourier": optional(positive_int)}


def check_bank_options(bank: str, options: dict, build: dict | None = None) -> None:
    """Every option of bank ``bank`` in range, and none it does not take; ``build``: the options
    :func:`mkclust.kernels.build_bank` applies to every bank (rank, energy, landmarks, ...)."""
    known = BANK_OPTIONS.get(bank)
    if known is None:
        return    # a bank registered without an entry here: its builder checks its own options
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"bank {bank}: unknown option(s) {unknown}; it takes {', '.join(sorted(known))}")
    for option, value in options.items():
        known[option](bank, option, value)
    for option, value in (build or {}).items():
        BUILD_OPTIONS[option](bank, option, value)
