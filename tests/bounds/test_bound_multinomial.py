"""Kronecker-structured Alg. 1 (`label_bound`, `multinomial_bound`).

References: the literal long-double loop of Alg. 1 on label vectors e_y, and the generic
`quadratic_bound` on explicit softmax features f_x(y) = e_y (x) x. Inputs for the path-equality
tests are small dyadic numbers, so the scores x^T w_y are exact in both paths and exactly tied
labels are visited in the same order.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from _alg1_reference import LD, alg1_loop, logsumexp_ld, stable_order
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zbound.bounds.curvature import KroneckerCurvature
from zbound.bounds.enumerate import quadratic_bound
from zbound.bounds.multinomial import MultinomialBound, label_bound, multinomial_bound

# Any RuntimeWarning (overflow, invalid value) from the library is a test failure.
pytestmark = pytest.mark.filterwarnings("error")

ORDERS = ["descending", "ascending", "given"]
RAISE = dict(over="raise", invalid="raise", divide="raise")
REL_BOUND = 1e-10


def explicit_features(X, n):
    """(t, n, n * d) array of e_y (x) x_j, class-major like theta = vec(W)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    t, d = X.shape
    F = np.zeros((t, n, n * d))
    for y in range(n):
        F[:, y, y * d:(y + 1) * d] = X
    return F


# ----------------------------------------------------------------------------- label_bound
LOG_ALPHA = st.one_of(st.floats(-30, 30), st.sampled_from([0.0, 1.0, -np.inf, 700.0, -700.0,
                                                            709.0, -745.0, 1e4]))


@st.composite
def label_problems(draw):
    t = draw(st.integers(1, 4))
    n = draw(st.integers(1, 8))
    la = draw(hnp.arrays(np.float64, (t, n), elements=LOG_ALPHA))
    dead = np.all(la == -np.inf, axis=1)
    la[dead, draw(st.integers(0, n - 1))] = draw(st.floats(-800, 800))
    offset = draw(st.sampled_from([0.0, 0.0, 700.0, -700.0, 1e4]))
    la = la + offset
    U = draw(hnp.arrays(np.float64, (5, n), elements=st.floats(-10, 10)))
    U *= draw(st.sampled_from([1e-6, 0.1, 1.0, 5.0]))
    return la, U, draw(st.sampled_from(ORDERS))


@pytest.mark.slow
@settings(max_examples=800)
@given(label_problems())
@example((np.array([[700.0, -700.0, 0.0, 700.0]]), np.ones((1, 4)), "descending"))
@example((np.array([[-np.inf, -700.0, 0.0, 700.0]]), np.ones((1, 4)), "ascending"))
@example((np.array([[-np.inf, 5.0, -np.inf]]), np.array([[3.0, -2.0, 9.0]]), "given"))
@example((np.array([[2.0, 2.0, 2.0, 2.0]]), np.array([[1.0, -1.0, 2.0, 0.0]]), "descending"))
@example((np.array([[3.0]]), np.array([[7.0]]), "descending"))
@example((np.array([[1e308, -1e308, 0.0]]), np.ones((1, 3)), "ascending"))   # no overflow
def test_label_bound_against_alg1_loop(problem):
    la, U, order = problem
    t, n = la.shape
    with np.errstate(**RAISE):
        log_z, probs, B = label_bound(la, order)
    assert log_z.shape == (t,) and probs.shape == (t, n) and B.shape == (t, n, n)
    amax = np.max(np.abs(np.where(np.isfinite(la), la, 0.0)), axis=1)
    for j in range(t):
        perm = stable_order(la[j], order)
        lz_ref, mu_ref, S_ref = alg1_loop(np.eye(n), la[j], perm)
        # Reference uses the same float64 log alpha; log-sum-exp of n terms: ~n ulps of max|la|.
        assert log_z[j] == pytest.approx(float(lz_ref), rel=0, abs=1e-14 * n * (1 + amax[j]))
        np.testing.assert_allclose(probs[j], mu_ref.astype(float), rtol=0, atol=1e-14 * n)
        # r = log alpha_i - log z_{i-1} is formed in float64 log space, so it carries
        # ~eps * |score gap| absolute error, which B inherits relatively: with scores 1e4 apart
        # visited in the given order the entries differ from the long-double loop by ~1e-12.
        # (Gaps beyond 1e6 only occur where a weight is exactly 0 or 1 in both computations.)
        fin = la[j][np.isfinite(la[j])]
        top = fin.max()
        near = fin[fin >= top - 1e6]         # no overflow: top - fin for finite pairs 1e308 apart
        spread = float(np.max(top - near))
        tol_B = 1e-13 * n + 8 * n * np.finfo(np.float64).eps * spread
        np.testing.assert_allclose(B[j], S_ref.astype(float), rtol=0, atol=tol_B)
        np.testing.assert_allclose(B[j], B[j].T, rtol=0, atol=1e-16)
        # B dominates the softmax Hessian diag(p) - p p^T (Theorem 1 consequence).
        p = mu_ref
        H = (np.diag(p) - np.outer(p, p)).astype(float)
        assert np.linalg.eigvalsh(B[j] - H).min() >= -1e-13 * n
        # Bound on log sum exp(la + u) at u = rows of U.
        truth = logsumexp_ld(la[j].astype(LD) + U.astype(LD), axis=-1).astype(float)
        bound = log_z[j] + U @ probs[j] + 0.5 * np.einsum("mi,ij,mj->m", U, B[j], U)
        tol = sum(REL_BOUND * v for v in (
            1 + np.abs(truth), np.abs(U) @ probs[j], amax[j],
            np.einsum("mi,ij,mj->m", np.abs(U), np.abs(B[j]), np.abs(U))))
        assert np.all(bound - truth >= -tol), bound - truth


@pytest.mark.parametrize("order", ORDERS)
def test_label_bound_sweep(order):
    """~10^6 random (sample, u) checks of the bound with -inf priors and ties."""
    rng = np.random.default_rng(100 + ORDERS.index(order))
    checks = 0
    for n in (2, 3, 5, 10, 20):
        for _ in range(10):
            t, m = 1000, 20
            la = rng.normal(scale=rng.choice([0.5, 3.0, 30.0]), size=(t, n))
            la[rng.random((t, n)) < 0.2] = -np.inf
            la[: t // 4] = np.round(la[: t // 4])                      # ties
            la[np.all(la == -np.inf, axis=1), 0] = 0.0
            la += rng.choice([0.0, 700.0, -700.0])
            with np.errstate(**RAISE):
                log_z, probs, B = label_bound(la, order)
            U = rng.normal(scale=rng.choice([1e-4, 1.0, 4.0]), size=(m, n))
            truth = logsumexp_ld(la[None].astype(LD) + U[:, None, :].astype(LD),
                                 axis=-1).astype(float)                 # (m, t)
            bound = (log_z + U @ probs.T + 0.5 * np.einsum("mi,tij,mj->mt", U, B, U))
            scale = 1 + np.abs(truth) + np.abs(log_z) + np.abs(U) @ probs.T
            assert np.all(bound - truth >= -REL_BOUND * scale)
            # exact value and gradient (softmax of the same float64 scores)
            np.testing.assert_allclose(log_z, logsumexp_ld(la).astype(float), rtol=1e-14,
                                       atol=1e-14)
            mx = np.max(la, axis=1, keepdims=True)
            p = np.exp(la - mx)
            np.testing.assert_allclose(probs, p / p.sum(axis=1, keepdims=True), rtol=0,
                                       atol=1e-14)
            checks += bound.size
    assert checks >= 1_000_000


def test_label_bound_curvature_dominates_hessian_sweep():
    rng = np.random.default_rng(8)
    for order in ORDERS:
        for n in (2, 4, 7):
            la = rng.normal(scale=4.0, size=(3000, n))
            la[rng.random(la.shape) < 0.2] = -np.inf
            la[np.all(la == -np.inf, axis=1), -1] = 1.0
            _, p, B = label_bound(la, order)
            H = -p[:, :, None] * p[:, None, :]
            H[:, np.arange(n), np.arange(n)] += p
            assert np.linalg.eigvalsh(B - H).min() >= -1e-14 * n


def test_label_bound_equals_quadratic_bound_on_identity_features():
    rng = np.random.default_rng(4)
    for order in ORDERS:
        for n in (1, 2, 5, 9):
            la = np.round(rng.normal(scale=3, size=(50, n)) * 4) / 4   # exact, with ties
            la[rng.random(la.shape) < 0.2] = -np.inf
            la[np.all(la == -np.inf, axis=1), 0] = 0.0
            log_z, p, B = label_bound(la, order)
            qb = quadratic_bound(np.broadcast_to(np.eye(n), (50, n, n)), np.zeros(n), la, order)
            np.testing.assert_allclose(log_z, qb.log_z, rtol=1e-15)
            np.testing.assert_allclose(p, qb.mean, atol=1e-15)
            np.testing.assert_allclose(B, qb.curvature, atol=1e-15)


@pytest.mark.parametrize("bad", [
    np.array([[np.nan, 0.0]]),
    np.array([[np.inf, 0.0]]),
    np.array([[-np.inf, -np.inf], [0.0, 1.0]]),   # a sample with all-zero prior
    np.zeros(3),                                    # 1-D
    np.zeros((2, 0)),                               # no labels
    np.zeros((2, 3, 4)),
])
def test_label_bound_rejects_bad_input(bad):
    with np.errstate(**RAISE), pytest.raises(ValueError):
        label_bound(bad)


def test_label_bound_rejects_unknown_order():
    with pytest.raises(ValueError, match="order"):
        label_bound(np.zeros((1, 2)), order="sorted")


# ----------------------------------------------------------------------------- Kronecker path
@st.composite
def softmax_problems(draw):
    """Dyadic X (t, d), W (n, d) and optional prior; exact scores in either path."""
    t = draw(st.integers(1, 5))
    n = draw(st.integers(1, 4))
    d = draw(st.integers(1, 3))
    X = draw(hnp.arrays(np.float64, (t, d), elements=st.integers(-4, 4).map(float)))
    W = draw(hnp.arrays(np.float64, (n, d), elements=st.integers(-12, 12).map(lambda k: k / 4)))
    k = draw(st.sampled_from([0, 0, 0, -60, 60, -3, 3]))
    X, W = X * 2.0**k, W * 2.0**-k
    if draw(st.booleans()):
        W = W * 64.0            # scores up to ~+-600 per feature: near the exp overflow point
    prior = draw(st.sampled_from(["none", "shared", "per_sample"]))
    if prior == "none":
        lp = None
    else:
        shape = (n,) if prior == "shared" else (t, n)
        lp = draw(hnp.arrays(np.float64, shape,
                             elements=st.one_of(st.integers(-8, 8).map(lambda v: v / 2),
                                                st.just(-np.inf))))
        lp2 = np.broadcast_to(lp, (t, n)).copy()
        if np.any(np.all(lp2 == -np.inf, axis=1)):
            lp = np.where(np.all(np.broadcast_to(lp, (t, n)) == -np.inf, axis=1)[:, None]
                          & (np.arange(n) == 0), 0.0, lp2) if prior == "per_sample" else None
    sparse = draw(st.booleans())
    Wn = draw(hnp.arrays(np.float64, (3, n, d), elements=st.floats(-3, 3))) * 2.0**-k
    return X, W, lp, sparse, Wn, draw(st.sampled_from(ORDERS))


@pytest.mark.slow
@settings(max_examples=400)
@given(softmax_problems())
def test_kronecker_path_equals_explicit_features(problem):
    X, W, lp, sparse, Wn, order = problem
    t, d = X.shape
    n = W.shape[0]
    Xin = sp.csr_matrix(X) if sparse else X
    with np.errstate(**RAISE):
        mb = multinomial_bound(Xin, W, log_prior=lp, order=order)
        flat = multinomial_bound(Xin, W.ravel(), log_prior=lp, order=order)
    assert isinstance(mb, MultinomialBound)
    F = explicit_features(X, n)
    lp_full = None if lp is None else np.broadcast_to(lp, (t, n))
    with np.errstate(**RAISE):
        qb = quadratic_bound(F, W.ravel(), lp_full, order=order)
    np.testing.assert_array_equal(flat.B, mb.B)
    np.testing.assert_allclose(mb.log_z, qb.log_z, rtol=1e-15, atol=1e-15)
    xs = np.max(np.abs(X)) or 1.0
    np.testing.assert_allclose(mb.mean, qb.mean, rtol=0, atol=1e-14 * xs)
    np.testing.assert_allclose(mb.grad_sum(), qb.mean.sum(axis=0), rtol=0, atol=1e-13 * t * xs)
    # per-sample curvature B_j (x) x_j x_j^T
    for j in range(t):
        np.testing.assert_allclose(np.kron(mb.B[j], np.outer(X[j], X[j])), qb.curvature[j],
                                   rtol=0, atol=1e-13 * xs * xs)
    C = mb.curvature()
    assert isinstance(C, KroneckerCurvature)
    np.testing.assert_allclose(C.to_dense(), qb.curvature.sum(axis=0), rtol=0,
                               atol=1e-13 * t * xs * xs)
    # evaluate agrees with the explicit bound and upper-bounds log Z
    for Wnew in Wn:
        got = mb.evaluate(Wnew)
        # The explicit path keeps its running means in log space: relative error
        # ~eps * (|log x| + |log alpha_i - log z_i|), so compare relative to the size of the
        # terms of the bound times that factor (spread = range of the finite scores).
        U = X @ (Wnew - W).T
        terms = (1 + np.abs(mb.log_z) + np.einsum("ja,ja->j", np.abs(U), mb.probs)
                 + np.einsum("ja,jab,jb->j", np.abs(U), np.abs(mb.B), np.abs(U)))
        la = X @ W.T + (0.0 if lp is None else lp)
        fin = np.where(np.isfinite(la), la, np.nan)
        spread = float(np.nanmax(np.nanmax(fin, axis=1) - np.nanmin(fin, axis=1)))
        np.testing.assert_allclose(got, qb.evaluate(Wnew.ravel()), rtol=0,
                                   atol=1e-14 * (1 + abs(np.log(xs)) + spread) * np.max(terms))
        scores = X.astype(LD) @ Wnew.T.astype(LD)
        if lp is not None:
            scores = scores + np.asarray(lp, dtype=LD)
        truth = logsumexp_ld(scores, axis=-1).astype(float)
        scale = 1 + np.abs(truth) + np.abs(mb.log_z) + np.max(np.abs(scores.astype(float)),
                                                              axis=1)
        assert np.all(got - truth >= -REL_BOUND * scale)
    np.testing.assert_array_equal(mb.evaluate(W), mb.log_z)


def test_multinomial_sweep_dense_and_sparse():
    """Random softmax problems, dense and CSR: bound >= log Z at ~250k (sample, W') pairs."""
    rng = np.random.default_rng(31)
    checks = 0
    for it in range(40):
        t, n, d = 500, int(rng.integers(2, 8)), int(rng.integers(1, 6))
        X = rng.normal(size=(t, d))
        X[rng.random((t, d)) < 0.5] = 0.0
        W = rng.normal(scale=rng.choice([0.3, 2.0, 30.0]), size=(n, d))
        lp = rng.normal(size=n)
        lp[rng.random(n) < 0.2] = -np.inf
        if np.all(lp == -np.inf):
            lp[0] = 0.0
        order = ORDERS[it % 3]
        Xin = sp.csr_matrix(X) if it % 2 else X
        with np.errstate(**RAISE):
            mb = multinomial_bound(Xin, W, lp, order)
        for _ in range(12):
            Wn = W + rng.normal(scale=rng.choice([1e-3, 0.3, 2.0]), size=W.shape)
            got = mb.evaluate(Wn)
            truth = logsumexp_ld((X @ Wn.T + lp).astype(LD), axis=-1).astype(float)
            scale = 1 + np.abs(truth) + np.abs(mb.log_z)
            assert np.all(got - truth >= -REL_BOUND * scale)
            checks += t
    assert checks >= 240_000


@pytest.mark.parametrize("X, W, lp", [
    (np.array([[np.nan, 1.0]]), np.zeros((2, 2)), None),
    (sp.csr_matrix(np.array([[np.inf, 1.0]])), np.zeros((2, 2)), None),
    (np.ones((2, 2)), np.array([[np.nan, 0.0], [0.0, 0.0]]), None),
    (np.ones((2, 2)), np.array([[np.inf, 0.0], [0.0, 0.0]]), None),
    (np.ones((2, 2)), np.zeros((2, 3)), None),                 # W columns != d
    (np.ones((2, 2)), np.zeros(5), None),                      # flat W not a multiple of d
    (np.ones(2), np.zeros((2, 2)), None),                      # 1-D X
    (np.ones((2, 2)), np.zeros((2, 2)), np.array([np.nan, 0.0])),
    (np.ones((2, 2)), np.zeros((2, 2)), np.array([np.inf, 0.0])),
    (np.ones((2, 2)), np.zeros((2, 2)), np.array([-np.inf, -np.inf])),
    (np.ones((2, 2)), np.zeros((2, 2)), np.zeros(3)),          # prior shape
    (np.full((1, 2), 1e300), np.full((2, 2), 1e300), None),    # scores overflow
])
def test_multinomial_bound_rejects_bad_input(X, W, lp):
    with np.errstate(**RAISE), pytest.raises(ValueError):
        multinomial_bound(X, W, log_prior=lp)


# ------------------------------------------------------------ two labels: the direct path
TWO_LABEL = st.one_of(st.floats(-1e308, 1e308), st.sampled_from(
    [0.0, 1.0, -1.0, -np.inf, 700.0, -745.0, 1e4, 1e308, -1e308, 5e-324]))


@settings(max_examples=3000, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.just(2)), elements=TWO_LABEL),
       st.sampled_from(["descending", "ascending"]))
def test_two_label_factors_equal_the_general_path(la, order):
    """The binary fast path of label_bound_factors (no sort, no running sums) returns
    bit-for-bit what the general path does: ties, a zero-weight label (-inf) visited first or
    last, scores 1e308 apart."""
    from zbound.bounds.multinomial import _general_label_bound_factors, label_bound_factors

    dead = np.all(la == -np.inf, axis=1)
    la[dead, 0] = 0.0
    fast = label_bound_factors(la, order)
    slow = _general_label_bound_factors(la, order)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    for key in ("perm", "inv", "rho", "keep", "w"):
        np.testing.assert_array_equal(fast[2][key], slow[2][key], err_msg=key)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40), st.integers(1, 6), st.booleans(), st.booleans(),
       st.sampled_from([1e-3, 1.0, 30.0, 700.0]), st.integers(0, 2**32 - 1))
def test_binary_bound_curvature_is_the_jaakkola_jordan_gram(t, d, intercept, weighted, scale,
                                                              seed):
    """The two-label curvature assembled without the ones column's copy equals the closed
    form sum_j s_j tanh(a_j / 2) / (2 a_j) xa_j xa_j^T (a_j the score, 1/4 at a_j = 0), an
    expression independent of Alg. 1's factors, from tiny scores to the saturated tails."""
    from zbound.models.loss import SoftmaxLoss

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, d))
    y = rng.integers(0, 2, t)
    sw = rng.exponential(size=t) if weighted else None
    loss = SoftmaxLoss(X, y, 2, sample_weight=sw, reference_class=True,
                       fit_intercept=intercept)
    theta = scale * rng.standard_normal(d + intercept) / np.sqrt(d)
    A = loss.majorizer(theta).curvature.assemble()
    Xa = np.hstack([X, np.ones((t, 1))]) if intercept else X
    a = Xa @ theta
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(np.abs(a) < 1e-8, 0.25, np.tanh(a / 2.0) / (2.0 * a))
    lam = lam * (1.0 if sw is None else sw)
    ref = (Xa * lam[:, None]).T @ Xa
    np.testing.assert_allclose(A, ref, rtol=1e-12, atol=1e-14 * max(1.0, np.abs(ref).max()))
