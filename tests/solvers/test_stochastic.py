"""Stochastic bound majorization (SPFB, LSPFB, SBM, Sherman-Morrison SBM) and the first-order
peers: exact algebra on one batch, monotone full-batch steps, convergence, bad settings."""

from __future__ import annotations

import numpy as np
import pytest
from _solver_problems import logistic_problem, reference_optimum

from zbound.bounds.curvature import Curvature
from zbound.bounds.lowrank import LowRankCurvature
from zbound.models.multinomial import MultinomialLogistic, logistic_objective
from zbound.solvers import METHODS, minimize
from zbound.solvers.stochastic import (
    LSPFB,
    SBM,
    SPFB,
    ShermanMorrisonSBM,
    StochasticAdam,
    StochasticMomentum,
    StochasticSGD,
    batch_objective,
    iterate_batches,
    sherman_morrison_inverse,
    softmax_bound_terms,
)

STOCHASTIC = ("spfb", "lspfb", "sbm", "sbm-sm", "sbm-boehning", "sgd", "momentum", "adam")


def _estimator_objective(seed=0, t=40, d=3, n=3):
    """Per-coordinate L2 (intercepts penalized lightly) + intercept centering + sample weights."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, d))
    y = rng.integers(0, n, t)
    y[:n] = np.arange(n)
    k = 1 if n == 2 else n
    pen = np.full((k, d + 1), 0.7)
    pen[:, -1] = 0.05
    sw = rng.uniform(0.5, 2.0, t)
    return logistic_objective(X, y, n, pen.ravel(), sw, center=0.3 if k > 1 else 0.0,
                              fit_intercept=True)


def test_registered_as_stochastic():
    for name in STOCHASTIC:
        info = METHODS[name]
        assert info.stochastic
        assert info.peer == (name in ("sgd", "momentum", "adam"))
        assert info.uses_bound == (name not in ("sgd", "momentum", "adam"))


def test_sherman_morrison_matches_the_explicit_inverse():
    rng = np.random.default_rng(0)
    p = 12
    A = rng.standard_normal((p, p))
    M0 = np.linalg.inv(A @ A.T + 0.5 * np.eye(p))
    R = rng.standard_normal((30, p)) * rng.uniform(0, 2, (30, 1))
    M = sherman_morrison_inverse(M0.copy(), R)
    explicit = np.linalg.inv(np.linalg.inv(M0) + R.T @ R)
    np.testing.assert_allclose(M, explicit, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n", [2, 4])
def test_bound_terms_sum_to_the_bound_curvature(n):
    obj = _estimator_objective(1, n=n)
    theta = np.random.default_rng(2).standard_normal(obj.n_params)
    R = softmax_bound_terms(obj.loss, theta)
    C = obj.loss.majorizer(theta).curvature.to_dense()
    np.testing.assert_allclose(R.T @ R, C, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [2, 3])
def test_sherman_morrison_sbm_step_equals_the_explicit_bound_step(n):
    """Slides Alg. 4 (one Sherman-Morrison update per Alg. 1 term, phi kept alongside) gives the
    step of Alg. 3 with the explicit inverse (lambda I + Sigma_B)^{-1} grad."""
    obj = _estimator_objective(3, n=n)
    theta = 0.3 * np.random.default_rng(4).standard_normal(obj.n_params)
    batch = batch_objective(obj, np.arange(7, 31))
    _, g = batch.value_and_grad(theta)
    explicit = np.linalg.solve(batch.majorizer(theta).curvature.to_dense(), g)
    sm = ShermanMorrisonSBM(lr=1.0)
    state = sm.init(batch, theta)
    d = sm.direction(batch, state, theta, g)
    np.testing.assert_allclose(d, explicit, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(state.M @ batch.majorizer(theta).curvature.to_dense(),
                               np.eye(obj.n_params), atol=1e-8)


def test_batch_objective_is_the_mean_form():
    model = logistic_problem(0, t=50)
    theta = np.random.default_rng(1).standard_normal(model.n_params)
    total, grad = 0.0, np.zeros(model.n_params)
    for rows in iterate_batches(50, 12, np.random.default_rng(0)):
        f, g = batch_objective(model, rows).value_and_grad(theta)
        total += len(rows) * f
        grad += len(rows) * g
    J, gJ = model.value_and_grad(theta)
    np.testing.assert_allclose(total, J, rtol=1e-12)
    np.testing.assert_allclose(grad, gJ, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="at least one row"):
        batch_objective(model, np.array([], dtype=int))


FULL_BATCH = [("spfb", {}), ("sbm", {}), ("sbm-sm", {}), ("lspfb", {"lowrank_rule": "exact"}),
              ("sbm-boehning", {}), ("sbm-boehning", {"gram": "batch"}),
              ("lspfb", {"lowrank_rule": "sgb", "rank": 2}),
              # the average with weight 1 is the current bound; PCG solved to the end (from
              # its Kronecker preconditioner, above dense_max) is the exact bound step
              ("spfb", {"curvature": "average", "average_weight": 1.0}),
              ("spfb", {"dense_max": 1, "cg_maxiter": 200, "cg_rtol": 1e-13}),
              ("spfb", {"dense_max": 1, "cg_maxiter": 200, "cg_rtol": 1e-13,
                        "precond": "jacobi"})]


@pytest.mark.parametrize("method,opts", FULL_BATCH)
@pytest.mark.parametrize("seed", [0, 1])
def test_full_batch_bound_steps_are_monotone(method, opts, seed):
    """With the whole data as the batch and eta = 1 every bound method is Alg. 2 (a majorizer
    minimized), so the objective decreases at every update."""
    model = logistic_problem(seed, t=40, reg=0.3)
    x0 = np.zeros(model.n_params)
    res = minimize(model, x0, method=method, lr=1.0, schedule="constant", batch_size=1000,
                   max_iter=15, tol=0.0, **opts)
    f = res.trace.objective
    assert len(f) == 16
    assert np.all(np.diff(f) <= 1e-10 * np.abs(f[1:])), f


def test_full_batch_spfb_is_alg2():
    model = logistic_problem(3, t=40, reg=0.3)
    x0 = 0.1 * np.ones(model.n_params)
    bm = minimize(model, x0, method="bound", max_iter=3, tol=0.0, ftol=0.0)
    for method in ("spfb", "sbm", "sbm-sm"):
        res = minimize(model, x0, method=method, lr=1.0, schedule="constant", max_iter=3,
                       tol=0.0)
        np.testing.assert_allclose(res.x, bm.x, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("method,opts", [
    ("spfb", {"lr": 1.0, "decay": 5.0}),
    ("spfb", {"lr": 1.0, "decay": 5.0, "curvature": "average"}),
    ("spfb", {"lr": 1.0, "decay": 5.0, "curvature": "average", "average_weight": 0.2}),
    ("spfb", {"lr": 1.0, "decay": 5.0, "curvature": "average", "dense_max": 1}),
    ("spfb", {"lr": 1.0, "decay": 5.0, "dense_max": 1, "cg_maxiter": 3}),
    ("sbm", {"lr": 0.2}),
    ("lspfb", {"lr": 1.0, "decay": 5.0, "rank": 3}),
    ("sbm-sm", {"lr": 0.2}),
    ("sbm-boehning", {"schedule": "inverse", "decay": 5.0}),
    ("sbm-boehning", {"gram": "batch", "schedule": "inverse", "decay": 5.0}),
    ("sgd", {"lr": 0.5}),
    ("momentum", {"lr": 0.05}),
    ("adam", {"lr": 0.05}),
])
def test_mini_batches_approach_the_optimum(method, opts):
    model = logistic_problem(5, t=300, d=4, n=3, reg=3.0)
    x0 = np.zeros(model.n_params)
    _, f_ref = reference_optimum(model, x0)
    res = minimize(model, x0, method=method, batch_size=30, max_iter=40, tol=0.0, **opts)
    assert res.status.name == "MAX_ITER"
    assert res.nit == 40 and res.info["updates"] == 400
    assert res.fun <= f_ref * 1.01, (res.fun, f_ref)


def test_spfb_needs_no_more_epochs_than_tuned_sgd():
    model = logistic_problem(7, t=400, d=5, n=4, reg=0.5, separation=3.0)
    x0 = np.zeros(model.n_params)
    _, f_ref = reference_optimum(model, x0)
    target = 1.01 * f_ref
    spfb = minimize(model, x0, method="spfb", lr=1.0, decay=40.0, batch_size=100,
                    target=target, max_iter=200, tol=0.0)
    assert spfb.target_reached
    best_sgd = min(minimize(model, x0, method="sgd", lr=lr, batch_size=100, target=target,
                            max_iter=200, tol=0.0).nit for lr in (0.1, 0.3, 1.0, 3.0))
    assert spfb.nit <= best_sgd, (spfb.nit, best_sgd)


def test_refresh_and_curvature_rows_reuse_the_bound():
    model = logistic_problem(2, t=200, reg=1.0)
    x0 = np.zeros(model.n_params)
    res = minimize(model, x0, method="spfb", batch_size=20, refresh=5, curvature_rows=7,
                   max_iter=3, tol=0.0)
    assert res.info["updates"] == 30 and res.info["curvatures"] == 6
    assert np.isfinite(res.fun)


def test_lspfb_is_matrix_free(monkeypatch):
    """No p x p matrix: every to_dense / add_to_dense raises, on p = 2400."""
    def boom(*_a, **_k):
        raise AssertionError("a p x p matrix was formed")

    monkeypatch.setattr(Curvature, "to_dense", boom)
    monkeypatch.setattr(LowRankCurvature, "to_dense", boom)
    monkeypatch.setattr(LowRankCurvature, "add_to_dense", boom)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 300))
    y = rng.integers(0, 8, 60)
    model = MultinomialLogistic(X, y, 8, reg=1.0)
    assert model.n_params == 2400
    res = minimize(model, np.zeros(2400), method="lspfb", rank=10, batch_size=30,
                   curvature_rows=3, max_iter=1, tol=0.0)
    assert res.fun < model.value(np.zeros(2400))


def test_schedules():
    s = SPFB(lr=2.0)                          # paper default: eta_0 / t
    assert [s.step_size(t) for t in (1, 2, 4)] == [2.0, 1.0, 0.5]
    s = SPFB(lr=2.0, decay=10.0)
    assert s.step_size(11) == pytest.approx(1.0)
    assert SBM(lr=0.3).step_size(100) == 0.3
    assert LSPFB().opts["schedule"] == "inverse"


@pytest.mark.parametrize("cls,kw", [(StochasticSGD, {"lr": 0.3}),
                                    (StochasticMomentum, {"lr": 0.05, "nesterov": True}),
                                    (StochasticAdam, {"lr": 0.02})])
def test_torch_and_numpy_backends_agree(cls, kw):
    pytest.importorskip("torch", reason="compares with torch.optim")
    model = logistic_problem(4, t=90)
    x0 = np.zeros(model.n_params)
    a = minimize(model, x0, method=cls(backend="numpy", batch_size=16, **kw), max_iter=4,
                 tol=0.0)
    b = minimize(model, x0, method=cls(backend="torch", batch_size=16, **kw), max_iter=4,
                 tol=0.0)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bad", [{"lr": 0}, {"lr": np.inf}, {"schedule": "cosine"},
                                 {"decay": -1.0}, {"batch_size": 0}, {"refresh": 0},
                                 {"curvature_rows": 0}, {"curvature": "mean"},
                                 {"average_weight": 0.0}, {"average_weight": 1.5},
                                 {"precond": "ilu"}, {"gram_updates": 0}, {"cg_maxiter": 0}])
def test_bad_options(bad):
    with pytest.raises(ValueError):
        SPFB(**bad)


def test_bad_method_specific_options():
    with pytest.raises(ValueError, match="lowrank_rule"):
        LSPFB(lowrank_rule="svd")
    with pytest.raises(ValueError, match="rank"):
        LSPFB(rank=0)
    with pytest.raises(ValueError, match="backend"):
        StochasticSGD(backend="jax")
    with pytest.raises(TypeError, match="unexpected options"):
        SPFB(momentum=0.9)


def test_sherman_morrison_limits():
    model = logistic_problem(0, t=20)
    with pytest.raises(ValueError, match="max_params"):
        minimize(model, np.zeros(model.n_params), method="sbm-sm", max_params=5, max_iter=1)
    unpen = MultinomialLogistic(model.X, model.y, 3, reg=0.0)
    with pytest.raises(ValueError, match="positive L2"):
        minimize(unpen, np.zeros(unpen.n_params), method="sbm-sm", max_iter=1)


def test_divergence_is_reported_not_silent():
    model = logistic_problem(1, t=50, separation=5.0)
    res = minimize(model, np.zeros(model.n_params), method="sgd", lr=1e300, batch_size=10,
                   max_iter=5, tol=0.0)
    assert res.status.name == "FAILED" and not res.converged
    assert "non-finite" in res.message


def test_model_without_rows_is_rejected():
    from zbound.models.loglinear import LogLinearModel

    rng = np.random.default_rng(0)
    m = LogLinearModel(rng.standard_normal((5, 3, 2)), np.zeros(5, dtype=int), reg=1.0)
    with pytest.raises(TypeError, match="subset"):
        minimize(m, np.zeros(2), method="spfb", max_iter=1)


# ---------------------------------------------------------------- averaged curvature (ours)
def _bound_dense(batch, x):
    return batch.majorizer(x).curvature.to_dense()


@pytest.mark.parametrize("weight", [None, 0.5])
def test_average_curvature_is_the_running_or_exponential_mean(weight):
    """Sigma_bar after k builds = the mean of the k batch bounds at the iterates they were built
    at (weight None), or the exponential average with rho_k = max(1/k, weight)."""
    model = _estimator_objective(4, t=60)
    solver = SPFB(curvature="average", average_weight=weight, lr=0.5, schedule="constant")
    state = solver.init(None, np.zeros(model.n_params))
    expect = None
    for k, rows in enumerate(iterate_batches(60, 15, np.random.default_rng(0)), start=1):
        batch = batch_objective(model, rows)
        A = _bound_dense(batch, state.x)
        rho = 1.0 / k if weight is None else max(1.0 / k, weight)
        expect = A if expect is None else (1 - rho) * expect + rho * A
        g = batch.value_and_grad(state.x)[1]
        x_old = state.x.copy()
        solver.update(batch, state)
        np.testing.assert_allclose(state.avg_dense, expect, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(x_old - state.x, 0.5 * np.linalg.solve(expect, g),
                                   rtol=1e-7, atol=1e-10)


def test_kronecker_factored_solve_and_label_factor():
    from zbound.solvers.stochastic import KroneckerFactored

    model = logistic_problem(1, t=50, d=4, n=4, reg=0.3)
    x = 0.2 * np.random.default_rng(1).standard_normal(model.n_params)
    C = model.loss.majorizer(x).curvature
    B = C.label_weight_matrix()
    np.testing.assert_allclose(B, C.B.sum(axis=0), rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(2)
    G = rng.standard_normal((C.d, C.d))
    G = G @ G.T
    K = KroneckerFactored(B, np.linalg.eigh(G), 0.3)
    v = rng.standard_normal(model.n_params)
    np.testing.assert_allclose(K.solve(v), np.linalg.solve(np.kron(B, G) + 0.3 * np.eye(
        model.n_params), v), rtol=1e-9, atol=1e-12)


def test_average_above_dense_max_is_matrix_free(monkeypatch):
    """The averaged SPFB above dense_max keeps (n, n) and (d, d) factors only."""
    def boom(self, *a, **k):
        raise AssertionError("a p x p matrix was formed")

    model = logistic_problem(3, t=200, d=40, n=6, reg=1.0)
    todo = [Curvature]
    while todo:                                   # every operator class, however deep
        cls = todo.pop()
        todo += cls.__subclasses__()
        if "to_dense" in vars(cls):
            monkeypatch.setattr(cls, "to_dense", boom)
    res = minimize(model, np.zeros(model.n_params), method="spfb", curvature="average",
                   dense_max=10, batch_size=50, max_iter=3, tol=0.0, lr=0.5)
    assert np.isfinite(res.fun) and res.fun < model.value(np.zeros(model.n_params))


def test_average_handles_estimator_penalties_above_dense_max():
    """Per-coordinate L2, the centering term and sample weights on the Kronecker path."""
    model = _estimator_objective(6, t=80)
    x0 = np.zeros(model.n_params)
    _, f_ref = reference_optimum(model, x0)
    res = minimize(model, x0, method="spfb", curvature="average", dense_max=1, lr=0.5,
                   batch_size=20, max_iter=60, tol=0.0)
    assert res.fun <= f_ref * 1.05, (res.fun, f_ref)


# ------------------------------------------- Kronecker-path knobs (damping, rebuild schedule)
@pytest.mark.parametrize("shrink,eig_builds", [(0.7, (1, 2, 3)), (1.0, (1,)), (0.0, None)])
def test_damped_kronecker_step_is_the_explicit_solve(shrink, eig_builds):
    """Above dense_max the averaged step is eta (Bbar (x) (G_e + c I) + lambda I)^{-1} g:
    Bbar the running mean of the label factors, G_e the Gram average at the last build listed
    in gram_eig_builds, c = gram_shrink * tr(Gbar) / rows with Gbar the current Gram average."""
    from zbound.solvers.stochastic import _penalty_diagonal

    model = logistic_problem(8, t=60, d=4, n=3, reg=0.5)
    p = model.n_params
    solver = SPFB(curvature="average", dense_max=1, lr=0.5, schedule="constant",
                  gram_updates=3, gram_shrink=shrink, gram_eig_builds=eig_builds)
    state = solver.init(None, np.zeros(p))
    Bbar = Gbar = G_e = None
    rows_seen = 0
    for k, rows in enumerate(iterate_batches(60, 15, np.random.default_rng(3)), start=1):
        batch = batch_objective(model, rows)
        C = batch.loss.majorizer(state.x).curvature
        B = C.label_weight_matrix()
        Bbar = B if Bbar is None else Bbar + (B - Bbar) / k
        if k <= 3:
            X = C.design()
            G = X.T @ X / X.shape[0]
            Gbar = G if Gbar is None else Gbar + (G - Gbar) / k
            rows_seen += X.shape[0]
            if k in (eig_builds or (1, 2, 3)):
                G_e = Gbar.copy()
        c = shrink * np.trace(Gbar) / rows_seen
        lam = _penalty_diagonal(batch.penalties, p).max()
        A = np.kron(Bbar, G_e + c * np.eye(G_e.shape[0])) + lam * np.eye(p)
        g = batch.value_and_grad(state.x)[1]
        x_old = state.x.copy()
        solver.update(batch, state)
        np.testing.assert_allclose(x_old - state.x, 0.5 * np.linalg.solve(A, g),
                                   rtol=1e-8, atol=1e-11)


def test_damping_only_adds_curvature():
    """Bbar (x) (G + c I) - Bbar (x) G = c Bbar (x) I is PSD for c >= 0: damping never
    lowers the curvature (Bbar, a sum of Alg. 1 label factors, is PSD)."""
    model = logistic_problem(9, t=40, d=3, n=4, reg=0.5)
    x = np.random.default_rng(0).standard_normal(model.n_params)
    B = model.loss.majorizer(x).curvature.label_weight_matrix()
    assert np.linalg.eigvalsh(np.kron(B, 0.3 * np.eye(3))).min() >= -1e-12


@pytest.mark.parametrize("late,builds", [("doubling", [1, 2, 4, 8, 16]),
                                         (3, [1, 2, 5, 8, 11, 14]), (None, list(range(1, 17)))])
def test_late_refresh_schedule(late, builds):
    """Once the Gram average is complete (gram_updates builds) the bound is rebuilt every
    late_refresh updates, or ("doubling") a build at update t is next rebuilt at update 2 t."""
    model = logistic_problem(2, t=160, d=4, n=3, reg=1.0)
    solver = SPFB(curvature="average", dense_max=1, lr=0.5, gram_updates=2,
                  late_refresh=late)
    state = solver.init(None, np.zeros(model.n_params))
    seen = []
    for t, rows in enumerate(iterate_batches(160, 10, np.random.default_rng(0)), start=1):
        before = state.n_bound
        solver.update(batch_objective(model, rows), state)
        if state.n_bound > before:
            seen.append(t)
    assert seen == builds


@pytest.mark.parametrize("gram_updates,eig_builds,curvatures", [
    (10, (1, 10), 15),          # updates 1..10, then 20, 40, 80, 160, 320
    (1, (1,), 9),               # the first batch's Gram: updates 1, 2, 4, ..., 256 of 400
])
def test_late_refresh_reaches_the_optimum(gram_updates, eig_builds, curvatures):
    model = logistic_problem(5, t=300, d=4, n=3, reg=3.0)
    x0 = np.zeros(model.n_params)
    _, f_ref = reference_optimum(model, x0)
    res = minimize(model, x0, method="spfb", curvature="average", dense_max=1, lr=1.0,
                   decay=5.0, batch_size=30, max_iter=40, tol=0.0, gram_updates=gram_updates,
                   gram_shrink=1.0, gram_eig_builds=eig_builds, late_refresh="doubling")
    assert res.fun <= f_ref * 1.01, (res.fun, f_ref)
    assert res.info["curvatures"] == curvatures


@pytest.mark.parametrize("bad", [{"gram_shrink": -1.0}, {"gram_shrink": np.nan},
                                 {"gram_eig_builds": ()}, {"gram_eig_builds": (2, 4)},
                                 {"gram_eig_builds": "1"}, {"gram_eig_builds": (1, 0)},
                                 {"late_refresh": 0}, {"late_refresh": "halving"}])
def test_bad_kronecker_options(bad):
    with pytest.raises(ValueError):
        SPFB(**bad)


def test_first_batch_gram_with_doubling_rebuilds_is_the_explicit_solve(monkeypatch):
    """gram_updates=1 (the stochastic suite's spfb-avg above dense_max): the Gram factor is the
    first batch's, damped by s tr(G_1) / rows_1 and decomposed once; the bound is rebuilt at
    updates 1, 2, 4, 8, ... and every step is the explicit solve with the running mean of the
    label factors of those builds."""
    from zbound.solvers.stochastic import _penalty_diagonal

    model = logistic_problem(4, t=160, d=4, n=3, reg=0.5)
    p = model.n_params
    solver = SPFB(curvature="average", dense_max=1, lr=0.5, schedule="constant",
                  gram_updates=1, gram_shrink=2.0, gram_eig_builds=(1,),
                  late_refresh="doubling")
    sizes = []                                           # of the eigendecompositions
    eigh = np.linalg.eigh

    def counting(M, *a, **k):
        sizes.append(M.shape[0])
        return eigh(M, *a, **k)

    monkeypatch.setattr(np.linalg, "eigh", counting)
    state = solver.init(None, np.zeros(p))
    Bbar, G1, n_builds = None, None, 0
    for t, rows in enumerate(iterate_batches(160, 10, np.random.default_rng(1)), start=1):
        batch = batch_objective(model, rows)
        if t & (t - 1) == 0:                            # a build at 1, 2, 4, 8, 16
            C = batch.loss.majorizer(state.x).curvature
            n_builds += 1
            B = C.label_weight_matrix()
            Bbar = B if Bbar is None else Bbar + (B - Bbar) / n_builds
            if G1 is None:
                X = C.design()
                G1 = X.T @ X / X.shape[0]
                G1 = G1 + 2.0 * np.trace(G1) / X.shape[0] * np.eye(G1.shape[0])
        lam = _penalty_diagonal(batch.penalties, p).max()
        A = np.kron(Bbar, G1) + lam * np.eye(p)
        g = batch.value_and_grad(state.x)[1]
        x_old = state.x.copy()
        solver.update(batch, state)
        np.testing.assert_allclose(x_old - state.x, 0.5 * np.linalg.solve(A, g),
                                   rtol=1e-8, atol=1e-11)
    assert state.n_bound == n_builds == 5
    # the Gram factor (d = 4) decomposed once, the label factor (3 x 3) at every build
    assert sizes == [4, 3, 3, 3, 3, 3]


# -- Boehning's curvature ----------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 5])
def test_boehning_step_minimizes_a_majorizer_of_the_batch(n):
    """gram="batch", lr = 1: x - B^{-1} g minimizes a quadratic that lies above the batch
    objective everywhere (Boehning's curvature bounds every Hessian), so no start, however
    extreme its scores, sees the objective rise."""
    from zbound.solvers import solver_class

    rng = np.random.default_rng(n)
    for trial in range(200):
        t = int(rng.integers(1, 30))
        model = _estimator_objective(seed=trial, t=max(t, n), d=int(rng.integers(1, 5)), n=n)
        scale = 10.0 ** rng.uniform(-3, 2.5)
        x = scale * rng.standard_normal(model.n_params)
        step = solver_class("sbm-boehning")(gram="batch", lr=1.0)
        state = step.init(None, x)
        f0 = model.value(x)
        with np.errstate(over="ignore"):
            step.update(model, state)
        assert state.status.name == "RUNNING"
        f1 = model.value(state.x)
        assert f1 <= f0 + 1e-9 * max(1.0, abs(f0)), (trial, f0, f1)


def test_boehning_running_gram_is_the_mean_of_the_batch_grams():
    from zbound.solvers import solver_class

    model = logistic_problem(2, t=120, d=3, n=3, reg=0.5)
    step = solver_class("sbm-boehning")()
    state = step.init(None, np.zeros(model.n_params))
    grams = []
    for rows in np.array_split(np.arange(120), 4):
        batch = batch_objective(model, rows, 120)
        grams.append(batch.loss.bound_gram())
        step.update(batch, state)
    np.testing.assert_allclose(state.gram, np.mean(grams, axis=0), rtol=1e-12)
    assert state.n_bound == 4
    # equal batches: the mean of their Grams is the whole data's (mean form)
    np.testing.assert_allclose(state.gram, model.loss.bound_gram() / model.loss.sample_weight
                               .sum() if model.loss.sample_weight is not None else
                               model.loss.bound_gram() / 120, rtol=1e-10)
