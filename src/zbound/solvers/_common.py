"""Options, input validation and stopping tests shared by every solver.

Validation happens once, before the first iteration; the loops themselves re-check nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from zbound.solvers.constraints import LinearConstraints
from zbound.solvers.result import Recorder, Result

INNER_SOLVERS = ("auto", "cholesky", "cg")


@dataclass
class Options:
    """Stopping rules and knobs, validated once by :func:`make_options`.

    tol : stop when the stationarity measure (gradient inf-norm when unconstrained; the
        inf-norm of C d for the constrained step d) is <= tol * max(1, |f|)
    ftol : stop when the objective decreased by <= ftol * max(1, |f|) in one iteration
        (0 disables the test)
    max_iter : iteration limit (SQUAREM: bound steps)
    target : stop as soon as the objective is <= target (bench: same target for all methods)
    callback : callback(x, f) after each accepted iterate; a truthy return stops the solver
    """

    tol: float = 1e-8
    ftol: float = 1e-13
    max_iter: int = 1000
    target: float | None = None
    callback: object = None
    order: str = "descending"
    inner: str = "auto"
    constraints: LinearConstraints | None = None
    extra: dict = field(default_factory=dict)


def make_options(model, x0, *, tol, ftol, max_iter, target, callback, order="descending",
                 inner="auto", constraints=None) -> tuple[np.ndarray, Options]:
    """Validate the start point and options; returns (x0 as float64 copy, Options)."""
    p = getattr(model, "n_params", None)
    if p is None:
        raise TypeError(f"model {type(model).__name__} has no n_params; it does not follow "
                        "the zbound Model protocol (zbound.models.base.Model)")
    if not hasattr(model, "value_and_grad"):
        raise TypeError(f"model {type(model).__name__} has no value_and_grad method")
    try:
        x = np.array(x0, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"x0 must be a real array of shape ({p},): {exc}") from None
    if x.ndim != 1 or x.shape[0] != p:
        raise ValueError(f"x0 must have shape ({p},) for this model, got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("x0 contains non-finite values (nan or inf)")
    if not (isinstance(tol, int | float) and tol >= 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if not (isinstance(ftol, int | float) and ftol >= 0 and math.isfinite(ftol)):
        raise ValueError(f"ftol must be a finite number >= 0, got {ftol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 0:
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    if target is not None:
        if not isinstance(target, int | float | np.floating) or math.isnan(target):
            raise ValueError(f"target must be a number or None, got {target!r}")
        target = float(target)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable: callback(x, f) -> stop?")
    if not isinstance(order, str):
        raise TypeError(f"order must be a string naming a configuration ordering, got {order!r}")
    if inner not in INNER_SOLVERS:
        raise ValueError(f"unknown inner solver {inner!r}; use one of {INNER_SOLVERS}")
    if constraints is not None:
        if not isinstance(constraints, LinearConstraints):
            raise TypeError("constraints must be a zbound.solvers.LinearConstraints, got "
                            f"{type(constraints).__name__}")
        constraints.check_dimension(p)
        if not constraints.is_feasible(x):
            raise ValueError(
                f"x0 is infeasible (constraint violation {constraints.violation(x):.3g}); "
                "start inside the constraints, e.g. x0 = constraints.project(x0)")
    opts = Options(tol=float(tol), ftol=float(ftol), max_iter=int(max_iter), target=target,
                   callback=callback, order=order, inner=inner, constraints=constraints)
    return x, opts


def resolve_inner(inner: str, p: int, bound: bool = False) -> str:
    """"auto" -> "cholesky" or "cg" by the number of parameters; ``bound``: for exact Alg. 1
    bound steps (a higher threshold, see ``_linalg.AUTO_CG_THRESHOLD_BOUND``)."""
    from zbound.solvers._linalg import AUTO_CG_THRESHOLD, AUTO_CG_THRESHOLD_BOUND

    if inner == "auto":
        limit = AUTO_CG_THRESHOLD_BOUND if bound else AUTO_CG_THRESHOLD
        return "cholesky" if p <= limit else "cg"
    return inner


def stop_reason(f: float, f_prev: float | None, stat: float, opts: Options) -> str | None:
    """Message if a stopping test holds at objective f with stationarity measure stat."""
    scale = max(1.0, abs(f))
    if opts.target is not None and f <= opts.target:
        return "target objective reached"
    if stat <= opts.tol * scale:
        return "stationarity measure below tol"
    if opts.ftol > 0.0 and f_prev is not None and f_prev - f <= opts.ftol * scale:
        return "relative objective change below ftol"
    return None


def finish(method: str, x, f, g, rec: Recorder, nit: int, counts: dict, reason: str | None,
           opts: Options, info: dict | None = None) -> Result:
    converged = reason is not None and reason != "stopped by callback"
    if reason is None:
        reason = "maximum number of iterations reached"
    target_reached = opts.target is not None and f <= opts.target
    return Result(x=x, fun=float(f), converged=bool(converged), message=reason, nit=int(nit),
                  n_evals=int(sum(counts.values())), method=method, trace=rec.trace(),
                  jac=g, target_reached=bool(target_reached), counts=dict(counts),
                  info=info or {})
