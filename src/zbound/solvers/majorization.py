"""Batch bound majorization: Alg. 2 of Jebara & Choromanska (2012) and monotone accelerations.

Every variant keeps the objective monotone: each accepted iterate has J <= the previous one.

- :class:`BoundMM` ("bound") -- Alg. 2 as published: at theta~ build the quadratic majorizer
  J(theta~ + d) <= J + g^T d + 1/2 d^T C d from Alg. 1 (``model.majorizer``) and move to its
  minimizer, theta~ - C^{-1} g without constraints, or the QP over the convex set with them
  (step 3 of Alg. 2). A truncated CG solve from d = 0 still decreases the majorizer.
- :class:`Squarem` ("squarem") -- SQUAREM (Varadhan & Roland 2008, scheme S3) on the MM map F,
  with the monotonicity safeguard: fall back to the plain MM step whenever the extrapolated
  point does not decrease the objective.
- :class:`NewtonBound` ("newton-bound", the default) -- a Newton step with the exact Hessian
  (the QP with the Hessian under constraints), accepted only if it gives sufficient decrease;
  otherwise a short value-only backtracking, then the bound. The bound is never computed when
  the Newton step is accepted.

Curvature is reached only through the operator interface (``solve``, ``matvec``,
``preconditioner``, ``to_dense``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from sklearn.utils._param_validation import StrOptions

from zbound.bounds.curvature import DenseCurvature
from zbound.bounds.policy import PreconditionerPolicy, block_shape
from zbound.models.base import DenseHessian, LowRankMajorizer, supports
from zbound.solvers.base import MethodInfo, Solver, State, model_name, register
from zbound.solvers.linesearch import ARMIJO as _ARMIJO
from zbound.solvers.linesearch import backtrack
from zbound.solvers.result import Status
from zbound.utils.linalg import ridged_cholesky_solve
from zbound.utils.validation import NON_NEGATIVE, NON_NEGATIVE_INT, POSITIVE_INT, Choices, Number

# rows x parameters from which inner="auto" runs truncated PCG instead of dense Cholesky
# whatever p (a dense Hessian costs ~ p / 4 products there).
_CG_WORK = 1 << 20
# Tolerated objective increase from rounding on an MM step that the bound guarantees to descend.
_ROUND = 1e-12
#: Upper limit of SQUAREM's adaptive step bound alpha_max (it grows 4x whenever it binds;
#: the bound methods' Squarem and the mixtures' MixtureSquarem)
SQUAREM_ALPHA_CAP = 1e8
# Products after which a lagged preconditioner of a single class block is rebuilt.
_ONE_BLOCK_REFRESH = 3


def _norm(g: np.ndarray) -> float:
    return float(math.sqrt(g @ g))


def constrained_step(C: np.ndarray, g: np.ndarray, theta: np.ndarray, cons):
    """QP step of Alg. 2 (step 3) with the dense curvature C, and the stationarity measure.

    The measure is the projected gradient for box constraints (exact, independent of the QP
    solver's accuracy) and ||C d||_inf with general inequalities (0 iff theta is a KKT point).
    The QP answer is pulled back onto the feasible set and, if inexact, shortened by the exact
    line search on the (convex) quadratic so that it surely decreases.
    """
    d = cons.solve_qp(C, g, theta)
    d *= cons.max_feasible_fraction(theta, d)
    Cd = C @ d
    gd = float(g @ d)
    dCd = float(d @ Cd)
    if gd >= 0.0:
        d = np.zeros_like(d)
        Cd = np.zeros_like(d)
    elif gd + 0.5 * dCd > 0.0 and dCd > 0.0:
        s = min(1.0, -gd / dCd)
        d *= s
        Cd *= s
    if cons.has_general:
        return d, float(np.max(np.abs(Cd)))
    return d, cons.projected_gradient(theta, g)


@dataclass
class MMState(State):
    """A majorization method's state: the majorizer at x, the inner solver of its steps, and
    the step computed by the last stationarity test (taken by the next update)."""

    maj: Any = None
    inner: str = "cholesky"
    step: np.ndarray | None = None


@dataclass(kw_only=True)
class SquaremCounts:
    """What a SQUAREM state adds (keyword fields, so that it mixes into any state): the
    adaptive step bound, cycles run, extrapolations accepted."""

    alpha_max: float = 1.0
    cycles: int = 0
    extrapolations_accepted: int = 0


@dataclass
class SquaremState(MMState, SquaremCounts):
    """SQUAREM's state on the bound methods' (:class:`SquaremCounts`)."""


@dataclass
class NewtonBoundState(State):
    """The safeguarded Newton method's state: the Hessian at x (None after a step accepted on
    its value alone), the first gradient norm, the inner solver, the Newton-direction solver,
    the pending constrained step (d, predicted decrease), and step counts."""

    H: Any = None
    g0: float = 1.0
    inner: str = "cholesky"
    direction: Any = None
    step: tuple | None = None
    dense: bool = False
    newton_steps: int = 0
    bound_steps: int = 0
    backtracked_newton_steps: int = 0


class _MMBase(Solver):
    """Shared by the bound methods: the step that minimizes a majorizer."""

    options = {"cg_rtol": 1e-8, "cg_maxiter": None}
    option_constraints = {"cg_rtol": [NON_NEGATIVE], "cg_maxiter": [None, POSITIVE_INT]}
    state_class: ClassVar[type[MMState]] = MMState

    def mm_step(self, maj, inner: str) -> tuple[np.ndarray, float]:
        """Step d minimizing the majorizer (over the constraints if any) and stationarity."""
        g = maj.grad
        cons = self.constraints
        if cons is None:
            p = g.shape[0]
            maxiter = self.opts["cg_maxiter"] or 2 * p
            d = maj.curvature.solve(g, inner, rtol=self.opts["cg_rtol"], maxiter=maxiter)
            return -d, float(np.max(np.abs(g)))
        return constrained_step(maj.curvature.to_dense(), g, maj.theta, cons)

    def build_majorizer(self, model, x):
        """The majorizer an iteration minimizes (the full Alg. 1 bound here)."""
        return model.majorizer(x, self.order)

    def init(self, model, x):
        maj = self.build_majorizer(model, x)
        return self.state_class(x, maj.value, maj.grad, maj=maj,
                                inner=self.resolve_inner(x.shape[0], bound=True))

    def stationarity(self, model, state):
        d, stat = self.mm_step(state.maj, state.inner)
        state.step = d
        state.zero_step = not d.any()
        return stat

    def pending_step(self, state) -> np.ndarray:
        """The step computed by the last stationarity test, or a fresh one (when stepped by
        hand without the tests)."""
        d, state.step = state.step, None
        if d is None:
            d = self.mm_step(state.maj, state.inner)[0]
        return d

    def advance(self, model, state, x_new) -> bool:
        """Move to x_new (a point the bound guarantees to descend to): build its majorizer and
        accept it; False when rounding ate the guaranteed decrease."""
        maj = self.build_majorizer(model, x_new)
        f = state.f
        if not maj.value <= f + _ROUND * max(1.0, abs(f)):
            state.status = Status.NO_DECREASE
            return False
        state.maj = maj
        self.accept(model, state, x_new, maj.value, maj.grad)
        return True


@register
class BoundMM(_MMBase):
    """Alg. 2 (batch bound majorization), one Alg. 1 bound per iteration.

    ``rank`` (None: the full curvature) keeps the bound's curvature low-rank plus diagonal
    (Section 6 of the paper, ``model.lowrank_majorizer(x, order, rank=rank,
    rule=lowrank_rule)``), solved by the Woodbury formula; ``lowrank_rule`` is "exact" (the
    default), "sgb" or "paper" (not always a bound: monotonicity is then not guaranteed). See
    ``docs/lowrank.md``.
    """

    info = MethodInfo(
        "bound", peer=False, constraints="linear", uses_bound=True, needs=("majorizer",),
        description="Alg. 2 of Jebara & Choromanska (2012) as published: minimize the Alg. 1 "
                    "quadratic majorizer each iteration (QP under constraints)")
    options = {**_MMBase.options, "rank": None, "lowrank_rule": "exact"}
    option_constraints = {**_MMBase.option_constraints, "rank": [None, POSITIVE_INT],
                          "lowrank_rule": [StrOptions(Choices("exact", "sgb", "paper"))]}

    def build_majorizer(self, model, x):
        rank = self.opts["rank"]
        if rank is None:
            return model.majorizer(x, self.order)
        if not supports(model, LowRankMajorizer):
            name = model_name(model)
            raise TypeError(f"method 'bound' with rank={rank} needs model.lowrank_majorizer(), "
                            f"which {name} does not have")
        return model.lowrank_majorizer(x, self.order, rank=int(rank),
                                       rule=self.opts["lowrank_rule"])    # counted as a bound

    def update(self, model, state):
        self.advance(model, state, state.x + self.pending_step(state))


def squarem_steplength(r: np.ndarray, v: np.ndarray, alpha_max: float) -> tuple[float, bool]:
    """SQUAREM's steplength S3 (Varadhan & Roland 2008) for the first difference r = x1 - x0
    and the second v = x2 - 2 x1 + x0 of a fixed-point map: alpha = -||r|| / ||v|| clipped
    to [-alpha_max, -1], and whether the clip bound (alpha_max below
    :data:`SQUAREM_ALPHA_CAP`: the caller lets alpha_max grow). v = 0 (the map moved by the
    same step twice, or not at all) gives -1, the plain step."""
    rr, vv = float(r @ r), float(v @ v)
    raw = -math.sqrt(rr / vv) if vv > 1e-300 and rr > 0.0 else -1.0
    clipped = raw <= -alpha_max and alpha_max < SQUAREM_ALPHA_CAP
    return max(-alpha_max, min(-1.0, raw)), clipped


def squarem_extrapolate(x0: np.ndarray, x1: np.ndarray, x2: np.ndarray, f1: float, evaluate,
                        alpha_max: float, *, step_factor: float, max_backtracks: int = 0,
                        project=None, may_evaluate=None):
    """The extrapolation of one SQUAREM cycle (Varadhan & Roland 2008, steplength S3), monotone,
    for any fixed-point map F with a merit function: x1 = F(x0), x2 = F(x1), f1 the merit at
    x1. With r = x1 - x0 and v = x2 - 2 x1 + x0, alpha = :func:`squarem_steplength` and
    x' = x0 - 2 alpha r + alpha^2 v (``project``: onto the feasible set). ``evaluate(x')``
    returns ``(merit, payload)``, or None where x' is not usable; x' is accepted when its merit
    is <= f1. Otherwise alpha moves halfway to -1, up to ``max_backtracks`` times (while
    ``may_evaluate()`` allows another evaluation). alpha_max grows by ``step_factor`` when the
    clip binds and the first extrapolation is accepted, or alpha is -1 (the SQUAREM package's
    adaptive step bound).

    Returns ``((x', merit, payload) or None, alpha_max)``: None means the caller takes the
    plain step x2, which the map's own monotonicity makes a descent.
    """
    r = x1 - x0
    v = x2 - x1
    v -= r
    alpha, clipped = squarem_steplength(r, v, alpha_max)
    if alpha == -1.0:
        return None, alpha_max * step_factor if clipped else alpha_max
    for attempt in range(max_backtracks + 1):
        x_ext = x0 - (2.0 * alpha) * r + (alpha * alpha) * v
        if project is not None:
            x_ext = project(x_ext)
        out = evaluate(x_ext) if np.isfinite(x_ext).all() else None
        if out is not None and out[0] <= f1:
            grown = alpha_max * step_factor if attempt == 0 and clipped else alpha_max
            return (x_ext, *out), grown
        alpha = 0.5 * (alpha - 1.0)
        if may_evaluate is not None and not may_evaluate():
            break
    return None, alpha_max


@register
class Squarem(_MMBase):
    """SQUAREM-accelerated Alg. 2 (Varadhan & Roland 2008, S3 steplength), monotone.

    One cycle from x0 with majorizer M0: x1 = F(x0), x2 = F(x1), r = x1 - x0,
    v = x2 - 2 x1 + x0, alpha = -||r|| / ||v|| clipped to [-alpha_max, -1], extrapolate
    x' = x0 - 2 alpha r + alpha^2 v (projected onto the constraints). x' is accepted if
    J(x') <= J(x1); otherwise alpha moves halfway to -1 up to ``max_backtracks`` times, then the
    plain MM step x2 = F(x1) is taken (always a descent). The majorizer built at x' is the first
    MM step of the next cycle, so every accepted bound is used. alpha_max grows by
    ``step_factor`` when the clip binds (the SQUAREM package's adaptive step bound).
    ``max_iter`` counts bound evaluations. No backtracking (the default) takes the fewest bound
    evaluations to a 1e-6 target on the weakly regularized Table 3 problems, a fraction of
    plain Alg. 2's.
    """

    info = MethodInfo(
        "squarem", peer=False, constraints="linear", uses_bound=True, needs=("majorizer",),
        description="Alg. 2 accelerated by SQUAREM (Varadhan & Roland 2008) with a monotone "
                    "safeguard")
    options = {**_MMBase.options, "max_backtracks": 0, "step_factor": 4.0}
    option_constraints = {**_MMBase.option_constraints, "max_backtracks": [NON_NEGATIVE_INT],
                          "step_factor": [Number(Real, 1, np.inf, closed="left")]}
    state_class = SquaremState

    def limit_reached(self, model, state):
        return model.n_bound >= self.max_iter

    def update(self, model, state):
        cons = self.constraints
        x0 = state.x
        d0 = self.pending_step(state)
        x1 = x0 + d0
        if not self.advance(model, state, x1):                        # x1 = F(x0)
            return
        d1, stat = self.mm_step(state.maj, state.inner)                # x2 = F(x1)
        status = self.stop_status(state, stat)
        if status is None and model.n_bound >= self.max_iter:
            status = Status.MAX_ITER
        if status is not None:
            state.status = status
            return
        state.cycles += 1

        def project(x):
            return cons.project(x) if cons is not None and cons.violation(x) > 0.0 else x

        def evaluate(x):
            maj = model.majorizer(x, self.order)
            return maj.value, maj

        found, state.alpha_max = squarem_extrapolate(
            x0, x1, x1 + d1, state.f, evaluate, state.alpha_max,
            step_factor=self.opts["step_factor"], max_backtracks=self.opts["max_backtracks"],
            project=project, may_evaluate=lambda: model.n_bound < self.max_iter)
        if found is not None:
            x_ext, _, state.maj = found
            self.accept(model, state, x_ext, state.maj.value, state.maj.grad)
            state.extrapolations_accepted += 1
            return
        self.advance(model, state, x1 + d1)             # the plain MM step: surely descends

    def result_info(self, state):
        return {"cycles": state.cycles,
                "extrapolations_accepted": state.extrapolations_accepted}


class _NewtonDirection:
    """Newton direction -H^{-1} g: dense Cholesky, or truncated PCG for large p.

    The PCG path preconditions with a lagged preconditioner from the curvature's own
    :class:`~zbound.bounds.policy.PreconditionerPolicy` (``precond``: "auto", "gram", "blocks"
    or "eigen"), rebuilt only when the last solve needed more than ``refresh`` products (a
    lagged preconditioner is still SPD), or at every step where the policy builds an exact
    inverse. ``auto``: ``by_shape`` at the first Hessian.
    Forcing term min(0.3, 30 sqrt(||g|| / ||g0||)): a constant 0.3 through
    the bulk of the iterations (the fastest to a 1e-6 target on weakly regularized digits),
    shrinking towards the end for superlinear convergence.
    """

    def __init__(self, inner: str, maxiter: int, refresh: int = 10, auto: bool = False,
                 precond: str = "auto"):
        self.inner = inner
        self.maxiter = maxiter
        self.refresh = refresh
        self.auto = auto
        self.precond = None
        self.last = 0
        self.products = 0
        self.builds = 0
        self.policy = PreconditionerPolicy(precond)

    def by_shape(self, H) -> None:
        """inner="auto", decided at the first Hessian from its shape: T rows of dense data,
        m class blocks of b columns. A dense assembly costs ~ T p^2 / 2 flops (a block
        preconditioner m T b^2) against ~ 4 T p for one product, so with many rows
        (T p >= ``_CG_WORK``) truncated PCG with a lagged block preconditioner replaces
        Cholesky even for p <= 300; and a preconditioner is rebuilt only after solves longer
        than about an eighth of its own cost in products (b / 32, at least ``refresh``), or,
        for a single block (two classes: the block is the whole Hessian), 3."""
        self.auto = False
        shape = block_shape(H)
        if shape is None:
            return
        rows, m, b = shape
        if self.inner == "cholesky" and rows * m * b >= _CG_WORK:
            self.inner = "cg"
            self.maxiter = max(self.maxiter, 20)
        # one block (two classes) is the whole Hessian: a fresh one makes PCG an exact Newton
        # solve, and a build (a few memory-bound passes) pays back sooner; with several
        # classes a refresh that early costs more steps
        self.refresh = _ONE_BLOCK_REFRESH if m == 1 else max(self.refresh, b // 32)

    def build(self, H):
        pre, every_step = self.policy.build(H, first=self.precond is None)
        if every_step:
            self.refresh = 0
        return pre

    def __call__(self, H, g: np.ndarray, ratio: float):
        if self.auto:
            self.by_shape(H)
        if self.inner == "cholesky":
            # Singular H (no regularization: softmax scores are invariant to a shift shared by
            # all classes, and g has no component along it): a tiny ridge gives the Newton step
            # on the complement.
            # a full two-class softmax solves in d dimensions instead of 2 d where its
            # curvature can (the class-sum direction is the ridge's alone)
            two = getattr(H, "two_class_solve", None)
            d = two(g) if two is not None else None
            if d is None:
                d = ridged_cholesky_solve(H.to_dense(), g)
            return None if d is None else -d
        if self.precond is None or self.last > self.refresh:
            self.precond = self.build(H)
            self.builds += 1
        eta = min(0.3, 30.0 * math.sqrt(ratio))
        d, k = H.solve(g, "cg", rtol=eta, maxiter=self.maxiter, precond=self.precond,
                       return_iterations=True)
        self.last = k
        self.products += k
        return -d


@register
class NewtonBound(_MMBase):
    """Newton steps safeguarded by the Alg. 1 bound (monotone).

    At theta with f, g, H (one ``value_grad_hessian`` call) take d = -H^{-1} g (dense Cholesky
    for p <= 300, else Hessian-free truncated PCG; under constraints the QP with H). Accept
    theta + d if J(theta + d) <= J(theta) + 1e-4 * (g^T d + 1/2 d^T H d); the call that tests it
    also returns the gradient and Hessian there, so an accepted step costs one evaluation (when
    the quadratic model predicts that the step crosses ``target``, the value alone is tested
    first). Otherwise backtrack along the Newton direction with values only (up to
    ``backtracks`` = 4 Armijo trials, safeguarded quadratic interpolation: on near-separable,
    badly scaled data the bound alone takes many short safeguard steps); if that fails too,
    build the Alg. 1 bound
    at theta and use it as a line search along the Newton direction, s* = argmin_s of the
    majorizer J + s g.d + s^2/2 d.C d (``fallback = "direction"``, default), or take the
    bound's own minimizer (``fallback = "step"``, the plain Alg. 2 step). Both surely descend;
    without backtracking, from poor starts of nearly separable problems the first needs a
    fraction of the second's iterations.
    """

    info = MethodInfo(
        "newton-bound", peer=False, constraints="linear", uses_bound=True,
        needs=("value_grad_hessian", "majorizer", "value"),
        description="Newton step with the exact Hessian when it decreases J enough, else a "
                    "short value-only backtracking, else the Alg. 1 bound as a line search "
                    "along it (or the bound step: fallback='step'); monotone; default")
    options = {**_MMBase.options, "backtracks": 4, "fallback": "direction", "precond": "auto",
               "warm_direction": False}
    option_constraints = {**_MMBase.option_constraints, "backtracks": [NON_NEGATIVE_INT],
                          "fallback": [StrOptions(Choices("direction", "step"))],
                          "precond": [StrOptions(Choices(*PreconditionerPolicy.KINDS))],
                          "warm_direction": ["boolean"]}

    #: with ``warm_direction``: the Newton-direction state (the lagged PCG preconditioner and
    #: the factored Gram matrix of its first form) that every run of this solver shares. A
    #: sub-problem that changes slowly between runs (a mixture's M-step, through the
    #: responsibilities alone) keeps a preconditioner that is still SPD and close; it is
    #: rebuilt, as within one solve, only after a PCG solve that needed more than ``refresh``
    #: products, and every step is still the monotone Newton step safeguarded by the bound.
    direction = None

    def init(self, model, x):
        p = x.shape[0]
        f, g, H = model.value_grad_hessian(x)
        inner = self.resolve_inner(p)
        direction = _NewtonDirection(inner, self.opts["cg_maxiter"] or max(20, min(p, 250)),
                                     auto=self.inner == "auto" and self.constraints is None,
                                     precond=self.opts["precond"])
        if direction.auto:
            direction.by_shape(H)
        if self.opts["warm_direction"]:
            if self.direction is None:
                self.direction = direction
            else:
                direction = self.direction
        # a dense factorization at every step: the model's dense Hessian where it forms one
        # without the operator (two classes on dense rows: a cheaper evaluation)
        dense = direction.inner == "cholesky" and supports(model, DenseHessian)
        return NewtonBoundState(x, f, g, H=H, g0=max(_norm(g), 1e-300), inner=inner,
                                direction=direction, dense=dense)

    @staticmethod
    def _evaluate(model, state, x):
        """(value, gradient, Hessian operator) at x; a dense Hessian where ``state.dense``."""
        if state.dense:
            f, g, H = model.value_grad_dense_hessian(x)
            return f, g, DenseCurvature(H)
        return model.value_grad_hessian(x)

    def stationarity(self, model, state):
        cons = self.constraints
        if cons is None:
            return float(np.max(np.abs(state.g)))
        Hd = state.H.to_dense()
        d, stat = constrained_step(Hd, state.g, state.x, cons)
        state.step = (d, float(state.g @ d) + 0.5 * float(d @ Hd @ d))
        return stat

    def update(self, model, state):
        f, g, x = state.f, state.g, state.x
        target = self.target
        if self.constraints is None:
            d = state.direction(state.H, g, _norm(g) / state.g0)
            pred = None if d is None else 0.5 * float(g @ d)
        else:
            if state.step is None:
                self.stationarity(model, state)
            (d, pred), state.step = state.step, None
        if d is not None and pred == 0.0:
            state.status = Status.ZERO_STEP
            return
        accepted = False
        if d is not None and pred < 0.0:
            x_new = x + d
            if target is not None and f + pred <= target:
                # The quadratic model predicts the target is crossed: test with the value
                # alone and skip the gradient and Hessian if it is.
                f_new = model.value(x_new)
                if f_new <= target:   # < f: the stopping test failed at f
                    state.newton_steps += 1
                    state.H = None
                    self.accept(model, state, x_new, f_new, None)
                    return
            f_new, g_new, H_new = self._evaluate(model, state, x_new)
            # Sufficient decrease; or, when the predicted decrease is below what float64 can
            # resolve in f, no increase beyond rounding (the step still improves x).
            # Below that resolution, also when the gradient shrank and f rose by no more than
            # the value's own rounding (a sum over rows: ~1e-13 relative; the explicit and the
            # implicit intercept column round differently there and must stop alike).
            eps_f = _ROUND * 1e-3 * max(1.0, abs(f))
            accepted = f_new <= f + _ARMIJO * pred or (
                -pred <= 1e3 * eps_f and (f_new <= f + eps_f or (
                    f_new <= f + 100.0 * eps_f and _norm(g_new) < _norm(g))))
            if not accepted:
                # Backtrack along the Newton direction with values only (safeguarded quadratic
                # interpolation); near-separable data make the full step overshoot along flat
                # directions, where the bound's own step length is needlessly short.
                found = backtrack(model.value, x, d, f, float(g @ d), 1.0, f_new,
                                  self.opts["backtracks"])
                if found is not None:
                    accepted = True
                    x_new = x + found[0] * d
                    f_new, g_new, H_new = self._evaluate(model, state, x_new)
                    state.backtracked_newton_steps += 1
        if accepted:
            state.newton_steps += 1
        else:
            maj = model.majorizer(x, self.order)
            if self.opts["fallback"] == "direction" and d is not None and pred < 0.0:
                # Minimize the majorizer along the Newton direction: J(x + s d) <= J + s g.d
                # + s^2/2 d.C d, so s* = -g.d / d.C d (<= 1 keeps feasibility) surely descends.
                # (a direction along a flat intercept can be ~1e300 long: d.C d then
                # overflows, and the majorizer's own step is taken instead)
                with np.errstate(over="ignore", invalid="ignore"):
                    gd = float(g @ d)
                    dCd = float(d @ maj.curvature.matvec(d))
                d = d * min(1.0, -gd / dCd) if 0.0 < dCd < np.inf and math.isfinite(gd) \
                    else self.mm_step(maj, state.inner)[0]
            else:
                d = self.mm_step(maj, state.inner)[0]
            x_new = x + d
            f_new, g_new, H_new = self._evaluate(model, state, x_new)
            if not f_new <= f + _ROUND * max(1.0, abs(f)):
                state.status = Status.NO_DECREASE
                return
            state.bound_steps += 1
        state.H = H_new
        self.accept(model, state, x_new, f_new, g_new)

    def result_info(self, state):
        d = state.direction
        return {"newton_steps": state.newton_steps, "bound_steps": state.bound_steps,
                "backtracked_newton_steps": state.backtracked_newton_steps,
                "inner": d.inner, "cg_products": d.products, "preconditioner_builds": d.builds}


__all__ = ["BoundMM", "Squarem", "NewtonBound", "constrained_step"]
