"""The cutting-plane rounds of MKC (:mod:`mkclust.algorithms.mkc`, whose docstring states the
problems, the stopping rules and the choices): Algorithm 1 with CCCP (Algorithm 2) for two clusters,
Algorithms 3 and 4 for more, each CCCP step one SOCP (:mod:`mkclust.algorithms._mkc_socp`). They set
the fitted attributes of the estimator they are given and call its ``_end_round`` after each round."""

from __future__ import annotations

import numpy as np

from mkclust.algorithms._mkc_socp import (
    _solve, balanced_labels, binary_socp, capacity, compiles_once, count_bounds, multiclass_cut, multiclass_slacks,
    multiclass_socp, runner_up,
)


def fit_binary(est, Phi, sizes, l):
    """Algorithm 1 with CCCP (Algorithm 2) inside, on the two-class problem (2.7): the fitted
    attributes of ``est`` (an :class:`~mkclust.algorithms.mkc.MKC`) from its features Phi (n, D),
    the column ``sizes`` of each kernel's block and the balance l."""
    n, D = Phi.shape
    C = est._C()
    g = Phi.sum(axis=0)
    z = np.where(est.init_labels_ == 0, 1.0, -1.0)
    f = np.zeros(n)
    omega: list[np.ndarray] = [np.ones(n)]  # with v = 0, every sample violates (2.16)
    est.rounds_ = []
    cap = 0
    while True:
        rnd = len(omega)
        Cm = np.array(omega)  # (|Omega|, n)
        if rnd > cap:        # built once per capacity
            cap = capacity(rnd, cap, est.max_rounds)
            prob, (A, s, r), (v, b, beta, xi) = binary_socp(Phi, sizes, cap, C, l, g)
            Avals, svals, rvals = np.zeros((cap, D)), np.zeros(cap), np.zeros(cap)
            dpp = compiles_once(cap, D)
        rvals[:rnd] = Cm.sum(axis=1) / n
        r.value = rvals
        secs, prev, it = 0.0, None, 0
        for it in range(1, int(est.max_cccp) + 1):
            Avals[:rnd] = (Cm * z[None, :]) @ Phi / n
            svals[:rnd] = Cm @ z / n
            A.value, s.value = Avals, svals
            dt, solver = _solve(prob, f"MKC round {rnd}, CCCP step {it}", dpp)
            secs += dt
            f = Phi @ v.value + float(b.value)
            z = np.where(f >= 0, 1.0, -1.0)
            obj = float(prob.value)
            if prev is not None and abs(prev - obj) <= float(est.cccp_tol) * max(abs(prev), 1e-12):
                break
            prev = obj
        c = (np.abs(f) < 1).astype(np.float64)                      # (2.16)
        violation = float(c @ (1 - np.abs(f)) / n)
        xi_val = float(xi.value)
        if est._end_round(rnd, it, secs, solver, obj, xi_val, violation):
            break
        omega.append(c)
    est.decision_ = f
    est.working_set_ = np.array(omega, dtype=bool)
    est.labels_ = (f < 0).astype(np.int64)  # cluster 0: f >= 0
    est.v_, est.b_, est.xi_, est.objective_ = v.value.copy(), float(b.value), xi_val, obj
    est.kernel_weights_ = np.maximum(beta.value, 0.0)
    est._sizes = sizes


def fit_multiclass(est, Phi, sizes, l):
    """Algorithms 3 and 4 on the multi-class problem (4.34) (the MKC module docstring states the
    stopping rules and the count balance): the fitted attributes of ``est`` from Phi (n, D), the
    block ``sizes`` and the balance l."""
    n, D = Phi.shape
    m, C = int(est.n_clusters), est._C()
    # the labels of scores: argmax, under the size bounds with the label balance
    bounds = count_bounds(n, m, l) if est._label_balance() else (0, n)

    y = est.init_labels_.copy()
    F = np.zeros((n, m))
    # Omega holds, per constraint, the runner-up class r_i of each active sample (-1: inactive)
    omega: list[np.ndarray] = []
    est.rounds_ = []
    # first constraint: at V = 0 every sample violates; its runner-up is any class other than y_i
    omega.append((y + 1) % m)
    cap = 0
    while True:
        rnd = len(omega)
        R = np.array(omega)
        if rnd > cap:        # built once per capacity
            cap = capacity(rnd, cap, est.max_rounds)
            prob, (A, cst, size_p), (V, beta, xi) = multiclass_socp(Phi, sizes, m, cap, C, l)
            Avals, cvals, svals = np.zeros((cap, D * m)), np.zeros(cap), np.zeros(cap)
            dpp = compiles_once(cap, D * m)
        svals[:rnd] = (R >= 0).sum(axis=1) / n
        size_p.value = svals
        secs, prev, it, stalls = 0.0, None, 0, 0
        for it in range(1, int(est.max_cccp) + 1):
            for j, Rj in enumerate(R):  # one GEMM per constraint (|Omega| is small), no loop over samples
                Avals[j], cvals[j] = multiclass_cut(Phi, y, Rj, m)
            A.value, cst.value = Avals, cvals
            dt, solver = _solve(prob, f"MKC round {rnd}, CCCP step {it}", dpp)
            secs += dt
            F = Phi @ V.value
            y_lin, y = y, balanced_labels(F, *bounds)
            obj = float(prob.value)
            # stop at a CCCP fixed point (the new scores' labels are those the step was linearised
            # at), or when labels keep cycling while the objective has stalled for 3 steps
            stalls = stalls + 1 if prev is not None and abs(prev - obj) <= float(est.cccp_tol) * max(
                abs(prev), 1e-12) else 0
            if np.array_equal(y, y_lin) or stalls >= 3:
                break
            prev = obj
        second, margin = runner_up(F, y)  # Theorem 4.3 at the labels y
        active = margin < 1
        violation = float((1 - margin[active]).sum() / n)
        # xi of (4.34) at V: the largest slack of Omega's constraints at the labels of V's scores
        # (equal to the SOCP's xi at a CCCP fixed point, larger when the last step moved labels)
        xi_socp = float(xi.value)
        xi_val = max(xi_socp, float(multiclass_slacks(F, R, y).max()))
        obj += C * (xi_val - xi_socp)
        if est._end_round(rnd, it, secs, solver, obj, xi_val, violation):
            break
        omega.append(np.where(active, second, -1))
    est.decision_ = F
    est.working_set_ = np.array(omega, dtype=np.int32)
    est.labels_ = y.astype(np.int64)
    est.v_, est.xi_, est.objective_ = V.value.copy(), xi_val, obj
    est.kernel_weights_ = np.maximum(beta.value, 0.0)
    est._sizes = sizes
