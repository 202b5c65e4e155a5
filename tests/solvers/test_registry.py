"""Solvers as objects: a new method registers in a few lines and runs through ``minimize``;
init/update stepping equals run; status codes and their messages; counted evaluations."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.models.multinomial import MultinomialLogistic
from zbound.solvers import (
    METHODS,
    BoundMM,
    CountedModel,
    MethodInfo,
    NewtonBound,
    Solver,
    State,
    Status,
    minimize,
    register,
    unregister,
)


def _model(seed=0, t=60, d=3, n=3, reg=1.0):
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.normal(size=(t, d)), np.ones((t, 1))])
    return MultinomialLogistic(X, rng.integers(0, n, t), n, reg)


class FixedStep(Solver):
    """Gradient descent with a fixed step (the few lines a new method needs)."""

    info = MethodInfo("fixed-step-test", peer=True, constraints="none",
                      description="gradient descent with a fixed step")
    options = {"step": 0.01}

    def init(self, model, x):
        f, g = model.value_and_grad(x)
        return State(x, f, g)

    def update(self, model, state):
        x = state.x - self.opts["step"] * state.g
        f, g = model.value_and_grad(x)
        self.accept(model, state, x, f, g)


@pytest.fixture
def fixed_step():
    register(FixedStep)
    yield FixedStep
    unregister("fixed-step-test")


def test_a_registered_method_runs_through_minimize(fixed_step):
    model = _model()
    assert METHODS["fixed-step-test"].peer
    res = minimize(model, np.zeros(model.n_params), method="fixed-step-test", max_iter=5000,
                   tol=1e-6, step=0.02)
    ref = minimize(model, np.zeros(model.n_params), tol=1e-10)
    assert res.converged and res.status is Status.STATIONARY
    assert res.fun == pytest.approx(ref.fun, rel=1e-8)
    assert np.all(np.diff(res.trace.objective) <= 1e-12)
    assert res.n_evals == res.counts["value_and_grad"] == res.nit + 1
    with pytest.raises(TypeError, match="unexpected options"):
        minimize(model, np.zeros(model.n_params), method="fixed-step-test", stepsize=1.0)
    with pytest.raises(ValueError, match="already registered"):
        register(type("Other", (FixedStep,), {}))


def test_stepping_with_init_and_update_equals_run():
    model = _model(1)
    solver = NewtonBound(tol=1e-10)
    res = solver.run(model, np.zeros(model.n_params))
    counted = CountedModel(model)
    state = solver.init(counted, np.zeros(model.n_params))
    for _ in range(res.nit):
        solver.update(counted, state)
    np.testing.assert_array_equal(state.x, res.x)
    assert state.f == res.fun


def test_minimize_accepts_solver_objects_and_classes():
    model = _model(2)
    x0 = np.zeros(model.n_params)
    a = minimize(model, x0, method="bound", max_iter=7)
    b = minimize(model, x0, method=BoundMM(max_iter=7))
    c = minimize(model, x0, method=BoundMM, max_iter=7)
    d = minimize(model, x0, method=BoundMM(max_iter=100), max_iter=7)   # settings replace
    for r in (b, c, d):
        np.testing.assert_array_equal(r.x, a.x)
    assert a.status is Status.MAX_ITER and not a.converged
    with pytest.raises(ValueError, match="unknown method"):
        minimize(model, x0, method=42)


def test_status_is_printed_and_says_unconverged():
    model = _model(3, reg=1e-3)
    res = minimize(model, np.zeros(model.n_params), method="bound", max_iter=3)
    assert res.status is Status.MAX_ITER
    assert "NOT converged" in str(res) and "MAX_ITER" in repr(res)
    assert res.message == Status.MAX_ITER.message
    ok = minimize(model, np.zeros(model.n_params))
    assert ok.converged and str(ok).startswith("newton-bound: converged")
    for status in Status:
        assert isinstance(status.message, str) and status.message


def test_method_capabilities_are_checked():
    from zbound.constraints import LinearConstraints

    model = _model(4)
    cons = LinearConstraints(lb=-np.ones(model.n_params))
    with pytest.raises(ValueError, match="does not support constraints"):
        minimize(model, np.zeros(model.n_params), method="bfgs", constraints=cons)

    class NoBound:
        n_params = 2

        def value_and_grad(self, x):
            return float(x @ x), 2 * x

    with pytest.raises(TypeError, match="needs model.majorizer"):
        minimize(NoBound(), np.zeros(2), method="bound")
    assert {"newton-bound", "bound", "squarem"} <= {k for k, v in METHODS.items()
                                                     if v.uses_bound}


def test_models_never_import_solvers():
    """Models state, solvers solve: no import of zbound.solvers under zbound/models."""
    import ast
    import pathlib

    import zbound.models

    root = pathlib.Path(zbound.models.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.startswith("zbound.solvers") for n in names), path.name


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_option_has_a_constraint_that_names_it(name):
    """Each registered method states a constraint for every option it takes, and a value that
    fits none is refused when the solver is configured, naming the option and the method;
    the defaults themselves satisfy the constraints."""
    from sklearn.utils._param_validation import validate_parameter_constraints

    from zbound.solvers import solver_class

    cls = solver_class(name)
    missing = set(cls.options) - set(cls.option_constraints)
    assert not missing, f"{name}: options without a constraint: {sorted(missing)}"
    validate_parameter_constraints(cls.option_constraints, dict(cls.options), name)
    for option in cls.options:
        with pytest.raises(ValueError, match=f"'{option}' parameter of method '{name}'"):
            cls(**{option: object()})


def test_the_registry_does_not_depend_on_import_order():
    """The mixtures' methods are registered in zbound.moe; the registry holds them whatever
    was imported first (a fresh interpreter that imports only zbound.solvers)."""
    import subprocess
    import sys

    code = ("import sys; from zbound.solvers import METHODS, solver_class; "
            "names = sorted(METHODS); assert 'zbound.moe' in sys.modules; "
            "assert 'moe-em' in names and 'moe-lbfgs' in names, names; "
            "print(len(names), solver_class('moe-squarem').__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    from zbound.solvers import METHODS

    assert int(out.stdout.split()[0]) == len(METHODS)


def test_fixed_step_gd_takes_exactly_its_steps_and_matches_the_hand_loop():
    model = _model()
    x0 = np.zeros(model.n_params)
    res = minimize(model, x0, method="gd", lr=0.05, tol=0.0, ftol=0.0, max_iter=7)
    x = x0.copy()
    for _ in range(7):
        x -= 0.05 * model.value_and_grad(x)[1]
    assert res.nit == 7 and res.status is Status.MAX_ITER
    np.testing.assert_allclose(res.x, x, rtol=0, atol=1e-14)
    assert res.fun == pytest.approx(model.value(x), rel=1e-14)


def test_fixed_step_gd_converges_with_a_small_step_and_stops_on_divergence():
    model = _model(reg=1.0)
    ref = minimize(model, np.zeros(model.n_params), tol=1e-10)
    res = minimize(model, np.zeros(model.n_params), method="gd", lr=0.01, tol=1e-7,
                   max_iter=20000)
    assert res.converged and res.fun == pytest.approx(ref.fun, rel=1e-9)
    with np.errstate(all="raise"):            # no NumPy warning on the way
        bad = minimize(model, np.zeros(model.n_params), method="gd", lr=1e300, max_iter=5)
    assert bad.status is Status.FAILED and bad.info["diverged"] and not bad.converged
    assert np.isfinite(bad.x).all() and np.isfinite(bad.fun)


def test_step_size_methods_are_not_offered_by_estimators():
    from zbound.estimators import BoundLogisticRegression, ChainCRF, GraphCRF

    assert METHODS["gd"].step_size
    for est in (BoundLogisticRegression(solver="gd"), ChainCRF(solver="gd"),
                GraphCRF(solver="gd")):
        with pytest.raises(ValueError, match="solver"):
            est.fit(*_tiny_data(est))


def _tiny_data(est):
    rng = np.random.default_rng(0)
    if type(est).__name__ == "BoundLogisticRegression":
        return rng.normal(size=(10, 2)), np.arange(10) % 2
    if type(est).__name__ == "ChainCRF":
        return [rng.normal(size=(4, 2))] * 3, [np.array([0, 1, 0, 1])] * 3
    return [(rng.normal(size=(3, 2)), np.array([[0, 1], [1, 2]]))] * 3, \
        [np.array([0, 1, 0])] * 3
