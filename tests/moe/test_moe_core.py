"""Mixtures of experts: gradients, EM monotonicity, EM = mirror descent, M(theta), bad input."""

from __future__ import annotations

import numpy as np
import pytest
from _moe_data import class_data

from zbound.moe import (
    MoEProblem,
    SMoLinE,
    SMoLogE,
    SoftLabelSoftmaxLoss,
    fit_em,
    fit_em_symmetric,
    fit_gd,
    fit_gradient_em,
    missing_information,
)
from zbound.solvers.result import MONOTONE_RTOL


def _linear_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    z = (X[:, 0] > 0).astype(int)
    B = np.array([[1.0, 2.0, 0.0], [-2.0, 0.0, 1.0]])
    y = np.sum(X * B[z], axis=1) + 0.3 * rng.normal(size=n)
    return X, y


def _problems():
    X, y = _linear_data()
    Xc, yc = class_data()
    Xb, yb = class_data(classes=2)
    return [
        MoEProblem(X, y, 2, "linear"),
        MoEProblem(X, y, 3, "linear", noise=0.5, reg=1e-2,
                   sample_weight=np.random.default_rng(1).random(len(y)) + 0.1),
        MoEProblem(Xc, yc, 2, "logistic", reg=1e-3),
        MoEProblem(Xb, yb, 3, "logistic", reg=1e-3, fit_intercept=False),
    ]


def _fd_grad(f, x, h=1e-6):
    out = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


@pytest.mark.parametrize("idx", range(4))
def test_gradients_match_finite_differences(idx):
    pb = _problems()[idx]
    theta = np.random.default_rng(idx).normal(size=pb.n_params) * 0.5
    f, g = pb.value_and_grad(theta)
    assert f == pytest.approx(pb.value(theta))
    np.testing.assert_allclose(g, _fd_grad(pb.value, theta), atol=1e-7)
    # grad Q(. | theta) at theta = grad L(theta) (Section 3); Q's own gradient elsewhere
    R = pb.responsibilities(theta)
    np.testing.assert_allclose(pb.q_value_and_grad(theta, R)[1], g, atol=1e-12)
    other = theta + 0.1
    np.testing.assert_allclose(pb.q_value_and_grad(other, R)[1],
                               _fd_grad(lambda t: pb.q_value_and_grad(t, R)[0], other),
                               atol=1e-7)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 50.0, 800.0])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_two_class_value_and_gradient_match_the_general_form(k, scale):
    """Two-class experts take a one-exponential form; it agrees with the log-sum-exp of log
    gate + log expert (``value``) and with the general softmax form of a third class that
    no row has and that scores far below, at scores up to the far tails, and stays finite."""
    rng = np.random.default_rng(k)
    X, y = class_data(classes=2)
    sw = rng.random(len(y)) + 0.1
    two = MoEProblem(X, y, k, "logistic", reg=1e-3, sample_weight=sw)
    theta = rng.normal(size=two.n_params) * scale
    f, g = two.value_and_grad(theta)
    assert np.isfinite(f) and np.isfinite(g).all()
    assert f == pytest.approx(two.value(theta), rel=1e-12, abs=1e-12)
    three = MoEProblem(X, y, k, "logistic", reg=1e-3, sample_weight=sw, n_classes=3)
    P = two.unpack(theta)
    coef = np.concatenate([P.coef, np.zeros_like(P.coef)], axis=1)
    coef[:, 1, -1] = -1e4                   # intercept: class 2 has probability e^-1e4 = 0
    t3 = three.pack(P.gate, coef)
    f3, g3 = three.value_and_grad(t3)
    assert f == pytest.approx(f3 - three.penalty_value(t3) + two.penalty_value(theta),
                              rel=1e-12, abs=1e-12)
    g3, G = three.unpack(g3), two.unpack(g)
    np.testing.assert_allclose(G.gate, g3.gate, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(G.coef[:, 0], g3.coef[:, 0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("idx", range(4))
@pytest.mark.parametrize("mstep", ["newton-bound", "bound"])
def test_em_never_increases_the_objective(idx, mstep):
    pb = _problems()[idx]
    theta0 = np.random.default_rng(10 + idx).normal(size=pb.n_params) * 0.5
    fit = fit_em(pb, theta0, max_iter=25 if mstep == "bound" else 60, tol=0.0, mstep=mstep,
                 mstep_tol=1e-6)
    f = np.asarray(fit.trace.objective)
    assert np.all(np.diff(f) <= MONOTONE_RTOL * np.maximum(1.0, np.abs(f[:-1])))
    assert fit.trace.is_monotone()
    assert f[-1] < f[0]
    assert pb.value(fit.x) == pytest.approx(fit.fun, rel=1e-12)


def test_em_beats_gd_on_linear_experts():
    pb = _problems()[0]
    theta0 = np.random.default_rng(3).normal(size=pb.n_params) * 0.5
    em = fit_em(pb, theta0, max_iter=50, tol=0.0)
    gd = fit_gd(pb, theta0, lr=0.3, max_iter=50)
    assert em.fun < gd.fun
    # linear experts recovered (up to the labelling of the experts)
    coef = pb.unpack(em.x).coef[:, :3]
    truth = np.array([[1.0, 2.0, 0.0], [-2.0, 0.0, 1.0]])
    err = min(np.abs(coef - truth).max(), np.abs(coef[::-1] - truth).max())
    assert err < 0.15


def test_gradient_em_with_equal_steps_is_gd():
    pb = _problems()[2]
    theta0 = np.zeros(pb.n_params)
    a = fit_gradient_em(pb, theta0, 0.5, 0.5, max_iter=10)
    b = fit_gd(pb, theta0, 0.5, max_iter=10)
    np.testing.assert_allclose(a.trace.objective, b.trace.objective, rtol=1e-12)


def test_gd_divergence_is_reported():
    pb = _problems()[0]
    fit = fit_gd(pb, np.zeros(pb.n_params), lr=1e6, max_iter=20)
    assert fit.info["diverged"]
    assert np.isfinite(fit.fun)


def test_inner_gd_mstep_reaches_the_bound_mstep_objective():
    pb = _problems()[2]
    theta0 = np.random.default_rng(5).normal(size=pb.n_params) * 0.3
    exact = fit_em(pb, theta0, max_iter=30, tol=0.0)
    inner = fit_em(pb, theta0, max_iter=30, tol=0.0, mstep="gd", inner_steps=20, inner_lr=1.0)
    assert exact.fun <= inner.fun + 1e-9


def test_soft_label_loss_matches_expanded_hard_labels():
    from zbound.models.loss import SoftmaxLoss

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    R = rng.dirichlet(np.ones(3), size=40)
    sw = rng.random(40)
    soft = SoftLabelSoftmaxLoss(X, R, sw, reference_class=True)
    hard = SoftmaxLoss(np.vstack([X] * 3), np.repeat(np.arange(3), 40), 3,
                       (R.T * sw).ravel(), reference_class=True)
    theta = rng.normal(size=soft.n_params)
    f1, g1 = soft.value_and_grad(theta)
    f2, g2 = hard.value_and_grad(theta)
    assert f1 == pytest.approx(f2)
    np.testing.assert_allclose(g1, g2, atol=1e-12)
    m = soft.majorizer(theta)
    d = rng.normal(size=theta.size)
    assert soft.value(theta + d) <= m.evaluate(theta + d) + 1e-12
    with pytest.raises(ValueError, match="sum to 1"):
        SoftLabelSoftmaxLoss(X, R * 2)


# -- symmetric models: Theorem 4.1 -----------------------------------------------------------

@pytest.mark.parametrize("cls", [SMoLinE, SMoLogE])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_em_step_is_mirror_descent_with_unit_step(cls, seed):
    X, y, truth = cls.sample(400, 5, rng=seed)
    m = cls(X, y)
    rng = np.random.default_rng(100 + seed)
    theta = truth + rng.normal(size=truth.size)
    em = m.em_step(theta, tol=1e-12)
    md = m.md_step(theta)
    np.testing.assert_allclose(em, md, atol=1e-8)
    # the divergence is the KL of the complete data
    phi = theta + 0.3 * rng.normal(size=theta.size)
    assert m.bregman(phi, theta) == pytest.approx(m.kl_complete(theta, phi), rel=1e-10)
    assert m.kl_complete(theta, theta) == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("cls", [SMoLinE, SMoLogE])
def test_symmetric_gradient_hessian_and_missing_information(cls):
    X, y, truth = cls.sample(300, 4, rng=7)
    m = cls(X, y)
    theta = truth + 0.5
    f, g = m.value_and_grad(theta)
    np.testing.assert_allclose(g, _fd_grad(m.value, theta), atol=1e-7)
    H = np.array([_fd_grad(lambda t, i=i: m.value_and_grad(t)[1][i], theta, 1e-5)
                  for i in range(theta.size)])
    # grad^2 L = grad^2 A - I_{z|x,y} (eqs. (42)-(43), closed forms (27), (29))
    np.testing.assert_allclose(H, m.hess_A(theta) - m.missing_information(theta), atol=1e-6)
    # at the maximum-likelihood point grad^2 L = I_c - I_m >= 0, so lambda_max(M) <= 1
    mle = fit_em_symmetric(m, truth, 300).x
    mi = missing_information(m, mle)
    assert 0.0 <= mi.eigenvalues[0] and mi.lambda_max <= 1.0 + 1e-8
    np.testing.assert_allclose(np.sort(np.linalg.eigvals(mi.matrix).real), mi.eigenvalues,
                               atol=1e-8)


def test_missing_information_decreases_with_snr():
    lam = []
    for norm in (1.0, 4.0):
        X, y, truth = SMoLinE.sample(2000, 5, norm=norm, rng=3)
        lam.append(missing_information(SMoLinE(X, y), truth).lambda_max)
    assert lam[1] < lam[0]


def test_general_missing_information_in_unit_interval_at_optimum():
    """The finite-difference M(theta) of a MoEProblem has eigenvalues in [0, 1] at a local
    optimum (there grad^2 L = I_c - I_m >= 0)."""
    X, y = _linear_data()
    pb = MoEProblem(X, y, 2, "linear", reg=1e-2)
    fit = fit_em(pb, np.random.default_rng(0).normal(size=pb.n_params) * 0.5, max_iter=500,
                 tol=1e-14)
    mi = missing_information(pb, fit.x)
    assert mi.eigenvalues[0] > -1e-6 and mi.lambda_max < 1.0 + 1e-6


@pytest.mark.parametrize("cls", [SMoLinE, SMoLogE])
def test_symmetric_em_monotone_and_faster_than_gd(cls):
    X, y, truth = cls.sample(1000, 10, rng=11)
    m = cls(X, y)
    theta0 = truth + np.random.default_rng(12).normal(size=truth.size) * 0.5
    em = fit_em_symmetric(m, theta0, 30)
    assert em.trace.is_monotone()
    gd = fit_gd(m, theta0, 1.0, 30)
    assert em.fun <= gd.fun + 1e-12


# -- bad input ----------------------------------------------------------------------------------

def test_bad_input():
    X, y = _linear_data(20)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        MoEProblem(X, y, 0)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MoEProblem(Xn, y, 2)
    with pytest.raises(ValueError, match="expert must be"):
        MoEProblem(X, y, 2, "poisson")
    pb = MoEProblem(X, y, 2)
    bad = np.zeros(pb.n_params)
    bad[0] = np.inf
    with pytest.raises(ValueError, match="NaN or inf"):
        fit_em(pb, bad)
    with pytest.raises(ValueError, match="mstep"):
        fit_em(pb, np.zeros(pb.n_params), mstep="sgd")          # stochastic: not an M-step
    with pytest.raises(ValueError, match="lr"):
        fit_gd(pb, np.zeros(pb.n_params), lr=-1.0)
    with pytest.raises(ValueError, match="at least 2 classes"):
        MoEProblem(X, np.zeros(20, dtype=int), 2, "logistic", n_classes=1)


def test_degenerate_gate_reports_collapsed_expert():
    X, y = _linear_data(200)
    pb = MoEProblem(X, y, 3, "linear")
    P = pb.unpack(np.zeros(pb.n_params))
    theta = np.zeros(pb.n_params)
    # expert 2's gate score is -60 everywhere: it is responsible for nothing
    theta[pb.n_gate - 1] = -60.0
    theta[pb.n_gate + pb.n_coef:] = np.log(pb.y_var)
    assert P.gate.shape == (2, 4)
    fit = fit_em(pb, theta, max_iter=20)
    assert 2 in fit.info["collapsed"]


def test_adam_backends_agree():
    pytest.importorskip("torch", reason="compares torch.optim.Adam with the NumPy Adam")
    pytest.importorskip("zbound.solvers.first_order", reason="the NumPy Adam")
    from zbound.moe import fit_adam

    pb = _problems()[2]
    theta0 = np.random.default_rng(0).normal(size=pb.n_params) * 0.3
    a = fit_adam(pb, theta0, 0.05, 20, backend="torch")
    b = fit_adam(pb, theta0, 0.05, 20, backend="numpy")
    assert a.info["backend"] == "torch" and b.info["backend"] == "numpy"
    np.testing.assert_allclose(a.trace.objective, b.trace.objective, rtol=1e-9)


def test_warm_newton_mstep_on_the_cg_path_is_monotone_and_reuses_its_preconditioner():
    # 9 classes x 41 columns: 328 parameters per expert, past the dense-Cholesky limit, so
    # the M-steps run truncated PCG with the lagged preconditioner kept across EM iterations
    rng = np.random.default_rng(7)
    X = rng.random((400, 40))
    flip = rng.random(400) < 0.5
    X[flip] = 1.0 - X[flip]
    y = np.digitize(X[:, :3].sum(axis=1) * np.where(flip, -1, 1) + 0.3 * rng.normal(size=400),
                    np.linspace(-1.5, 1.5, 8)).astype(int)
    pb = MoEProblem(X, y, 2, "logistic", n_classes=9, reg=1e-3)
    theta0 = rng.normal(size=pb.n_params) * 0.1
    fits = [fit_em(pb, theta0, max_iter=15, tol=0.0, mstep_tol=1e-6, mstep_max_iter=cap,
                   mstep_options=opts)
            for cap, opts in ((1, {"cg_maxiter": 3}), (100, None))]
    for fit in fits:
        f = np.asarray(fit.trace.objective)
        assert np.all(np.diff(f) <= MONOTONE_RTOL * np.maximum(1.0, np.abs(f[:-1])))
        assert f[-1] < f[0] - 0.1
        assert fit.info["mstep_cg_products"] > 0
        # 3 sub-problems x 15 EM iterations; the preconditioners are built far fewer times
        assert fit.info["mstep_preconditioner_builds"] < 15
    # the capped (generalized) EM step still makes most of the exact step's progress
    assert fits[0].fun <= fits[1].fun + 0.05 * (fits[1].trace.objective[0]
                                                            - fits[1].fun)


@pytest.mark.parametrize("mstep", ["squarem", "lbfgs-bound"])
def test_any_registered_bound_method_is_a_monotone_mstep(mstep):
    """EM's M-step takes any registered batch method (its choices are the registry's); with a
    monotone one, EM stays monotone and reaches the newton-bound M-step's objective."""
    pb = _problems()[2]
    theta0 = np.random.default_rng(7).normal(size=pb.n_params) * 0.3
    ref = fit_em(pb, theta0, max_iter=25, tol=0.0)
    fit = fit_em(pb, theta0, max_iter=25, tol=0.0, mstep=mstep, mstep_max_iter=500)
    assert fit.trace.is_monotone()
    assert fit.fun <= ref.fun + 1e-6 * max(1.0, abs(ref.fun))
    with pytest.raises(ValueError, match="mstep"):
        fit_em(pb, theta0, max_iter=2, mstep="adam")


@pytest.mark.parametrize("idx", range(4))
def test_squarem_em_never_increases_the_objective_and_counts_m_steps(idx):
    """SQUAREM on the EM map: a monotone trace on every problem form, at most ``max_iter``
    M-steps, and the objective EM reaches or a lower one."""
    from zbound.moe.em import MixtureEM, MixtureSquarem

    pb = _problems()[idx]
    theta0 = np.random.default_rng(20 + idx).normal(size=pb.n_params) * 0.5
    sq = MixtureSquarem(max_iter=60, tol=0.0, ftol=0.0, mstep_tol=1e-6).run(pb, theta0)
    em = MixtureEM(max_iter=60, tol=0.0, ftol=0.0, mstep_tol=1e-6).run(pb, theta0)
    f = np.asarray(sq.trace.objective)
    assert np.all(np.diff(f) <= MONOTONE_RTOL * np.maximum(1.0, np.abs(f[:-1])))
    assert sq.info["mstep_calls"] <= 60
    assert pb.value(sq.x) == pytest.approx(sq.fun, rel=1e-12)
    assert sq.fun <= em.fun + 1e-9 * abs(em.fun)


def test_squarem_em_takes_fewer_m_steps_where_em_crawls():
    """Two linear experts on diabetes (standardized), where EM needs over a hundred
    iterations: SQUAREM reaches EM's converged objective in well under half its M-steps."""
    from sklearn.datasets import load_diabetes

    from zbound.moe.em import MixtureEM, MixtureSquarem

    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = (y - y.mean()) / y.std()
    pb = MoEProblem(X, y, 2, "linear")
    theta0 = np.random.default_rng(0).normal(size=pb.n_params) * 0.5
    em = MixtureEM(max_iter=3000, tol=0.0, ftol=1e-9).run(pb, theta0)
    sq = MixtureSquarem(max_iter=3000, tol=0.0, ftol=1e-9).run(pb, theta0)
    assert em.converged and sq.converged
    assert sq.fun <= em.fun + 1e-6 * abs(em.fun)
    assert sq.info["mstep_calls"] < 0.5 * em.info["mstep_calls"]
    assert sq.info["extrapolations_accepted"] > 0
