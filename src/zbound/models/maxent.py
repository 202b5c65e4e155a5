"""Maximum entropy / minimum relative entropy through its dual (paper 003, supplement, Sec. 3).

Primal (Jebara & Choromanska 2012, supplement "Maximum entropy problem"):

    min_p  RE(p || h) = sum_y p(y) log(p(y) / h(y))
    s.t.   sum_y p(y) f(y) = 0,   sum_y p(y) g(y) >= 0,   p a distribution on the n configurations.

Its solution is p(y) = h(y) exp(theta^T f(y) + vartheta^T g(y)) / Z(theta, vartheta), with

    (theta, vartheta) = argmin_{theta, vartheta >= 0}  log Z(theta, vartheta),
    Z = sum_y h(y) exp(beta^T F(y)),   beta = [theta; vartheta],   F(y) = [f(y); g(y)].

:class:`MaxEnt` is this dual as a :class:`zbound.models.base.Model`: its majorizer is Alg. 1
(:func:`zbound.bounds.enumerate.quadratic_bound`) on the stacked features F. The model states the
problem; :func:`zbound.solvers.solve_maxent` minimizes it under vartheta >= 0 with a constrained
majorization solver (the QP of the supplement) and returns :meth:`MaxEnt.solution`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from zbound.bounds.curvature import DenseCurvature
from zbound.bounds.enumerate import quadratic_bound
from zbound.models.base import Majorizer


@dataclass
class MaxEntSolution:
    """Primal solution recovered from a dual point (:meth:`MaxEnt.solution`).

    p : (n,) the minimum relative entropy distribution
    theta : (d,) multipliers of the equality constraints
    vartheta : (d',) multipliers of the inequality constraints (>= 0)
    log_z : optimal dual value log Z(theta, vartheta)
    relative_entropy : RE(p || h) at the solution (equals -log_z at the optimum)
    equality_residual : (d,) sum_y p(y) f(y), ~0
    inequality_value : (d',) sum_y p(y) g(y), >= ~0
    max_violation : largest violation of the primal constraints
    complementary_slackness : max_k |vartheta_k * (sum_y p(y) g_k(y))|
    result : the solver's :class:`zbound.solvers.Result` (None if not given)
    """

    p: np.ndarray
    theta: np.ndarray
    vartheta: np.ndarray
    log_z: float
    relative_entropy: float
    equality_residual: np.ndarray
    inequality_value: np.ndarray
    max_violation: float
    complementary_slackness: float
    result: object


class MaxEnt:
    """Dual of minimum relative entropy with moment equalities and inequalities.

    Parameters
    ----------
    f : (n, d) array, equality features: sum_y p(y) f(y) = 0
    g : (n, d') array or None, inequality features: sum_y p(y) g(y) >= 0
    log_prior : (n,) array or None, log h(y); -inf excludes a configuration (p(y) = 0).
        Default 0 (h uniform: maximum entropy).

    The parameter vector is beta = [theta; vartheta] (d + d'); ``n_params = d + d'``.
    """

    def __init__(self, f, g=None, log_prior=None):
        f = np.asarray(f, dtype=np.float64)
        if f.ndim != 2 or f.shape[0] == 0:
            raise ValueError(f"f must be a non-empty (n, d) array, got shape {f.shape}")
        n = f.shape[0]
        if g is None:
            g = np.zeros((n, 0))
        g = np.asarray(g, dtype=np.float64)
        if g.ndim != 2 or g.shape[0] != n:
            raise ValueError(f"g must have shape ({n}, d') to match f, got {g.shape}")
        if f.shape[1] + g.shape[1] == 0:
            raise ValueError("f and g have no columns: there are no constraints")
        if not (np.isfinite(f).all() and np.isfinite(g).all()):
            raise ValueError("f and g must be finite")
        if log_prior is None:
            log_prior = np.zeros(n)
        log_prior = np.asarray(log_prior, dtype=np.float64)
        if log_prior.shape != (n,):
            raise ValueError(f"log_prior must have shape ({n},), got {log_prior.shape}")
        if np.isnan(log_prior).any() or (log_prior == np.inf).any():
            raise ValueError("log_prior contains NaN or +inf (use -inf for h(y) = 0)")
        if not np.isfinite(log_prior).any():
            raise ValueError("log_prior is -inf everywhere: h has no mass")
        self.f = f
        self.g = g
        self.log_prior = log_prior
        self.features = np.hstack([f, g])          # F(y) = [f(y); g(y)], (n, d + d')
        self.d = f.shape[1]
        self.d_ineq = g.shape[1]
        self.n_params = self.d + self.d_ineq
        self._support = np.isfinite(log_prior)

    # -- Model protocol (dual objective log Z(beta)) -----------------------------------------
    def _log_p(self, beta: np.ndarray) -> tuple[float, np.ndarray]:
        a = self.log_prior + self.features @ beta
        with np.errstate(under="ignore"):
            lse = float(logsumexp(a))
        return lse, a - lse

    def log_p(self, beta: np.ndarray) -> np.ndarray:
        """(n,) log p(y | beta), -inf off the support of h."""
        return self._log_p(np.asarray(beta, dtype=np.float64))[1]

    def value(self, beta: np.ndarray) -> float:
        return self._log_p(beta)[0]

    def value_and_grad(self, beta: np.ndarray) -> tuple[float, np.ndarray]:
        lse, lp = self._log_p(beta)
        p = np.exp(lp)
        return lse, self.features.T @ p

    def value_grad_hessian(self, beta: np.ndarray):
        """log Z, E_p[F] and Cov_p[F] (d + d', d + d')."""
        lse, lp = self._log_p(beta)
        p = np.exp(lp)
        mean = self.features.T @ p
        Fc = self.features - mean
        H = Fc.T @ (p[:, None] * Fc)
        return lse, mean, DenseCurvature(H)

    def hessian(self, beta: np.ndarray) -> DenseCurvature:
        return self.value_grad_hessian(beta)[2]

    def majorizer(self, beta: np.ndarray, order: str = "descending") -> Majorizer:
        """Alg. 1 on the stacked features F: log Z(beta + d) <= log z + mu^T d + d^T S d / 2."""
        beta = np.asarray(beta, dtype=np.float64)
        qb = quadratic_bound(self.features, beta, self.log_prior, order)
        return Majorizer(beta, float(qb.log_z), qb.mean, DenseCurvature(qb.curvature))

    # -- what the solution must satisfy ------------------------------------------------------
    def constraints(self):
        """vartheta >= 0 as :class:`zbound.constraints.LinearConstraints` (None when d' = 0)."""
        from zbound.constraints import LinearConstraints

        if self.d_ineq == 0:
            return None
        lb = np.r_[np.full(self.d, -np.inf), np.zeros(self.d_ineq)]
        return LinearConstraints(lb=lb)

    def solution(self, beta: np.ndarray, result=None) -> MaxEntSolution:
        """The primal distribution at dual point ``beta`` and its constraint residuals."""
        beta = np.asarray(beta, dtype=np.float64)
        lse, lp = self._log_p(beta)
        p = np.exp(lp)
        eq = self.f.T @ p
        ineq = self.g.T @ p
        violation = max(float(np.max(np.abs(eq), initial=0.0)),
                        float(np.max(-ineq, initial=0.0)))
        vartheta = beta[self.d:]
        slack = float(np.max(np.abs(vartheta * ineq), initial=0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * (lp - self.log_prior), 0.0)
        return MaxEntSolution(p=p, theta=beta[:self.d].copy(), vartheta=vartheta.copy(),
                              log_z=lse, relative_entropy=float(np.sum(terms)),
                              equality_residual=eq, inequality_value=ineq,
                              max_violation=violation, complementary_slackness=slack,
                              result=result)
