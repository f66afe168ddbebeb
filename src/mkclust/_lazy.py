"""Deferred imports of heavy optional libraries, so that a workflow job imports only what it uses."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """The module ``name``, loaded on its first attribute access instead of now (the standard
    library's :class:`importlib.util.LazyLoader` recipe); an already imported module is returned as
    is. Used for cvxpy (about 0.3 s of the start-up of every run job otherwise, though only MKC, CPMMC
    and GMMC solve with it)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
