"""Solvers: batch bound majorization (Alg. 2 of Jebara & Choromanska 2012, with constraints and
monotone accelerations) and the baselines it is compared with, behind one entry point.

>>> res = minimize(model, x0)                        # default: "newton-bound"
>>> res = minimize(model, x0, method="bound")        # Alg. 2 exactly as published
>>> res.x, res.fun, res.converged, res.trace.objective

Every method returns :class:`Result`; :data:`METHODS` describes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from zbound.solvers._common import make_options
from zbound.solvers.constraints import LinearConstraints
from zbound.solvers.result import Result, Trace


@dataclass(frozen=True)
class MethodInfo:
    """Registry entry: name, whether it is a peer (not the library's own idea), what constraints
    it supports ("linear": lb <= x <= ub and A x <= b; "box": lb <= x <= ub; "none"), whether it
    uses the Alg. 1 bound, and a one-line description."""

    name: str
    peer: bool
    constraints: str
    uses_bound: bool
    description: str

    @property
    def supports_constraints(self) -> bool:
        return self.constraints != "none"


DEFAULT_METHOD = "newton-bound"

METHODS: dict[str, MethodInfo] = {
    "newton-bound": MethodInfo(
        "newton-bound", False, "linear", True,
        "Newton step with the exact Hessian when it decreases J enough, else a short value-only "
        "backtracking, else the Alg. 1 bound as a line search along it (or the bound step: "
        "fallback='step'); monotone; default"),
    "bound": MethodInfo(
        "bound", False, "linear", True,
        "Alg. 2 of Jebara & Choromanska (2012) as published: minimize the Alg. 1 quadratic "
        "majorizer each iteration (QP under constraints)"),
    "squarem": MethodInfo(
        "squarem", False, "linear", True,
        "Alg. 2 accelerated by SQUAREM (Varadhan & Roland 2008) with a monotone safeguard"),
    "lbfgs": MethodInfo("lbfgs", True, "box", False, "SciPy L-BFGS-B"),
    "bfgs": MethodInfo("bfgs", True, "none", False, "SciPy BFGS"),
    "cg": MethodInfo("cg", True, "none", False, "SciPy nonlinear conjugate gradient"),
    "newton-cg": MethodInfo(
        "newton-cg", True, "none", False,
        "SciPy Newton-CG: Newton with a line search, exact Hessian (dense up to 300 "
        "parameters, else Hessian-vector products)"),
    "newton": MethodInfo(
        "newton", True, "none", False,
        "Newton's method with backtracking Armijo line search (Cholesky or truncated CG)"),
    "steepest": MethodInfo(
        "steepest", True, "none", False,
        "steepest descent with backtracking Armijo line search and step growth"),
}


def minimize(model, x0, method: str = DEFAULT_METHOD, constraints: LinearConstraints | None = None,
             tol: float = 1e-8, max_iter: int = 1000, target: float | None = None,
             order: str = "descending", inner: str = "auto", callback=None,
             ftol: float = 1e-13, **options) -> Result:
    """Minimize ``model``'s objective from ``x0``.

    Parameters
    ----------
    model : follows :class:`zbound.models.base.Model` (``n_params``, ``value``,
        ``value_and_grad``, ``value_grad_hessian``, ``majorizer``)
    x0 : (n_params,) finite start point, feasible for ``constraints``
    method : a key of :data:`METHODS`
    constraints : :class:`LinearConstraints` (lb <= x <= ub, A x <= b) or None
    tol : stationarity tolerance: stop when ||grad||_inf (constrained: ||C d||_inf for the step
        d of the quadratic model C) <= tol * max(1, |f|)
    max_iter : iteration limit (SQUAREM: bound evaluations)
    target : stop as soon as the objective is <= target
    order : configuration ordering for Alg. 1, passed to ``model.majorizer(order=...)``
    inner : "auto" (dense Cholesky up to 300 parameters, then CG; exact bound steps of "bound"
        and "squarem" up to 1000), "cholesky" or "cg"
    callback : callback(x, f) after every accepted iterate; return True to stop
    ftol : stop when one iteration decreases the objective by <= ftol * max(1, |f|)
    options : method extras: ``cg_rtol`` (bound step CG tolerance), ``cg_maxiter``;
        newton-bound only: ``backtracks`` (value-only Armijo trials along a rejected Newton
        step before the bound safeguard, default 4) and ``fallback`` ("direction" or "step")

    Returns
    -------
    Result
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    info = METHODS[method]
    unknown = set(options) - {"cg_rtol", "cg_maxiter", "fallback", "backtracks"}
    if unknown:
        raise TypeError(f"unexpected options {sorted(unknown)}")
    x, opts = make_options(model, x0, tol=tol, ftol=ftol, max_iter=max_iter, target=target,
                           callback=callback, order=order, inner=inner, constraints=constraints)
    opts.extra.update(options)
    needs = {"newton-bound": ("value_grad_hessian", "majorizer"), "bound": ("majorizer",),
             "squarem": ("majorizer",), "newton": ("value_grad_hessian", "value"),
             "newton-cg": ("hessian",)}
    missing = [m for m in needs.get(method, ()) if not callable(getattr(model, m, None))]
    if missing:
        raise TypeError(f"method {method!r} needs model.{missing[0]}(), which "
                        f"{type(model).__name__} does not have")
    if constraints is not None:
        if info.constraints == "none":
            raise ValueError(f"method {method!r} does not support constraints; use one of "
                             f"{sorted(k for k, v in METHODS.items() if v.supports_constraints)}")
        if info.constraints == "box" and constraints.has_general:
            raise ValueError(f"method {method!r} supports only box constraints (lb, ub), not "
                             "A x <= b; use 'newton-bound', 'bound' or 'squarem'")
    if method == "newton-bound":
        from zbound.solvers.majorization import newton_bound
        return newton_bound(model, x, opts, method)
    if method == "bound":
        from zbound.solvers.majorization import bound_mm
        return bound_mm(model, x, opts, method)
    if method == "squarem":
        from zbound.solvers.majorization import squarem
        return squarem(model, x, opts, method)
    if method in ("lbfgs", "bfgs", "cg", "newton-cg"):
        from zbound.solvers.baselines import scipy_minimize
        return scipy_minimize(model, x, opts, method)
    if method == "newton":
        from zbound.solvers.baselines import newton
        return newton(model, x, opts, method)
    from zbound.solvers.baselines import steepest_descent
    return steepest_descent(model, x, opts, method)


__all__ = ["minimize", "METHODS", "MethodInfo", "DEFAULT_METHOD", "LinearConstraints", "Result",
           "Trace"]
