"""What some tests need from the machine beyond the test environment's own packages, in one place.

- the **data mirror** of the papers' raw files (``$MKCLUST_DATA_MIRROR``, else ``shared/datasets``
  beside the checkout): the data-set tests skip without it, with that reason;
- the **package index** (``pip`` reaching the index it is configured with): building the wheel
  (build isolation fetches setuptools) and installing it into an empty virtual environment;
- **Debian's SLURM, munge and MariaDB programs** and root: the loopback SLURM cluster
  (tests/slurm/_slurm_cluster.py), which ``.ci/run`` installs.

Where one is missing the tests that need it skip with its reason, and the summary's last lines count
them per reason (tests/conftest.py); under ``CI=true`` a missing index or SLURM is a failure, since
``.ci/run`` provides both. Nothing here reads the base interpreter's packages: a test that builds a
virtual environment takes what it needs from the environment the tests run in (:func:`site_dirs`).
"""

from __future__ import annotations

import functools
import os
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mkclust.datasets.download import MIRROR_ENV

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get(MIRROR_ENV) or REPO.parent / "shared" / "datasets")
NO_MIRROR = (f"no data mirror: {MIRROR_ENV} is unset and {MIRROR} has no MANIFEST.tsv"
             if not os.environ.get(MIRROR_ENV) else f"no data mirror at ${MIRROR_ENV} = {MIRROR} (no MANIFEST.tsv)")

#: mark for the tests that read the papers' raw files from the mirror
needs_mirror = pytest.mark.skipif(not (MIRROR / "MANIFEST.tsv").is_file(), reason=NO_MIRROR)


@functools.cache
def index_unreachable() -> str | None:
    """None when ``pip`` reaches its package index (``pip download`` of one small wheel, as
    configured: the index, any mirror or extra index), else the reason it does not."""
    with tempfile.TemporaryDirectory() as d:
        try:
            p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
                                "-d", d, "wheel"], capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return "no package index: pip download timed out after 120 s"
        except OSError as exc:
            return f"no package index: {exc}"
    if p.returncode == 0:
        return None
    last = [ln for ln in p.stderr.splitlines() if ln.strip() and "is ignored" not in ln]
    return "no package index: pip download failed" + (f" ({last[-1].strip()[:160]})" if last else "")


def require_index() -> None:
    """Skip the calling test where the package index cannot be reached; under CI=true fail instead."""
    why = index_unreachable()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"{why}: .ci/run needs the package index")
        pytest.skip(why)


def site_dirs() -> list[str]:
    """The site-packages folders of the interpreter the tests run in (a virtual environment's own, and
    its base's only when that environment was made with ``--system-site-packages``): what a nested
    virtual environment must see to borrow this environment's packages. ``python -m venv
    --system-site-packages`` would instead expose the *base* interpreter's global packages, which CI's
    environment hides and a bare Python lacks."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def borrowing_venv(venv: Path) -> Path:
    """A fresh virtual environment at ``venv`` (no system site-packages) whose interpreter also sees
    :func:`site_dirs` after its own site-packages (a ``.pth`` file; the folders' own ``.pth`` files,
    such as an editable install's finder, are not run). Returns its ``python``."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    own = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(own, "_borrowed_from_the_test_environment.pth").write_text("\n".join(site_dirs()) + "\n")
    return py
