"""DaskSoftmaxLoss: the chunk map on Dask workers equals the NumPy path (values, gradients,
curvatures, fits), on the threaded scheduler and on a LocalCluster; bad input and lost
workers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array", reason="the dask extra is not installed")
distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")

from zbound import BoundLogisticRegression  # noqa: E402
from zbound.distributed import (  # noqa: E402
    DaskObjective,
    DaskSoftmaxLoss,
    DistributedCurvature,
    DistributedEvaluationError,
    GatheredCurvature,
    dask_logistic_objective,
    is_dask_array,
)
from zbound.models.loss import SoftmaxLoss  # noqa: E402
from zbound.models.multinomial import logistic_objective  # noqa: E402
from zbound.solvers import minimize  # noqa: E402


def _problem(t=1200, d=4, n=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(t, d))
    W = rng.normal(size=(n, d))
    y = np.argmax(X @ W.T + rng.gumbel(size=(t, n)), axis=1)
    return X, y


def _close(a, b, tol=1e-11):
    a, b = np.asarray(a), np.asarray(b)
    assert np.abs(a - b).max() <= tol * max(1.0, np.abs(b).max())


@pytest.fixture(scope="module")
def cluster_client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


# -- the loss protocol against SoftmaxLoss (threaded scheduler) --------------------------------

@pytest.mark.parametrize("n, ref, icpt, curvature, sparse, weighted", [
    (3, False, True, "dense", False, False),
    (4, False, False, "operator", False, True),
    (2, True, True, "auto", False, True),
    (3, True, True, "operator", True, False),
    (3, False, True, "dense", True, True),
])
def test_matches_numpy_path(n, ref, icpt, curvature, sparse, weighted):
    X, y = _problem(n=n)
    rng = np.random.default_rng(1)
    X[rng.random(X.shape) < 0.3] = 0.0
    sw = rng.uniform(0.0, 2.0, X.shape[0]) if weighted else None
    Xd = da.from_array(X, chunks=(250, X.shape[1]))
    if sparse:
        Xd = Xd.map_blocks(sp.csr_matrix, dtype=np.float64)
        X = sp.csr_matrix(X)
    loss = DaskSoftmaxLoss(Xd, y, n, sample_weight=sw, reference_class=ref, fit_intercept=icpt,
                           curvature=curvature, hessian_sample=None)    # the exact Hessian
    ref_loss = SoftmaxLoss(X, y, n, sample_weight=sw, reference_class=ref, fit_intercept=icpt)
    assert loss.n_params == ref_loss.n_params and loss.n_chunks == 5
    theta = 0.3 * rng.normal(size=loss.n_params)
    v = rng.normal(size=loss.n_params)
    _close(loss.value(theta), ref_loss.value(theta))
    f, g = loss.value_and_grad(theta)
    f0, g0 = ref_loss.value_and_grad(theta)
    _close(f, f0)
    _close(g, g0)
    _, _, H = loss.value_grad_hessian(theta)
    H0 = ref_loss.hessian(theta)
    kind = GatheredCurvature if loss.curvature == "dense" else DistributedCurvature
    assert isinstance(H, kind)
    _close(H.matvec(v), H0.matvec(v))
    _close(H.to_dense(), H0.to_dense())
    _close(H.diagonal(), H0.diagonal())
    m, m0 = loss.majorizer(theta), ref_loss.majorizer(theta)
    _close(m.value, m0.value)
    _close(m.grad, m0.grad)
    _close(m.curvature.matvec(v), m0.curvature.matvec(v))
    if kind is DistributedCurvature and not sparse:
        _close(H.diagonal_blocks(), H0.diagonal_blocks())
        _close(H.with_ridge(2.0).matvec(v), H0.matvec(v) + 2.0 * v)
    P = loss.predict_proba(theta)
    assert is_dask_array(P)
    _close(P.compute(), ref_loss.predict_proba(theta))


def test_auto_curvature_by_class_pairs():
    X, y = _problem(n=10, t=400)
    Xd = da.from_array(X, chunks=(100, 4))
    assert DaskSoftmaxLoss(Xd, y, 10).curvature == "operator"
    assert DaskSoftmaxLoss(Xd, y % 3, 3).curvature == "dense"
    assert DaskSoftmaxLoss(Xd, y % 2, 2, reference_class=True).curvature == "dense"


def test_minimize_threaded_equals_numpy_and_counts_passes():
    X, y = _problem(t=2000, n=3)
    pen = np.full((3, 5), 0.5)
    pen[:, -1] = 0.0
    ref = logistic_objective(X, y, 3, pen.ravel(), None, 2000 / 9, fit_intercept=True)
    obj = dask_logistic_objective(da.from_array(X, chunks=(600, 4)), y, 3, pen.ravel(), None,
                                  2000 / 9, fit_intercept=True)
    assert isinstance(obj, DaskObjective)
    # the default hessian_sample="auto" takes every row at this size: the NumPy path's steps
    assert obj.loss.hessian_sample is None and obj.loss.hessian_fraction is None
    r0 = minimize(ref, np.zeros(ref.n_params), tol=1e-10)
    r1 = minimize(obj, np.zeros(obj.n_params), tol=1e-10)
    assert r0.converged and r1.converged
    assert r1.nit == r0.nit
    assert abs(r1.fun - r0.fun) <= 1e-10 * abs(r0.fun)
    _close(r1.x, r0.x, 1e-7)
    assert obj.passes >= r1.nit


# -- bad input ----------------------------------------------------------------------------------

def test_bad_input_is_named():
    X, y = _problem(t=300)
    Xd = da.from_array(X, chunks=(100, 4))
    with pytest.raises(TypeError, match="dask array"):
        DaskSoftmaxLoss(X, y, 3)
    bad = X.copy()
    bad[150, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        DaskSoftmaxLoss(da.from_array(bad, chunks=(100, 4)), y, 3)
    with pytest.raises(ValueError, match=r"class indices must lie in \[0, 2\)"):
        DaskSoftmaxLoss(Xd, y, 2)
    with pytest.raises(ValueError, match="shape"):
        DaskSoftmaxLoss(Xd, y[:-1], 3)
    with pytest.raises(ValueError, match="sample_weight"):
        DaskSoftmaxLoss(Xd, y, 3, sample_weight=-np.ones(300))
    with pytest.raises(ValueError, match="curvature"):
        DaskSoftmaxLoss(Xd, y, 3, curvature="low-rank")
    with pytest.raises(ValueError, match="at least 2 classes"):
        DaskSoftmaxLoss(Xd, np.zeros(300, dtype=int))
    loss = DaskSoftmaxLoss(Xd, y, 3)
    with pytest.raises(ValueError, match="theta must have shape"):
        loss.value(np.zeros(5))


def test_estimator_rejects_single_class_dask():
    X, _ = _problem(t=200)
    with pytest.raises(ValueError, match="at least 2 classes"):
        BoundLogisticRegression().fit(da.from_array(X, chunks=(50, 4)), np.ones(200))


def test_estimator_takes_masked_dask_inputs_with_unknown_chunk_sizes():
    """X[m], y[m] (and sample weights) after boolean masking have NaN chunk sizes until
    computed; the fit computes them instead of refusing y's shape (nan,)."""
    X, y = _problem(t=900, d=4, n=3, seed=5)
    sw = np.random.default_rng(1).uniform(0.5, 1.5, y.size)
    Xd, yd, swd = (da.from_array(a, chunks=300) if a.ndim == 1 else
                   da.from_array(a, chunks=(300, 4)) for a in (X, y, sw))
    keep = X[:, 0] > -0.5
    m = da.from_array(keep, chunks=300)
    assert np.isnan(Xd[m].shape[0]) and np.isnan(yd[m].shape[0])
    kw = dict(C=0.5, tol=1e-9)
    est = BoundLogisticRegression(**kw).fit(Xd[m], yd[m], sample_weight=swd[m])
    ref = BoundLogisticRegression(**kw).fit(X[keep], y[keep], sample_weight=sw[keep])
    # both stop at a relative gradient of 1e-9: the objectives agree to their rounding
    # (tests/_tolerance.py rule 1, a sum of ~600 row losses: ~2e-12 relative)
    assert abs(est.objective_ - ref.objective_) <= 1e-10 * abs(ref.objective_)
    _close(est.coef_, ref.coef_, 1e-6)
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        BoundLogisticRegression().fit(Xd[m], yd[m], sample_weight=swd)


# -- a LocalCluster with 2 workers ------------------------------------------------------------

def test_fits_on_a_cluster_reuse_no_task_key(cluster_client, caplog):
    """Repeated fits and predictions (weights, class weights, labels that differ between fits)
    never resubmit a key with another task: the scheduler logs no "different run_spec"."""
    import logging

    X, y = _problem(t=2000, d=4, n=3, seed=5)
    Xd = da.from_array(X, chunks=(500, 4))
    with caplog.at_level(logging.WARNING, logger="distributed"):
        for kw, labels, sw in [({}, y, None), ({}, y, None),
                               ({"class_weight": "balanced"}, y, None),
                               ({"class_weight": {0: 2.0}}, (y > 0).astype(int),
                                da.ones(2000, chunks=500)),
                               ({}, np.array(["a", "b", "c"])[y], np.ones(2000))]:
            est = BoundLogisticRegression(**kw).fit(Xd, da.from_array(labels, chunks=500),
                                                   sample_weight=sw)
            est.predict(Xd).compute()
            est.predict_proba(Xd).compute()
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "run_spec" in m], messages[:1]


@pytest.mark.parametrize("n, class_weight", [(2, None), (4, "balanced"), (10, None)])
def test_estimator_on_local_cluster_equals_numpy(cluster_client, n, class_weight):
    X, y = _problem(t=3000, d=5, n=n, seed=n)
    labels = np.array([f"c{i}" for i in range(n)])[y]
    sw = np.random.default_rng(3).uniform(0.5, 1.5, y.size)
    # one solver on both (solver="auto" may pick L-BFGS in memory, whose bound
    # preconditioner the Dask objective does not build; then only the optimum is shared)
    kw = dict(C=0.5, tol=1e-9, class_weight=class_weight, solver="newton-bound")
    est0 = BoundLogisticRegression(**kw).fit(X, labels, sample_weight=sw)
    Xd = da.from_array(X, chunks=(700, 5))
    yd = da.from_array(labels, chunks=(700,))
    est1 = BoundLogisticRegression(**kw).fit(Xd, yd, sample_weight=sw)
    assert est1.n_iter_[0] == est0.n_iter_[0]
    auto = BoundLogisticRegression(C=0.5, tol=1e-9, class_weight=class_weight).fit(
        X, labels, sample_weight=sw)
    assert abs(auto.objective_ - est0.objective_) <= 1e-8 * abs(est0.objective_)
    assert abs(est1.objective_ - est0.objective_) <= 1e-10 * abs(est0.objective_)
    _close(est1.coef_, est0.coef_, 1e-6)
    assert est1.n_features_in_ == 5
    assert np.array_equal(est1.classes_, est0.classes_)
    pred = est1.predict(Xd)
    assert is_dask_array(pred)
    assert np.array_equal(pred.compute(), est0.predict(X))
    _close(est1.predict_proba(Xd).compute(), est0.predict_proba(X), 1e-6)


def test_bound_method_on_local_cluster(cluster_client):
    X, y = _problem(t=600, n=6)
    pen = np.full(6 * 4, 1.0)
    ref = logistic_objective(X, y, 6, pen)
    obj = dask_logistic_objective(da.from_array(X, chunks=(200, 4)), y, 6, pen,
                                  client=cluster_client)
    assert obj.loss.curvature == "operator"
    r0 = minimize(ref, np.zeros(ref.n_params), method="bound", tol=1e-5, inner="cholesky")
    r1 = minimize(obj, np.zeros(obj.n_params), method="bound", tol=1e-5, inner="cholesky")
    assert r1.nit == r0.nit
    assert abs(r1.fun - r0.fun) <= 1e-10 * abs(r0.fun)
    fs = r1.trace.objective
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(fs, fs[1:]))


def test_closed_client_fails_with_clear_error():
    from distributed import Client, LocalCluster

    X, y = _problem(t=1500, n=3)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster:
        client = Client(cluster, set_as_default=False)
        obj = dask_logistic_objective(da.from_array(X, chunks=(400, 4)), y, 3,
                                      np.full(12, 1.0), client=client)

        def close_after_first(x, f):
            client.close()
            return False

        with pytest.raises(DistributedEvaluationError, match="failed on the Dask cluster"):
            minimize(obj, np.zeros(obj.n_params), callback=close_after_first)


@pytest.mark.slow
def test_worker_killed_mid_fit_is_recomputed():
    """A worker process dies after the first iteration: Dask recomputes its chunks on the
    other worker (and the restarted one) and the fit ends where the NumPy path does."""
    import os
    import signal

    from distributed import Client, LocalCluster

    X, y = _problem(t=4000, d=5, n=4, seed=7)
    pen = np.full(4 * 5, 0.5)
    ref = logistic_objective(X, y, 4, pen)
    r0 = minimize(ref, np.zeros(ref.n_params), tol=1e-10)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        obj = dask_logistic_objective(da.from_array(X, chunks=(500, 5)), y, 4, pen,
                                      client=client, hessian_sample=None)
        killed = []

        def kill_one(x, f):
            if not killed:
                victim, pid = sorted(client.run(os.getpid).items())[0]
                killed.append(victim)
                os.kill(pid, signal.SIGKILL)        # the worker process dies at once
            return False

        r1 = minimize(obj, np.zeros(obj.n_params), tol=1e-10, callback=kill_one)
        alive = set(client.scheduler_info()["workers"])
    assert killed and killed[0] not in alive        # the process did die
    assert r1.converged and r1.nit == r0.nit
    assert abs(r1.fun - r0.fun) <= 1e-10 * abs(r0.fun)
