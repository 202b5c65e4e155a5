"""The public entry :func:`quantum_bound`: checks, warm start, BLAS threads, the Chambolle-Pock
solve (with Newton polish) and the :class:`QuantumResult`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from zbound.ising.features import FeatureSet, _unpack, coefficient_matrix
from zbound.ising.model import check_scale, relative_gap
from zbound.ising.quantum.chambolle_pock import solve_quantum
from zbound.ising.quantum.checks import check_int, check_positive, resolve_features
from zbound.ising.quantum.duality import marginals_from_means, spin_means
from zbound.ising.result import BoundResult
from zbound.utils.threads import blas_threads as _limit_blas_threads


@dataclass(kw_only=True, repr=False)
class QuantumResult(BoundResult):
    """Outcome of :func:`quantum_bound`, a :class:`~zbound.ising.result.BoundResult`.

    bound (= ``fun``): guaranteed upper bound on a_eps(F), hence on Phi_eps (a dual value, not an
    iterate's), valid whether or not the solver converged (``certified`` is always True).
    converged: the relative duality gap reached ``tol``; ``status`` STATIONARY, or MAX_ITER
    (then ``bound`` is still valid, only looser than a_eps by up to abs_gap); ``message``
    "converged" or "max_iter reached".
    primal: value of the feasible primal point ``sigma`` (a lower value on a_eps(F)).
    gap: relative duality gap (bound - primal) / max(abs(bound), abs(primal), eps); abs_gap
    unscaled.
    marginals (= ``x``): (d,) approximate P(x_i = 1) read from ``sigma`` (NaN where x_i is not
    representable by the feature set); means: the same as E[x_i] = 2 P(x_i = 1) - 1 (unclipped).
    sigma: (n, n) feasible primal matrix in K'. dual: (n, n) dual iterate (for warm starts).
    iterations (= ``nit``): Chambolle-Pock iterations. newton_steps: steps of the dual Newton
    polish (or, for pair-only features with n > 128, of the diagonal-dual Newton solver;
    ``iterations`` then counts only Chambolle-Pock iterations, 0 when Newton converged on its
    own). eigendecompositions (= ``n_evals``): LAPACK symmetric eigensolves of (n, n)
    matrices, the unit of cost at large n. history: (iteration, bound, primal) per check, the
    rows of ``trace``.
    """

    primal: float
    gap: float
    abs_gap: float
    means: np.ndarray
    sigma: np.ndarray
    dual: np.ndarray
    features: FeatureSet
    epsilon: float
    newton_steps: int = 0
    history: list[tuple[int, float, float]] = field(default_factory=list, repr=False)

    @property
    def eigendecompositions(self) -> int:
        return self.n_evals


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


def _check_arguments(model, tol, tau, sigma, max_iter, check_every) -> tuple:
    """:func:`quantum_bound`'s arguments checked: (tol, tau, sigma, max_iter, check_every),
    or a ValueError naming the first bad one."""
    if model.epsilon <= 0:
        raise ValueError(
            "quantum_bound needs epsilon > 0; use zero_temperature_bound for epsilon = 0"
        )
    # the dual's curvature grows like (scale / eps)^2 / scale: its Newton systems leave
    # float64 long before f / eps does
    check_scale(model, "quantum_bound", max_ratio=1e150,
                hint="; zero_temperature_bound bounds max f, which bounds Phi_eps at every eps")
    tol = check_positive("tol", tol)
    tau = check_positive("tau", tau)
    sigma = check_positive("sigma", sigma)
    if tau * sigma >= 1:
        raise ValueError(f"Chambolle-Pock needs tau * sigma < 1, got {tau} * {sigma}")
    return (tol, tau, sigma, check_int("max_iter", max_iter, 1),
            check_int("check_every", check_every, 1))


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
    blas_threads: BLAS/LAPACK threads while solving, at every size (default 1; None leaves the
    setting alone).
    ``result.bound`` is a dual value and a valid upper bound even when not converged.

    Examples
    --------
    >>> from zbound.ising import gaussian_model, log_partition, quantum_bound
    >>> model = gaussian_model(8, random_state=0)
    >>> res = quantum_bound(model)
    >>> res.certified, bool(res.bound >= log_partition(model))
    (True, True)
    """
    start = time.perf_counter()
    features = resolve_features(model, features)
    eps = model.epsilon
    tol, tau, sigma, max_iter, check_every = _check_arguments(model, tol, tau, sigma, max_iter,
                                                              check_every)
    F = coefficient_matrix(model, features)
    x0 = y0 = None
    if warm_start is not None:
        x0, y0 = _embed(warm_start, features)
    if blas_threads is not None:
        blas_threads = check_int("blas_threads", blas_threads, 1)
    with _limit_blas_threads(blas_threads):
        try:
            sol = solve_quantum(
                F, features, eps, tol, tau, sigma, max_iter, check_every, x0, y0, polish
            )
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                f"quantum_bound: the eigensolver failed ({exc}); parameters / eps are probably "
                f"too large for float64 (max |F| = {np.abs(F).max():.3g}, eps = {eps:.3g})"
            ) from exc
    D, P = sol.bound, sol.primal
    if not np.isfinite(D):
        raise ValueError(
            f"quantum_bound: the dual bound is not finite ({D}): parameters / eps overflow "
            f"float64 (max |F| = {np.abs(F).max():.3g}, eps = {eps:.3g})")
    means = spin_means(sol.sigma, features)
    return QuantumResult(
        bound=D,
        primal=P,
        gap=relative_gap(D, P, eps),
        abs_gap=D - P,
        nit=sol.iterations,
        converged=sol.converged,
        message="converged" if sol.converged else "max_iter reached",
        method="chambolle-pock" + ("+newton" if sol.newton_steps else ""),
        trace=sol.history.trace(),
        seconds=time.perf_counter() - start,
        marginals=marginals_from_means(means),
        means=means,
        sigma=sol.sigma,
        dual=sol.dual,
        features=features,
        epsilon=eps,
        newton_steps=sol.newton_steps,
        history=sol.history,
        n_evals=sol.eigendecompositions,
    )
