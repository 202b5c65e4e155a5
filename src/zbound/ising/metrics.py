"""Error measures of Beyler & Bach, Sec. 7.2 and Suppl. E.4-E.5 (after Wainwright et al. 2005).

All bounds are in the Phi_eps convention of eq. (5), so errors are in the same units.
"""

from __future__ import annotations

import numpy as np


def _scalar(value, name: str) -> float:
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value}")
    return v


def _dim(d) -> int:
    if int(d) != d or d < 1:
        raise ValueError(f"d must be a positive integer, got {d}")
    return int(d)


def normalized_bound_error(bound: float, exact: float, d: int) -> float:
    """error_bound = (bound - true_value) / d (Sec. 7.2)."""
    return (_scalar(bound, "bound") - _scalar(exact, "exact")) / _dim(d)


def l1_marginal_error(approx: np.ndarray, exact: np.ndarray) -> float:
    """l1-error = (1/d) sum_i |p_hat(x_i = 1) - p(x_i = 1)| (Sec. 7.2); inputs P(x_i = 1), (d,)."""
    a = np.asarray(approx, dtype=np.float64)
    b = np.asarray(exact, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"marginals must be two non-empty (d,) arrays, got {a.shape}, {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("marginals must be finite")
    if a.min() < -1e-9 or a.max() > 1 + 1e-9 or b.min() < -1e-9 or b.max() > 1 + 1e-9:
        raise ValueError("marginals are probabilities P(x_i = 1) and must lie in [0, 1]")
    return float(np.mean(np.abs(a - b)))


def relative_error_to_logdet(bound: float, logdet_bound: float, d: int) -> float:
    """relative_error_bound = (bound - bound_log_det) / d (Suppl. E.5); < 0 means tighter."""
    return (_scalar(bound, "bound") - _scalar(logdet_bound, "logdet_bound")) / _dim(d)


def normalized_gain(bound: float, quantum_bound: float, d: int) -> float:
    """gain_bound = (bound - quantum_bound) / d (Suppl. E.4); < 0 means the features helped."""
    return (_scalar(bound, "bound") - _scalar(quantum_bound, "quantum_bound")) / _dim(d)
