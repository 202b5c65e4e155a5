"""Sums of exponentials in log space: the library's one log-sum-exp, log-mean-exp and softmax.

Every log-partition value the library reports goes through these functions, so that each
formula is written once and keeps its digits:

- :func:`logsumexp` shifts by the slice maximum (a slice whose maximum is not finite is shifted
  by 0, so an all ``-inf`` slice gives ``-inf``, a zero weight);
- :func:`log_mean_exp` computes ``log((1/n) sum exp(a))`` as
  ``max + log1p(mean(expm1(a - max)))``. Where the entries are close (a partition function at
  high temperature), ``log(Z / n)`` of a ``Z / n`` near 1 keeps only about 1e-16 absolute,
  which a temperature factor of 1e7 turns into 1e-9 of a bound; the ``log1p`` / ``expm1``
  form keeps the relative accuracy of the differences themselves;
- :func:`log_softmax` gives the log-sum-exp and the normalized exponentials together (one
  pass, optionally in place over a score block the caller no longer needs);
- :func:`log_cumsum_exp` is the running log-sum-exp.
"""

from __future__ import annotations

import numpy as np


def _shift(a: np.ndarray, axis) -> np.ndarray:
    """The slice maxima of ``a`` along ``axis`` (kept dimensions), 0 where not finite."""
    m = np.max(a, axis=axis, keepdims=True)
    return np.where(np.isfinite(m), m, 0.0)


def logsumexp(a, axis=None, *, keepdims: bool = False, return_exp: bool = False,
              overwrite_a: bool = False):
    """``log sum exp(a)`` along ``axis`` (every axis for ``None``).

    With ``return_exp`` also ``e = exp(a - m)`` (``a``'s shape, ``m`` the slice maximum) and
    ``s = sum e`` along ``axis`` (kept dimensions): ``e / s`` is the softmax. ``overwrite_a``
    writes ``e`` over ``a`` (a float64 array the caller no longer needs), so that no array of
    its size is allocated.
    """
    a = np.asarray(a, dtype=np.float64)
    m = _shift(a, axis)
    e = np.subtract(a, m, out=a) if overwrite_a else np.subtract(a, m)
    np.exp(e, out=e)
    s = np.sum(e, axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = np.log(s) + m
    if not keepdims:
        lse = np.squeeze(lse, axis=axis) if axis is not None else lse.reshape(())
    if lse.ndim == 0:
        lse = float(lse)
    return (lse, e, s) if return_exp else lse


def log_softmax(a, axis: int, softmax: bool = True, overwrite_a: bool = False):
    """The log-sum-exp of ``a`` along ``axis`` (that axis removed) and, with ``softmax``, the
    normalized exponentials ``exp(a - lse)`` (``a``'s shape), in one pass. ``overwrite_a``:
    the exponentials are written over ``a`` (a float64 array the caller no longer needs)."""
    lse, e, s = logsumexp(a, axis, return_exp=True, overwrite_a=overwrite_a)
    if not softmax:
        return lse
    e /= s
    return lse, e


def log_mean_exp(a, axis=None, *, return_exp: bool = False):
    """``log((1/n) sum exp(a))`` along ``axis`` (every axis for ``None``), without the
    cancellation of ``log(Z / n)`` where the entries are close.

    With ``return_exp`` also ``e = exp(a - m)`` and ``s = sum e`` (kept dimensions), as
    :func:`logsumexp` gives them, for the weights ``e / s``.
    """
    a = np.asarray(a, dtype=np.float64)
    m = _shift(a, axis)
    d = a - m
    em1 = np.expm1(d)
    with np.errstate(divide="ignore"):
        out = np.log1p(np.mean(em1, axis=axis, keepdims=True)) + m
    out = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    if out.ndim == 0:
        out = float(out)
    if not return_exp:
        return out
    e = em1
    e += 1.0
    return out, e, np.sum(e, axis=axis, keepdims=True)


def log_cumsum_exp(a, axis: int = -1) -> np.ndarray:
    """log of the running sum of exp(a) along ``axis``; -inf entries are zero weights."""
    with np.errstate(invalid="ignore"):
        return np.logaddexp.accumulate(np.asarray(a, dtype=np.float64), axis=axis)


__all__ = ["log_cumsum_exp", "log_mean_exp", "log_softmax", "logsumexp"]
