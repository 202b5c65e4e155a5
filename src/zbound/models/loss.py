"""Data terms: losses summed over rows, evaluated as a map over row chunks and a reduce.

A loss is sum_j s_j l_j(theta) over t rows (s_j >= 0 sample weights). Every quantity a solver
needs is a sum over rows, so each is computed chunk by chunk (a map) and summed (a reduce):
value, gradient, the Hessian operator (a sum of chunk operators) and the Alg. 1 majorizer (a sum
of chunk majorizers). No call holds more than one chunk's temporaries, and the same shape lets a
distributed backend run the map on workers. ``subset(rows)`` gives the loss on a subset of the
rows (mini-batches), ``reweighted(s)`` the same rows with other weights (EM responsibilities).

- :class:`SoftmaxLoss`: softmax / logistic log-loss, multinomial (all classes free) or with a
  reference class whose scores are fixed at 0 (binary logistic regression is the two-class
  case), sample weights, dense or CSR X.
- :class:`LogLinearLoss`: conditional log-linear model over explicit configurations.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from zbound.bounds.curvature import DenseCurvature, SoftmaxCurvature, SumCurvature, weighted_grams
from zbound.bounds.enumerate import quadratic_bound
from zbound.bounds.multinomial import label_bound_curvature, label_bound_factors
from zbound.models.base import Majorizer
from zbound.models.softmax import class_major_product, class_major_scores, logsumexp_classes
from zbound.utils.linalg import mirror_lower, row_block, single_gram
from zbound.utils.logspace import log_softmax
from zbound.utils.validation import check_design

# Rows of G per product in SoftmaxLoss.bound_gram (a float64 temporary of _GRAM_BLOCK x d)
_GRAM_BLOCK = 64

# Default chunk: rows whose largest per-row temporary (n x n for a dense bound assembly,
# n x d for scores and products) fills about this many float64 numbers (64 MB).
_CHUNK_ELEMS = 1 << 23


def check_sample_weight(sample_weight, t: int) -> np.ndarray | None:
    """(t,) float64 weights >= 0, or None for unit weights; ValueError names the problem."""
    if sample_weight is None:
        return None
    sw = np.asarray(sample_weight, dtype=np.float64)
    if sw.ndim == 0:
        sw = np.full(t, float(sw))
    if sw.shape != (t,):
        raise ValueError(f"sample_weight must have shape ({t},), got {sw.shape}")
    if not np.isfinite(sw).all():
        raise ValueError("sample_weight contains NaN or inf")
    if (sw < 0).any():
        raise ValueError("sample_weight must be non-negative")
    return sw


#: rows x the largest absolute entry of X above which the loss's sums (gradient ~ rows x magnitude,
#: curvature and its norms ~ (rows x magnitude)^2) can leave float64's range: rejected
_MAX_ROWS_TIMES_MAGNITUDE = 1e150
#: the same for float32 (SoftmaxLoss.single_precision): None above it
_MAX_SINGLE_ROWS_TIMES_MAGNITUDE = 1e30
#: SingleSoftmaxLoss without a copy of X converts row blocks of about this many bytes (float32),
#: or of half the size of one (k, t) float64 array of the evaluation if that is larger (a block
#: that size does not raise the fit's peak, which those arrays set), up to the second size
#: (beyond it the blocks fall out of the caches)
_SINGLE_BLOCK_BYTES = 1 << 19
_SINGLE_MAX_BLOCK_BYTES = 1 << 21
_SINGLE_MIN_BLOCK_ROWS = 64
# rows per block of the binary kernel's temporaries (64 KB in float64)
_BINARY_BLOCK = 8192


def _magnitude(X) -> float:
    """The largest absolute entry of a finite dense or CSR X, with no (t, d) temporary."""
    if sp.issparse(X):
        return max(float(X.data.max()), -float(X.data.min())) if X.nnz else 0.0
    return max(float(X.max()), -float(X.min()))


def check_design_magnitude(X, sample_weight=None):
    """(X, bound): ``check_design(X, nonempty=True)`` and an upper bound on its largest
    absolute entry. For a dense C-contiguous float64 X, one pass over it: the sum of squares by one
    dot, finite exactly when every entry is (NaN and inf propagate; it overflows only for
    entries beyond 1e154, which then take the full check), its square root the bound; no
    (t, d) boolean temporary (as large as an eighth of X: 3.4 MB on Adult). Otherwise the
    full check and the exact magnitude. Entries so large that the gradient or the curvature
    would overflow are a ValueError, not a silent inf (decided on the exact magnitude); with
    ``sample_weight``, the rows count by their weights (weights summing to 1e200 overflow the
    sums as 1e200 rows would)."""
    bound = None
    if type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2 and X.size \
            and X.flags.c_contiguous:
        r = X.reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):
            ss = float(np.dot(r, r))
        if math.isfinite(ss):
            bound = math.sqrt(ss)
    if bound is None:
        X = check_design(X, nonempty=True)
        bound = _magnitude(X)
    if bound * X.shape[0] > _MAX_ROWS_TIMES_MAGNITUDE:
        bound = _magnitude(X)
        if bound * X.shape[0] > _MAX_ROWS_TIMES_MAGNITUDE:
            raise ValueError(
                f"X has entries of magnitude {bound:.3g}: over its {X.shape[0]} rows the "
                f"loss's gradient and curvature sums would overflow float64 (rows x magnitude "
                f"must stay below {_MAX_ROWS_TIMES_MAGNITUDE:.0e}); rescale the features, "
                "e.g. with sklearn.preprocessing.StandardScaler")
    sw = check_sample_weight(sample_weight, X.shape[0])
    if sw is not None:
        with np.errstate(over="ignore"):        # inf: refused below
            total = float(sw.sum())
        if total * max(bound, 1.0) > _MAX_ROWS_TIMES_MAGNITUDE and \
                total * max(_magnitude(X), 1.0) > _MAX_ROWS_TIMES_MAGNITUDE:
            raise ValueError(
                f"sample_weight sums to {total:.3g}: with X's entries the loss's gradient and "
                f"curvature sums would overflow float64 (total weight x max(1, magnitude of "
                f"X) must stay below {_MAX_ROWS_TIMES_MAGNITUDE:.0e}); rescale sample_weight "
                "(weights / c with C x c fit the same model)")
    return X, bound


def check_chunk_size(chunk_size, t: int, per_row: int) -> int:
    """Rows per chunk: ``chunk_size`` if given (an integer >= 1), else a default that keeps a
    chunk's largest temporary near 64 MB; never more than t."""
    if chunk_size is None:
        return max(1, min(t, _CHUNK_ELEMS // max(1, per_row)))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer) \
            or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1 or None, got {chunk_size!r}")
    return int(min(chunk_size, max(t, 1)))


def _reduce_curvature(parts):
    if len(parts) == 1:
        return parts[0]
    if all(type(p) is DenseCurvature for p in parts):
        return DenseCurvature(sum(p.matrix for p in parts), sum(p.reg for p in parts))
    return SumCurvature(*parts)


class Rows:
    """A chunk record of :class:`SoftmaxLoss`: rows ``X``, weights ``sw`` (or None) and class
    indices ``y`` (None for soft labels, whose ``observed`` is given); ``at`` and
    ``observed`` are built on first use by the loss (:meth:`SoftmaxLoss._at`,
    :meth:`SoftmaxLoss._observed`) and kept."""

    __slots__ = ("X", "sw", "y", "at", "observed")

    def __init__(self, X, sw, y, observed=None):
        self.X, self.sw, self.y = X, sw, y
        self.at = None
        self.observed = observed


class ChunkedLoss:
    """Map over row chunks and reduce; subclasses implement the per-chunk kernels
    ``_value(theta, c)``, ``_value_grad(theta, c)``, ``_value_grad_hessian(theta, c)`` and
    ``_majorizer(theta, c, order)`` (the last two return (value, grad, Curvature)) for a chunk
    record ``c`` of ``self._chunks``. Every call returns new arrays and operators, which the
    caller owns (an objective folds its penalties into them in place)."""

    n_params: int
    n_samples: int
    chunk_size: int
    _chunks: list

    @property
    def n_chunks(self) -> int:
        return len(self._chunks)

    def value(self, theta: np.ndarray) -> float:
        chunks = self._chunks
        if len(chunks) == 1:
            return self._value(theta, chunks[0])
        return float(sum(self._value(theta, c) for c in chunks))

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        chunks = self._chunks
        if len(chunks) == 1:
            return self._value_grad(theta, chunks[0])
        f, g = self._value_grad(theta, chunks[0])
        for c in chunks[1:]:
            fc, gc = self._value_grad(theta, c)
            f += fc
            g += gc
        return f, g

    def value_grad_hessian(self, theta: np.ndarray):
        chunks = self._chunks
        if len(chunks) == 1:
            return self._value_grad_hessian(theta, chunks[0])
        f, g, H = self._value_grad_hessian(theta, chunks[0])
        parts = [H]
        for c in chunks[1:]:
            fc, gc, Hc = self._value_grad_hessian(theta, c)
            f += fc
            g += gc
            parts.append(Hc)
        return f, g, _reduce_curvature(parts)

    def hessian(self, theta: np.ndarray):
        return self.value_grad_hessian(theta)[2]

    def value_grad_dense_hessian(self, theta: np.ndarray):
        """(value, gradient, the exact Hessian as a dense (p, p) array): what a Newton step
        with a dense factorization needs, without the operator of :meth:`value_grad_hessian`
        where a chunk kernel forms the matrix directly (``_value_grad_dense_hessian``)."""
        chunks = self._chunks
        f, g, H = self._value_grad_dense_hessian(theta, chunks[0])
        for c in chunks[1:]:
            fc, gc, Hc = self._value_grad_dense_hessian(theta, c)
            f += fc
            g += gc
            H += Hc
        return f, g, H

    def _value_grad_dense_hessian(self, theta, c):
        f, g, H = self._value_grad_hessian(theta, c)
        return f, g, H.to_dense()

    def majorizer(self, theta: np.ndarray, order: str = "descending") -> Majorizer:
        """Sum over chunks of the Alg. 1 bounds on every row's log Z: a quadratic upper bound
        on the loss, exact in value and gradient at theta."""
        theta = np.asarray(theta, dtype=np.float64)
        chunks = self._chunks
        f, g, C = self._majorizer(theta, chunks[0], order)
        if len(chunks) > 1:
            parts = [C]
            for c in chunks[1:]:
                fc, gc, Cc = self._majorizer(theta, c, order)
                f += fc
                g += gc
                parts.append(Cc)
            C = _reduce_curvature(parts)
        return Majorizer(theta, float(f), g, C)


class SoftmaxLoss(ChunkedLoss):
    """sum_j s_j [log sum_a exp(S_ja) - S_{j, y_j}], the softmax (multinomial logistic) loss.

    theta = vec(W), W of shape (k, d) row-major. Multinomial: k = n_classes, S = X W^T.
    With ``reference_class=True``: k = n_classes - 1 and S = [0, X W^T] (class 0 is the
    reference); for two classes that is exactly scikit-learn's binary logistic loss. The
    Alg. 1 bound on the label vectors restricted to the free classes majorizes the restricted
    loss.

    Parameters
    ----------
    X : (t, d) array or CSR matrix
    y : (t,) integer class indices in [0, n_classes)
    n_classes : int, default max(y) + 1 (>= 2)
    sample_weight : (t,) >= 0 or None (unit weights)
    reference_class : bool, default False
    chunk_size : rows per chunk, default: a chunk's largest temporary near 64 MB
    fit_intercept : bool, default False
        Scores X W^T + b with an intercept per class, as if X had a last column of ones, which
        is never formed (scores add b, the gradient's intercept entries are row sums, the
        curvature operators handle the implicit column): theta = vec([W, b]), the intercept
        the last of the d + 1 entries of each class. Equal to appending the column, without
        the copy of X.
    """

    def __init__(self, X, y, n_classes: int | None = None, sample_weight=None,
                 reference_class: bool = False, chunk_size: int | None = None,
                 fit_intercept: bool = False):
        X, self._magnitude_bound = check_design_magnitude(X, sample_weight)
        self._magnitude = None
        y = np.asarray(y)
        t = X.shape[0]
        if y.shape != (t,):
            raise ValueError(f"y must have shape ({t},) to match X, got {y.shape}")
        if y.dtype.kind not in "iu":
            raise TypeError(f"y must hold integer class indices, got dtype {y.dtype}")
        lo, hi = int(y.min()), int(y.max())
        n = hi + 1 if n_classes is None else int(n_classes)
        if lo < 0 or hi >= n:
            raise ValueError(f"class indices must lie in [0, {n}), got [{lo}, {hi}]")
        if n < 2:
            raise ValueError("softmax regression needs at least 2 classes")
        self.X = X
        self.y = y.astype(np.intp, copy=False)
        self.n_classes = n
        self.reference_class = bool(reference_class)
        self.free = 1 if self.reference_class else 0
        self.k = n - self.free
        self.fit_intercept = bool(fit_intercept)
        self.d = X.shape[1] + self.fit_intercept          # parameters per class
        self.n_features = X.shape[1]
        self.n_params = self.k * self.d
        self.n_samples = t
        self.sample_weight = check_sample_weight(sample_weight, t)
        # a chunk's largest temporary per row: its (n, n) bound matrices, or its scores and
        # its row of X (for CSR, the row's stored entries: chunks sized by the width d would
        # split 20 000 sparse rows of 30 000 columns into 72 chunks, each product a Python
        # loop over them)
        width = -(-X.nnz // max(t, 1)) + self.fit_intercept if sp.issparse(X) else self.d
        self.chunk_size = check_chunk_size(chunk_size, t, max(n * n, n + width))
        self._chunks = [self._chunk(a, min(t, a + self.chunk_size))
                        for a in range(0, t, self.chunk_size)]

    def _chunk(self, a: int, b: int) -> Rows:
        whole = a == 0 and b == self.n_samples
        sw = self.sample_weight
        if sw is not None and not whole:
            sw = sw[a:b]
        return Rows(row_block(self.X, a, b), sw, self.y if whole else self.y[a:b])

    def _at(self, c: Rows):
        """Where the rows of chunk ``c`` observe their class (built on first use, kept):
        binary (a reference class and one free class), a sign per row, +1 for class 0 and -1
        for class 1 (a multiply costs a quarter of the gather and scatter over the rows of
        class 1 it replaces); else the flat indices of S^T[y_j, j] in the class-major
        scores."""
        if c.at is None:
            c.at = self._positions_of(c.y)
        return c.at

    def _positions_of(self, y, dtype=np.float64):
        if self.free and self.k == 1:               # binary: the sign of z = -+s per row
            sgn = np.ones(y.shape[0], dtype=dtype)
            sgn[y == 1] = -1.0
            return sgn
        # intp: NumPy's fancy indexing converts other index types on every call (slower)
        at = y.astype(np.intp)
        at *= y.shape[0]
        at += np.arange(y.shape[0])
        return at

    def _observed(self, c: Rows) -> np.ndarray:
        """sum_j s_j e_{y_j} (x) x_j over the free classes (= theta -> sum_j s_j S_{j, y_j}):
        built on first use and kept. The value and gradient need none of it (they take the
        residual form); the majorizers and the Hessian sweeps do."""
        if c.observed is None:
            X, sw, y = c.X, c.sw, c.y
            rows = X.shape[0]
            Y = np.zeros((self.n_classes, rows))
            Y[y, np.arange(rows)] = 1.0 if sw is None else sw
            c.observed = class_major_product(Y[self.free:], X, self.fit_intercept).ravel()
        return c.observed

    @property
    def magnitude(self) -> float:
        """The largest absolute entry of X (computed on first use)."""
        if self._magnitude is None:
            self._magnitude = _magnitude(self.X)
        return self._magnitude

    # -- constructors of related losses --------------------------------------------------------
    def subset(self, rows) -> SoftmaxLoss:
        """The same loss on the rows ``rows`` (indices, a slice or a boolean mask)."""
        sw = None if self.sample_weight is None else self.sample_weight[rows]
        return SoftmaxLoss(self.X[rows], self.y[rows], self.n_classes, sw,
                           self.reference_class, None, self.fit_intercept)

    def reweighted(self, sample_weight) -> SoftmaxLoss:
        """The same rows with other sample weights (e.g. EM responsibilities)."""
        return SoftmaxLoss(self.X, self.y, self.n_classes, sample_weight,
                           self.reference_class, self.chunk_size, self.fit_intercept)

    # -- per-chunk kernels, scores class-major (n_classes, rows) --------------------------------
    def _scores_t(self, theta, X):
        ST = class_major_scores(X, theta.reshape(self.k, self.d), self.fit_intercept)
        if self.free:
            ST = np.vstack([np.zeros((1, ST.shape[1]), dtype=ST.dtype), ST])
        return ST

    def _data_value(self, theta, lse, sw, observed):
        total = float(lse.sum()) if sw is None else float(sw @ lse)
        return total - float(theta @ observed)

    def _binary_scores(self, theta, X):
        """Scores s^T = w X^T (+ b), (1, t), of the one free class of a two-class loss with a
        reference class (binary logistic regression): log Z = log(1 + e^s) and p = expit(s)
        need no (2, t) score matrix."""
        return class_major_scores(X, theta.reshape(1, self.d), self.fit_intercept)

    def _binary_rows(self, s, sgn, grad: bool, keep_p: bool):
        """The binary rows' losses log(1 + e^z), z = sgn s (sgn = +1 on rows of class 0, -1
        on rows of class 1, in the dtype of s: :meth:`_at`), and, with ``grad``, the
        residuals p - y = sgn expit(z) written over ``s``; (losses, P or None), P = expit(s)
        with ``keep_p``.

        e = exp(-|s|) once per row, |s| capped where e is far below the dtype's resolution
        but not denormal (a denormal e would slow every later pass); the loss is max(z, 0) +
        log1p(e), and the residual sgn expit(z) = sgn (1 or e) / u, u = 1 + e, the small one
        accurate to the last digit: one exp and one logarithm per row, a third of the time
        of logaddexp and expit, which run scalar. In float32, log1p(e) = log(u) e / (u - 1)
        (exact to a few roundings; e itself where u rounds to 1): NumPy's float32 log1p is
        scalar without AVX-512 (several times its log there), where float64's costs about its
        log. Blocks of
        ``_BINARY_BLOCK`` rows keep the temporaries in cache and the peak memory at the
        losses and the scores (the fit's peak on adult is a few such arrays)."""
        one = s.dtype.type(1.0)
        double = s.dtype == np.float64
        cap = s.dtype.type(700.0 if double else 80.0)
        t = s.shape[0]
        loss = np.empty_like(s)
        P = np.empty_like(s) if keep_p else None
        for a in range(0, t, _BINARY_BLOCK):
            sb, lb = s[a:a + _BINARY_BLOCK], loss[a:a + _BINARY_BLOCK]
            gb = sgn[a:a + _BINARY_BLOCK]
            e = np.abs(sb)
            np.minimum(e, cap, out=e)
            np.negative(e, out=e)
            np.exp(e, out=e)
            u = e + one if grad or not double else None
            if double:
                np.log1p(e, out=lb)
                z = np.multiply(sb, gb)                 # z = sgn s
            else:
                z = u - one
                np.log(u, out=lb)
                lb *= e
                np.divide(lb, z, out=lb, where=z > 0)
                np.copyto(lb, e, where=z <= 0)
                np.multiply(sb, gb, out=z)
            if grad:
                if keep_p:                              # p = expit(s)
                    Pb = P[a:a + _BINARY_BLOCK]
                    np.maximum(e, sb >= 0, out=Pb)      # 1 where s >= 0, else e <= 1
                    Pb /= u
                # 1 where z >= 0, else e (a maximum: copyto with a random mask is slower)
                np.maximum(e, z >= 0, out=e)
                np.divide(e, u, out=sb)                 # expit(z)
                sb *= gb                                # R = p - y
            np.maximum(z, 0, out=z)
            lb += z
        return loss, P

    def _residual_rows(self, theta, X, at, grad: bool = True, keep_p: bool = False):
        """(row losses (t,), residuals R = P - Y over the free classes (k, t), restore), in
        the dtype of the scores (float64 here; float32 in :class:`SingleSoftmaxLoss`); ``at``
        from :meth:`_at`. Without ``grad`` R is None. With ``keep_p``, ``restore()`` gives
        P^T of the free classes once R has been used (multiclass: R turned back into P^T in
        place, exactly, with no (k, t) copy); else None.

        The residual form: each row's loss is log sum_a exp(s_a - s_y) and the gradient
        (P - Y) X, never a difference of large sums (sum log Z - theta^T Y X, P X - Y X). An
        error in the scores of the row's own class then cancels, and the value and gradient
        stay accurate relative to themselves when rows are fitted well (large weights, nearly
        separable classes), where the differences lose digits; the (n_classes, t) one-hot Y
        and its product with X are never formed."""
        if self.free and self.k == 1:               # binary: loss log(1 + e^z), z = -+s
            R = self._binary_scores(theta, X)
            loss, P = self._binary_rows(R[0], at, grad, keep_p)
            restore = (lambda: P[None]) if keep_p else None     # noqa: E731
            return loss, (R if grad else None), restore
        ST = self._scores_t(theta, X)
        flat = ST.reshape(-1)
        sy = np.take(flat, at)
        ST -= sy                                        # s_a - s_y
        del sy
        one = ST.dtype.type(1.0)
        if ST.size and ST.max() > (80.0 if ST.dtype == np.float32 else 700.0) - \
                math.log(self.n_classes):
            # a row scores another class so far above its own that e^(s_a - s_y) could
            # overflow: the same with the largest score as the pivot
            return self._residual_rows_by_max(ST, flat, at, grad, keep_p)
        flat[at] = -np.inf
        np.exp(ST, out=ST)                              # e^(s_a - s_y), 0 at a = y
        others = ST.sum(axis=0)
        # log(1 + sum_{a != y} e^(s_a - s_y)) by log1p: accurate to the last digit when the
        # row is fitted well (the sum below 1e-16, where log of a row sum would give 0)
        lse = np.log1p(others)
        if not grad:
            return lse, None, None
        total = others + one                            # the row sums
        ST /= total                                     # P^T, 0 at the observed classes
        py = np.divide(one, total) if keep_p else None  # p_y
        others /= total
        np.negative(others, out=others)                 # p_y - 1 = -sum_{a != y} p_a
        del total
        return (lse, *self._residuals(ST, flat, at, others, py))

    def _residuals(self, P, flat, at, r_y, py):
        """(R, restore): R = P - Y over the free classes from P^T (the rows of ``flat``,
        0 at the observed classes) and r_y = p_y - 1; with ``py`` (p_y), ``restore()`` puts
        it back and gives P^T; else restore is None."""
        flat[at] = r_y
        restore = None
        if py is not None:
            def restore():
                flat[at] = py
                return P[self.free:]
        return P[self.free:], restore

    def _residual_rows_by_max(self, D, flat, at, grad, keep_p):
        """:meth:`_residual_rows` from D = S - s_y (rows of ``flat``), pivoting on each row's
        largest entry instead of its own class (no overflow at any score)."""
        m = D.max(axis=0)                               # max_a s_a - s_y >= 0
        D -= m
        np.exp(D, out=D)                                # e^(s_a - max)
        ey = np.take(flat, at)
        flat[at] = 0.0
        others = D.sum(axis=0)                          # sum over a != y
        py = ey / (ey + others) if grad and keep_p else None
        top = m == 0.0                                  # y has the largest score
        ey += others                                    # the row sums
        if grad:
            D /= ey                                     # P^T, 0 at the observed classes
        others /= ey                                    # q = sum_{a != y} p_a = 1 - p_y
        lse = np.log(ey, out=ey)
        lse += m                                        # log sum_a exp(s_a - s_y)
        del m
        np.negative(others, out=others)                 # -q = p_y - 1
        np.log1p(others, out=lse, where=top)            # -log1p(-q) where y is on top
        np.negative(lse, out=lse, where=top)
        if not grad:
            return lse, None, None
        return (lse, *self._residuals(D, flat, at, others, py))

    def _value(self, theta, c):
        loss = self._residual_rows(theta, c.X, self._at(c), grad=False)[0]
        return float(loss.sum()) if c.sw is None else float(c.sw @ loss)

    def _grad_from(self, PT, X, sw, observed):
        g = class_major_product(PT if sw is None else PT * sw, X, self.fit_intercept).ravel()
        g -= observed
        return g

    def _value_grad_p(self, theta, c, keep_p: bool = True):
        """(value, gradient, P^T of the free classes or None without ``keep_p``)."""
        X, sw = c.X, c.sw
        loss, R, restore = self._residual_rows(theta, X, self._at(c), keep_p=keep_p)
        if sw is None:
            f, Rw = float(loss.sum()), R
        else:
            f = float(sw @ loss)
            Rw = R * sw if keep_p else np.multiply(R, sw, out=R)
        g = class_major_product(Rw, X, self.fit_intercept).ravel()
        return f, g, (restore() if keep_p else None)

    def _value_grad(self, theta, c):
        f, g, _ = self._value_grad_p(theta, c, keep_p=False)
        return f, g

    def _value_grad_hessian(self, theta, c):
        """Exact Hessian sum_j s_j (diag p_j - p_j p_j^T) (x) x_j x_j^T (free classes)."""
        f, g, PT = self._value_grad_p(theta, c)
        X, sw = c.X, c.sw
        H = SoftmaxCurvature(X, PT.T, 0.0, weights=sw, complete=not self.free)
        return f, g, H.with_intercept() if self.fit_intercept else H

    def _value_grad_dense_hessian(self, theta, c):
        """Two classes on dense rows: the Hessian sum_j s_j p_j (1 - p_j) xa_j xa_j^T as one
        weighted Gram matrix (:func:`~zbound.bounds.curvature.weighted_grams`), with no
        curvature operator between (on small problems the operator costs a good part of the
        evaluation); else the operator's dense form."""
        X, sw = c.X, c.sw
        if not (self.free and self.k == 1) or sp.issparse(X) or X.dtype != np.float64:
            return super()._value_grad_dense_hessian(theta, c)
        # the fused kernel is this class's value and gradient: not for a subclass that
        # changes them (soft labels), nor beyond one block of rows (no gain there)
        if X.shape[0] > _BINARY_BLOCK or \
                type(self)._value_grad_p is not SoftmaxLoss._value_grad_p:
            f, g, PT = self._value_grad_p(theta, c)
            p = PT[0]
            h = p - p * p
        else:
            # one block: the kernel of _binary_rows in a dozen whole-array calls; the
            # curvature p (1 - p) = e / (1 + e)^2, e = exp(-|s|), exact at any score
            fi = self.fit_intercept
            s = X @ theta[:-1] if fi else X @ theta
            if fi:
                s += theta[-1]
            sgn = self._at(c)
            e = np.abs(s)
            np.minimum(e, 700.0, out=e)
            np.negative(e, out=e)
            np.exp(e, out=e)
            u = e + 1.0
            z = np.multiply(s, sgn, out=s)                  # z = sgn s: the loss log(1 + e^z)
            loss = np.log1p(e)
            loss += np.maximum(z, 0.0)
            r = np.maximum(e, z >= 0.0)
            r /= u
            r *= sgn                                        # p - y = sgn expit(z)
            h = np.divide(e, u, out=e)
            h /= u
            if sw is None:
                f = float(loss.sum())
            else:
                f = float(sw @ loss)
                r *= sw
            if fi:      # np.append would cost a tenth of the step at this size
                g = np.empty(X.shape[1] + 1)
                np.matmul(r, X, out=g[:-1])
                g[-1] = r.sum()
            else:
                g = r @ X
        if sw is not None:
            h *= sw
        return f, g, weighted_grams(X, h[:, None], self.fit_intercept)[0]

    def _majorizer(self, theta, c, order):
        X, sw, observed = c.X, c.sw, self._observed(c)
        S = np.ascontiguousarray(self._scores_t(theta, X).T)
        log_z, P, factors = label_bound_factors(S, order)
        f = self._data_value(theta, log_z, sw, observed)
        g = self._grad_from(np.ascontiguousarray(P[:, self.free:].T), X, sw, observed)
        C = label_bound_curvature(X, factors, sw, self.free)
        return f, g, C.with_intercept() if self.fit_intercept else C

    def lowrank_majorizer(self, theta: np.ndarray, order: str = "descending", rank: int = 10,
                          rule: str = "exact") -> Majorizer:
        """The Alg. 1 majorizer with its curvature kept low-rank plus diagonal (Alg. 4 of
        Jebara & Choromanska 2012 inside Alg. 2): value and gradient exact, curvature a
        :class:`~zbound.bounds.lowrank.LowRankCurvature` that dominates the full one for the
        rules "exact" (default) and "sgb" ("paper" is not always a bound). The rank-one terms of
        every row stream through one accumulator, chunk after chunk (memory O(p rank) plus a
        chunk); the result depends on the row order, and is a bound for any chunking."""
        from zbound.bounds.lowrank import LowRankAccumulator, accumulate_softmax

        theta = np.asarray(theta, dtype=np.float64)
        acc = LowRankAccumulator(self.n_params, rank, rule)
        f = 0.0
        g = np.zeros(self.n_params)
        for c in self._chunks:
            X, sw, observed = c.X, c.sw, self._observed(c)
            S = np.ascontiguousarray(self._scores_t(theta, X).T)
            log_z, P, factors = label_bound_factors(S, order)
            f += self._data_value(theta, log_z, sw, observed)
            g += self._grad_from(np.ascontiguousarray(P[:, self.free:].T), X, sw, observed)
            accumulate_softmax(acc, X, factors, sw, self.free, self.fit_intercept)
        return Majorizer(theta, float(f), g, acc.curvature())

    def bound_gram(self, max_rows: int | None = None, dtype=np.float64) -> np.ndarray:
        """G = sum_j s_j xa_j xa_j^T, (d, d) (xa_j = [x_j, 1] with ``fit_intercept``, the
        column of ones implicit): the data factor of Boehning's fixed curvature
        (I_k - 1 1^T / n_classes) / 2 (x) G, which bounds the loss's Hessian everywhere (two
        classes with a reference: G / 4). Built chunk by chunk (dense: one GEMM per chunk;
        sparse: X^T diag(s) X), never a copy of X. With ``max_rows`` below the number of rows,
        an estimate from every m-th row (m = ceil(t / max_rows)), scaled by the total weight
        over the sampled weight (then no longer a bound: for preconditioning). ``dtype``: of
        the result (float32 halves it for a preconditioner's factor); dense X is multiplied in
        float64 blocks of ``_GRAM_BLOCK`` rows of G (the lower triangle, then mirrored), so
        no second (d, d) array is formed."""
        d, dx = self.d, self.n_features
        chunks, scale = self._gram_chunks(max_rows)
        if np.dtype(dtype) == np.float32 and not sp.issparse(self.X):
            return self._bound_gram_single(chunks, scale)
        G = np.zeros((d, d), dtype=dtype)
        for X, sw in chunks:
            if sp.issparse(X):
                Xw = X if sw is None else sp.csr_matrix(X.multiply(sw[:, None]))
                G[:dx, :dx] += (X.T @ Xw).toarray()
                col = np.asarray(Xw.sum(axis=0)).ravel()
            else:
                for a in range(0, dx, _GRAM_BLOCK):
                    b = min(dx, a + _GRAM_BLOCK)
                    Xw = X[:, a:b] if sw is None else X[:, a:b] * sw[:, None]
                    G[a:b, :b] += Xw.T @ X[:, :b]                # lower triangle, by blocks
                    G[:a, a:b] = G[a:b, :a].T
                col = X.sum(axis=0) if sw is None else sw @ X
            if self.fit_intercept:
                G[:dx, dx] += col
                G[dx, dx] += X.shape[0] if sw is None else float(sw.sum())
        if self.fit_intercept:
            G[dx, :dx] = G[:dx, dx]
        if scale != 1.0:
            G *= scale
        return G

    def _gram_chunks(self, max_rows: int | None) -> tuple[list, float]:
        """The (X, s) of every chunk for :meth:`bound_gram`: all rows, or with ``max_rows``
        below the number of rows every m-th row of each chunk (m = ceil(t / max_rows)); and
        the factor (total weight / sampled weight, 1 for all rows) that scales their Gram
        matrix to the whole data's."""
        step = 1
        if max_rows is not None and self.n_samples > max_rows:
            step = -(-self.n_samples // int(max_rows))
        if step == 1:
            return [(c.X, c.sw) for c in self._chunks], 1.0
        chunks = []
        total = sampled = 0.0
        for c in self._chunks:
            X, sw = c.X, c.sw
            total += X.shape[0] if sw is None else float(sw.sum())
            X = X[::step]
            sw = None if sw is None else sw[::step]
            sampled += X.shape[0] if sw is None else float(sw.sum())
            chunks.append((X, sw))
        return chunks, (total / sampled if sampled > 0.0 else 1.0)

    def _bound_gram_single(self, chunks: list, scale: float) -> np.ndarray:
        """:meth:`bound_gram` in float32 for dense X (a preconditioner's metric):
        :func:`~zbound.utils.linalg.single_gram` chunk by chunk into one (d, d) array whose
        transpose is the result once mirrored (no second (d, d) array)."""
        acc = None
        for X, sw in chunks:
            acc = single_gram(X, self.fit_intercept, sw, acc)
        G = mirror_lower(acc).T         # C-ordered (acc is Fortran-ordered and symmetric)
        if scale != 1.0:
            G *= scale
        return G

    def single_precision(self, copy: bool = True) -> SingleSoftmaxLoss | None:
        """The same loss evaluated in float32 (:class:`SingleSoftmaxLoss`: value and gradient
        only), from a float32 copy of X (half X's memory more) or, with ``copy=False``, from
        row blocks of X converted at every evaluation (one block's memory, each block's
        scores and gradient from the same cached rows); None where float32 cannot hold X
        (entries beyond its range)."""
        if self._magnitude_bound * self.n_samples > _MAX_SINGLE_ROWS_TIMES_MAGNITUDE and \
                self.magnitude * self.n_samples > _MAX_SINGLE_ROWS_TIMES_MAGNITUDE:
            return None
        return SingleSoftmaxLoss(self, self.X.astype(np.float32) if copy else None)

    def predict_proba(self, theta: np.ndarray, X=None) -> np.ndarray:
        """(t, n_classes) class probabilities at theta for X (default: the training rows)."""
        X = self.X if X is None else check_design(X)
        ST = self._scores_t(np.asarray(theta, dtype=np.float64), X)
        _, s = logsumexp_classes(ST)
        ST /= s
        return ST.T


def single_block_bytes(loss) -> int:
    """Bytes of the float32 row blocks that :class:`SingleSoftmaxLoss` converts per evaluation
    without a copy of X (``loss``: its float64 :class:`SoftmaxLoss`)."""
    return max(_SINGLE_BLOCK_BYTES,
               min(_SINGLE_MAX_BLOCK_BYTES, 4 * loss.n_samples * max(1, loss.k)))


class SingleSoftmaxLoss(SoftmaxLoss):
    """:class:`SoftmaxLoss` evaluated in single precision, for the cheap early iterations of
    a mixed-precision solver (``LBFGSBound(evaluation="mixed")``): scores, the log-sum-exp,
    probabilities and the products with X in float32 (half the memory traffic, and exp / log
    run on SIMD lanes that float64 lacks without AVX-512), sums over rows in float64.

    Each row's loss is formed as log sum_a exp(s_a - s_y) and the gradient as (P - Y) X, not
    as a difference of large sums (log-sum-exp over rows minus theta^T Y X, P X - Y X): an
    error in the scores of the row's own class then cancels, which keeps the value and
    gradient accurate relative to themselves when rows are fitted well (large weights,
    nearly separable classes), where the differences would lose every digit. Value and
    gradient only (``value``, ``value_and_grad``); the curvature operators and bounds are the
    float64 loss's (``double``). Its values are approximations (relative error near 1e-7
    per row), never bounds: a solver re-evaluates in float64 before it stops or reports
    anything. Built by :meth:`SoftmaxLoss.single_precision`."""

    def __init__(self, loss: SoftmaxLoss, X32=None, block_rows: int | None = None):
        self.__dict__.update(loss.__dict__)
        self.double = loss
        #: no float32 copy of X: row blocks of ``block_rows`` converted at every evaluation
        self.blocked = X32 is None
        # float32 numbers per row: d (dense) or the stored entries per row (CSR: with d in
        # their place a block of a wide sparse X held a few rows, hundreds of blocks per
        # evaluation, slower than float64)
        per_row = (loss.X.nnz / max(1, loss.n_samples)) if sp.issparse(loss.X) else self.d
        self.block_rows = int(block_rows) if block_rows else \
            max(_SINGLE_MIN_BLOCK_ROWS, int(single_block_bytes(loss) // (4 * max(1.0, per_row))))
        if not self.blocked:
            self.X = X32
        chunks = []
        for a, c in zip(range(0, loss.n_samples, loss.chunk_size), loss._chunks, strict=True):
            b = a + c.X.shape[0]
            sw32 = None if c.sw is None else c.sw.astype(np.float32)
            # blocked: the float64 rows, converted block by block at every evaluation
            X = c.X if self.blocked else row_block(X32, a, b)
            rec = Rows(X, sw32, c.y)
            at = loss._at(c)                    # shared with the float64 loss (binary:
            rec.at = at.astype(np.float32) if at.dtype == np.float64 else at   # float32 signs)
            chunks.append(rec)
        self._chunks = chunks

    def _pieces(self, c):
        """(float32 rows, float32 weights, observed positions) of a chunk: the chunk itself
        from the float32 copy, or (blocked) its row blocks converted one at a time."""
        if not self.blocked:
            yield c.X, c.sw, self._at(c)
            return
        X, sw, y = c.X, c.sw, c.y
        rows = self.block_rows
        for r in range(0, X.shape[0], rows):
            yield (X[r:r + rows].astype(np.float32), None if sw is None else sw[r:r + rows],
                   self._positions_of(y[r:r + rows], np.float32))

    def _binary_scores(self, theta, X):
        return super()._binary_scores(theta.astype(np.float32), X)

    def _scores_t(self, theta, X):
        return super()._scores_t(theta.astype(np.float32), X)

    # beyond float32's range the values become inf / nan, silently: the solver then goes on in
    # float64 (a float32 evaluation is an estimate, never a result)
    def _value(self, theta, c):
        total = 0.0
        with np.errstate(over="ignore", invalid="ignore"):
            for X, sw, at in self._pieces(c):
                loss = self._residual_rows(theta, X, at, grad=False)[0]
                total += float((loss if sw is None else sw * loss).sum(dtype=np.float64))
        return total

    def _value_grad(self, theta, c):
        total, g = 0.0, None
        with np.errstate(over="ignore", invalid="ignore"):
            for X, sw, at in self._pieces(c):
                loss, R, _ = self._residual_rows(theta, X, at)
                if sw is not None:
                    loss = sw * loss
                    R *= sw
                total += float(loss.sum(dtype=np.float64))
                part = class_major_product(R, X, self.fit_intercept)
                if g is None:
                    g = part.astype(np.float64)
                else:
                    g += part
        return total, g.ravel()

    def _not_here(self, *args, **kwargs):
        raise NotImplementedError("SingleSoftmaxLoss evaluates value and gradient only; "
                                  "curvatures and bounds come from its float64 loss "
                                  "(.double)")

    value_grad_hessian = value_grad_dense_hessian = hessian = majorizer = _not_here
    lowrank_majorizer = bound_gram = subset = reweighted = single_precision = _not_here
    predict_proba = _not_here


class LogLinearLoss(ChunkedLoss):
    """sum_j [log Z_j(theta) - theta^T f_j(y_j) - log h_j(y_j)] over explicit configurations,
    Z_j(theta) = sum_y h_j(y) exp(theta^T f_j(y)).

    Parameters
    ----------
    features : (t, n, d) features of every configuration of every row
    observed : (t,) index of the observed configuration of each row
    log_prior : (t, n) or broadcastable log h_j(y); -inf gives zero weight
    chunk_size : rows per chunk (the Alg. 1 curvature is (rows, d, d) per chunk)
    """

    def __init__(self, features, observed, log_prior=None, chunk_size: int | None = None):
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 3 or 0 in features.shape:
            raise ValueError(f"features must be a non-empty (t, n, d) array, got {features.shape}")
        if not np.all(np.isfinite(features)):
            raise ValueError("features contain NaN or inf")
        t, n, d = features.shape
        observed = np.asarray(observed)
        if observed.shape != (t,) or not np.issubdtype(observed.dtype, np.integer):
            raise ValueError(f"observed must be ({t},) integer indices, got {observed.shape}")
        if observed.min() < 0 or observed.max() >= n:
            raise ValueError(f"observed indices must lie in [0, {n})")
        if log_prior is None:
            log_prior = np.zeros((t, n))
        log_prior = np.broadcast_to(np.asarray(log_prior, dtype=np.float64), (t, n))
        if np.any(np.isnan(log_prior)) or np.any(log_prior == np.inf):
            raise ValueError("log_prior contains NaN or +inf (use -inf for zero weight)")
        rows = np.arange(t)
        if np.any(log_prior[rows, observed] == -np.inf):
            raise ValueError("an observed configuration has zero prior weight")
        self.features = features
        self.observed = observed.astype(np.intp)
        self.log_prior = log_prior
        self.n_params = d
        self.n_samples = t
        self.chunk_size = check_chunk_size(chunk_size, t, max(n * d, d * d))
        self._chunks = []
        for a in range(0, t, self.chunk_size):
            b = min(t, a + self.chunk_size)
            r = np.arange(a, b)
            F = features[a:b]
            obs = self.observed[a:b]
            self._chunks.append((F, log_prior[a:b], F[r - a, obs].sum(axis=0),
                                 float(log_prior[r, obs].sum())))

    def _value_of(self, theta, lse, c):
        return float(lse.sum() - theta @ c[2] - c[3])

    def _value(self, theta, c):
        return self._value_of(theta, log_softmax(c[1] + c[0] @ theta, axis=1, softmax=False), c)

    def _value_grad(self, theta, c):
        lse, P = log_softmax(c[1] + c[0] @ theta, axis=1)
        return self._value_of(theta, lse, c), np.einsum("tn,tnd->d", P, c[0]) - c[2]

    def _value_grad_hessian(self, theta, c):
        F = c[0]
        lse, P = log_softmax(c[1] + F @ theta, axis=1)
        mean = np.einsum("tn,tnd->td", P, F)
        # Cov_p f, centered before the product: E[f f^T] - mu mu^T cancels catastrophically when
        # the features share a large offset (relative error 3e-8 at 1e4, 5e-4 at 1e6).
        Fc = F - mean[:, None, :]
        H = np.einsum("tn,tni,tnj->ij", P, Fc, Fc)
        return self._value_of(theta, lse, c), mean.sum(axis=0) - c[2], DenseCurvature(H)

    def _majorizer(self, theta, c, order):
        qb = quadratic_bound(c[0], theta, c[1], order)
        return (self._value_of(theta, qb.log_z, c), qb.mean.sum(axis=0) - c[2],
                DenseCurvature(qb.curvature.sum(axis=0)))


