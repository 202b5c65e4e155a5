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

import time

import numpy as np

from zbound.moe.em import _check_theta
from zbound.moe.model import MoEProblem
from zbound.moe.result import MoEFit


def _check_lr(name: str, lr) -> float:
    lr = float(lr)
    if not (np.isfinite(lr) and lr > 0):
        raise ValueError(f"{name} must be finite and > 0, got {lr!r}")
    return lr


def _check_iter(max_iter) -> int:
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 0:
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    return int(max_iter)


def _run(problem: MoEProblem, theta0, max_iter: int, step, method: str, info: dict,
         keep_thetas: bool, tol: float) -> MoEFit:
    """Shared loop: ``step(theta, grad) -> new theta``; objective and gradient once per
    iterate."""
    theta = _check_theta(problem, theta0)
    max_iter = _check_iter(max_iter)
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        f, g = problem.value_and_grad(theta)
    objectives, times = [f], [time.perf_counter() - t0]
    thetas = [theta.copy()] if keep_thetas else None
    diverged = False
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (it is the count after the loop)
        new = step(theta, g)
        with np.errstate(all="ignore"):
            f_new, g_new = problem.value_and_grad(new)
        if not (np.isfinite(f_new) and np.isfinite(g_new).all()):
            diverged = True
            times.append(time.perf_counter() - t0)
            objectives.append(float("inf"))
            break
        theta, g = new, g_new
        times.append(time.perf_counter() - t0)
        objectives.append(f_new)
        if keep_thetas:
            thetas.append(theta.copy())
        decrease = f - f_new
        f = f_new
        if tol > 0 and 0 <= decrease <= tol * max(1.0, abs(f)):
            converged = True
            break
    info = dict(info, diverged=diverged)
    return MoEFit(theta, f, it, converged, objectives, times, (), method, info, thetas)


def fit_gradient_em(problem: MoEProblem, theta0, lr_experts: float, lr_gate: float,
                    max_iter: int = 100, tol: float = 0.0,
                    keep_thetas: bool = False) -> MoEFit:
    """Gradient EM (Algorithm 1): theta_{t+1} = theta_t - diag(lr) grad Q(theta_t | theta_t),
    ``lr_experts`` on the expert parameters (and noise log-variances), ``lr_gate`` on the
    gate."""
    lr_e = _check_lr("lr_experts", lr_experts)
    lr_g = _check_lr("lr_gate", lr_gate)
    scale = np.full(problem.n_params, lr_e)
    scale[problem.gate_slice()] = lr_g
    return _run(problem, theta0, max_iter, lambda x, g: x - scale * g, "gradient-em",
                {"lr_experts": lr_e, "lr_gate": lr_g}, keep_thetas, tol)


def fit_gd(problem: MoEProblem, theta0, lr: float, max_iter: int = 100, tol: float = 0.0,
           keep_thetas: bool = False) -> MoEFit:
    """Gradient descent on L (Algorithm 2): theta_{t+1} = theta_t - lr grad L(theta_t)."""
    lr = _check_lr("lr", lr)
    return _run(problem, theta0, max_iter, lambda x, g: x - lr * g, "gd", {"lr": lr},
                keep_thetas, tol)


def adam_backend(backend: str = "auto") -> str:
    """"torch" when PyTorch imports (``backend="auto"``), else "numpy"."""
    if backend not in ("auto", "torch", "numpy"):
        raise ValueError(f"backend must be 'auto', 'torch' or 'numpy', got {backend!r}")
    if backend != "auto":
        return backend
    try:
        import torch  # noqa: F401
    except ImportError:
        return "numpy"
    return "torch"


class _TorchAdam:
    def __init__(self, x0, lr, betas, eps):
        import torch

        self.torch = torch
        self.param = torch.nn.Parameter(torch.from_numpy(np.array(x0, dtype=np.float64)))
        self.opt = torch.optim.Adam([self.param], lr=lr, betas=betas, eps=eps)

    def step(self, x, g):
        self.param.grad = self.torch.from_numpy(np.ascontiguousarray(g, dtype=np.float64))
        self.opt.step()
        return self.param.detach().numpy().copy()


def fit_adam(problem: MoEProblem, theta0, lr: float, max_iter: int = 100,
             betas=(0.9, 0.999), eps: float = 1e-8, backend: str = "auto", tol: float = 0.0,
             keep_thetas: bool = False) -> MoEFit:
    """Adam on L (full-batch gradients): ``torch.optim.Adam`` when PyTorch is installed, else
    ``zbound.solvers.first_order.Adam`` (``backend`` forces one)."""
    lr = _check_lr("lr", lr)
    which = adam_backend(backend)
    theta0 = _check_theta(problem, theta0)
    if which == "torch":
        opt = _TorchAdam(theta0, lr, tuple(betas), eps)
        step = opt.step
    else:
        from zbound.solvers.first_order import Adam

        opt = Adam(lr=lr, betas=tuple(betas), eps=eps)
        opt.reset()
        step = opt.step
    return _run(problem, theta0, max_iter, step, "adam", {"lr": lr, "backend": which},
                keep_thetas, tol)
