"""Quantum relaxation by Chambolle-Pock (Beyler & Bach, Sec. 4, 5.1, 6)."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from zbound.ising.features import (
    all_features,
    coefficient_matrix,
    default_features,
    degree_features,
    edge_features,
    tree_features,
)
from zbound.ising.model import IsingModel
from zbound.ising.quantum import (
    CPSolution,
    QuantumResult,
    dual_value,
    entropy_prox,
    quantum_bound,
    solve_quantum,
    zero_temperature_bound,
)


def hypercube(d):
    return np.array(list(itertools.product([-1.0, 1.0], repeat=d)))


def brute_phi(model):
    """Phi_eps(f) = eps log(2^-d sum_x exp(f(x)/eps)) (eq. (5)) and exact E[x], by enumeration."""
    X = hypercube(model.d)
    z = model.energy(X) / model.epsilon
    zmax = z.max()
    w = np.exp(z - zmax)
    return model.epsilon * (zmax + math.log(w.mean())), (w / w.sum()) @ X


def max_f(model):
    return model.energy(hypercube(model.d)).max()


def random_model(d, rng, scale=1.0, eps=1.0, tree=False):
    h = scale * rng.standard_normal(d)
    J = np.zeros((d, d))
    if tree:
        for i in range(1, d):
            j = int(rng.integers(i))
            J[i, j] = J[j, i] = scale * rng.standard_normal()
    else:
        J = np.triu(scale * rng.standard_normal((d, d)), 1)
        J = J + J.T
    return IsingModel(h, J, eps)


def assert_in_k_prime(S, fs, atol=1e-9):
    np.testing.assert_allclose(S, S.T, atol=atol)
    np.testing.assert_allclose(fs.xor_classes.project(S), S, atol=atol)
    np.testing.assert_allclose(np.diag(S), 1.0, atol=atol)
    assert np.linalg.eigvalsh(S)[0] >= -atol


@pytest.mark.slow
@settings(max_examples=40)
@given(
    d=st.integers(1, 16),
    seed=st.integers(0, 2**32 - 1),
    log_scale=st.floats(-3, 2.5),
    log_eps=st.floats(-2, 2),
    feats=st.sampled_from(["default", "tree", "degree2"]),
)
def test_bound_is_valid_on_random_instances(d, seed, log_scale, log_eps, feats):
    """Every quantum value is >= exact Phi_eps, including extreme |F| / eps, with no warning."""
    rng = np.random.default_rng(seed)
    model = random_model(d, rng, scale=10**log_scale, eps=10**log_eps)
    if feats == "default" or d == 1:
        fs = default_features(d)
    elif feats == "tree":
        fs = tree_features(model)
    else:
        fs = degree_features(d, 2) if d <= 7 else default_features(d)
    exact, _ = brute_phi(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = quantum_bound(model, fs, max_iter=400)
    assert np.isfinite(r.bound)
    assert r.bound >= exact - 1e-10 * max(1.0, abs(exact))
    assert r.primal <= r.bound + 1e-10 * max(1.0, abs(r.bound))
    assert np.all((r.marginals >= 0) & (r.marginals <= 1))
    assert np.all(np.abs(r.means) <= 1 + 1e-9)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_all_features_is_exact(eps):
    """Sec. 5.1: with all 2^d features the relaxation equals Phi_eps."""
    rng = np.random.default_rng(11)
    model = random_model(5, rng, eps=eps)
    exact, marg = brute_phi(model)
    r = quantum_bound(model, all_features(5), tol=1e-9)
    assert r.converged
    assert abs(r.bound - exact) <= 1e-6
    np.testing.assert_allclose(r.means, marg, atol=1e-5)
    np.testing.assert_allclose(r.marginals, (1 + marg) / 2, atol=1e-5)  # P(x_i = 1)


def test_converged_result_is_consistent():
    rng = np.random.default_rng(1)
    model = random_model(8, rng)
    fs = edge_features(8, [(0, 1), (2, 3)])
    r = quantum_bound(model, fs, tol=1e-6)
    assert r.converged and r.gap <= 1e-6
    assert r.bound >= r.primal
    assert_in_k_prime(r.sigma, fs)
    # the primal value is the objective of sigma
    F = coefficient_matrix(model, fs)
    s = np.linalg.eigvalsh(r.sigma)
    s = s[s > 0]
    obj = np.vdot(r.sigma, F) - model.epsilon / fs.n * np.sum(s * np.log(s))
    assert obj == pytest.approx(r.primal, abs=1e-9)
    # a tighter tolerance moves the bound down by at most the reported gap
    r2 = quantum_bound(model, fs, tol=1e-9, max_iter=100000)
    assert r2.bound <= r.bound + 1e-12
    assert r.bound - r2.bound <= r.abs_gap + 1e-12


def test_dual_value_is_an_upper_bound_for_any_w_in_v_perp():
    """Weak duality: D(W) >= a_eps(F) for every W in V-perp (docs/quantum.md)."""
    rng = np.random.default_rng(2)
    model = random_model(6, rng, eps=0.7)
    fs = edge_features(6, [(0, 1), (1, 2), (3, 4)])
    F = coefficient_matrix(model, fs)
    a = quantum_bound(model, fs, tol=1e-10, max_iter=100000)
    assert a.converged
    xc = fs.xor_classes
    for _ in range(20):
        W = xc.project_perp(rng.standard_normal((fs.n, fs.n)) * rng.uniform(0.01, 3))
        W = 0.5 * (W + W.T)
        assert dual_value(F, W, model.epsilon) >= a.primal - 1e-9
    # and W = 0 is dual feasible: eps log mean exp(n lambda(F) / eps)
    lam = np.linalg.eigvalsh(F)
    z = fs.n * lam / model.epsilon
    expect = model.epsilon * (z.max() + math.log(np.mean(np.exp(z - z.max()))))
    assert dual_value(F, np.zeros_like(F), model.epsilon) == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("lam", [1e-4, 0.3, 7.0])
def test_entropy_prox_solves_the_scalar_problem(lam):
    """s = lam omega(m / lam - log lam) minimizes lam (s log s - s) + (s - m)^2 / 2 (scaled)."""
    for m in [-50.0, -2.0, 0.0, 0.5, 3.0, 1e3]:
        s = float(entropy_prox(np.array([m]), lam)[0])

        def obj(t, m=m):
            ent = t * math.log(t) - t if t > 0 else 0.0  # continuous extension at 0
            return lam * ent + 0.5 * (t - m) ** 2

        ref = minimize_scalar(obj, bounds=(1e-300, max(2 * abs(m), 10.0)), method="bounded",
                              options={"xatol": 1e-14})
        if s > 1e-10:
            assert math.log(s) + s / lam == pytest.approx(m / lam, rel=1e-9, abs=1e-9)
        assert obj(s) <= obj(ref.x) + 1e-12


def test_symmetric_model_has_half_marginals():
    """h = 0 makes f even, so the (unique) relaxed optimum has E[x_i] = 0, P(x_i = 1) = 1/2."""
    rng = np.random.default_rng(3)
    m = random_model(7, rng)
    model = IsingModel(np.zeros(7), m.J)
    r = quantum_bound(model)
    np.testing.assert_allclose(r.means, 0.0, atol=1e-5)
    np.testing.assert_allclose(r.marginals, 0.5, atol=1e-5)


def test_marginals_follow_strong_fields():
    rng = np.random.default_rng(4)
    h = np.array([3.0, -3.0, 2.0, -2.0])
    model = IsingModel(h, 0.1 * random_model(4, rng).J, 0.5)
    r = quantum_bound(model)
    _, exact = brute_phi(model)
    assert np.all(np.sign(r.means) == np.sign(exact))
    assert np.all((r.marginals > 0.5) == (exact > 0))


def test_monotone_in_epsilon_and_below_zero_temperature():
    """Sec. 6: a_eps is non-decreasing in eps... for Phi; a_eps <= a_0 since tr S log S >= 0."""
    rng = np.random.default_rng(5)
    base = random_model(6, rng)
    a0 = zero_temperature_bound(base).bound
    vals = [quantum_bound(base.with_epsilon(e), tol=1e-9, max_iter=50000) for e in
            (0.05, 0.3, 1.0)]
    assert all(r.converged for r in vals)
    for r in vals:
        assert r.primal <= a0 + 1e-6
    assert vals[0].primal >= max_f(base) - 0.05 * 6 * math.log(2) - 1e-6


def test_warm_start_reduces_iterations():
    rng = np.random.default_rng(6)
    model = random_model(12, rng)
    cold = quantum_bound(model, tol=1e-8)
    warm = quantum_bound(model.with_epsilon(1.05), tol=1e-8, warm_start=cold)
    ref = quantum_bound(model.with_epsilon(1.05), tol=1e-8)
    assert warm.converged and warm.iterations < ref.iterations
    assert warm.bound == pytest.approx(ref.bound, rel=1e-7)
    # across feature sets: (1, x) result seeds (1, x, x_0 x_1)
    fs = default_features(12).add(0b11)
    w2 = quantum_bound(model, fs, tol=1e-5, warm_start=cold)
    r2 = quantum_bound(model, fs, tol=1e-5)
    assert w2.bound == pytest.approx(r2.bound, rel=1e-4)


def test_extreme_parameters_no_overflow():
    rng = np.random.default_rng(7)
    model = random_model(10, rng, scale=1e3, eps=1e-2)
    exact, _ = brute_phi(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = quantum_bound(model, max_iter=200)
    assert np.isfinite(r.bound) and r.bound >= exact
    assert np.isfinite(r.sigma).all()


def test_zero_temperature_tight_on_trees():
    """App. B.2: with (1, x, x_i x_j on tree edges), sup tr(Sigma F) over K' = max f."""
    rng = np.random.default_rng(8)
    for d in (4, 7, 9):
        model = random_model(d, rng, tree=True)
        z = zero_temperature_bound(model, tree_features(model))
        assert z.bound == pytest.approx(max_f(model), abs=1e-6)
        # (1, x) alone is a relaxation: it can only be larger
        z0 = zero_temperature_bound(model)
        assert z0.bound >= max_f(model) - 1e-7


def test_quantum_bound_tends_to_max_f_on_trees():
    """a_eps -> a_0 = max f on trees: max f - eps d log 2 <= Phi_eps <= a_eps <= a_0."""
    rng = np.random.default_rng(9)
    d = 6
    model = random_model(d, rng, tree=True)
    fs = tree_features(model)
    mf = max_f(model)
    for eps in (0.1, 0.01):
        r = quantum_bound(model.with_epsilon(eps), fs, tol=1e-4, max_iter=20000)
        assert mf - eps * d * math.log(2) - 1e-9 <= r.bound <= mf + 1e-4 * abs(mf) + 1e-6


def test_zero_temperature_upper_bounds_max_f_complete_graph():
    rng = np.random.default_rng(10)
    model = random_model(8, rng)
    z = zero_temperature_bound(model)
    assert z.bound >= max_f(model) - 1e-7
    assert z.bound >= z.value - 1e-6 * abs(z.value)
    assert z.bound == pytest.approx(z.value, rel=1e-5)


def test_bad_inputs():
    rng = np.random.default_rng(12)
    model = random_model(4, rng)
    with pytest.raises(ValueError, match="zero_temperature_bound"):
        quantum_bound(model.with_epsilon(0.0))
    with pytest.raises(ValueError, match="tau \\* sigma"):
        quantum_bound(model, tau=3.0, sigma=0.4)
    with pytest.raises(ValueError, match="tol"):
        quantum_bound(model, tol=-1.0)
    with pytest.raises(TypeError, match="max_iter"):
        quantum_bound(model, max_iter=10.5)
    with pytest.raises(TypeError, match="IsingModel"):
        quantum_bound(np.eye(3))
    with pytest.raises(ValueError, match="d=5"):
        quantum_bound(model, default_features(5))
    with pytest.raises(TypeError, match="FeatureSet"):
        quantum_bound(model, [0, 1, 2])
    with pytest.raises(TypeError, match="warm_start"):
        quantum_bound(model, warm_start=3)
    with pytest.raises(TypeError, match="blas_threads"):
        quantum_bound(model, blas_threads=1.5)
    with pytest.raises(ValueError, match="solver"):
        zero_temperature_bound(model, solver="MOSEK")


@pytest.mark.slow
def test_partial_spectrum_path_matches_full_eigendecomposition(monkeypatch):
    """For n >= 150 the solver computes only eigenpairs with prox value > 1e-18 (syevr)."""
    import zbound.ising.quantum.chambolle_pock as cp

    rng = np.random.default_rng(13)
    model = random_model(155, rng, eps=0.5)
    part = quantum_bound(model, tol=1e-6, polish=False)
    monkeypatch.setattr(cp, "PARTIAL_MIN_N", 10**9)
    full = quantum_bound(model, tol=1e-6, polish=False)
    assert part.converged and full.converged
    assert part.iterations == full.iterations
    assert part.bound == pytest.approx(full.bound, rel=1e-12)


@pytest.mark.slow
def test_polish_and_plain_chambolle_pock_agree():
    rng = np.random.default_rng(14)
    model = random_model(9, rng, eps=0.6)
    fs = edge_features(9, [(0, 1), (1, 2), (5, 7)])
    a = quantum_bound(model, fs, tol=1e-7, polish=True)
    b = quantum_bound(model, fs, tol=1e-7, polish=False, max_iter=200000)
    assert a.converged and b.converged and a.newton_steps > 0 and b.newton_steps == 0
    assert a.bound == pytest.approx(b.bound, rel=3e-7)


def test_conjugate_of_g_has_the_minus_eps_term():
    """G*(Z) = (eps/n) tr exp(n (Z + F)/eps) - eps (docs/quantum.md; the paper omits -eps)."""
    from scipy.linalg import expm
    from scipy.optimize import minimize

    rng = np.random.default_rng(15)
    n, eps = 3, 0.7
    A = rng.standard_normal((n, n))
    F = 0.5 * (A + A.T)
    B = rng.standard_normal((n, n))
    Z = 0.25 * (B + B.T)

    def neg(v):
        L = v.reshape(n, n)
        lam = np.clip(np.linalg.eigvalsh(L @ L.T), 1e-300, None)
        G = eps / n * (np.sum(lam * np.log(lam)) - lam.sum() + n) - np.vdot(L @ L.T, F)
        return -(np.vdot(Z, L @ L.T) - G)

    best = min((minimize(neg, rng.standard_normal(n * n), method="BFGS",
                         options={"gtol": 1e-10}) for _ in range(4)), key=lambda r: r.fun)
    closed = eps / n * np.trace(expm(n * (Z + F) / eps)) - eps
    assert -best.fun == pytest.approx(closed, rel=1e-7)


@settings(max_examples=10)
@given(d=st.integers(2, 8), seed=st.integers(0, 2**32 - 1), log_scale=st.floats(-2, 2))
def test_zero_temperature_bound_is_valid_on_random_instances(d, seed, log_scale):
    """a_0(F) >= max f, and the certified bound is >= the solver's value (Sec. 6)."""
    rng = np.random.default_rng(seed)
    model = random_model(d, rng, scale=10**log_scale)
    z = zero_temperature_bound(model)
    mf = max_f(model)
    assert z.bound >= mf - 1e-9 * max(1.0, abs(mf))
    assert z.bound >= z.value - 1e-7 * max(1.0, abs(z.value))


def test_solve_quantum_returns_a_solution_dataclass():
    """The solver returns a CPSolution; quantum_bound's result carries the same numbers."""
    rng = np.random.default_rng(16)
    model = random_model(6, rng, eps=0.8)
    fs = edge_features(6, [(0, 1), (2, 3)])
    sol = solve_quantum(coefficient_matrix(model, fs), fs, model.epsilon, tol=1e-7)
    assert isinstance(sol, CPSolution) and sol.converged
    r = quantum_bound(model, fs, tol=1e-7)
    assert isinstance(r, QuantumResult)
    assert (r.bound, r.primal, r.iterations, r.newton_steps) == (
        sol.bound, sol.primal, sol.iterations, sol.newton_steps)
    np.testing.assert_array_equal(r.sigma, sol.sigma)
    assert r.converged and r.message == "converged"
    short = quantum_bound(model, fs, tol=1e-12, max_iter=3, polish=False)
    assert not short.converged and short.message == "max_iter reached"
    assert short.bound >= r.bound - 1e-9


@pytest.mark.parametrize("d", [3, 7, 15, 31, 70])
def test_blas_threads_are_limited_at_every_size(monkeypatch, d):
    """The default limits BLAS threads to 1 for every n (docs/quantum.md, measurement)."""
    import zbound.ising.quantum.bound as qb

    seen = []
    real = qb._limit_blas_threads

    def spy(limit):
        seen.append(limit)
        return real(limit)

    monkeypatch.setattr(qb, "_limit_blas_threads", spy)
    rng = np.random.default_rng(17)
    quantum_bound(random_model(d, rng), max_iter=40)
    quantum_bound(random_model(d, rng), max_iter=40, blas_threads=None)
    assert seen == [1, None]


@pytest.mark.slow
def test_diagonal_newton_matches_chambolle_pock_at_large_n():
    """Pair-only features with n > 128: Newton with temperature continuation on the diagonal
    dual (docs/quantum.md, "Scale") gives the same certified bound as plain CP, with a feasible
    primal point and far fewer eigendecompositions."""
    rng = np.random.default_rng(18)
    model = random_model(140, rng, eps=0.7)
    a = quantum_bound(model, tol=1e-7)
    b = quantum_bound(model, tol=1e-7, polish=False)
    assert a.converged and b.converged
    assert a.iterations == 0 and a.newton_steps > 0 and b.newton_steps == 0
    assert a.bound == pytest.approx(b.bound, rel=2e-7)
    assert a.gap <= 1e-7 and a.eigendecompositions < b.eigendecompositions / 4
    S = a.sigma
    np.testing.assert_allclose(np.diag(S), 1.0)
    assert np.linalg.eigvalsh(S)[0] >= -1e-12
    W = a.dual
    assert abs(np.trace(W)) < 1e-9 and np.count_nonzero(W - np.diag(np.diag(W))) == 0
    assert a.bound == pytest.approx(dual_value(coefficient_matrix(model, default_features(140)),
                                               W, model.epsilon), rel=1e-14)


def test_diagonal_newton_falls_back_to_chambolle_pock(monkeypatch):
    """If Newton does not reach tol in its step budget, CP continues from its dual point and
    the bound stays certified."""
    import zbound.ising.quantum.chambolle_pock as cp

    monkeypatch.setattr(cp, "DIAGONAL_NEWTON_MIN_N", 10)
    monkeypatch.setattr(cp, "DIAGONAL_NEWTON_MAX_STEPS", 2)
    rng = np.random.default_rng(19)
    model = random_model(12, rng, eps=0.5)
    r = quantum_bound(model, tol=1e-6)
    ref = quantum_bound(model, tol=1e-6, polish=False)
    assert r.converged and r.iterations > 0 and r.newton_steps <= 2
    assert r.bound == pytest.approx(ref.bound, rel=2e-6)


@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_diagonal_newton_hessian_is_the_dual_hessian(monkeypatch, eps):
    """The diagonal dual's Hessian near its optimum, far columns summed as a series, agrees
    with the row-by-row sum and with central differences of the gradient -diag Sigma(w): a
    wrong series term, center or scale fails it."""
    import zbound.ising.quantum.diagonal_newton as dn

    rng = np.random.default_rng(29)
    d = 60
    model = random_model(d, rng, eps=eps)
    features = default_features(d)
    F = coefficient_matrix(model, features)
    n = F.shape[0]
    w = np.diag(dn.DiagonalDualNewton(F, features, eps).solve(tol=1e-4).W)
    monkeypatch.setattr(dn, "HESSIAN_FLOAT32", False)
    monkeypatch.setattr(dn, "HESSIAN_MAX_K", 10**6)
    ev = dn._Eval(F, w, eps)
    K = np.flatnonzero(ev.e > dn.HESSIAN_CUT)
    far, _, terms = dn._far_columns(ev.a[-1] - ev.a, K, np.isin(np.arange(n), K))
    if eps < 1:              # cold: most columns far below K, a series of a few terms
        assert 1 <= terms < K.size and far.sum() > n // 2
    else:                    # warm: no column is far, the exact sum alone
        assert terms == 0
    L = ev.hessian(eps)
    H = np.tril(L) + np.tril(L, -1).T       # the lower triangle is the Hessian's
    monkeypatch.setattr(dn, "HESSIAN_FAR_GAP", np.inf)
    L0 = ev.hessian(eps)
    H0 = np.tril(L0) + np.tril(L0, -1).T
    assert np.abs(H - H0).max() <= 1e-6 * np.abs(H0).max()
    for _ in range(3):
        v = rng.normal(size=n)
        v -= v.mean()
        h = 1e-5 * eps / n
        fd = -(dn._Eval(F, w + h * v, eps).diag_sigma
               - dn._Eval(F, w - h * v, eps).diag_sigma) / (2 * h)
        np.testing.assert_allclose(H @ v, fd, atol=1e-5 * np.abs(fd).max())
