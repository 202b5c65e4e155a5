"""Independent references for the bound tests: plain-loop Alg. 1 and log Z in long double.

Nothing here imports zbound. The loop follows Alg. 1 of Jebara & Choromanska (2012) literally
(z -> 0+, mu = 0, Sigma = 0; per configuration l = f - mu, Sigma += beta(log(alpha/z)) l l^T,
mu += alpha/(z + alpha) l, z += alpha), carrying z as log z in np.longdouble so that zero weights
and scores far beyond exp's range are exact limits rather than overflow.
"""

import numpy as np

LD = np.longdouble

_TANH_OVER_X = [LD(1), LD(-1) / 3, LD(2) / 15, LD(-17) / 315, LD(62) / 2835, LD(-1382) / 155925]


def beta_ld(r):
    """tanh(r/2)/(2r) in long double (series below |r| = 0.05)."""
    r = abs(LD(r))
    if not np.isfinite(r):
        return LD(0)
    if r < LD("0.05"):
        x2 = (r / 2) ** 2
        acc = LD(0)
        for c in reversed(_TANH_OVER_X):
            acc = acc * x2 + c
        return acc / 4
    return np.tanh(r / 2) / r / 2


def sigmoid_ld(r):
    r = LD(r)
    with np.errstate(over="ignore", under="ignore"):
        if r >= 0:
            return 1 / (1 + np.exp(-r))
        e = np.exp(r)
        return e / (1 + e)


def scores_ld(features, theta, log_prior=None):
    """log h(y) + theta^T f(y) in long double; features (..., n, d), theta (d,) or (m, d)."""
    F = np.asarray(features, dtype=LD)
    th = np.asarray(theta, dtype=LD)
    if th.ndim == 1:
        s = F @ th
    else:  # (m, d) -> (m, ..., n)
        s = np.einsum("...nd,md->m...n", F, th)
    if log_prior is not None:
        s = s + np.asarray(log_prior, dtype=LD)
    return s


def logsumexp_ld(a, axis=-1):
    a = np.asarray(a, dtype=LD)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(under="ignore"):
        return (np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis)))


def softmax_stats_ld(features, theta, log_prior=None, scores=None):
    """Exact log Z, grad log Z (= E_p f) and Hessian (= Cov_p f) in long double, for (n, d).

    ``scores`` (n,), if given, replaces log h + theta^T f (e.g. the float64 scores a float64
    implementation necessarily starts from, so that their rounding is not counted as its error).
    """
    F = np.asarray(features, dtype=LD)
    la = scores_ld(F, theta, log_prior) if scores is None else np.asarray(scores, dtype=LD)
    lz = logsumexp_ld(la)
    with np.errstate(under="ignore"):
        p = np.exp(la - lz)
    mu = p @ F
    C = F - mu
    H = (p[:, None] * C).T @ C
    return lz, mu, H


def alg1_loop(features, log_alpha, perm):
    """Alg. 1 on features (n, d) with log weights ``log_alpha`` (n,), visiting ``perm``.

    Returns (log z, mu, Sigma) in long double.
    """
    F = np.asarray(features, dtype=LD)
    la = np.asarray(log_alpha, dtype=LD)
    d = F.shape[1]
    log_z = LD(-np.inf)
    mu = np.zeros(d, dtype=LD)
    S = np.zeros((d, d), dtype=LD)
    for i in perm:
        if la[i] == -np.inf:        # alpha = 0: beta(-inf) l l^T = 0 and mu += 0
            continue
        l = F[i] - mu
        if log_z == -np.inf:        # first positive weight: log(alpha / 0+) = +inf, beta = 0
            mu = mu + l
            log_z = la[i]
            continue
        r = la[i] - log_z
        S += beta_ld(r) * np.outer(l, l)
        mu = mu + sigmoid_ld(r) * l
        log_z = np.logaddexp(log_z, la[i])
    return log_z, mu, S


def stable_order(log_alpha, order):
    """Visiting order computed with Python's stable sort (independent of np.argsort)."""
    idx = list(range(len(log_alpha)))
    if order == "descending":
        return sorted(idx, key=lambda i: -float(log_alpha[i]))
    if order == "ascending":
        return sorted(idx, key=lambda i: float(log_alpha[i]))
    return idx
