"""Penalties: quadratic terms added to a data term. Being quadratic, each is its own exact
majorizer (value, gradient and a constant curvature operator).

- :class:`L2Penalty`: 1/2 sum_i s_i theta_i^2 with one strength or one per coordinate (0 leaves a
  coordinate, e.g. an intercept, unpenalized).
- :class:`InterceptCentering`: weight/2 (u^T theta)^2 for the 0/1 intercept indicator u: zero on
  the sum-zero representative of the intercepts, it makes a multinomial curvature definite along
  "add c to every intercept", the direction softmax scores are invariant to.

Every penalty has ``value``, ``grad``, ``add_grad``, ``add_value_grad``, ``curvature(p)`` (its
constant curvature operator), ``add_curvature`` / ``add_lowrank_curvature`` (folded into a
loss's curvature) and ``scaled(c)`` (c times the penalty, for mini-batch and weighted models).
Solvers read a penalty's structure only through its curvature operator
(:meth:`~zbound.bounds.curvature.Curvature.diagonal_plus_rank_one`).
"""

from __future__ import annotations

import numpy as np

from zbound.bounds.curvature import Curvature, DiagonalCurvature, RankOneCurvature, ScaledIdentity


class L2Penalty:
    """1/2 sum_i s_i theta_i^2; ``strength`` a number >= 0 or a (p,) array of them."""

    separable = True

    def __init__(self, strength):
        if isinstance(strength, bool):
            raise TypeError("L2 strength must be a real number or an array, got a bool")
        if isinstance(strength, int | float | np.integer | np.floating):
            s = float(strength)
            if not (np.isfinite(s) and s >= 0):
                raise ValueError(f"L2 strength must be finite and >= 0, got {strength}")
            self.strength = s
            self.n_params = None
            self.is_zero = s == 0.0
        else:
            s = np.asarray(strength, dtype=np.float64)
            if s.ndim != 1:
                raise ValueError(f"per-coordinate L2 strengths must be 1-D, got shape {s.shape}")
            if not (np.isfinite(s).all() and (s >= 0).all()):
                raise ValueError("per-coordinate L2 strengths must be finite and >= 0")
            self.strength = s
            self.n_params = s.size
            self.is_zero = not s.any()

    def value(self, theta: np.ndarray) -> float:
        s = self.strength
        if self.n_params is None:
            return 0.5 * s * float(theta @ theta)
        return 0.5 * float((s * theta) @ theta)

    def grad(self, theta: np.ndarray) -> np.ndarray:
        return self.strength * theta

    def add_grad(self, theta: np.ndarray, g: np.ndarray) -> None:
        """g += grad, in place."""
        g += self.strength * theta

    def add_value_grad(self, theta: np.ndarray, g: np.ndarray) -> float:
        """g += grad in place; returns the value."""
        s = self.strength
        if self.n_params is None:
            g += s * theta
            return 0.5 * s * float(theta @ theta)
        st = s * theta
        g += st
        return 0.5 * float(st @ theta)

    def curvature(self, p: int) -> Curvature:
        if self.n_params is None:
            return ScaledIdentity(p, self.strength)
        return DiagonalCurvature(self.strength)

    def scaled(self, c: float) -> L2Penalty:
        """c times this penalty (c >= 0): the same form with strength c s."""
        return L2Penalty(self.strength * c)

    def add_curvature(self, C: Curvature, inplace: bool = False) -> Curvature:
        """C + this penalty's curvature (a scalar strength folds into the operator's ridge;
        ``inplace`` lets it fold into C itself when nothing else holds C)."""
        if self.n_params is None:
            return C.with_ridge(self.strength, inplace)
        return C + DiagonalCurvature(self.strength)

    def add_lowrank_curvature(self, C, rule: str = "exact"):
        """C + this penalty's curvature for a low-rank plus diagonal C
        (:class:`~zbound.bounds.lowrank.LowRankCurvature`): added to its diagonal, exactly."""
        if self.n_params is None:
            return C.with_ridge(self.strength)
        return C.with_diagonal(self.strength)


class InterceptCentering:
    """weight/2 (u^T theta)^2, u (p,) the 0/1 indicator of the intercept entries."""

    separable = False

    def __init__(self, indicator: np.ndarray, weight: float):
        self.u = np.asarray(indicator, dtype=np.float64)
        if self.u.ndim != 1:
            raise ValueError(f"indicator must be 1-D, got shape {self.u.shape}")
        weight = float(weight)
        if not (np.isfinite(weight) and weight >= 0):
            raise ValueError(f"centering weight must be finite and >= 0, got {weight}")
        self.weight = weight
        self.n_params = self.u.size
        self.is_zero = weight == 0.0

    def value(self, theta):
        ut = float(self.u @ theta)
        return 0.5 * self.weight * ut * ut

    def grad(self, theta):
        return (self.weight * float(self.u @ theta)) * self.u

    def add_grad(self, theta, g):
        g += (self.weight * float(self.u @ theta)) * self.u

    def add_value_grad(self, theta, g) -> float:
        ut = float(self.u @ theta)
        g += (self.weight * ut) * self.u
        return 0.5 * self.weight * ut * ut

    def curvature(self, p: int) -> Curvature:
        return RankOneCurvature(self.u, self.weight)

    def scaled(self, c: float) -> InterceptCentering:
        """c times this penalty (c >= 0): the same indicator with weight c w."""
        return InterceptCentering(self.u, self.weight * c)

    def add_curvature(self, C: Curvature, inplace: bool = False) -> Curvature:
        return C + RankOneCurvature(self.u, self.weight)

    def add_lowrank_curvature(self, C, rule: str = "exact"):
        """C + weight u u^T for a low-rank plus diagonal C, by one more rank-one update of
        ``rule``: the exact rule keeps it in the low-rank part up to the smallest eigenpair of
        the (rank + 1) system, absorbed into the diagonal (tighter than bounding weight u u^T
        by its least-trace diagonal weight ``||u||_1 |u|``, which for the intercept indicator is
        n_classes times the weight on every intercept)."""
        return C.rank_one_update(np.sqrt(self.weight) * self.u, rule)


class ElasticNetPenalty:
    """sum_i l1_i |theta_i| + 1/2 sum_i l2_i theta_i^2: the L1 (``l2 = 0``), weighted L1 and
    elastic-net penalties, each strength a number >= 0 or a (p,) array (0 leaves a coordinate,
    e.g. an intercept, unpenalized).

    Not differentiable where a coordinate is 0, so it is no majorizer of itself: ``smooth`` is
    False, and only the proximal methods (``MethodInfo.proximal``) minimize an objective that
    holds it. They read its separable structure through :meth:`strengths` and
    :meth:`prox`; ``add_value_grad`` adds the gradient of the L2 part and the L1 part's
    subgradient sign(theta) (0 at 0), for reports only.
    """

    smooth = False
    separable = True

    def __init__(self, l1, l2=0.0):
        self.l1 = _strength("L1", l1)
        self.l2 = _strength("L2", l2)
        sizes = {np.size(s) for s in (self.l1, self.l2) if np.ndim(s)}
        if len(sizes) > 1:
            raise ValueError(f"per-coordinate L1 and L2 strengths differ in length: {sizes}")
        self.n_params = sizes.pop() if sizes else None
        self.is_zero = not (np.any(self.l1) or np.any(self.l2))

    def strengths(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """(l1, l2) as (p,) arrays."""
        return (np.broadcast_to(self.l1, (p,)).astype(np.float64),
                np.broadcast_to(self.l2, (p,)).astype(np.float64))

    def value(self, theta: np.ndarray) -> float:
        return float(np.sum(self.l1 * np.abs(theta)) + 0.5 * np.sum(self.l2 * theta * theta))

    def grad(self, theta: np.ndarray) -> np.ndarray:
        return self.l1 * np.sign(theta) + self.l2 * theta

    def add_grad(self, theta: np.ndarray, g: np.ndarray) -> None:
        g += self.grad(theta)

    def add_value_grad(self, theta: np.ndarray, g: np.ndarray) -> float:
        g += self.grad(theta)
        return self.value(theta)

    def prox(self, v: np.ndarray, step: float) -> np.ndarray:
        """argmin_x 1/(2 step) ||x - v||^2 + penalty(x): soft thresholding, then the L2
        shrinkage."""
        return soft_threshold(v, step * self.l1) / (1.0 + step * self.l2)

    def violation(self, theta: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Per coordinate, the distance from -g (the smooth part's gradient) to the penalty's
        subdifferential at theta: 0 for every coordinate exactly at an optimum (the KKT
        conditions), what the proximal methods stop on."""
        return kkt_violation(theta, g, self.l1, self.l2)

    def scaled(self, c: float) -> ElasticNetPenalty:
        return ElasticNetPenalty(self.l1 * c, self.l2 * c)

    def curvature(self, p: int) -> Curvature:
        raise TypeError(_NO_CURVATURE)

    def add_curvature(self, C: Curvature, inplace: bool = False) -> Curvature:
        raise TypeError(_NO_CURVATURE)

    def add_lowrank_curvature(self, C, rule: str = "exact"):
        raise TypeError(_NO_CURVATURE)


_NO_CURVATURE = ("an L1 penalty has no curvature: it needs a proximal method "
                 "(minimize(method='bound-cd' or 'fista'))")


def kkt_violation(theta: np.ndarray, g: np.ndarray, l1, l2) -> np.ndarray:
    """Per coordinate, the distance from -g to the subdifferential of
    l1 |theta| + l2 theta^2 / 2 at theta (any shapes that broadcast)."""
    gl = g + l2 * theta
    return np.where(theta != 0.0, np.abs(gl + l1 * np.sign(theta)),
                    np.maximum(np.abs(gl) - l1, 0.0))


def soft_threshold(v: np.ndarray, t) -> np.ndarray:
    """sign(v) max(|v| - t, 0), elementwise."""
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def _strength(name: str, s):
    if isinstance(s, bool):
        raise TypeError(f"{name} strength must be a real number or an array, got a bool")
    if isinstance(s, int | float | np.integer | np.floating):
        s = float(s)
        if not (np.isfinite(s) and s >= 0):
            raise ValueError(f"{name} strength must be finite and >= 0, got {s}")
        return s
    s = np.asarray(s, dtype=np.float64)
    if s.ndim != 1 or not (np.isfinite(s).all() and (s >= 0).all()):
        raise ValueError(f"per-coordinate {name} strengths must be a 1-D array of finite "
                         "numbers >= 0")
    return s
