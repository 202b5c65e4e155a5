"""The interface between models and solvers (DESIGN.md 2).

A model is an objective with its data: J(theta) = sum_j [log Z_j(theta) - theta^T f_j(y_j)]
+ (reg / 2) ||theta||^2 for log-linear families, or anything else with the same methods.
Solvers see a model only through this protocol and never import model internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from zbound.bounds.curvature import Curvature


@dataclass
class Majorizer:
    """Quadratic upper bound on the objective at ``theta``.

    J(theta + delta) <= value + grad @ delta + 0.5 * delta @ curvature @ delta for every delta,
    with equality at delta = 0. ``curvature`` already includes the regularizer.
    """

    theta: np.ndarray
    value: float
    grad: np.ndarray
    curvature: Curvature

    def evaluate(self, theta_new: np.ndarray) -> float:
        delta = np.asarray(theta_new, dtype=np.float64) - self.theta
        return float(self.value + self.grad @ delta + 0.5 * self.curvature.quad(delta))

    def minimizer(self, method: str = "cholesky", **kwargs) -> np.ndarray:
        """Unconstrained minimizer theta - C^{-1} grad (the step of Alg. 2 without constraints)."""
        return self.theta - self.curvature.solve(self.grad, method=method, **kwargs)


@runtime_checkable
class Model(Protocol):
    """What a solver may call."""

    n_params: int

    def value(self, theta: np.ndarray) -> float: ...

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]: ...

    def majorizer(self, theta: np.ndarray, order: str = "descending") -> Majorizer:
        """Quadratic bound at theta built from the partition-function bounds (Alg. 1)."""
        ...

    def hessian(self, theta: np.ndarray) -> Curvature:
        """Exact Hessian of the objective at theta (for Newton-type methods)."""
        ...

    def value_grad_hessian(self, theta: np.ndarray) -> tuple[float, np.ndarray, Curvature]:
        """All three at once (shares the softmax work)."""
        ...
