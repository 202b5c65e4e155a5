"""Kernels that run on the Dask workers (module-level: they pickle by reference).

A chunk record is a :class:`zbound.models.loss.SoftmaxLoss` on that chunk's rows (or None for
an empty chunk): the per-chunk arithmetic is the NumPy path's own. A pass is one
:func:`fused` task per group of records (the records one worker holds): it runs a kernel on
each of them and returns their sum, a small tuple (a number, a (p,) vector, a (p, p) matrix
or (k, d, d) blocks). With ``keep`` the curvature operators stay on the worker in the task's
result and only :func:`head` of it travels.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from zbound.utils.logspace import logsumexp


def prepare(xb, yb, swb, n_classes: int, reference_class: bool, fit_intercept: bool,
            check: bool = False):
    """The chunk's SoftmaxLoss (None when the chunk has no rows). Dense blocks become
    C-contiguous float64; scipy.sparse and pydata ``sparse`` blocks become CSR. With
    ``check`` the input checks of :func:`check_stats` run here first (the same messages)."""
    from zbound.models.loss import SoftmaxLoss

    if check:
        check_stats([stats(xb, yb, swb)], n_classes)
    if xb.shape[0] == 0:
        return None
    if sp.issparse(xb):
        xb = sp.csr_matrix(xb, dtype=np.float64)
    elif hasattr(xb, "tocsr") and not isinstance(xb, np.ndarray):      # pydata sparse
        xb = sp.csr_matrix(xb.tocsr(), dtype=np.float64)
    else:
        xb = np.ascontiguousarray(xb, dtype=np.float64)
    yb = np.asarray(yb)
    if yb.dtype.kind == "f":
        if not np.all(yb == np.round(yb)):
            raise TypeError("y must hold integer class indices, got non-integer floats")
        yb = yb.astype(np.intp)
    return SoftmaxLoss(xb, yb, n_classes, sample_weight=swb, reference_class=reference_class,
                       fit_intercept=fit_intercept)


def stats(xb, yb, swb):
    """(rows, min y, max y, X finite, weights ok) of one raw chunk: the checks of one pass."""
    rows = int(xb.shape[0])
    if rows == 0:
        return (0, None, None, True, True)
    if hasattr(xb, "tocsr") and not isinstance(xb, np.ndarray) and not sp.issparse(xb):
        xb = xb.tocsr()
    data = xb.data if sp.issparse(xb) else xb
    finite = bool(np.isfinite(data).all())
    yb = np.asarray(yb)
    sw_ok = True
    if swb is not None:
        swb = np.asarray(swb, dtype=np.float64)
        sw_ok = bool(np.isfinite(swb).all() and (swb >= 0).all())
    return (rows, int(yb.min()), int(yb.max()), finite, sw_ok)


def check_stats(st, n_classes: int | None) -> None:
    """ValueError naming the problem in the :func:`stats` of some chunks: NaN/inf in X, bad
    sample weights, labels outside [0, n_classes) (n_classes None: only below 0)."""
    if not all(s[3] for s in st):
        raise ValueError("X contains NaN or inf")
    if not all(s[4] for s in st):
        raise ValueError("sample_weight contains NaN or inf, or negative values")
    full = [s for s in st if s[0]]
    if not full:
        return
    lo, hi = min(s[1] for s in full), max(s[2] for s in full)
    n = hi + 1 if n_classes is None else n_classes
    if lo < 0 or hi >= n:
        raise ValueError(f"class indices must lie in [0, {n}), got [{lo}, {hi}]")


def class_counts(loss, n_classes: int):
    """(n_classes,) rows per class of a chunk record."""
    if loss is None:
        return np.zeros(n_classes)
    return np.bincount(loss.y, minlength=n_classes).astype(np.float64)


def value(loss, theta):
    return 0.0 if loss is None else float(loss.value(theta))


def value_grad(loss, theta):
    if loss is None:
        return (0.0, np.zeros(theta.shape[0]))
    return loss.value_and_grad(theta)


def _row_sample(m: int, off: int, rows: int):
    """(slice of rows off, off + m, ..., rescaling rows / sampled) of a chunk, or (None, 1)
    for every row (m <= 1, or a chunk of at most m rows)."""
    if m <= 1 or rows <= m:
        return None, 1.0
    off = off % m
    return slice(off, rows, m), rows / len(range(off, rows, m))


def binary_gram(X, w, intercept: bool) -> np.ndarray:
    """[X, 1]^T diag(w) [X, 1] (w >= 0) for dense C-order X: one dsyrk on the sqrt(w)-scaled
    rows (half the flops of a general product; the Fortran view of the C-order rows needs no
    copy), the intercept row and column from one gemv."""
    from scipy.linalg.blas import dsyrk

    d = X.shape[1]
    Z = X * np.sqrt(w)[:, None]
    G = dsyrk(1.0, Z.T, trans=0, lower=0)          # upper triangle of Z^T Z
    G = np.triu(G) + np.triu(G, 1).T
    if not intercept:
        return G
    H = np.empty((d + 1, d + 1))
    H[:d, :d] = G
    H[:d, d] = H[d, :d] = X.T @ w
    H[d, d] = w.sum()
    return H


#: rows per block of the fused binary kernel (a block of X and its scaled copy stay in cache)
BLOCK_ROWS = 2048


def _binary_scores(X, theta, nf: int, intercept: bool):
    s = X @ theta[:nf]
    if intercept:
        s += theta[nf]
    return s


def _add_weighted_gram(G, xh, hsum: float, X, h, intercept: bool):
    """G += X^T diag(h) X (upper triangle, one dsyrk into the Fortran-ordered G) and, with an
    intercept, xh += h X in place; returns (G, hsum + sum(h))."""
    from scipy.linalg.blas import dsyrk

    G = dsyrk(1.0, (X * np.sqrt(h)[:, None]).T, beta=1.0, c=G, trans=0, overwrite_c=1)
    if intercept:
        xh += h @ X
        hsum += float(h.sum())
    return G, hsum


def binary_value_grad_hessian(loss, theta, m: int = 1, off: int = 0):
    """(f, g, H) of a binary (reference class) record with dense rows, H the (p, p) matrix,
    in one sweep over blocks of ``BLOCK_ROWS`` rows: scores, log Z, gradient and the dsyrk
    update of each block while it is in cache (X is read once instead of three times). The
    arithmetic is the NumPy path's (log Z = log(1 + e^s) through zbound.utils.logspace); with
    ``m > 1`` the Hessian comes from rows off, off + m, ... of each chunk, rescaled."""
    from scipy.special import expit

    nf, icpt = loss.n_features, loss.fit_intercept
    p = theta.shape[0]
    f, g = 0.0, np.zeros(p)
    G = np.zeros((nf, nf), order="F")
    xh, hsum = np.zeros(nf), 0.0
    for c in loss._chunks:
        X, sw, observed = c.X, c.sw, loss._observed(c)
        f -= float(theta @ observed)
        g -= observed
        rows = X.shape[0]
        sl, scale = _row_sample(m, off, rows)
        full = sl is None
        for a in range(0, rows, BLOCK_ROWS):
            Xb = X[a:a + BLOCK_ROWS]
            s = _binary_scores(Xb, theta, nf, icpt)
            lse, e1, tot = logsumexp(s[:, None], axis=1, include_zero=True, return_exp=True)
            p1 = e1[:, 0] / tot[:, 0]
            swb = None if sw is None else sw[a:a + BLOCK_ROWS]
            f += float(lse.sum() if swb is None else swb @ lse)
            r = p1 if swb is None else p1 * swb
            g[:nf] += r @ Xb
            if icpt:
                g[nf] += r.sum()
            if full:
                h = p1 * (1.0 - p1)
                if swb is not None:
                    h *= swb
                G, hsum = _add_weighted_gram(G, xh, hsum, Xb, h, icpt)
        if not full:
            Xs = np.ascontiguousarray(X[sl])
            p1 = expit(_binary_scores(Xs, theta, nf, icpt))
            h = p1 * (1.0 - p1)
            if sw is not None:
                h *= sw[sl]
            h *= scale
            G, hsum = _add_weighted_gram(G, xh, hsum, Xs, h, icpt)
    H = np.empty((p, p))
    H[:nf, :nf] = np.triu(G) + np.triu(G, 1).T
    if icpt:
        H[:nf, nf] = H[nf, :nf] = xh
        H[nf, nf] = hsum
    return (f, g, H)


def value_grad_hessian(loss, theta, dense: bool, m: int = 1, off: int = 0):
    """(f, g, H) of a chunk record: f and g from every row; H the Hessian (its (p, p) matrix
    with ``dense``, else its operator) from every row or, with ``m > 1``, from the rows
    off, off + m, ... of each chunk rescaled by rows / sampled rows (the sub-sampled
    Hessian). Binary dense rows take one dsyrk (:func:`binary_gram`)."""
    from zbound.bounds.curvature import ScaledCurvature, SoftmaxCurvature, SumCurvature

    p = theta.shape[0]
    if loss is None:
        return (0.0, np.zeros(p), np.zeros((p, p)) if dense else None)
    if dense and loss.k == 1 and not sp.issparse(loss.X):
        return binary_value_grad_hessian(loss, theta, m, off)
    f, g, ops = 0.0, np.zeros(p), []
    H = np.zeros((p, p)) if dense else None
    for c in loss._chunks:
        fc, gc, PT = loss._value_grad_p(theta, c)
        f += fc
        g += gc
        X, sw = c.X, c.sw
        sl, scale = _row_sample(m, off, X.shape[0])
        P = PT.T
        if sl is not None:
            X, P = X[sl], P[sl]
            sw = None if sw is None else sw[sl]
            if not sp.issparse(X):
                X = np.ascontiguousarray(X)
        if dense and loss.k == 1 and not sp.issparse(X):
            w = P[:, 0] * (1.0 - P[:, 0])
            if sw is not None:
                w = w * sw
            H += scale * binary_gram(X, w, loss.fit_intercept)
            continue
        C = SoftmaxCurvature(X, np.ascontiguousarray(P), 0.0, weights=sw,
                             complete=not loss.free)
        if loss.fit_intercept:
            C = C.with_intercept()
        if dense:
            H += scale * C.to_dense()
        else:
            ops.append(C if scale == 1.0 else ScaledCurvature(C, scale))
    if dense:
        return (f, g, H)
    return (f, g, ops[0] if len(ops) == 1 else SumCurvature(*ops))


def majorizer(loss, theta, order: str, dense: bool):
    """(f, g, C) of the chunk's Alg. 1 majorizer; C its operator or (p, p) matrix."""
    if loss is None:
        p = theta.shape[0]
        return (0.0, np.zeros(p), np.zeros((p, p)) if dense else None)
    m = loss.majorizer(theta, order)
    return (m.value, m.grad, m.curvature.to_dense() if dense else m.curvature)


def fused(kernel, records, args, keep: bool = False):
    """One task over a group of chunk records (those one worker holds): the sum of
    ``kernel(record, *args)`` over them, a small tuple. With ``keep`` the last item of each
    result (a curvature operator) goes into a list instead of the sum: the result then stays
    on the worker and only :func:`head` of it travels."""
    total, ops = None, []
    for rec in records:
        out = kernel(rec, *args)
        if keep:
            ops.append(out[-1])
            out = out[:-1]
        total = out if total is None else add(total, out)
    if keep:
        return (*total, ops)
    return total


def head(part):
    """The small items (value, gradient) of a kept group result."""
    return part[:-1]


def curv_matvec(part, v):
    out = np.zeros(v.shape[0])
    for C in part[-1]:
        if C is not None:
            out += C.matvec(v)
    return out


def curv_diagonal(part):
    return add(*[C.diagonal() for C in part[-1] if C is not None])


def curv_blocks(part):
    blocks = [C.diagonal_blocks() for C in part[-1] if C is not None]
    if not blocks or any(b is None for b in blocks):
        return None
    return add(*blocks)


def curv_dense(part):
    return add(*[C.to_dense() for C in part[-1] if C is not None])


def probabilities(xb, theta, n_classes, reference_class, fit_intercept):
    """(rows, n_classes) class probabilities of a raw chunk at theta."""
    if xb.shape[0] == 0:
        return np.zeros((0, n_classes))
    loss = prepare(xb, np.zeros(xb.shape[0], dtype=np.intp), None, n_classes,
                   reference_class, fit_intercept)
    return loss.predict_proba(theta)


def add(*parts):
    """Sum of kernel results: numbers, arrays, tuples of them; None is zero."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    first = parts[0]
    if isinstance(first, tuple):
        return tuple(add(*items) for items in zip(*parts))
    out = first.copy() if isinstance(first, np.ndarray) else first
    for p in parts[1:]:
        if isinstance(out, np.ndarray):
            out += p
        else:
            out = out + p
    return out
