"""The sub-sampled Hessian of DaskSoftmaxLoss (``hessian_sample``): which rows it uses, that
fits with it reach the exact path's optimum, and that the objective never increases."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="the dask extra is not installed")
pytest.importorskip("distributed", reason="the dask extra is not installed")

from zbound.distributed import DaskSoftmaxLoss, dask_logistic_objective  # noqa: E402
from zbound.distributed import _kernels as K  # noqa: E402
from zbound.models.loss import SoftmaxLoss  # noqa: E402
from zbound.models.multinomial import logistic_objective  # noqa: E402
from zbound.solvers import minimize  # noqa: E402


def _problem(t=1200, d=4, n=3, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(t, d)) * scale
    W = rng.normal(size=(n, d))
    y = np.argmax(X @ W.T + rng.gumbel(size=(t, n)), axis=1)
    return X, y


@pytest.fixture(scope="module")
def cluster_client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        yield client


def test_row_sample_slices():
    assert K._row_sample(1, 0, 100) == (None, 1.0)
    assert K._row_sample(10, 3, 10) == (None, 1.0)           # a chunk of at most m rows
    sl, scale = K._row_sample(10, 13, 95)                    # offset taken modulo m
    assert (sl.start, sl.step) == (3, 10) and scale == 95 / 10
    sl, scale = K._row_sample(4, 0, 10)
    assert len(range(10)[sl]) == 3 and scale == 10 / 3


@pytest.mark.parametrize("n, ref, icpt, curvature, weighted", [
    (2, True, True, "dense", True),          # binary: the dsyrk kernel
    (2, True, False, "dense", False),
    (3, False, True, "dense", False),
    (4, False, True, "operator", True),
])
def test_sampled_hessian_is_the_scaled_hessian_of_the_sampled_rows(n, ref, icpt, curvature,
                                                                    weighted):
    X, y = _problem(t=600, n=n, seed=n)
    sw = np.random.default_rng(1).uniform(0.2, 2.0, 600) if weighted else None
    loss = DaskSoftmaxLoss(da.from_array(X, chunks=(250, 4)), y, n, sample_weight=sw,
                           reference_class=ref, fit_intercept=icpt, curvature=curvature,
                           hessian_sample=0.25)
    theta = np.random.default_rng(2).normal(size=loss.n_params) * 0.3
    full = SoftmaxLoss(X, y, n, sw, reference_class=ref, fit_intercept=icpt)
    f, g, H = loss.value_grad_hessian(theta)
    f0, g0, _ = full.value_grad_hessian(theta)
    assert abs(f - f0) <= 1e-12 * abs(f0)                     # value and gradient: every row
    assert np.abs(g - g0).max() <= 1e-10 * max(1.0, np.abs(g0).max())
    expect = np.zeros((loss.n_params, loss.n_params))
    for a, b in ((0, 250), (250, 500), (500, 600)):           # chunks; m = 4, offset 0
        rows = np.arange(a, b)[0::4]
        part = SoftmaxLoss(X[rows], y[rows], n, None if sw is None else sw[rows],
                           reference_class=ref, fit_intercept=icpt)
        expect += (b - a) / rows.size * part.hessian(theta).to_dense()
    assert np.abs(H.to_dense() - expect).max() <= 1e-10 * np.abs(expect).max()
    # the offset rotates: the next call samples other rows
    H2 = loss.value_grad_hessian(theta)[2].to_dense()
    assert np.abs(H2 - expect).max() > 1e-6 * np.abs(expect).max()


@pytest.mark.parametrize("n, frac", [(2, 0.2), (3, 0.1), (5, 0.25)])
def test_fit_reaches_the_exact_optimum_monotonically(cluster_client, n, frac):
    X, y = _problem(t=4000, d=5, n=n, seed=10 + n)
    k = 1 if n == 2 else n
    pen = np.full(k * 6, 0.5)
    ref = logistic_objective(X, y, n, pen, fit_intercept=True)
    r0 = minimize(ref, np.zeros(ref.n_params), tol=1e-10)
    obj = dask_logistic_objective(da.from_array(X, chunks=(900, 5)), y, n, pen,
                                  fit_intercept=True, client=cluster_client,
                                  hessian_sample=frac)
    r1 = minimize(obj, np.zeros(obj.n_params), tol=1e-10)
    assert r1.converged
    assert abs(r1.fun - r0.fun) <= 1e-10 * abs(r0.fun)
    assert np.abs(r1.x - r0.x).max() <= 1e-5 * max(1.0, np.abs(r0.x).max())
    fs = r1.trace.objective
    assert all(b <= a + 1e-13 * abs(a) for a, b in zip(fs, fs[1:]))


def test_a_poor_sample_is_caught_by_the_safeguard():
    """A 2% sample of badly scaled, nearly separable data: the sampled Newton steps are poor,
    the exact-objective test and the bound keep every iterate's objective non-increasing and
    the fit still ends at the exact optimum."""
    X, y = _problem(t=3000, d=6, n=2, seed=5, scale=4.0)
    X[:, 0] *= 30.0
    pen = np.full(7, 0.05)
    ref = logistic_objective(X, y, 2, pen, fit_intercept=True)
    r0 = minimize(ref, np.zeros(7), tol=1e-10)
    obj = dask_logistic_objective(da.from_array(X, chunks=(1000, 6)), y, 2, pen,
                                  fit_intercept=True, hessian_sample=0.02)
    r1 = minimize(obj, np.zeros(7), tol=1e-10, max_iter=500)
    fs = r1.trace.objective
    assert all(b <= a + 1e-13 * abs(a) for a, b in zip(fs, fs[1:]))
    assert r1.converged and abs(r1.fun - r0.fun) <= 1e-9 * abs(r0.fun)


def test_hessian_sample_is_checked():
    X, y = _problem(t=200)
    Xd = da.from_array(X, chunks=(100, 4))
    for bad in (0.0, 1.5, -0.1, True, "half", "Auto"):
        with pytest.raises(ValueError, match="hessian_sample"):
            DaskSoftmaxLoss(Xd, y, 3, hessian_sample=bad)
    loss = DaskSoftmaxLoss(Xd, y, 3, hessian_sample=1)       # every row: the exact Hessian
    full = SoftmaxLoss(X, y, 3)
    theta = np.linspace(-0.5, 0.5, loss.n_params)
    H = loss.hessian(theta).to_dense()
    assert np.abs(H - full.hessian(theta).to_dense()).max() <= 1e-11 * np.abs(H).max()


@pytest.mark.parametrize("frac", [None, 0.25])
def test_binary_kernel_at_extreme_scores_has_no_overflow(frac):
    """Scores of +-1e4: the fused binary kernel stays finite and warning-free, and agrees with
    the NumPy path (exact rows)."""
    import warnings

    X, y = _problem(t=400, n=2, seed=3)
    loss = DaskSoftmaxLoss(da.from_array(X, chunks=(150, 4)), y, 2, reference_class=True,
                           fit_intercept=True, hessian_sample=frac)
    theta = np.array([3e3, -3e3, 2e3, 1e3, -5e2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f, g, H = loss.value_grad_hessian(theta)
    assert np.isfinite(f) and np.all(np.isfinite(g)) and np.all(np.isfinite(H.to_dense()))
    f0, g0, H0 = SoftmaxLoss(X, y, 2, reference_class=True, fit_intercept=True) \
        .value_grad_hessian(theta)
    assert abs(f - f0) <= 1e-12 * abs(f0)
    assert np.abs(g - g0).max() <= 1e-9 * max(1.0, np.abs(g0).max())
    if frac is None:
        assert np.abs(H.to_dense() - H0.to_dense()).max() <= 1e-12 + 1e-10 * np.abs(
            H0.to_dense()).max()


# -- hessian_sample="auto" (the default) --------------------------------------------------------

def test_auto_rule():
    """Exact for small data and small p; sampled once p and the rarest class are large enough;
    the fraction follows max(AUTO_COST / p, AUTO_ROWS_PER_PARAM d / rarest class rows)."""
    from zbound.distributed import loss as L

    X, y = _problem(t=400)
    assert DaskSoftmaxLoss(da.from_array(X, chunks=(100, 4)), y, 3).hessian_fraction is None
    rng = np.random.default_rng(0)
    t, d = 24_000, 24
    X = rng.normal(size=(t, d))
    Xd = da.from_array(X, chunks=(3000, d))
    y = (X[:, 0] + rng.normal(size=t) > 0).astype(int)            # balanced
    loss = DaskSoftmaxLoss(Xd, y, 2, reference_class=True, fit_intercept=True)
    q = max(L.AUTO_COST / 25, L.AUTO_ROWS_PER_PARAM * 25 / np.bincount(y).min())
    assert loss.hessian_sample == pytest.approx(q)
    assert loss.hessian_fraction == 1.0 / round(1.0 / q) and loss.passes == 0
    assert loss._sample()[0] == round(1.0 / q)
    rare = (X[:, 0] > 1.6).astype(int)                             # ~5% positives: exact
    assert DaskSoftmaxLoss(Xd, rare, 2, reference_class=True).hessian_fraction is None
    few = DaskSoftmaxLoss(Xd[:, :6], y, 2, reference_class=True)   # p = 6: the Hessian is cheap
    assert few.hessian_fraction is None
    exact = DaskSoftmaxLoss(Xd, y, 2, reference_class=True, hessian_sample=None)
    assert exact.hessian_fraction is None and exact._sample() == (1, 0)


@pytest.mark.parametrize("n", [2, 4])
def test_auto_sampled_fit_reaches_the_exact_optimum(cluster_client, monkeypatch, n):
    """With the thresholds lowered so that "auto" samples this small problem, the default fit
    is monotone and ends at the exact path's optimum; hessian_sample=None keeps the NumPy
    path's iterations."""
    from zbound.distributed import loss as L

    monkeypatch.setattr(L, "AUTO_ROWS_PER_PARAM", 10)
    monkeypatch.setattr(L, "AUTO_COST", 2.0)
    X, y = _problem(t=6000, d=5, n=n, seed=20 + n)
    k = 1 if n == 2 else n
    pen = np.full(k * 6, 0.5)
    ref = logistic_objective(X, y, n, pen, fit_intercept=True)
    # newton-bound, what the Dask objective runs by default (in memory, "auto" would pick
    # L-BFGS for this multiclass size: another iteration count)
    r0 = minimize(ref, np.zeros(ref.n_params), method="newton-bound", tol=1e-10)
    Xd = da.from_array(X, chunks=(1000, 5))
    obj = dask_logistic_objective(Xd, y, n, pen, fit_intercept=True, client=cluster_client)
    assert obj.loss.hessian_fraction is not None and obj.loss.hessian_fraction < 0.5
    r1 = minimize(obj, np.zeros(obj.n_params), tol=1e-10)
    assert r1.converged and abs(r1.fun - r0.fun) <= 1e-10 * abs(r0.fun)
    fs = r1.trace.objective
    assert all(b <= a + 1e-13 * abs(a) for a, b in zip(fs, fs[1:]))
    exact = dask_logistic_objective(Xd, y, n, pen, fit_intercept=True, client=cluster_client,
                                    hessian_sample=None)
    r2 = minimize(exact, np.zeros(exact.n_params), tol=1e-10)
    assert r2.nit == r0.nit and abs(r2.fun - r0.fun) <= 1e-10 * abs(r0.fun)
