"""Curvature operators: symmetric PSD matrices with the structure a bound or Hessian gives.

Every operator implements one interface, and solvers reach linear algebra only through it:

- ``shape``, ``matvec(v)``, ``quad(v)``, ``diagonal()``, ``to_dense()``;
- ``diagonal_blocks()``: the diagonal blocks (m, b, b) the operator can give cheaply, or None;
- ``block_factors()``: the same blocks factored, sum_k X_k^T diag(C_k[:, a]) X_k + diag(extra[a])
  (X_k with an implicit ones column where flagged), or None;
- ``preconditioner()``: M^{-1} as a callable, block-Jacobi in the form the shape calls for
  (Woodbury through rows x rows systems when there are fewer rows than block columns, dense
  block inverses from ``diagonal_blocks`` otherwise while they fit in memory, else Jacobi from
  ``diagonal``);
- ``solve(rhs, method="cholesky" | "cg")``: dense Cholesky (minimum-norm least squares when
  singular) or preconditioned conjugate gradient on products only;
- ``diagonal_plus_rank_one()``: (D, [(w_j, u_j)]) where the operator is diag(D) plus rank-one
  terms (penalties and sums of them), else None;
- ``+`` (a :class:`SumCurvature`) and scaling by a number ``c * C`` (a :class:`ScaledCurvature`).

Which preconditioner a conjugate-gradient solve uses is decided in one place,
:class:`zbound.bounds.policy.PreconditionerPolicy`, from these methods.

A new structure (low-rank plus diagonal, block-diagonal, ...) plugs in by subclassing
:class:`Curvature` and implementing ``matvec``, ``diagonal`` and ``to_dense`` (and, where it has
them cheaply, ``diagonal_blocks`` and a faster ``solve``).

- :class:`DenseCurvature`: an explicit (p, p) matrix (Alg. 1 on explicit configurations).
- :class:`KroneckerCurvature`: sum_j B_j (x) x_j x_j^T + reg * I, the multinomial structure
  (parameters ordered class-major: theta = vec(W) with W of shape (n, d)).
- :class:`SoftmaxCurvature`: the softmax Hessian, products from the probabilities alone.
- :class:`LabelBoundCurvature`: the Alg. 1 softmax bound, products from (t, n) factors alone.
- :class:`ScaledIdentity`, :class:`DiagonalCurvature`, :class:`RankOneCurvature`: penalties.
"""

from __future__ import annotations

import copy
import functools
import numbers

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from zbound.bounds.preconditioners import (
    SPARSE_JACOBI_POWER,
    block_budget,
    block_preconditioner_kind,
    stored_entries,
    woodbury_block_jacobi,
)
from zbound.utils.linalg import (
    block_jacobi,
    cache_block_rows,
    cholesky_solve,
    csr_on,
    jacobi,
    pcg,
    psd_solve,
    row_block,
)

# Largest (pairs, d, t) operand for the batched class-pair Gram products of a dense assembly.
_BATCH_ELEMS = 1 << 20
# ... and the largest for which the batched product is used at all (beyond, a loop of GEMMs)
_BATCH_SMALL_ELEMS = 1 << 16
SOLVE_METHODS = ("cholesky", "cg")
# Entries of X squared at a time (1 MB): the diagonal products square X block by block (a dense
# block of rows, or a block of CSR rows' stored entries), never all of it
_SQUARE_BLOCK_ELEMS = 1 << 17


@functools.lru_cache(maxsize=64)
def _pairs(n: int, strict: bool) -> tuple[np.ndarray, np.ndarray]:
    """Class pairs a < b (``strict``) or a <= b, as index arrays (cached: triu_indices costs
    more than the products it indexes at small sizes)."""
    ia, ib = np.triu_indices(n, 1 if strict else 0)
    ia.flags.writeable = False
    ib.flags.writeable = False
    return ia, ib


class Curvature:
    """Base class: symmetric positive semi-definite operator of shape (p, p)."""

    shape: tuple[int, int]

    def matvec(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def diagonal(self) -> np.ndarray:
        raise NotImplementedError

    def jacobi_diagonal(self) -> np.ndarray:
        """The diagonal that Jacobi preconditioning divides by: :meth:`diagonal`, or a cheap
        stand-in where the operator is known only by products (its exact diagonal would cost
        p of them)."""
        return self.diagonal()

    def to_dense(self) -> np.ndarray:
        """A new (p, p) ndarray (the caller may modify it)."""
        raise NotImplementedError

    def diagonal_blocks(self) -> np.ndarray | None:
        """Diagonal blocks (m, b, b) with m * b = p, when the structure gives them cheaply."""
        return None

    def block_factors(self):
        """The diagonal blocks in factored form, ``(factors, extra)``: block a is
        sum_k Xa_k^T diag(C_k[:, a]) Xa_k + diag(extra[a]) over the triples
        (X_k, C_k, intercept_k) of ``factors`` (X_k dense or CSR, Xa_k = [X_k, 1] when
        intercept_k else X_k, of b columns; C_k (t_k, m) >= 0; extra (m, b)); None where the
        operator has no such form. Lets :meth:`preconditioner` choose by shape."""
        return None

    def add_to_dense(self, out: np.ndarray) -> None:
        """out += this operator, in place (sums assemble without temporaries)."""
        out += self.to_dense()

    def diagonal_plus_rank_one(self):
        """(D, terms): this operator as diag(D) + sum_j w_j u_j u_j^T, ``terms`` the list of
        pairs (w_j, u_j); None where it has no such form (a data term's curvature). Penalties'
        curvatures have it: what a solver needs to know of a penalty's structure."""
        return None

    def assemble(self) -> np.ndarray:
        """The (p, p) matrix for a dense factorization, by the cheapest assembly the
        structure has (default: :meth:`to_dense`)."""
        return self.to_dense()

    # Factors of a softmax bound (Alg. 1), where the operator is one; None elsewhere.
    def label_vectors(self) -> np.ndarray | None:
        """(t, n, k) weighted label vectors sqrt(w_i) l_i of an Alg. 1 softmax bound
        (:meth:`LabelBoundCurvature.label_vectors`), or None."""
        return None

    def design(self) -> np.ndarray | None:
        """The dense design the operator's Gram products are taken of, or None."""
        return None

    def label_weight_matrix(self) -> np.ndarray | None:
        """sum_j s_j B_j, the label factor of the Kronecker approximation, or None."""
        return None

    def rank_one_terms(self) -> np.ndarray | None:
        """R (m, p) with R^T R this operator, one row per rank-one term, or None."""
        return None

    def quad(self, v: np.ndarray) -> float:
        """v^T C v."""
        return float(v @ self.matvec(v))

    def as_linear_operator(self) -> LinearOperator:
        p = self.shape[0]
        return LinearOperator((p, p), matvec=self.matvec, dtype=np.float64)

    def preconditioner(self):
        """M^{-1} for conjugate gradient: block-Jacobi on the class blocks where the operator
        has them (the coupling between classes is what CG then resolves), else Jacobi on
        ``diagonal()``. The form follows the shape
        (``preconditioners.block_preconditioner_kind``): with T rows of data and blocks of size
        b, Woodbury through T x T systems when T < b (never a (b, b) array), dense inverses of
        ``diagonal_blocks()``, each while it fits in the memory budget of
        ``preconditioners.block_budget`` (the data's own size, 32 MB to 256 MB), else
        Jacobi (for sparse data by the square root of the diagonal:
        ``preconditioners.SPARSE_JACOBI_POWER``)."""
        factors = self.block_factors()
        if factors is not None:
            pairs, extra = factors
            rows = sum(f[0].shape[0] for f in pairs)
            kind = block_preconditioner_kind(rows, extra.shape[1], extra.shape[0],
                                             block_budget(pairs), stored_entries(pairs))
            if kind == "woodbury":
                pre = woodbury_block_jacobi(pairs, extra)
                if pre is not None:
                    return pre
            if kind != "dense":
                sparse = any(sp.issparse(f[0]) for f in pairs)
                return jacobi(self.diagonal(), SPARSE_JACOBI_POWER if sparse else 1.0)
        blocks = self.diagonal_blocks()
        if blocks is not None:
            pre = block_jacobi(blocks)
            if pre is not None:
                return pre
        return jacobi(self.jacobi_diagonal())

    def solve(self, rhs: np.ndarray, method: str = "cholesky", *, x0: np.ndarray | None = None,
              rtol: float = 1e-10, maxiter: int | None = None, precond=None,
              return_iterations: bool = False):
        """Solve C x = rhs.

        ``method="cholesky"`` factors the dense matrix (minimum-norm least squares when it is
        singular); ``method="cg"`` runs preconditioned conjugate gradient on products only
        (``precond`` defaults to :meth:`preconditioner`; ``maxiter`` to 10 p). A partial CG
        solve from x0 = 0 still decreases the quadratic majorizer (CG iterates decrease it
        monotonically), which keeps majorization monotone. With ``return_iterations`` the
        number of products is returned too (0 for Cholesky).
        """
        rhs = np.asarray(rhs, dtype=np.float64)
        if method == "cholesky":
            x = psd_solve(self.to_dense(), rhs)
            return (x, 0) if return_iterations else x
        if method == "cg":
            if precond is None:
                precond = self.preconditioner()
            maxiter = 10 * self.shape[0] if maxiter is None else int(maxiter)
            if x0 is not None:
                x0 = np.asarray(x0, dtype=np.float64)
                e, k = pcg(self.matvec, rhs - self.matvec(x0), precond, rtol, maxiter)
                x = x0 + e
            else:
                x, k = pcg(self.matvec, rhs, precond, rtol, maxiter)
            return (x, k) if return_iterations else x
        raise ValueError(f"unknown solve method {method!r}; use one of {SOLVE_METHODS}")

    def __add__(self, other):
        if isinstance(other, Curvature):
            return SumCurvature(self, other)
        if isinstance(other, numbers.Real) and other == 0:
            return self
        return NotImplemented

    __radd__ = __add__

    def __mul__(self, c):
        if not isinstance(c, numbers.Real):
            return NotImplemented
        return ScaledCurvature(self, float(c))

    __rmul__ = __mul__

    def with_ridge(self, scale: float, inplace: bool = False) -> Curvature:
        """This operator plus scale * I. Structures with a ridge fold it in (``inplace``: into
        this very operator, for one that nothing else holds, e.g. fresh from a loss)."""
        return self + ScaledIdentity(self.shape[0], scale)


class MatrixFreeCurvature(Curvature):
    """A curvature known only by its products (``matvec``): the dense form, for tests and
    small problems, is formed column by column, and refused beyond ``DENSE_MAX`` parameters."""

    DENSE_MAX = 5000

    def to_dense(self):
        p = self.shape[0]
        if p > self.DENSE_MAX:
            raise MemoryError(f"refusing to form a dense ({p}, {p}) curvature")
        return np.column_stack([self.matvec(e) for e in np.eye(p)])

    def add_to_dense(self, out):
        out += self.to_dense()

    def diagonal(self):
        """The exact diagonal, from the dense form (tests and small problems; Jacobi
        preconditioning uses :meth:`jacobi_diagonal`)."""
        return np.diag(self.to_dense()).copy()


class DenseCurvature(Curvature):
    """An explicit symmetric matrix, plus ``reg`` times the identity."""

    def __init__(self, matrix: np.ndarray, reg: float = 0.0):
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"curvature matrix must be square, got shape {matrix.shape}")
        self.matrix = matrix
        self.reg = float(reg)
        self.shape = matrix.shape

    def matvec(self, v):
        out = self.matrix @ v
        if self.reg:
            out += self.reg * v
        return out

    def diagonal(self):
        return np.diag(self.matrix) + self.reg

    def to_dense(self):
        out = self.matrix.copy()
        if self.reg:
            out.flat[:: out.shape[0] + 1] += self.reg
        return out

    def add_to_dense(self, out):
        out += self.matrix
        if self.reg:
            out.flat[:: out.shape[0] + 1] += self.reg


class DiagonalCurvature(Curvature):
    """diag(values), values >= 0 (a per-coordinate L2 penalty)."""

    def __init__(self, values: np.ndarray):
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"diagonal values must be 1-D, got shape {values.shape}")
        self.values = values
        self.shape = (values.size, values.size)

    def matvec(self, v):
        return self.values * v

    def diagonal(self):
        return self.values.copy()

    def to_dense(self):
        return np.diag(self.values)

    def add_to_dense(self, out):
        out.flat[:: out.shape[0] + 1] += self.values

    def diagonal_plus_rank_one(self):
        return self.diagonal(), []

    def solve(self, rhs, method="cholesky", **kwargs):
        rhs = np.asarray(rhs, dtype=np.float64)
        safe = np.where(self.values > 0, self.values, 1.0)
        x = np.where(self.values > 0, rhs / safe, 0.0)     # minimum norm on the null space
        return (x, 0) if kwargs.get("return_iterations") else x


class ScaledIdentity(DiagonalCurvature):
    """scale * I (a scalar L2 penalty)."""

    def __init__(self, p: int, scale: float):
        self.shape = (int(p), int(p))
        self.scale = float(scale)

    @property
    def values(self):
        return np.full(self.shape[0], self.scale)

    def matvec(self, v):
        return self.scale * v

    def diagonal(self):
        return np.full(self.shape[0], self.scale)

    def to_dense(self):
        return self.scale * np.eye(self.shape[0])

    def add_to_dense(self, out):
        out.flat[:: out.shape[0] + 1] += self.scale

    def solve(self, rhs, method="cholesky", **kwargs):
        x = np.asarray(rhs, dtype=np.float64) / self.scale
        return (x, 0) if kwargs.get("return_iterations") else x


class RankOneCurvature(Curvature):
    """weight * u u^T, weight >= 0 (e.g. the intercept-centering term)."""

    def __init__(self, u: np.ndarray, weight: float):
        self.u = np.asarray(u, dtype=np.float64)
        self.weight = float(weight)
        self.shape = (self.u.size, self.u.size)

    def matvec(self, v):
        return (self.weight * float(self.u @ v)) * self.u

    def diagonal(self):
        return self.weight * self.u * self.u

    def to_dense(self):
        return self.weight * np.outer(self.u, self.u)

    def add_to_dense(self, out):
        if self.weight:
            out += self.weight * np.outer(self.u, self.u)

    def diagonal_plus_rank_one(self):
        return np.zeros(self.shape[0]), [(self.weight, self.u)]


class ScaledCurvature(Curvature):
    """c * C for a number c >= 0 (majorizers scaled by EM responsibilities or batch weights)."""

    def __init__(self, base: Curvature, c: float):
        if not (np.isfinite(c) and c >= 0):
            raise ValueError(f"a curvature can only be scaled by a finite number >= 0, got {c}")
        self.base = base
        self.c = float(c)
        self.shape = base.shape

    def matvec(self, v):
        return self.c * self.base.matvec(v)

    def diagonal(self):
        return self.c * self.base.diagonal()

    def jacobi_diagonal(self):
        return self.c * self.base.jacobi_diagonal()

    def to_dense(self):
        out = self.base.to_dense()
        out *= self.c
        return out

    def diagonal_blocks(self):
        blocks = self.base.diagonal_blocks()
        return None if blocks is None else self.c * blocks

    def block_factors(self):
        fac = self.base.block_factors()
        if fac is None:
            return None
        pairs, extra = fac
        return [(X, self.c * C, icpt) for X, C, icpt in pairs], self.c * extra

    def diagonal_plus_rank_one(self):
        form = self.base.diagonal_plus_rank_one()
        if form is None:
            return None
        D, terms = form
        return self.c * D, [(self.c * w, u) for w, u in terms]


class SumCurvature(Curvature):
    """C_1 + C_2 + ... (chunk curvatures of a loss, plus a penalty's)."""

    def __init__(self, *parts: Curvature):
        flat = []
        for part in parts:
            flat.extend(part.parts if isinstance(part, SumCurvature) else (part,))
        shape = flat[0].shape
        for part in flat:
            if part.shape != shape:
                raise ValueError(f"cannot add curvatures of shapes "
                                 f"{sorted({p.shape for p in flat})}")
        self.parts = tuple(flat)
        self.shape = shape

    def matvec(self, v):
        out = self.parts[0].matvec(v)
        for part in self.parts[1:]:
            out = out + part.matvec(v)
        return out

    def diagonal(self):
        out = self.parts[0].diagonal()
        for part in self.parts[1:]:
            out = out + part.diagonal()
        return out

    def jacobi_diagonal(self):
        out = self.parts[0].jacobi_diagonal()
        for part in self.parts[1:]:
            out = out + part.jacobi_diagonal()
        return out

    def to_dense(self):
        out = self.parts[0].to_dense()
        for part in self.parts[1:]:
            part.add_to_dense(out)
        return out

    def add_to_dense(self, out):
        for part in self.parts:
            part.add_to_dense(out)

    def diagonal_plus_rank_one(self):
        D, terms = np.zeros(self.shape[0]), []
        for part in self.parts:
            form = part.diagonal_plus_rank_one()
            if form is None:
                return None
            D += form[0]
            terms.extend(form[1])
        return D, terms

    def diagonal_blocks(self):
        """Sum of the parts' blocks; parts without blocks add their diagonal (the off-block
        entries of such parts are dropped: a preconditioner needs only an SPD approximation)."""
        blocks = None
        rest = []
        for part in self.parts:
            b = part.diagonal_blocks()
            if b is None:
                rest.append(part)
            elif blocks is None:
                blocks = b.copy()
            elif b.shape == blocks.shape:
                blocks += b
            else:
                return None
        if blocks is None:
            return None
        m, bs, _ = blocks.shape
        idx = np.arange(bs)
        for part in rest:
            blocks[:, idx, idx] += part.diagonal().reshape(m, bs)
        return blocks

    def block_factors(self):
        """The parts' factors side by side (chunks stack their rows), their extra diagonals
        summed; parts without factors add their diagonal (as in :meth:`diagonal_blocks`)."""
        pairs = []
        extra = None
        rest = []
        for part in self.parts:
            fac = part.block_factors()
            if fac is None:
                rest.append(part)
                continue
            if extra is None:
                extra = fac[1].copy()
            elif fac[1].shape != extra.shape:
                return None
            else:
                extra += fac[1]
            pairs.extend(fac[0])
        if extra is None:
            return None
        for part in rest:
            extra += part.diagonal().reshape(extra.shape)
        return pairs, extra


def weighted_grams(X: np.ndarray, C: np.ndarray, intercept: bool = False) -> np.ndarray:
    """X^T diag(C[:, k]) X for dense X (t, d) and every column k of C (t, m), symmetrized,
    (m, d, d); with ``intercept`` bordered by the implicit ones column, [[X^T diag(c) X,
    X^T c], [c^T X, sum c]], (m, d + 1, d + 1), without a copy of X.

    One batched product while the (m, d, t) operand is tiny (the Table 3 sizes, where a
    Python loop over pairs would cost more than the arithmetic), else one GEMM per column
    and chunk of rows into one reused weighted chunk: no (m, d, t) operand, so the
    temporaries stay at one chunk whatever the rows and pairs.
    """
    m = C.shape[1]
    dx = X.shape[1]
    if m * X.size <= _BATCH_SMALL_ELEMS:
        # one column (two classes): a plain GEMM, not the batched matmul's loop
        G = ((X.T * C[:, 0]) @ X)[None] if m == 1 else \
            (X.T[None, :, :] * C.T[:, None, :]) @ X
    else:
        G = np.zeros((m, dx, dx))
        t = X.shape[0]
        step = min(t, max(256, _BATCH_ELEMS // 8 // max(dx, 1)))
        W = np.empty((step, dx))
        for a in range(0, t, step):
            Xc = X[a:a + step]
            Wc = W[: Xc.shape[0]]
            for k in range(m):
                np.multiply(Xc, C[a:a + step, k, None], out=Wc)
                G[k] += Xc.T @ Wc
    G += G.transpose(0, 2, 1)
    G *= 0.5
    if not intercept:
        return G
    out = np.empty((m, dx + 1, dx + 1))
    out[:, :dx, :dx] = G
    XC = C.T @ X
    out[:, :dx, dx] = XC
    out[:, dx, :dx] = XC
    out[:, dx, dx] = C.sum(axis=0)
    return out


class KroneckerCurvature(Curvature):
    """C = sum_j B_j (x) x_j x_j^T + reg * I, never formed unless asked.

    Parameters
    ----------
    X : (t, d) ndarray or CSR matrix
    B : (t, n, n) ndarray, symmetric PSD per sample
    reg : float

    The parameter vector is theta = vec(W), W of shape (n, d), row-major (index a * d + i), so
    block (a, b) of C is X^T diag(B[:, a, b]) X. A product C v costs O(t n d + t n^2).

    :meth:`with_intercept` gives the same operator on the design [X, 1] (an intercept as the
    last column of each class, d = X.shape[1] + 1) without forming it: every kernel below goes
    through ``_rows_x``, ``_classes_x``, ``_xt_rows``, ``_xt_classes`` and ``_sq_weights``,
    which add the ones column's part (b_a, row sums) themselves.
    """

    intercept = False

    def with_intercept(self) -> KroneckerCurvature:
        """This operator on [X, 1] (implicit ones column; theta's last entry per class)."""
        out = copy.copy(self)
        out.intercept = True
        out.d = self.X.shape[1] + 1
        p = out.n * out.d
        out.shape = (p, p)
        return out

    # -- products with the design [X, 1] (or X), dense or CSR ----------------------------------
    def _split(self, V):
        return (V[:, :-1], V[:, -1]) if self.intercept else (V, None)

    def _rows_x(self, V: np.ndarray) -> np.ndarray:
        """(t, n): x_j^T v_a for V (n, d)."""
        W, b = self._split(V)
        U = np.asarray(self.X @ W.T)
        if b is not None:
            U = U + b
        return U

    def _classes_x(self, V: np.ndarray) -> np.ndarray:
        """(n, t) C-contiguous, class-major: v_a^T x_j."""
        if sp.issparse(self.X):
            return np.ascontiguousarray(self._rows_x(V).T)
        W, b = self._split(V)
        UT = W @ self.X.T
        if b is not None:
            UT += b[:, None]
        return UT

    def _with_sums(self, out: np.ndarray, sums) -> np.ndarray:
        if not self.intercept:
            return out
        full = np.empty((out.shape[0], self.d))
        full[:, :-1] = out
        full[:, -1] = sums
        return full

    def _xt_rows(self, R: np.ndarray) -> np.ndarray:
        """(n, d): sum_j r_ja x_j for R (t, n)."""
        out = np.asarray(self.X.T @ R).T
        return self._with_sums(out, R.sum(axis=0) if self.intercept else None)

    def _xt_classes(self, RT: np.ndarray) -> np.ndarray:
        """(n, d): the same for class-major RT (n, t)."""
        out = np.asarray(self.X.T @ RT.T).T if sp.issparse(self.X) else RT @ self.X
        return self._with_sums(out, RT.sum(axis=1) if self.intercept else None)

    def _sq_weights(self, W: np.ndarray) -> np.ndarray:
        """(n, d): sum_j W[j, a] x_ji^2, the diagonal of each class block for weights W (t, n)."""
        X = self.X
        t = X.shape[0]
        per_row = X.nnz / max(1, t) if sp.issparse(X) else X.shape[1]
        step = max(1, int(_SQUARE_BLOCK_ELEMS / max(1.0, per_row)))
        out = np.zeros((W.shape[1], X.shape[1]))
        for a in range(0, t, step):
            b = min(t, a + step)
            rows = row_block(X, a, b)
            if sp.issparse(rows):       # the block's pattern with squared entries
                sq = csr_on(rows.data * rows.data, rows.indices, rows.indptr, rows.shape)
                out += np.asarray(sq.T @ W[a:b]).T
            else:
                out += W[a:b].T @ (rows * rows)
        return self._with_sums(out, W.sum(axis=0) if self.intercept else None)

    def _design(self):
        """[X, 1] (or X) explicitly, for the assemblies of a sparse X."""
        if not self.intercept:
            return self.X
        ones = np.ones((self.X.shape[0], 1))
        if sp.issparse(self.X):
            return sp.hstack([self.X, ones], format="csr")
        return np.hstack([self.X, ones])

    def __init__(self, X, B: np.ndarray, reg: float = 0.0):
        B = np.asarray(B, dtype=np.float64)
        t = X.shape[0]
        if B.ndim != 3 or B.shape[0] != t or B.shape[1] != B.shape[2]:
            raise ValueError(f"B must have shape ({t}, n, n), got {B.shape}")
        self.X = X
        self.B = B
        self.reg = float(reg)
        self.n = B.shape[1]
        self.d = X.shape[1]
        p = self.n * self.d
        self.shape = (p, p)

    def with_ridge(self, scale: float, inplace: bool = False) -> KroneckerCurvature:
        """reg + scale (the ridge folded into products, diagonal and assembly)."""
        out = self if inplace else copy.copy(self)
        out.reg = self.reg + float(scale)
        return out

    def matvec(self, v):
        V = np.asarray(v, dtype=np.float64).reshape(self.n, self.d)
        U = self._rows_x(V)                               # (t, n): x_j^T v_a
        R = np.einsum("jab,jb->ja", self.B, U)            # (t, n): B_j u_j
        out = self._xt_rows(R)                            # (n, d)
        return out.ravel() + self.reg * v

    def diagonal(self):
        diag = self._sq_weights(np.diagonal(self.B, axis1=1, axis2=2))
        return diag.ravel() + self.reg

    def diagonal_blocks(self) -> np.ndarray:
        """The n class blocks X^T diag(B[:, a, a]) X + reg I, shape (n, d, d); None for a
        sparse X. The block-Jacobi preconditioner of truncated Newton and of CG bound steps."""
        if sp.issparse(self.X):
            return None
        blocks = self._grams(np.diagonal(self.B, axis1=1, axis2=2))
        idx = np.arange(self.d)
        blocks[:, idx, idx] += self.reg
        return blocks

    def _block_weights(self) -> np.ndarray:
        """(t, n): the diagonal of each B_j, the weights of the class blocks."""
        return np.diagonal(self.B, axis1=1, axis2=2)

    def block_factors(self):
        return ([(self.X, self._block_weights(), self.intercept)],
                np.full((self.n, self.d), self.reg))

    def _grams(self, C: np.ndarray) -> np.ndarray:
        """X^T diag(C[:, k]) X for every column k of C (t, m), bordered by the implicit ones
        column with an intercept: :func:`weighted_grams`."""
        return weighted_grams(self.X, C, self.intercept)

    def _assemble(self, pair_weights, complete: bool) -> np.ndarray:
        """Dense (n d, n d) matrix with block (a, b) = X^T diag(c_ab) X (dense X), where
        ``pair_weights(ia, ib)`` gives the columns c_ab, (t, len(ia)), for index arrays a <= b.

        One (t, d) x (t, d) product per class pair a < b, plus one per class for the diagonal
        blocks, unless ``complete`` (every B_j 1 = 0): then block (a, a) is minus the sum of its
        row's off-diagonal blocks and n (n - 1) / 2 products suffice, against the n^2 of a
        generic Kronecker assembly (digits' 10-class bound: 45 instead of 100, and no
        (t, n^2 d) buffer).
        """
        n, d = self.n, self.d
        p = n * d
        ia, ib = _pairs(n, complete)
        if n == 1 and ia.size:              # one block (two classes): the Gram matrix itself
            out = self._grams(pair_weights(ia, ib))[0]
            if self.reg:
                out.flat[:: p + 1] += self.reg
            return out
        out = np.zeros((p, p))
        V = out.reshape(n, d, n, d)             # block (a, b) is V[a, :, b, :], in place
        if ia.size:
            G = self._grams(pair_weights(ia, ib))
            V[ia, :, ib, :] = G
            V[ib, :, ia, :] = G
        if complete:
            diag = np.arange(n)
            V[diag, :, diag, :] = -V.sum(axis=2)
        if self.reg:
            out.flat[:: p + 1] += self.reg
        return out

    def to_dense(self):
        if not sp.issparse(self.X):
            B = self.B
            scale = float(np.max(np.abs(B))) if B.size else 0.0
            complete = bool(np.max(np.abs(B.sum(axis=2)), initial=0.0) <= 1e-13 * scale)
            return self._assemble(lambda ia, ib: B[:, ia, ib], complete)
        n, d = self.n, self.d
        X = self._design()
        out = np.empty((n, d, n, d))
        for a in range(n):
            for b in range(a, n):
                blk = (X.T @ X.multiply(self.B[:, a, b][:, None])).toarray()
                out[a, :, b, :] = blk
                out[b, :, a, :] = blk.T
        dense = out.reshape(n * d, n * d)
        dense = 0.5 * (dense + dense.T)
        if self.reg:
            dense.flat[:: n * d + 1] += self.reg
        return dense


class SoftmaxCurvature(KroneckerCurvature):
    """Hessian of sum_j w_j log sum_a exp(w_a^T x_j): B_j = w_j (diag p_j - p_j p_j^T), + reg I.

    Same operator as :class:`KroneckerCurvature` with that B, but a product uses the structure
    B_j u = w_j p_j * (u - p_j^T u) in O(t n) instead of the O(t n^2) batched matrix product, and
    the (t, n, n) array is built only if something (a dense assembly, a preconditioner) asks.

    Parameters
    ----------
    X : (t, d) dense or CSR rows
    P : (t, n) softmax probabilities
        Or any sub-block of their columns: the rows of P need not sum to one, e.g. the free
        classes of a binary model with a reference class.
    reg : float, the ridge added to the operator
    weights : (t,) non-negative sample weights, default 1.
    complete : whether every row of P sums to one (a full softmax; lets ``to_dense`` skip the
        diagonal blocks); None checks.
    """

    def __init__(self, X, P: np.ndarray, reg: float = 0.0, weights: np.ndarray | None = None,
                 complete: bool | None = None):
        P = np.asarray(P, dtype=np.float64)
        if P.ndim != 2 or P.shape[0] != X.shape[0]:
            raise ValueError(f"P must have shape ({X.shape[0]}, n), got {P.shape}")
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            if weights.shape != (X.shape[0],):
                raise ValueError(f"weights must have shape ({X.shape[0]},), got {weights.shape}")
        self.X = X
        self.P = P
        self.weights = weights
        self.reg = float(reg)
        self.n = P.shape[1]
        self.d = X.shape[1]
        p = self.n * self.d
        self.shape = (p, p)
        self.complete = complete
        self._B = None
        # P^T, C-contiguous: free when P is itself a transposed class-major array (the model's)
        self._PT = None if sp.issparse(X) else np.ascontiguousarray(P.T)

    @property
    def B(self) -> np.ndarray:
        if self._B is None:
            B = -self.P[:, :, None] * self.P[:, None, :]
            idx = np.arange(self.n)
            B[:, idx, idx] += self.P
            if self.weights is not None:
                B *= self.weights[:, None, None]
            self._B = B
        return self._B

    def matvec(self, v):
        V = np.asarray(v, dtype=np.float64).reshape(self.n, self.d)
        if sp.issparse(self.X):
            U = self._rows_x(V)                            # (t, n)
            PU = self.P * U
            R = PU - self.P * PU.sum(axis=1, keepdims=True)    # B_j u_j
            if self.weights is not None:
                R *= self.weights[:, None]
            out = self._xt_rows(R)
            return out.ravel() + self.reg * v
        if self.n == 1 and self.X.shape[0] >= 2 * cache_block_rows(self.d):
            return self._matvec_one(V).ravel() + self.reg * v
        # Class-major (n, t) layout: the sum over classes runs across contiguous rows.
        PT = self._PT
        UT = self._classes_x(V)                            # (n, t): v_a^T x_j
        UT *= PT
        RT = UT - PT * UT.sum(axis=0)                      # (B_j u_j)^T
        if self.weights is not None:
            RT *= self.weights
        out = self._xt_classes(RT).ravel()
        out += self.reg * v
        return out

    def _matvec_one(self, V: np.ndarray) -> np.ndarray:
        """One weight vector (binary with a reference class), dense X: X^T (w p (1 - p) * X v)
        one block of rows at a time, so that the block is still in cache for the second
        product. Both products are matrix-vector (memory-bound): one pass over X instead of
        two."""
        X, P, wts = self.X, self.P[:, 0], self.weights
        w, b = self._split(V)
        w = w[0]
        out = np.zeros(X.shape[1])
        total = 0.0
        step = cache_block_rows(self.d)
        for i in range(0, X.shape[0], step):
            Xc, pc = X[i:i + step], P[i:i + step]
            r = Xc @ w
            if b is not None:
                r += b[0]
            r *= pc
            r -= r * pc                                   # p (1 - p) u
            if wts is not None:
                r *= wts[i:i + step]
            out += r @ Xc
            if b is not None:
                total += float(r.sum())
        return self._with_sums(out[None, :], total if b is not None else None)

    def diagonal(self):
        W = self.P - self.P * self.P                       # diagonal of each B_j
        if self.weights is not None:
            W = W * self.weights[:, None]
        return self._sq_weights(W).ravel() + self.reg

    def _block_weights(self) -> np.ndarray:
        W = self.P - self.P * self.P
        if self.weights is not None:
            W *= self.weights[:, None]
        return W

    def diagonal_blocks(self) -> np.ndarray:
        """The n class blocks X^T diag(w p_a (1 - p_a)) X + reg I, shape (n, d, d), from P
        directly (no (t, n, n) array); None for a sparse X."""
        if sp.issparse(self.X):
            return None
        W = self.P - self.P * self.P
        if self.weights is not None:
            W = W * self.weights[:, None]
        blocks = self._grams(W)
        idx = np.arange(self.d)
        blocks[:, idx, idx] += self.reg
        return blocks

    def two_class_solve(self, rhs: np.ndarray) -> np.ndarray | None:
        """x with C x = rhs for a full two-class softmax (both classes free, rows of P summing
        to one) on dense rows with a ridge reg > 0, in d dimensions instead of 2 d: C is
        [[A, -A], [-A, A]] + reg I with A = X^T diag(w p_0 p_1) X, so the class-sum part of
        rhs is divided by reg and its difference part solves (2 A + reg I) v = (r_0 - r_1) / 2
        (one d x d Cholesky with the condition test of
        :func:`zbound.utils.linalg.cholesky_solve`); x = (s + v, s - v). None where C is not
        of this form or that system is not numerically positive definite (the caller then
        takes the dense route)."""
        if self.n != 2 or not self.reg > 0.0 or sp.issparse(self.X):
            return None
        P = self.P
        if not (self.complete or (self.complete is None and
                                  np.all(np.abs(P.sum(axis=1) - 1.0) <= 1e-12))):
            return None
        c = P[:, 0] * P[:, 1]
        if self.weights is not None:
            c = c * self.weights
        M = self._grams(c[:, None])[0]
        M *= 2.0
        M.flat[:: M.shape[0] + 1] += self.reg
        r = np.asarray(rhs, dtype=np.float64).reshape(2, -1)
        v = cholesky_solve(M, 0.5 * (r[0] - r[1]))
        if v is None:
            return None
        s = (0.5 / self.reg) * (r[0] + r[1])
        return np.concatenate([s + v, s - v])

    def to_dense(self):
        """Dense matrix from P, never forming the (t, n, n) B: block (a, b) =
        -X^T diag(w p_a p_b) X for a != b and, when the rows of P sum to one (a full softmax,
        B_j 1 = 0), the diagonal blocks from those (one product per class pair, 8x fewer flops
        than the generic assembly for two classes); else X^T diag(w p_a (1 - p_a)) X each."""
        if sp.issparse(self.X):
            return super().to_dense()
        P = self.P
        Pw = P if self.weights is None else P * self.weights[:, None]
        complete = self.complete
        if complete is None:
            complete = bool(np.all(np.abs(P.sum(axis=1) - 1.0) <= 1e-12))

        def pair_weights(ia, ib):
            if P.shape[1] == 1 and not complete:        # one free class: w p (1 - p)
                return Pw * (1.0 - P)
            C = Pw[:, ia] * P[:, ib]
            C *= -1.0
            if not complete:
                on = ia == ib
                C[:, on] += Pw[:, ia[on]]                    # w p_a (1 - p_a)
            return C

        return self._assemble(pair_weights, complete)


# Largest (rows, n, n) array a dense assembly of a factored bound builds at once.
_DENSE_CHUNK_ELEMS = 1 << 22


class LabelBoundCurvature(KroneckerCurvature):
    """The Alg. 1 softmax bound curvature sum_j s_j B_j (x) x_j x_j^T from O(t n) factors.

    B_j = L_j^T diag(w_j) L_j, where (in visiting order) row i of L_j is e_i - m_{i-1}, the label
    vector minus the running mean of Alg. 1 before visiting i. Both L u and L^T v cost O(n) per
    sample through the recurrences of the running mean (rho_i = alpha_i / z_i,
    keep_i = z_{i-1} / z_i = 1 - rho_i, both computed in log space):

        (L u)_i = u_i - s_{i-1},     s_i = s_{i-1} + rho_i (u_i - s_{i-1}),   s_{-1} = 0,
        (L^T v)_k = v_k - rho_k q_k, q_{k-1} = v_k + keep_k q_k,           q_{n-1} = 0,

    so a product costs O(t n d + t n) and no (t, n, n) array exists; ``to_dense`` builds B in
    chunks of rows. ``free`` is the first free class (1 for a model with a reference class 0
    whose scores are fixed at 0: the curvature is then the (1:, 1:) sub-block of each B_j).

    Arrays are class-major, (n, t): ``perm`` (visiting order: sorted position i of sample j is
    label perm[i, j]), ``inv`` (its inverse), ``rho``, ``keep`` and ``w`` (the Alg. 1 weights
    beta(r), multiplied by the sample weights).
    """

    def __init__(self, X, perm, inv, rho, keep, w, free: int = 0):
        self.X = X
        self.perm = perm
        self.inv = inv
        self.rho = rho
        self.keep = keep
        self.w = w
        self.free = int(free)
        self.n_labels = perm.shape[0]
        self.n = self.n_labels - self.free
        self.d = X.shape[1]
        self.reg = 0.0
        p = self.n * self.d
        self.shape = (p, p)
        self._B = None

    # -- O(n) per-sample kernels, class-major --------------------------------------------------
    def _label_rows(self, UT_free: np.ndarray) -> np.ndarray:
        if not self.free:
            return UT_free
        out = np.zeros((self.n_labels, UT_free.shape[1]))
        out[self.free:] = UT_free
        return out

    def _apply(self, UT: np.ndarray) -> np.ndarray:
        """(B_j u_j) for all j, label coordinates (n_labels, t) in and out."""
        Us = np.take_along_axis(UT, self.perm, axis=0)
        n = self.n_labels
        A = np.empty_like(Us)
        s = np.zeros(Us.shape[1])
        rho, keep = self.rho, self.keep
        for i in range(n):
            np.subtract(Us[i], s, out=A[i])
            if i + 1 < n:
                s += rho[i] * A[i]
        A *= self.w
        R = np.empty_like(A)
        q = np.zeros(Us.shape[1])
        for k in range(n - 1, -1, -1):
            np.subtract(A[k], rho[k] * q, out=R[k])
            if k:
                q *= keep[k]
                q += A[k]
        return np.take_along_axis(R, self.inv, axis=0)

    def _diag_labels(self) -> np.ndarray:
        """diag(B_j) for all j, label coordinates (n_labels, t): B_kk = w_k + rho_k^2 e_k with
        e_{k-1} = w_k + keep_k^2 e_k, e_{n-1} = 0 (visiting order)."""
        n = self.n_labels
        D = np.empty_like(self.w)
        e = np.zeros(self.w.shape[1])
        for k in range(n - 1, -1, -1):
            D[k] = self.w[k] + self.rho[k] ** 2 * e
            if k:
                e *= self.keep[k] ** 2
                e += self.w[k]
        return np.take_along_axis(D, self.inv, axis=0)

    def matvec(self, v):
        V = np.asarray(v, dtype=np.float64).reshape(self.n, self.d)
        UT = self._classes_x(V)
        RT = self._apply(self._label_rows(UT))[self.free:]
        out = self._xt_classes(RT).ravel()
        if self.reg:
            out += self.reg * v
        return out

    def _diag_weights(self) -> np.ndarray:
        """(t, n) diagonal of each B_j over the free classes."""
        return self._diag_labels()[self.free:].T

    _block_weights = _diag_weights

    def diagonal(self):
        return self._sq_weights(self._diag_weights()).ravel() + self.reg

    def diagonal_blocks(self):
        if sp.issparse(self.X):
            return None
        blocks = self._grams(self._diag_weights())
        if self.reg:
            idx = np.arange(self.d)
            blocks[:, idx, idx] += self.reg
        return blocks

    # -- explicit B, by chunks of rows ---------------------------------------------------------
    def _B_rows(self, a: int, b: int) -> np.ndarray:
        """B_j (rows a:b, free classes) as a (b - a, n, n) array, from the factors."""
        n = self.n_labels
        t = b - a
        perm = self.perm[:, a:b].T
        rho = self.rho[:, a:b].T
        keep = self.keep[:, a:b].T
        # M[i, k] = alpha_k / z_{i-1} = rho_k prod_{k < m < i} keep_m (visiting order, k < i)
        M = np.zeros((t, n, n))
        run = np.zeros((t, n))
        for i in range(1, n):
            run *= keep[:, i - 1, None]
            run[:, i - 1] = rho[:, i - 1]
            M[:, i, :] = run
        L = np.eye(n)[None] - M
        L = np.take_along_axis(L, np.argsort(perm, axis=1)[:, None, :], axis=2)
        B = np.matmul((L * self.w[:, a:b].T[:, :, None]).transpose(0, 2, 1), L)
        return B[:, self.free:, self.free:]

    @property
    def B(self) -> np.ndarray:
        if self._B is None:
            self._B = self._B_rows(0, self.X.shape[0])
        return self._B

    # -- factors: rank-one terms, the Kronecker approximation ----------------------------------
    def label_vectors(self) -> np.ndarray:
        """sqrt(w_i) l_i for every sample and visited label (sample weights inside w), as
        (t, n_labels, n): l_i = e_{label_i} - m_{i-1} over the free classes,
        m_i = m_{i-1} + rho_i l_i, vectorized over samples (sum_i over a sample gives B_j).
        The ridge ``reg`` is not part of them."""
        perm, rho, w = self.perm, self.rho, self.w
        n, t = perm.shape
        free = self.free
        cols = np.arange(t)
        m = np.zeros((t, n))
        out = np.empty((t, n, n - free))
        for i in range(n):
            L = -m
            L[cols, perm[i]] += 1.0
            out[:, i] = np.sqrt(np.maximum(w[i], 0.0))[:, None] * L[:, free:]
            m += rho[i][:, None] * L
        return out

    def design(self) -> np.ndarray:
        """The dense design the Gram products are taken of ([X, 1] with an intercept)."""
        X = self.X.toarray() if sp.issparse(self.X) else np.asarray(self.X)
        if self.intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        return X

    def label_weight_matrix(self) -> np.ndarray:
        """sum_j s_j B_j over the free classes, (n, n): the label factor of the Kronecker
        approximation (sum_j s_j B_j) (x) (sum_j x_j x_j^T / t). One Gram product of the
        weighted label vectors (B_j = sum_i w_i l_i l_i^T)."""
        L = self.label_vectors()
        L = L.reshape(-1, L.shape[-1])
        return L.T @ L

    def rank_one_terms(self) -> np.ndarray:
        """R of shape (m, p), one row r = sqrt(s_j w_i) (l_i (x) x_j) per sample j and visited
        label i with a positive weight (sample-major, labels in visiting order), so that
        R^T R is this curvature without its ridge. Dense; meant for small p."""
        L, X = self.label_vectors(), self.design()
        t, n, k = L.shape
        out = (L[:, :, :, None] * X[:, None, None, :]).reshape(t * n, k * X.shape[1])
        return out[(self.w.T > 0).reshape(-1)]

    def assemble(self) -> np.ndarray:
        """With one free class (binary with a reference class) and no ridge, one weighted
        Gram product [X, 1]^T diag(b_j) [X, 1] (b_j = s_j B_j, 1 x 1); else ``to_dense``."""
        if self.n == 1 and not self.reg:
            if self.n_labels == 2 and not sp.issparse(self.X):
                # B_j = w_j (the second visited label's weight, whatever the order): the
                # bordered Gram of _grams, no copy of X with its ones column
                return self._grams(self.w[1][:, None])[0]
            X = self.design()
            b = self._B_rows(0, X.shape[0])[:, 0, 0]
            return (X * b[:, None]).T @ X
        return self.to_dense()

    def to_dense(self):
        t = self.X.shape[0]
        if self.n_labels == 2 and not sp.issparse(self.X):
            # Two labels: B_j = w_j [[1, -1], [-1, 1]] (w_j the second visited label's
            # weight), whatever the order; no (t, 2, 2) array, one Gram product.
            w = self.w[1]
            if self.free:
                out = self._grams(w[:, None])[0]
                out.flat[:: self.d + 1] += self.reg
                return out
            return self._assemble(lambda ia, ib: -w[:, None], True)
        step = max(1, _DENSE_CHUNK_ELEMS // (self.n_labels ** 2))
        out = None
        for a in range(0, t, step):
            rows = slice(a, min(t, a + step))
            part = KroneckerCurvature(self.X if step >= t else self.X[rows],
                                      self._B_rows(a, rows.stop))
            if self.intercept:
                part = part.with_intercept()
            if out is None:
                out = part.to_dense()
            else:
                part.add_to_dense(out)
        if self.reg:
            out.flat[:: out.shape[0] + 1] += self.reg
        return out
