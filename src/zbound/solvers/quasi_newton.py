"""Quasi-Newton directions safeguarded by the bound: ``"lbfgs-bound"`` (monotone).

On problems where the Alg. 1 / Alg. 3 curvature is far above the Hessian (chain CRFs with many
labels: along the gradient the chain bound's curvature is 20-70 times the Hessian at theta = 0
and several hundred times near the optimum, docs/crf.md), a step that minimizes the majorizer
is very short, and even an exact Newton step costs dozens of Hessian products per iteration.
This method lets limited-memory BFGS choose the direction and uses the bound only where a
quasi-Newton line search would run out of options:

- the unit quasi-Newton step is taken when it passes the Armijo test (one value-and-gradient
  evaluation per iteration, no line search); the first step (no curvature pairs yet) tries
  the length 1 / ||g|| along -g (CRFsuite's first step; ``first_step="hessian"``: the length
  -g^T d / d^T H d from one Hessian product);
- a trial that fails Armijo is followed by up to ``backtracks`` value-only interpolated
  lengths;
- only if those fail too, the step goes to the minimizer of the majorizer along the
  direction, s* = -g^T d / d^T C d (<= 1), which surely descends: J(x + s d) <= J + s g^T d +
  s^2/2 d^T C d. On the CRF corpora of ``zbound bench crf`` this last resort is never reached
  (0 bound steps): the bound is the method's guarantee of monotone progress, not its speed.

Every accepted iterate decreases the objective (tested in tests/solvers/test_quasi_newton.py and
tests/estimators/test_chain_crf.py). It is not in the method registry (whose list of batch
methods the core tests fix): pass the class, ``minimize(model, x0, method=LBFGSBound)``, or
``ChainCRF(solver="lbfgs-bound")``. The two-loop recursion keeps ``memory`` pairs (s, y) with
s^T y > 0 (the objective is convex wherever a bound is used; pairs that fail are skipped).
"""

from __future__ import annotations

import math

import numpy as np

from zbound.solvers._linesearch import ARMIJO as _ARMIJO
from zbound.solvers._linesearch import backtrack
from zbound.solvers.base import MethodInfo, Solver, State
from zbound.solvers.result import Status

_ROUND = 1e-12


def two_loop(g: np.ndarray, S: list, Y: list, rho: list) -> np.ndarray:
    """-H g for the L-BFGS inverse Hessian H of the pairs (S, Y), H0 = (s^T y / y^T y) I.

    BLAS ddot / daxpy in place (numpy's ``q -= a * y`` allocates and passes over a temporary:
    at p ~ 10^6 the recursion is memory-bound and this halves its cost)."""
    from scipy.linalg.blas import daxpy, ddot
    q = np.array(g, dtype=np.float64, copy=True)
    alpha = []
    for s, y, r in zip(reversed(S), reversed(Y), reversed(rho)):
        a = r * ddot(s, q)
        q = daxpy(y, q, a=-a)
        alpha.append(a)
    y = Y[-1]
    q *= ddot(S[-1], y) / ddot(y, y)
    for s, y, r, a in zip(S, Y, rho, reversed(alpha)):
        b = r * ddot(y, q)
        q = daxpy(s, q, a=a - b)
    q *= -1.0
    return q


class LBFGSBound(Solver):
    """L-BFGS directions; the bound gives the step length where the unit step fails (monotone).

    Options: ``memory`` (pairs kept, default 10); ``first_step``: "gradient" (default: the
    trial length 1 / ||g||), "hessian" (the length -g^T d / d^T H d from one Hessian product,
    when the model has ``hessian``) or "bound" (the bound's step); ``backtracks`` (default 4):
    value-only trials (safeguarded quadratic interpolation) after a trial that fails Armijo,
    before the bound. ``result_info``: how many steps were initial, unit, interpolated and by
    the bound.
    """

    info = MethodInfo(
        "lbfgs-bound", peer=False, constraints="none", uses_bound=True,
        needs=("majorizer",),
        description="L-BFGS direction, unit step when it passes Armijo, else interpolated "
                    "lengths, else the minimizer of the bound along it; monotone")
    options = {"memory": 10, "first_step": "gradient", "backtracks": 4}

    def check_options(self):
        b = self.opts["backtracks"]
        if isinstance(b, bool) or not isinstance(b, int | np.integer) or b < 0:
            raise ValueError(f"backtracks must be an integer >= 0, got {b!r}")
        if self.opts["first_step"] not in ("gradient", "hessian", "bound"):
            raise ValueError(f"first_step must be 'gradient', 'hessian' or 'bound', got "
                             f"{self.opts['first_step']!r}")
        k = self.opts["memory"]
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"memory must be an integer >= 1, got {k!r}")

    def init(self, model, x):
        f, g = model.value_and_grad(x)
        state = State(x, f, g)
        state.extra.update(S=[], Y=[], rho=[], unit_steps=0, bound_steps=0,
                           interpolated_steps=0, initial_steps=0)
        return state

    def _bound_step(self, model, state, d):
        """x + s* d with s* the majorizer's minimizer along d (capped at 1)."""
        maj = model.majorizer(state.x, self.order)
        gd = float(state.g @ d)
        dCd = float(d @ maj.curvature.matvec(d))
        if not (dCd > 0.0 and math.isfinite(dCd)):
            return None
        return state.x + min(1.0, -gd / dCd) * d

    def _first_length(self, model, x, g, d, gd):
        """Trial length of the first step (no curvature pairs yet), None for the bound."""
        rule = self.opts["first_step"]
        if rule == "gradient":
            return 1.0 / math.sqrt(-gd)                 # d = -g: CRFsuite's 1 / ||g||
        if rule == "hessian" and callable(getattr(model, "hessian", None)):
            dHd = float(d @ model.hessian(x).matvec(d))
            if dHd > 0.0 and math.isfinite(dHd):
                return -gd / dHd
        return None

    def update(self, model, state):
        ex = state.extra
        f, g, x = state.f, state.g, state.x
        S, Y, rho = ex["S"], ex["Y"], ex["rho"]
        d = two_loop(g, S, Y, rho) if S else -g
        gd = float(g @ d)
        if not gd < 0.0:                      # not a descent direction: restart
            S.clear(), Y.clear(), rho.clear()
            d, gd = -g, -float(g @ g)
        if gd == 0.0:
            state.status = Status.ZERO_STEP
            return
        x_new = None
        step = 1.0
        if not S:                  # no pairs yet: the first trial length
            step = self._first_length(model, x, g, d, gd)
        if step is not None:
            x_try = x + step * d if step != 1.0 else x + d
            f_new, g_new = model.value_and_grad(x_try)
            if f_new <= f + _ARMIJO * step * gd:
                x_new = x_try
                ex["unit_steps" if S else "initial_steps"] += 1
            else:
                # value-only backtracking: up to ``backtracks`` interpolated Armijo trials
                found = backtrack(model.value, x, d, f, gd, step, f_new, self.opts["backtracks"])
                if found is not None:
                    x_new = x + found[0] * d
                    f_new, g_new = model.value_and_grad(x_new)
                    ex["interpolated_steps"] += 1
        if x_new is None:
            x_new = self._bound_step(model, state, d)
            if x_new is None:
                state.status = Status.NO_DECREASE
                return
            f_new, g_new = model.value_and_grad(x_new)
            if not f_new <= f + _ROUND * max(1.0, abs(f)):
                state.status = Status.NO_DECREASE
                return
            ex["bound_steps"] += 1
        s = x_new - x
        y = g_new - g
        sy = float(s @ y)
        if sy > 1e-12 * float(y @ y) and sy > 0.0:
            if len(S) == self.opts["memory"]:
                S.pop(0), Y.pop(0), rho.pop(0)
            S.append(s)
            Y.append(y)
            rho.append(1.0 / sy)
        self.accept(model, state, x_new, f_new, g_new)

    def result_info(self, state):
        return {k: state.extra[k] for k in ("initial_steps", "unit_steps", "interpolated_steps",
                                            "bound_steps")}


__all__ = ["LBFGSBound", "two_loop"]
