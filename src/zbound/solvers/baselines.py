"""Baseline optimizers on exactly the same objective as the bound methods.

They call only ``model.value``, ``model.value_and_grad``, ``model.value_grad_hessian`` and
``model.hessian``:

- SciPy ``minimize`` with L-BFGS-B (box constraints allowed), BFGS, CG and Newton-CG (Newton
  with a line search, truncated-CG inner solve, exact Hessian from the model); the target test
  raises StopIteration from ``callback(intermediate_result)`` (SciPy >= 1.11). SciPy runs its
  own loop, so these override ``run`` and cannot be stepped with ``update``;
- Newton's method with a backtracking Armijo line search (dense Cholesky, or truncated PCG on
  Hessian-vector products for large p), own code;
- steepest descent with a backtracking Armijo line search that grows the trial step after each
  accepted one and refines it by quadratic interpolation, own code.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.optimize

from zbound.solvers.base import MethodInfo, Solver, State, little_left, register
from zbound.solvers.linesearch import armijo_search
from zbound.solvers.result import Recorder, Result, Status
from zbound.utils.linalg import cholesky_solve, jacobi
from zbound.utils.validation import POSITIVE, POSITIVE_INT

# Up to this many parameters SciPy's Newton-CG gets the dense Hessian, beyond it products.
_DENSE_HESS_MAX = 300


class _Cached:
    """value_and_grad with a one-entry cache.

    The cache serves the trace's gradient norm and SciPy's first call at x0, which the wrapper
    has already evaluated for the trace's first row (so the peer pays no extra evaluation).
    """

    __slots__ = ("vg", "x", "f", "g")

    def __init__(self, model):
        self.vg = model.value_and_grad
        self.x = None
        self.f = math.inf
        self.g = None

    def __call__(self, x):
        if self.x is not None and np.array_equal(x, self.x):
            return self.f, self.g.copy()
        f, g = self.vg(x)
        self.x, self.f, self.g = x.copy(), f, g
        return f, g


def _physical_memory() -> float:
    """The machine's physical memory in bytes (inf where the system does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return math.inf


class _ScipyMethod(Solver):
    scipy_method: str = ""

    def update(self, model, state):
        raise NotImplementedError(f"{self.info.name!r} runs SciPy's own loop: use run(), not "
                                  "init()/update()")

    def _hessian(self, model, p: int) -> dict:
        return {}

    def _scipy_options(self, model, p: int) -> tuple[dict, dict]:
        """SciPy's ``options`` and further keyword arguments (bounds, Hessian) for this run."""
        kwargs = {}
        if self.scipy_method == "L-BFGS-B":
            options = {"maxiter": self.max_iter, "gtol": self.tol, "ftol": self.ftol,
                       "maxfun": max(15000, 20 * self.max_iter)}
            cons = self.constraints
            if cons is not None:
                kwargs["bounds"] = scipy.optimize.Bounds(cons.lb, cons.ub)
        elif self.scipy_method == "Newton-CG":
            # SciPy's Newton-CG stops on the step size (xtol); the target is checked in the
            # callback.
            options = {"maxiter": self.max_iter, "xtol": 1e-12}
            kwargs.update(self._hessian(model, p))
        else:
            options = {"maxiter": self.max_iter, "gtol": self.tol, "norm": np.inf}
        return options, kwargs

    def _status(self, res, fun, x_out, f_out) -> tuple[Status, str | None]:
        """The status of a run SciPy ended itself (no test of the callback stopped it)."""
        if res.success:
            return Status.STATIONARY, str(res.message)
        # precision loss near the optimum counts as converged when the gradient is small
        g_chk = fun.g if np.array_equal(fun.x, x_out) else fun(x_out)[1]
        if float(np.max(np.abs(g_chk))) <= max(self.tol, 1e-5) * max(1.0, abs(f_out)):
            return Status.STATIONARY, f"{res.message} (gradient small: converged)"
        if "iteration" in str(res.message).lower():
            return Status.MAX_ITER, None
        return Status.FAILED, str(res.message)

    def run(self, model, x0) -> Result:
        model, x = self.prepare(model, x0)
        fun = _Cached(model)
        rec = Recorder()
        f0, g0 = fun(x)
        state = State(x, f0, g0, recorder=rec)
        self.record(model, state)
        # The stopping test is max|g| <= tol x max(1, |f|) at the current f, checked in the
        # callback; SciPy's own gtol (fixed for the run) is its floor, tol x max(1, |f0|) only
        # when it cannot be lower. (Scaling by the start's f let a poor random start, f0 = 50
        # against 0.5 at the optimum, stop a mixture's fit well above its optimum as converged.)

        prev = {"x": fun.x, "g": fun.g}       # the last iterate's (x, g) (never mutated)

        def stationary(f, g) -> bool:
            stat = math.inf if g is None else float(np.max(np.abs(g)))
            if stat > self.tol * max(1.0, abs(f)):
                return False
            if stat <= self.tol or prev["g"] is None:
                return True
            # the relative test alone: trusted where the last step's secant curvature
            # predicts little left to gain (see LBFGSBound.stop_status)
            s, y = fun.x - prev["x"], g - prev["g"]
            sy, yy = float(s @ y), float(y @ y)
            if not (sy > 0.0 and yy > 0.0):
                return True
            return little_left(0.5 * (sy / yy) * float(g @ g), f)

        reason = {"status": None}

        def callback(intermediate_result):
            xk = intermediate_result.x
            fk = float(intermediate_result.fun)
            gk = fun.g if fun.x is not None and np.array_equal(fun.x, xk) else None
            rec.record(fk, float(np.linalg.norm(gk)) if gk is not None else math.nan,
                       model.n_evals)
            state.nit += 1
            if self.target is not None and fk <= self.target:
                reason["status"] = Status.TARGET
                raise StopIteration
            if stationary(fk, gk):
                reason["status"] = Status.STATIONARY
                raise StopIteration
            if self.callback is not None and self.callback(xk, fk):
                reason["status"] = Status.CALLBACK
                raise StopIteration
            if gk is not None:
                prev["x"], prev["g"] = fun.x, fun.g

        options, kwargs = self._scipy_options(model, x.shape[0])
        if self.max_iter == 0 or (self.target is not None and f0 <= self.target):
            state.status = Status.TARGET if self.max_iter else Status.MAX_ITER
            return self.result(model, state)
        res = scipy.optimize.minimize(fun, x, jac=True, method=self.scipy_method,
                                      callback=callback, options=options, **kwargs)
        x_out = np.asarray(res.x, dtype=np.float64)
        f_out = float(res.fun)
        status, message = reason["status"], None
        if status is None:
            status, message = self._status(res, fun, x_out, f_out)
        g_out = fun.g if fun.x is not None and np.array_equal(fun.x, x_out) else None
        if len(rec) == 1 or rec.last_objective != f_out:
            rec.record(f_out, float(np.linalg.norm(g_out)) if g_out is not None else math.nan,
                       model.n_evals)
        state.x, state.f, state.g = x_out, f_out, g_out
        state.status, state.message = status, message
        out = self.result(model, state)
        out.info = {"scipy_message": str(res.message)}
        return out


@register
class ScipyLBFGSB(_ScipyMethod):
    info = MethodInfo("lbfgs", peer=True, constraints="box", description="SciPy L-BFGS-B")
    scipy_method = "L-BFGS-B"


@register
class ScipyBFGS(_ScipyMethod):
    info = MethodInfo("bfgs", peer=True, constraints="none", description="SciPy BFGS")
    scipy_method = "BFGS"

    def run(self, model, x0) -> Result:
        # SciPy's BFGS keeps a dense (p, p) inverse Hessian and forms products of its size: a
        # clear error where that cannot fit, not NumPy's MemoryError after the first steps
        p = int(np.asarray(x0).size)
        need = 3 * 8 * p * p
        if need > _physical_memory():
            raise ValueError(f"method 'bfgs' keeps dense ({p}, {p}) matrices, about "
                             f"{need / 2**30:.3g} GiB, more than this machine's memory; use "
                             "'lbfgs' or 'lbfgs-bound'")
        return super().run(model, x0)


@register
class ScipyCG(_ScipyMethod):
    info = MethodInfo("cg", peer=True, constraints="none",
                      description="SciPy nonlinear conjugate gradient")
    scipy_method = "CG"


@register
class ScipyNewtonCG(_ScipyMethod):
    info = MethodInfo("newton-cg", peer=True, constraints="none", needs=("hessian",),
                      description="SciPy Newton-CG: Newton with a line search, exact Hessian "
                                  "(dense up to 300 parameters, else Hessian-vector products)")
    scipy_method = "Newton-CG"

    def _hessian(self, model, p):
        """``hess`` (dense, small p) or ``hessp`` (products, one Hessian per point)."""
        if p <= _DENSE_HESS_MAX:
            return {"hess": lambda x: model.hessian(x).to_dense()}
        cache = {"x": None, "H": None}

        def hessp(x, v):
            if cache["x"] is None or not np.array_equal(cache["x"], x):
                cache["x"], cache["H"] = x.copy(), model.hessian(x)
            return cache["H"].matvec(v)

        return {"hessp": hessp}


@dataclass
class NewtonState(State):
    """Newton's state: the Hessian at x, the first gradient norm (the forcing term's scale),
    the inner solver and its product limit."""

    H: Any = None
    g0: float = 1.0
    inner: str = "cholesky"
    cg_maxiter: int = 20


@register
class Newton(Solver):
    """Newton's method with a backtracking Armijo line search.

    Direction d = -H^{-1} g by dense Cholesky (p <= 300 by default; if H is not positive definite
    a multiple of the identity is added until it is) or by truncated Jacobi-PCG on products
    (forcing term min(0.5, sqrt(||g|| / ||g0||))). The full step is tried with one
    ``value_grad_hessian`` call; shorter steps (halving) use ``value`` only.
    """

    info = MethodInfo("newton", peer=True, constraints="none",
                      needs=("value_grad_hessian", "value"),
                      description="Newton's method with backtracking Armijo line search "
                                  "(Cholesky or truncated CG)")
    options = {"cg_maxiter": None}
    option_constraints = {"cg_maxiter": [None, POSITIVE_INT]}

    def init(self, model, x):
        p = x.shape[0]
        f, g, H = model.value_grad_hessian(x)
        return NewtonState(x, f, g, H=H, g0=max(float(math.sqrt(g @ g)), 1e-300),
                           inner=self.resolve_inner(p),
                           cg_maxiter=self.opts["cg_maxiter"] or max(20, min(p, 250)))

    def update(self, model, state):
        f, g, x, H = state.f, state.g, state.x, state.H
        p = x.shape[0]
        gn = float(math.sqrt(g @ g))
        if state.inner == "cholesky":
            Hd = H.to_dense()
            d = cholesky_solve(Hd, g)
            shift = 1e-8 * max(1.0, float(np.max(np.abs(np.diag(Hd)))))
            while d is None:
                d = cholesky_solve(Hd + shift * np.eye(p), g)
                shift *= 10.0
            d = -d
        else:
            d = -H.solve(g, "cg", rtol=min(0.5, math.sqrt(gn / state.g0)),
                         maxiter=state.cg_maxiter, precond=jacobi(H.diagonal()))
        gd = float(g @ d)
        if not gd < 0.0:
            d = -g
            gd = -gn * gn
        f_new, g_new, H_new = model.value_grad_hessian(x + d)
        found = armijo_search(lambda t: (model.value(x + t * d), None), f, gd, 1.0,
                              shrink="halve", min_step=1e-12, first=(f_new, None))
        if found is None:
            state.status = Status.LINE_SEARCH_FAILED
            return
        step = found[0]
        x_new = x + step * d
        if step != 1.0:
            f_new, g_new, H_new = model.value_grad_hessian(x_new)
        state.H = H_new
        self.accept(model, state, x_new, f_new, g_new)


@dataclass
class StepState(State):
    """A first-order method's state: the trial step length of the next iteration."""

    step: float = 1.0


@register
class SteepestDescent(Solver):
    """Gradient descent d = -g with a backtracking Armijo line search.

    The trial step starts at twice the last accepted step (step growth; 1 / ||g|| at first) and
    shrinks by safeguarded quadratic interpolation (within [0.1, 0.5] of the failed step). Each
    trial is a ``value_and_grad`` call, so the accepted trial also gives the next gradient.
    """

    info = MethodInfo("steepest", peer=True, constraints="none",
                      description="steepest descent with backtracking Armijo line search and "
                                  "step growth")

    def init(self, model, x):
        f, g = model.value_and_grad(x)
        return StepState(x, f, g, step=1.0 / max(math.sqrt(float(g @ g)), 1e-12))

    def update(self, model, state):
        f, g, x = state.f, state.g, state.x

        def trial(t):
            f_t, g_t = model.value_and_grad(x - t * g)
            return f_t, g_t

        found = armijo_search(trial, f, -float(g @ g), state.step, trials=60)
        if found is None:
            state.status = Status.LINE_SEARCH_FAILED
            return
        step, f_new, g_new = found
        state.step = 2.0 * step
        self.accept(model, state, x - step * g, f_new, g_new)


@dataclass
class FirstOrderState(State):
    """A fixed-rule method's state: its update rule (``rule(x, grad) -> new x``, with the
    rule's own memory), whether the objective left the finite numbers, and the iterates when
    kept."""

    rule: Any = None
    diverged: bool = False
    iterates: list | None = None


def _all_finite(v: np.ndarray) -> bool:
    """Every entry finite: one dot product (finite exactly when they all are, short of
    entries beyond 1e154, which take the elementwise test)."""
    return math.isfinite(float(v @ v)) or bool(np.isfinite(v).all())


def _anywhere(x) -> bool:
    """The domain of a model that states none: everything finite."""
    return True


class FixedRule(Solver):
    """x <- rule(x, grad f(x)) with no line search, the objective and gradient once per
    iterate: the first-order baselines of the papers (fixed-step gradient descent, Gradient
    EM, full-batch Adam). Not monotone, so a rise does not stop them; they stop after
    ``max_iter`` iterations, when an iteration lowers f by at least 0 and at most ``ftol`` *
    max(1, |f|), when ``||grad||_inf <= tol * max(1, |f|)`` (``tol = 0``: never), or when the
    objective becomes NaN or inf or the iterate leaves the model's domain (``model.in_domain``
    where it has one): too large a step, ``info["diverged"]``, the last finite iterate kept and
    an infinite objective recorded. Subclasses give ``make_rule(model, x)``."""

    options = {"keep_iterates": False}
    option_constraints = {"keep_iterates": ["boolean"]}

    def make_rule(self, model, x):
        raise NotImplementedError

    def init(self, model, x):
        with np.errstate(all="ignore"):
            f, g = model.value_and_grad(x)
        return FirstOrderState(x, f, g, rule=self.make_rule(model, x),
                               iterates=[x.copy()] if self.opts["keep_iterates"] else None)

    def update(self, model, state):
        with np.errstate(all="ignore"):          # a step too long: detected below
            new = state.rule(state.x, state.g)
            f, g = model.value_and_grad(new)
        if not (math.isfinite(f) and _all_finite(g) and _all_finite(new)
                and getattr(model, "in_domain", _anywhere)(new)):
            state.diverged = True
            state.status = Status.FAILED
            state.message = "the objective became non-finite (step size too large?)"
            if state.recorder is not None:
                state.recorder.record(math.inf, math.nan, model.n_evals)
            state.nit += 1
            return
        if state.iterates is not None:
            state.iterates.append(new.copy())
        self.accept(model, state, new, f, g)

    def stationarity(self, model, state):
        return float(np.max(np.abs(state.g))) if self.tol > 0.0 else math.inf

    def stop_status(self, state, stat):
        if self.target is not None and state.f <= self.target:
            return Status.TARGET
        if stat <= self.tol * max(1.0, abs(state.f)):
            return Status.STATIONARY
        if self.ftol > 0.0 and state.f_prev is not None and \
                0.0 <= state.f_prev - state.f <= self.ftol * max(1.0, abs(state.f)):
            return Status.FTOL
        return None

    def result_info(self, state):
        info = {**self.rule_info(), "diverged": state.diverged}
        if state.iterates is not None:
            info["iterates"] = state.iterates
        return info

    def rule_info(self) -> dict:
        return {}


@register
class GradientDescent(FixedRule):
    """``"gd"``: x <- x - lr grad f(x), a fixed step (the papers' inner M-step and
    first-order baseline; ``"steepest"`` is the line-searched one)."""

    info = MethodInfo("gd", peer=True, constraints="none", needs=("value_and_grad",),
                      step_size=True,
                      description="gradient descent with a fixed step size lr")
    options = {**FixedRule.options, "lr": 1.0}
    option_constraints = {**FixedRule.option_constraints, "lr": [POSITIVE]}

    def make_rule(self, model, x):
        lr = float(self.opts["lr"])
        return lambda x, g: x - lr * g

    def rule_info(self):
        return {"lr": float(self.opts["lr"])}
