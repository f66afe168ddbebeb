"""Kernel banks held as low-rank factors, K_p = F_p F_p' (F_p: n x r_p), and the operations the
estimators take from a kernel, none of which forms an n x n matrix.

At n = 70,000 one Gram matrix is 39 GB; twelve Nystroem factors of rank 1,000 are 6.7 GB in float64
(3.4 in float32). Every step of kernel k-means, MKKM and the relaxed family (SimpleMKKM, MKKM-MiR,
LF-MVC) is a product of a kernel with a thin matrix, a diagonal, a few columns, a trace or the
leading eigenvectors of a weighted sum of the kernels; on factors they cost O(n r) per column
instead of O(n^2):

- ``K_p A = F_p (F_p' A)``; ``diag K_p`` the rows' squared norms; ``K_p[:, j] = F_p F_p[j]'``;
- ``Tr(H' K_p H) = ||F_p' H||_F^2``, ``Tr(K_p) = ||F_p||_F^2``, ``<K_p, K_q>_F = ||F_p' F_q||_F^2``;
- the leading eigenvectors of ``K_w = sum_p w_p K_p = G G'`` with ``G = [sqrt(w_1) F_1, ...]`` (n x R,
  R = sum r_p): the nonzero eigenpairs of ``G G'`` are those of the R x R matrix ``G'G = S M S``,
  ``M = F'F`` the factors' cross Gram matrix (computed once per bank, O(n R^2), then cached) and
  ``S = diag(sqrt(w))``; an eigenvector u of ``S M S`` with eigenvalue lam gives ``h = G u / sqrt(lam)``.
  So a weight change costs an R x R eigenproblem (Lanczos from a fixed start vector above
  :data:`DENSE_SIDE`, LAPACK below it), never an n x n one. Where R >= n the n x n side is the
  smaller one: up to :data:`DENSE_N` samples the kernels are formed once (m n^2, the dense bank's
  size) and every product, column and eigenproblem is the dense one; above it the eigenvectors come
  from Lanczos on n x n products through the factors (2 n R a product).
- feature-space centring, (I - 11'/n) K (I - 11'/n), is ``F - mean(F)``; the unit-diagonal scaling
  K_ij / sqrt(K_ii K_jj) is each row of F divided by its norm: both exact on the factors.

No library does this: scikit-learn's Nystroem gives the factors but its estimators take features,
not factor banks, and every kernel method there forms the n x n matrix. The results equal the
dense path's on the kernels F_p F_p' to rounding (tests/library/test_lowrank.py).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.sparse.linalg

#: side of the eigenproblem up to which LAPACK's dense solver is used (Lanczos above it)
DENSE_SIDE = 2000
#: where the factors hold R >= n columns in all and n is at most this, the kernels are formed once
#: (m n^2 floats, the dense bank) and used as the dense estimators use them: fewer flops than the factors
DENSE_N = 4000


class LowRankBank:
    """m kernels K_p = F_p F_p' on the same n samples, from their factors (``factors``: a list of
    (n, r_p) arrays, float64 or float32; kept, not copied). With ``weights`` it is the one kernel
    sum_p w_p F_p F_p' (``ndim`` 2, what a single-kernel estimator takes); without, the bank
    (``ndim`` 3, ``shape`` (m, n, n), what a multiple-kernel estimator takes).

    Build one from a :class:`mkclust.kernels.KernelBank` of ``kind="features"`` (Nystroem landmarks,
    ``build_bank(..., landmarks=...)``) with :meth:`from_kernel_bank`, or from dense kernels with
    :meth:`from_dense` (tests, and ranks chosen by eigenvalue)."""

    def __init__(self, factors, weights=None, names=None, _cache: dict | None = None, _checked: bool = False):
        factors = list(factors)
        if not factors:
            raise ValueError("a low-rank bank needs at least one factor matrix")
        for p, F in enumerate([] if _checked else factors):   # a view's factors were checked (n R reads)
            if not isinstance(F, np.ndarray) or F.ndim != 2 or F.dtype not in (np.float64, np.float32):
                raise ValueError(f"factor {p}: expected a 2-D float64 or float32 array (n, r), got "
                                 f"{type(F).__name__} {getattr(F, 'shape', '')} {getattr(F, 'dtype', '')}")
            if F.shape[0] != factors[0].shape[0]:
                raise ValueError(f"factor {p} has {F.shape[0]} rows, factor 0 has {factors[0].shape[0]}")
            if not np.isfinite(F).all():
                raise ValueError(f"factor {p} contains NaN or infinite values")
        self.factors = factors
        self.names = list(names) if names is not None else [f"kernel {p}" for p in range(len(factors))]
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            if weights.shape != (len(factors),) or not np.all(weights >= 0) or not np.isfinite(weights).all():
                raise ValueError(f"weights must be {len(factors)} finite non-negative numbers, got {weights}")
        self.weights = weights
        self._cache = {} if _cache is None else _cache     # shared by the views of one set of factors

    # -- construction -------------------------------------------------------------------------------
    @classmethod
    def from_kernel_bank(cls, bank) -> "LowRankBank":
        """The factors of a ``kind="features"`` :class:`~mkclust.kernels.KernelBank`."""
        if bank.kind != "features":
            raise ValueError("a low-rank bank needs a features bank (build_bank(..., landmarks=...) or rank=...); "
                             "this one holds Gram matrices")
        return cls(bank.features, names=bank.names)

    @classmethod
    def from_dense(cls, K, rank: int | None = None) -> "LowRankBank":
        """Factors of dense kernels (m, n, n) from their eigendecompositions (every eigenpair above
        rounding, or the ``rank`` largest): F_p F_p' = K_p exactly for a PSD K_p without ``rank``."""
        from mkclust.kernel_functions import feature_map
        K = np.asarray(K, dtype=np.float64)
        K = K[None] if K.ndim == 2 else K
        return cls([feature_map(Kp, rank=rank) for Kp in K])

    # -- shape --------------------------------------------------------------------------------------
    @property
    def n_kernels(self) -> int:
        return len(self.factors)

    @property
    def n_samples(self) -> int:
        return self.factors[0].shape[0]

    @property
    def ranks(self) -> list[int]:
        return [F.shape[1] for F in self.factors]

    @property
    def ndim(self) -> int:
        return 3 if self.weights is None else 2

    @property
    def shape(self) -> tuple:
        n = self.n_samples
        return (self.n_kernels, n, n) if self.weights is None else (n, n)

    @property
    def nbytes(self) -> int:
        return int(sum(F.nbytes for F in self.factors))

    def _view(self, factors, weights=None, same=False) -> "LowRankBank":
        return LowRankBank(factors, weights, self.names, self._cache if same else None, _checked=same)

    def combine(self, weights) -> "LowRankBank":
        """The one kernel sum_p weights_p K_p (a view sharing the factors and their cross Gram matrix)."""
        return self._view(self.factors, np.asarray(weights, dtype=np.float64), same=True)

    def kernel(self, p: int) -> "LowRankBank":
        """The p-th kernel alone (ndim 2)."""
        return LowRankBank([self.factors[p]], np.ones(1), [self.names[p]])

    def _bank_only(self, what: str):
        if self.weights is not None:
            raise ValueError(f"{what} needs a bank of kernels; this is one combined kernel")

    def _single_only(self, what: str):
        if self.weights is None:
            raise ValueError(f"{what} needs one kernel: combine(weights) or kernel(p) first")

    def centred(self) -> "LowRankBank":
        """Every kernel centred in feature space, (I - 11'/n) K_p (I - 11'/n): each factor minus its
        column means."""
        return self._view([F - F.mean(axis=0, keepdims=True) for F in self.factors], self.weights)

    def unit_diagonal(self) -> "LowRankBank":
        """Every kernel scaled to a unit diagonal, K_ij / sqrt(K_ii K_jj) (a zero row left at zero):
        each factor's rows divided by their norms."""
        out = []
        for F in self.factors:
            norms = np.linalg.norm(F, axis=1, keepdims=True)
            out.append(F / np.where(norms > 0, norms, 1.0).astype(F.dtype))
        return self._view(out, self.weights)

    # -- products -----------------------------------------------------------------------------------
    def _w(self) -> np.ndarray:
        return np.ones(self.n_kernels) if self.weights is None else self.weights

    def diagonal(self) -> np.ndarray:
        """The diagonal: (n,) of the combined kernel, (m, n) of a bank."""
        d = np.stack([np.einsum("ij,ij->i", F, F, dtype=np.float64) for F in self.factors])
        return d if self.weights is None else self.weights @ d

    def _small(self) -> bool:
        """The factors are no smaller than the kernels and n is small: the dense route (module docstring)."""
        return sum(self.ranks) >= self.n_samples and self.n_samples <= DENSE_N

    def product(self, A: np.ndarray) -> np.ndarray:
        """K A: (n, c) for the combined kernel, (m, n, c) for a bank (A (n, c))."""
        A = np.asarray(A)
        if self._small():
            return np.matmul(self.dense(), A.astype(np.float64, copy=False))
        one = A.ndim == 1
        A = A[:, None] if one else A
        def part(F):
            return np.asarray(F @ (F.T @ A.astype(F.dtype, copy=False)), dtype=np.float64)

        if self.weights is None:
            out = np.stack([part(F) for F in self.factors])
            return out[:, :, 0] if one else out
        out = np.zeros((self.n_samples, A.shape[1]))
        for w, F in zip(self.weights, self.factors):
            if w != 0:
                out += w * part(F)
        return out[:, 0] if one else out

    def kernel_product(self, p: int, A: np.ndarray) -> np.ndarray:
        """K_p A (n, c) for kernel p of the bank: :meth:`product`'s slice p, without the others."""
        self._bank_only("kernel_product")
        if self._small():
            return np.matmul(self.dense()[p], A.astype(np.float64, copy=False))
        F = self.factors[p]
        return np.asarray(F @ (F.T @ A.astype(F.dtype, copy=False)), dtype=np.float64)

    def columns(self, idx) -> np.ndarray:
        """K[:, idx] of the combined kernel (n, len(idx))."""
        self._single_only("columns")
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        if self._small():
            return self.dense()[:, idx]
        out = np.zeros((self.n_samples, idx.size))
        for w, F in zip(self.weights, self.factors):
            if w != 0:
                out += w * (F @ F[idx].T)
        return out

    def traces(self, H: np.ndarray | None = None) -> np.ndarray:
        """Tr(H' K_p H) = ||F_p' H||_F^2 for every kernel (m,); Tr(K_p) = ||F_p||_F^2 without H."""
        self._bank_only("traces")
        if H is None:
            return np.array([float(np.einsum("ij,ij->", F, F, dtype=np.float64)) for F in self.factors])
        return np.array([float(np.sum(np.asarray(F.T @ H.astype(F.dtype, copy=False), dtype=np.float64) ** 2))
                         for F in self.factors])

    def cross_gram(self, dtype=np.float64) -> np.ndarray:
        """M = F'F (R x R, R = sum r_p; float64), the factors' cross Gram matrix, computed once (O(n R^2),
        a block per pair of kernels) and shared by the bank's combined views; with ``dtype`` float32 a
        copy in single precision, also kept (the Lanczos products of float32 factors)."""
        if dtype == np.float32:
            if "M32" not in self._cache:
                self._cache["M32"] = self.cross_gram().astype(np.float32)
            return self._cache["M32"]
        if "M" not in self._cache:
            offsets = np.concatenate([[0], np.cumsum(self.ranks)])
            M = np.empty((offsets[-1], offsets[-1]))
            for p, Fp in enumerate(self.factors):
                for q in range(p, self.n_kernels):
                    block = np.asarray(Fp.T @ self.factors[q], dtype=np.float64)
                    M[offsets[p]:offsets[p + 1], offsets[q]:offsets[q + 1]] = block
                    M[offsets[q]:offsets[q + 1], offsets[p]:offsets[p + 1]] = block.T
            self._cache["M"], self._cache["offsets"] = M, offsets
        return self._cache["M"]

    def frobenius_gram(self) -> np.ndarray:
        """<K_p, K_q>_F = Tr(K_p K_q) = ||F_p' F_q||_F^2 (m, m), from the cross Gram matrix."""
        self._bank_only("frobenius_gram")
        M, o = self.cross_gram(), self._cache["offsets"]
        m = self.n_kernels
        return np.array([[float(np.sum(M[o[p]:o[p + 1], o[q]:o[q + 1]] ** 2)) for q in range(m)] for p in range(m)])

    def dense(self) -> np.ndarray:
        """The n x n matrix (combined kernel) or the (m, n, n) stack (small n and tests; the
        eigenvectors' route where R >= n, which keeps the stack for the bank's next weights)."""
        if "dense" not in self._cache:
            self._cache["dense"] = np.stack([np.asarray(F @ F.T, dtype=np.float64) for F in self.factors])
        stack = self._cache["dense"]
        if self.weights is None:
            return stack
        key = ("combined", self.weights.tobytes())   # the last combination, kept for its next product
        if self._cache.get("combined_key") != key:
            self._cache["combined"], self._cache["combined_key"] = np.tensordot(self.weights, stack, axes=1), key
        return self._cache["combined"]

    # -- eigenvectors -------------------------------------------------------------------------------
    def leading(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k leading eigenpairs of the combined kernel (eigenvalues descending, vectors (n, k),
        orthonormal), through the R x R side (module docstring) or, where R >= n, the n x n one."""
        e = self.eigen(k)
        return e.lam, e.H

    def eigen(self, k: int, start: "Leading | None" = None) -> "Leading":
        """:meth:`leading` as a :class:`Leading`: on the R x R side the n x k eigenvectors are formed
        only if read, and the kernels' traces against them come from the cross Gram matrix. ``start``, the
        leading eigenpairs of another combination of the same factors (the point a line search starts
        from), starts the single-precision Lanczos from the sum of its vectors (:func:`_lanczos_single`)."""
        self._single_only("leading")
        from mkclust.kernel_functions import top_eigh
        n, R = self.n_samples, int(sum(self.ranks))
        if k >= n:
            raise ValueError(f"{k} eigenvectors of a kernel on {n} samples")
        if self._small():
            lam, H = top_eigh(self.dense(), k)
            return Leading(self, lam[::-1], H=H[:, ::-1])
        if R >= n:   # Lanczos on the n x n kernel through its factors, from a fixed start
            op = scipy.sparse.linalg.LinearOperator((n, n), matvec=lambda v: self.product(v.ravel()), dtype=np.float64)
            lam, H = scipy.sparse.linalg.eigsh(op, k=k, which="LA", v0=np.ones(n) / np.sqrt(n), tol=0.0)
            order = np.argsort(lam)[::-1]
            return Leading(self, lam[order], H=H[:, order])
        if k > R:
            raise ValueError(f"the combined kernel has rank at most {R}, below {k}: too few landmarks or too low a "
                             "rank for this many clusters")
        M = self.cross_gram()
        s = np.sqrt(np.repeat(self.weights, self.ranks))
        if R <= DENSE_SIDE or k >= R - 1:
            lam, U = top_eigh(s[:, None] * M * s[None, :], k)
        elif any(F.dtype == np.float32 for F in self.factors):
            lam, U = _lanczos_single(self.cross_gram(np.float32), M, s, k, None if start is None else start.U)
        else:
            op = scipy.sparse.linalg.LinearOperator((R, R), matvec=lambda v: s * (M @ (s * v.ravel())),
                                                    dtype=np.float64)
            lam, U = scipy.sparse.linalg.eigsh(op, k=k, which="LA", v0=s / np.linalg.norm(s), tol=0.0)
        order = np.argsort(lam)[::-1]
        lam, U = lam[order], U[:, order]
        if lam[-1] <= 0:
            raise ValueError(f"the combined kernel has rank below {k} (eigenvalue {lam[-1]:.3g}): "
                             "too few landmarks or too low a rank for this many clusters")
        return Leading(self, lam, U=U)


#: the Lanczos tolerance in single precision (ARPACK's, on the Ritz estimates); its Ritz values are
#: then recomputed in double precision, whose sum is off by about the square of it (below)
SINGLE_TOL = 1e-5
#: Lanczos vectors kept between ARPACK's restarts: at least this many (and 4 k)
LANCZOS_NCV = 40


def _lanczos_single(M32: np.ndarray, M: np.ndarray, s: np.ndarray, k: int, start: np.ndarray | None = None):
    """The k leading eigenpairs of S M S (S = diag(s)) for factors stored in float32: Lanczos with
    the products in single precision (M32, half the bytes read per product: the products are bound by
    memory), then one Rayleigh-Ritz step in double precision on the vectors it found (one product
    with k columns of M). Ritz values of an orthonormal basis are never above the eigenvalues they
    stand for; from a basis accurate to single precision they are accurate to its square. Measured on
    MNIST's first 20,000 digits (R = 10,577, k = 10, one thread): 1.5 + 0.2 CPU s against 3.6 s for
    Lanczos in double precision to machine precision; the sum of the k values within 3e-14 of it
    (relative), the traces Tr(H' K_p H) within 4e-9.

    The products are BLAS ``ssymv`` on M32's upper triangle (M is symmetric): half the bytes of
    ``M32 @ v`` read, which is what a product costs. Measured at R = 10,577, one thread: 11.3 ms
    against 21.9 ms a product; SimpleMKKM on that bank (2026-12-06, three other processes on the 2
    cores): 332 CPU s and 19,596 products against 600 s and 19,655, the same 28 steps and 228
    eigenproblems, labels the same on 19,999 of 20,000 samples, weights within 1.2e-4; the objective
    where the fit stops 5.704884 against 5.703665 (each the exact sum of the 10 leading eigenvalues
    at its weights to 4e-11: rounding moves where the paper's line search stops on this flat spectrum).

    Where the spectrum is flat around the k-th eigenvalue, the products are the cost: SimpleMKKM on
    that bank ends at weights where the 10th and 11th eigenvalues differ by 0.2 %, and Lanczos there
    took 190 products to ARPACK's tolerance 1e-8 with 21 vectors kept between restarts (ARPACK's
    default), 4.9 CPU s. Measured there (2026-12-06, one thread, a weight step of 0.1 % from the
    end point), products / CPU s / relative error of the sum after the double-precision Ritz step:
    tolerance 1e-8, 21 vectors, started from sqrt(w): 190 / 4.7 / 0; tolerance 1e-5, 40 vectors
    (:data:`LANCZOS_NCV`): 115 / 2.9 / 1e-13; the same started from the sum of ``start``, the eigenvectors
    (R x k) at the end point (``start`` of :meth:`LowRankBank.eigen`; SimpleMKKM gives the point its line
    search starts from): 66 / 1.8 / 3.5e-10. At 10 % of the
    way from the equal weights: 96 / 2.5 / 2e-13 against 86 / 2.3 / 2e-14; at the equal weights (a
    large gap) 35 against 41 products, the same values to 1e-15. (LOBPCG from the previous vectors
    took 21-46 iterations, 1.7-3.1 s, at the first point; with extra random vectors more.)"""
    ncv = min(M.shape[0] - 1, max(LANCZOS_NCV, 4 * k))
    symv, upper = scipy.linalg.blas.ssymv, np.asfortranarray(M32.T)   # M32 C-ordered: its transpose a view
    op = scipy.sparse.linalg.LinearOperator(
        M.shape, matvec=lambda v: s * symv(1.0, upper, (s * v.ravel()).astype(np.float32)).astype(np.float64),
        dtype=np.float64)
    v0 = s if start is None or start.shape[0] != s.size else start.sum(axis=1)   # sqrt(w): a cold start
    v0 = v0 if np.any(v0) else s
    _, V = scipy.sparse.linalg.eigsh(op, k=k, which="LA", v0=v0 / np.linalg.norm(v0), tol=SINGLE_TOL, ncv=ncv)
    Q = np.linalg.qr(V)[0]
    T = Q.T @ (s[:, None] * (M @ (s[:, None] * Q)))
    lam, W = np.linalg.eigh(0.5 * (T + T.T))
    return lam, Q @ W


class Leading:
    """The k leading eigenpairs of a combined low-rank kernel K_w = G G' (G = [sqrt(w_p) F_p], n x R):
    ``lam`` (descending), ``value`` their sum (max over H'H = I of Tr(H' K_w H)), and the vectors
    kept on the side they were computed on. From the R x R side (U, R x k) the n x k vectors
    H = G U diag(lam)^-1/2 cost n R k flops, so they are formed only when ``H`` is read; and
    Tr(H' K_p H) = ||F_p' H||^2 = ||M_p S U diag(lam)^-1/2||^2 (M_p the cross Gram matrix's rows of
    kernel p, S = diag(sqrt(w))) costs R^2 k from the cross Gram matrix, nothing of size n
    (SimpleMKKM's line search reads only ``value``, its gradient only ``traces()``)."""

    def __init__(self, kernel: LowRankBank, lam: np.ndarray, U: np.ndarray | None = None, H: np.ndarray | None = None):
        self.kernel, self.lam, self.U, self._H = kernel, lam, U, H

    @property
    def value(self) -> float:
        return float(self.lam.sum())

    def _scaled(self) -> np.ndarray:
        """S U diag(lam)^-1/2 (R, k): H = F times it."""
        s = np.sqrt(np.repeat(self.kernel.weights, self.kernel.ranks))
        return s[:, None] * self.U / np.sqrt(self.lam)[None, :]

    @property
    def H(self) -> np.ndarray:
        if self._H is None:
            V, o = self._scaled(), np.concatenate([[0], np.cumsum(self.kernel.ranks)])
            H = np.zeros((self.kernel.n_samples, self.lam.size))
            for p, F in enumerate(self.kernel.factors):
                if self.kernel.weights[p] != 0:
                    H += np.asarray(F @ V[o[p]:o[p + 1]].astype(F.dtype), dtype=np.float64)
            self._H = H
        return self._H

    def traces(self) -> np.ndarray:
        """Tr(H' K_p H) for every kernel p of the bank the combined kernel was made of (m,)."""
        if self.U is None:
            return np.array([float(np.sum(np.asarray(F.T @ self._H.astype(F.dtype, copy=False), dtype=np.float64) ** 2))
                             for F in self.kernel.factors])
        B = self.kernel.cross_gram() @ self._scaled()
        o = np.concatenate([[0], np.cumsum(self.kernel.ranks)])
        return np.array([float(np.sum(B[o[p]:o[p + 1]] ** 2)) for p in range(self.kernel.n_kernels)])


def as_low_rank(K) -> LowRankBank | None:
    """``K`` as a :class:`LowRankBank` where it is one or a features
    :class:`~mkclust.kernels.KernelBank`; None for anything else (dense input)."""
    if isinstance(K, LowRankBank):
        return K
    if getattr(K, "kind", None) == "features" and hasattr(K, "features"):
        return LowRankBank.from_kernel_bank(K)
    return None
