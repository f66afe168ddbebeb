import numpy as np
import pytest
from sklearn.datasets import make_blobs


@pytest.fixture
def blobs():
    """Three well-separated Gaussian blobs in 5-d (known structure)."""
    X, y = make_blobs(n_samples=150, centers=3, n_features=5, cluster_std=0.5, center_box=(-20, 20),
                      random_state=3)
    return X, y


def gaussian_gram(X, sigma):
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-D / (2 * sigma**2))


@pytest.fixture(scope="session")
def tiny_local(tmp_path_factory, request):
    """The tiny workflow configuration run locally once per session (once for all pytest-xdist
    workers): (its folder, a copy of its tables taken before any test changes the folder)."""
    from _wf import local_tiny_run

    return local_tiny_run(tmp_path_factory, shared=hasattr(request.config, "workerinput"))


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """The package built as a wheel once per session (pip, with build isolation)."""
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path_factory.mktemp("wheel")
    repo = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(repo), "-w", str(out)],
                   check=True, capture_output=True, timeout=600)
    return next(out.glob("mkclust-*.whl"))
