"""L-BFGS with float32 evaluations first (``evaluation="mixed"``): every stop and every
reported number is float64's; the same optimum as in float64 (to the accuracy the stopping
rules imply); the float64 phase monotone;
float32 failures (overflow, lost progress) hand over to float64 without warnings; the Newton
finish; the automatic choice."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from _tolerance import objective_gap
from zbound.models.multinomial import logistic_objective
from zbound.solvers import DEFAULT_METHOD, choose_method, minimize
from zbound.solvers.quasi_newton import LBFGSBound

pytestmark = pytest.mark.numerics


def _problem(seed=0, n_classes=4, t=3000, dx=12, fit_intercept=True, sparse=False,
             weights=False, C=1.0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, dx)) * rng.uniform(0.3, 3.0, dx) * scale
    W = rng.standard_normal((n_classes, dx))
    y = np.argmax(X @ W.T / scale + rng.gumbel(size=(t, n_classes)), axis=1)
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    sw = rng.uniform(0.0, 2.0, t) if weights else None
    k = 1 if n_classes == 2 else n_classes
    d = dx + fit_intercept
    pen = np.full((k, d), 1.0 / C)
    if fit_intercept:
        pen[:, -1] = 0.0
    center = t / k**2 if (k > 1 and fit_intercept) else 0.0
    return logistic_objective(X, y, n_classes, pen.ravel(), sw, center,
                              fit_intercept=fit_intercept)


def _assert_float64_result(model, res, tol):
    """fun and jac are float64's at x, and a STATIONARY stop holds in float64."""
    f, g = model.value_and_grad(res.x)
    assert res.fun == pytest.approx(f, rel=1e-13, abs=1e-13)
    if res.status.name == "STATIONARY":
        np.testing.assert_allclose(res.jac, g, rtol=1e-10, atol=1e-12 * np.abs(g).max())
        assert np.abs(g).max() <= tol * max(1.0, abs(f))


CASES = [(2, True, False, False), (2, False, True, True), (4, True, False, True),
         (4, False, True, False), (7, True, False, False)]


@pytest.mark.parametrize("n_classes,fit_intercept,sparse,weights", CASES)
@pytest.mark.parametrize("finish,evaluation", [("lbfgs", "mixed"), ("newton", "mixed"),
                                               ("lbfgs", "mixed-lean")])
def test_mixed_reaches_the_float64_optimum_and_reports_float64(n_classes, fit_intercept,
                                                               sparse, weights, finish,
                                                               evaluation):
    model = _problem(n_classes=n_classes, fit_intercept=fit_intercept, sparse=sparse,
                     weights=weights)
    x0 = np.zeros(model.n_params)
    ref = minimize(model, x0, method="lbfgs-precond", evaluation="double", tol=1e-10,
                   max_iter=5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(model, x0, method="lbfgs-precond", evaluation=evaluation,
                       finish=finish, tol=1e-10, max_iter=5000)
    assert res.converged, res.message
    assert res.info["single_iterations"] >= 3
    if finish == "newton":
        assert "newton_iterations" in res.info
    _assert_float64_result(model, res, 1e-10)
    # Both runs stop by the float64 rules (STATIONARY or FTOL), so how far each is from the
    # optimum follows from the gradient it stopped at (tests/_tolerance.py, rule 3): with mu
    # the smallest Hessian eigenvalue at the optimum, f - f* <= |g|^2 / (2 mu) and
    # |x - x*| <= |g| / mu.
    gn = max(np.linalg.norm(model.value_and_grad(z)[1]) for z in (res.x, ref.x))
    mu = float(np.linalg.eigvalsh(model.hessian(ref.x).to_dense())[0])
    assert abs(res.fun - ref.fun) <= objective_gap(gn, mu, ref.fun, ops=model.n_params)
    np.testing.assert_allclose(res.x, ref.x, rtol=0, atol=2.0 * gn / mu)
    # the float64 phase (from the iterate that left float32 on) is monotone
    f = res.trace.objective[res.info["single_iterations"]:]
    assert np.all(np.diff(f) <= 1e-12 * np.maximum(1.0, np.abs(f[:-1])))


@pytest.mark.parametrize("rel", [1e-3, 1e-8])
@pytest.mark.parametrize("n_classes", [2, 5])
def test_mixed_target_is_decided_in_float64(rel, n_classes):
    model = _problem(seed=1, n_classes=n_classes)
    x0 = np.zeros(model.n_params)
    f_star = minimize(model, x0, method="newton", tol=1e-13).fun
    target = f_star + rel * abs(f_star)
    res = minimize(model, x0, method="lbfgs-precond", evaluation="mixed", target=target,
                   tol=0.0, max_iter=5000)
    assert res.status.name == "TARGET" and res.target_reached
    assert model.value(res.x) <= target
    assert res.fun == pytest.approx(model.value(res.x), rel=1e-13)
    assert res.info["single_iterations"] >= 1


def test_a_callback_stop_in_float32_reports_float64():
    model = _problem(seed=2)
    seen = []

    def stop(x, f):
        seen.append(f)
        return len(seen) >= 2

    res = minimize(model, np.zeros(model.n_params), method="lbfgs-precond",
                   evaluation="mixed", callback=stop)
    assert res.status.name == "CALLBACK" and not res.converged
    _assert_float64_result(model, res, 0.0)
    assert res.info["single_iterations"] == 2


def test_max_iter_in_float32_reports_float64_and_does_not_converge():
    model = _problem(seed=3)
    res = minimize(model, np.zeros(model.n_params), method="lbfgs-precond",
                   evaluation="mixed", max_iter=3)
    assert res.status.name == "MAX_ITER" and not res.converged and res.nit == 3
    _assert_float64_result(model, res, 0.0)


class _BrokenSingle:
    """A model whose float32 form returns nan (or inf) from some point on."""

    def __init__(self, model, after, bad=np.nan):
        self.model, self.after, self.bad, self.calls = model, after, bad, 0
        self.n_params = model.n_params

    def __getattr__(self, name):
        return getattr(self.model, name)

    def single_precision(self):
        outer = self
        single = self.model.single_precision()

        class Fast:
            n_params = single.n_params

            def value(self, x):
                return self.value_and_grad(x)[0]

            def value_and_grad(self, x):
                outer.calls += 1
                f, g = single.value_and_grad(x)
                if outer.calls > outer.after:
                    return outer.bad, np.full_like(g, outer.bad)
                return f, g

        return Fast()


@pytest.mark.parametrize("after", [0, 4])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_float32_failures_hand_over_to_float64(after, bad):
    model = _problem(seed=4)
    x0 = np.zeros(model.n_params)
    ref = minimize(model, x0, method="lbfgs-precond", evaluation="double", tol=1e-9)
    broken = _BrokenSingle(model, after, bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(broken, x0, method="lbfgs-precond", evaluation="mixed", tol=1e-9,
                       max_iter=2000)
    assert res.converged, res.message
    _assert_float64_result(model, res, 1e-9)
    assert res.fun == pytest.approx(ref.fun, rel=1e-10)
    assert res.info.get("single_iterations", 0) <= after


def test_extreme_start_runs_without_warnings():
    """A start with scores near float32's limit (3.4e38): the float32 iterations overflow
    somewhere; the run goes on in float64 with no overflow warning and a finite result."""
    model = _problem(seed=5, t=500)
    x0 = np.full(model.n_params, 1e37)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(model, x0, method="lbfgs-precond", evaluation="mixed", max_iter=30,
                       tol=0.0)
        ref = minimize(model, x0, method="lbfgs-precond", evaluation="double", max_iter=30,
                       tol=0.0)
    assert np.isfinite(res.fun) and np.isfinite(res.x).all()
    assert res.fun < 1e-6 * model.value(x0) and ref.fun < 1e-6 * model.value(x0)
    _assert_float64_result(model, res, 0.0)


def test_mixed_needs_a_float32_form_and_valid_options():
    from _solver_problems import loglinear_problem

    model = loglinear_problem(0)
    with pytest.raises(ValueError, match="float32 form"):
        minimize(model, np.zeros(model.n_params), method="lbfgs-precond", evaluation="mixed")
    res = minimize(model, np.zeros(model.n_params), method="lbfgs-precond",
                   evaluation="auto")
    assert "single_iterations" not in res.info
    with pytest.raises(ValueError, match="evaluation"):
        LBFGSBound(evaluation="half")
    with pytest.raises(ValueError, match="finish"):
        LBFGSBound(finish="bfgs")


def test_mixed_falls_back_with_a_warning_when_x_is_too_large_for_float32():
    model = _problem(seed=6, t=400, scale=1e28)
    with pytest.warns(RuntimeWarning, match="float32"):
        res = minimize(model, np.zeros(model.n_params), method="lbfgs-precond",
                       evaluation="mixed", max_iter=5)
    assert "single_iterations" not in res.info


def test_evaluation_auto_by_size():
    small = _problem(t=200, dx=4)
    res = minimize(small, np.zeros(small.n_params), method="lbfgs-precond", max_iter=3)
    assert "single_iterations" not in res.info       # 200 rows x 20 parameters: float64
    big = _problem(n_classes=10, t=8000, dx=12)      # 8000 x 130 >= 10^6
    res = minimize(big, np.zeros(big.n_params), method="lbfgs-precond", max_iter=3)
    assert res.info["single_iterations"] == 3


def test_choose_method_for_binary_problems():
    """Binary: "lbfgs-precond" (float32 L-BFGS, then Newton) once float32 evaluation applies;
    in float64 from 10^6 rows x parameters, or on sparse X, newton-bound; smaller dense
    problems "lbfgs-newton" (L-BFGS, then Newton), the smallest newton-bound."""
    big = _problem(n_classes=2, t=100_000, dx=12)     # 100 000 x 13 >= 10^6
    assert choose_method(big) == "lbfgs-precond"
    assert choose_method(big, evaluation="double") == "lbfgs-newton"
    rng = np.random.default_rng(3)
    X = rng.standard_normal((100_000, 12))
    y = (X.sum(axis=1) + rng.logistic(size=100_000) > 0).astype(np.intp)
    X[:, 0] *= 1e4                                    # one column in other units
    raw_units = logistic_objective(X, y, 2, np.r_[np.ones(12), 0.0], None, 0.0,
                                   fit_intercept=True)
    assert choose_method(raw_units, evaluation="double") == DEFAULT_METHOD
    # fewer rows than columns: L-BFGS first in any units (a Newton step there is a truncated
    # CG solve behind a Woodbury preconditioner)
    W = rng.standard_normal((400, 3000)) * np.logspace(-2, 2, 3000)
    wide = logistic_objective(W, (W[:, -1] > 0).astype(np.intp), 2, np.r_[np.ones(3000), 0.0],
                              None, 0.0, fit_intercept=True)
    assert choose_method(wide, evaluation="double") == "lbfgs-newton"
    assert choose_method(_problem(n_classes=2, t=20_000, dx=12)) == "lbfgs-newton"
    assert choose_method(_problem(n_classes=2, t=20_000, dx=12),
                         evaluation="double") == "lbfgs-newton"
    # a Hessian of at most NEWTON_FIRST_WORK (5000 x 13^2 = 845 000): Newton from the start
    assert choose_method(_problem(n_classes=2, t=5000, dx=12)) == DEFAULT_METHOD
    assert choose_method(_problem(n_classes=2, t=6000, dx=12)) == "lbfgs-newton"
    assert choose_method(_problem(n_classes=2, t=5000, dx=12, sparse=True)) == DEFAULT_METHOD
    assert choose_method(_problem(n_classes=3, t=500, dx=4)) == DEFAULT_METHOD
    res = minimize(big, np.zeros(big.n_params), tol=1e-9)
    assert res.method == "lbfgs-precond" and res.converged
    assert res.info["single_iterations"] >= 1 and "newton_iterations" in res.info
    _assert_float64_result(big, res, 1e-9)


def test_compact_memory_regrad_matches_the_two_loop_recursion():
    """Pairs kept, the gradient replaced (re-evaluated): the direction is the two-loop
    recursion's with the new gradient."""
    from zbound.solvers.quasi_newton import CompactMemory, two_loop

    rng = np.random.default_rng(7)
    p, m = 25, 4
    A = rng.standard_normal((p, p))
    A = A @ A.T + p * np.eye(p)
    Binv = np.linalg.inv(np.diag(rng.uniform(1.0, 5.0, p)))
    h0 = lambda v: Binv @ v                                    # noqa: E731
    mem = CompactMemory(p, m, np.float64, h0)
    x = rng.standard_normal(p)
    g = A @ x
    mem.start(g)
    S, Y = [], []
    for _ in range(7):
        x_new = x + 0.3 * rng.standard_normal(p)
        g_new = A @ x_new
        mem.push(x_new - x, g_new - g, g_new)
        S, Y = (S + [x_new - x])[-m:], (Y + [g_new - g])[-m:]
        x, g = x_new, g_new
    g_other = g + 1e-3 * rng.standard_normal(p)                # a float32-like re-evaluation
    mem.regrad(g_other)
    rho = [1.0 / (s @ y) for s, y in zip(S, Y)]
    want = two_loop(g_other, S, Y, rho, h0, (S[-1] @ Y[-1]) / (Y[-1] @ h0(Y[-1])))
    np.testing.assert_allclose(mem.direction(), want, rtol=0, atol=1e-10 * np.abs(want).max())
    # and the next pair, with y measured from the new gradient, keeps it exact
    x_new = x + 0.3 * rng.standard_normal(p)
    g_new = A @ x_new
    mem.push(x_new - x, g_new - g_other, g_new)
    S, Y = (S + [x_new - x])[-m:], (Y + [g_new - g_other])[-m:]
    rho = [1.0 / (s @ y) for s, y in zip(S, Y)]
    want = two_loop(g_new, S, Y, rho, h0, (S[-1] @ Y[-1]) / (Y[-1] @ h0(Y[-1])))
    np.testing.assert_allclose(mem.direction(), want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_estimator_precision_mixed():
    from zbound import BoundLogisticRegression

    rng = np.random.default_rng(8)
    X = rng.standard_normal((20000, 60))
    y = np.argmax(X[:, :4] @ rng.standard_normal((4, 3)) + rng.gumbel(size=(20000, 3)), axis=1)
    double = BoundLogisticRegression(tol=1e-8, precision="double").fit(X, y)
    mixed = BoundLogisticRegression(tol=1e-8, precision="mixed").fit(X, y)
    assert mixed.solver_result_.method == "lbfgs-precond"
    assert mixed.solver_result_.info["single_iterations"] >= 1
    assert "single_iterations" not in double.solver_result_.info
    assert mixed.objective_ == pytest.approx(double.objective_, rel=1e-9)
    np.testing.assert_allclose(mixed.coef_, double.coef_, atol=1e-4)
    yb = (y == 0).astype(int)
    assert BoundLogisticRegression(precision="double").fit(X, yb).solver_result_.method == \
        "lbfgs-newton"                               # binary dense: L-BFGS, then Newton
    fit = BoundLogisticRegression(precision="mixed").fit(X, yb)
    assert fit.solver_result_.method == "lbfgs-precond"
    lean = BoundLogisticRegression(tol=1e-8, precision="mixed-lean").fit(X, y)
    assert lean.solver_result_.info["single_iterations"] >= 1
    assert lean.objective_ == pytest.approx(double.objective_, rel=1e-9)
    assert BoundLogisticRegression(precision="mixed-lean").fit(X, yb).solver_result_.method \
        == "lbfgs-newton"                            # binary: L-BFGS, then Newton
    with pytest.raises(ValueError, match="precision"):
        BoundLogisticRegression(precision="half").fit(X, y)
    with pytest.raises(ValueError, match="precision='mixed' needs"):
        BoundLogisticRegression(precision="mixed", solver="newton-bound").fit(X, y)
    named = BoundLogisticRegression(tol=1e-8, precision="mixed", solver="lbfgs-precond").fit(X, y)
    assert named.solver_result_.method == "lbfgs-precond"   # the L-BFGS solver named
    assert named.solver_result_.info["single_iterations"] >= 1
    assert named.objective_ == pytest.approx(double.objective_, rel=1e-9)


def test_estimator_precision_auto():
    """The default, precision="auto": float32 from row blocks (no copy of X) where the fit runs
    lbfgs-precond on at least 10^6 rows x parameters, float64 below that, for binary data
    (lbfgs-newton) and for a named solver without a float32 phase; always float64's optimum."""
    from zbound import BoundLogisticRegression
    from zbound.solvers.policy import _auto_evaluation
    from zbound.solvers.quasi_newton import AUTO_MIN_WORK

    rng = np.random.default_rng(9)
    X = rng.standard_normal((20000, 60))
    y = np.argmax(X[:, :4] @ rng.standard_normal((4, 3)) + rng.gumbel(size=(20000, 3)), axis=1)
    assert BoundLogisticRegression().precision == "auto"
    auto = BoundLogisticRegression(tol=1e-8).fit(X, y)
    double = BoundLogisticRegression(tol=1e-8, precision="double").fit(X, y)
    assert 20000 * 3 * 61 >= AUTO_MIN_WORK
    assert auto.solver_result_.method == "lbfgs-precond"
    assert auto.solver_result_.info["single_iterations"] >= 1
    assert auto.objective_ == pytest.approx(double.objective_, rel=1e-9)
    np.testing.assert_allclose(auto.coef_, double.coef_, atol=1e-4)
    small = BoundLogisticRegression(tol=1e-8).fit(X[:2000], y[:2000])     # 3.7e5 < 1e6
    assert "single_iterations" not in small.solver_result_.info
    yb = (y == 0).astype(int)
    binary = BoundLogisticRegression().fit(X, yb).solver_result_
    assert binary.method == "lbfgs-newton" and "single_iterations" not in binary.info
    named = BoundLogisticRegression(solver="newton-bound").fit(X, y)      # no error
    assert named.solver_result_.method == "newton-bound"

    # digits' shape: enough work, but X in float32 (438 KB) is less than four 512 KB blocks
    from zbound.models.multinomial import logistic_objective
    digits = logistic_objective(np.ones((1797, 61)), np.arange(1797) % 10, 10,
                                np.ones(10 * 62), None, 0.0, fit_intercept=True)
    assert 1797 * digits.n_params >= AUTO_MIN_WORK
    assert _auto_evaluation(digits) == "double"

    # sparse X: float64 (index-bound products; converting CSR blocks saved nothing)
    import scipy.sparse as sp
    Xs = sp.random(20000, 200, density=0.05, format="csr", random_state=0)
    ys = np.arange(20000) % 3
    sparse = BoundLogisticRegression(solver="lbfgs-precond").fit(Xs, ys)
    assert "single_iterations" not in sparse.solver_result_.info
    # its row blocks, where asked for, hold the stored entries of ~512 KB, not d columns
    from zbound.models.loss import SingleSoftmaxLoss, SoftmaxLoss, single_block_bytes
    loss = SoftmaxLoss(Xs, ys, 3)
    lean = SingleSoftmaxLoss(loss, None)
    assert lean.block_rows == int(single_block_bytes(loss) // (4 * (Xs.nnz / 20000)))
    assert lean.block_rows > single_block_bytes(loss) // (4 * 200)

    class NoSingle:                                     # a model without a float32 form
        n_params = 10**9
    assert _auto_evaluation(NoSingle()) == "double"
