"""Batch bound majorization: Alg. 2 of Jebara & Choromanska (2012) and monotone accelerations.

Every variant keeps the objective monotone: each accepted iterate has J <= the previous one.

- :func:`bound_mm` -- Alg. 2 as published: at theta~ build the quadratic majorizer
  J(theta~ + d) <= J + g^T d + 1/2 d^T C d from Alg. 1 (``model.majorizer``) and move to its
  minimizer, theta~ - C^{-1} g without constraints, or the QP over the convex set with them
  (step 3 of Alg. 2). A truncated CG solve from d = 0 still decreases the majorizer.
- :func:`squarem` -- SQUAREM (Varadhan & Roland 2008, scheme S3) on the MM map F, with the
  monotonicity safeguard: backtrack the extrapolation towards the plain MM step whenever the
  extrapolated point does not decrease the objective.
- :func:`newton_bound` -- a Newton step with the exact Hessian (the QP with the Hessian under
  constraints), accepted only if it gives sufficient decrease; otherwise the bound step. The bound
  is never computed when the Newton step is accepted (DESIGN.md 3.2: fastest of all).

All return :class:`zbound.solvers.result.Result`; options are validated once by
:func:`zbound.solvers._common.make_options`.
"""

from __future__ import annotations

import math

import numpy as np

from zbound.solvers._common import Options, finish, resolve_inner, stop_reason
from zbound.solvers._linalg import block_jacobi, cholesky_solve, curvature_solve, dense, pcg
from zbound.solvers.result import Recorder, Result

_ARMIJO = 1e-4
# Tolerated objective increase from rounding on an MM step that the bound guarantees to descend.
_ROUND = 1e-12
# Value-only backtracking trials along a rejected Newton direction before the bound step.
_BACKTRACKS = 4
# Upper limit of SQUAREM's adaptive step bound alpha_max (it grows 4x whenever it binds).
_ALPHA_CAP = 1e8


def _norm(g: np.ndarray) -> float:
    return float(math.sqrt(g @ g))


def _mm_step(maj, opts: Options, inner: str) -> tuple[np.ndarray, float]:
    """Step d minimizing the majorizer (over the constraints if any) and stationarity ||C d||.

    Unconstrained: d = -C^{-1} g, stationarity ||g||_inf. Constrained: the QP of Alg. 2 step 3,
    pulled back onto the feasible set and, if the QP answer is inexact, shortened by the exact
    line search on the (convex) majorizer so that the majorizer surely decreases.
    """
    g = maj.grad
    cons = opts.constraints
    if cons is None:
        return -curvature_solve(maj.curvature, g, inner, rtol=opts.extra.get("cg_rtol", 1e-8)), \
            float(np.max(np.abs(g)))
    C = dense(maj.curvature)
    return _constrained_step(C, g, maj.theta, cons)


def _constrained_step(C: np.ndarray, g: np.ndarray, theta: np.ndarray, cons):
    """QP step of Alg. 2 (step 3) and the stationarity measure at theta.

    The measure is the projected gradient for box constraints (exact, independent of the QP
    solver's accuracy) and ||C d||_inf with general inequalities (0 iff theta is a KKT point).
    """
    d = cons.solve_qp(C, g, theta)
    d *= cons.max_feasible_fraction(theta, d)
    Cd = C @ d
    gd = float(g @ d)
    dCd = float(d @ Cd)
    if gd >= 0.0:
        d = np.zeros_like(d)
        Cd = np.zeros_like(d)
    elif gd + 0.5 * dCd > 0.0 and dCd > 0.0:  # inexact QP answer: exact line search on majorizer
        s = min(1.0, -gd / dCd)
        d *= s
        Cd *= s
    if cons.has_general:
        return d, float(np.max(np.abs(Cd)))
    return d, cons.projected_gradient(theta, g)


def bound_mm(model, x: np.ndarray, opts: Options, method: str = "bound") -> Result:
    """Alg. 2 (batch bound majorization), one Alg. 1 bound per iteration.

    model : follows :class:`zbound.models.base.Model`; x : (p,) feasible start (validated).
    """
    inner = resolve_inner(opts.inner, x.shape[0], bound=True)
    counts = {"bound": 0}
    rec = Recorder()
    maj = model.majorizer(x, opts.order)
    counts["bound"] += 1
    f = maj.value
    rec.record(f, _norm(maj.grad), 1)
    reason = None
    nit = 0
    f_prev = None
    while True:
        d, stat = _mm_step(maj, opts, inner)
        reason = stop_reason(f, f_prev, stat, opts)
        if reason is None and not d.any():
            reason = "zero step: stationary to the accuracy of the step solver"
        if reason is not None or nit >= opts.max_iter:
            break
        x_new = x + d
        maj_new = model.majorizer(x_new, opts.order)
        counts["bound"] += 1
        f_new = maj_new.value
        if not f_new <= f + _ROUND * max(1.0, abs(f)):
            reason = "no decrease (numerical limit of the bound step)"
            break
        nit += 1
        f_prev, f, x, maj = f, f_new, x_new, maj_new
        rec.record(f, _norm(maj.grad), counts["bound"])
        if opts.callback is not None and opts.callback(x, f):
            reason = "stopped by callback"
            break
    return finish(method, x, f, maj.grad, rec, nit, counts, reason, opts)


def squarem(model, x: np.ndarray, opts: Options, method: str = "squarem",
            max_backtracks: int = 0, step_factor: float = 4.0) -> Result:
    """SQUAREM-accelerated Alg. 2 (Varadhan & Roland 2008, S3 steplength), monotone.

    One cycle from x0 with majorizer M0: x1 = F(x0), x2 = F(x1), r = x1 - x0,
    v = x2 - 2 x1 + x0, alpha = -||r|| / ||v|| clipped to [-alpha_max, -1], extrapolate
    x' = x0 - 2 alpha r + alpha^2 v (projected onto the constraints). x' is accepted if
    J(x') <= J(x1); otherwise alpha moves halfway to -1 up to ``max_backtracks`` times, then the
    plain MM step x2 = F(x1) is taken (always a descent). The majorizer built at x' is the first
    MM step of the next cycle, so every accepted bound is used. alpha_max grows by
    ``step_factor`` when the clip binds (the SQUAREM package's adaptive step bound).
    ``max_iter`` counts bound evaluations. No backtracking (the default) measured best: bound
    evaluations to a 1e-6 target at C = 10 fell from 64 to 41 (SPECT) and 40 to 31
    (ionosphere), against 259 and 181 for plain Alg. 2, and stayed ~80 on wine (plain 889).
    """
    inner = resolve_inner(opts.inner, x.shape[0], bound=True)
    cons = opts.constraints
    counts = {"bound": 0}
    rec = Recorder()
    maj = model.majorizer(x, opts.order)
    counts["bound"] += 1
    f = maj.value
    rec.record(f, _norm(maj.grad), 1)
    alpha_max = 1.0
    nit = cycles = 0
    f_prev = None
    reason = None
    n_extrapolated = 0

    def accept(x_new, maj_new):
        nonlocal x, maj, f, f_prev, nit
        f_prev, f, x, maj = f, maj_new.value, x_new, maj_new
        nit += 1
        rec.record(f, _norm(maj.grad), counts["bound"])

    def mm_advance(x_new):
        """Move to x_new = F(x) (a plain MM step): build its bound and accept it; False when
        rounding ate the guaranteed decrease."""
        maj_new = model.majorizer(x_new, opts.order)
        counts["bound"] += 1
        if not maj_new.value <= f + _ROUND * max(1.0, abs(f)):
            return False
        accept(x_new, maj_new)
        return True

    while True:
        # step 1: x1 = F(x0)
        d0, stat = _mm_step(maj, opts, inner)
        reason = stop_reason(f, f_prev, stat, opts)
        if reason is None and not d0.any():
            reason = "zero step: stationary to the accuracy of the step solver"
        if reason is not None or counts["bound"] >= opts.max_iter:
            break
        x0 = x
        x1 = x0 + d0
        if not mm_advance(x1):
            reason = "no decrease (numerical limit of the bound step)"
            break
        if opts.callback is not None and opts.callback(x, f):
            reason = "stopped by callback"
            break
        # step 2: x2 = F(x1)
        d1, stat = _mm_step(maj, opts, inner)
        reason = stop_reason(f, f_prev, stat, opts)
        if reason is not None or counts["bound"] >= opts.max_iter:
            break
        r = d0
        v = d1 - d0
        vv = float(v @ v)
        rr = float(r @ r)
        # v = 0: the MM map moved by the same step twice (or not at all); no curvature
        # information to extrapolate with, so take the plain step.
        raw = -math.sqrt(rr / vv) if vv > 1e-300 and rr > 0 else -1.0
        clipped = raw <= -alpha_max and alpha_max < _ALPHA_CAP
        alpha = max(-alpha_max, min(-1.0, raw))
        cycles += 1
        f1 = f
        accepted = False
        if alpha == -1.0 and clipped:
            alpha_max *= step_factor
        for attempt in range(max_backtracks + 1):
            if alpha == -1.0:
                break
            x_ext = x0 - 2.0 * alpha * r + (alpha * alpha) * v
            if cons is not None and cons.violation(x_ext) > 0.0:
                x_ext = cons.project(x_ext)
            if not np.isfinite(x_ext).all():
                alpha = 0.5 * (alpha - 1.0)
                continue
            maj_ext = model.majorizer(x_ext, opts.order)
            counts["bound"] += 1
            if maj_ext.value <= f1:
                if attempt == 0 and clipped:
                    alpha_max *= step_factor
                accept(x_ext, maj_ext)
                accepted = True
                n_extrapolated += 1
                break
            alpha = 0.5 * (alpha - 1.0)
            if counts["bound"] >= opts.max_iter:
                break
        if not accepted:
            # the plain MM step from x1: guaranteed descent
            if not mm_advance(x1 + d1):
                reason = "no decrease (numerical limit of the bound step)"
                break
        if opts.callback is not None and opts.callback(x, f):
            reason = "stopped by callback"
            break
    return finish(method, x, f, maj.grad, rec, nit, counts, reason, opts,
                  info={"cycles": cycles, "extrapolations_accepted": n_extrapolated})


class _NewtonSolver:
    """Newton direction -H^{-1} g: dense Cholesky, or truncated PCG for large p.

    The PCG path preconditions with the class-block Jacobi matrix of H (DESIGN.md 3.3) and
    rebuilds it only when the last solve needed more than ``refresh`` products (a lagged
    preconditioner is still SPD; building one costs about as much as 50 products on digits).
    Forcing term min(0.3, 30 sqrt(||g|| / ||g0||)): a constant 0.3 through the bulk of the
    iterations (measured fastest to a 1e-6 target on weakly regularized digits), shrinking
    towards the end for superlinear convergence.
    """

    def __init__(self, inner: str, maxiter: int, refresh: int = 10):
        self.inner = inner
        self.maxiter = maxiter
        self.refresh = refresh
        self.precond = None
        self.last = 0
        self.products = 0

    def __call__(self, H, g: np.ndarray, ratio: float):
        if self.inner == "cholesky":
            Hd = dense(H)
            d = cholesky_solve(Hd, g)
            if d is None:
                # Singular H (no regularization: softmax scores are invariant to a shift shared
                # by all classes, and g has no component along it): a tiny ridge gives the
                # Newton step on the complement.
                shift = 1e-10 * max(1.0, float(np.max(np.diagonal(Hd))))
                eye = np.eye(Hd.shape[0])
                for _ in range(4):
                    d = cholesky_solve(Hd + shift * eye, g)
                    if d is not None:
                        break
                    shift *= 100.0
            return None if d is None else -d
        if self.precond is None or self.last > self.refresh:
            self.precond = block_jacobi(H)
        eta = min(0.3, 30.0 * math.sqrt(ratio))
        d, k = pcg(H.matvec, g, self.precond, eta, self.maxiter)
        self.last = k
        self.products += k
        return -d


def newton_bound(model, x: np.ndarray, opts: Options, method: str = "newton-bound") -> Result:
    """Newton steps safeguarded by the Alg. 1 bound step (monotone).

    At theta with f, g, H (one ``value_grad_hessian`` call) take d = -H^{-1} g (dense Cholesky
    for p <= 300, else Hessian-free truncated PCG, see :class:`_NewtonSolver`; under
    constraints the QP with H). Accept theta + d if
    J(theta + d) <= J(theta) + 1e-4 * (g^T d + 1/2 d^T H d); the call that tests it also
    returns the gradient and Hessian there, so an accepted step costs one evaluation (when the
    quadratic model predicts that the step crosses ``target``, the value alone is tested
    first). Otherwise backtrack along the Newton direction with values only (up to
    ``backtracks`` = 4 Armijo trials, safeguarded quadratic interpolation: on near-separable,
    badly scaled digits at C = 10 the bound alone took 621 safeguard steps and 4.4 s, with
    backtracking first 37 iterations and 1.25 s); if that fails too, build the Alg. 1 bound
    at theta and use it as a line search along the Newton direction, s* = argmin_s of the
    majorizer J + s g.d + s^2/2 d.C d (``fallback = "direction"``, default), or take the
    bound's own minimizer (``fallback = "step"``, the plain Alg. 2 step). Both surely descend;
    without backtracking, from poor starts of nearly separable problems the first needed 16-52
    iterations where the second needed 111-203 (measured, 4 random problems).
    """
    p = x.shape[0]
    inner = resolve_inner(opts.inner, p)
    cons = opts.constraints
    counts = {"value_grad_hessian": 0, "bound": 0, "value": 0}
    rec = Recorder()
    target = opts.target
    vgh = model.value_grad_hessian
    f, g, H = vgh(x)
    counts["value_grad_hessian"] += 1
    gn = _norm(g)
    g0 = max(gn, 1e-300)
    rec.record(f, gn, 1)
    fallback = opts.extra.get("fallback", "direction")
    if fallback not in ("direction", "step"):
        raise ValueError(f"fallback must be 'direction' or 'step', got {fallback!r}")
    backtracks = opts.extra.get("backtracks", _BACKTRACKS)
    if isinstance(backtracks, bool) or not isinstance(backtracks, int) or backtracks < 0:
        raise ValueError(f"backtracks must be an integer >= 0, got {backtracks!r}")
    newton_dir = _NewtonSolver(inner, opts.extra.get("cg_maxiter", max(20, min(p, 250))))
    nit = n_newton = n_bound = n_backtracked = 0
    f_prev = None
    reason = None
    while True:
        if cons is None:
            stat = float(np.max(np.abs(g)))
            reason = stop_reason(f, f_prev, stat, opts)
            if reason is not None or nit >= opts.max_iter:
                break
            d = newton_dir(H, g, gn / g0)
            pred = None if d is None else 0.5 * float(g @ d)
        else:
            Hd = dense(H)
            d, stat = _constrained_step(Hd, g, x, cons)
            reason = stop_reason(f, f_prev, stat, opts)
            if reason is not None or nit >= opts.max_iter:
                break
            pred = float(g @ d) + 0.5 * float(d @ Hd @ d)
        if d is not None and pred == 0.0:
            reason = "zero step: stationary to the accuracy of the step solver"
            break
        accepted = False
        if d is not None and pred < 0.0:
            x_new = x + d
            if target is not None and f + pred <= target:
                # The quadratic model predicts the target is crossed: test with the value
                # alone and skip the gradient and Hessian if it is.
                f_new = model.value(x_new)
                counts["value"] += 1
                if f_new <= target:   # < f: the stopping test above failed at f
                    n_newton += 1
                    nit += 1
                    f, x, g = f_new, x_new, None
                    rec.record(f, math.nan, sum(counts.values()))
                    reason = "target objective reached"
                    if opts.callback is not None:
                        opts.callback(x, f)
                    break
            f_new, g_new, H_new = vgh(x_new)
            counts["value_grad_hessian"] += 1
            # Sufficient decrease; or, when the predicted decrease is below what float64 can
            # resolve in f, no increase beyond rounding (the step still improves x).
            eps_f = _ROUND * 1e-3 * max(1.0, abs(f))
            accepted = f_new <= f + _ARMIJO * pred or (-pred <= 1e3 * eps_f
                                                       and f_new <= f + eps_f)
        if not accepted and d is not None and pred < 0.0:
            # Backtrack along the Newton direction with values only (safeguarded quadratic
            # interpolation); near-separable data make the full step overshoot along flat
            # directions, where the bound's own step length is needlessly short.
            gd = float(g @ d)
            step = 1.0
            for _ in range(backtracks):
                denom = 2.0 * (f_new - f - step * gd)
                trial = -gd * step * step / denom if denom > 0.0 and math.isfinite(f_new) \
                    else 0.5 * step
                step = min(0.5 * step, max(0.1 * step, trial))
                f_new = model.value(x + step * d)
                counts["value"] += 1
                if f_new <= f + _ARMIJO * step * gd:
                    accepted = True
                    break
            if accepted:
                x_new = x + step * d
                f_new, g_new, H_new = vgh(x_new)
                counts["value_grad_hessian"] += 1
                n_backtracked += 1
        if accepted:
            n_newton += 1
        else:
            maj = model.majorizer(x, opts.order)
            counts["bound"] += 1
            if fallback == "direction" and d is not None and pred < 0.0:
                # Minimize the majorizer along the Newton direction: J(x + s d) <= J + s g.d
                # + s^2/2 d.C d, so s* = -g.d / d.C d (<= 1 keeps feasibility) surely descends.
                gd = float(g @ d)
                dCd = float(d @ maj.curvature.matvec(d))
                d = d * min(1.0, -gd / dCd) if dCd > 0.0 else _mm_step(maj, opts, inner)[0]
            else:
                d, _ = _mm_step(maj, opts, inner)
            x_new = x + d
            f_new, g_new, H_new = vgh(x_new)
            counts["value_grad_hessian"] += 1
            if not f_new <= f + _ROUND * max(1.0, abs(f)):
                reason = "no decrease (numerical limit of the bound step)"
                break
            n_bound += 1
        nit += 1
        f_prev, f, g, H, x = f, f_new, g_new, H_new, x_new
        gn = _norm(g)
        rec.record(f, gn, sum(counts.values()))
        if opts.callback is not None and opts.callback(x, f):
            reason = "stopped by callback"
            break
    return finish(method, x, f, g, rec, nit, counts, reason, opts,
                  info={"newton_steps": n_newton, "bound_steps": n_bound,
                        "backtracked_newton_steps": n_backtracked, "inner": inner,
                        "cg_products": newton_dir.products})


__all__ = ["bound_mm", "squarem", "newton_bound"]
