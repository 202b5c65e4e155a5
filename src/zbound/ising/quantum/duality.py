"""Certificates of the quantum relaxation: the dual value (an upper bound) and a feasible primal
point (a lower value), plus the moments read from a primal matrix.

For a feature set I of size n and V the matrices constant on each XOR class (eq. (3)),

    a_eps(F) = sup_{S in K'} tr(S F) - (eps / n) tr(S log S),   K' = {S >= 0, tr S = n, S in V},

and for every W in the orthogonal complement V-perp (weak duality, derivation in
docs/quantum.md, "Solving it, with a certificate")

    D(W) = eps log( (1/n) tr exp(n (F - W) / eps) )  >=  a_eps(F)  >=  Phi_eps(f).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.linalg.lapack

from zbound.ising.features import FeatureSet
from zbound.utils.logspace import log_mean_exp


def eigvalsh(A: np.ndarray) -> np.ndarray:
    """Ascending eigenvalues of a symmetric matrix (lower triangle read), LAPACK syevd."""
    w, _, info = scipy.linalg.lapack.dsyevd(A, compute_v=0, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"syevd failed to converge (info={info})")
    return w


def dual_value(F: np.ndarray, W: np.ndarray, epsilon: float) -> float:
    """D(W) = eps log((1/n) tr exp(n (F - W) / eps)) >= a_eps(F) for W in V-perp.

    Computed from the eigenvalues of F - W with the largest one shifted out (no overflow).
    """
    n = F.shape[0]
    a = eigvalsh(F - W)
    return epsilon * log_mean_exp(n * a / epsilon)


def dual_and_gradient(F: np.ndarray, W: np.ndarray, epsilon: float):
    """D(W) and its primal companion Sigma(W) = n exp(n (F - W) / eps) / tr exp(n (F - W) / eps).

    Sigma(W) is the maximizer of tr(Sigma (F - W)) - (eps / n) tr Sigma log Sigma over
    {Sigma >= 0, tr Sigma = n}; it lies in V exactly when W is dual optimal.
    """
    n = F.shape[0]
    a, U = scipy.linalg.eigh(F - W, check_finite=False, driver="evd")
    lme, e, s = log_mean_exp(n * a / epsilon, return_exp=True)
    D = epsilon * lme
    w = n * e / s
    return D, (U * w) @ U.T


def _entropy_term(s: np.ndarray) -> float:
    """sum_i s_i log s_i with 0 log 0 = 0."""
    s = np.clip(s, 0.0, None)
    pos = s > 0
    return float(np.sum(s[pos] * np.log(s[pos])))


def feasible_primal(Sigma: np.ndarray, features: FeatureSet):
    """Sec. 4.2: project onto V cap {tr = n}, then mix with I until the spectrum is >= 0.

    Returns (Sigma_feasible, eigenvalues of Sigma_feasible). Sigma_feasible is in K'.
    """
    xc = features.xor_classes
    n = Sigma.shape[0]
    P = xc.project(Sigma)
    P[np.diag_indices(n)] = 1.0  # tr = n on top of V: the diagonal class is set to 1
    mu = eigvalsh(P)
    lam = mu[0]
    if lam < 0:
        u = -lam / (1.0 - lam)
        P *= 1.0 - u
        P[np.diag_indices(n)] = 1.0
        mu = (1.0 - u) * mu + u
    return P, np.clip(mu, 0.0, None)


def primal_value(S: np.ndarray, s: np.ndarray, F: np.ndarray, epsilon: float) -> float:
    """Objective tr(S F) - (eps / n) tr(S log S) of a feasible S with eigenvalues ``s``."""
    n = F.shape[0]
    return float(np.vdot(S, F)) - epsilon / n * _entropy_term(s)


def spin_means(S: np.ndarray, features: FeatureSet) -> np.ndarray:
    """(d,) E[x_i] read from a matrix S in V: the mean of the XOR class of the monomial x_i.

    NaN where x_i is not the XOR of two features of the set (not representable).
    """
    xc = features.xor_classes
    ids = xc.class_id([1 << i for i in range(features.d)], features.d)
    means = xc.class_means(S)
    return np.where(ids >= 0, means[np.maximum(ids, 0)], np.nan)


def marginals_from_means(means: np.ndarray) -> np.ndarray:
    """P(x_i = 1) = (1 + E[x_i]) / 2, clipped to [0, 1] (NaN stays NaN)."""
    return np.clip((1.0 + np.asarray(means, dtype=np.float64)) / 2.0, 0.0, 1.0)
