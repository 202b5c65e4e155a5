"""Scalar pieces of Alg. 1 (Jebara & Choromanska 2012) in log space.

The curvature weight of Alg. 1 is beta(r) = tanh(r / 2) / (2 r) with r = log(alpha / z). It is even
in r, equals 1/4 at r = 0 and tends to 0 as |r| -> inf (footnote 3 of the paper); its Taylor series
at 0 is 1/4 - r^2/48 + r^4/480 (an early design note printed r^2/96; the coefficient 1/48 is
the correct one, checked numerically in tests/bounds/test_scalar.py).
"""

from __future__ import annotations

import numpy as np

_SERIES_CUTOFF = 1e-3


def beta(r: np.ndarray) -> np.ndarray:
    """tanh(r/2) / (2r), elementwise, with beta(0) = 1/4 and beta(+-inf) = 0; NaN maps to 0.

    NaN arises as (-inf) - (-inf), a zero-weight configuration before any positive weight; it
    contributes nothing to the bound, so its weight is 0.
    """
    a = np.abs(np.asarray(r, dtype=np.float64))
    out = np.zeros_like(a)
    small = a < _SERIES_CUTOFF
    a2 = a[small] ** 2
    out[small] = 0.25 - a2 / 48.0 + a2 * a2 / 480.0
    mid = ~small & np.isfinite(a)
    # 0.5 * (tanh / a), not tanh / (2 a): 2 a overflows for |r| > max_float / 2.
    out[mid] = 0.5 * (np.tanh(0.5 * a[mid]) / a[mid])
    return out


def sigmoid_from_log(r: np.ndarray) -> np.ndarray:
    """alpha / (z + alpha) = 1 / (1 + exp(-r)) for r = log(alpha / z), overflow-free; NaN -> 0."""
    r = np.asarray(r, dtype=np.float64)
    out = np.zeros_like(r)
    pos = r >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-r[pos]))
    neg = r < 0
    e = np.exp(r[neg])
    out[neg] = e / (1.0 + e)
    return out


def ordering(log_alpha: np.ndarray, order: str) -> np.ndarray:
    """Permutation (along the last axis) in which Alg. 1 visits configurations.

    "descending" visits the largest alpha first (the tightest on the softmax problems tried),
    "ascending" the smallest first, "given" the order of the input. Ties keep their input order
    (stable sort).
    """
    n = log_alpha.shape[-1]
    if order == "descending":
        return np.argsort(-log_alpha, axis=-1, kind="stable")
    if order == "ascending":
        return np.argsort(log_alpha, axis=-1, kind="stable")
    if order == "given":
        return np.broadcast_to(np.arange(n), log_alpha.shape)
    raise ValueError(f"unknown order {order!r}; use 'descending', 'ascending' or 'given'")
