"""Suite ``estimators``: a tiny run end to end, the claims its report checks, and the shared
objective every logistic fit is scored on."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.bench.records import read_suite
from zbound.bench.runner import SUITES, run_suite
from zbound.bench.suites import estimators
from zbound.bench.suites.estimators.problems import logistic_objective, zipf_text


def test_registered():
    from zbound.cli import SUITE_INFO

    assert SUITES["estimators"] == "zbound.bench.suites.estimators"
    assert "estimators" in SUITE_INFO


@pytest.mark.slow
def test_tiny_run(tmp_path):
    doc = run_suite("estimators", quick=True, out=tmp_path, show_progress=False,
                    options={"config": estimators.tiny()})
    read_suite(tmp_path / "estimators.json")
    tasks = {r["task"] for r in doc["records"]}
    assert tasks == {"latent", "moe", "sgd", "partial-fit", "sparse", "small"}
    ours = [r for r in doc["records"] if r["task"] == "sparse" and r["method"] == "zbound"]
    assert ours and all(r["metrics"]["fastest_peer"].startswith("sklearn-") for r in ours)
    moe = next(r for r in doc["records"] if r["method"] == "zbound-moe")
    assert moe["metrics"]["expert"] == "logistic" and moe["metrics"]["method"] == "lbfgs"
    text = (tmp_path / "estimators.md").read_text()
    for title in ("Latent conditional likelihood", "Mixtures of experts", "Stochastic fit",
                  "partial_fit throughput", "Sparse and wide data", "Small problems"):
        assert f"## {title}" in text
    assert text.count("holds") >= 5             # every claim gets a verdict


def test_objective_is_the_one_both_libraries_minimize():
    from sklearn.linear_model import LogisticRegression

    X, y = zipf_text(300, 500, 2, nnz=20)
    est = LogisticRegression(C=10.0, tol=1e-10, max_iter=10_000).fit(X, y)
    f = logistic_objective(X, y, est.coef_, est.intercept_, 10.0)
    # the fitted point is a minimum of that objective: every perturbation raises it
    rng = np.random.default_rng(0)
    for _ in range(5):
        dc = 1e-3 * rng.standard_normal(est.coef_.shape)
        assert logistic_objective(X, y, est.coef_ + dc, est.intercept_, 10.0) > f
        assert logistic_objective(X, y, est.coef_, est.intercept_ + 1e-3, 10.0) > f
    Xm, ym = zipf_text(400, 500, 4, nnz=20)
    assert set(np.unique(ym)) <= {0, 1, 2, 3} and np.unique(ym).size >= 3
    m = LogisticRegression(C=10.0, tol=1e-10, max_iter=10_000).fit(Xm, ym)
    fm = logistic_objective(Xm, ym, m.coef_, m.intercept_, 10.0)
    assert logistic_objective(Xm, ym, 1.001 * m.coef_, m.intercept_, 10.0) > fm
