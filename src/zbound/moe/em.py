"""EM for mixtures of experts with exact M-steps (Section 3 of Fruytier, Mokhtari & Sanghavi).

Each iteration: the E-step computes the responsibilities R = P(z | x, y; theta_t) (and the
objective L(theta_t), from the same log-sum-exp); the M-step minimizes the EM objective
Q(. | theta_t), which separates into

- the gate: a softmax regression against the soft labels R (weights v), solved by the library's
  bound-majorization solvers (:func:`zbound.solvers.minimize`, default "newton-bound": Newton
  steps safeguarded by the Alg. 1 bound; "bound" = Alg. 2 itself), warm-started at the current
  gate; with "newton-bound" each sub-problem keeps one solver whose Newton-direction state
  (the lagged PCG preconditioner, the factored Gram matrix) carries over between EM iterations;
- each linear expert: weighted least squares in closed form (weights v * R[:, j]), then the
  noise variance as the weighted mean squared residual (when fitted);
- each logistic expert: a weighted softmax regression (weights v * R[:, j]), solved as the gate.

Every M-step solver is monotone from its warm start, so Q(theta_{t+1} | theta_t) <=
Q(theta_t | theta_t) and hence L(theta_{t+1}) <= L(theta_t) (eq. (9): L = Q - H, H minimized
at theta_t). Capping the M-step solver (``mstep_max_iter``, e.g. one Newton-bound step, and
``mstep_options={"cg_maxiter": ...}``) gives a generalized EM step, still monotone: each
accepted step decreases the sub-problem. ``mstep="gd"`` replaces the solvers by the paper's
inner loop of gradient steps on Q (Section 6), for reproduction and as the baseline the bound
M-steps are compared with; it is monotone only for small enough inner step sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._param_validation import StrOptions

from zbound.models.loss import SoftmaxLoss
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.moe.diagnostics import collapsed_experts
from zbound.moe.model import MixtureLikelihood, MoEProblem, SoftLabelSoftmaxLoss
from zbound.solvers.base import MethodInfo, MethodNames, Solver, State, configure, register
from zbound.solvers.majorization import SquaremCounts, squarem_extrapolate
from zbound.solvers.policy import SolverPolicy
from zbound.solvers.result import Result, Status
from zbound.utils.linalg import weighted_ridge_solve
from zbound.utils.validation import NON_NEGATIVE, POSITIVE, POSITIVE_INT


def _mstep_method(info) -> bool:
    """A registered batch method for any objective: it can solve the gate's and the logistic
    experts' weighted softmax regressions."""
    return not info.stochastic and info.requires is None


#: EM's M-step solvers: the registered batch methods for any objective ("gd" runs the paper's
#: inner gradient descent on the whole of Q)
MSTEPS = MethodNames(_mstep_method)


def _check_iter(max_iter) -> int:
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 0:
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    return int(max_iter)


def _check_theta(problem: MoEProblem, theta0) -> np.ndarray:
    theta = np.array(theta0, dtype=np.float64, copy=True)
    if theta.shape != (problem.n_params,):
        raise ValueError(f"theta0 must have shape ({problem.n_params},), got {theta.shape}")
    if not np.isfinite(theta).all():
        raise ValueError("theta0 contains NaN or inf")
    return theta


def e_step(problem: MoEProblem, theta) -> tuple[float, np.ndarray]:
    """L(theta) and the responsibilities R (n, k), from one evaluation of the log joint."""
    J = problem.log_joint(theta)
    lse = logsumexp(J, axis=1)
    if not np.isfinite(lse).all():
        raise FloatingPointError("the likelihood of some sample is 0 under every expert "
                                 "(degenerate gate or experts)")
    R = np.exp(J - lse[:, None])
    return -float(problem.v @ lse) + problem.penalty_value(theta), R


class MStep:
    """The exact M-step of one problem: solver settings and per-call statistics."""

    def __init__(self, problem: MoEProblem, solver: str = "newton-bound", tol: float = 1e-8,
                 max_iter: int = 100, inner_steps: int = 10, inner_lr: float = 1.0,
                 options: dict | None = None):
        if solver not in MSTEPS:
            raise ValueError(f"mstep must be one of {list(MSTEPS)}, got {solver!r}")
        if not (isinstance(inner_steps, int | np.integer) and inner_steps >= 1):
            raise ValueError(f"inner_steps must be an integer >= 1, got {inner_steps!r}")
        if not (np.isfinite(inner_lr) and inner_lr > 0):
            raise ValueError(f"inner_lr must be finite and > 0, got {inner_lr!r}")
        self.problem = problem
        self.solver = solver
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.inner_steps = int(inner_steps)
        self.inner_lr = float(inner_lr)
        self.options = dict(options or {})
        self.solver_iterations = 0
        self.calls = 0
        self.diverged = False
        self._gd = None
        # one warm solver per sub-problem ("gate", expert j): its Newton-direction state
        # (preconditioner) carries over from one EM iteration to the next
        self._warm = {}
        pb = problem
        if pb.expert == "logistic":
            self._expert_loss = SoftmaxLoss(pb.Xb, pb.y, pb.n_classes, reference_class=True)

    def _solve(self, loss, penalty, x0, key) -> np.ndarray:

        model = Objective(loss, L2Penalty(penalty))
        solver = self._warm.get(key)
        if solver is None:
            solver = self._warm[key] = SolverPolicy.mstep(
                self.solver, tol=self.tol, max_iter=self.max_iter, options=self.options)
        res = solver.run(model, x0)
        self.solver_iterations += res.nit
        return res.x

    def direction_stats(self) -> dict:
        """Hessian products and preconditioner builds of the warm Newton-bound solvers, summed
        over the sub-problems and EM iterations (empty for the other M-steps)."""
        dirs = [s.direction for s in self._warm.values()
                if getattr(s, "direction", None) is not None]
        if not dirs:
            return {}
        return {"mstep_cg_products": int(sum(d.products for d in dirs)),
                "mstep_preconditioner_builds": int(sum(d.builds for d in dirs))}

    def __call__(self, theta: np.ndarray, R: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.solver == "gd":
            return self._inner_gd(theta, R)
        pb = self.problem
        new = theta.copy()
        pen = pb.penalty
        v = pb.v
        if pb.k > 1:
            gs = pb.gate_slice()
            loss = SoftLabelSoftmaxLoss(pb.Xb, R, v, reference_class=True)
            new[gs] = self._solve(loss, pen[gs], theta[gs], -1)
        P = pb.unpack(new)
        if pb.expert == "linear":
            self._linear_experts(P, R)
        else:
            size = pb.m * pb.p
            for j in range(pb.k):
                sl = slice(pb.n_gate + j * size, pb.n_gate + (j + 1) * size)
                loss = self._expert_loss.reweighted(v * R[:, j])
                new[sl] = self._solve(loss, pen[sl], theta[sl], j)
        return new

    def _linear_experts(self, P, R) -> None:
        """Weighted least squares per expert (in place on the unpacked views), then the
        noise variances; exact for reg = 0, a coordinate-wise exact (ECM) step otherwise."""
        pb = self.problem
        Xb, y = pb.Xb, pb.y
        ridge = pb.ridge
        for j in range(pb.k):
            w = pb.v * R[:, j]
            s2 = float(np.exp(P.log_var[j]))
            # the (p, p) normal equations where they are no larger than the data (Cholesky,
            # or the minimum-norm solution: an expert with no responsibility, collinear
            # columns); wider data through (rows, rows) systems
            c = weighted_ridge_solve(Xb, w, y, ridge * s2)
            P.coef[j] = c
            if pb.fit_var:
                mass = float(w.sum())
                res = y - Xb @ c
                var = float(w @ res ** 2) / mass if mass > 0 else pb.min_variance
                P.log_var[j] = np.log(min(max(var, pb.min_variance), pb.max_variance))

    def _inner_gd(self, theta, R) -> np.ndarray:
        """The paper's M-step: ``inner_steps`` gradient steps of size ``inner_lr`` on
        Q(. | theta_t) (separable, so the same as steps on each sub-problem), by the
        registered fixed-step method "gd"; a step that leaves the finite numbers sets
        ``diverged`` and returns the last finite iterate."""
        if self._gd is None:
            self._gd = configure("gd", tol=0.0, ftol=0.0, max_iter=self.inner_steps,
                                 lr=self.inner_lr)
        res = self._gd.run(_Q(self.problem, R), theta)
        self.solver_iterations += res.nit
        self.diverged = bool(res.info["diverged"])
        return res.x


class _Q:
    """Q(. | theta_t) of one E-step (responsibilities R) as a model: what the inner gradient
    M-step minimizes."""

    def __init__(self, problem: MoEProblem, R: np.ndarray):
        self.problem, self.R = problem, R
        self.n_params = problem.n_params

    def value_and_grad(self, theta):
        return self.problem.q_value_and_grad(theta, self.R)

    def value(self, theta) -> float:
        return self.value_and_grad(theta)[0]


@dataclass
class MixtureEMState(State):
    """EM's state: the responsibilities at x (from the E-step that gave f), the M-step
    (solver settings, per-sub-problem warm solvers, counts) and the iterates when kept."""

    R: np.ndarray | None = None
    mstep: MStep | None = None
    iterates: list | None = None


@register
class MixtureEM(Solver):
    """EM for a mixture of experts with exact M-steps (the module text): every iteration one
    M-step (:class:`MStep`) at the responsibilities of the last E-step, then the E-step at the
    new point, which gives the objective. Stops when an iteration lowers the objective by
    <= ``ftol`` * max(1, abs(L)) (a rise stops it too: with the bound M-steps it cannot happen
    beyond rounding), or after ``max_iter`` iterations; there is no gradient test
    (``tol`` is not used).

    Options: ``mstep`` ("newton-bound", "bound", "squarem" or "gd", the paper's inner
    gradient descent of ``inner_steps`` steps of ``inner_lr``), ``mstep_tol`` and
    ``mstep_max_iter`` (the M-step solver's stopping rule), ``mstep_options`` (its options),
    ``keep_iterates`` (every iterate in ``Result.info["iterates"]``). ``Result.info`` also
    holds the M-step counts, the experts' responsibility mass and the collapsed experts.
    """

    info = MethodInfo("moe-em", peer=False, constraints="none", requires=MixtureLikelihood,
                      description="EM for mixtures of experts: E-step responsibilities, exact "
                                  "M-steps by the bound solvers (or the paper's inner GD)")
    options = {"mstep": "newton-bound", "mstep_tol": 1e-8, "mstep_max_iter": 100,
               "inner_steps": 10, "inner_lr": 1.0, "mstep_options": None,
               "keep_iterates": False}
    option_constraints = {"mstep": [StrOptions(MSTEPS)],
                          "mstep_tol": [NON_NEGATIVE], "mstep_max_iter": [POSITIVE_INT],
                          "inner_steps": [POSITIVE_INT], "inner_lr": [POSITIVE],
                          "mstep_options": [None, dict], "keep_iterates": ["boolean"]}

    def init(self, model, x):
        o = self.opts
        m = MStep(model, o["mstep"], o["mstep_tol"], o["mstep_max_iter"], o["inner_steps"],
                  o["inner_lr"], o["mstep_options"])
        f, R = e_step(model, x)
        model.count("value")
        return MixtureEMState(x, f, None, R=R, mstep=m,
                              iterates=[x.copy()] if o["keep_iterates"] else None)

    def update(self, model, state):
        theta = state.mstep(state.x, state.R)
        if state.mstep.diverged:
            state.status = Status.FAILED
            state.message = ("the M-step's gradient descent left the finite numbers "
                             "(inner_lr too large?)")
            return
        self.move(model, state, theta)

    def move(self, model, state, theta, evaluated=None):
        """Accept theta: the E-step there (or ``evaluated``, its (L, R) already computed)
        gives the objective and the responsibilities of the next M-step."""
        if evaluated is None:
            evaluated = e_step(model, theta)
            model.count("value")
        f, state.R = evaluated
        if state.iterates is not None:
            state.iterates.append(theta.copy())
        self.accept(model, state, theta, f, None)

    def stationarity(self, model, state):
        return math.inf                # no gradient: EM stops on the objective's change

    def result_info(self, state):
        m, pb = state.mstep, state.mstep.problem
        mass = pb.expert_mass(state.R)
        n_eff = 1.0 / float(pb.v @ pb.v)      # (sum w)^2 / sum w^2, in normalized weights
        P = pb.unpack(state.x)
        collapsed = collapsed_experts(mass, n_eff, P.log_var if pb.fit_var else None,
                                      pb.min_variance if pb.fit_var else None)
        info = {"mstep": m.solver, "mstep_calls": m.calls, "diverged": m.diverged,
                "mstep_solver_iterations": m.solver_iterations, **m.direction_stats(),
                "expert_mass": mass.tolist(), "collapsed": collapsed}
        if state.iterates is not None:
            info["iterates"] = state.iterates
        return info


@dataclass
class MixtureSquaremState(MixtureEMState, SquaremCounts):
    """SQUAREM's state on EM's (:class:`~zbound.solvers.majorization.SquaremCounts`)."""


@register
class MixtureSquarem(MixtureEM):
    """SQUAREM (Varadhan & Roland 2008, steplength S3) on the EM map F of :class:`MixtureEM`,
    monotone.

    One cycle from x0: x1 = F(x0) (an EM iteration, accepted), x2 = F(x1) (one more M-step),
    r = x1 - x0, v = x2 - 2 x1 + x0, alpha = -||r|| / ||v|| clipped to [-alpha_max, -1], and
    the extrapolation x' = x0 - 2 alpha r + alpha^2 v, accepted when the E-step there gives
    L(x') <= L(x1); otherwise the E-step at x2 completes the plain EM iteration. Every
    accepted point is at or below the last, so the trace never rises. A cycle costs two
    M-steps and two E-steps, as two EM iterations do (three E-steps when the extrapolation is
    rejected). alpha_max grows by ``step_factor`` when the clip binds (the SQUAREM package's
    adaptive bound). ``max_iter`` counts M-steps (EM maps), as EM's iterations do.

    EM crawls where experts are redundant (the likelihood nearly flat along their difference);
    the extrapolation steps along the direction the EM iterates keep moving in.
    """

    info = MethodInfo("moe-squarem", peer=False, constraints="none",
                      requires=MixtureLikelihood,
                      description="EM for mixtures of experts accelerated by SQUAREM "
                                  "(Varadhan & Roland 2008), monotone")
    options = {**MixtureEM.options, "step_factor": 4.0}
    option_constraints = {**MixtureEM.option_constraints, "step_factor": [POSITIVE]}

    def init(self, model, x):
        s = super().init(model, x)
        return MixtureSquaremState(s.x, s.f, None, R=s.R, mstep=s.mstep, iterates=s.iterates)

    def limit_reached(self, model, state):
        return state.mstep.calls >= self.max_iter

    def _e_step(self, model, theta):
        """(L, R) at theta, or None where the likelihood of a sample vanishes there (an
        extrapolation too far) or L is not finite."""
        try:
            f, R = e_step(model, theta)
        except FloatingPointError:
            return None
        finally:
            model.count("value")
        return (f, R) if math.isfinite(f) else None

    def update(self, model, state):
        x0 = state.x
        x1 = state.mstep(x0, state.R)                                  # x1 = F(x0)
        self.move(model, state, x1)
        f1 = state.f
        status = self.stop_status(state, math.inf)
        if status is None and self.limit_reached(model, state):
            status = Status.MAX_ITER
        if status is not None:
            state.status = status
            return
        x2 = state.mstep(x1, state.R)                                  # x2 = F(x1)
        state.cycles += 1
        found, state.alpha_max = squarem_extrapolate(
            x0, x1, x2, f1, lambda x: self._e_step(model, x), state.alpha_max,
            step_factor=self.opts["step_factor"])
        if found is not None:
            x_ext, f_ext, R_ext = found
            self.move(model, state, x_ext, (f_ext, R_ext))
            state.extrapolations_accepted += 1
            return
        self.move(model, state, x2)                                    # the plain EM step

    def result_info(self, state):
        return {**super().result_info(state), "cycles": state.cycles,
                "extrapolations_accepted": state.extrapolations_accepted}


def fit_em(problem: MoEProblem, theta0, max_iter: int = 100, tol: float = 1e-8,
           mstep: str = "newton-bound", mstep_tol: float = 1e-8, mstep_max_iter: int = 100,
           inner_steps: int = 10, inner_lr: float = 1.0, mstep_options: dict | None = None,
           callback=None, keep_thetas: bool = False) -> Result:
    """EM from ``theta0``: :class:`MixtureEM` run on ``problem``.

    Parameters
    ----------
    problem : :class:`~zbound.moe.model.MoEProblem`
    theta0 : (n_params,) start
    max_iter : EM iterations at most
    tol : stop when an iteration lowers L by <= tol * max(1, abs(L)) (0: run all ``max_iter``)
    mstep : "newton-bound" (default), "bound" (Alg. 2), "squarem" or "gd" (the paper's inner
        gradient descent, ``inner_steps`` steps of ``inner_lr``)
    mstep_tol, mstep_max_iter : stopping rule of the M-step solver (gradient inf-norm)
    mstep_options : options of the M-step solver (e.g. ``cg_maxiter``, the cap on Hessian
        products per Newton step; "newton-bound" defaults to ``precond="gram"``)
    callback : callback(theta, objective) after every iteration; True stops
    keep_thetas : keep every iterate in ``Result.info["iterates"]``

    Returns
    -------
    :class:`~zbound.solvers.Result`; its trace has the objective after every iteration (row 0
    the start), which with the bound M-steps never increases (checked by the tests).
    """
    theta = _check_theta(problem, theta0)
    solver = MixtureEM(max_iter=_check_iter(max_iter), tol=0.0, ftol=float(tol), callback=callback,
                       mstep=mstep, mstep_tol=float(mstep_tol),
                       mstep_max_iter=int(mstep_max_iter), inner_steps=inner_steps,
                       inner_lr=float(inner_lr), mstep_options=mstep_options,
                       keep_iterates=bool(keep_thetas))
    return solver.run(problem, theta)
