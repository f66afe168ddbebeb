"""On the RMKKM paper's 12-kernel bank the kernel weights of the k-means-type multiple kernel methods
follow the Gaussians' widths, not the data (docs/benchmark.md, "Seen on the way").

A Gaussian exp(-D / (2 (t0 s)^2)) of a large width t0 is 1 - D / (2 (t0 s)^2) up to O(t0^-4): for
kernel k-means a constant plus the linear kernel scaled by t0^-2, so its clustering cost is the
linear kernel's over t0^2, far below every other kernel's. Each method's closed-form weights then
depend on the widths alone: w proportional to 1/cost = t0^2 for MKKM and GUMKL (p = 2),
t0^(2 / (1 - gamma)) for RMKKM, t0^4 for SCMK (w_i = (h_i sum_j 1/h_j)^-2).
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine, make_blobs

from mkclust.algorithms import ALGORITHMS
from mkclust.kernels import RMKKM_T0, build_bank

WIDE = np.array(RMKKM_T0[4:])   # t0 = 10, 50, 100: kernels 4, 5, 6 of the bank


def two_unrelated_sets():
    X1, _ = make_blobs(120, n_features=5, centers=3, random_state=0)
    X2 = load_wine(return_X_y=True)[0][:90]
    return [build_bank("rmkkm12", X, preprocess="zscore_unit").K for X in (X1, X2)]


@pytest.mark.parametrize("name, power", [("mkkm", 2.0), ("gumkl", 2.0), ("rmkkm", 2.0 / (1.0 - 0.3)), ("scmk", 4.0)])
def test_the_weights_on_the_rmkkm_bank_follow_the_widths_not_the_data(name, power):
    law = WIDE ** power / np.sum(WIDE ** power)
    found = []
    for K in two_unrelated_sets():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # GUMKL's objective may rise once after its re-initialisation
            w = ALGORITHMS[name](n_clusters=3, random_state=0).fit(K).kernel_weights_
        w = w / w.sum()
        assert w[4:7].sum() > 0.999   # the three widest Gaussians take the weight
        found.append(w[4:7] / w[4:7].sum())
    np.testing.assert_allclose(found[0], law, atol=2e-3)
    np.testing.assert_allclose(found[1], law, atol=2e-3)

