"""What every benchmark prints: one JSON line per measurement, with the interpreter, numpy and the
BLAS thread count it ran with. Imported by the ``bench_*.py`` scripts (run from the repository root:
``python benchmarks/bench_<name>.py``)."""

from __future__ import annotations

import json
import platform

import numpy as np
from threadpoolctl import threadpool_info


def emit(**rec):
    rec.update(python=platform.python_version(), numpy=np.__version__,
               blas_threads=max((p["num_threads"] for p in threadpool_info()), default=None))
    print(json.dumps(rec), flush=True)
