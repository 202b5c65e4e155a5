"""minimize(): input validation, the method registry and the Result/trace contract."""

from __future__ import annotations

import numpy as np
import pytest
from _solver_problems import logistic_problem

from zbound.models.base import LatentLikelihood, SoftmaxData
from zbound.solvers import DEFAULT_METHOD, METHODS, LinearConstraints, Result, minimize


@pytest.fixture
def model():
    return logistic_problem(30, reg=0.5)


# Batch methods converge to tight tolerances; stochastic ones (epochs of mini-batches) have
# their own tests in test_stochastic.py.
# (the methods for every objective the softmax test problems are: EM needs a latent one)
BATCH_METHODS = sorted(k for k, v in METHODS.items()
                       if not (v.stochastic or v.step_size or v.proximal)
                       and v.requires in (None, SoftmaxData))


def test_registry_describes_every_method():
    assert DEFAULT_METHOD in METHODS and not METHODS[DEFAULT_METHOD].peer
    assert {"newton-bound", "bound", "squarem", "lbfgs", "bfgs", "cg", "steepest",
            "newton", "newton-cg", "sample-newton", "sample-bound",
            "lbfgs-precond", "lbfgs-bound", "lbfgs-newton"} == set(BATCH_METHODS)
    assert {"em", "em-joint"} == {k for k, v in METHODS.items()
                                  if v.requires is LatentLikelihood}
    assert {"spfb", "lspfb", "sbm", "sbm-sm", "sbm-boehning", "sgd", "momentum", "adam",
            "adagrad"} == {
        k for k, v in METHODS.items() if v.stochastic}
    for name, info in METHODS.items():
        assert info.name == name
        assert info.constraints in ("none", "box", "linear")
    assert METHODS["bound"].uses_bound and METHODS["bound"].constraints == "linear"
    assert METHODS["lbfgs"].peer and METHODS["lbfgs"].constraints == "box"
    assert not METHODS["bfgs"].supports_constraints


@pytest.mark.parametrize("method", BATCH_METHODS)
def test_result_and_trace_are_uniform(model, method):
    x0 = np.zeros(model.n_params)
    res = minimize(model, x0, method=method, tol=1e-9, max_iter=5000)
    assert isinstance(res, Result)
    assert res.success == res.converged is True
    assert res.x.shape == (model.n_params,) and res.x.dtype == np.float64
    assert res.fun == pytest.approx(model.value(res.x), rel=1e-12)
    tr = res.trace
    k = len(tr)
    assert k >= 2
    for arr in (tr.objective, tr.seconds, tr.grad_norm, tr.n_evals):
        assert arr.shape == (k,)
    assert tr.objective[0] == pytest.approx(model.value(x0), rel=1e-12)
    assert tr.objective[-1] == pytest.approx(res.fun, rel=1e-12)
    assert np.all(np.diff(tr.seconds) >= 0) and np.all(np.diff(tr.n_evals) >= 0)
    assert tr.n_evals[-1] <= res.n_evals == sum(res.counts.values())
    assert np.isfinite(tr.grad_norm[0])
    assert res.nit >= 1
    x0_copy = x0.copy()
    minimize(model, x0, method=method, max_iter=2)
    np.testing.assert_array_equal(x0, x0_copy)  # the start point is not modified


@pytest.mark.parametrize("x0,exc,match", [
    (np.full(12, np.nan), ValueError, "non-finite"),
    (np.r_[np.zeros(11), np.inf], ValueError, "non-finite"),
    (np.zeros(11), ValueError, "shape"),
    (np.zeros((3, 4)), ValueError, "shape"),
    (["a"] * 12, TypeError, "real array"),
])
def test_bad_start_points_are_rejected(model, x0, exc, match):
    assert model.n_params == 12
    with pytest.raises(exc, match=match):
        minimize(model, x0)


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"method": "newton-raphson"}, ValueError, "unknown method"),
    ({"method": None}, ValueError, "unknown method"),
    ({"tol": -1.0}, ValueError, "tol"),
    ({"tol": np.nan}, ValueError, "tol"),
    ({"max_iter": -1}, ValueError, "max_iter"),
    ({"max_iter": 2.5}, ValueError, "max_iter"),
    ({"target": np.nan}, ValueError, "target"),
    ({"inner": "lu"}, ValueError, "inner"),
    ({"callback": 3}, TypeError, "callback"),
    ({"frobnicate": 1}, TypeError, "unexpected"),
    ({"method": "newton-bound", "fallback": "sideways"}, ValueError, "fallback"),
    ({"method": "newton-bound", "backtracks": -1}, ValueError, "backtracks"),
    ({"method": "newton-bound", "backtracks": 1.5}, ValueError, "backtracks"),
])
def test_bad_options_are_rejected(model, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        minimize(model, np.zeros(model.n_params), **kwargs)


def test_infeasible_start_and_unsupported_constraints_are_rejected(model):
    p = model.n_params
    box = LinearConstraints(lb=np.zeros(p), ub=np.ones(p))
    with pytest.raises(ValueError, match="infeasible"):
        minimize(model, -np.ones(p), constraints=box)
    general = LinearConstraints(A=np.ones((1, p)), b=[1.0])
    with pytest.raises(ValueError, match="infeasible"):
        minimize(model, np.ones(p), method="bound", constraints=general)
    with pytest.raises(ValueError, match="does not support constraints"):
        minimize(model, np.full(p, 0.5), method="bfgs", constraints=box)
    with pytest.raises(ValueError, match="only box"):
        minimize(model, np.zeros(p), method="lbfgs", constraints=general)
    with pytest.raises(ValueError, match="parameters"):
        minimize(model, np.zeros(p), constraints=LinearConstraints(lb=np.zeros(3)))
    with pytest.raises(TypeError, match="LinearConstraints"):
        minimize(model, np.zeros(p), constraints=(np.zeros(p), np.ones(p)))
    # projecting the start makes it acceptable
    res = minimize(model, box.project(-np.ones(p)), constraints=box)
    assert res.converged and box.is_feasible(res.x)


def test_object_without_the_model_protocol_is_rejected():
    with pytest.raises(TypeError, match="n_params"):
        minimize(object(), np.zeros(3))


def test_start_at_the_target_stops_immediately(model):
    x0 = np.zeros(model.n_params)
    f0 = model.value(x0)
    for method in METHODS:
        if not METHODS[method].applies_to(model):
            continue
        res = minimize(model, x0, method=method, target=f0 + 1.0)
        assert res.target_reached and res.nit == 0, method
        np.testing.assert_array_equal(res.x, x0)


def test_methods_name_the_model_method_they_miss(model):
    class GradientOnly:
        n_params = model.n_params
        value = staticmethod(model.value)
        value_and_grad = staticmethod(model.value_and_grad)

    m = GradientOnly()
    x0 = np.zeros(m.n_params)
    with pytest.raises(TypeError, match="value_grad_hessian"):
        minimize(m, x0)
    with pytest.raises(TypeError, match="majorizer"):
        minimize(m, x0, method="squarem")
    res = minimize(m, x0, method="lbfgs")  # gradient methods need nothing else
    assert res.converged


def test_a_small_gradient_right_after_a_large_decrease_does_not_stop_a_run():
    """The stationarity test (||g||_inf <= tol max(1, |f|)) holds far from the optimum of wide
    sparse multiclass problems; a run is not called stationary right after an iteration that
    lowered the objective by more than STILL_MOVING_RTOL of it."""
    from zbound.solvers import solver_class
    from zbound.solvers.base import STILL_MOVING_RTOL, State
    from zbound.solvers.result import Status

    solver = solver_class("newton-bound")(tol=1e-4)
    tiny = 1e-9
    moving = State(np.zeros(2), 100.0, np.zeros(2))
    moving.f_prev = 100.0 * (1 + 2 * STILL_MOVING_RTOL)
    assert solver.stop_status(moving, tiny) is None
    settled = State(np.zeros(2), 100.0, np.zeros(2))
    settled.f_prev = 100.0 * (1 + 0.5 * STILL_MOVING_RTOL)
    assert solver.stop_status(settled, tiny) is Status.STATIONARY
    first = State(np.zeros(2), 100.0, np.zeros(2))       # no step yet: the start may be optimal
    assert solver.stop_status(first, tiny) is Status.STATIONARY
    # end to end: every stationary stop of a fit follows a small last decrease
    model = logistic_problem(0, t=200, reg=1e-3)
    res = minimize(model, np.zeros(model.n_params), method="newton-bound", tol=1e-4)
    f = res.trace.objective
    assert res.status is Status.STATIONARY
    assert len(f) < 2 or f[-2] - f[-1] <= STILL_MOVING_RTOL * max(1.0, abs(f[-1]))


def test_counted_model_counts_what_the_model_has():
    from zbound.solvers import CountedModel
    from zbound.solvers.base import model_name

    class NoHessian:
        n_params = 2

        def value(self, x):
            return float(x @ x)

        def value_and_grad(self, x):
            return float(x @ x), 2 * x

        def majorizer(self, x, order="descending"):
            raise NotImplementedError

    plain = CountedModel(NoHessian())
    assert not hasattr(plain, "hessian") and not hasattr(plain, "value_grad_hessian")
    assert model_name(plain) == model_name(NoHessian()) == "NoHessian"
    counted = CountedModel(logistic_problem(1))
    x = np.zeros(counted.n_params)
    counted.value_grad_hessian(x)
    counted.hessian(x)
    counted.count("value", 3)
    counted.count("bound")
    assert counted.counts == {"value": 3, "value_and_grad": 0, "value_grad_hessian": 1,
                              "hessian": 1, "bound": 1}
    with pytest.raises(ValueError, match="unknown evaluation kind"):
        counted.count("gradient")


def test_bfgs_refuses_a_dense_inverse_hessian_beyond_the_memory(model, monkeypatch):
    """SciPy's BFGS keeps (p, p) matrices: where three of them exceed the machine's memory
    the run is refused with a ValueError naming the size and the alternatives, before it
    starts (not NumPy's MemoryError after a few steps)."""
    from zbound.solvers import baselines

    p = model.n_params
    monkeypatch.setattr(baselines, "_physical_memory", lambda: 3 * 8 * p * p - 1.0)
    with pytest.raises(ValueError, match=rf"'bfgs' keeps dense \({p}, {p}\) matrices.*'lbfgs'"):
        minimize(model, np.zeros(p), method="bfgs")
    monkeypatch.setattr(baselines, "_physical_memory", lambda: 3 * 8 * p * p)
    assert minimize(model, np.zeros(p), method="bfgs").converged


@pytest.mark.parametrize("method", ["newton-bound", "lbfgs-bound", "squarem", "sgd"])
def test_run_iterator_is_runs_loop_one_iteration_at_a_time(model, method):
    """Run to the end, the iterator gives run's result (the same iterates, trace and status);
    stopped by the caller, the state it leaves reports MAX_ITER, not convergence; every
    yielded state after the start is one more step of run's loop (SQUAREM's counts its
    bound evaluations: a cycle moves nit by more than one)."""
    from zbound.solvers import configure

    solver = configure(method, tol=1e-8, max_iter=200)
    x0 = np.zeros(model.n_params)
    ref = solver.run(model, x0)
    seen = []
    for step in solver.run_iterator(model, x0):       # (counted model, state)
        seen.append(step[1].nit)
    res = solver.result(*step)
    assert seen[0] == 0 and all(b > a for a, b in zip(seen, seen[1:])) and seen[-1] == ref.nit
    np.testing.assert_array_equal(res.x, ref.x)
    assert res.status == ref.status and res.fun == ref.fun
    np.testing.assert_array_equal(res.trace.objective, ref.trace.objective)
    for step in solver.run_iterator(model, x0):
        if step[1].nit >= 2:
            break
    early = solver.result(*step)
    assert early.nit == seen[next(i for i, n in enumerate(seen) if n >= 2)]
    assert not early.converged and early.status.name == "MAX_ITER"
