"""First-order training of mixtures of experts: Gradient EM (Alg. 1), gradient descent on the
negative log-likelihood (Alg. 2), and Adam (a peer beyond the paper).

Gradient EM takes one gradient step on each of the two EM sub-objectives (51)-(52) at theta_t:
step ``lr_experts`` on the experts' Q, ``lr_gate`` on the gate's Q. The gradient of
Q(. | theta_t) at theta_t equals grad L(theta_t) (Section 3), so Gradient EM is gradient
descent with one step size for the experts and another for the gate; with equal step sizes the
two coincide (a test checks it). Gradient descent (Alg. 2) uses one step size for all.

Adam uses ``torch.optim.Adam`` (float64, CPU) when PyTorch is installed, else the library's
NumPy Adam (``zbound.solvers.first_order.Adam``); the gradient is the same NumPy gradient either
way, so both minimize exactly the objective the other methods do.

A run whose objective becomes NaN or inf (too large a step) stops there with
``info["diverged"] = True``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sklearn.utils._param_validation import StrOptions

from zbound.moe.em import _check_iter, _check_theta
from zbound.moe.model import GatedMixture, MoEProblem
from zbound.solvers.base import MethodInfo, Solver, State, register
from zbound.solvers.first_order import Adam, TorchRule, torch_available
from zbound.solvers.result import Result, Status
from zbound.utils.validation import POSITIVE, Choices


def _check_lr(name: str, lr) -> float:
    lr = float(lr)
    if not (np.isfinite(lr) and lr > 0):
        raise ValueError(f"{name} must be finite and > 0, got {lr!r}")
    return lr


@dataclass
class FirstOrderState(State):
    """A first-order method's state: its update rule (``rule(theta, grad) -> new theta``,
    with the rule's own memory), whether the objective left the finite numbers, and the
    iterates when kept."""

    rule: object = None
    diverged: bool = False
    iterates: list | None = None


def _anywhere(theta) -> bool:
    """The domain of a model that states none: everything finite."""
    return True


class _MixtureFirstOrder(Solver):
    """Shared by the first-order MoE methods: theta <- rule(theta, grad L(theta)), the
    objective and gradient once per iterate. Stops when an iteration lowers the objective by
    at least 0 and at most ``ftol`` * max(1, |L|) (a rise does not stop it: these methods are
    not monotone), after ``max_iter`` iterations, or when the objective becomes NaN or inf
    (too large a step: ``info["diverged"]``, the last finite iterate kept and an infinite
    objective recorded), or leaves the model's domain (``model.in_domain``: a noise variance
    above its ceiling), which counts as diverging too. ``tol`` is not used."""

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
        if not (np.isfinite(f) and np.isfinite(g).all() and np.isfinite(new).all()
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
        return math.inf

    def stop_status(self, state, stat):
        if self.target is not None and state.f <= self.target:
            return Status.TARGET
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
class MixtureGradientEM(_MixtureFirstOrder):
    """Gradient EM (Algorithm 1): theta_{t+1} = theta_t - diag(lr) grad Q(theta_t | theta_t),
    ``lr_experts`` on the expert parameters (and noise log-variances), ``lr_gate`` on the
    gate."""

    info = MethodInfo("moe-gradient-em", peer=True, constraints="none",
                      requires=GatedMixture,
                      description="Gradient EM (Fruytier et al. Alg. 1): one gradient step "
                                  "on each EM sub-objective")
    options = {**_MixtureFirstOrder.options, "lr_experts": 1.0, "lr_gate": 1.0}
    option_constraints = {**_MixtureFirstOrder.option_constraints, "lr_experts": [POSITIVE],
                          "lr_gate": [POSITIVE]}

    def make_rule(self, model, x):
        scale = np.full(model.n_params, float(self.opts["lr_experts"]))
        scale[model.gate_slice()] = float(self.opts["lr_gate"])
        return lambda theta, g: theta - scale * g

    def rule_info(self):
        return {"lr_experts": float(self.opts["lr_experts"]),
                "lr_gate": float(self.opts["lr_gate"])}


@register
class MixtureGD(_MixtureFirstOrder):
    """Gradient descent on L (Algorithm 2): theta_{t+1} = theta_t - lr grad L(theta_t)."""

    info = MethodInfo("moe-gd", peer=True, constraints="none", requires=GatedMixture,
                      description="gradient descent on the mixture's objective "
                                  "(Fruytier et al. Alg. 2)")
    options = {**_MixtureFirstOrder.options, "lr": 1.0}
    option_constraints = {**_MixtureFirstOrder.option_constraints, "lr": [POSITIVE]}

    def make_rule(self, model, x):
        lr = float(self.opts["lr"])
        return lambda theta, g: theta - lr * g

    def rule_info(self):
        return {"lr": float(self.opts["lr"])}


def adam_backend(backend: str = "auto") -> str:
    """"torch" when PyTorch imports (``backend="auto"``), else "numpy"."""
    if backend not in ("auto", "torch", "numpy"):
        raise ValueError(f"backend must be 'auto', 'torch' or 'numpy', got {backend!r}")
    if backend != "auto":
        return backend
    return "torch" if torch_available() else "numpy"


@register
class MixtureAdam(_MixtureFirstOrder):
    """Adam on L (full-batch gradients; a peer beyond the paper): ``torch.optim.Adam``
    (float64, CPU) when PyTorch is installed, else ``zbound.solvers.first_order.Adam``
    (``backend`` forces one); the same NumPy gradient either way."""

    info = MethodInfo("moe-adam", peer=True, constraints="none", requires=GatedMixture,
                      description="Adam on the mixture's objective (full batch; "
                                  "torch.optim.Adam when installed)")
    options = {**_MixtureFirstOrder.options, "lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
               "backend": "auto"}
    option_constraints = {**_MixtureFirstOrder.option_constraints, "lr": [POSITIVE],
                          "betas": [tuple, list], "eps": [POSITIVE],
                          "backend": [StrOptions(Choices("auto", "torch", "numpy"))]}

    def make_rule(self, model, x):
        lr, betas, eps = float(self.opts["lr"]), tuple(self.opts["betas"]), self.opts["eps"]
        if adam_backend(self.opts["backend"]) == "torch":
            return TorchRule("Adam", x, lr, betas=betas, eps=eps).step
        return Adam(lr=lr, betas=betas, eps=eps).step

    def rule_info(self):
        return {"lr": float(self.opts["lr"]), "backend": adam_backend(self.opts["backend"])}


def _run(solver: _MixtureFirstOrder, problem: MoEProblem, theta0, max_iter, tol) -> Result:
    return solver.replace(max_iter=_check_iter(max_iter), tol=0.0, ftol=float(tol)).run(
        problem, _check_theta(problem, theta0))


def fit_gradient_em(problem: MoEProblem, theta0, lr_experts: float, lr_gate: float,
                    max_iter: int = 100, tol: float = 0.0,
                    keep_thetas: bool = False) -> Result:
    """Gradient EM (Algorithm 1): :class:`MixtureGradientEM` run on ``problem``."""
    solver = MixtureGradientEM(lr_experts=_check_lr("lr_experts", lr_experts),
                               lr_gate=_check_lr("lr_gate", lr_gate),
                               keep_iterates=bool(keep_thetas))
    return _run(solver, problem, theta0, max_iter, tol)


def fit_gd(problem: MoEProblem, theta0, lr: float, max_iter: int = 100, tol: float = 0.0,
           keep_thetas: bool = False) -> Result:
    """Gradient descent on L (Algorithm 2): :class:`MixtureGD` run on ``problem``."""
    solver = MixtureGD(lr=_check_lr("lr", lr), keep_iterates=bool(keep_thetas))
    return _run(solver, problem, theta0, max_iter, tol)


def fit_adam(problem: MoEProblem, theta0, lr: float, max_iter: int = 100,
             betas=(0.9, 0.999), eps: float = 1e-8, backend: str = "auto", tol: float = 0.0,
             keep_thetas: bool = False) -> Result:
    """Adam on L (full-batch gradients): :class:`MixtureAdam` run on ``problem``."""
    adam_backend(backend)
    solver = MixtureAdam(lr=_check_lr("lr", lr), betas=tuple(betas), eps=float(eps),
                         backend=backend, keep_iterates=bool(keep_thetas))
    return _run(solver, problem, theta0, max_iter, tol)
