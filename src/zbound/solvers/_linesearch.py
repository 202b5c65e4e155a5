"""Value-only backtracking shared by the solvers: Armijo trials at the safeguarded minimizer of
the quadratic through f(x), the slope g.d and the last trial value."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

ARMIJO = 1e-4


def interpolated_step(step: float, f0: float, f_step: float, gd: float) -> float:
    """The next trial length after ``step`` failed: the minimizer of the quadratic through
    ``f0``, slope ``gd < 0`` and ``f_step``, kept within [0.1, 0.5] of ``step`` (halving when
    the quadratic has no minimum or ``f_step`` is not finite)."""
    denom = 2.0 * (f_step - f0 - step * gd)
    trial = -gd * step * step / denom if denom > 0.0 and math.isfinite(f_step) else 0.5 * step
    return min(0.5 * step, max(0.1 * step, trial))


def backtrack(value: Callable[[np.ndarray], float], x: np.ndarray, d: np.ndarray, f0: float,
              gd: float, step: float, f_step: float, trials: int) -> tuple[float, float] | None:
    """Up to ``trials`` Armijo trials along ``d`` after ``step`` (value ``f_step``) failed.

    Returns ``(step, value)`` of the first accepted trial, or None when none is accepted.
    """
    for _ in range(trials):
        step = interpolated_step(step, f0, f_step, gd)
        f_step = value(x + step * d)
        if f_step <= f0 + ARMIJO * step * gd:
            return step, f_step
    return None
