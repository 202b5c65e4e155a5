"""The missing-information matrix M(theta) = I_{x,z,y}^{-1} I_{z|x,y} (eq. (24)) from data.

I_{x,z,y} is the complete-data information, the Hessian of the EM objective Q(. | theta) at
theta (eq. (42): the Hessian of the mirror map A for the symmetric models); I_{z|x,y} the
information of the latent expert label given the observed data, the Hessian of H(. | theta) at
theta (eq. (43)). Since L = Q - H (eq. (9)), I_{z|x,y} = grad^2 Q - grad^2 L.

By Theorem 5.2, L is alpha-strongly convex relative to A on a set exactly when
lambda_max(M) <= 1 - alpha there, and EM then converges linearly with rate (1 - alpha)
(Corollary 5.1). The eigenvalues are those of the symmetric-definite pencil
(I_{z|x,y}, I_{x,z,y}), so they are real; they lie in [0, 1] at a local minimizer (there
grad^2 L = I_c - I_m is positive semi-definite).

- Symmetric models (:mod:`zbound.moe.symmetric`): closed forms, (27) and (29) for I_{z|x,y}
  and the Hessian of A.
- A general :class:`~zbound.moe.model.MoEProblem`: both Hessians by central differences of the
  exact gradients (grad Q at fixed responsibilities, grad L), for up to ``MAX_PARAMS``
  parameters. With a penalty, it is part of I_{x,z,y} (the EM map's rate is governed by it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from zbound.utils.linalg import pd_cholesky

MAX_PARAMS = 2000


@dataclass
class MissingInformation:
    """M(theta) and its spectrum.

    complete : I_{x,z,y} (p, p)
    missing : I_{z|x,y} (p, p)
    eigenvalues : the eigenvalues of M = complete^{-1} missing, ascending
    """

    complete: np.ndarray
    missing: np.ndarray
    eigenvalues: np.ndarray

    @property
    def matrix(self) -> np.ndarray:
        """M(theta) = I_{x,z,y}^{-1} I_{z|x,y}."""
        return np.linalg.solve(self.complete, self.missing)

    @property
    def lambda_max(self) -> float:
        """Largest eigenvalue: < 1 means EM contracts locally at rate about lambda_max."""
        return float(self.eigenvalues[-1])


def _fd_hessian(grad, theta: np.ndarray, h: float) -> np.ndarray:
    p = theta.size
    H = np.empty((p, p))
    for i in range(p):
        e = np.zeros(p)
        step = h * max(1.0, abs(theta[i]))
        e[i] = step
        H[i] = (grad(theta + e) - grad(theta - e)) / (2 * step)
    return 0.5 * (H + H.T)


def _pencil(complete: np.ndarray, missing: np.ndarray) -> MissingInformation:
    complete = 0.5 * (complete + complete.T)
    missing = 0.5 * (missing + missing.T)
    L = pd_cholesky(complete)
    if L is None:
        raise ValueError("the complete-data information I_{x,z,y} is singular at theta (an "
                         "expert with no responsibility, or a saturated gate); M(theta) is "
                         "undefined (its condition estimate falls below the threshold of "
                         "zbound.utils.linalg.singular_rtol)")
    # eigenvalues of the pencil (missing, complete) = those of L^-1 missing L^-T
    L = np.tril(L)
    W = scipy.linalg.solve_triangular(L, missing, lower=True, check_finite=False)
    W = scipy.linalg.solve_triangular(L, W.T, lower=True, check_finite=False)
    ev = np.linalg.eigvalsh(0.5 * (W + W.T))
    return MissingInformation(complete, missing, np.sort(ev))


def missing_information(model, theta, h: float = 1e-5) -> MissingInformation:
    """M(theta) for a symmetric model (closed forms) or a :class:`MoEProblem` (central
    differences of exact gradients; at most ``MAX_PARAMS`` parameters)."""
    theta = np.asarray(theta, dtype=np.float64)
    if hasattr(model, "complete_information"):
        return _pencil(model.complete_information(theta), model.missing_information(theta))
    if model.n_params > MAX_PARAMS:
        raise ValueError(f"missing_information forms dense (p, p) Hessians; p = "
                         f"{model.n_params} > {MAX_PARAMS}")
    if theta.shape != (model.n_params,) or not np.isfinite(theta).all():
        raise ValueError(f"theta must be a finite ({model.n_params},) vector")
    R = model.responsibilities(theta)
    HQ = _fd_hessian(lambda t: model.q_value_and_grad(t, R)[1], theta, h)
    HL = _fd_hessian(lambda t: model.value_and_grad(t)[1], theta, h)
    return _pencil(HQ, HQ - HL)


def collapsed_experts(mass: np.ndarray, n_eff: float, log_var=None, floor=None) -> tuple:
    """Experts responsible for less than one effective sample, or at the variance floor."""
    out = set(int(j) for j in np.flatnonzero(mass * n_eff < 1.0))
    if log_var is not None and floor is not None:
        out |= set(int(j) for j in np.flatnonzero(np.exp(log_var) <= floor * (1 + 1e-9)))
    return tuple(sorted(out))

