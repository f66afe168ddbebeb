"""Every estimator of the registry documents each constructor parameter in numpydoc form, with the
default its signature has: ``name : type, default=value`` in its Parameters section."""

import ast
import inspect
import math
import re

import pytest

from mkclust.algorithms import ALGORITHMS

CLASSES = sorted({cls for cls in ALGORITHMS.values()}, key=lambda c: c.__name__)


def _same(text: str, default) -> bool:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return False
    if isinstance(value, float) and isinstance(default, float):
        return math.isclose(value, default)
    return value == default and type(value) is type(default)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_parameter_is_documented_with_its_type_and_default(cls):
    doc = inspect.getdoc(cls) or ""
    m = re.search(r"Parameters\n-+\n(.*?)(\n\n[A-Z][a-z]+\n-+\n|\Z)", doc, re.S)
    assert m, f"{cls.__name__} has no Parameters section"
    section = m.group(1)
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        hit = re.search(rf"^{re.escape(p.name)} : (.+), default=(.+)$", section, re.M)
        assert hit, f"{cls.__name__}: no line '{p.name} : <type>, default=...'"
        assert _same(hit.group(2), p.default), \
            f"{cls.__name__}.{p.name}: documented default {hit.group(2)}, signature {p.default!r}"
    assert "Attributes\n----------" in doc, f"{cls.__name__} has no Attributes section"


def test_a_wrong_default_in_a_docstring_is_caught():
    assert _same("0.3", 0.3) and _same('"algorithm1"', "algorithm1") and _same("None", None)
    assert not _same("0.4", 0.3) and not _same("1", True) and not _same("inf", float("inf"))
