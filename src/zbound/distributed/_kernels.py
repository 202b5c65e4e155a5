"""Per-chunk kernels that run on the Dask workers (module-level: they pickle by reference).

A chunk record is a :class:`zbound.models.loss.SoftmaxLoss` on that chunk's rows (or None for
an empty chunk): the per-chunk arithmetic is the NumPy path's own. Every kernel returns small
results (a number, a (p,) vector, a (p, p) matrix or (k, d, d) blocks); a tree of
:func:`add` tasks sums them on the workers.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def prepare(xb, yb, swb, n_classes: int, reference_class: bool, fit_intercept: bool):
    """The chunk's SoftmaxLoss (None when the chunk has no rows). Dense blocks become
    C-contiguous float64; scipy.sparse and pydata ``sparse`` blocks become CSR."""
    from zbound.models.loss import SoftmaxLoss

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


def _zeros(loss, p):
    return np.zeros(p)


def value(loss, theta):
    return 0.0 if loss is None else float(loss.value(theta))


def value_grad(loss, theta):
    if loss is None:
        return (0.0, np.zeros(theta.shape[0]))
    return loss.value_and_grad(theta)


def value_grad_hessian(loss, theta, dense: bool):
    """(f, g, H): H the chunk's Hessian operator, or its (p, p) matrix with ``dense``."""
    if loss is None:
        p = theta.shape[0]
        return (0.0, np.zeros(p), np.zeros((p, p)) if dense else None)
    f, g, H = loss.value_grad_hessian(theta)
    return (f, g, H.to_dense() if dense else H)


def value_grad_none(loss, theta):
    """(f, g, None): a chunk that contributes no curvature (sub-sampled Hessian)."""
    f, g = value_grad(loss, theta)
    return (f, g, None)


class _Scaled:
    """A chunk's curvature operator times a constant (sub-sampled Hessian)."""

    def __init__(self, C, scale):
        self.C, self.scale = C, scale

    def matvec(self, v):
        return self.scale * self.C.matvec(v)

    def diagonal(self):
        return self.scale * self.C.diagonal()

    def diagonal_blocks(self):
        b = self.C.diagonal_blocks()
        return None if b is None else self.scale * b

    def to_dense(self):
        return self.scale * self.C.to_dense()


def scaled(kernel, loss, theta, extra, dense: bool, scale: float):
    """``kernel(loss, theta, *extra, dense)`` with its curvature multiplied by ``scale``."""
    f, g, C = kernel(loss, theta, *extra, dense)
    if C is None:
        return (f, g, None)
    if dense:
        C *= scale
        return (f, g, C)
    return (f, g, _Scaled(C, scale))


def majorizer(loss, theta, order: str, dense: bool):
    """(f, g, C) of the chunk's Alg. 1 majorizer; C its operator or (p, p) matrix."""
    if loss is None:
        p = theta.shape[0]
        return (0.0, np.zeros(p), np.zeros((p, p)) if dense else None)
    m = loss.majorizer(theta, order)
    return (m.value, m.grad, m.curvature.to_dense() if dense else m.curvature)


def value_grad_of(part):
    return part[0], part[1]


def curv_matvec(part, v):
    C = part[-1]
    return np.zeros(v.shape[0]) if C is None else C.matvec(v)


def curv_diagonal(part):
    C = part[-1]
    return None if C is None else C.diagonal()


def curv_blocks(part):
    C = part[-1]
    return None if C is None else C.diagonal_blocks()


def curv_dense(part):
    C = part[-1]
    return None if C is None else C.to_dense()


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
        if p is None:
            continue
        if isinstance(out, np.ndarray):
            out += p
        else:
            out = out + p
    return out
