"""EM baselines for the latent conditional likelihood (:mod:`zbound.models.latent`).

Two algorithms called EM in the literature, both returning parameters of the *same* model
(theta = vec(W), W (n_classes * n_components, d + 1), offsets nu last) so that both are judged
on the same objective, the negative latent conditional log-likelihood J:

- :class:`LatentEM` (method "em"): generalized EM on J itself. E-step: the responsibilities
  eta_jm = p(m | x_j, y_j) at theta~, i.e. Jensen on the numerator, tight at theta~. M-step:
  minimize the resulting upper bound Q(theta) = sum_j s_j [log sum_{y,m} exp S_{j,(y,m)} -
  sum_m eta_jm S_{j,(y_j,m)}] (+ penalty): a convex softmax regression over the (class,
  component) pairs with soft targets eta, solved (to ``m_tol`` or ``m_max_iter`` iterations)
  by the library's default solver on a :class:`zbound.models.loss.SoftmaxLoss` whose rows are
  the samples repeated once per component, weighted by s_j eta_jm. Monotone: J(theta_new) <=
  Q(theta_new) + const <= Q(theta~) + const = J(theta~). (The bound method, Alg. 2, makes one
  Alg. 1 step on the same Q instead of solving it.)
- :class:`LatentJointEM` (method "em-joint"): classical EM on the *joint* likelihood
  p(x, y) of the generative model behind the paper's change of variables: per pair (y, m) a Gaussian
  N(mu_ym, Sigma) with one covariance shared by all pairs (so that phi(x) = x), mixing
  proportions pi_ym, y observed and m latent. Its conditional p(y | x) is the latent model with
  theta_ym = Sigma^{-1} mu_ym and nu_ym = log pi_ym - mu_ym^T Sigma^{-1} mu_ym / 2. This is the
  EM of Jebara & Pentland (2000) that Fig. 1 of paper 003 compares with: it maximizes the
  joint, not the conditional likelihood, so J can go up.

Both are :class:`~zbound.solvers.base.Solver` classes, deliberately not in the global registry
(they apply to this one model, and every registered method must solve every model):
``minimize(model, x0, method=LatentEM)``. The model is
an :class:`~zbound.models.objective.Objective` whose ``loss`` is a
:class:`~zbound.models.latent.LatentSoftmaxLoss` (or that loss itself); the run skeleton,
stopping rules, trace (of J) and :class:`~zbound.solvers.result.Result` are the shared ones.
The evaluations of the inner M-step solves are in ``result.info["inner_evals"]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from zbound.models.base import LatentLikelihood, loss_and_penalties, supports
from zbound.solvers.base import MethodInfo, Solver, State, configure, register
from zbound.solvers.result import Status
from zbound.utils.validation import NON_NEGATIVE, POSITIVE_INT

__all__ = ["LatentEM", "LatentJointEM", "joint_to_theta", "theta_to_joint"]

# Tolerated increase of J on an EM step (rounding).
_ROUND = 1e-12


def _parts(model):
    """(latent loss, penalties) of an objective over a latent loss, or of the bare loss: what
    EM needs of it is the E-step (``responsibilities``), its M-step objective
    (``mstep_objective``) and the data (``X``, ``y``, ``n_components``, ``n_samples``,
    ``n_pairs``, ``d``, ``sample_weight``)."""
    loss, penalties = loss_and_penalties(model)
    if not supports(loss, LatentLikelihood):
        raise TypeError("EM needs a latent conditional likelihood (responsibilities() and "
                        "mstep_objective(); zbound.models.latent.LatentSoftmaxLoss, or an "
                        f"Objective over one), got {type(loss).__name__}")
    return loss, penalties


def mstep_objective(loss, penalties, eta: np.ndarray):
    """Q(theta) of the E-step at responsibilities eta: ``loss.mstep_objective``."""
    return loss.mstep_objective(eta, penalties)


@dataclass
class LatentEMState(State):
    """Generalized EM's state: evaluations spent in the M-steps so far."""

    inner_evals: int = 0


@register
class LatentEM(Solver):
    """Generalized EM on the latent conditional likelihood: E-step responsibilities (Jensen on
    the numerator), M-step a convex soft-target softmax regression solved by ``m_method`` to
    ``m_tol`` in at most ``m_max_iter`` iterations. Monotone in J."""

    info = MethodInfo("em", peer=True, constraints="none", requires=LatentLikelihood,
                      description="EM on the latent conditional likelihood (E: responsibilities;"
                                  " M: soft-target softmax regression over the pairs)")
    options = {"m_method": "newton-bound", "m_max_iter": 50, "m_tol": 1e-8}
    option_constraints = {"m_method": [str, type, Solver], "m_max_iter": [POSITIVE_INT],
                          "m_tol": [NON_NEGATIVE]}

    def init(self, model, x):
        _parts(model)
        f, g = model.value_and_grad(x)
        return LatentEMState(x, f, g)

    def update(self, model, state):
        loss, penalties = _parts(model)
        eta = loss.responsibilities(state.x)
        Q = mstep_objective(loss, penalties, eta)
        res = configure(self.opts["m_method"], max_iter=self.opts["m_max_iter"],
                        tol=self.opts["m_tol"]).run(Q, state.x)
        state.inner_evals += res.n_evals
        f_new, g_new = model.value_and_grad(res.x)
        f = state.f
        if not f_new <= f + _ROUND * max(1.0, abs(f)):
            state.status = Status.NO_DECREASE
            return
        if not np.any(res.x != state.x):
            state.zero_step = True
        self.accept(model, state, res.x, f_new, g_new)

    def result_info(self, state):
        return {"inner_evals": state.inner_evals}


def theta_to_joint(W: np.ndarray, cov: np.ndarray):
    """(mu (P, d), log_pi (P,)) of the generative model with shared covariance ``cov`` whose
    conditional has parameters W (P, d + 1): mu = cov theta_ym, log pi = nu + mu^T theta_ym / 2
    (normalized)."""
    T, nu = W[:, :-1], W[:, -1]
    mu = T @ cov
    log_pi = nu + 0.5 * np.einsum("pd,pd->p", mu, T)
    log_pi -= np.logaddexp.reduce(log_pi)
    return mu, log_pi


def joint_to_theta(mu: np.ndarray, log_pi: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """W (P, d + 1) of the conditional of the generative model: theta_ym = cov^{-1} mu_ym,
    nu_ym = log pi_ym - mu_ym^T cov^{-1} mu_ym / 2."""
    T = np.linalg.solve(cov, mu.T).T
    nu = log_pi - 0.5 * np.einsum("pd,pd->p", mu, T)
    return np.hstack([T, nu[:, None]])


@dataclass
class JointEMState(State):
    """The joint-likelihood EM's state: the Gaussian class-conditional model (means ``mu``,
    log priors ``log_pi``, shared covariance ``cov`` and its floor), the centred data ``Xc``
    (centre ``xbar``), sample weights ``s``, each row's own pairs ``own``, and the last joint
    log-likelihood."""

    mu: np.ndarray | None = None
    log_pi: np.ndarray | None = None
    cov: np.ndarray | None = None
    Xc: np.ndarray | None = None
    xbar: np.ndarray | None = None
    s: np.ndarray | None = None
    own: np.ndarray | None = None
    floor: float = 0.0
    joint: float = -math.inf


@register
class LatentJointEM(Solver):
    """EM on the joint likelihood p(x, y) of the shared-covariance Gaussian mixture behind the
    latent model (the EM of paper 003's Fig. 1), started from the generative model whose
    conditional is x0 (covariance: the pooled data covariance). Each iterate is mapped to the
    conditional's theta; the trace holds J, which this EM does not promise to decrease. Stops
    (FTOL) when the joint log-likelihood improves by <= ftol * max(1, abs(value)); ``cov_floor``
    (relative to the mean variance) keeps the covariance invertible. Collapsed pairs keep their
    mean and get log pi = -745."""

    info = MethodInfo("em-joint", peer=True, constraints="none", requires=LatentLikelihood,
                      description="EM on the joint likelihood of the shared-covariance "
                                  "Gaussian mixture (generative; its conditional evaluated)")
    options = {"cov_floor": 1e-6}
    option_constraints = {"cov_floor": [NON_NEGATIVE]}

    def init(self, model, x):
        loss, _ = _parts(model)
        X, y, M, t = loss.X, loss.y, loss.n_components, loss.n_samples
        d = X.shape[1]
        s = np.ones(t) if loss.sample_weight is None else loss.sample_weight
        xbar = (s @ X) / s.sum()
        Xc = X - xbar
        cov = (Xc.T * s) @ Xc / s.sum()
        floor = self.opts["cov_floor"] * max(float(np.trace(cov)) / max(d, 1), 1e-12)
        cov = cov + floor * np.eye(d)
        W0 = x.reshape(loss.n_pairs, loss.d).copy()
        W0[:, -1] += W0[:, :-1] @ xbar                      # the same scores on centred data
        mu, log_pi = theta_to_joint(W0, cov)
        own = y[:, None] * M + np.arange(M)[None, :]
        f, g = model.value_and_grad(x)
        return JointEMState(x, f, g, mu=mu, log_pi=log_pi, cov=cov, Xc=Xc, xbar=xbar, s=s,
                            own=own, floor=floor)

    def update(self, model, state):
        loss, _ = _parts(model)
        mu, log_pi, cov, Xc, s, own = (state.mu, state.log_pi, state.cov, state.Xc, state.s,
                                       state.own)
        t, M = own.shape
        d = Xc.shape[1]
        P = loss.n_pairs
        # E-step: eta_jm proportional to pi_{y_j m} N(x_j; mu_{y_j m}, cov)
        L = np.linalg.cholesky(cov)
        D = (Xc[:, None, :] - mu[own]).reshape(-1, d)
        Z = np.linalg.solve(L, D.T)
        maha = np.einsum("ij,ij->j", Z, Z).reshape(t, M)
        logdet = 2.0 * float(np.log(np.diag(L)).sum())
        logp = log_pi[own] - 0.5 * maha - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)
        ll_rows = np.logaddexp.reduce(logp, axis=1)
        joint = float(s @ ll_rows)
        eta = np.exp(logp - ll_rows[:, None]) * s[:, None]
        # M-step
        mass = np.zeros(P)
        np.add.at(mass, own.ravel(), eta.ravel())
        sums = np.zeros((P, d))
        np.add.at(sums, own.ravel(), (eta[:, :, None] * Xc[:, None, :]).reshape(-1, d))
        alive = mass > 1e-12 * s.sum()
        mu = np.where(alive[:, None], sums / np.maximum(mass, 1e-300)[:, None], mu)
        with np.errstate(divide="ignore"):
            log_pi = np.where(alive, np.log(np.maximum(mass, 1e-300) / s.sum()), -745.0)
        R = Xc[:, None, :] - mu[own]
        cov = np.einsum("tm,tmi,tmj->ij", eta, R, R) / s.sum() + state.floor * np.eye(d)
        W = joint_to_theta(mu, log_pi, cov)
        W[:, -1] -= W[:, :-1] @ state.xbar
        x_new = W.ravel()
        f_new, g_new = model.value_and_grad(x_new)
        converged = joint - state.joint <= self.ftol * max(1.0, abs(joint))
        state.mu, state.log_pi, state.cov, state.joint = mu, log_pi, cov, joint
        self.accept(model, state, x_new, f_new, g_new)
        if converged:
            state.status = Status.FTOL

    def stationarity(self, model, state):
        return math.inf              # J is not what this EM minimizes: stop on the joint only

    def stop_status(self, state, stat):
        if self.target is not None and state.f <= self.target:
            return Status.TARGET
        return None

    def result_info(self, state):
        return {"joint_loglik": state.joint}
