"""First-order update rules in NumPy, matching PyTorch's ``torch.optim`` formulas exactly.

They are the peers of the stochastic bound solvers when torch is absent (the bench uses
``torch.optim`` itself when it is installed; ``tests/solvers/test_first_order.py`` checks that
both produce the same iterates to rounding).

>>> import numpy as np
>>> from zbound.solvers.first_order import Adam
>>> opt = Adam(lr=0.1)
>>> x = np.array([1.0, -2.0])
>>> for _ in range(200):                 # minimize ||x||^2 / 2: the gradient is x
...     x = opt.step(x, x)
>>> bool(np.abs(x).max() < 0.05)
True

Each rule keeps its own state (momentum buffer, moment estimates, step count); ``reset()``
forgets it. ``step`` returns a new array and never modifies ``x`` or ``grad``; ``lr`` is the
step size of the next step (a schedule sets it). :class:`TorchRule` puts any
``torch.optim`` optimizer behind the same interface. These rules are the one first-order
update used everywhere: the stochastic peers, the Adam peer of mixtures of experts and the
chain CRF's AdaGrad.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SGD", "Adam", "AdaGrad", "TorchRule", "torch_available"]


def _check_vectors(x, grad):
    x = np.asarray(x, dtype=np.float64)
    grad = np.asarray(grad, dtype=np.float64)
    if x.shape != grad.shape:
        raise ValueError(f"x has shape {x.shape} but grad has shape {grad.shape}")
    if not np.all(np.isfinite(grad)):
        raise ValueError("grad contains NaN or inf")
    return x, grad


class SGD:
    """Stochastic gradient descent with optional (Nesterov) momentum, as ``torch.optim.SGD``.

    With ``g = grad + weight_decay * x``; on the first step ``b = g``, afterwards
    ``b = momentum * b + (1 - dampening) * g``; the direction is ``g + momentum * b`` (Nesterov)
    or ``b`` (momentum > 0) or ``g`` (momentum = 0); ``x <- x - lr * direction``.

    Parameters
    ----------
    lr : step size (> 0)
    momentum : momentum factor in [0, 1)
    nesterov : Nesterov momentum (needs momentum > 0 and dampening = 0, as in torch)
    weight_decay : L2 coefficient added to the gradient (``weight_decay * x``)
    dampening : dampening of the momentum buffer (torch's default 0)
    """

    def __init__(self, lr, momentum=0.0, nesterov=False, weight_decay=0.0, dampening=0.0):
        if not (np.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {lr!r}")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("nesterov momentum requires momentum > 0 and dampening = 0")
        self.lr = float(lr)
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self.weight_decay = float(weight_decay)
        self.dampening = float(dampening)
        self.reset()

    def reset(self):
        """Forget the momentum buffer and the step count."""
        self.buf = None
        self.t = 0
        return self

    def step(self, x, grad):
        """One update; returns the new iterate (``x`` is left unchanged)."""
        x, g = _check_vectors(x, grad)
        if self.weight_decay:
            g = g + self.weight_decay * x
        if self.momentum:
            if self.buf is None:
                self.buf = g.copy()
            else:
                self.buf = self.momentum * self.buf + (1.0 - self.dampening) * g
            g = g + self.momentum * self.buf if self.nesterov else self.buf
        self.t += 1
        return x - self.lr * g


class Adam:
    """Adam with bias correction, as ``torch.optim.Adam`` (``amsgrad=False``).

    With ``g = grad + weight_decay * x`` (L2 in the gradient, not AdamW),
    ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2`` and, at step ``t``,
    ``x <- x - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``.

    Parameters
    ----------
    lr : step size (> 0)
    betas : (b1, b2), each in [0, 1)
    eps : added to the denominator
    weight_decay : L2 coefficient added to the gradient
    """

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        if not (np.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {lr!r}")
        b1, b2 = betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"betas must lie in [0, 1), got {betas!r}")
        if eps < 0 or weight_decay < 0:
            raise ValueError("eps and weight_decay must be >= 0")
        self.lr = float(lr)
        self.betas = (float(b1), float(b2))
        self.eps = float(eps)
        self.weight_decay = float(weight_decay)
        self.reset()

    def reset(self):
        """Forget the moment estimates and the step count."""
        self.m = None
        self.v = None
        self.t = 0
        return self

    def step(self, x, grad):
        """One update; returns the new iterate (``x`` is left unchanged)."""
        x, g = _check_vectors(x, grad)
        if self.weight_decay:
            g = g + self.weight_decay * x
        b1, b2 = self.betas
        if self.m is None:
            self.m = np.zeros_like(x)
            self.v = np.zeros_like(x)
        self.t += 1
        self.m = b1 * self.m + (1.0 - b1) * g
        self.v = b2 * self.v + (1.0 - b2) * (g * g)
        bc1 = 1.0 - b1 ** self.t
        bc2 = 1.0 - b2 ** self.t
        denom = np.sqrt(self.v) / np.sqrt(bc2) + self.eps
        return x - (self.lr / bc1) * (self.m / denom)


class AdaGrad:
    """AdaGrad (Duchi, Hazan & Singer 2011), as ``torch.optim.Adagrad`` without learning-rate
    decay: ``G <- G + g^2`` per coordinate, ``x <- x - lr * g / (sqrt(G) + eps)``.

    ``G`` (None before the first step) is the rule's state; a caller whose parameter vector
    grows (new features of a streamed corpus) may extend it with zeros.
    """

    def __init__(self, lr=0.3, eps=1e-12):
        if not (np.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {lr!r}")
        if not eps >= 0:
            raise ValueError(f"eps must be >= 0, got {eps!r}")
        self.lr = float(lr)
        self.eps = float(eps)
        self.reset()

    def reset(self):
        """Forget the squared-gradient sums and the step count."""
        self.G = None
        self.t = 0
        return self

    def step(self, x, grad):
        """One update; returns the new iterate (``x`` is left unchanged)."""
        x, g = _check_vectors(x, grad)
        if self.G is None:
            self.G = np.zeros_like(x)
        self.G += g * g
        self.t += 1
        return x - self.lr * g / (np.sqrt(self.G) + self.eps)


class TorchRule:
    """A ``torch.optim`` optimizer (float64, CPU) behind the rules' interface:
    ``step(x, grad)`` returns the new iterate, ``lr`` sets the step size of the next step.
    ``name`` is the optimizer's class in ``torch.optim`` ("SGD", "Adam", "Adagrad", ...),
    ``x0`` the start, ``options`` its keyword arguments. When the caller moved the iterate
    itself (``partial_fit`` on a changed model), ``step`` starts from the given ``x``."""

    def __init__(self, name: str, x0, lr: float, **options):
        import torch

        self.torch = torch
        self.param = torch.tensor(np.array(x0, dtype=np.float64), dtype=torch.float64,
                                  requires_grad=True)
        self.opt = getattr(torch.optim, name)([self.param], lr=float(lr), **options)

    @property
    def lr(self) -> float:
        return float(self.opt.param_groups[0]["lr"])

    @lr.setter
    def lr(self, value: float) -> None:
        for group in self.opt.param_groups:
            group["lr"] = float(value)

    def step(self, x, grad):
        torch = self.torch
        with torch.no_grad():
            if not np.array_equal(self.param.numpy(), x):
                self.param.copy_(torch.from_numpy(np.asarray(x, dtype=np.float64)))
        self.param.grad = torch.from_numpy(np.ascontiguousarray(grad, dtype=np.float64))
        self.opt.step()
        return self.param.detach().numpy().copy()


def torch_available() -> bool:
    """Whether PyTorch imports."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True
