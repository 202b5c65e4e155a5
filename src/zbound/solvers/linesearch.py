"""Backtracking line searches, shared by every solver that steps along a direction: the
library's batch solvers and peers, the sample-space methods, the mixtures' mirror-descent
check, the quantum relaxation's Newton polishes and TRW's tree-weight steps.

:func:`armijo_search` is the one loop; :func:`backtrack` is its common case (values only,
after a failed first trial). Trials shrink by safeguarded quadratic interpolation
(:func:`interpolated_step`) or by halving.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

#: sufficient decrease: f(x + t d) <= f(x) + ARMIJO t g.d
ARMIJO = 1e-4
SHRINKS = ("interpolate", "halve")


def interpolated_step(step: float, f0: float, f_step: float, gd: float) -> float:
    """The next trial length after ``step`` failed: the minimizer of the quadratic through
    ``f0``, slope ``gd < 0`` and ``f_step``, kept within [0.1, 0.5] of ``step`` (halving when
    the quadratic has no minimum or ``f_step`` is not finite)."""
    denom = 2.0 * (f_step - f0 - step * gd)
    trial = -gd * step * step / denom if denom > 0.0 and math.isfinite(f_step) else 0.5 * step
    return min(0.5 * step, max(0.1 * step, trial))


def armijo_search(trial: Callable[[float], tuple[float, Any]], f0: float, slope: float,
                  step: float = 1.0, *, shrink: str = "interpolate", trials: int | None = None,
                  min_step: float = 0.0, first: tuple[float, Any] | None = None,
                  accept: Callable[[float, float], bool] | None = None,
                  ) -> tuple[float, float, Any] | None:
    """Backtracking from ``step`` along a direction whose slope at ``f0`` is ``slope`` (< 0).

    ``trial(t)`` evaluates the objective at step length t and returns ``(value, payload)``:
    whatever the caller wants back with the accepted point (a gradient, a Hessian, a state).
    The first trial is at ``step`` (``first``: its ``(value, payload)``, already computed);
    after a failed one the length shrinks (``shrink``: "interpolate", the safeguarded
    minimizer of the quadratic through ``f0``, ``slope`` and the failed value, or "halve").
    A trial is accepted by Armijo's test, value <= f0 + ARMIJO t slope, or by ``accept(t,
    value)`` where given. The search gives up after ``trials`` evaluations of ``trial``
    (None: no limit), or once the length would fall to ``min_step`` or below.

    Returns ``(t, value, payload)`` of the accepted trial, or None.
    """
    if shrink not in SHRINKS:
        raise ValueError(f"shrink must be one of {SHRINKS}, got {shrink!r}")
    ok = accept if accept is not None else (lambda t, v: v <= f0 + ARMIJO * t * slope)
    t = float(step)
    if first is None:
        value, payload = trial(t)
        count = 1
    else:
        (value, payload), count = first, 0
    while True:
        if ok(t, value):
            return t, value, payload
        if trials is not None and count >= trials:
            return None
        t = interpolated_step(t, f0, value, slope) if shrink == "interpolate" else 0.5 * t
        if t <= min_step:
            return None
        value, payload = trial(t)
        count += 1


def backtrack(value: Callable[[np.ndarray], float], x: np.ndarray, d: np.ndarray, f0: float,
              gd: float, step: float, f_step: float, trials: int) -> tuple[float, float] | None:
    """Up to ``trials`` interpolated Armijo trials along ``d`` (values only) after ``step``
    (value ``f_step``) failed. Returns ``(step, value)`` of the first accepted trial, or
    None."""
    if trials < 1:
        return None
    found = armijo_search(lambda t: (value(x + t * d), None), f0, gd,
                          interpolated_step(step, f0, f_step, gd), trials=trials)
    return None if found is None else found[:2]


__all__ = ["ARMIJO", "SHRINKS", "armijo_search", "backtrack", "interpolated_step"]
