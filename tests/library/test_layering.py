"""The line between the scientific library and the reproduction machinery (mkclust.repro): the
library never imports the machinery, and nothing in the package reads a file of the checkout by a
path relative to its own location."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mkclust

PACKAGE = Path(mkclust.__file__).parent
#: the command line of both layers (``mkclust <tool>``) is neither
COMMAND_LINE = {PACKAGE / "__main__.py"}


def library_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "repro" not in p.relative_to(PACKAGE).parts and p not in COMMAND_LINE)


def machinery_imports(path: Path) -> list[str]:
    """The imports of mkclust.repro in a module, as written (absolute or relative), and any string
    naming it (an importlib call)."""
    found = []
    package = ["mkclust", *path.relative_to(PACKAGE).parts[:-1]]   # the (sub)package the module is in
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative: level 1 is the module's own package, each level one up
                parent = package[:len(package) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if node.value.startswith("mkclust.repro") else []
        found += [n for n in names if n == "mkclust.repro" or n.startswith("mkclust.repro.")]
    return found


def test_the_library_never_imports_the_machinery():
    modules = library_modules()
    assert len(modules) > 30 and any(p.name == "rmkkm.py" for p in modules)
    offenders = {str(p.relative_to(PACKAGE)): machinery_imports(p) for p in modules}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_check_finds_a_machinery_import(tmp_path, monkeypatch):
    """The scan above can fail: absolute, from-, relative and importlib forms are all caught."""
    for text in ("import mkclust.repro.runner\n", "from mkclust.repro import planning\n",
                 "from mkclust import repro\n", "from ..repro.inputs import run_input\n",
                 "importlib.import_module('mkclust.repro.archive')\n"):
        fake = PACKAGE / "algorithms" / "_probe_layering.py"
        monkeypatch.setattr(Path, "read_text", lambda self, t=text: t)
        assert machinery_imports(fake), text


def test_importing_the_library_loads_no_machinery():
    """Every library module imported in a fresh interpreter: mkclust.repro is not in sys.modules."""
    names = sorted({"mkclust." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
                    for p in library_modules()} - {"mkclust.__init__"})
    code = ("import importlib, sys\n"
            f"for n in {names!r}: importlib.import_module(n)\n"
            "print(sorted(m for m in sys.modules if m.startswith('mkclust.repro')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_package_reads_no_checkout_file_relative_to_itself():
    """No module locates a file by ``__file__`` (the checkout's folders are passed in: the Snakefile
    gives the protocols' folder); package data is read with importlib.resources."""
    users = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "__file__" in p.read_text()]
    assert users == []


def test_modules_stay_short_and_lines_readable():
    """No package module over 450 lines; no line over 120 characters in the package, the tests, the
    benchmarks or the workflow's code."""
    repo = PACKAGE.parents[1]
    long_modules = {str(p.relative_to(repo)): n for p in PACKAGE.rglob("*.py")
                    if (n := len(p.read_text().splitlines())) > 450}
    assert long_modules == {}
    code = [*repo.glob("src/**/*.py"), *repo.glob("tests/**/*.py"), *repo.glob("benchmarks/*.py"),
            *repo.glob("workflow/**/*.py"), *repo.glob("workflow/rules/*.smk"), repo / "Snakefile"]
    long_lines = [f"{p.relative_to(repo)}:{i}" for p in code if p.is_file()
                  for i, line in enumerate(p.read_text().splitlines(), 1) if len(line) > 120]
    assert long_lines == []


def _module_name(path: Path) -> str:
    parts = ["mkclust", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in it (a function's deferred import
    counts: it runs whenever the function does). ``from a.b import c`` imports a.b.c where c is a
    module, else a.b; a package's ``__init__`` is its own node."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                subs = {f"{base}.{a.name}" for a in node.names} & set(paths)
                deps |= subs or {base}
        graph[name] = {d for d in deps if d in paths and d != name}
    return graph


def test_no_module_imports_one_that_imports_it_back():
    """docs/architecture.md: no circle in the package's imports (a depth-first search for a back edge;
    a package's ``__init__`` re-exporting its modules is not a circle of those modules)."""
    graph = import_graph()
    for init in [m for m, p in graph.items() if (PACKAGE / Path(*m.split(".")[1:]) / "__init__.py").exists()]:
        graph[init] = {d for d in graph[init] if not d.startswith(init + ".")}
    state, path, cycles = {}, [], []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, cycles


def test_each_test_worker_asks_for_its_share_of_the_cores(request):
    """Under pytest-xdist every BLAS and OpenMP library of a worker runs at most cores // workers threads
    (tests/conftest.py), so that the workers do not wait for each other's cores."""
    import os

    import conftest
    from threadpoolctl import threadpool_info

    workers = getattr(request.config, "workerinput", {}).get("workercount")
    if not workers:
        pytest.skip("one process: the machine's own thread counts")
    assert conftest.WORKER_THREADS == max(1, len(os.sched_getaffinity(0)) // int(workers))
    libraries = threadpool_info()
    assert libraries and all(d["num_threads"] <= conftest.WORKER_THREADS for d in libraries), libraries
