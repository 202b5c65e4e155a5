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


def _shift(a: np.ndarray, axis, floor: float | None = None) -> np.ndarray:
    """The slice maxima of ``a`` along ``axis`` (kept dimensions), at least ``floor`` where
    given, and 0 where not finite."""
    m = np.max(a, axis=axis, keepdims=True)
    if floor is not None:
        m = np.maximum(m, floor)
    return np.where(np.isfinite(m), m, 0.0)


def _drop(r: np.ndarray, axis, keepdims: bool):
    """``r`` reduced over ``axis`` with kept dimensions, as the caller asked for it."""
    if not keepdims:
        r = np.squeeze(r, axis=axis) if axis is not None else r.reshape(())
    return float(r) if r.ndim == 0 else r


def logsumexp(a, axis=None, *, keepdims: bool = False, include_zero: bool = False,
              return_exp: bool = False, overwrite_a: bool = False):
    """``log sum exp(a)`` along ``axis`` (every axis for ``None``).

    ``include_zero`` adds one implicit entry 0 to every slice: ``log(1 + sum exp(a))``, the
    log-partition function of a softmax whose reference class has score 0. With
    ``return_exp`` also ``e = exp(a - m)`` (``a``'s shape, ``m`` the shift) and
    ``s = sum e`` along ``axis`` (kept dimensions; with ``include_zero`` it holds the implicit
    entry's ``exp(-m)`` too): ``e / s`` are the probabilities. ``overwrite_a`` writes ``e``
    over ``a`` (a floating array the caller no longer needs, in its own precision), so that no
    array of its size is allocated; otherwise the arithmetic is float64.
    """
    a = np.asarray(a)
    if overwrite_a and a.dtype.kind != "f":
        raise TypeError(f"overwrite_a needs a floating array, got dtype {a.dtype}")
    m = _shift(a, axis, 0.0 if include_zero else None).astype(a.dtype if overwrite_a
                                                                  else np.float64)
    e = np.subtract(a, m, out=a) if overwrite_a else np.subtract(a, m, dtype=np.float64)
    np.exp(e, out=e)
    s = np.sum(e, axis=axis, keepdims=True)
    if include_zero:
        s += np.exp(-m)
    with np.errstate(divide="ignore"):
        lse = _drop(np.log(s) + m, axis, keepdims)
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


def log_mean_exp(a, axis=None, *, keepdims: bool = False, return_exp: bool = False):
    """``log((1/n) sum exp(a))`` along ``axis`` (every axis for ``None``), without the
    cancellation of ``log(Z / n)`` where the entries are close.

    With ``return_exp`` also ``e = exp(a - m)`` and ``s = sum e`` (kept dimensions), as
    :func:`logsumexp` gives them, for the weights ``e / s``.
    """
    a = np.asarray(a, dtype=np.float64)
    m = _shift(a, axis)
    e = np.expm1(a - m)
    with np.errstate(divide="ignore"):
        out = _drop(np.log1p(np.mean(e, axis=axis, keepdims=True)) + m, axis, keepdims)
    if not return_exp:
        return out
    e += 1.0
    return out, e, np.sum(e, axis=axis, keepdims=True)


def log_cumsum_exp(a, axis: int = -1) -> np.ndarray:
    """log of the running sum of exp(a) along ``axis``; -inf entries are zero weights."""
    with np.errstate(invalid="ignore"):
        return np.logaddexp.accumulate(np.asarray(a, dtype=np.float64), axis=axis)


__all__ = ["log_cumsum_exp", "log_mean_exp", "log_softmax", "logsumexp"]
