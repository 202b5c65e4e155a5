"""Sample-space Newton and bound majorization (zbound.solvers.sample_space) for d >> t."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from zbound.models.loss import SoftmaxLoss
from zbound.models.multinomial import MultinomialLogistic, logistic_objective
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.solvers import LinearConstraints, minimize
from zbound.solvers.sample_space import _factor

METHODS = ("sample-newton", "sample-bound")


def problem(seed, t=24, d=150, n=3, sparse=False, reference=False, intercept=False,
            weights=False, reg=0.8, scale=1.0):
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(t, d, density=0.08, random_state=seed, format="csr") * (3.0 * scale)
    else:
        X = scale * rng.standard_normal((t, d))
    y = rng.integers(0, n, t)
    y[:n] = np.arange(n)
    sw = None
    if weights:
        sw = rng.uniform(0.0, 2.0, t)
        sw[::5] = 0.0                               # zero weights
    loss = SoftmaxLoss(X, y, n, sample_weight=sw, reference_class=reference,
                       fit_intercept=intercept)
    model = Objective(loss, L2Penalty(reg))
    x0 = 0.3 * rng.standard_normal(model.n_params)    # not in the span of the data
    return model, x0


CASES = [dict(n=2), dict(n=3), dict(n=4, weights=True), dict(n=3, reference=True),
         dict(n=2, reference=True, intercept=True), dict(n=3, intercept=True, weights=True),
         dict(n=2, sparse=True), dict(n=4, sparse=True, intercept=True, weights=True),
         dict(n=3, sparse=True, reference=True)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
@pytest.mark.parametrize("inner", ["cholesky", "cg"])
def test_same_optimum_as_lbfgs(case, inner):
    model, x0 = problem(1, **case)
    assert model.n_params > 3 * 24                    # d >> t
    lb = minimize(model, x0, method="lbfgs", tol=1e-11, ftol=0.0, max_iter=20000)
    assert lb.converged
    for method in METHODS:
        ftol = 0.0 if method == "sample-newton" else 1e-13
        res = minimize(model, x0, method=method, tol=1e-9, ftol=ftol, inner=inner,
                       max_iter=5000)
        assert res.converged, (method, res.message)
        assert res.fun == pytest.approx(model.value(res.x), rel=1e-12, abs=1e-12)
        assert res.fun <= lb.fun + 1e-9 * max(1.0, abs(lb.fun))
        _, g = model.value_and_grad(res.x)
        np.testing.assert_allclose(res.jac, g, atol=1e-9 * max(1.0, abs(res.fun)))
        if method == "sample-newton":       # the bound's tail is linear: it stops on ftol
            assert np.abs(g).max() <= 1e-9 * max(1.0, abs(res.fun))
        np.testing.assert_allclose(res.x, lb.x, atol=1e-5 if method == "sample-newton" else 1e-4)


@pytest.mark.parametrize("seed", range(6))
def test_bound_version_decreases_the_objective_every_iteration(seed):
    rng = np.random.default_rng(100 + seed)
    case = dict(n=int(rng.integers(2, 6)), sparse=bool(seed % 2), reference=bool(seed % 3 == 0),
                intercept=bool(seed % 4 == 1), weights=bool(seed % 2 == 0),
                reg=float(10.0 ** rng.uniform(-2, 1)), scale=float(10.0 ** rng.uniform(-1, 1)))
    model, x0 = problem(seed, **case)
    for inner in ("cholesky", "cg"):
        res = minimize(model, x0, method="sample-bound", tol=1e-8, inner=inner, max_iter=300)
        obj = np.asarray(res.trace.objective)
        assert obj.size >= 2
        assert np.all(np.diff(obj) <= 1e-13 * np.maximum(1.0, np.abs(obj[:-1]))), inner
        assert obj[-1] < obj[0]


def test_one_step_equals_the_library_bound_and_newton_steps():
    """The Woodbury step in sample space is exactly Alg. 2's step (full Alg. 1 curvature,
    "bound") and Newton's step ("newton") from the same start, which is not in the span."""
    for case in (dict(n=3), dict(n=2, reference=True), dict(n=4, intercept=True, weights=True)):
        model, x0 = problem(7, d=60, **case)
        for ours, theirs in (("sample-bound", "bound"), ("sample-newton", "newton")):
            a = minimize(model, x0, method=ours, max_iter=1, tol=0.0)
            b = minimize(model, x0, method=theirs, max_iter=1, tol=0.0, inner="cholesky")
            assert a.nit == b.nit == 1
            np.testing.assert_allclose(a.x, b.x, rtol=1e-8, atol=1e-10)
            assert a.fun == pytest.approx(b.fun, rel=1e-11)


def test_iterates_after_the_first_step_lie_in_the_span_of_the_data():
    model, x0 = problem(3, n=3)
    X = model.loss.X
    res = minimize(model, x0, method="sample-newton", max_iter=2, tol=0.0)
    W = res.x.reshape(3, -1)
    # the part of every class vector orthogonal to the rows of X is zero
    Q, _ = np.linalg.qr(X.T)
    resid = W.T - Q @ (Q.T @ W.T)
    assert np.abs(resid).max() < 1e-10
    assert np.abs(W.sum(axis=0)).max() < 1e-10      # no reference class: classes sum to 0


def test_multinomial_logistic_and_near_overflow_scores_are_fine():
    rng = np.random.default_rng(5)
    X = 300.0 * rng.standard_normal((20, 120))     # scores of order 1e4 at the start
    y = np.arange(20) % 4
    model = MultinomialLogistic(X, y, 4, reg=0.01)
    x0 = rng.standard_normal(model.n_params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in METHODS:
            res = minimize(model, x0, method=method, tol=1e-9, max_iter=500)
            assert np.isfinite(res.fun) and np.isfinite(res.x).all()
            assert res.fun < model.value(x0)
            assert np.all(np.diff(res.trace.objective) <= 1e-12 * abs(res.trace.objective[0]))


def test_factor_reproduces_the_blocks_and_projects_out_ones():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(4), size=10)
    H = -P[:, :, None] * P[:, None, :]
    H[:, np.arange(4), np.arange(4)] += P
    for complete in (True, False):
        F = _factor(H, complete)
        assert F.shape == (10, 4, 3 if complete else 4)
        np.testing.assert_allclose(F @ F.transpose(0, 2, 1), H, atol=1e-14)


def test_target_stops_at_once_and_counts_evaluations():
    model, x0 = problem(2)
    f0 = model.value(x0)
    res = minimize(model, x0, method="sample-newton", target=f0 + 1.0)
    assert res.target_reached and res.nit == 0
    res = minimize(model, x0, method="sample-newton", tol=1e-9)
    assert res.n_evals > 0 and res.counts["hessian"] >= res.nit


def test_bad_models_and_options_are_rejected():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 30))
    y = np.arange(10) % 3
    x0 = np.zeros(90)
    for method in METHODS:
        with pytest.raises(ValueError, match="reg > 0|L2 penalty"):
            minimize(MultinomialLogistic(X, y, 3, reg=0.0), x0, method=method)
        pen = np.ones(90)
        pen[::30] = 0.0
        with pytest.raises(ValueError, match="per-coordinate"):
            minimize(logistic_objective(X, y, 3, pen), x0, method=method)
        with pytest.raises(TypeError, match="SoftmaxData capability"):
            from _solver_problems import logistic_problem

            other = logistic_problem(10, reg=0.5)
            if isinstance(getattr(other, "loss", None), SoftmaxLoss):
                other = _NotSoftmax(other)
            minimize(other, np.zeros(other.n_params), method=method)
        model = MultinomialLogistic(X, y, 3, reg=1.0)
        with pytest.raises(ValueError, match="does not support constraints"):
            minimize(model, x0, method=method,
                     constraints=LinearConstraints(lb=-np.ones(90), ub=np.ones(90)))
        with pytest.raises(ValueError, match="backtracks"):
            minimize(model, x0, method=method, backtracks=-1)
        with pytest.raises(ValueError, match="cg_maxiter"):
            minimize(model, x0, method=method, cg_maxiter=0)
        with pytest.raises(TypeError, match="unexpected options"):
            minimize(model, x0, method=method, rank=3)
        with pytest.raises(ValueError, match="non-finite"):
            minimize(model, np.full(90, np.nan), method=method)


class _NotSoftmax:
    """A model that follows the protocol but is not a softmax regression."""

    def __init__(self, model):
        self._m = model
        self.n_params = model.n_params
        self.value = model.value
        self.value_and_grad = model.value_and_grad
