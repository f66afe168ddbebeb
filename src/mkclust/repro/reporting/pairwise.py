"""Paired comparisons of two methods over data sets, the statistics :mod:`mkclust.repro.reporting.ranks`
and :mod:`mkclust.repro.reporting.learned` word: Wilcoxon's signed-rank test (scipy) with Holm's
correction (statsmodels), the median difference with a bootstrap interval (scipy), and the Bayesian
signed-rank test with a region of practical equivalence (baycomp)."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the region of practical equivalence of the Bayesian signed-rank test: 0.01 of accuracy (or NMI, ARI)
ROPE = 0.01
#: Monte Carlo draws of the Bayesian test's posterior (baycomp's default is 50,000): its probabilities
#: are then within about 0.005 (one standard error); fixed seeds make them the same on every rebuild
BAYES_SAMPLES = 10_000
BOOTSTRAP_RESAMPLES = 2_000


#: the most differences for which a signed-rank test with ties or zeros enumerates every sign flip (2**13 =
#: 8,192 of them), as scipy's ``wilcoxon(method="auto")`` does; above it, the normal approximation
EXACT_FLIPS_N = 13


def _signed_rank_plus(d, axis=-1):
    """The signed-rank statistic of ``d`` along ``axis``, zeros split (``zero_method="zsplit"``): the sum of
    the average ranks of ``|d|`` where d > 0 plus half of those where d = 0. Ranks are halves of integers,
    so every sum is exact and equals scipy's own statistic whatever the order of the additions."""
    from scipy.stats import rankdata

    d = np.moveaxis(np.asarray(d, dtype=float), axis, -1)
    r = rankdata(np.abs(d), method="average", axis=-1)
    return ((d > 0) * r).sum(axis=-1) + ((d == 0) * r).sum(axis=-1) / 2


def wilcoxon_p(d) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the differences ``d`` (zeros split, Demsar 2006
    Sect. 3.1.3); 1 when every difference is zero.

    scipy's rule for ``method="auto"``: the exact distribution without ties or zeros, the normal
    approximation above :data:`EXACT_FLIPS_N` differences with them, and in between an exact permutation
    test over every sign flip. scipy evaluates that permutation test's statistic once per flip in Python
    (8,192 calls for 13 data sets, per pair of methods: one benchmark table took 406 s); here it is
    scipy's ``permutation_test`` with the statistic vectorised over the flips, the same flips and the same
    p-value (tests/workflow/test_reporting.py compares it with scipy's ``wilcoxon``)."""
    from scipy import stats

    d = np.asarray(d, dtype=float)
    if not np.any(d):
        return 1.0
    ties = np.any(d == 0) or np.unique(np.abs(d)).size < d.size
    if ties and d.size <= EXACT_FLIPS_N:
        res = stats.permutation_test((d,), _signed_rank_plus, permutation_type="samples", vectorized=True,
                                     n_resamples=np.inf, alternative="two-sided")
        return float(res.pvalue)
    return float(stats.wilcoxon(d, zero_method="zsplit").pvalue)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjustment of a vector of p-values (statsmodels' ``multipletests``)."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p_values, dtype=float)
    return multipletests(p, method="holm")[1] if p.size else p


def counts(d) -> dict:
    """Wins, ties and losses of the differences ``d`` (positive, zero, negative)."""
    d = np.asarray(d, dtype=float)
    return {"wins": int((d > 0).sum()), "ties": int((d == 0).sum()), "losses": int((d < 0).sum())}


def pairwise_wilcoxon(values: pd.DataFrame) -> pd.DataFrame:
    """Every pair (a, b) of the columns of ``values`` (data sets x methods, no missing value), in
    column order: wins, ties and losses of a against b over the data sets, the median of a - b, the
    two-sided Wilcoxon signed-rank p-value (scipy, ``zero_method="zsplit"``: a zero difference's rank
    split between the two sums, Demsar 2006 Sect. 3.1.3; every difference zero gives p = 1) and the
    p-value after Holm's correction over all the pairs."""
    cols, rows = list(values.columns), []
    for i, a in enumerate(cols):
        for b in cols[i + 1:]:
            d = values[a].to_numpy(float) - values[b].to_numpy(float)
            rows.append({"a": a, "b": b, **counts(d), "median_diff": float(np.median(d)), "p": wilcoxon_p(d)})
    out = pd.DataFrame(rows, columns=["a", "b", "wins", "ties", "losses", "median_diff", "p"])
    out["p_holm"] = holm(out["p"])
    return out


def bayes_signed_rank(x, y, rope: float = ROPE, nsamples: int = BAYES_SAMPLES, seed: int = 0) -> tuple:
    """The Bayesian signed-rank test (Benavoli et al. 2014; baycomp) of paired values ``x`` and ``y``
    over data sets: the posterior probabilities that "x better by more than ``rope``", "within
    ``rope``" and "y better by more than ``rope``" is the most probable of the three for a data set
    drawn from the population (Benavoli et al. 2017, Sect. 4), from ``nsamples`` draws of its
    Dirichlet-process posterior (seeded: the same on every rebuild)."""
    from baycomp import SignedRankTest
    from baycomp.multiple import Posterior

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if rope > 0:   # the draws as arrays (signed_rank_samples), baycomp's own posterior probabilities
        left, within, right = Posterior(signed_rank_samples(x, y, rope, nsamples, seed)).probs(True)
    else:
        left, within, right = SignedRankTest.probs(x, y, rope=rope, nsamples=nsamples, random_state=seed)
    return float(left), float(within), float(right)   # baycomp: left is x's (y - x below -rope)


def signed_rank_samples(x, y, rope: float, nsamples: int, seed: int, chunk: int = 256) -> np.ndarray:
    """baycomp's ``SignedRankTest.sample`` with a region of practical equivalence (``rope`` > 0), its loop
    over the posterior's draws done as array operations, ``chunk`` draws at a time.

    baycomp draws ``nsamples`` Dirichlet weights w (the same draws here: ``RandomState(seed).dirichlet``)
    and computes, one draw at a time in Python, the sums of ``outer(w, w)`` over the pairs of data sets
    (with a pseudo-observation 0 of weight ``prior`` = 0.5) whose summed differences y - x lie below
    -2 rope and above 2 rope. That loop took 5.2 of a benchmark table's 15 s (14 pairs of methods,
    10,000 draws each). Here each chunk's outer products are one (chunk, m, m) array, multiplied by the
    same 0 / 0.5 / 1 masks and summed over the same m * m elements in the same order: the same samples
    bit for bit (tests/workflow/test_reporting.py compares them with baycomp's)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or rope <= 0:
        raise ValueError(f"paired 1-d scores and rope > 0 are needed (shapes {x.shape}, {y.shape}; rope {rope})")
    diff = np.hstack(([0.0], y - x))
    sums = diff[:, None] + diff[None, :]

    def beyond(a):   # baycomp's heaviside(a, 2 rope): 1 above, 0.5 at it, 0 below
        return (a > 2 * rope).astype(float) + 0.5 * (a == 2 * rope).astype(float)

    below, above = beyond(-sums), beyond(sums)
    weights = np.ones(diff.size)
    weights[0] = 0.5   # baycomp's prior: the pseudo-observation's weight
    draws = np.random.RandomState(seed).dirichlet(weights, nsamples)
    samples = np.zeros((nsamples, 3))
    for start in range(0, nsamples, chunk):
        w = draws[start:start + chunk]
        prod = w[:, :, None] * w[:, None, :]
        samples[start:start + chunk, 0] = (prod * below).sum(axis=(1, 2))
        samples[start:start + chunk, 2] = (prod * above).sum(axis=(1, 2))
    samples[:, 1] = -samples[:, 0] - samples[:, 2] + 1
    return samples


def median_interval(d, resamples: int = BOOTSTRAP_RESAMPLES, level: float = 0.95, seed: int = 0) -> tuple:
    """The median of ``d`` and its percentile bootstrap interval at ``level`` (scipy), resampling the
    data sets; (median, median, median) when every value is the same."""
    from scipy.stats import bootstrap

    d = np.asarray(d, dtype=float)
    med = float(np.median(d))
    if d.size < 2 or np.ptp(d) == 0:
        return med, med, med
    ci = bootstrap((d,), np.median, n_resamples=resamples, confidence_level=level, method="percentile",
                   random_state=seed).confidence_interval
    return med, float(ci.low), float(ci.high)


def prob_text(x: float) -> str:
    """A probability in two decimals without the leading zero (".62", "1", "0")."""
    t = f"{x:.2f}"
    return "1" if t == "1.00" else "0" if t == "0.00" else t.lstrip("0")


def compare_pair(x, y, rope: float = ROPE) -> dict:
    """``x`` against ``y`` over the same data sets: wins / ties / losses of x, the median of x - y with
    its 95 % bootstrap interval (:func:`median_interval`) and the Bayesian signed-rank probabilities
    that x is better by more than ``rope``, that they are within it, that y is better
    (:func:`bayes_signed_rank`)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    med, lo, hi = median_interval(x - y)
    x_better, equal, y_better = bayes_signed_rank(x, y, rope)
    return {**counts(x - y), "median_diff": med, "ci_low": lo, "ci_high": hi, "p_x_better": x_better,
            "p_equivalent": equal, "p_y_better": y_better}


def pair_text(r: dict, keys: tuple = ("p_x_better", "p_equivalent", "p_y_better")) -> str:
    """A :func:`compare_pair` result (with its ``p_holm``; ``keys``: the names of its three
    probabilities) in words: "+0.012 [-0.003, +0.030], 9/0/5, p = 0.31, P = .62/.20/.18"."""
    probs = "/".join(prob_text(r[k]) for k in keys)
    return (f"{r['median_diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}], {r['wins']}/{r['ties']}/"
            f"{r['losses']}, p = {r['p_holm']:.2g}, P = {probs}")
