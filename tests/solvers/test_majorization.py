"""Alg. 2 and its accelerations: monotone, same optimum as the baselines, stop rules."""

from __future__ import annotations

import numpy as np
import pytest
from _solver_problems import logistic_problem, loglinear_problem, reference_optimum

from zbound.models.base import SoftmaxData
from zbound.solvers import METHODS, minimize

MM_METHODS = ("bound", "squarem", "newton-bound")
# stochastic methods (epochs of mini-batches) are checked in test_stochastic.py
BATCH_METHODS = sorted(k for k, v in METHODS.items()
                       if not (v.stochastic or v.step_size or v.proximal)
                       and v.requires in (None, SoftmaxData))


def _assert_monotone(res):
    f = res.trace.objective
    assert f.shape[0] == res.nit + 1
    inc = np.diff(f)
    assert np.all(inc <= 1e-12 * np.maximum(1.0, np.abs(f[:-1]))), (res.method, inc.max())


@pytest.mark.parametrize("method", MM_METHODS)
@pytest.mark.parametrize("seed,reg,separation", [(0, 1.0, 1.0), (1, 1e-3, 3.0), (2, 1e-6, 6.0),
                                                 (3, 10.0, 0.5)])
def test_majorization_variants_are_monotone(method, seed, reg, separation):
    model = logistic_problem(seed, reg=reg, separation=separation)
    x0 = np.random.default_rng(seed).standard_normal(model.n_params)  # not near the optimum
    res = minimize(model, x0, method=method, max_iter=150)
    assert res.nit > 0
    _assert_monotone(res)
    assert res.fun <= model.value(x0)
    np.testing.assert_allclose(res.fun, model.value(res.x), rtol=1e-12)


@pytest.mark.parametrize("method", MM_METHODS)
def test_monotone_on_loglinear_model_with_zero_prior_weights(method):
    model = loglinear_problem(4, reg=1e-3)
    x0 = 3.0 * np.ones(model.n_params)
    res = minimize(model, x0, method=method, max_iter=200)
    _assert_monotone(res)
    _, f_ref = reference_optimum(model, np.zeros(model.n_params))
    np.testing.assert_allclose(res.fun, f_ref, rtol=1e-6)


@pytest.mark.parametrize("fallback", ["direction", "step"])
def test_newton_bound_falls_back_to_the_bound_and_stays_monotone(fallback):
    # Far from the optimum of a nearly separable, unregularized problem (singular Hessian: the
    # softmax is invariant to a shift shared by all classes) the full Newton step overshoots;
    # the bound must take over without any increase.
    model = logistic_problem(5, t=40, reg=0.0, separation=8.0)
    x0 = 20.0 * np.random.default_rng(0).standard_normal(model.n_params)
    res = minimize(model, x0, method="newton-bound", max_iter=500, fallback=fallback,
                   backtracks=0)
    _assert_monotone(res)
    assert res.converged
    assert res.info["bound_steps"] >= 1
    assert res.info["newton_steps"] >= 1
    ref = minimize(model, x0, method="newton", tol=1e-12)
    np.testing.assert_allclose(res.fun, ref.fun, rtol=1e-9)


def test_bound_line_search_along_newton_beats_plain_bound_step_from_a_poor_start():
    model = logistic_problem(3, t=60, reg=0.0, separation=8.0)
    x0 = 20.0 * np.random.default_rng(3).standard_normal(model.n_params)
    its = {fb: minimize(model, x0, method="newton-bound", max_iter=1000, fallback=fb,
                        backtracks=0).nit
           for fb in ("direction", "step")}
    assert its["direction"] < its["step"]


@pytest.mark.parametrize("seed", range(4))
def test_backtracking_before_the_bound_saves_iterations_on_near_separable_data(seed):
    """A rejected full Newton step first backtracks with values only; the bound stays the
    last safeguard. Monotone either way, and fewer iterations with backtracking."""
    model = logistic_problem(seed, t=80, reg=1e-4, separation=8.0)
    x0 = 20.0 * np.random.default_rng(seed).standard_normal(model.n_params)
    runs = {k: minimize(model, x0, method="newton-bound", max_iter=1000, tol=1e-9,
                        backtracks=k) for k in (0, 4)}
    for res in runs.values():
        _assert_monotone(res)
        assert res.converged
    assert runs[4].info["backtracked_newton_steps"] >= 1
    assert runs[4].info["bound_steps"] < runs[0].info["bound_steps"]
    assert runs[4].nit <= runs[0].nit
    np.testing.assert_allclose(runs[4].fun, runs[0].fun, rtol=1e-7)


@pytest.mark.parametrize("method", BATCH_METHODS)
@pytest.mark.parametrize("seed,reg", [(6, 1.0), (7, 0.05)])
def test_every_method_reaches_the_reference_optimum(method, seed, reg):
    model = logistic_problem(seed, reg=reg)
    x0 = 1e-3 * np.random.default_rng(seed).standard_normal(model.n_params)
    x_ref, f_ref = reference_optimum(model, x0)
    res = minimize(model, x0, method=method, tol=1e-10, max_iter=20000)
    assert res.converged, res.message
    assert res.method == method
    np.testing.assert_allclose(res.fun, f_ref, rtol=1e-6)
    assert np.linalg.norm(res.x - x_ref) <= 1e-3 * max(1.0, np.linalg.norm(x_ref))


@pytest.mark.parametrize("method", BATCH_METHODS)
def test_target_stops_every_method_at_the_same_level(method):
    model = logistic_problem(8, reg=0.1)
    x0 = np.zeros(model.n_params)
    _, f_ref = reference_optimum(model, x0)
    target = f_ref + 1e-6 * abs(f_ref)
    res = minimize(model, x0, method=method, target=target, max_iter=50000, tol=0.0)
    assert res.target_reached and res.converged
    assert res.fun <= target
    assert res.message == "target objective reached"
    # the trace says when: the last row is the first one at or below the target
    assert res.trace.objective[-1] <= target
    assert np.all(res.trace.objective[:-1] > target)
    assert res.trace.time_to(target) == pytest.approx(res.trace.seconds[-1])
    assert res.trace.evals_to(target) == res.trace.n_evals[-1] <= res.n_evals


@pytest.mark.parametrize("method", MM_METHODS)
def test_cg_inner_solver_matches_cholesky(method):
    model = logistic_problem(9, reg=0.3)
    x0 = np.zeros(model.n_params)
    _, f_ref = reference_optimum(model, x0)
    res = minimize(model, x0, method=method, inner="cg", tol=1e-9, max_iter=5000)
    assert res.converged
    _assert_monotone(res)
    np.testing.assert_allclose(res.fun, f_ref, rtol=1e-8)
    if method == "newton-bound":
        assert res.info["inner"] == "cg" and res.info["cg_products"] > 0


def test_large_problem_uses_truncated_newton_by_default():
    model = logistic_problem(10, t=300, d=40, n=8, reg=1.0)  # 320 parameters > 300
    x0 = np.zeros(model.n_params)
    res = minimize(model, x0, tol=1e-9)
    assert res.info["inner"] == "cg"
    _assert_monotone(res)
    ref = minimize(model, x0, method="newton", inner="cholesky", tol=1e-12)
    np.testing.assert_allclose(res.fun, ref.fun, rtol=1e-9)


def test_descending_order_needs_fewer_bound_steps_than_given_order():
    # Descending alpha order gives a tighter bound than the given order.
    model = logistic_problem(11, t=80, d=4, n=5, reg=0.5, separation=2.0)
    x0 = np.zeros(model.n_params)
    its = {}
    for order in ("descending", "given"):
        res = minimize(model, x0, method="bound", order=order, tol=1e-7, max_iter=5000)
        assert res.converged
        its[order] = res.nit
    assert its["descending"] < its["given"]


def test_squarem_needs_far_fewer_bound_evaluations_than_plain_alg2_on_wine():
    # Measured before the code existed: wine, standardized + bias, C = 10: ~888 plain Alg. 2
    # steps to 1e-6 relative suboptimality against a few dozen SQUAREM cycles.
    from sklearn.datasets import load_wine

    from zbound.models.multinomial import MultinomialLogistic

    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X = np.hstack([X, np.ones((X.shape[0], 1))])
    model = MultinomialLogistic(X, y, reg=1.0 / 10.0)
    x0 = np.zeros(model.n_params)
    _, f_ref = reference_optimum(model, x0)
    target = f_ref + 1e-6 * abs(f_ref)
    plain = minimize(model, x0, method="bound", target=target, max_iter=3000, tol=0.0)
    fast = minimize(model, x0, method="squarem", target=target, max_iter=3000, tol=0.0)
    assert plain.target_reached and fast.target_reached
    assert plain.counts["bound"] > 500
    assert fast.counts["bound"] * 5 < plain.counts["bound"]
    assert fast.info["extrapolations_accepted"] > 0
    _assert_monotone(fast)


def test_callback_can_stop_and_sees_monotone_objectives():
    model = logistic_problem(12, reg=0.01, separation=3.0)
    seen = []

    def cb(x, f):
        seen.append(f)
        return len(seen) >= 3

    res = minimize(model, np.zeros(model.n_params), method="bound", callback=cb)
    assert len(seen) == 3 and res.nit == 3
    assert not res.converged and res.message == "stopped by callback"
    assert seen == sorted(seen, reverse=True)


def test_max_iter_zero_returns_start_and_max_iter_is_reported():
    model = logistic_problem(13, reg=0.01)
    x0 = np.ones(model.n_params)
    res = minimize(model, x0, method="bound", max_iter=0)
    assert res.nit == 0 and not res.converged
    np.testing.assert_array_equal(res.x, x0)
    res = minimize(model, x0, method="bound", max_iter=3, tol=0.0)
    assert res.nit == 3 and not res.converged
    assert "maximum number of iterations" in res.message
    assert res.n_evals == 4 == res.counts["bound"]
    assert len(res.trace) == 4


# -- inner="auto" by shape and the preconditioner policy of truncated Newton -------------------

def _tall_problem(t, d, n, seed=0):
    from zbound.models.multinomial import logistic_objective

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, d))
    W = rng.standard_normal((n, d))
    y = (X @ W.T + rng.gumbel(size=(t, n))).argmax(axis=1)
    k = 1 if n == 2 else n
    pen = np.full((k, d + 1), 1.0)
    pen[:, -1] = 0.0
    center = t / k**2 if k > 1 else 0.0
    return logistic_objective(X, y, n, pen.ravel(), None, center, fit_intercept=True)


def test_auto_inner_runs_cg_on_tall_data_and_agrees_with_cholesky():
    from zbound.solvers import minimize

    model = _tall_problem(12000, 90, 2)          # p = 91 <= 300 but t p >= 2^20
    x0 = np.zeros(model.n_params)
    auto = minimize(model, x0, method="newton-bound", tol=1e-10)
    chol = minimize(model, x0, method="newton-bound", tol=1e-10, inner="cholesky")
    assert auto.converged and chol.converged
    assert auto.info["inner"] == "cg" and chol.info["inner"] == "cholesky"
    assert auto.info["preconditioner_builds"] >= 1
    np.testing.assert_allclose(auto.fun, chol.fun, rtol=1e-12)
    np.testing.assert_allclose(auto.x, chol.x, atol=1e-6)


def test_auto_inner_keeps_cholesky_on_small_data():
    from zbound.solvers import minimize

    model = _tall_problem(300, 10, 3)
    r = minimize(model, np.zeros(model.n_params), method="newton-bound", tol=1e-10)
    assert r.converged and r.info["inner"] == "cholesky" and r.info["cg_products"] == 0


@pytest.mark.parametrize("precond", ["auto", "gram", "blocks", "eigen"])
def test_newton_preconditioners_reach_the_same_optimum(precond):
    from zbound.solvers import minimize

    model = _tall_problem(3000, 40, 8, seed=1)    # p = 328: truncated PCG
    x0 = np.zeros(model.n_params)
    ref = minimize(model, x0, method="newton-bound", tol=1e-11, inner="cholesky")
    r = minimize(model, x0, method="newton-bound", tol=1e-9, precond=precond)
    assert r.converged and r.info["inner"] == "cg"
    np.testing.assert_allclose(r.fun, ref.fun, rtol=1e-12)


def test_auto_precond_takes_the_gram_eigenbasis_for_large_class_blocks(monkeypatch):
    """m b^2 above the blocks' limit (lowered here from 2^20 to keep the test small): the
    eigenbasis form, monotone, same optimum as the exact class blocks."""
    import zbound.bounds.policy as policy
    from zbound.solvers import minimize

    monkeypatch.setattr(policy, "BLOCKS_MAX_ELEMS", 3 * 30 * 30)
    model = _tall_problem(400, 40, 3, seed=2)
    x0 = np.zeros(model.n_params)
    assert policy.eigen_fits(model.hessian(x0))
    assert not policy.eigen_fits(_tall_problem(400, 20, 3).hessian(np.zeros(63)))
    auto = minimize(model, x0, method="newton-bound", tol=1e-9, inner="cg")
    blocks = minimize(model, x0, method="newton-bound", tol=1e-9, inner="cg", precond="blocks")
    assert auto.converged and blocks.converged
    assert np.all(np.diff(auto.trace.objective) <= 1e-12 * abs(auto.fun))
    np.testing.assert_allclose(auto.fun, blocks.fun, rtol=1e-10)


def test_newton_precond_option_is_checked():
    from zbound.solvers import NewtonBound

    with pytest.raises(ValueError, match="precond"):
        NewtonBound(precond="cholesky")


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_wide_multiclass_newton_preconditions_with_the_whole_hessian(fit_intercept, C):
    """Fewer rows than features (SRBCT's shape): precond="auto" inverts the whole Hessian by
    Woodbury at every Newton step (class coupling included), so each truncated solve takes
    a product or two; monotone, the optimum of the dense Cholesky solve and of the per-class
    Woodbury blocks, in fewer products than those."""
    from zbound.models.multinomial import logistic_objective

    rng = np.random.default_rng(4)
    t, d, n = 40, 300, 4
    X = rng.standard_normal((t, d))
    y = np.arange(t) % n
    b = d + fit_intercept
    pen = np.full((n, b), 1.0 / C)
    if fit_intercept:
        pen[:, -1] = 0.0
    model = logistic_objective(X, y, n, pen.ravel(), None, t / n**2 if fit_intercept else 0.0,
                               fit_intercept=fit_intercept)
    x0 = np.zeros(model.n_params)
    ref = minimize(model, x0, method="newton-bound", tol=1e-11, inner="cholesky")
    auto = minimize(model, x0, method="newton-bound", tol=1e-9, inner="cg")
    blocks = minimize(model, x0, method="newton-bound", tol=1e-9, inner="cg", precond="blocks")
    assert auto.converged and blocks.converged
    _assert_monotone(auto)
    np.testing.assert_allclose(auto.fun, ref.fun, rtol=1e-10)
    assert auto.info["preconditioner_builds"] == auto.info["newton_steps"]
    assert auto.info["cg_products"] <= 2 * auto.info["newton_steps"]
    assert auto.info["cg_products"] < blocks.info["cg_products"]


@pytest.mark.parametrize("method", ["newton-bound", "bound"])
def test_a_far_out_start_is_not_called_stationary(method):
    """At theta ~ 1e8 a quadratic penalty makes f ~ 1e18 grow faster than the gradient, and
    ||g||_inf <= tol * abs(f) held at the start: 0 iterations, 'converged'. The start point is
    judged on the absolute test; the run ends at the optimum."""
    from sklearn.datasets import make_classification

    from zbound.models.multinomial import logistic_objective
    from zbound.solvers import minimize

    X, y = make_classification(600, 6, n_informative=4, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, random_state=0)
    model = logistic_objective(X, y, 3, np.full(21, 0.06), None, 600 / 9, fit_intercept=True)
    far = minimize(model, np.full(21, 9e7), method=method, tol=1e-4, max_iter=2000)
    ref = minimize(model, np.zeros(21), method="newton-bound", tol=1e-10)
    assert far.converged and far.nit > 0
    assert far.fun == pytest.approx(ref.fun, rel=1e-6)
