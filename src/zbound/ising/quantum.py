"""Quantum-entropy upper bound on the Ising log-partition function (Beyler & Bach, Sec. 4).

For a feature set I of size n and F with phi(x)^T F phi(x) = f(x), the relaxation is

    a_eps(F) = sup_{Sigma in K'} tr(Sigma F) - (eps / n) tr(Sigma log Sigma),
    K' = {Sigma >= 0, tr Sigma = n, Sigma in V}                                  (Sec. 4.1)

and a_eps(F) >= Phi_eps(f) = eps log E_{x~uniform} exp(f(x) / eps)  (eq. (5)).

It is solved with the Chambolle-Pock algorithm (Alg. 1) on G(Sigma) = (eps / n)(tr Sigma log Sigma
- tr Sigma + n) - tr(Sigma F) and the indicator of V cap {tr = n}. The proximal step of G is the
spectral function s = lambda * omega(m / lambda - log lambda) of M = Sigma_0 + tau F, with
lambda = tau eps / n and omega the Wright omega function. Every reported bound is a *dual* value,

    D(W) = eps log( (1/n) tr exp(n (F - W) / eps) ),   W in V-perp   (docs/quantum.md)

which is >= a_eps(F) for every W in the orthogonal complement of V, so it is a valid upper bound on
Phi_eps whatever the state of the iterations. A feasible primal point (Sec. 4.2) gives a lower value
on a_eps and with it the duality gap used to stop. Derivations and their numerical checks:
``docs/quantum.md``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
from scipy.linalg.blas import dsyrk
from scipy.special import wrightomega

from zbound.ising.features import FeatureSet, _unpack, coefficient_matrix, default_features

__all__ = [
    "QuantumResult",
    "ZeroTemperatureResult",
    "quantum_bound",
    "solve_quantum",
    "entropy_prox",
    "dual_value",
    "feasible_primal",
    "zero_temperature_bound",
]


@dataclass
class QuantumResult:
    """Outcome of :func:`quantum_bound`.

    bound: guaranteed upper bound on a_eps(F), hence on Phi_eps (a dual value, not an iterate's).
    primal: value of the feasible primal point ``sigma`` (a lower value on a_eps(F)).
    gap: relative duality gap (bound - primal) / max(|bound|, |primal|, eps); abs_gap unscaled.
    marginals: (d,) approximate E[x_i] read from ``sigma`` (NaN where x_i is not representable).
    sigma: (n, n) feasible primal matrix in K'. dual: (n, n) dual iterate (for warm starts).
    """

    bound: float
    primal: float
    gap: float
    abs_gap: float
    iterations: int
    converged: bool
    seconds: float
    marginals: np.ndarray
    sigma: np.ndarray
    dual: np.ndarray
    features: FeatureSet
    epsilon: float
    newton_steps: int = 0
    history: list[tuple[int, float, float]] = field(default_factory=list, repr=False)


def _check_positive(name: str, value, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>=' if allow_zero else '>'} 0, got {value}")
    return v


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _resolve(model, features) -> FeatureSet:
    from zbound.ising.model import IsingModel

    if not isinstance(model, IsingModel):
        raise TypeError(f"model must be an IsingModel, got {type(model).__name__}")
    if features is None:
        return default_features(model.d)
    if not isinstance(features, FeatureSet):
        raise TypeError(f"features must be a FeatureSet or None, got {type(features).__name__}")
    if features.d != model.d:
        raise ValueError(f"feature set is for d={features.d}, model has d={model.d}")
    return features


def entropy_prox(m: np.ndarray, lam: float) -> np.ndarray:
    """Eigenvalues of (I + tau dG)^{-1} (Sec. 4.2): s = lam * omega(m / lam - log lam).

    s > 0 solves log s + s / lam = m / lam, the first-order condition of
    min_s (eps/n)(s log s - s) + (s - m)^2 / (2 tau) with lam = tau eps / n; ``m`` are the
    eigenvalues of Sigma_0 + tau F. omega is the Wright omega function (w + log w = z), which
    is ~z for large z and ~exp(z) for very negative z, so there is no overflow.
    """
    return lam * wrightomega(m / lam - math.log(lam))


def _blas_threads(limit: int | None):
    """Context limiting BLAS/LAPACK threads to ``limit`` (None: leave them as configured).

    The solver defaults to 1: at these sizes threading gains little on an idle machine and,
    when the cores are shared, OpenBLAS's spinning threads made d = 400 twenty times slower
    (364 s against 18 s, measured with the machine's two cores busy; docs/quantum.md).
    """
    from contextlib import nullcontext

    global _CONTROLLER
    if limit is None:
        return nullcontext()
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
            return nullcontext()
        _CONTROLLER = ThreadpoolController()  # library discovery is slow: do it once
    return _CONTROLLER.limit(limits=limit, user_api="blas")


_CONTROLLER = None


def _eigvalsh(A: np.ndarray) -> np.ndarray:
    """Ascending eigenvalues of a symmetric matrix (lower triangle read), LAPACK syevd."""
    w, _, info = scipy.linalg.lapack.dsyevd(A, compute_v=0, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"syevd failed to converge (info={info})")
    return w


def _log_mean_exp(a: np.ndarray) -> float:
    amax = a.max()
    return float(amax + np.log(np.mean(np.exp(a - amax))))


def dual_value(F: np.ndarray, W: np.ndarray, epsilon: float) -> float:
    """D(W) = eps log((1/n) tr exp(n (F - W) / eps)) >= a_eps(F) for W in V-perp.

    Computed from the eigenvalues of F - W with the largest one shifted out (no overflow).
    """
    n = F.shape[0]
    a = _eigvalsh(F - W)
    return epsilon * _log_mean_exp(n * a / epsilon)


def _dual_and_gradient(F: np.ndarray, W: np.ndarray, epsilon: float):
    """D(W) and its primal companion Sigma(W) = n exp(n (F - W) / eps) / tr exp(n (F - W) / eps).

    Sigma(W) is the maximizer of tr(Sigma (F - W)) - (eps / n) tr Sigma log Sigma over
    {Sigma >= 0, tr Sigma = n}; it lies in V exactly when W is dual optimal.
    """
    n = F.shape[0]
    a, U = scipy.linalg.eigh(F - W, check_finite=False, driver="evd")
    z = n * a / epsilon
    zmax = z.max()
    e = np.exp(z - zmax)
    D = epsilon * (zmax + math.log(e.mean()))
    w = n * e / e.sum()
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
    mu = _eigvalsh(P)
    lam = mu[0]
    if lam < 0:
        u = -lam / (1.0 - lam)
        P *= 1.0 - u
        P[np.diag_indices(n)] = 1.0
        mu = (1.0 - u) * mu + u
    return P, np.clip(mu, 0.0, None)


def _primal_value(S: np.ndarray, s: np.ndarray, F: np.ndarray, epsilon: float) -> float:
    n = F.shape[0]
    return float(np.vdot(S, F)) - epsilon / n * _entropy_term(s)


def _embed(previous, features: FeatureSet):
    """Map a warm start (QuantumResult or (Sigma, Y)) from its feature set onto ``features``.

    Sigma entries are read by XOR class (moments E[x^gamma] are what carries over); Y entries
    are copied for pairs of features present in both sets and set to 0 elsewhere.
    """
    n = features.n
    if isinstance(previous, QuantumResult):
        old_feats, S_old, Y_old = previous.features, previous.sigma, previous.dual
    else:
        try:
            S_old, Y_old = previous
        except (TypeError, ValueError):
            raise TypeError("warm_start must be a QuantumResult or a (Sigma, Y) pair") from None
        S_old = np.asarray(S_old, dtype=np.float64)
        Y_old = np.asarray(Y_old, dtype=np.float64)
        if S_old.shape != (n, n) or Y_old.shape != (n, n):
            raise ValueError(f"warm start matrices must be ({n}, {n})")
        return S_old.copy(), Y_old.copy()
    if old_feats == features:
        return S_old.copy(), Y_old.copy()
    if old_feats.d != features.d:
        raise ValueError("warm start comes from a model with a different d")
    oxc = old_feats.xor_classes
    means = oxc.class_means(S_old)
    nxc = features.xor_classes
    old_ids = oxc.class_id(_unpack(nxc.keys), features.d)  # new classes in the old set
    vals = np.where(old_ids >= 0, means[np.maximum(old_ids, 0)], 0.0)
    vals[nxc.diag] = 1.0
    S = nxc.expand(vals)
    pos = {m: k for k, m in enumerate(old_feats.masks)}
    idx_new = [k for k, m in enumerate(features.masks) if m in pos]
    idx_old = [pos[features.masks[k]] for k in idx_new]
    Y = np.zeros((n, n))
    Y[np.ix_(idx_new, idx_new)] = Y_old[np.ix_(idx_old, idx_old)]
    return S, Y


def solve_quantum(
    F: np.ndarray,
    features: FeatureSet,
    epsilon: float,
    tol: float = 1e-6,
    tau: float = 3.0,
    sigma: float = 0.3,
    max_iter: int = 20000,
    check_every: int = 20,
    x0: np.ndarray | None = None,
    y0: np.ndarray | None = None,
    polish: bool = True,
):
    """Chambolle-Pock (Alg. 1, theta = 1) for a_eps(F) on a given feature set.

    Returns (best dual value, best primal value, feasible Sigma, dual iterate Y, iterations,
    converged, history, Newton steps). Stops when (D - P) / max(|D|, |P|, eps) <= tol, checked every
    ``check_every`` iterations. ``polish``: once the gap is below 0.1, run damped Newton on the
    dual (n <= 128 and a bounded Hessian; CP's primal converges like O(1/k) for general feature
    sets, Sec. 4.3), resuming CP from the polished dual if that does not close the gap.
    """
    n = features.n
    xc = features.xor_classes
    pairs = xc.pairs_only
    lam = tau * epsilon / n
    tauF = np.asfortranarray(tau * F)
    syevd = scipy.linalg.lapack.dsyevd
    syevr = scipy.linalg.lapack.dsyevr
    # prox values s < _S_MIN are dropped: s = lam omega(m/lam - log lam) < _S_MIN iff
    # m < _S_MIN + lam log(_S_MIN) (from m = s + lam log s)
    m_min = _S_MIN + lam * math.log(_S_MIN)
    partial_below = int(_PARTIAL_RANK_FRACTION * n) if n >= _PARTIAL_MIN_N else -1
    rank = n
    if partial_below > 0:
        lw = scipy.linalg.lapack.dsyevr_lwork(n)
        lwork_r, liwork_r = int(lw[0]), int(lw[1])
    diag = np.diag_indices(n)

    x = np.eye(n) if x0 is None else np.array(x0, dtype=np.float64)
    y = np.zeros((n, n)) if y0 is None else np.array(y0, dtype=np.float64)
    if pairs:
        # For pair-only classes (e.g. (1, x)) V is "symmetric with constant diagonal", so the
        # dual of the constraint is diagonal: y = diag(yd) and its update only reads diag(xbar).
        yd = np.diag(y).copy()
        x = 0.5 * (x + x.T)
    xbar = x.copy()
    best_D, best_P = math.inf, -math.inf
    best_S = np.eye(n)
    history: list[tuple[int, float, float]] = []
    converged = False
    it = 0
    newton = _DualNewton(F, features, epsilon) if polish and n <= _NEWTON_MAX_N else None
    if newton is not None and newton.p**2 * n**2 > _NEWTON_MAX_WORK:
        newton = None  # forming the p x p Hessian would cost more than CP's remaining work
    next_polish = 0
    newton_steps = 0

    def check():
        nonlocal best_D, best_P, best_S
        if pairs:
            W = np.diag(yd - yd.mean())
            xs = np.tril(x) + np.tril(x, -1).T  # only the lower triangle of x is maintained
        else:
            W = xc.project_perp(y)
            xs = x
        if pairs:
            # Sigma(W) rarely beats the CP iterate here and would need eigenvectors
            D, cands = dual_value(F, W, epsilon), (xs,)
        else:
            D, Sw = _dual_and_gradient(F, W, epsilon)
            cands = (xs, Sw)
        if D < best_D:
            best_D = D
        for cand in cands:
            S, s = feasible_primal(cand, features)
            P = _primal_value(S, s, F, epsilon)
            if P > best_P:
                best_P, best_S = P, S
        history.append((it, best_D, best_P))
        return (best_D - best_P) / max(abs(best_D), abs(best_P), epsilon)

    for it in range(1, max_iter + 1):
        if pairs:
            yd += sigma * (xbar[diag] - 1.0)
            M = tauF + x
            M[diag] -= tau * yd
        else:
            Z = y + sigma * xbar
            y = Z - xc.project(Z)
            y[diag] -= sigma - np.trace(Z) / n
            M = x - tau * y + tauF
        if rank < partial_below:
            # Only eigenpairs whose prox value exceeds _S_MIN matter: MRRR (syevr) on the
            # range [m_min, inf) skips the rest of the spectrum (x is numerically low-rank).
            m, U, k, _, info = syevr(M, compute_v=1, range="V", lower=1, vl=m_min, vu=1e300,
                                     lwork=lwork_r, liwork=liwork_r, overwrite_a=1)
            m, U = m[:k], U[:, :k]
        else:
            # LAPACK syevd (divide and conquer) directly: scipy.linalg.eigh re-queries the
            # workspace on every call, which dominates for small n; M is Fortran-ordered.
            m, U, info = syevd(M, compute_v=1, lower=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"LAPACK eigensolver failed (info={info})")
        s = entropy_prox(m, lam)
        rank = int(np.count_nonzero(s > _S_MIN))
        # x = U diag(s) U^T with s > 0: a rank-n SYRK fills the lower triangle only
        R = U * np.sqrt(s)
        x_new = dsyrk(1.0, R.T, trans=1, lower=1) if R.shape[1] else np.zeros((n, n), order="F")
        if not pairs:
            x_new = np.tril(x_new) + np.tril(x_new, -1).T
        xbar = 2.0 * x_new - x
        x = x_new
        if it % check_every == 0 or it == max_iter:
            gap = check()
            if gap <= tol:
                converged = True
                break
            if newton is not None and it >= next_polish and gap < 0.1:
                W0 = np.diag(yd - yd.mean()) if pairs else xc.project_perp(y)
                try:
                    D, W, P, S, steps = newton.run(W0, tol, best_P)
                except (np.linalg.LinAlgError, ValueError):
                    newton = None  # numerically hopeless here: plain CP from now on
                    continue
                newton_steps += steps
                best_D = min(best_D, D)
                if S is not None:
                    best_P, best_S = P, S
                history.append((it, best_D, best_P))
                if (best_D - best_P) / max(abs(best_D), abs(best_P), epsilon) <= tol:
                    converged = True
                    break
                # resume CP from the polished dual point, and polish again only later
                if pairs:
                    yd = np.diag(W) + yd.mean()
                else:
                    y = W + (np.trace(y) / n) * np.eye(n)
                next_polish = it + 10 * check_every
    if not history or history[-1][0] != it:
        check()
    Y = np.diag(yd) if pairs else y
    return best_D, best_P, best_S, Y, it, converged, history, newton_steps


# Eigenpairs of the prox whose value is below _S_MIN (on matrices of trace n) are dropped; for
# n >= _PARTIAL_MIN_N and an iterate of numerical rank below _PARTIAL_RANK_FRACTION * n only the
# needed part of the spectrum is computed (syevr), which is ~1.5x cheaper than syevd at n = 401.
_S_MIN = 1e-18
_PARTIAL_MIN_N = 150
_PARTIAL_RANK_FRACTION = 0.3


# Newton polishing of the dual needs the (p, n, n) tensor of basis matrices in the eigenbasis
# and a p x p Hessian (p = dim of V-perp in the coordinates used); above these sizes plain CP.
_NEWTON_MAX_N = 128
_NEWTON_MAX_WORK = 4e9  # flops of one Hessian, p^2 n^2 (p = dim V-perp); memory ~2 p n^2 floats


class _DualNewton:
    """Damped Newton on the smooth dual min_{W in V-perp} D(W) (docs/quantum.md, "polish").

    Not part of the paper's algorithm: Chambolle-Pock's primal feasible point converges like
    O(1/k) for general feature sets (Sec. 4.3), while a few Newton steps on D, started from CP's
    dual iterate, make Sigma(W) = n exp(n (F - W) / eps) / tr(...) lie in V to ~1e-10, so the
    repaired primal point closes the gap. The Hessian uses the divided differences of exp
    (App. D, Daleckii-Krein) in the eigenbasis of F - W. Coordinates: for each XOR class with
    upper-triangular entries u_0, u_1, ..., basis matrices E_{u_j} - E_{u_0} (Newton is
    affine-invariant, so a non-orthogonal basis is fine).
    """

    def __init__(self, F: np.ndarray, features: FeatureSet, epsilon: float):
        self.F, self.features, self.eps = F, features, epsilon
        n = features.n
        self.n = n
        xc = features.xor_classes
        iu, ju = np.triu_indices(n)
        cls = xc.index[iu, ju]
        order = np.argsort(cls, kind="stable")
        first = np.ones(order.shape[0], dtype=bool)
        first[1:] = cls[order][1:] != cls[order][:-1]
        rep = np.empty(xc.n_classes, dtype=np.int64)
        rep[cls[order][first]] = order[first]
        k_idx = order[~first]  # upper entries that get a coordinate
        k_rep = rep[cls[k_idx]]  # their class representative
        # only the entries that appear in some basis matrix are needed (for (1, x): the diagonal)
        used, inv = np.unique(np.concatenate([k_idx, k_rep]), return_inverse=True)
        self.iu, self.ju = iu[used], ju[used]
        self.k_idx, self.k_rep = inv[: k_idx.shape[0]], inv[k_idx.shape[0]:]
        self.p = k_idx.shape[0]

    def _basis_matrix(self, coef: np.ndarray) -> np.ndarray:
        n = self.n
        vals = np.zeros(self.iu.shape[0])
        np.add.at(vals, self.k_idx, coef)
        np.add.at(vals, self.k_rep, -coef)
        M = np.zeros((n, n))
        M[self.iu, self.ju] = vals
        M[self.ju, self.iu] = vals
        return M

    def evaluate(self, W: np.ndarray, hessian: bool):
        n, eps = self.n, self.eps
        a, U, info = scipy.linalg.lapack.dsyevd((n / eps) * (self.F - W), compute_v=1, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"syevd failed to converge (info={info})")
        amax = a[-1]
        e = np.exp(a - amax)
        Z = e.sum()
        D = eps * (amax + math.log(Z / n))
        Sigma = (U * (n * e / Z)) @ U.T
        # dD/dw_k = -<Sigma, B_k>; for an upper entry (a, b), <Sigma, E_ab> = (2 - [a = b]) S_ab
        wgt = np.where(self.iu == self.ju, 1.0, 2.0)
        sv = Sigma[self.iu, self.ju] * wgt
        g = -(sv[self.k_idx] - sv[self.k_rep])
        if not hessian:
            return D, Sigma, g, None
        # eigenbasis images of the basis matrices: U^T E_ab U = (r_a r_b^T + r_b r_a^T) / (1+[a=b])
        ra, rb = U[self.iu], U[self.ju]
        Hu = ra[:, :, None] * rb[:, None, :]
        Hu = (Hu + Hu.transpose(0, 2, 1)) / np.where(self.iu == self.ju, 2.0, 1.0)[:, None, None]
        Hk = (Hu[self.k_idx] - Hu[self.k_rep]).reshape(self.p, n * n)
        da = np.abs(a[:, None] - a[None, :])
        emax = np.maximum(e[:, None], e[None, :])
        with np.errstate(invalid="ignore", divide="ignore"):
            gam = np.where(da > 1e-12, emax * (-np.expm1(-da)) / da, emax)
        q = Hk[:, :: n + 1] @ e
        H = (Hk * gam.reshape(-1)) @ Hk.T / Z - np.outer(q, q) / Z**2
        H *= n * n / eps
        return D, Sigma, g, H

    def run(self, W: np.ndarray, tol: float, best_P: float, max_steps: int = 40):
        """Newton from W; returns (D, W, best primal, its Sigma or None, steps)."""
        D, Sigma, g, H = self.evaluate(W, True)
        best_S = None
        for step in range(1, max_steps + 1):
            S, s = feasible_primal(Sigma, self.features)
            P = _primal_value(S, s, self.F, self.eps)
            if P > best_P:
                best_P, best_S = P, S
            if (D - best_P) / max(abs(D), abs(best_P), self.eps) <= tol:
                return D, W, best_P, best_S, step
            mu = 1e-12 * max(float(np.max(np.diag(H))), 1e-300)
            c, info = scipy.linalg.lapack.dpotrf(H + mu * np.eye(self.p), lower=1, clean=0)
            if info == 0:
                delta, info = scipy.linalg.lapack.dpotrs(c, -g, lower=1)
            if info != 0:
                delta = np.linalg.lstsq(H, -g, rcond=None)[0]
            slope = float(g @ delta)
            if not slope < 0:
                break
            dW = self._basis_matrix(delta)
            t = 1.0
            while t > 1e-10:
                D_new, Sig_new, g_new, _ = self.evaluate(W + t * dW, False)
                if D_new <= D + 1e-4 * t * slope:
                    break
                t *= 0.5
            else:
                break
            W = W + t * dW
            D, Sigma, g, H = self.evaluate(W, True)
        S, s = feasible_primal(Sigma, self.features)
        P = _primal_value(S, s, self.F, self.eps)
        if P > best_P:
            best_P, best_S = P, S
        return D, W, best_P, best_S, max_steps


def _marginals(S: np.ndarray, features: FeatureSet) -> np.ndarray:
    xc = features.xor_classes
    ids = xc.class_id([1 << i for i in range(features.d)], features.d)
    means = xc.class_means(S)
    return np.where(ids >= 0, means[np.maximum(ids, 0)], np.nan)


def quantum_bound(
    model,
    features: FeatureSet | None = None,
    tol: float = 1e-6,
    tau: float = 3.0,
    sigma: float = 0.3,
    max_iter: int = 20000,
    check_every: int = 20,
    warm_start=None,
    polish: bool = True,
    blas_threads: int | None = 1,
) -> QuantumResult:
    """Quantum relaxation a_eps(F) >= Phi_eps(f) of Beyler & Bach (Sec. 4), by Chambolle-Pock.

    model: IsingModel with epsilon > 0. features: FeatureSet (default (1, x)). tol: relative
    duality gap to stop at. tau, sigma: step sizes (tau * sigma < 1; the paper's 3 and 0.3).
    warm_start: a previous QuantumResult (any feature set of the same d) or a (Sigma, Y) pair.
    polish: finish with Newton steps on the dual when n <= 128 and the Hessian is small (not in
    the paper; CP alone converges like O(1/k) there, see docs/quantum.md).
    blas_threads: BLAS/LAPACK threads while solving (default 1; None leaves the setting alone).
    ``result.bound`` is a dual value and a valid upper bound even when not converged.
    """
    start = time.perf_counter()
    features = _resolve(model, features)
    eps = model.epsilon
    if eps <= 0:
        raise ValueError(
            "quantum_bound needs epsilon > 0; use zero_temperature_bound for epsilon = 0"
        )
    tol = _check_positive("tol", tol)
    tau = _check_positive("tau", tau)
    sigma = _check_positive("sigma", sigma)
    if tau * sigma >= 1:
        raise ValueError(f"Chambolle-Pock needs tau * sigma < 1, got {tau} * {sigma}")
    max_iter = _check_int("max_iter", max_iter, 1)
    check_every = _check_int("check_every", check_every, 1)
    F = coefficient_matrix(model, features)
    x0 = y0 = None
    if warm_start is not None:
        x0, y0 = _embed(warm_start, features)
    if blas_threads is not None:
        blas_threads = _check_int("blas_threads", blas_threads, 1)
    # Below n = 64 the matrices are too small for threaded BLAS to matter and the thread-pool
    # switch itself costs ~30 us per call.
    with _blas_threads(blas_threads if features.n >= 64 else None):
        D, P, S, Y, it, conv, hist, nsteps = solve_quantum(
            F, features, eps, tol, tau, sigma, max_iter, check_every, x0, y0, polish
        )
    return QuantumResult(
        bound=D,
        primal=P,
        gap=(D - P) / max(abs(D), abs(P), eps),
        abs_gap=D - P,
        iterations=it,
        converged=conv,
        seconds=time.perf_counter() - start,
        marginals=_marginals(S, features),
        sigma=S,
        dual=Y,
        features=features,
        epsilon=eps,
        newton_steps=nsteps,
        history=hist,
    )


@dataclass
class ZeroTemperatureResult:
    """Outcome of :func:`zero_temperature_bound`.

    bound: certified upper bound n * lambda_max(F - W) with W in V-perp from the solver's dual
    (>= a_0(F) >= max f); value: the solver's objective tr(Sigma F); sigma: its primal matrix.
    """

    bound: float
    value: float
    status: str
    seconds: float
    sigma: np.ndarray
    marginals: np.ndarray
    features: FeatureSet


def zero_temperature_bound(model, features: FeatureSet | None = None, solver: str = "CLARABEL"):
    """a_0(F) = sup_{Sigma in K'} tr(Sigma F) (Sec. 6): the SDP relaxation of max_x f(x).

    Solved with CVXPY (``solver``: "CLARABEL" or "SCS"); the returned ``bound`` is re-certified
    from the multiplier Z of the PSD constraint: W = proj_{V-perp}(F + Z) and
    bound = n lambda_max(F - W) >= a_0(F) >= max_x f(x), valid even if the solve is inexact.
    The limit eps -> 0 of a_eps(F) (Sec. 6); equals max f on trees with tree features (App. B.2).
    """
    import cvxpy as cp

    start = time.perf_counter()
    features = _resolve(model, features)
    if not isinstance(solver, str) or solver.upper() not in ("CLARABEL", "SCS"):
        raise ValueError(f"solver must be 'CLARABEL' or 'SCS', got {solver!r}")
    F = coefficient_matrix(model, features)
    n = features.n
    S = cp.Variable((n, n), symmetric=True)
    cons = _k_prime_constraints(S, features)
    psd = S >> 0
    prob = cp.Problem(cp.Maximize(cp.trace(F @ S)), [*cons, psd])
    try:
        prob.solve(solver=solver.upper())
    except cp.error.SolverError as err:
        raise RuntimeError(f"zero_temperature_bound: solver {solver} failed: {err}") from err
    if S.value is None:
        raise RuntimeError(f"zero_temperature_bound: solver returned status {prob.status}")
    Sv = 0.5 * (S.value + S.value.T)
    # Dual of the SDP: min n t s.t. t I + W - F = Z >= 0, W in V-perp. From the solver's Z
    # (the multiplier of S >> 0), W = proj_{V-perp}(F + Z) is exactly in V-perp, and any such W
    # certifies a_0(F) <= n lambda_max(F - W) (tr S = n, S >= 0, <S, W> = 0 on K').
    W = features.xor_classes.project_perp(F + psd.dual_value)
    bound = float(n * _eigvalsh(np.asfortranarray(F - W))[-1])
    Sf, _ = feasible_primal(Sv, features)
    return ZeroTemperatureResult(
        bound=bound,
        value=float(prob.value),
        status=str(prob.status),
        seconds=time.perf_counter() - start,
        sigma=Sf,
        marginals=_marginals(Sf, features),
        features=features,
    )


def _k_prime_constraints(S, features: FeatureSet):
    """CVXPY constraints for Sigma in V with unit diagonal (so tr Sigma = n), i.e. K' less PSD.

    One sparse equality system: every upper-triangular entry equals its XOR class's first
    entry, and the diagonal's representative equals 1.
    """
    import cvxpy as cp
    import scipy.sparse as sp

    n = features.n
    xc = features.xor_classes
    iu, ju = np.triu_indices(n)
    cls = xc.index[iu, ju]
    order = np.argsort(cls, kind="stable")
    cls_sorted = cls[order]
    first = np.ones(cls_sorted.shape[0], dtype=bool)
    first[1:] = cls_sorted[1:] != cls_sorted[:-1]
    rep_of_class = np.empty(xc.n_classes, dtype=np.int64)
    rep_of_class[cls_sorted[first]] = order[first]
    # column-major vec index of entry (i, j)
    flat = iu + n * ju
    others = np.flatnonzero(~first)
    rows_e = order[others]
    m = rows_e.shape[0]
    A = sp.csr_matrix(
        (
            np.concatenate([np.ones(m), -np.ones(m)]),
            (
                np.concatenate([np.arange(m), np.arange(m)]),
                np.concatenate([flat[rows_e], flat[rep_of_class[cls[rows_e]]]]),
            ),
        ),
        shape=(m, n * n),
    )
    drep = flat[rep_of_class[xc.diag]]
    v = cp.vec(S, order="F")
    cons = [v[int(drep)] == 1]
    if m:
        cons.append(A @ v == 0)
    return cons
