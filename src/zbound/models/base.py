"""The interface between models and solvers.

A model states an objective; solvers minimize it and see it only through this protocol
(``n_params``, ``value``, ``value_and_grad``, ``value_grad_hessian``, ``hessian`` and
``majorizer``). Nothing here or elsewhere under ``zbound.models`` imports ``zbound.solvers``.

The usual model is :class:`zbound.models.objective.Objective`: a data term (a loss summed over
rows, evaluated chunk by chunk) plus penalties. A :class:`Majorizer` is a quadratic upper bound
on an objective at a point; majorizers compose: the majorizers of the chunks of a loss add up,
a penalty adds its own (exact, being quadratic), and a weight scales one (EM responsibilities).
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from zbound.bounds.curvature import Curvature


@dataclass
class Majorizer:
    """Quadratic upper bound on an objective at ``theta``.

    J(theta + delta) <= value + grad @ delta + 0.5 * delta @ curvature @ delta for every delta,
    with equality at delta = 0. ``curvature`` is a :class:`zbound.bounds.curvature.Curvature`.

    ``m1 + m2`` (both at the same theta) majorizes the sum of the two objectives; ``c * m``
    (c >= 0) majorizes c times the objective.
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

    def __add__(self, other):
        if isinstance(other, numbers.Real) and other == 0:
            return self
        if not isinstance(other, Majorizer):
            return NotImplemented
        if self.theta is not other.theta and not np.array_equal(self.theta, other.theta):
            raise ValueError("majorizers add only at the same expansion point theta")
        return Majorizer(self.theta, self.value + other.value, self.grad + other.grad,
                         self.curvature + other.curvature)

    __radd__ = __add__

    def __mul__(self, c):
        if not isinstance(c, numbers.Real):
            return NotImplemented
        c = float(c)
        if not (np.isfinite(c) and c >= 0):
            raise ValueError(f"a majorizer can only be scaled by a finite number >= 0, got {c}")
        return Majorizer(self.theta, c * self.value, c * self.grad, c * self.curvature)

    __rmul__ = __mul__


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


# -- optional capabilities ----------------------------------------------------------------------
# A model (or its loss) may offer more than the protocol above. Solvers ask with
# :func:`supports`, never by testing a concrete class.


class Batchable(Protocol):
    """A loss whose rows can be taken apart: ``subset(rows)`` is the same loss on those rows
    (mini-batch models of the stochastic solvers)."""

    def subset(self, rows): ...


class DenseHessian(Protocol):
    """A model that gives its exact Hessian as a dense (p, p) array,
    ``value_grad_dense_hessian(theta)`` -> (value, gradient, array): what a Newton step with a
    dense factorization needs, formed without the curvature operator where the loss can (a
    two-class softmax on dense rows: one weighted Gram matrix)."""

    def value_grad_dense_hessian(self, theta): ...


class SinglePrecision(Protocol):
    """A model with a float32 form: ``single_precision(copy=True)`` gives it, or None where the
    data do not fit float32's range (mixed-precision L-BFGS)."""

    def single_precision(self, copy: bool = True): ...


class FixedCurvature(Protocol):
    """A softmax loss with Boehning's fixed curvature, the weighted Gram matrix of its rows
    (``bound_gram(max_rows, dtype)``, the ones column implicit); with its class layout
    (``k`` weight vectors of ``d`` entries over ``n_classes`` classes). The bound
    preconditioner of L-BFGS is built from it."""

    k: int
    d: int
    n_classes: int

    def bound_gram(self, max_rows=None, dtype=np.float64) -> np.ndarray: ...


class LowRankMajorizer(Protocol):
    """A model whose Alg. 1 bound can be kept low-rank plus diagonal:
    ``lowrank_majorizer(theta, order, rank, rule)`` (Section 6)."""

    def lowrank_majorizer(self, theta, order="descending", rank=10, rule="exact"): ...


class SoftmaxData(FixedCurvature, Protocol):
    """A softmax regression loss whose rows a solver may work on directly (the sample-space
    methods, the blocked low-rank bound): the design ``X`` (t, d - fit_intercept), labels ``y``
    (indices), ``free`` classes without weights of their own (a reference class), sample
    weights or None."""

    X: object
    y: np.ndarray
    free: int
    fit_intercept: bool
    sample_weight: object


class LatentLikelihood(Protocol):
    """A latent conditional likelihood for EM: the E-step ``responsibilities(theta)`` and the
    M-step objective ``mstep_objective(eta, penalties)``; the data ``X``, ``y``,
    ``n_components``, ``n_samples``, ``n_pairs`` and ``sample_weight``."""

    X: np.ndarray
    y: np.ndarray
    n_components: int
    n_samples: int
    n_pairs: int
    sample_weight: object

    def responsibilities(self, theta: np.ndarray) -> np.ndarray: ...

    def mstep_objective(self, eta: np.ndarray, penalties=()): ...


def loss_and_penalties(model) -> tuple:
    """(loss, penalties) of an objective (``model.loss``, ``model.penalties``), or (the
    model, ()) for a bare loss: how a solver reads an objective's parts."""
    return getattr(model, "loss", model), tuple(getattr(model, "penalties", ()))


@functools.cache
def _members(proto) -> tuple[tuple[str, bool], ...]:
    """(name, whether it is a method) of every member of the capability protocol ``proto``
    (once per protocol: every solver run asks)."""
    out: dict[str, bool] = {}
    for klass in reversed(proto.__mro__):
        if klass in (object, Protocol) or not getattr(klass, "_is_protocol", False):
            continue
        for name in getattr(klass, "__annotations__", {}):
            out[name] = False
        for name, value in vars(klass).items():
            if not name.startswith("_") and callable(value):
                out[name] = True
    return tuple(sorted(out.items()))


def supports(obj, capability) -> bool:
    """Whether ``obj`` offers every member of the capability protocol ``capability`` (methods
    callable). Attribute look-up as Python does it, so a wrapper that forwards attributes
    (:class:`zbound.solvers.CountedModel`) offers what its model offers."""
    for name, method in _members(capability):
        try:
            value = getattr(obj, name)
        except AttributeError:
            return False
        if method and not callable(value):
            return False
    return True


__all__ = ["Majorizer", "Model", "Batchable", "DenseHessian", "SinglePrecision", "FixedCurvature",
           "LowRankMajorizer", "SoftmaxData", "LatentLikelihood", "supports",
           "loss_and_penalties"]
