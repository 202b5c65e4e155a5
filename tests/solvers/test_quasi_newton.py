"""L-BFGS directions safeguarded by the bound ("lbfgs-bound", not in the registry): monotone
every iteration, the bound's steps used where the unit step fails, same optimum."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _solver_problems import logistic_problem, reference_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.solvers import minimize
from zbound.solvers.quasi_newton import LBFGSBound


def _assert_monotone(res):
    f = res.trace.objective
    assert np.all(np.diff(f) <= 1e-12 * np.maximum(1.0, np.abs(f[:-1]))), np.diff(f).max()


@pytest.mark.parametrize("seed,reg,separation", [(0, 1.0, 1.0), (1, 1e-3, 3.0), (3, 10.0, 0.5)])
@pytest.mark.parametrize("opts", [{}, {"first_step": "hessian"},
                                  {"first_step": "bound", "backtracks": 0, "memory": 3}])
def test_monotone_and_reaches_the_optimum(seed, reg, separation, opts):
    model = logistic_problem(seed, reg=reg, separation=separation)
    x0 = np.random.default_rng(seed).standard_normal(model.n_params)   # a poor start
    x_ref, f_ref = reference_optimum(model, x0)
    res = minimize(model, x0, method=LBFGSBound, tol=1e-9, max_iter=5000, **opts)
    _assert_monotone(res)
    assert res.converged, res.message
    np.testing.assert_allclose(res.fun, f_ref, rtol=1e-6)
    if opts.get("first_step") == "bound":   # no backtracking: failed unit steps -> bound
        assert res.info["bound_steps"] >= 1 and res.info["interpolated_steps"] == 0


def test_bad_options():
    with pytest.raises(ValueError, match="memory"):
        LBFGSBound(memory=0)
    with pytest.raises(ValueError, match="first_step"):
        LBFGSBound(first_step="newton")
    with pytest.raises(ValueError, match="backtracks"):
        LBFGSBound(backtracks=-1)


# -- "lbfgs-precond": L-BFGS with the fixed bound curvature as its initial inverse Hessian ----

def _logistic(X, y, n_classes, fit_intercept, sw=None, strength=1.0):
    """The estimator's objective: L2 ``strength`` on the weights, unpenalized intercepts and
    their centering term; (objective, (pen, center, k, d))."""
    from zbound.models.multinomial import logistic_objective

    t = X.shape[0]
    k = 1 if n_classes == 2 else n_classes
    d = X.shape[1] + fit_intercept
    pen = np.full((k, d), strength)
    if fit_intercept:
        pen[:, -1] = 0.0
    center = t / k**2 if (k > 1 and fit_intercept) else 0.0
    obj = logistic_objective(X, y, n_classes, pen.ravel(), sw, center,
                             fit_intercept=fit_intercept)
    return obj, (pen, center, k, d)


def _softmax_objective(seed, n_classes, fit_intercept, sparse=False, weights=False, t=80,
                       dx=5, C=0.5):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, dx)) * rng.uniform(0.2, 5.0, dx)   # badly scaled columns
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    y = rng.integers(0, n_classes, t)
    y[:n_classes] = np.arange(n_classes)
    sw = None
    if weights:
        sw = rng.uniform(0.0, 2.0, t)
        sw[5:15] = 0.0                                            # zero sample weights
    obj, (pen, center, k, d) = _logistic(X, y, n_classes, fit_intercept, sw, 1.0 / C)
    return obj, (X, sw, pen, center, k, d)


def _explicit_curvature(X, sw, pen, center, k, d, n_classes, fit_intercept, shrink):
    X = X.toarray() if hasattr(X, "toarray") else X
    Xa = np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X
    s = np.ones(X.shape[0]) if sw is None else sw
    G = Xa.T @ (Xa * s[:, None])
    A = 0.5 * (np.eye(k) - np.ones((k, k)) / n_classes)
    lam = 0.5 if k >= 2 else 0.25
    # the shrink: shrink x lambda x the median of diag(G), on every coordinate
    B = np.kron(A, G) + np.diag(pen.ravel()) + shrink * lam * np.median(np.diag(G)) * \
        np.eye(k * d)
    if center:
        u = np.zeros((k, d))
        u[:, -1] = 1.0
        B += center * np.outer(u.ravel(), u.ravel())
    return B


CASES = [(2, True, False, False), (4, True, False, False), (3, False, False, True),
         (4, True, True, True), (2, False, True, True)]


@pytest.mark.parametrize("n_classes,fit_intercept,sparse,weights", CASES)
@pytest.mark.parametrize("shrink", [0.0, 1.0])
@pytest.mark.parametrize("explicit", [False, True])
def test_bound_preconditioner_is_the_inverse_of_the_bound(n_classes, fit_intercept, sparse,
                                                           weights, shrink, explicit):
    from zbound.solvers.quasi_newton import bound_preconditioner

    obj, (X, sw, pen, center, k, d) = _softmax_objective(0, n_classes, fit_intercept, sparse,
                                                         weights)
    pre = bound_preconditioner(obj, shrink, explicit=explicit)
    assert pre.explicit is explicit
    p = obj.n_params
    B = _explicit_curvature(X, sw, pen, center, k, d, n_classes, fit_intercept, shrink)
    V = np.random.default_rng(1).standard_normal((3, p))
    for v in V:
        np.testing.assert_allclose(pre(v), np.linalg.solve(B, v), rtol=1e-6,
                                   atol=1e-9 * np.abs(np.linalg.solve(B, v)).max())
    if shrink == 0.0:     # Boehning's curvature bounds the Hessian everywhere
        rng = np.random.default_rng(2)
        for _ in range(4):
            H = obj.hessian(3.0 * rng.standard_normal(p)).to_dense()
            assert np.linalg.eigvalsh(B - H).min() >= -1e-8 * np.abs(B).max()


@pytest.mark.parametrize("n_classes,fit_intercept,sparse,weights", CASES)
@pytest.mark.parametrize("explicit", [False, True])
def test_single_precision_preconditioner_is_the_inverse_to_float32_accuracy(
        n_classes, fit_intercept, sparse, weights, explicit):
    """The float32 factor (lbfgs-precond's default, shrunk B) applies B^{-1} to about 1e-5
    relative, returns float64 for float64 input and float32 for float32 input."""
    from zbound.solvers.quasi_newton import bound_preconditioner

    obj, (X, sw, pen, center, k, d) = _softmax_objective(0, n_classes, fit_intercept, sparse,
                                                         weights)
    pre = bound_preconditioner(obj, 1.0, dtype=np.float32, explicit=explicit)
    B = _explicit_curvature(X, sw, pen, center, k, d, n_classes, fit_intercept, 1.0)
    for v in np.random.default_rng(1).standard_normal((3, obj.n_params)):
        want = np.linalg.solve(B, v)
        got = pre(v)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
        assert pre(v.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("explicit", [False, True])
def test_bound_preconditioner_with_a_reference_class_uses_both_factors(dtype, fit_intercept,
                                                                       explicit):
    """Three or more classes with a reference class: B^{-1} needs the M_perp and the M_1
    factors (the class mean must not be overwritten between the two solves)."""
    from zbound.models.loss import SoftmaxLoss
    from zbound.models.objective import Objective
    from zbound.models.penalty import L2Penalty
    from zbound.solvers.quasi_newton import bound_preconditioner

    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 6))
    y = rng.integers(0, 4, 300)
    loss = SoftmaxLoss(X, y, 4, reference_class=True, fit_intercept=fit_intercept)
    pre = bound_preconditioner(Objective(loss, L2Penalty(0.7)), 0.0, dtype=dtype,
                               explicit=explicit)
    assert pre.one is not None and pre.perp is not None
    Xa = np.hstack([X, np.ones((300, 1))]) if fit_intercept else X
    k = loss.k
    B = np.kron(0.5 * (np.eye(k) - np.ones((k, k)) / 4), Xa.T @ Xa) + 0.7 * np.eye(k * loss.d)
    v = rng.standard_normal(k * loss.d)
    want = np.linalg.solve(B, v)
    tol = 1e-8 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(pre(v), want, rtol=0, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("precision", ["double", "single"])
def test_lbfgs_precond_precisions_reach_the_same_optimum(precision):
    """Pairs and factor in float32 (the default) or float64: monotone, same optimum."""
    obj, _ = _softmax_objective(6, 5, True, False, True, C=100.0)
    x0 = np.zeros(obj.n_params)
    ref = minimize(obj, x0, method="newton-bound", tol=1e-11)
    res = minimize(obj, x0, method="lbfgs-precond", tol=1e-9, max_iter=5000,
                   precision=precision)
    _assert_monotone(res)
    assert res.converged, res.message
    np.testing.assert_allclose(res.fun, ref.fun, rtol=1e-9)


def test_single_precision_pairs_halve_the_pair_memory():
    """precision="single" keeps float32 pairs, at most ``memory`` of them; "auto" (the
    default of lbfgs-precond) float64 while the pairs take at most 1 MB, float32 beyond."""
    from zbound.solvers.base import CountedModel
    from zbound.solvers.quasi_newton import PreconditionedLBFGS

    auto = PreconditionedLBFGS()
    assert not auto.single_precision(1638) and auto.single_precision(1639)
    assert PreconditionedLBFGS(precision="double").single_precision(10**6) is False
    obj, _ = _softmax_objective(2, 4, True, t=200, C=100.0)
    solver = PreconditionedLBFGS(memory=3, precision="single")
    model = CountedModel(obj)
    state = solver.init(model, np.zeros(obj.n_params))
    for _ in range(8):
        solver.update(model, state)
    mem = state.memory
    assert len(mem) == 3
    assert mem.SZ.dtype == np.float32 and mem.SZ.shape == (6, obj.n_params)


def test_auto_memory_keeps_80_pairs_while_they_fit_in_a_megabyte():
    """memory="auto" (the default of lbfgs-precond): 80 float64 pairs up to p = 819, where
    they take 1 MB, then 40; an explicit memory is kept; anything else is a ValueError."""
    from zbound.solvers.base import CountedModel
    from zbound.solvers.quasi_newton import PreconditionedLBFGS

    auto = PreconditionedLBFGS()
    assert auto.opts["memory"] == "auto"
    assert auto.memory_size(819) == 80 and auto.memory_size(820) == 40
    assert PreconditionedLBFGS(memory=7).memory_size(10) == 7
    with pytest.raises(ValueError, match="memory"):
        PreconditionedLBFGS(memory="many")
    obj, _ = _softmax_objective(2, 4, True, t=200, C=100.0)
    state = auto.init(CountedModel(obj), np.zeros(obj.n_params))
    assert state.memory.m == 80


def test_bound_gram_equals_the_explicit_gram():
    obj, (X, sw, pen, center, k, d) = _softmax_objective(3, 3, True, False, True)
    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    np.testing.assert_allclose(obj.loss.bound_gram(), Xa.T @ (Xa * sw[:, None]), rtol=1e-12,
                               atol=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_sampled_bound_gram_estimates_the_gram(sparse):
    """Every m-th row, scaled to the total weight: close to the full Gram matrix on i.i.d.
    rows, exact total weight in the intercept entry."""
    obj, _ = _softmax_objective(5, 3, True, sparse, True, t=6000, dx=4)
    full = obj.loss.bound_gram()
    est = obj.loss.bound_gram(max_rows=1000)
    np.testing.assert_allclose(est[-1, -1], full[-1, -1], rtol=0.05)
    assert np.abs(est - full).max() <= 0.1 * np.abs(full).max()
    np.testing.assert_array_equal(obj.loss.bound_gram(max_rows=6000), full)


@pytest.mark.parametrize("n_classes,fit_intercept,sparse,weights", CASES)
def test_lbfgs_precond_monotone_and_same_optimum(n_classes, fit_intercept, sparse, weights):
    obj, _ = _softmax_objective(4, n_classes, fit_intercept, sparse, weights, C=10.0)
    x0 = np.zeros(obj.n_params)
    ref = minimize(obj, x0, method="newton-bound", tol=1e-11)
    res = minimize(obj, x0, method="lbfgs-precond", tol=1e-9, max_iter=5000)
    _assert_monotone(res)
    assert res.converged, res.message
    np.testing.assert_allclose(res.fun, ref.fun, rtol=1e-9)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-5 * max(1.0, np.abs(ref.x).max()))
    # the first step is the bound's own minimizer at x0: taken whole
    assert res.info["initial_steps"] == 1 and res.info["bound_steps"] == 0


def test_lbfgs_precond_on_other_models_is_plain_lbfgs_bound():
    """No bound_gram (a log-linear model): "auto" falls back to plain L-BFGS; "bound" raises."""
    from _solver_problems import loglinear_problem

    model = loglinear_problem(0)
    x0 = np.zeros(model.n_params)
    a = minimize(model, x0, method="lbfgs-precond", tol=1e-9)
    b = minimize(model, x0, method=LBFGSBound, tol=1e-9)
    np.testing.assert_allclose(a.trace.objective, b.trace.objective)
    with pytest.raises(ValueError, match="softmax objective"):
        minimize(model, x0, method=LBFGSBound, precondition="bound")


def test_lbfgs_precond_auto_skips_expensive_preconditioners():
    """d much larger than t (the SRBCT shape): the Gram matrix and its factor would cost far
    more than the gradients they save, so "auto" runs without them."""
    from zbound.models.multinomial import logistic_objective
    from zbound.solvers.quasi_newton import PreconditionedLBFGS, preconditioner_cost

    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 400))
    y = np.arange(10) % 3
    obj = logistic_objective(X, y, 3, np.full(3 * 401, 1.0), None, 0.0, fit_intercept=True)
    assert preconditioner_cost(obj)[0] > 40
    solver = PreconditionedLBFGS()
    from zbound.solvers.base import CountedModel
    assert solver.init(CountedModel(obj), np.zeros(obj.n_params)).h0 is None


def test_bad_preconditioner_options():
    with pytest.raises(ValueError, match="precondition"):
        LBFGSBound(precondition="jacobi")
    with pytest.raises(ValueError, match="shrink"):
        LBFGSBound(shrink=-1.0)
    with pytest.raises(ValueError, match="shrink"):
        LBFGSBound(shrink=float("nan"))
    with pytest.raises(ValueError, match="precision"):
        LBFGSBound(precision="half")
    with pytest.raises(ValueError, match="constraints"):
        from zbound.constraints import LinearConstraints
        minimize(_softmax_objective(0, 3, True)[0], np.zeros(18), method="lbfgs-precond",
                 constraints=LinearConstraints(lb=-np.ones(18), ub=np.ones(18)))


# -- the automatic choice (zbound.solvers.choose_method, minimize without a method) ----------

def _large_multiclass(n_classes=10, t=5000, dx=20, fit_intercept=True):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((t, dx))
    y = rng.integers(0, n_classes, t)
    return _logistic(X, y, n_classes, fit_intercept)[0]


def test_choose_method_picks_what_the_docs_say():
    from zbound.constraints import LinearConstraints
    from zbound.models.multinomial import logistic_objective
    from zbound.solvers import DEFAULT_METHOD, choose_method
    from zbound.solvers.quasi_newton import AUTO_MIN_WORK

    big = _large_multiclass()                       # 5000 rows x 210 parameters, 10 classes
    assert big.loss.n_samples * big.n_params >= AUTO_MIN_WORK
    assert choose_method(big) == "lbfgs-precond"
    p = big.n_params
    box = LinearConstraints(lb=-np.ones(p), ub=np.ones(p))
    assert choose_method(big, box) == "lbfgs"      # a box, standardized columns: L-BFGS-B
    general = LinearConstraints(A=np.ones((1, p)), b=[1.0])
    assert choose_method(big, general) == DEFAULT_METHOD        # general: the exact QP
    rng = np.random.default_rng(7)
    Xr = rng.standard_normal((5000, 20)) * np.logspace(-2, 2, 20)
    raw = _logistic(Xr, rng.integers(0, 10, 5000), 10, True)[0]
    assert choose_method(raw, box) == DEFAULT_METHOD      # raw units: scale-invariant Newton
    import scipy.sparse as sp

    sparse = _logistic(sp.csr_matrix(big.loss.X), rng.integers(0, 10, 5000), 10, True)[0]
    assert choose_method(sparse, box) == "lbfgs"           # sparse rows: L-BFGS-B too
    small = _large_multiclass(n_classes=3, dx=20)          # 63 parameters
    assert choose_method(small, LinearConstraints(lb=-np.ones(63), ub=np.ones(63))) == \
        DEFAULT_METHOD
    assert choose_method(big, cg_rtol=0.1) == DEFAULT_METHOD       # a method option given
    # binary below 10^6 rows x parameters: L-BFGS, then Newton
    assert choose_method(_large_multiclass(n_classes=2, t=40000)) == "lbfgs-newton"
    assert choose_method(_large_multiclass(t=400)) == DEFAULT_METHOD                 # small
    rng = np.random.default_rng(0)                  # d large against t (the SRBCT shape)
    X = rng.standard_normal((100, 3000))
    wide = logistic_objective(X, np.arange(100) % 4, 4, np.full(4 * 3001, 1.0), None, 0.0,
                              fit_intercept=True)
    assert choose_method(wide) == "lbfgs-newton"     # dense: L-BFGS, then Newton
    import scipy.sparse as sp
    sparse = logistic_objective(sp.csr_matrix(X), np.arange(100) % 4, 4,
                                np.full(4 * 3001, 1.0), None, 0.0, fit_intercept=True)
    assert choose_method(sparse) == DEFAULT_METHOD   # sparse: truncated Newton throughout
    from _solver_problems import loglinear_problem
    assert choose_method(loglinear_problem(0)) == DEFAULT_METHOD   # not a softmax objective


def test_minimize_without_method_uses_the_choice():
    big = _large_multiclass()
    x0 = np.zeros(big.n_params)
    res = minimize(big, x0, max_iter=3)
    assert res.method == "lbfgs-precond"
    _assert_monotone(res)
    small = _large_multiclass(t=400)
    assert minimize(small, np.zeros(small.n_params), max_iter=2).method == "newton-bound"


def test_estimator_auto_uses_the_choice():
    from zbound import BoundLogisticRegression

    rng = np.random.default_rng(3)
    X = rng.standard_normal((5000, 20))
    y = rng.integers(0, 10, 5000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # max_iter=5: may stop unconverged
        est = BoundLogisticRegression(max_iter=5).fit(X, y)
        assert est.solver_result_.method == "lbfgs-precond"
        est = BoundLogisticRegression(max_iter=5, coef_bounds=(-1.0, 1.0)).fit(X, y)
        assert est.solver_result_.method == "newton-bound"      # bounds: newton-bound


def test_lbfgs_precond_with_gram_overflow_in_float32_falls_back_without_warnings():
    """A feature of magnitude 1e20 puts X^T X out of float32's range: the single-precision
    factor is rebuilt in float64, with no overflow warning, and the run is finite and
    monotone. Features large enough to overflow float64's sums are refused when the objective
    is built (a ValueError naming the magnitude), so no solver sees them."""
    from zbound.models.multinomial import logistic_objective
    from zbound.solvers.quasi_newton import PreconditionedLBFGS, bound_preconditioner

    rng = np.random.default_rng(0)
    t, dx, K = 600, 5, 3
    X = rng.standard_normal((t, dx))
    X[:, 0] *= 1e20
    y = np.arange(t) % K
    pen = np.full((K, dx + 1), 1.0)
    pen[:, -1] = 0.0
    obj = logistic_objective(X, y, K, pen.ravel(), None, t / K**2, fit_intercept=True)
    x0 = np.zeros(obj.n_params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(obj, x0, method="lbfgs-precond", tol=1e-9, max_iter=500)
        pre = PreconditionedLBFGS()._preconditioner(obj)
    _assert_monotone(res)
    assert np.isfinite(res.fun) and res.fun < obj.value(x0)
    assert pre is not None and pre.dtype == np.float64
    with pytest.raises(FloatingPointError, match="float32"):
        bound_preconditioner(obj, 1.0, dtype=np.float32)
    X[:, 0] *= 1e140
    with pytest.raises(ValueError, match="magnitude .* rescale the features"):
        logistic_objective(X, y, K, pen.ravel(), None, t / K**2, fit_intercept=True)


@settings(max_examples=1500, deadline=None)
@given(n_classes=st.integers(2, 5), fit_intercept=st.booleans(), weights=st.booleans(),
       seed=st.integers(0, 2**31 - 1),
       x_scale=st.sampled_from([1e-3, 1.0, 30.0]),
       theta_scale=st.sampled_from([0.0, 1e-3, 1.0, 30.0, 1e3]),
       ties=st.booleans())
def test_boehning_curvature_bounds_the_hessian_everywhere(n_classes, fit_intercept, weights,
                                                          seed, x_scale, theta_scale, ties):
    """The unshrunk preconditioner's curvature B (Boehning: (I - 11^T/K)/2 (x) X^T X plus the
    penalties) dominates the loss's Hessian at any theta: near-saturated scores (theta scale
    1e3), exactly tied scores (theta 0 or all classes equal), zero sample weights, reference
    class (two classes) and intercept. B - H must be PSD up to rounding."""

    rng = np.random.default_rng(seed)
    t, dx = 12, 3
    X = x_scale * rng.standard_normal((t, dx))
    y = rng.integers(0, n_classes, t)
    sw = None
    if weights:
        sw = rng.uniform(0.0, 2.0, t)
        sw[rng.random(t) < 0.3] = 0.0
    obj, (pen, center, k, d) = _logistic(X, y, n_classes, fit_intercept, sw, 0.5)
    B = _explicit_curvature(X, sw, pen, center, k, d, n_classes, fit_intercept, 0.0)
    theta = theta_scale * rng.standard_normal((k, d))
    if ties:
        theta[:] = theta[0]                          # every free class scores the same
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        H = obj.hessian(theta.ravel()).to_dense()
    assert np.linalg.eigvalsh(B - H).min() >= -1e-9 * max(1.0, np.abs(B).max())


@pytest.mark.parametrize("preconditioned", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compact_memory_is_the_two_loop_recursion(preconditioned, dtype):
    """The compact form (ring buffer of m slots, B^{-1} y from differences or directly) gives
    the two-loop recursion's direction, through slot reuse and a restart; float32 pairs to
    float32 accuracy."""
    from zbound.solvers.quasi_newton import CompactMemory, two_loop

    rng = np.random.default_rng(7)
    p, m = 30, 5
    A = rng.standard_normal((p, p))
    A = A @ A.T + p * np.eye(p)
    Bm = rng.standard_normal((p, p))
    Binv = np.linalg.inv(Bm @ Bm.T + np.eye(p))
    h0 = (lambda v: Binv @ v) if preconditioned else None
    mem = CompactMemory(p, m, dtype, h0)
    x = rng.standard_normal(p)
    g = A @ x
    mem.start(g)
    S, Y = [], []
    tol = 1e-10 if dtype == np.float64 else 2e-3
    for it in range(16):
        if it == 9:                      # restart: every pair forgotten
            mem.start(g)
            S, Y = [], []
        # steps of very different sizes: some y << g take the direct product B^{-1} y
        x_new = x + rng.standard_normal(p) * (1e-4 if it % 4 == 3 else 0.3)
        g_new = A @ x_new
        assert mem.push(x_new - x, g_new - g, g_new)
        S.append(x_new - x)
        Y.append(g_new - g)
        S, Y = S[-m:], Y[-m:]
        x, g = x_new, g_new
        rho = [1.0 / (s @ y) for s, y in zip(S, Y)]
        if preconditioned:
            want = two_loop(g, S, Y, rho, h0, (S[-1] @ Y[-1]) / (Y[-1] @ h0(Y[-1])))
        else:
            want = two_loop(g, S, Y, rho)
        got = mem.direction()
        assert len(mem) == len(S)
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("n_classes,fit_intercept,sparse,weights", CASES)
@pytest.mark.parametrize("shrink", [0.0, 1.0])
def test_first_length_minimizes_the_exact_model_at_uniform_scores(n_classes, fit_intercept,
                                                                  sparse, weights, shrink):
    """At x = 0 (every class the same score) the first trial length along d = -B^{-1} g is
    -g^T d / d^T H(0) d with the exact Hessian; at a point with different scores it is 1;
    with all classes' weights equal (not 0) the scores are uniform too."""
    from zbound.solvers.quasi_newton import bound_preconditioner

    obj, (X, sw, pen, center, k, d) = _softmax_objective(0, n_classes, fit_intercept, sparse,
                                                         weights)
    pre = bound_preconditioner(obj, shrink)
    p = obj.n_params
    x = np.zeros(p)
    g = obj.value_and_grad(x)[1]
    dvec = -pre(g)
    gd = float(g @ dvec)
    H = obj.hessian(x).to_dense()
    want = -gd / float(dvec @ H @ dvec)
    assert pre.first_length(x, dvec, gd) == pytest.approx(want, rel=1e-7)   # B's floor
    assert want >= 1.0 - 1e-12
    x1 = np.random.default_rng(0).standard_normal(p)
    assert pre.first_length(x1, dvec, gd) == 1.0
    if k == n_classes:                  # equal rows of W: still uniform probabilities
        xe = np.tile(np.random.default_rng(1).standard_normal(d), k)
        ge = obj.value_and_grad(xe)[1]
        de = -pre(ge)
        He = obj.hessian(xe).to_dense()
        assert pre.first_length(xe, de, float(ge @ de)) == pytest.approx(
            -float(ge @ de) / float(de @ He @ de), rel=1e-7)


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("chunk_size", [None, 37])
def test_single_precision_bound_gram_is_the_gram(weights, fit_intercept, chunk_size):
    """bound_gram(dtype=float32) (ssyrk on float32 row blocks, mirrored after the last chunk)
    equals the float64 Gram matrix to float32 accuracy, symmetric, over several chunks."""
    from zbound.models.loss import SoftmaxLoss

    rng = np.random.default_rng(5)
    X = rng.standard_normal((300, 7)) * rng.uniform(0.5, 3.0, 7)
    y = rng.integers(0, 3, 300)
    sw = rng.uniform(0.0, 2.0, 300) if weights else None
    loss = SoftmaxLoss(X, y, 3, sw, False, chunk_size, fit_intercept)
    for max_rows in (None, 70):         # every row; every 5th, scaled to the total weight
        G32 = loss.bound_gram(max_rows, dtype=np.float32)
        G64 = loss.bound_gram(max_rows)
        assert G32.dtype == np.float32
        np.testing.assert_array_equal(G32, G32.T)
        np.testing.assert_allclose(G32, G64, rtol=0, atol=1e-6 * np.abs(G64).max())


def test_compact_memory_skips_pairs_without_positive_curvature():
    """A pair with s^T y <= 0 (or non-finite) is not kept: the direction stays the two-loop
    recursion's over the kept pairs, and with no pair kept it is -B^{-1} g."""
    from zbound.solvers.quasi_newton import CompactMemory, two_loop

    rng = np.random.default_rng(11)
    p, m = 12, 4
    A = rng.standard_normal((p, p))
    A = A @ A.T + p * np.eye(p)
    mem = CompactMemory(p, m)
    g = rng.standard_normal(p)
    mem.start(g)
    s = rng.standard_normal(p)
    assert not mem.push(s, -A @ s, g - A @ s)          # s^T y < 0: skipped
    assert len(mem) == 0
    np.testing.assert_allclose(mem.direction(), -(g - A @ s))
    S, Y = [], []
    g = g - A @ s
    for it in range(7):
        s = rng.standard_normal(p)
        y = A @ s if it % 3 else -A @ s                 # every third pair has s^T y < 0
        kept = mem.push(s, y, g + y)
        assert kept == bool(it % 3)
        if kept:
            S, Y = (S + [s])[-m:], (Y + [y])[-m:]
        g = g + y
        if S:
            want = two_loop(g, S, Y, [1.0 / (a @ b) for a, b in zip(S, Y)])
            np.testing.assert_allclose(mem.direction(), want, rtol=1e-10,
                                       atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("method", ["lbfgs-bound", "lbfgs-precond", "lbfgs", "bfgs"])
@pytest.mark.parametrize("scale", [1e5, 9e7])
def test_a_far_out_start_is_not_called_converged_after_a_short_step(method, scale):
    """theta ~ 1e5: the penalty makes f ~ 1e9 grow faster than g, and ||g||_inf <= tol * abs(f)
    held after L-BFGS's short first step (f = 7e8 against the optimum 31, called converged
    after 1 iteration). The relative test now needs the curvature pairs to predict little
    left to gain; the run ends at the optimum."""
    from sklearn.datasets import make_classification

    from zbound.models.multinomial import logistic_objective

    X, y = make_classification(200, 20, random_state=0)
    model = logistic_objective(X, y, 2, np.full(21, 1e-2), None, 0.0, fit_intercept=True)
    ref = minimize(model, np.zeros(21), method="newton-bound", tol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # SciPy's line search far out
        far = minimize(model, np.full(21, scale), method=method, tol=1e-4, max_iter=5000)
    assert far.converged and far.nit > 5
    assert far.fun == pytest.approx(ref.fun, rel=1e-4)


def _binary(t, d, sep, seed=0, C=1.0):
    from zbound.models.multinomial import logistic_objective

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, d))
    y = (X @ rng.standard_normal(d) * sep + rng.logistic(size=t) > 0).astype(np.intp)
    pen = np.full(d + 1, 1.0 / C)
    pen[-1] = 0.0
    return logistic_objective(X, y, 2, pen, None, 0.0, fit_intercept=True)


def test_lbfgs_newton_hands_over_to_newton_where_lbfgs_crawls():
    """Nearly separable, weakly regularized: L-BFGS's tail runs long, Newton steps take over
    past newton_switch(d) evaluations and reach Newton's optimum; a well-conditioned problem
    converges before the switch. Monotone throughout."""
    from zbound.solvers.quasi_newton import newton_switch

    hard = _binary(300, 20, sep=20.0, C=100.0)
    ref = minimize(hard, np.zeros(21), method="newton-bound", tol=1e-10)
    plain = minimize(hard, np.zeros(21), method="lbfgs-bound", tol=1e-8, max_iter=5000)
    res = minimize(hard, np.zeros(21), method="lbfgs-newton", tol=1e-8)
    assert res.converged and res.info["newton_iterations"] >= 1
    assert res.n_evals < plain.n_evals
    assert res.fun == pytest.approx(ref.fun, rel=1e-8)
    _assert_monotone(res)
    easy = _binary(2000, 10, sep=1.0)
    res = minimize(easy, np.zeros(11), method="lbfgs-newton", tol=1e-6)
    assert res.converged and "newton_iterations" not in res.info
    assert res.trace.n_evals[-2] < newton_switch(11)     # the last step began before it


def test_lbfgs_newton_hands_over_on_wide_multiclass_data():
    """Several weight vectors over dense X with more columns than rows: the handover comes
    after NEWTON_RENT x blocks_newton_price evaluations, the Newton steps reach Newton's
    optimum, and the run is monotone; the price follows the preconditioner's flop count
    (the Woodbury form while rows x classes stays small, class by class beyond, dense blocks
    with more rows than columns)."""
    from zbound.models.multinomial import logistic_objective
    from zbound.solvers import quasi_newton as qn

    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 400)) * np.logspace(-1, 1, 400)    # raw units: L-BFGS slow
    y = np.arange(40) % 3
    model = logistic_objective(X, y, 3, np.full(3 * 401, 0.01), None, 0.0,
                               fit_intercept=True)
    switch = qn.LBFGSNewton()._newton_after(model)
    assert switch == int(np.ceil(qn.NEWTON_RENT * qn.blocks_newton_price(40, 401, 3)))
    ref = minimize(model, np.zeros(model.n_params), method="newton-bound", tol=1e-10)
    res = minimize(model, np.zeros(model.n_params), method="lbfgs-newton", tol=1e-8,
                   max_iter=5000)
    assert res.converged and res.info["newton_iterations"] >= 1
    assert res.trace.n_evals[-1] > switch
    assert res.fun == pytest.approx(ref.fun, rel=1e-7)
    _assert_monotone(res)
    # the price grows with the preconditioner's work against a gradient's
    assert qn.blocks_newton_price(63, 2309, 4) < qn.blocks_newton_price(200, 2001, 5) < \
        qn.blocks_newton_price(1000, 2001, 4)
    assert qn.blocks_newton_price(5000, 101, 10) < qn.blocks_newton_price(5000, 401, 10)


def test_newton_switch_comes_sooner_where_X_streams_from_memory():
    """A Newton step costs about 2 + d / 16 L-BFGS iterations with X in cache, about
    2 + d / 100 with X streamed from memory: a large X hands over after fewer evaluations,
    and the solver prices its own model's X."""
    from zbound.solvers import quasi_newton as qn

    big = qn.NEWTON_CACHE_BYTES + 1
    for d in (5, 31, 109, 401):
        assert qn.newton_price(d, big) < qn.newton_price(d) == 2.0 + d / 16.0
        assert qn.newton_switch(d, big) <= qn.newton_switch(d)
        assert qn.newton_switch(d) == int(np.ceil(qn.NEWTON_RENT * qn.newton_price(d)))
    assert qn.newton_price(31, qn.NEWTON_CACHE_BYTES) == qn.newton_price(31)  # the boundary
    model = _binary(300, 20, sep=20.0, C=100.0)
    solver = qn.LBFGSNewton()
    assert solver._newton_after(model) == qn.newton_switch(21, 300 * 20 * 8)
    assert solver._newton_after(model) == qn.newton_switch(21)              # in cache
    rows = qn.NEWTON_CACHE_BYTES // (20 * 8) + 1000                         # streamed
    large = _binary(rows, 20, sep=1.0)
    assert solver._newton_after(large) == qn.newton_switch(21, rows * 20 * 8) < \
        qn.newton_switch(21)


def test_newton_after_counts_evaluations_and_needs_a_hessian():
    model = _binary(500, 8, sep=3.0, C=1e4)
    res = minimize(model, np.zeros(9), method="lbfgs-bound", newton_after=3, tol=1e-10)
    assert res.converged and res.info["newton_iterations"] >= 1
    assert res.info["unit_steps"] + res.info["initial_steps"] + \
        res.info["interpolated_steps"] + res.info["bound_steps"] <= 3

    class NoHessian:
        def __init__(self, m):
            self.m, self.n_params = m, m.n_params

        def value(self, x):
            return self.m.value(x)

        def value_and_grad(self, x):
            return self.m.value_and_grad(x)

        def majorizer(self, x, order="descending"):
            return self.m.majorizer(x, order)

    with pytest.raises(ValueError, match="value_grad_hessian"):
        minimize(NoHessian(model), np.zeros(9), method="lbfgs-bound", newton_after=3)
    auto = minimize(NoHessian(model), np.zeros(9), method="lbfgs-newton", tol=1e-8)
    assert auto.converged and "newton_iterations" not in auto.info


def test_estimator_hands_a_crawling_preconditioned_tail_over_to_newton():
    """Raw digits (pixel values 0-16, uncentered) at C = 1000: preconditioned L-BFGS crawled
    to max_iter = 1000 without converging; the estimator's "lbfgs-precond" now hands over to
    Newton steps after ``precond_tail_switch`` evaluations and converges, monotone, to the
    objective Newton alone reaches. Two classes and sparse X get no such handover."""
    import scipy.sparse as sp
    from sklearn.datasets import load_digits

    from zbound import BoundLogisticRegression
    from zbound.models.multinomial import logistic_objective
    from zbound.solvers import quasi_newton as qn

    X, y = load_digits(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # no ConvergenceWarning
        est = BoundLogisticRegression(C=1000.0).fit(X, y)
    res = est.solver_result_
    assert res.method == "lbfgs-precond" and res.converged
    assert res.info["newton_iterations"] >= 1
    switch = int(np.ceil(qn.NEWTON_RENT * qn.blocks_newton_price(X.shape[0], 65, 10)))
    assert qn.PRECOND_TAIL_EVALS > switch          # the floor decides here
    assert res.trace.n_evals[-1] > qn.PRECOND_TAIL_EVALS
    _assert_monotone(res)
    newton = BoundLogisticRegression(C=1000.0, solver="newton-bound", tol=1e-10).fit(X, y)
    assert newton.objective_ <= est.objective_ <= newton.objective_ * 1.05
    pen = np.full(2 * 65, 1.0)
    binary = logistic_objective(X, (y > 4).astype(np.intp), 2, pen[:65], None, 0.0,
                                fit_intercept=True)
    assert qn.precond_tail_switch(binary) is None
    multi = logistic_objective(X, y, 10, np.full(10 * 65, 1.0), None, 0.0, fit_intercept=True)
    assert qn.precond_tail_switch(multi) == qn.PRECOND_TAIL_EVALS
    sparse = logistic_objective(sp.csr_matrix(X), y, 10, np.full(10 * 65, 1.0), None, 0.0,
                                fit_intercept=True)
    assert qn.precond_tail_switch(sparse) is None
