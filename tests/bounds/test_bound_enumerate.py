"""Alg. 1 over explicit configurations (`quadratic_bound`): Theorem 1 and its consequences.

Every property is checked against references that share no code with the library
(`_alg1_reference`: log Z, grad and Hessian by direct long-double softmax, and a literal loop over
Alg. 1). Floating-point tolerances, where needed, are stated next to the assertion; the bound
itself is compared with log Z at a relative 1e-10 of the magnitudes involved (|log Z|, the
linear and quadratic terms and the largest score), which is ~10^6 ulps: far above rounding of
O(n d) operations, far below any genuine violation we could construct by perturbing Sigma.
"""

import numpy as np
import pytest
from _alg1_reference import (
    LD,
    alg1_loop,
    logsumexp_ld,
    scores_ld,
    softmax_stats_ld,
    stable_order,
)
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import approx_fprime

from zbound.bounds.enumerate import QuadraticBound, quadratic_bound

# Any RuntimeWarning (overflow, invalid value) from the library is a test failure.
pytestmark = pytest.mark.filterwarnings("error")

ORDERS = ["descending", "ascending", "given"]
RAISE = dict(over="raise", invalid="raise", divide="raise")
REL_BOUND = 1e-10


# ----------------------------------------------------------------------------- strategies
def _prior(draw, n, mode, scores):
    if mode == "none":
        return None
    lp = np.asarray(draw(hnp.arrays(np.float64, n, elements=st.floats(-30, 30))))
    if mode == "some_zero":
        mask = np.asarray(draw(hnp.arrays(np.bool_, n)))
        lp[mask] = -np.inf
    elif mode == "all_but_one_zero":
        keep = draw(st.integers(0, n - 1))
        lp[:] = -np.inf
        lp[keep] = draw(st.floats(-30, 30))
    elif mode == "zero_on_max" and n > 1:
        lp[int(np.argmax(scores + lp))] = -np.inf
    elif mode == "zero_on_min" and n > 1:
        lp[int(np.argmin(scores + lp))] = -np.inf
    elif mode == "zero_on_first" and n > 1:
        lp[0] = -np.inf
    if np.all(lp == -np.inf):
        lp[draw(st.integers(0, n - 1))] = 0.0
    return lp


@st.composite
def problems(draw, max_n=7, max_d=4):
    """(features (n, d), theta~ (d,), log_prior (n,) or None, thetas (m, d), order)."""
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    kind = draw(st.sampled_from(["generic", "generic", "dup", "zero", "int"]))
    if kind == "int":     # small integers: exact scores, exact ties
        G = draw(hnp.arrays(np.float64, (n, d), elements=st.integers(-3, 3).map(float)))
    else:
        G = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-4, 4)))
    if kind == "dup":
        rows = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
        G = G[rows]
    if kind == "zero":
        G = np.zeros((n, d))
    k = draw(st.sampled_from([0, 0, 0, 0, -100, -30, -5, 5, 30, 100]))
    scale = 10.0 ** k
    F = G * scale
    T = draw(hnp.arrays(np.float64, d, elements=st.floats(-3, 3)))
    theta0 = T / scale
    mode = draw(st.sampled_from(["none", "finite", "some_zero", "all_but_one_zero",
                                 "zero_on_max", "zero_on_min", "zero_on_first"]))
    lp = _prior(draw, n, mode, G @ T)
    offset = draw(st.sampled_from([0.0, 0.0, 700.0, -700.0, 708.0, -745.0, 1e4, -1e4]))
    if offset:
        lp = (np.zeros(n) if lp is None else lp) + offset
    m = draw(st.integers(1, 6))
    D = draw(hnp.arrays(np.float64, (m, d), elements=st.floats(-5, 5)))
    step = draw(st.sampled_from([1e-8, 1e-3, 0.3, 1.0, 4.0]))
    thetas = theta0 + D * (step / scale)
    order = draw(st.sampled_from(ORDERS))
    return F, theta0, lp, thetas, order


# ----------------------------------------------------------------------------- helpers
def check_upper_bound(qb: QuadraticBound, F, lp, thetas):
    """bound(theta) >= log Z(theta) for each row of thetas, with the stated tolerance."""
    with np.errstate(**RAISE):
        got = np.atleast_1d(qb.evaluate(thetas))
    truth = logsumexp_ld(scores_ld(F, thetas, lp), axis=-1).astype(float)
    delta = thetas - qb.theta
    lin = np.abs(delta) @ np.abs(qb.mean)
    quad = np.einsum("mi,ij,mj->m", np.abs(delta), np.abs(qb.curvature), np.abs(delta))
    sc = np.abs(scores_ld(F, thetas, lp)).astype(float)
    biggest = np.max(np.where(np.isfinite(sc), sc, 0.0), axis=-1)
    # (summed after scaling, so that magnitudes near max float do not overflow the tolerance)
    tol = REL_BOUND * (1.0 + quad) + sum(REL_BOUND * v for v in
                                         (np.abs(truth), abs(qb.log_z), lin, biggest))
    gap = got - truth
    assert np.all(gap >= -tol), (gap, tol)
    return gap


def log_magnitude(F):
    fmax = float(np.max(np.abs(F)))
    return fmax, (1.0 + abs(np.log(fmax))) if fmax > 0 else 1.0


def check_against_reference(qb, F, lp, theta0, order):
    n, d = F.shape
    # Reference statistics from the float64 scores the library necessarily starts from: a score
    # of 1e4 is only known to ulp(1e4) ~ 2e-12, and that rounding is no fault of Alg. 1. The
    # visiting order for exactly tied scores is likewise reproduced from these scores, with an
    # independent stable sort.
    la64 = (lp if lp is not None else 0.0) + F @ theta0
    lz, mu, H = softmax_stats_ld(F, theta0, scores=la64)
    fmax, logmag = log_magnitude(F)
    # log Z: relative to the largest |score| (log-sum-exp of n terms loses ~n ulps of it).
    la = la64
    amax = float(np.max(np.abs(la[np.isfinite(la)])))
    assert qb.log_z == pytest.approx(float(lz), rel=0, abs=1e-14 * n * (1.0 + amax))
    # Mean (= grad log Z): kept in log space, so each term carries ~eps * |log|f|| relative
    # error; plain softmax would give eps * fmax. Allow n * 1e-14 * fmax * (1 + |log fmax|).
    np.testing.assert_allclose(qb.mean, mu.astype(float), rtol=0,
                               atol=1e-14 * n * fmax * logmag + 1e-300)
    # Sigma: symmetric and equal to the literal loop of Alg. 1 in the same visiting order.
    S = qb.curvature
    # symmetric up to rounding of the einsum (a few ulps of the largest entry)
    np.testing.assert_allclose(S, S.T, rtol=0, atol=8 * np.spacing(np.max(np.abs(S))))
    perm = stable_order(la64, order)
    _, mu_ref, S_ref = alg1_loop(F, la64, perm)
    np.testing.assert_allclose(mu_ref.astype(float), mu.astype(float), rtol=0,
                               atol=1e-14 * n * fmax * logmag + 1e-300)
    tol_S = 1e-12 * n * fmax * fmax * logmag + 1e-300
    np.testing.assert_allclose(S, S_ref.astype(float), rtol=0, atol=tol_S)
    # Theorem 1 => the bound touches log Z at theta~ with equal gradient, so Sigma >= Hessian.
    ev = np.linalg.eigvalsh((S_ref - H).astype(float)) if d else np.zeros(0)
    assert np.all(ev >= -tol_S), ev
    ev_lib = np.linalg.eigvalsh(S - H.astype(float))
    assert np.all(ev_lib >= -tol_S), ev_lib


# ----------------------------------------------------------------------------- properties
@pytest.mark.slow
@settings(max_examples=1000)
@given(problems())
@example((np.array([[700.0], [-700.0]]), np.array([1.0]), None, np.array([[-1.0], [3.0]]),
          "descending"))
@example((np.zeros((3, 2)), np.zeros(2), np.array([-np.inf, 0.0, -np.inf]),
          np.array([[5.0, -5.0]]), "given"))
@example((np.array([[1.0, 2.0]]), np.array([3.0, -1.0]), None, np.array([[-4.0, 8.0]]), "given"))
@example((np.array([[1.0], [1.0], [1.0]]), np.array([0.5]), None, np.array([[9.0]]),
          "descending"))
@example((np.array([[1e100], [-1e100], [2e100]]), np.array([1e-100]), np.array([0.0, -np.inf,
          3.0]), np.array([[-3e-100]]), "ascending"))
@example((np.array([[1e-100, 0], [0, -1e-100]]), np.array([1e100, 2e100]), np.array([-745.0,
          -745.0]), np.array([[5e100, -1e100]]), "descending"))
@example((np.array([[1.0], [-1.0], [0.0]]), np.array([1e308]), None, np.array([[1e308]]),
          "ascending"))                              # finite scores 2e308 apart: no overflow
def test_quadratic_bound_single(problem):
    F, theta0, lp, thetas, order = problem
    with np.errstate(**RAISE):
        qb = quadratic_bound(F, theta0, lp, order=order)
    assert isinstance(qb.log_z, float)
    assert qb.mean.shape == (F.shape[1],) and qb.curvature.shape == (F.shape[1],) * 2
    check_against_reference(qb, F, lp, theta0, order)
    check_upper_bound(qb, F, lp, thetas)
    # Touches at theta~.
    with np.errstate(**RAISE):
        at0 = qb.evaluate(theta0)
    assert at0 == qb.log_z


@st.composite
def batched_problems(draw):
    t = draw(st.integers(1, 4))
    first = draw(problems(max_n=6, max_d=3))
    F0, theta0, lp0, thetas, order = first
    n, d = F0.shape
    scale = np.max(np.abs(F0)) or 1.0
    rest = draw(hnp.arrays(np.float64, (t - 1, n, d), elements=st.floats(-4, 4)))
    F = np.concatenate([F0[None], rest * scale])
    if lp0 is None:
        lp = None
    else:
        extra = draw(hnp.arrays(np.float64, (t - 1, n),
                                elements=st.one_of(st.floats(-30, 30), st.just(-np.inf))))
        extra[np.all(extra == -np.inf, axis=1), 0] = 0.0
        lp = np.concatenate([lp0[None], extra])
    return F, theta0, lp, thetas, order


@pytest.mark.slow
@settings(max_examples=200)
@given(batched_problems())
def test_quadratic_bound_batched_equals_per_sample(problem):
    F, theta0, lp, thetas, order = problem
    t = F.shape[0]
    with np.errstate(**RAISE):
        qb = quadratic_bound(F, theta0, lp, order=order)
        vals = qb.evaluate(thetas)
    assert qb.log_z.shape == (t,) and qb.mean.shape == (t, F.shape[2])
    assert vals.shape == (thetas.shape[0], t)
    for j in range(t):
        lpj = None if lp is None else lp[j]
        with np.errstate(**RAISE):
            single = quadratic_bound(F[j], theta0, lpj, order=order)
        fmax, logmag = log_magnitude(F[j])
        np.testing.assert_allclose(qb.log_z[j], single.log_z, rtol=1e-15, atol=1e-300)
        np.testing.assert_allclose(qb.mean[j], single.mean, rtol=0,
                                   atol=1e-15 * fmax * logmag + 1e-300)
        np.testing.assert_allclose(qb.curvature[j], single.curvature, rtol=0,
                                   atol=1e-13 * fmax**2 * logmag + 1e-300)
        check_upper_bound(single, F[j], lpj, thetas)
        bj = QuadraticBound(qb.log_z[j], qb.mean[j], qb.curvature[j], qb.theta)
        check_upper_bound(bj, F[j], lpj, thetas)
        delta = np.abs(thetas - theta0)
        terms = (abs(bj.log_z) + delta @ np.abs(bj.mean)
                 + np.einsum("mi,ij,mj->m", delta, np.abs(bj.curvature), delta))
        np.testing.assert_allclose(vals[:, j], bj.evaluate(thetas), rtol=0,
                                   atol=1e-14 * np.max(terms) + 1e-300)


# ----------------------------------------------------------------------------- sweeps
def _random_batch(rng, t, n, d):
    """Features with ties, duplicates, zero rows and mixed scales; priors with zeros."""
    G = rng.normal(size=(t, n, d))
    kind = rng.integers(0, 4, size=t)
    G[kind == 1] = np.round(G[kind == 1])                       # ties
    dup = kind == 2
    G[dup, 1:] = G[dup, :1] if n > 1 else G[dup, 1:]            # all rows equal
    G[kind == 3, : n // 2] = 0.0                                # zero features
    lp = rng.normal(scale=5.0, size=(t, n))
    lp[rng.random((t, n)) < 0.25] = -np.inf
    lp[np.all(lp == -np.inf, axis=1), rng.integers(0, n)] = 0.0
    return G, lp


@pytest.mark.parametrize("order", ORDERS)
def test_sweep_upper_bound_vectorized(order):
    """~10^6 (bound, theta) checks over batches with a shared theta~ per call."""
    rng = np.random.default_rng(12345 + ORDERS.index(order))
    checks = 0
    for it in range(60):
        n = int(rng.integers(1, 10))
        d = int(rng.integers(1, 5))
        t, m = 300, 20
        G, lp = _random_batch(rng, t, n, d)
        scale = 10.0 ** rng.choice([0, 0, -50, 50, -8, 8])
        offset = rng.choice([0.0, 700.0, -700.0, 1e3])
        F = G * scale
        theta0 = rng.normal(scale=rng.choice([0.1, 1.0, 3.0]), size=d) / scale
        lp = lp + offset
        with np.errstate(**RAISE):
            qb = quadratic_bound(F, theta0, lp, order=order)
        D = rng.normal(size=(m, d)) * rng.choice([1e-6, 0.1, 1.0, 3.0], size=(m, 1)) / scale
        thetas = theta0 + D
        with np.errstate(**RAISE):
            got = qb.evaluate(thetas)                               # (m, t)
        truth = logsumexp_ld(scores_ld(F, thetas, lp), axis=-1).astype(float)   # (m, t)
        delta = np.abs(D)
        lin = delta @ np.abs(qb.mean).T
        quad = np.einsum("mi,tij,mj->mt", delta, np.abs(qb.curvature), delta)
        sc = np.abs(scores_ld(F, thetas, lp)).astype(float)
        biggest = np.max(np.where(np.isfinite(sc), sc, 0.0), axis=-1)
        tol = REL_BOUND * (1 + np.abs(truth) + np.abs(qb.log_z) + lin + quad + biggest)
        bad = got - truth < -tol
        assert not bad.any(), (it, np.argwhere(bad)[:5], (got - truth)[bad][:5])
        # exactness of log_z in the same sweep
        lz0 = logsumexp_ld(scores_ld(F, theta0, lp), axis=-1).astype(float)
        np.testing.assert_allclose(qb.log_z, lz0, rtol=1e-13, atol=1e-13)
        checks += got.size
    assert checks >= 300_000


def test_sweep_curvature_dominates_hessian():
    """Sigma - Cov_p(f) is PSD (Theorem 1 with exact value and gradient) on 20k random cases."""
    rng = np.random.default_rng(7)
    for order in ORDERS:
        for n in (2, 3, 5, 9):
            t, d = 1500, 3
            G, lp = _random_batch(rng, t, n, d)
            theta0 = rng.normal(scale=2.0, size=d)
            with np.errstate(**RAISE):
                qb = quadratic_bound(G, theta0, lp, order=order)
            la = lp + G @ theta0
            p = np.exp(la - qb.log_z[:, None])
            C = G - np.einsum("tn,tnd->td", p, G)[:, None, :]
            H = np.einsum("tn,tni,tnj->tij", p, C, C)
            ev = np.linalg.eigvalsh(qb.curvature - H)
            scale = n * np.max(np.abs(G), axis=(1, 2)) ** 2
            assert np.all(ev.min(axis=1) >= -1e-12 * scale)
            np.testing.assert_allclose(qb.mean, np.einsum("tn,tnd->td", p, G), atol=1e-12)


# ----------------------------------------------------------------------------- exactness
@pytest.mark.slow
@settings(max_examples=200)
@given(problems(max_n=6, max_d=3).filter(lambda p: p[2] is None or np.all(np.abs(p[2]) < 1e3)))
def test_mean_is_gradient_by_finite_differences(problem):
    F, theta0, lp, _, order = problem
    fmax = float(np.max(np.abs(F)))
    # Subnormal features have too few significant bits for a relative comparison.
    assume(fmax > 0 and np.all((F == 0) | (np.abs(F) > 1e-290)))
    # Work in the natural units u = theta * fmax so finite differences are well scaled.
    Fu = F / fmax
    qb = quadratic_bound(F, theta0, lp, order=order)

    def logz(u):
        return float(logsumexp_ld(scores_ld(Fu, u, lp)))

    u0 = theta0 * fmax
    fd = approx_fprime(u0, logz, 1e-7)
    # Central-difference error: O(h) forward difference, h = 1e-7, curvature <= max|f|^2 = 1.
    np.testing.assert_allclose(qb.mean / fmax, fd, rtol=0, atol=3e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_orders_change_only_curvature(order):
    rng = np.random.default_rng(3)
    G, lp = _random_batch(rng, 400, 7, 3)
    theta0 = rng.normal(size=3)
    ref = quadratic_bound(G, theta0, lp, order="given")
    qb = quadratic_bound(G, theta0, lp, order=order)
    np.testing.assert_allclose(qb.log_z, ref.log_z, rtol=1e-15, atol=1e-14)
    np.testing.assert_allclose(qb.mean, ref.mean, rtol=0, atol=1e-13)


@pytest.mark.parametrize("order", ORDERS)
def test_order_is_the_visiting_order(order):
    """descending/ascending == 'given' on configurations pre-sorted by (exact) integer scores."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        n, d = int(rng.integers(1, 8)), int(rng.integers(1, 4))
        F = rng.integers(-3, 4, size=(n, d)).astype(float)
        theta = rng.integers(-2, 3, size=d).astype(float)
        lp = rng.integers(-3, 3, size=n).astype(float)
        lp[rng.random(n) < 0.3] = -np.inf
        if np.all(lp == -np.inf):
            lp[0] = 0.0
        s = lp + F @ theta                      # exact: small integers
        perm = stable_order(s, order)
        a = quadratic_bound(F, theta, lp, order=order)
        b = quadratic_bound(F[perm], theta, lp[perm], order="given")
        np.testing.assert_allclose(a.curvature, b.curvature, rtol=1e-14, atol=1e-15)


# ----------------------------------------------------------------------------- special cases
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("offset", [0.0, 700.0, -740.0])
def test_one_live_configuration_is_exact(order, offset):
    """One configuration (or all but one with zero weight): log Z is linear, Sigma = 0."""
    rng = np.random.default_rng(5)
    for n in (1, 2, 6):
        F = rng.normal(size=(n, 3))
        theta0 = rng.normal(size=3)
        for live in range(n):
            lp = np.full(n, -np.inf)
            lp[live] = offset
            with np.errstate(**RAISE):
                qb = quadratic_bound(F, theta0, lp, order=order)
            np.testing.assert_array_equal(qb.curvature, 0.0)
            np.testing.assert_allclose(qb.mean, F[live], rtol=1e-15)
            thetas = theta0 + rng.normal(scale=3.0, size=(10, 3))
            exact = offset + thetas @ F[live]
            np.testing.assert_allclose(qb.evaluate(thetas), exact, rtol=1e-14, atol=1e-12)


def test_two_configurations_match_the_closed_form():
    """n = 2: Sigma = beta(log a2/a1) (f2 - f1)(f2 - f1)^T (Jaakkola-Jordan), any order."""
    rng = np.random.default_rng(9)
    for _ in range(300):
        F = rng.normal(size=(2, 3))
        theta0 = rng.normal(scale=2, size=3)
        r = float((F[1] - F[0]) @ theta0)
        x = LD(abs(r))
        b = float(np.tanh(x / 2) / x / 2) if r != 0 else 0.25
        want = b * np.outer(F[1] - F[0], F[1] - F[0])
        for order in ORDERS:
            qb = quadratic_bound(F, theta0, order=order)
            np.testing.assert_allclose(qb.curvature, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("order", ORDERS)
def test_zero_features(order):
    lp = np.array([0.0, -np.inf, 3.0, -1.0])
    qb = quadratic_bound(np.zeros((4, 2)), np.array([1.0, -2.0]), lp, order=order)
    np.testing.assert_array_equal(qb.mean, 0.0)
    np.testing.assert_array_equal(qb.curvature, 0.0)
    assert qb.log_z == pytest.approx(float(logsumexp_ld(lp)), rel=1e-15)


def test_brute_force_enumeration_of_binary_pairwise_model():
    """An Ising-type model on k binary spins, enumerated: f(y) = (y_i, y_i y_j)."""
    rng = np.random.default_rng(21)
    for k in (1, 2, 3, 4, 5, 6):
        ys = ((np.arange(2**k)[:, None] >> np.arange(k)) & 1).astype(float)
        iu = np.triu_indices(k, 1)
        F = np.concatenate([ys, (ys[:, :, None] * ys[:, None, :])[:, iu[0], iu[1]]], axis=1)
        d = F.shape[1]
        for _ in range(20):
            theta0 = rng.normal(scale=2.0, size=d)
            thetas = theta0 + rng.normal(scale=rng.choice([0.01, 1, 5]), size=(50, d))
            for order in ORDERS:
                qb = quadratic_bound(F, theta0, order=order)
                check_upper_bound(qb, F, None, thetas)
                check_against_reference(qb, F, None, theta0, order)


# ----------------------------------------------------------------------------- ordering quality
@pytest.mark.parametrize("n, d, spread", [(4, 3, 1.0), (8, 4, 2.0), (16, 5, 0.5), (8, 8, 4.0)])
def test_descending_is_tighter_than_given_on_average(n, d, spread):
    """Descending order is tighter than the given order (statistically).

    Over 1000 random problems, the bound at random nearby theta is lower with descending order on
    average with a margin of 4 standard errors, and so is the trace of Sigma.
    """
    rng = np.random.default_rng(1000 + n + d)
    t = 1000
    F = rng.normal(size=(t, n, d))
    theta0 = rng.normal(scale=spread, size=d)
    qd = quadratic_bound(F, theta0, order="descending")
    qg = quadratic_bound(F, theta0, order="given")
    thetas = theta0 + rng.normal(size=(20, d))
    diff = (qd.evaluate(thetas) - qg.evaluate(thetas)).mean(axis=0)   # per problem
    se = diff.std(ddof=1) / np.sqrt(t)
    assert diff.mean() < -4 * se, (diff.mean(), se)
    tr = np.trace(qd.curvature - qg.curvature, axis1=1, axis2=2)
    assert tr.mean() < -4 * tr.std(ddof=1) / np.sqrt(t)
    # and descending is at least as tight in most individual problems
    assert np.mean(diff <= 1e-12) > 0.5


# ----------------------------------------------------------------------------- bad input
BAD = [
    (np.array([[np.nan, 0.0]]), np.zeros(2), None, ValueError),
    (np.array([[np.inf, 0.0]]), np.zeros(2), None, ValueError),
    (np.zeros((2, 2)), np.array([0.0, np.nan]), None, ValueError),
    (np.zeros((2, 2)), np.array([0.0, -np.inf]), None, ValueError),
    (np.zeros((0, 2)), np.zeros(2), None, ValueError),                 # no configurations
    (np.zeros((2, 0, 2)), np.zeros(2), None, ValueError),
    (np.zeros(3), np.zeros(3), None, ValueError),                      # 1-D features
    (np.zeros((1, 2, 3, 4)), np.zeros(4), None, ValueError),
    (np.zeros((2, 3)), np.zeros(2), None, ValueError),                 # theta length
    (np.zeros((2, 3)), np.zeros((1, 3)), None, ValueError),            # theta 2-D
    (np.zeros((2, 2)), np.zeros(2), np.array([-np.inf, -np.inf]), ValueError),  # all-zero prior
    (np.zeros((2, 2)), np.zeros(2), np.array([np.inf, 0.0]), ValueError),
    (np.zeros((2, 2)), np.zeros(2), np.array([np.nan, 0.0]), ValueError),
    (np.zeros((2, 2)), np.zeros(2), np.zeros(3), ValueError),          # prior shape
    (np.zeros((2, 2, 2)), np.zeros(2), np.array([[0.0, 0.0], [-np.inf, -np.inf]]), ValueError),
    # Scores that overflow float64: log Z is not representable, so no bound can be returned.
    (np.array([[1e200], [0.0]]), np.array([1e200]), None, ValueError),
    (np.array([[1e200, 1e200]]), np.array([1e200, -1e200]), None, ValueError),
    # Finite scores but f f^T beyond float64: the curvature (and the bound at theta~) would be
    # inf / NaN without any warning.
    (np.array([[1e160], [-1e160], [0.0]]), np.array([0.0]), None, ValueError),
]


@pytest.mark.parametrize("features, theta, log_prior, exc", BAD)
def test_bad_input_is_rejected(features, theta, log_prior, exc):
    with np.errstate(**RAISE), pytest.raises(exc):
        quadratic_bound(features, theta, log_prior)


def test_bad_order_is_rejected():
    with pytest.raises(ValueError, match="order"):
        quadratic_bound(np.zeros((2, 2)), np.zeros(2), order="sideways")


def test_evaluate_rejects_wrong_length():
    qb = quadratic_bound(np.eye(3), np.zeros(3))
    with pytest.raises(ValueError):
        qb.evaluate(np.zeros(2))
