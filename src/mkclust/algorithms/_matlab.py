"""The random starts of the RMKKM authors' MATLAB scripts, drawn as MATLAB draws them.

Their baseline scripts call ``rng('default')`` once and then run 20 repeats, each drawing its own
start: ``KernelKmeans.m`` and ``L21KKM.m`` draw ``randsample(n, k)`` (k sample indices as
single-point centres), ``MKKM_multi_kernel.m`` draws ``rand(n, c)`` and labels each row by its
largest entry. The published KKM, RKKM and MKKM values are the means over those 20 starts. To tell
a gap caused by the draw from one caused by the method, the starts can be replayed:

- ``rng('default')`` is the Mersenne Twister MT19937 with seed 5489, and ``rand`` returns its 53-bit
  doubles; numpy's legacy ``RandomState(5489).random_sample`` is the same generator and the same
  doubles (MATLAB's first ``rand`` after ``rng('default')``, 0.8147236863931789, is numpy's; test).
- A matrix ``rand(n, c)`` is filled column by column.
- ``randi(n, 1, m)`` is ``ceil(n * rand(1, m))``; ``randperm(k)`` the order that sorts ``rand(1, k)``.
- ``randsample(n, k)`` without replacement: when 4k > n, the first k of ``randperm(n)``; otherwise
  ``randi(n, 1, k - found)`` repeatedly until k distinct values are found, then those values (in
  increasing order) permuted by ``randperm(k)``.

No library replays MATLAB's sampling functions; numpy supplies the generator. Written by hand from
MATLAB's documented algorithms; the replay reproduces the authors' stored KKM, RKKM and MKKM means
(workflow/protocols/rmkkm.yaml, table ``table2_authors_starts``).
"""

from __future__ import annotations

import numpy as np

#: the seed of MATLAB's ``rng('default')`` in numpy's MT19937 seeding
MATLAB_DEFAULT_SEED = 5489


class MatlabStream:
    """MATLAB's random stream after ``rng('default')``: ``rand``, ``randsample`` and the random
    partition of ``MKKM_multi_kernel.m``, each consuming the stream as MATLAB does."""

    def __init__(self):
        self._rs = np.random.RandomState(MATLAB_DEFAULT_SEED)

    def rand(self, rows: int, cols: int = 1) -> np.ndarray:
        """``rand(rows, cols)``: the next rows * cols doubles, filled column by column."""
        return self._rs.random_sample(rows * cols).reshape(cols, rows).T

    def randsample(self, n: int, k: int) -> np.ndarray:
        """``randsample(n, k)`` (without replacement), as 0-based indices in MATLAB's order."""
        if 4 * k > n:
            return np.argsort(self._rs.random_sample(n), kind="stable")[:k]
        found = np.zeros(n, dtype=bool)
        while (count := int(found.sum())) < k:
            found[np.ceil(n * self._rs.random_sample(k - count)).astype(np.int64) - 1] = True
        values = np.flatnonzero(found)
        return values[np.argsort(self._rs.random_sample(k), kind="stable")]

    def partition(self, n: int, c: int) -> np.ndarray:
        """``[~, labels] = max(rand(n, c), [], 2)``: a random partition (0-based labels)."""
        return np.argmax(self.rand(n, c), axis=1)


def replay(repeat, draw, per_repeat: int = 1) -> MatlabStream:
    """The stream after ``rng('default')`` and ``repeat * per_repeat`` calls of ``draw(stream)``: the
    state in which the authors' script starts its repeat number ``repeat`` (0-based) when each repeat
    draws ``per_repeat`` times (its replicates). ``repeat`` must be a non-negative integer (an
    estimator's ``random_state`` when its ``init`` is ``"matlab"``)."""
    if isinstance(repeat, bool) or not isinstance(repeat, (int, np.integer)) or repeat < 0:
        raise ValueError(f"init='matlab' replays the authors' repeat number random_state: a non-negative "
                         f"integer, got {repeat!r}")
    stream = MatlabStream()
    for _ in range(int(repeat) * int(per_repeat)):
        draw(stream)
    return stream
