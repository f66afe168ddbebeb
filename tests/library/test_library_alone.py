"""The library without the workflow: every module outside ``mkclust.repro`` imports, and every
registered estimator fits, with the workflow's packages (the ``workflow`` extra: snakemake,
matplotlib, pyyaml, jsonschema) unimportable, and in a fresh virtual environment where only the
package and its own dependencies are installed. A researcher who wants the estimators installs
``pip install mkclust``; this checks, in a fresh interpreter, that nothing of the library reaches
for the workflow's packages."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import importlib, importlib.abc, pkgutil, sys
    BLOCKED = {"snakemake", "matplotlib", "yaml", "jsonschema"}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is a workflow package (blocked)")
            return None

    sys.meta_path.insert(0, Block())
    import mkclust
    modules = [m.name for m in pkgutil.walk_packages(mkclust.__path__, "mkclust.")
               if not m.name.startswith("mkclust.repro") and m.name != "mkclust.__main__"]
    for name in modules:
        importlib.import_module(name)
    import numpy as np
    from sklearn.datasets import make_blobs
    from mkclust.algorithms import ALGORITHMS, get_estimator
    from mkclust.kernels import gaussian_kernel
    X, y = make_blobs(n_samples=40, centers=2, n_features=3, random_state=0)
    K = gaussian_kernel(X, 2.0)
    for name, cls in sorted(ALGORITHMS.items()):
        data = X if cls.input_kind == "features" else np.stack([K, X @ X.T]) if cls.input_kind in (
            "kernels", "feature_maps") else K
        labels = get_estimator(name, n_clusters=2, random_state=0).fit(data).labels_
        assert labels.shape == (40,), name
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not loaded, loaded
    print(len(modules), "modules", len(ALGORITHMS), "estimators")
''')


def test_the_library_imports_and_fits_without_the_workflow_packages():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    n_modules, _, n_estimators, _ = out.stdout.split()
    assert int(n_modules) >= 20 and int(n_estimators) >= 15


def test_the_wheel_alone_installs_imports_and_fits_in_a_fresh_venv(tmp_path, wheel):
    """``pip install mkclust`` in an empty virtual environment (no system packages): the library's
    dependencies come with it and the workflow's do not; the same imports and fits pass."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}   # this checkout's src stays out
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    # --no-compile: the same files installed, without their bytecode (pip's compiling of numpy, scipy,
    # scikit-learn, cvxpy and numba was 33 of its 50 s; the imports below compile what they load, 4.5 s)
    install = subprocess.run([py, "-m", "pip", "install", "-q", "--no-compile", str(wheel)], capture_output=True,
                             text=True, timeout=1200, env=env)
    assert install.returncode == 0, install.stderr[-3000:]
    listed = subprocess.run([py, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                            timeout=300).stdout.lower()
    for name in ("numpy", "scipy", "scikit-learn", "cvxpy", "numba"):
        assert f"{name}==" in listed, name
    for name in ("snakemake", "matplotlib", "pyyaml", "jsonschema"):
        assert f"{name}==" not in listed, name
    out = subprocess.run([py, "-c", SCRIPT + "\nassert str(mkclust.__path__[0]).startswith(sys.prefix)"],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    n_modules, _, n_estimators, _ = out.stdout.split()
    assert int(n_modules) >= 20 and int(n_estimators) >= 15
