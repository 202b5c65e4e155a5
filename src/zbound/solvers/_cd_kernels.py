"""Coordinate-descent sweeps of :class:`zbound.solvers.proximal.BoundCD`: one class's weighted
lasso (elastic net) on a fixed quadratic, over a working set of columns.

The quadratic is the data term's bound at the sweep's start point w0 (JJ / Alg. 1 on the
class's two-configuration subproblem): sum_t [r_t xi_t + a_t xi_t^2 / 2], xi = X (w - w0)
(+ the intercept's change), plus sum_j l1_j |w_j| + l2_j w_j^2 / 2. One coordinate's exact
minimizer is w_j = S(h_j w_j - g_j, l1_j) / (h_j + l2_j), g_j = sum_t x_tj (r_t + a_t xi_t),
h_j = sum_t a_t x_tj^2, S the soft threshold; xi follows every change.

The sweeps are written once, in plain Python over arrays, and compiled by Numba (the ``fast``
extra) where it imports; without it the same functions run interpreted (correct, slow).
"""

from __future__ import annotations

import math


def _soft(v, t):
    if v > t:
        return v - t
    if v < -t:
        return v + t
    return 0.0


def _intercept(r, a, xi, b, hb):
    """The intercept's exact step on the quadratic (its curvature hb = sum a), in place on
    b[0] and xi; returns its scaled size sqrt(hb) |db|."""
    g = 0.0
    for t in range(xi.shape[0]):
        g += r[t] + a[t] * xi[t]
    d = -g / hb
    b[0] += d
    for t in range(xi.shape[0]):
        xi[t] += d
    return abs(d) * math.sqrt(hb)


def sweeps_dense(X, ws, w, h, l1, l2, r, a, xi, b, fit_intercept, max_epochs, tol):
    """Epochs of coordinate descent over the columns ``ws`` of the dense X (and the
    intercept b[0] when ``fit_intercept``), in place on w, b and xi, until an epoch's
    largest scaled step sqrt(h_j) |dw_j| is <= tol or ``max_epochs``. Returns the epochs."""
    n = X.shape[0]
    hb = a.sum() if fit_intercept else 0.0
    for epoch in range(max_epochs):
        worst = 0.0
        for q in range(ws.shape[0]):
            j = ws[q]
            hj = h[j]
            if hj <= 0.0 and l2[j] <= 0.0:
                continue
            g = 0.0
            for t in range(n):
                g += X[t, j] * (r[t] + a[t] * xi[t])
            old = w[j]
            new = _soft(hj * old - g, l1[j]) / (hj + l2[j])
            d = new - old
            if d != 0.0:
                w[j] = new
                for t in range(n):
                    xi[t] += d * X[t, j]
                step = abs(d) * math.sqrt(hj + l2[j])
                if step > worst:
                    worst = step
        if fit_intercept and hb > 0.0:
            worst = max(worst, _intercept(r, a, xi, b, hb))
        if worst <= tol:
            return epoch + 1
    return max_epochs


def sweeps_csc(indptr, indices, data, ws, w, h, l1, l2, r, a, xi, b, fit_intercept,
               max_epochs, tol):
    """:func:`sweeps_dense` for X in CSC form (``indptr``, ``indices``, ``data``)."""
    hb = a.sum() if fit_intercept else 0.0
    for epoch in range(max_epochs):
        worst = 0.0
        for q in range(ws.shape[0]):
            j = ws[q]
            hj = h[j]
            if hj <= 0.0 and l2[j] <= 0.0:
                continue
            g = 0.0
            for k in range(indptr[j], indptr[j + 1]):
                t = indices[k]
                g += data[k] * (r[t] + a[t] * xi[t])
            old = w[j]
            new = _soft(hj * old - g, l1[j]) / (hj + l2[j])
            d = new - old
            if d != 0.0:
                w[j] = new
                for k in range(indptr[j], indptr[j + 1]):
                    xi[indices[k]] += d * data[k]
                step = abs(d) * math.sqrt(hj + l2[j])
                if step > worst:
                    worst = step
        if fit_intercept and hb > 0.0:
            worst = max(worst, _intercept(r, a, xi, b, hb))
        if worst <= tol:
            return epoch + 1
    return max_epochs


def column_sq_dense(X, ws, a, h):
    """h[j] = sum_t a_t x_tj^2 for the columns ws."""
    n = X.shape[0]
    for q in range(ws.shape[0]):
        j = ws[q]
        s = 0.0
        for t in range(n):
            s += a[t] * X[t, j] * X[t, j]
        h[j] = s


def column_sq_csc(indptr, indices, data, ws, a, h):
    """:func:`column_sq_dense` for CSC X."""
    for q in range(ws.shape[0]):
        j = ws[q]
        s = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            s += a[indices[k]] * data[k] * data[k]
        h[j] = s


try:                                    # the fast extra
    import numba

    _jit = numba.njit(cache=True, nogil=True)
    _soft = _jit(_soft)
    _intercept = _jit(_intercept)
    sweeps_dense = _jit(sweeps_dense)
    sweeps_csc = _jit(sweeps_csc)
    column_sq_dense = _jit(column_sq_dense)
    column_sq_csc = _jit(column_sq_csc)
    COMPILED = True
except ImportError:                     # pragma: no cover - exercised where Numba is absent
    COMPILED = False

__all__ = ["sweeps_dense", "sweeps_csc", "column_sq_dense", "column_sq_csc", "COMPILED"]
