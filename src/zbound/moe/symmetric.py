"""Symmetric mixtures of two experts (Section 3.1): SMoLinE and SMoLogE.

z in {-1, 1}, P(z | x; w) = sigmoid(z x.w), and the experts are mirror images:

- SMoLinE: y = z x.beta + eps, eps ~ N(0, 1);
- SMoLogE: y in {-1, 1}, P(y | x, z; beta) = sigmoid(y z x.beta).

Parameters are theta = (beta, w), 2d entries (no intercept). All expectations over x are the
empirical means over the rows of X, so everything below is exact on a finite sample:

- posteriors r = P(z = 1 | x, y) = sigmoid(x.w + 2 y x.beta) (SMoLinE), sigmoid(x.w + y x.beta)
  (SMoLogE);
- the EM update: SMoLinE beta = (X^T X)^{-1} X^T ((2r - 1) y) (the paper's E[(2r - 1) x y] when
  E[x x^T] = I), SMoLogE beta = the logistic regression on soft labels (1 + y (2r - 1)) / 2;
  w = the logistic regression on soft labels r. The soft-label regressions are solved by the
  library's bound-majorization solvers, warm-started (or by the paper's inner gradient descent);
- the mirror map of Theorem 4.1, A(theta) = mean[(x.beta)^2 / 2 + log(1 + e^{x.w})] (SMoLinE),
  mean[log(1 + e^{x.beta}) + log(1 + e^{x.w})] (SMoLogE), its Bregman divergence, and the KL
  divergence of the complete data computed directly (equal to it: tested);
- the mirror-descent step with unit step size argmin <grad L(theta_t), theta> + D_A(theta,
  theta_t), solved independently of EM (``md_step``): Theorem 4.1 says it is the EM step.

Derivation (why the empirical version is exact): conditionally on x, p(y, z | x; theta) =
h(y) exp(<S(x, y, z), theta> - A_x(theta)) with S = (y z x, z x / 2) (SMoLinE) or (y z x / 2,
z x / 2) (SMoLogE) and A_x(theta) the per-x term of A above minus x.w / 2 (minus x.(w + beta) /
2 for SMoLogE). The linear terms do not change a Bregman divergence, so Q(theta | theta_t) =
A(theta) - <s(theta_t), theta> + const and grad L(theta_t) = grad A(theta_t) - s(theta_t); both
EM and MD then solve grad A(theta) = s(theta_t).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import expit, log_expit

from zbound.bounds.curvature import DenseCurvature
from zbound.moe.model import SoftLabelSoftmaxLoss
from zbound.solvers.base import MethodInfo, Solver, State, register
from zbound.solvers.result import Result
from zbound.utils.validation import NON_NEGATIVE, POSITIVE, POSITIVE_INT

_LOG_2PI = float(np.log(2.0 * np.pi))


def _log1pexp(t):
    return np.logaddexp(0.0, t)


def _kl_bernoulli(a, b):
    """KL(Bern(sigmoid(a)) || Bern(sigmoid(b))) for logits a, b, stable."""
    pa = expit(a)
    return pa * (log_expit(a) - log_expit(b)) + (1 - pa) * (log_expit(-a) - log_expit(-b))


def _draw_gated(n: int, d: int, norm: float, rng):
    """Experts beta and gate w with norm ``norm``, Gaussian X (n, d), and the hidden side z = +-1
    drawn from the gate: the part shared by the SMoLinE and SMoLogE samplers."""
    rng = np.random.default_rng(rng)
    beta = rng.normal(size=d)
    beta *= norm / np.linalg.norm(beta)
    w = rng.normal(size=d)
    w *= norm / np.linalg.norm(w)
    X = rng.normal(size=(n, d))
    z = np.where(rng.random(n) < expit(X @ w), 1.0, -1.0)
    return rng, beta, w, X, z


class _Symmetric:
    name = ""

    def __init__(self, X, y):
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
            raise ValueError(f"X must be a 2-D array with at least 2 rows, got {X.shape}")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ValueError("X or y contains NaN or inf")
        self.X = X
        self.y = y
        self.n, self.d = X.shape
        self.n_params = 2 * self.d

    def split(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},), got {theta.shape}")
        return theta[: self.d], theta[self.d:]

    def gate_slice(self) -> slice:
        return slice(self.d, 2 * self.d)

    def expert_slice(self) -> slice:
        return slice(0, self.d)

    # subclasses: _branches(theta) -> (log joint z=1, log joint z=-1), posterior_logit,
    # grad_A, A, hessians
    def value(self, theta) -> float:
        a, b = self._branches(theta)
        return -float(np.mean(np.logaddexp(a, b)))

    def responsibilities(self, theta) -> np.ndarray:
        """r = P(z = 1 | x, y; theta), (n,)."""
        return expit(self.posterior_logit(theta))

    def value_and_grad(self, theta):
        r = self.responsibilities(theta)
        return self.value(theta), self.grad_A(theta) - self.suff_stats(r)

    def bregman(self, phi, theta) -> float:
        """D_A(phi, theta) = A(phi) - A(theta) - <grad A(theta), phi - theta>."""
        return float(self.A(phi) - self.A(theta) - self.grad_A(theta) @ (
            np.asarray(phi) - np.asarray(theta)))

    def md_objective(self, theta, theta_t):
        """<grad L(theta_t), theta - theta_t> + D_A(theta, theta_t), its gradient and
        Hessian (the mirror-descent step of eq. (15) with unit step size)."""
        _, g_t = self.value_and_grad(theta_t)
        gA_t = self.grad_A(theta_t)
        f = float(g_t @ (theta - theta_t)) + self.bregman(theta, theta_t)
        return f, g_t + self.grad_A(theta) - gA_t, self.hess_A(theta)

    def md_step(self, theta_t, tol: float = 1e-12, max_iter: int = 100) -> np.ndarray:
        """argmin_theta <grad L(theta_t), theta - theta_t> + D_A(theta, theta_t), by Newton's
        method (registered "newton", Armijo backtracking) on this strictly convex function,
        independent of the EM code path."""
        from zbound.solvers import minimize

        theta_t = np.array(theta_t, dtype=np.float64)
        return minimize(_MirrorStep(self, theta_t), theta_t, method="newton", tol=tol,
                        ftol=0.0, max_iter=max_iter).x

    def missing_information(self, theta):
        """I_{z|x,y}: mean[r (1 - r) v v^T], v the gradient of the posterior logit (27), (29)."""
        r = self.responsibilities(theta)
        V = self.logit_features()
        return (V * (r * (1 - r))[:, None]).T @ V / self.n

    def complete_information(self, theta):
        """I_{x,z,y} = Hessian of A (eq. (42))."""
        return self.hess_A(theta)

    def _soft_logistic(self, u, w0, solver: str, tol: float, inner_steps: int,
                       inner_lr: float) -> np.ndarray:
        """argmin_w mean[log(1 + e^{x.w}) - u x.w] (soft labels u in [0, 1]), from w0."""
        from zbound.solvers import minimize

        if solver == "gd":          # the paper's inner loop: inner_steps fixed steps
            return minimize(_SoftLogistic(self.X, u), w0, method="gd", tol=0.0, ftol=0.0,
                            max_iter=inner_steps, lr=inner_lr).x
        loss = SoftLabelSoftmaxLoss(self.X, np.column_stack([1 - u, u]),
                                    np.full(self.n, 1.0 / self.n), reference_class=True)
        return minimize(loss, w0, method=solver, tol=tol, max_iter=100).x


class _SoftLogistic:
    """mean[log(1 + e^{x.w}) - u x.w] over the rows x of X (soft labels u in [0, 1]) as a
    model: the objective of the paper's inner gradient steps, in the two products a step
    needs."""

    def __init__(self, X: np.ndarray, u: np.ndarray):
        self.X, self.u = X, u
        self.n_params = X.shape[1]

    def _value(self, z) -> float:
        # log(1 + e^z) = max(z, 0) + log1p(e^-|z|): exact, and cheaper than logaddexp
        return float(np.mean(np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z))) - self.u * z))

    def value_and_grad(self, w):
        z = self.X @ w
        return self._value(z), self.X.T @ (expit(z) - self.u) / z.shape[0]

    def value(self, w) -> float:
        return self._value(self.X @ w)


class _MirrorStep:
    """The mirror-descent step's objective at theta_t (:meth:`_Symmetric.md_objective`) as a
    model."""

    def __init__(self, mixture: _Symmetric, theta_t: np.ndarray):
        self.mixture, self.theta_t = mixture, theta_t
        self.n_params = theta_t.shape[0]

    def value_grad_hessian(self, theta):
        f, g, H = self.mixture.md_objective(theta, self.theta_t)
        return f, g, DenseCurvature(H)

    def value_and_grad(self, theta):
        return self.value_grad_hessian(theta)[:2]

    def value(self, theta) -> float:
        return self.value_grad_hessian(theta)[0]


class SMoLinE(_Symmetric):
    """Symmetric mixture of two linear experts with unit noise (Section 3.1)."""

    name = "SMoLinE"

    def _branches(self, theta):
        beta, w = self.split(theta)
        xb, xw = self.X @ beta, self.X @ w
        c = -0.5 * _LOG_2PI
        return (log_expit(xw) + c - 0.5 * (self.y - xb) ** 2,
                log_expit(-xw) + c - 0.5 * (self.y + xb) ** 2)

    def posterior_logit(self, theta):
        beta, w = self.split(theta)
        return self.X @ w + 2 * self.y * (self.X @ beta)

    def suff_stats(self, r):
        """s(theta_t) = mean E_z[S] (with the linear part of A folded in)."""
        X = self.X
        return np.concatenate([X.T @ ((2 * r - 1) * self.y), X.T @ r]) / self.n

    def A(self, theta) -> float:
        beta, w = self.split(theta)
        return float(np.mean(0.5 * (self.X @ beta) ** 2 + _log1pexp(self.X @ w)))

    def grad_A(self, theta):
        beta, w = self.split(theta)
        X = self.X
        return np.concatenate([X.T @ (X @ beta), X.T @ expit(X @ w)]) / self.n

    def hess_A(self, theta):
        _, w = self.split(theta)
        X = self.X
        s = expit(X @ w)
        H = np.zeros((self.n_params, self.n_params))
        H[: self.d, : self.d] = X.T @ X / self.n
        H[self.d:, self.d:] = (X * (s * (1 - s))[:, None]).T @ X / self.n
        return H

    def logit_features(self):
        return np.hstack([2 * self.y[:, None] * self.X, self.X])

    def kl_complete(self, theta, phi) -> float:
        """KL[p(x, y, z; theta) || p(x, y, z; phi)] over the empirical x, computed directly:
        the gate's Bernoulli KL plus the Gaussian KL (x.(beta - beta'))^2 / 2."""
        b1, w1 = self.split(theta)
        b2, w2 = self.split(phi)
        X = self.X
        return float(np.mean(_kl_bernoulli(X @ w1, X @ w2) + 0.5 * (X @ (b1 - b2)) ** 2))

    def em_step(self, theta, solver: str = "newton-bound", tol: float = 1e-10,
                inner_steps: int = 10, inner_lr: float = 4.0) -> np.ndarray:
        """One EM step: beta in closed form, w by the soft-label logistic regression."""
        _, w = self.split(theta)
        r = self.responsibilities(theta)
        X = self.X
        beta = np.linalg.solve(X.T @ X, X.T @ ((2 * r - 1) * self.y))
        w = self._soft_logistic(r, w, solver, tol, inner_steps, inner_lr)
        return np.concatenate([beta, w])

    @staticmethod
    def sample(n: int, d: int, norm: float = 4.0, noise: float = 1.0, rng=None):
        """Data from a random SMoLinE with ||beta*|| = ||w*|| = norm: (X, y, theta*)."""
        rng, beta, w, X, z = _draw_gated(n, d, norm, rng)
        y = z * (X @ beta) + noise * rng.normal(size=n)
        return X, y, np.concatenate([beta, w])


class SMoLogE(_Symmetric):
    """Symmetric mixture of two logistic experts, y in {-1, 1} (Section 3.1)."""

    name = "SMoLogE"

    def __init__(self, X, y):
        super().__init__(X, y)
        if not np.isin(self.y, (-1.0, 1.0)).all():
            raise ValueError("SMoLogE labels y must be -1 or 1")

    def _branches(self, theta):
        beta, w = self.split(theta)
        xb, xw = self.X @ beta, self.X @ w
        return log_expit(xw) + log_expit(self.y * xb), log_expit(-xw) + log_expit(-self.y * xb)

    def posterior_logit(self, theta):
        beta, w = self.split(theta)
        return self.X @ w + self.y * (self.X @ beta)

    def expert_labels(self, r):
        """Soft labels of the experts' regression: P(y z = 1 | x, y) = (1 + y (2r - 1)) / 2."""
        return 0.5 * (1.0 + self.y * (2 * r - 1))

    def suff_stats(self, r):
        X = self.X
        return np.concatenate([X.T @ self.expert_labels(r), X.T @ r]) / self.n

    def A(self, theta) -> float:
        beta, w = self.split(theta)
        return float(np.mean(_log1pexp(self.X @ beta) + _log1pexp(self.X @ w)))

    def grad_A(self, theta):
        beta, w = self.split(theta)
        X = self.X
        return np.concatenate([X.T @ expit(X @ beta), X.T @ expit(X @ w)]) / self.n

    def hess_A(self, theta):
        beta, w = self.split(theta)
        X = self.X
        H = np.zeros((self.n_params, self.n_params))
        for sl, t in ((slice(0, self.d), X @ beta), (slice(self.d, None), X @ w)):
            s = expit(t)
            H[sl, sl] = (X * (s * (1 - s))[:, None]).T @ X / self.n
        return H

    def logit_features(self):
        return np.hstack([self.y[:, None] * self.X, self.X])

    def kl_complete(self, theta, phi) -> float:
        """KL[p(x, y, z; theta) || p(x, y, z; phi)]: the gate's plus the experts' Bernoulli
        KL (given z, y z = 1 with probability sigmoid(x.beta))."""
        b1, w1 = self.split(theta)
        b2, w2 = self.split(phi)
        X = self.X
        return float(np.mean(_kl_bernoulli(X @ w1, X @ w2) + _kl_bernoulli(X @ b1, X @ b2)))

    def em_step(self, theta, solver: str = "newton-bound", tol: float = 1e-10,
                inner_steps: int = 10, inner_lr: float = 4.0) -> np.ndarray:
        """One EM step: two soft-label logistic regressions (experts, gate)."""
        beta, w = self.split(theta)
        r = self.responsibilities(theta)
        beta = self._soft_logistic(self.expert_labels(r), beta, solver, tol, inner_steps,
                                   inner_lr)
        w = self._soft_logistic(r, w, solver, tol, inner_steps, inner_lr)
        return np.concatenate([beta, w])

    @staticmethod
    def sample(n: int, d: int, norm: float = 4.0, rng=None):
        """Data from a random SMoLogE with ||beta*|| = ||w*|| = norm: (X, y, theta*)."""
        rng, beta, w, X, z = _draw_gated(n, d, norm, rng)
        y = np.where(rng.random(n) < expit(z * (X @ beta)), 1.0, -1.0)
        return X, y, np.concatenate([beta, w])


class SymmetricEMMap(Protocol):
    """A symmetric mixture with its EM map in closed-form steps: ``em_step(theta, solver,
    tol, inner_steps, inner_lr)`` and the layout ``split(theta)`` (SMoLinE, SMoLogE)."""

    def em_step(self, theta, solver="newton-bound", tol=1e-10, inner_steps=10,
                inner_lr=4.0): ...

    def split(self, theta): ...


@dataclass
class EMMapState(State):
    """The iterates, when kept."""

    iterates: list | None = None


@register
class SymmetricEM(Solver):
    """``max_iter`` EM steps of a symmetric mixture (:meth:`SMoLinE.em_step`), the objective
    evaluated after each; ``ftol`` > 0 stops on the objective's change as EM does (the
    benchmarks run a fixed number of steps). Options: the M-step's ``mstep`` solver,
    ``mstep_tol``, ``inner_steps`` and ``inner_lr`` (for ``mstep="gd"``), ``keep_iterates``."""

    info = MethodInfo("moe-em-symmetric", peer=False, constraints="none",
                      needs=("value",), requires=SymmetricEMMap,
                      description="EM on a symmetric mixture (SMoLinE / SMoLogE) by its "
                                  "closed-form EM map")
    options = {"mstep": "newton-bound", "mstep_tol": 1e-10, "inner_steps": 10,
               "inner_lr": 4.0, "keep_iterates": False}
    option_constraints = {"mstep": [str], "mstep_tol": [NON_NEGATIVE],
                          "inner_steps": [POSITIVE_INT], "inner_lr": [POSITIVE],
                          "keep_iterates": ["boolean"]}

    def init(self, model, x):
        model.split(x)
        return EMMapState(x, model.value(x), None,
                          iterates=[x.copy()] if self.opts["keep_iterates"] else None)

    def update(self, model, state):
        o = self.opts
        theta = model.em_step(state.x, o["mstep"], o["mstep_tol"], o["inner_steps"],
                              o["inner_lr"])
        if state.iterates is not None:
            state.iterates.append(theta.copy())
        self.accept(model, state, theta, model.value(theta), None)

    def stationarity(self, model, state):
        return math.inf

    def result_info(self, state):
        info = {"mstep": self.opts["mstep"]}
        if state.iterates is not None:
            info["iterates"] = state.iterates
        return info


def fit_em_symmetric(model: _Symmetric, theta0, max_iter: int = 50, solver: str = "newton-bound",
                     tol: float = 1e-10, inner_steps: int = 10, inner_lr: float = 4.0,
                     keep_thetas: bool = False) -> Result:
    """``max_iter`` EM steps of a symmetric model (:class:`SymmetricEM`), objective after
    each."""
    theta = np.array(theta0, dtype=np.float64)
    model.split(theta)
    if not np.isfinite(theta).all():
        raise ValueError("theta0 contains NaN or inf")
    return SymmetricEM(max_iter=int(max_iter), tol=0.0, ftol=0.0, mstep=solver,
                       mstep_tol=float(tol), inner_steps=int(inner_steps),
                       inner_lr=float(inner_lr), keep_iterates=bool(keep_thetas)).run(model,
                                                                                      theta)
