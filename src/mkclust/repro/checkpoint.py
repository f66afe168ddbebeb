"""A run group in progress, kept run by run: each finished run's record is written (atomically, as
JSON in a ``.json.kept`` file) into a folder beside the group's records file, so that a job stopped
part-way (a cluster's time limit, a killed session, a power cut) starts again from the runs it had
not finished instead of from its first one. The rule ``run`` keeps it in ``<records file>.partial/``
and removes it once the records file is written.

A kept record is used again only for the same run, computed the same way: its file name is a digest
of the run's spec, of the bytes of the group's input files (data set and kernel bank), of the
package versions a record lists (:func:`mkclust.repro.provenance.record_versions`) and of the source
of the code that decides the run's labels: the estimator's module and every module of the package it
imports, transitively (:func:`source_closure`), so a change to ODMC's code leaves LG-MMC's kept runs
valid and a change to the label search they share voids both. Anything else finds no record and fits.
Records kept before 2026-11-28 were named with the source of all of ``mkclust.algorithms`` instead
(:func:`algorithms_digest`); they are still found while that source is the same.
"""

from __future__ import annotations

import ast
import hashlib
import json
from importlib import resources
import logging
from pathlib import Path

from mkclust._io import write_json
from mkclust.datasets.download import sha256_file
from mkclust.repro.provenance import record_versions
from mkclust.repro.run_spec import Run

log = logging.getLogger("mkclust.repro.checkpoint")
SUFFIX = ".json.kept"   # not *.json: a kept record is not a records file to anything that looks for those


def kept_folder(records_file) -> Path:
    """The folder the rule ``run`` keeps a group's finished runs in: ``<records file>.partial``."""
    return Path(f"{records_file}.partial")


def kept_runs(folder) -> list[Path]:
    """The kept records in ``folder`` (none if it does not exist), in name order."""
    folder = Path(folder)
    return sorted(folder.glob(f"*{SUFFIX}")) if folder.is_dir() else []
PACKAGE = "mkclust"


def _digest(named_sources) -> str:
    """sha256 of (name, bytes) pairs, each name then its bytes, in the order given."""
    h = hashlib.sha256()
    for name, data in named_sources:
        h.update(name.encode())
        h.update(data)
    return h.hexdigest()


def algorithms_digest() -> str:
    """sha256 of the source files of ``mkclust.algorithms`` (file names and bytes, in name order): the
    code digest of records kept before 2026-11-28."""
    sources = [f for f in resources.files("mkclust.algorithms").iterdir() if f.name.endswith(".py")]
    return _digest((f.name, f.read_bytes()) for f in sorted(sources, key=lambda f: f.name))


def _is_package(module: str) -> bool:
    """Whether ``module`` names a package of ``mkclust`` (a folder with ``__init__.py``). Looked up from
    its parent: since Python 3.12 ``resources.files`` of a plain module gives its package's folder."""
    parent, _, name = module.rpartition(".")
    try:
        folder = resources.files(parent) / name if parent else resources.files(module)
        return (folder / "__init__.py").is_file()
    except (ModuleNotFoundError, TypeError):   # not a package, or a name inside a module
        return False


def _module_file(module: str):
    """The source file of a module of the package (``mkclust.x.y``: ``x/y.py``, or ``x/y/__init__.py``
    for a package) as an importlib.resources Traversable, or None if it is not one."""
    parent, _, name = module.rpartition(".")
    if parent and _is_package(parent):
        candidate = resources.files(parent) / f"{name}.py"
        if candidate.is_file():
            return candidate
    return resources.files(module) / "__init__.py" if _is_package(module) else None


def module_source(module: str) -> bytes | None:
    """The source of a module of the package (see :func:`_module_file`); None if it is not one."""
    path = _module_file(module)
    return None if path is None else path.read_bytes()


def _imported(module: str, source: bytes) -> set[str]:
    """The package's modules that ``source`` imports anywhere (a function's lazy import counts):
    ``import a.b``, ``from a.b import c`` (a.b.c where c is a module, else a.b), relative forms too."""
    out = set()
    is_package = _is_package(module)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if _module_file(sub) is not None else base)
    return {m for m in out if m == PACKAGE or m.startswith(PACKAGE + ".")}


def source_closure(module: str) -> dict[str, bytes]:
    """``module`` and every module of the package its source imports, transitively, each with its
    source, in name order (read with ast, not imported: what a fit can run, not what happens to be
    loaded)."""
    sources, todo = {}, [module]
    while todo:
        m = todo.pop()
        if m in sources:
            continue
        source = module_source(m)
        if source is None:
            continue
        sources[m] = source
        todo.extend(_imported(m, source) - sources.keys())
    return dict(sorted(sources.items()))


def code_digest(module: str) -> str:
    """sha256 of the sources of :func:`source_closure` of ``module`` (names and bytes, in name order)."""
    return _digest(source_closure(module).items())


class GroupCheckpoint:
    """The finished runs of one group, one JSON file each in ``folder`` (see the module docstring).
    ``inputs``: the group's input files (None entries are skipped)."""

    def __init__(self, folder, inputs):
        self.folder = Path(folder)
        self._context = {"inputs": [sha256_file(p) for p in inputs if p is not None],
                         "versions": record_versions()}
        self._code: dict[str, str] = {}

    def _path(self, run: Run, legacy: bool = False) -> Path:
        from mkclust.algorithms import ALGORITHMS
        key = "" if legacy else ALGORITHMS[run.estimator].__module__
        if key not in self._code:   # once per group: ast-parsing a closure takes ~0.2 s, and a run asks twice
            self._code[key] = algorithms_digest() if legacy else code_digest(key)
        code = {"algorithms" if legacy else "code": self._code[key]}
        text = json.dumps({"run": run.spec(), **self._context, **code}, sort_keys=True)
        return self.folder / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}{SUFFIX}"

    def get(self, run: Run) -> dict | None:
        """The kept record of ``run`` (named by its code's digest, or by the older digest of all of
        ``mkclust.algorithms``), or None."""
        path = self._path(run)
        if not path.exists():
            path = self._path(run, legacy=True)
            if not path.exists():
                return None
        log.info("run %s seed %d: its record kept by an earlier attempt (%s)", run.params_json, run.seed, path.name)
        return json.loads(path.read_text(encoding="utf-8"))

    def put(self, run: Run, record: dict) -> dict:
        """Keep ``record`` (atomically) and return it."""
        write_json(self._path(run), record)
        return record

    def __len__(self) -> int:
        return len(kept_runs(self.folder))
