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

import numpy as np
from sklearn.utils._param_validation import StrOptions

from zbound.moe.em import _check_iter, _check_theta
from zbound.moe.model import GatedMixture, MoEProblem
from zbound.solvers.base import MethodInfo, register
from zbound.solvers.baselines import FixedRule, GradientDescent
from zbound.solvers.first_order import Adam, TorchRule, torch_available
from zbound.solvers.result import Result
from zbound.utils.validation import POSITIVE, Choices


def _check_lr(name: str, lr) -> float:
    lr = float(lr)
    if not (np.isfinite(lr) and lr > 0):
        raise ValueError(f"{name} must be finite and > 0, got {lr!r}")
    return lr


class _MixtureFirstOrder(FixedRule):
    """The first-order MoE methods: :class:`~zbound.solvers.baselines.FixedRule` on a gated
    mixture, stopping when an iteration lowers the objective by at least 0 and at most
    ``ftol`` * max(1, |L|) (a rise does not stop it: these methods are not monotone), after
    ``max_iter`` iterations, or when the objective becomes NaN or inf or leaves the model's
    domain (``model.in_domain``: a noise variance above its ceiling), which counts as
    diverging. ``tol`` is not used."""


@register
class MixtureGradientEM(_MixtureFirstOrder):
    """Gradient EM (Algorithm 1): theta_{t+1} = theta_t - diag(lr) grad Q(theta_t | theta_t),
    ``lr_experts`` on the expert parameters (and noise log-variances), ``lr_gate`` on the
    gate."""

    info = MethodInfo("moe-gradient-em", peer=True, constraints="none",
                      requires=GatedMixture,
                      step_size=True,
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
class MixtureGD(GradientDescent):
    """Gradient descent on L (Algorithm 2): theta_{t+1} = theta_t - lr grad L(theta_t): the
    registered "gd" on a gated mixture, with the stopping tests of the other first-order
    mixture methods (:class:`_MixtureFirstOrder`)."""

    info = MethodInfo("moe-gd", peer=True, constraints="none", requires=GatedMixture,
                      step_size=True,
                      description="gradient descent on the mixture's objective "
                                  "(Fruytier et al. Alg. 2)")


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
                      step_size=True,
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
