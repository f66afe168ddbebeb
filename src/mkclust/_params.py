"""Parameter constraints of the estimators, checked before any work.

Every estimator states each parameter's allowed values once, as scikit-learn's estimators do
(``_parameter_constraints``: parameter -> list of constraints, a value is valid when it meets one of
them); :func:`validate_params` checks them all and names the parameter, its value and what is
allowed. Written here, not taken from scikit-learn, whose implementation of the same idea
(``sklearn.utils._param_validation``) is private and may change in any release; the constraints and
messages follow its conventions.

A constraint is one of: an :class:`Interval` (ints or reals in a range), :class:`StrOptions` (one of
some strings), ``None`` (None allowed), ``"boolean"``, ``"random_state"`` (None, an int in
[0, 2**32 - 1], a ``numpy.random.RandomState``) or ``"array-like"`` (a list, tuple or array).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np


class InvalidParameterError(ValueError, TypeError):
    """A parameter outside its constraints (both a ValueError and a TypeError, as scikit-learn's)."""


@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``numbers.Integral`` or ``numbers.Real``; never bool) between ``left``
    and ``right`` (None: unbounded), ``closed`` on "left", "right", "both" or "neither"."""

    kind: type
    left: float | None
    right: float | None
    closed: str

    def __post_init__(self):
        if self.kind not in (Integral, Real):
            raise ValueError(f"Interval kind must be Integral or Real, got {self.kind!r}")
        if self.closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"closed must be 'left', 'right', 'both' or 'neither', got {self.closed!r}")

    def accepts(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self) -> str:
        show = (lambda v: str(int(v))) if self.kind is Integral else (lambda v: str(float(v)))
        left = "-inf" if self.left is None else show(self.left)
        right = "inf" if self.right is None else show(self.right)
        lb = "[" if self.closed in ("left", "both") else "("
        rb = "]" if self.closed in ("right", "both") else ")"
        return f"{'an int' if self.kind is Integral else 'a float'} in the range {lb}{left}, {right}{rb}"


class StrOptions:
    """One of the strings ``options``."""

    def __init__(self, options: set[str]):
        self.options = frozenset(options)

    def accepts(self, value) -> bool:
        return isinstance(value, str) and value in self.options

    def __str__(self) -> str:
        return "a str among {" + ", ".join(repr(o) for o in sorted(self.options)) + "}"


_RANDOM_STATE_INT = Interval(Integral, 0, 2**32 - 1, closed="both")
_NAMED = {
    "boolean": (lambda v: isinstance(v, (bool, np.bool_)), "an instance of 'bool'"),
    "random_state": (lambda v: v is None or _RANDOM_STATE_INT.accepts(v) or isinstance(v, np.random.RandomState),
                     f"{_RANDOM_STATE_INT}, an instance of 'numpy.random.RandomState' or None"),
    "array-like": (lambda v: isinstance(v, (list, tuple, np.ndarray)), "an array-like"),
}


def _accepts(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, str):
        return _NAMED[constraint][0](value)
    return constraint.accepts(value)


def _describe(constraint) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, str):
        return _NAMED[constraint][1]
    return str(constraint)


def validate_params(estimator, constraints: dict) -> None:
    """Each parameter of ``estimator`` (``get_params(deep=False)``) against its entry of
    ``constraints``; an :class:`InvalidParameterError` for the first that meets none of its
    constraints, or for a constraint that names no known kind."""
    for name, value in estimator.get_params(deep=False).items():
        allowed = constraints.get(name)
        if allowed is None:
            continue
        for c in allowed:
            if isinstance(c, str) and c not in _NAMED:
                raise InvalidParameterError(f"unknown constraint {c!r} of parameter {name!r}")
        if any(_accepts(c, value) for c in allowed):
            continue
        texts = [_describe(c) for c in allowed]
        what = texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} or {texts[-1]}"
        raise InvalidParameterError(f"The {name!r} parameter of {type(estimator).__name__} must be {what}. "
                                    f"Got {value!r} instead.")
