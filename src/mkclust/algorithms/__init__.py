"""Scikit-learn style clustering estimators, importable under the papers' names, and a registry
of lowercase names for configurations (``get_estimator("kkm", n_clusters=4)``)."""

from __future__ import annotations

from mkclust.algorithms.aasc import AASC
from mkclust.algorithms.base import default_params
from mkclust.algorithms.gmmc import GMMC
from mkclust.algorithms.gumkl import GUMKL
from mkclust.algorithms.itersvr import IterSVR
from mkclust.algorithms.kmeans import KernelKMeans, KMeansBaseline
from mkclust.algorithms.lgmmc import LGMMC
from mkclust.algorithms.mkc import MKC
from mkclust.algorithms.odmc import ODMC
from mkclust.algorithms.late_fusion import LFMVC
from mkclust.algorithms.lmkkm import LMKKM
from mkclust.algorithms.mkkm import MKKM
from mkclust.algorithms.mkkm_mir import MKKMMiR, ONKC
from mkclust.algorithms.rmkkm import RKKM, RMKKM
from mkclust.algorithms.scmk import SCMK, SCSK
from mkclust.algorithms.simplemkkm import SimpleMKKM
from mkclust.algorithms.spectral import NormalizedCut, SpectralClustering

#: registry name -> estimator class; a new method is one module plus one entry here
ALGORITHMS = {
    "km": KMeansBaseline,
    "kkm": KernelKMeans,
    "sc": SpectralClustering,
    "nc": NormalizedCut,
    "rkkm": RKKM,
    "rmkkm": RMKKM,
    "mkkm": MKKM,
    "aasc": AASC,
    "gumkl": GUMKL,
    "mkc": MKC,
    "itersvr": IterSVR,
    "odmc": ODMC,
    "lgmmc": LGMMC,
    "gmmc": GMMC,
    "scsk": SCSK,
    "scmk": SCMK,
    # the methods after the five papers (2014-2023): SimpleMKKM and its family
    "simplemkkm": SimpleMKKM,
    "mkkmmir": MKKMMiR,
    "onkc": ONKC,
    "lfmvc": LFMVC,
    "lmkkm": LMKKM,
}


def get_estimator(name: str, **params):
    """Instantiate a registered estimator; unknown names or parameters are a ValueError."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; registered: {', '.join(sorted(ALGORITHMS))}")
    cls = ALGORITHMS[name]
    valid = default_params(cls)
    bad = sorted(set(params) - set(valid))
    if bad:
        raise ValueError(f"algorithm {name!r} has no parameter(s) {bad}; it takes {sorted(valid)}")
    return cls(**params)


__all__ = ["ALGORITHMS", "get_estimator", "KMeansBaseline", "KernelKMeans", "SpectralClustering",
           "NormalizedCut", "RKKM", "RMKKM", "MKKM", "AASC", "SCSK", "SCMK", "GUMKL", "MKC", "IterSVR", "ODMC", "LGMMC",
           "GMMC", "SimpleMKKM", "MKKMMiR", "ONKC", "LFMVC", "LMKKM"]
