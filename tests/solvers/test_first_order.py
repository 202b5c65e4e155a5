"""NumPy first-order rules (zbound.solvers.first_order) against torch.optim's update formulas."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.solvers.first_order import SGD, Adam


def _quadratic(seed, p=7):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((p, p))
    H = A @ A.T / p + 0.1 * np.eye(p)
    b = rng.standard_normal(p)
    noise = rng.standard_normal((60, p)) * 0.3      # a fixed "stochastic" gradient stream
    x0 = rng.standard_normal(p)
    return H, b, noise, x0


def _run_numpy(opt, H, b, noise, x0):
    x = x0.copy()
    out = []
    for e in noise:
        x = opt.step(x, H @ x - b + e)
        out.append(x)
    return np.array(out)


def _run_torch(make, H, b, noise, x0):
    torch = pytest.importorskip("torch", reason="comparison against torch.optim")
    xt = torch.tensor(x0.copy(), dtype=torch.float64, requires_grad=True)
    opt = make(torch, [xt])
    Ht, bt = torch.tensor(H), torch.tensor(b)
    out = []
    for e in noise:
        opt.zero_grad()
        with torch.no_grad():
            xt.grad = Ht @ xt - bt + torch.tensor(e)
        opt.step()
        out.append(xt.detach().numpy().copy())
    return np.array(out)


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.5, weight_decay=0.01),
    dict(lr=0.05, momentum=0.7, dampening=0.3),
    dict(lr=0.2, weight_decay=0.1),
]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_matches_torch(seed, kw):
    H, b, noise, x0 = _quadratic(seed)
    ours = _run_numpy(SGD(**kw), H, b, noise, x0)
    ref = _run_torch(lambda torch, params: torch.optim.SGD(params, **kw), H, b, noise, x0)
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


ADAM_CASES = [
    dict(lr=1e-2),
    dict(lr=5e-2, betas=(0.8, 0.99)),
    dict(lr=1e-2, weight_decay=0.05),
    dict(lr=1e-1, eps=1e-3, betas=(0.5, 0.9)),
]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kw", ADAM_CASES)
def test_adam_matches_torch(seed, kw):
    H, b, noise, x0 = _quadratic(seed)
    ours = _run_numpy(Adam(**kw), H, b, noise, x0)
    ref = _run_torch(lambda torch, params: torch.optim.Adam(params, **kw), H, b, noise, x0)
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("opt", [SGD(0.1, momentum=0.9), Adam(1e-2)])
def test_reset_and_no_in_place(opt):
    H, b, noise, x0 = _quadratic(0)
    first = _run_numpy(opt.reset(), H, b, noise, x0)
    x = x0.copy()
    g = H @ x - b
    g0 = g.copy()
    opt.reset().step(x, g)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(g, g0)
    again = _run_numpy(opt.reset(), H, b, noise, x0)
    np.testing.assert_array_equal(first, again)


def test_rules_converge_on_a_quadratic():
    H, b, _, x0 = _quadratic(1)
    xstar = np.linalg.solve(H, b)
    for opt in (SGD(0.2), SGD(0.1, momentum=0.9, nesterov=True), Adam(0.05)):
        x = x0.copy()
        for _ in range(3000):
            x = opt.step(x, H @ x - b)
        np.testing.assert_allclose(x, xstar, atol=1e-5)


@pytest.mark.parametrize("bad", [dict(lr=0), dict(lr=-1), dict(lr=np.nan),
                                 dict(lr=0.1, momentum=1.0), dict(lr=0.1, nesterov=True),
                                 dict(lr=0.1, weight_decay=-1)])
def test_sgd_bad_settings(bad):
    with pytest.raises(ValueError):
        SGD(**bad)


@pytest.mark.parametrize("bad", [dict(lr=0), dict(betas=(1.0, 0.9)), dict(eps=-1)])
def test_adam_bad_settings(bad):
    with pytest.raises(ValueError):
        Adam(**bad)


def test_bad_gradients():
    with pytest.raises(ValueError, match="shape"):
        SGD(0.1).step(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        Adam().step(np.zeros(3), np.array([0.0, np.nan, 1.0]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adagrad_matches_torch(seed):
    from zbound.solvers.first_order import AdaGrad

    H, b, noise, x0 = _quadratic(seed)
    ours = _run_numpy(AdaGrad(lr=0.3, eps=1e-10), H, b, noise, x0)
    ref = _run_torch(lambda torch, p: torch.optim.Adagrad(p, lr=0.3, eps=1e-10), H, b,
                     noise, x0)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,kw", [("SGD", {"momentum": 0.9}), ("Adam", {}),
                                     ("Adagrad", {"eps": 1e-10})])
def test_torch_rule_is_the_torch_optimizer_behind_the_rule_interface(name, kw):
    """TorchRule(name) steps exactly as torch.optim does, takes a step size set between
    steps, and starts from an iterate the caller moved."""
    pytest.importorskip("torch", reason="comparison against torch.optim")
    from zbound.solvers.first_order import TorchRule

    H, b, noise, x0 = _quadratic(3)
    ours = _run_numpy(TorchRule(name, x0, 0.05, **kw), H, b, noise, x0)
    ref = _run_torch(lambda torch, p: getattr(torch.optim, name)(p, lr=0.05, **kw), H, b,
                     noise, x0)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-14)
    rule = TorchRule("SGD", x0, 0.1)
    rule.lr = 0.5
    g = H @ x0 - b
    np.testing.assert_allclose(rule.step(x0, g), x0 - 0.5 * g, rtol=1e-15)
    moved = x0 + 1.0
    np.testing.assert_allclose(rule.step(moved, g), moved - 0.5 * g, rtol=1e-15)


def test_adagrad_refuses_a_non_finite_gradient():
    from zbound.solvers.first_order import AdaGrad

    with pytest.raises(ValueError, match="NaN or inf"):
        AdaGrad().step(np.zeros(3), np.array([0.0, np.nan, 1.0]))
