"""An objective is a data term plus penalties: J(theta) = loss(theta) + sum_k penalty_k(theta).

:class:`Objective` is what solvers minimize. It adds the penalties' value, gradient and
(constant) curvature to the loss's value, gradient, Hessian operator and Alg. 1 majorizer; the
loss stays available on its own (``objective.loss``) for mini-batches, weighted EM steps and
row-partitioned evaluation.
"""

from __future__ import annotations

import numpy as np

from zbound.models.base import Majorizer


class Objective:
    """loss + penalties, following the :class:`zbound.models.base.Model` protocol.

    Parameters
    ----------
    loss : a data term (``zbound.models.loss``): ``n_params``, ``value``, ``value_and_grad``,
        ``value_grad_hessian`` and ``majorizer``
    penalties : any number of penalties (``zbound.models.penalty``); None and zero penalties
        are dropped
    """

    def __init__(self, loss, *penalties):
        self.loss = loss
        self.n_params = int(loss.n_params)
        kept = []
        for pen in penalties:
            if pen is None or pen.is_zero:
                continue
            if pen.n_params is not None and pen.n_params != self.n_params:
                raise ValueError(f"penalty {type(pen).__name__} has {pen.n_params} parameters, "
                                 f"the loss {self.n_params}")
            kept.append(pen)
        self.penalties = tuple(kept)
        #: False when a penalty is not differentiable (an L1 term): only the proximal methods
        #: minimize such an objective, through smooth_value_and_grad, prox and violation
        self.smooth = all(getattr(p, "smooth", True) for p in kept)
        self.nonsmooth = tuple(p for p in kept if not getattr(p, "smooth", True))
        self.smooth_penalties = tuple(p for p in kept if getattr(p, "smooth", True))

    def smooth_value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The value and gradient of the differentiable part (the loss and the smooth
        penalties)."""
        f, g = self.loss.value_and_grad(theta)
        for p in self.smooth_penalties:
            f += p.add_value_grad(theta, g)
        return f, g

    def nonsmooth_value(self, theta: np.ndarray) -> float:
        return float(sum(p.value(theta) for p in self.nonsmooth))

    def prox(self, v: np.ndarray, step: float) -> np.ndarray:
        """The proximal map of the non-smooth penalty (one at most) at ``v`` with ``step``."""
        if len(self.nonsmooth) > 1:
            raise ValueError("an objective takes at most one non-smooth penalty")
        return self.nonsmooth[0].prox(v, step) if self.nonsmooth else v

    def violation(self, theta: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Per coordinate, the KKT violation given the smooth part's gradient ``g``: |g| with
        no non-smooth penalty, else the distance from -g to its subdifferential."""
        return self.nonsmooth[0].violation(theta, g) if self.nonsmooth else np.abs(g)

    def single_precision(self, copy: bool = True) -> Objective | None:
        """The same objective with the loss evaluated in float32 (value and gradient only,
        e.g. :class:`zbound.models.loss.SingleSoftmaxLoss`; ``copy``: from a float32 copy of
        the data, else converting row blocks at every evaluation; the penalties in float64),
        or None when the loss has no such form."""
        make = getattr(self.loss, "single_precision", None)
        loss = make(copy=copy) if callable(make) else None
        return None if loss is None else Objective(loss, *self.penalties)

    def penalty_value(self, theta: np.ndarray) -> float:
        return float(sum(p.value(theta) for p in self.penalties))

    def value(self, theta: np.ndarray) -> float:
        f = self.loss.value(theta)
        for p in self.penalties:
            f += p.value(theta)
        return f

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self.loss.value_and_grad(theta)
        for p in self.penalties:
            f += p.add_value_grad(theta, g)
        return f, g

    def value_grad_hessian(self, theta: np.ndarray):
        f, g, H = self.loss.value_grad_hessian(theta)
        for p in self.penalties:
            f += p.add_value_grad(theta, g)
            H = p.add_curvature(H, inplace=True)      # H is fresh from the loss
        return f, g, H

    def hessian(self, theta: np.ndarray):
        return self.value_grad_hessian(theta)[2]

    def value_grad_dense_hessian(self, theta: np.ndarray):
        """(value, gradient, the exact Hessian as a dense (p, p) array), the penalties'
        curvatures added to it: the loss's ``value_grad_dense_hessian`` where it has one,
        else the dense form of :meth:`value_grad_hessian`'s operator."""
        dense = getattr(self.loss, "value_grad_dense_hessian", None)
        if dense is None:
            f, g, H = self.loss.value_grad_hessian(theta)
            H = H.to_dense()
        else:
            f, g, H = dense(theta)
        for p in self.penalties:
            f += p.add_value_grad(theta, g)
            p.curvature(H.shape[0]).add_to_dense(H)
        return f, g, H

    def majorizer(self, theta: np.ndarray, order: str = "descending") -> Majorizer:
        """The loss's Alg. 1 majorizer plus each penalty (exact: it is quadratic)."""
        m = self.loss.majorizer(theta, order)
        if not self.penalties:
            return m
        f, g, C = m.value, m.grad, m.curvature
        for p in self.penalties:
            f += p.add_value_grad(m.theta, g)
            C = p.add_curvature(C, inplace=True)      # fresh from the loss too
        return Majorizer(m.theta, float(f), g, C)

    def lowrank_majorizer(self, theta: np.ndarray, order: str = "descending", rank: int = 10,
                          rule: str = "exact") -> Majorizer:
        """The loss's low-rank majorizer (``loss.lowrank_majorizer``) plus each penalty, kept
        low-rank plus diagonal (``penalty.add_lowrank_curvature``): an L2 penalty adds to the
        diagonal exactly; the rank-one centering term goes through one more update by ``rule``
        (exact for the "exact" rule up to the one eigenpair it absorbs into the diagonal)."""
        build = getattr(self.loss, "lowrank_majorizer", None)
        if build is None:
            raise TypeError(f"{type(self.loss).__name__} has no lowrank_majorizer; the low-rank "
                            "bound is available for SoftmaxLoss")
        m = build(theta, order, rank=rank, rule=rule)
        f, g, C = m.value, m.grad, m.curvature
        for p in self.penalties:
            f += p.add_value_grad(m.theta, g)
            C = p.add_lowrank_curvature(C, rule=rule)
        return Majorizer(m.theta, float(f), g, C)

    def predict_proba(self, theta: np.ndarray, X=None) -> np.ndarray:
        return self.loss.predict_proba(theta, X)


class ScaledObjective:
    """c J(theta) for a model J and a constant c > 0: its value and gradient, what the
    first-order stochastic methods evaluate. The mean form of a mini-batch whose loss cannot
    be reweighted row by row (``zbound.solvers.stochastic.batch_objective``)."""

    def __init__(self, model, c: float):
        self.model, self.c = model, float(c)
        self.n_params = int(model.n_params)

    def value(self, theta: np.ndarray) -> float:
        return self.c * self.model.value(theta)

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self.model.value_and_grad(theta)
        return self.c * f, self.c * g
