"""Baseline optimizers on exactly the same objective as the bound methods (DESIGN.md 5).

They call only ``model.value``, ``model.value_and_grad`` and ``model.value_grad_hessian``:

- SciPy ``minimize`` with L-BFGS-B (box constraints allowed), BFGS, CG and Newton-CG (Newton
  with a line search, truncated-CG inner solve, exact Hessian from the model); the target test
  raises StopIteration from ``callback(intermediate_result)`` (SciPy >= 1.11);
- Newton's method with a backtracking Armijo line search (dense Cholesky, or truncated PCG on
  Hessian-vector products for large p), own code;
- steepest descent with a backtracking Armijo line search that grows the trial step after each
  accepted one and refines it by quadratic interpolation, own code.

All return :class:`zbound.solvers.result.Result` with a per-iteration trace.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.optimize

from zbound.solvers._common import Options, finish, resolve_inner, stop_reason
from zbound.solvers._linalg import cholesky_solve, dense, jacobi, pcg
from zbound.solvers.result import Recorder, Result

_ARMIJO = 1e-4
_SCIPY = {"lbfgs": "L-BFGS-B", "bfgs": "BFGS", "cg": "CG", "newton-cg": "Newton-CG"}
# Up to this many parameters SciPy's Newton-CG gets the dense Hessian, beyond it products.
_DENSE_HESS_MAX = 300


class _Counted:
    """value_and_grad with a call counter and a one-entry cache.

    The cache serves the trace's gradient norm and SciPy's first call at x0, which the wrapper
    has already evaluated for the trace's first row (so the peer pays no extra evaluation).
    """

    __slots__ = ("vg", "n", "x", "f", "g")

    def __init__(self, model):
        self.vg = model.value_and_grad
        self.n = 0
        self.x = None
        self.f = math.inf
        self.g = None

    def __call__(self, x):
        if self.x is not None and np.array_equal(x, self.x):
            return self.f, self.g.copy()
        f, g = self.vg(x)
        self.n += 1
        self.x, self.f, self.g = x.copy(), f, g
        return f, g


def scipy_minimize(model, x: np.ndarray, opts: Options, method: str = "lbfgs") -> Result:
    """SciPy L-BFGS-B / BFGS / CG / Newton-CG on ``model.value_and_grad`` (and, for Newton-CG,
    the model's exact Hessian); stops at ``opts.target``."""
    scipy_method = _SCIPY[method]
    fun = _Counted(model)
    rec = Recorder()
    f0, g0 = fun(x)
    rec.record(f0, float(np.linalg.norm(g0)), 1)
    state = {"reason": None, "nit": 0, "f_prev": None}
    gtol = opts.tol * max(1.0, abs(f0))

    def callback(intermediate_result):
        xk = intermediate_result.x
        fk = float(intermediate_result.fun)
        gk = fun.g if fun.x is not None and np.array_equal(fun.x, xk) else None
        gnorm = float(np.linalg.norm(gk)) if gk is not None else math.nan
        rec.record(fk, gnorm, fun.n)
        state["nit"] += 1
        if opts.target is not None and fk <= opts.target:
            state["reason"] = "target objective reached"
            raise StopIteration
        if opts.callback is not None and opts.callback(xk, fk):
            state["reason"] = "stopped by callback"
            raise StopIteration

    kwargs = {}
    if scipy_method == "L-BFGS-B":
        options = {"maxiter": opts.max_iter, "gtol": gtol, "ftol": opts.ftol,
                   "maxfun": max(15000, 20 * opts.max_iter)}
        cons = opts.constraints
        if cons is not None:
            kwargs["bounds"] = scipy.optimize.Bounds(cons.lb, cons.ub)
    elif scipy_method == "Newton-CG":
        # SciPy's Newton-CG stops on the step size (xtol); the target or gtol-equivalent
        # stationarity is checked in the callback through the cached gradient.
        options = {"maxiter": opts.max_iter, "xtol": 1e-12}
        kwargs.update(_scipy_hessian(model, x.shape[0]))
    else:
        options = {"maxiter": opts.max_iter, "gtol": gtol, "norm": np.inf}
    if opts.max_iter == 0 or (opts.target is not None and f0 <= opts.target):
        reason = "target objective reached" if opts.max_iter else None
        return finish(method, x, f0, g0, rec, 0, {"value_and_grad": fun.n}, reason, opts)
    res = scipy.optimize.minimize(fun, x, jac=True, method=scipy_method, callback=callback,
                                  options=options, **kwargs)
    reason = state["reason"]
    x_out = np.asarray(res.x, dtype=np.float64)
    f_out = float(res.fun)
    if reason is None:
        reason = str(res.message) if res.success else None
        if not res.success:
            # precision loss near the optimum counts as converged when the gradient is small
            g_chk = fun.g if np.array_equal(fun.x, x_out) else fun(x_out)[1]
            if float(np.max(np.abs(g_chk))) <= max(gtol, 1e-5 * max(1.0, abs(f_out))):
                reason = f"{res.message} (gradient small: converged)"
            elif "iteration" not in str(res.message).lower():
                return _failed(method, x_out, f_out, rec, state["nit"], fun.n, str(res.message),
                               opts)
    g_out = fun.g if fun.x is not None and np.array_equal(fun.x, x_out) else None
    if len(rec) == 1 or rec.last_objective != f_out:
        rec.record(f_out, float(np.linalg.norm(g_out)) if g_out is not None else math.nan, fun.n)
    return finish(method, x_out, f_out, g_out, rec, state["nit"], {"value_and_grad": fun.n},
                  reason, opts, info={"scipy_message": str(res.message)})


def _scipy_hessian(model, p: int) -> dict:
    """``hess`` (dense, small p) or ``hessp`` (products, one Hessian per point) for SciPy."""
    if p <= _DENSE_HESS_MAX:
        return {"hess": lambda x: dense(model.hessian(x))}
    cache = {"x": None, "H": None}

    def hessp(x, v):
        if cache["x"] is None or not np.array_equal(cache["x"], x):
            cache["x"], cache["H"] = x.copy(), model.hessian(x)
        return cache["H"].matvec(v)

    return {"hessp": hessp}


def _failed(method, x, f, rec, nit, n, message, opts) -> Result:
    out = finish(method, x, f, None, rec, nit, {"value_and_grad": n}, None, opts)
    out.converged = False
    out.message = message
    return out


def newton(model, x: np.ndarray, opts: Options, method: str = "newton") -> Result:
    """Newton's method with a backtracking Armijo line search.

    Direction d = -H^{-1} g by dense Cholesky (p <= 300 by default; if H is not positive definite
    a multiple of the identity is added until it is) or by truncated Jacobi-PCG on ``H.matvec``
    (forcing term min(0.5, sqrt(||g|| / ||g0||))). The full step is tried with one
    ``value_grad_hessian`` call; shorter steps (halving) use ``value`` only.
    """
    p = x.shape[0]
    inner = resolve_inner(opts.inner, p)
    counts = {"value_grad_hessian": 0, "value": 0}
    rec = Recorder()
    vgh = model.value_grad_hessian
    f, g, H = vgh(x)
    counts["value_grad_hessian"] += 1
    gn = float(math.sqrt(g @ g))
    g0 = max(gn, 1e-300)
    rec.record(f, gn, 1)
    cg_maxiter = opts.extra.get("cg_maxiter", max(20, min(p, 250)))
    nit = 0
    f_prev = None
    reason = None
    while True:
        reason = stop_reason(f, f_prev, float(np.max(np.abs(g))), opts)
        if reason is not None or nit >= opts.max_iter:
            break
        if inner == "cholesky":
            Hd = dense(H)
            d = cholesky_solve(Hd, g)
            shift = 1e-8 * max(1.0, float(np.max(np.abs(np.diag(Hd)))))
            while d is None:
                d = cholesky_solve(Hd + shift * np.eye(p), g)
                shift *= 10.0
            d = -d
        else:
            d = -pcg(H.matvec, g, jacobi(H.diagonal()), min(0.5, math.sqrt(gn / g0)),
                     cg_maxiter)[0]
        gd = float(g @ d)
        if not gd < 0.0:
            d = -g
            gd = -gn * gn
        f_new, g_new, H_new = vgh(x + d)
        counts["value_grad_hessian"] += 1
        step = 1.0
        ok = f_new <= f + _ARMIJO * gd
        while not ok and step > 1e-12:
            step *= 0.5
            f_new = model.value(x + step * d)
            counts["value"] += 1
            ok = f_new <= f + _ARMIJO * step * gd
        if not ok:
            reason = "line search failed"
            break
        x_new = x + step * d
        if step != 1.0:
            f_new, g_new, H_new = vgh(x_new)
            counts["value_grad_hessian"] += 1
        nit += 1
        f_prev, f, g, H, x = f, f_new, g_new, H_new, x_new
        gn = float(math.sqrt(g @ g))
        rec.record(f, gn, sum(counts.values()))
        if opts.callback is not None and opts.callback(x, f):
            reason = "stopped by callback"
            break
    return finish(method, x, f, g, rec, nit, counts, reason, opts)


def steepest_descent(model, x: np.ndarray, opts: Options, method: str = "steepest") -> Result:
    """Gradient descent d = -g with a backtracking Armijo line search.

    The trial step starts at twice the last accepted step (step growth; 1 / ||g|| at first) and
    shrinks by safeguarded quadratic interpolation (within [0.1, 0.5] of the failed step). Each
    trial is a ``value_and_grad`` call, so the accepted trial also gives the next gradient.
    """
    counts = {"value_and_grad": 0}
    rec = Recorder()
    vg = model.value_and_grad
    f, g = vg(x)
    counts["value_and_grad"] += 1
    gg = float(g @ g)
    rec.record(f, math.sqrt(gg), 1)
    step = 1.0 / max(math.sqrt(gg), 1e-12)
    nit = 0
    f_prev = None
    reason = None
    while True:
        reason = stop_reason(f, f_prev, float(np.max(np.abs(g))), opts)
        if reason is not None or nit >= opts.max_iter:
            break
        ok = False
        for _ in range(60):
            x_new = x - step * g
            f_new, g_new = vg(x_new)
            counts["value_and_grad"] += 1
            if f_new <= f - _ARMIJO * step * gg:
                ok = True
                break
            # minimizer of the quadratic through f, slope -gg and f_new, safeguarded
            denom = 2.0 * (f_new - f + step * gg)
            trial = gg * step * step / denom if denom > 0 and np.isfinite(f_new) else 0.5 * step
            step = min(0.5 * step, max(0.1 * step, trial))
        if not ok:
            reason = "line search failed"
            break
        nit += 1
        f_prev, f, g, x = f, f_new, g_new, x_new
        gg = float(g @ g)
        rec.record(f, math.sqrt(gg), counts["value_and_grad"])
        step *= 2.0
        if opts.callback is not None and opts.callback(x, f):
            reason = "stopped by callback"
            break
    return finish(method, x, f, g, rec, nit, counts, reason, opts)
