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
