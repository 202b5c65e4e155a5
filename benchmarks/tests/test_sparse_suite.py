"""Suite ``sparse``: a tiny run end to end, the shared objective, the strength search, and the
harness's time-to-target cell it is built on."""

from __future__ import annotations

import numpy as np
import pytest

from zbound_benchmarks.harness import Cell, Method, Target, search_tolerances
from zbound_benchmarks.records import read_suite
from zbound_benchmarks.runner import SUITES, run_suite
from zbound_benchmarks.suites import sparse
from zbound_benchmarks.suites.sparse.runs import c_min, objective, strength, tfidf


def test_registered():
    from zbound_benchmarks.cli import SUITE_INFO

    assert SUITES["sparse"] == "zbound_benchmarks.suites.sparse"
    assert "sparse" in SUITE_INFO


def test_objective_is_scikit_learns_l1_objective():
    from sklearn.linear_model import LogisticRegression

    X, y = tfidf(300, 500, 10)
    C = 5.0
    ref = LogisticRegression(C=C, l1_ratio=1.0, solver="liblinear", fit_intercept=False,
                             tol=1e-10, max_iter=10_000).fit(X, y)
    from zbound import BoundLogisticRegression

    ours = BoundLogisticRegression(C=C, penalty="l1", fit_intercept=False, tol=1e-10).fit(X, y)
    f_ref, f = objective(ref.coef_, X, y, C), objective(ours.coef_, X, y, C)
    assert f == pytest.approx(f_ref, rel=1e-7)
    assert ours.objective_ * C == pytest.approx(f, rel=1e-9)     # the library's is / C


def test_c_min_is_the_largest_all_zero_strength():
    X, y = tfidf(300, 500, 10)
    from zbound import BoundLogisticRegression

    c0 = c_min(X, y, 2)
    fit = lambda C: BoundLogisticRegression(C=C, penalty="l1", fit_intercept=False,  # noqa
                                            tol=1e-9).fit(X, y).coef_
    assert not fit(0.99 * c0).any() and fit(1.05 * c0).any()
    C = strength(X, y, 2, 0.05)
    assert abs(np.count_nonzero(fit(C)) / 500 - 0.05) <= 0.02


def test_target_cells_time_each_method_at_its_loosest_reaching_tolerance():
    # two fake methods converging at different rates to the same objective 1.0
    calls = []

    def slow(tol):
        calls.append(("slow", tol))
        return 1.0 + tol * 10

    def fast(tol):
        calls.append(("fast", tol))
        return 1.0 + tol * 1e-3

    cell = Cell("t", "d", "s", [Method("slow", slow, peer=True), Method("fast", fast)],
                target=Target(objective=lambda v: v, rel=1e-6, tols=(1e-2, 1e-4, 1e-6, 1e-8)))
    goal, found = search_tolerances(cell)
    assert goal == pytest.approx((1.0 + 1e-11) * (1.0 + 1e-6), rel=1e-12)
    assert found["fast"][0] == 1e-4 and found["slow"][0] == 1e-8


@pytest.mark.slow
def test_tiny_run(tmp_path):
    doc = run_suite("sparse", quick=True, out=tmp_path, show_progress=False,
                    options={"config": sparse.tiny()})
    read_suite(tmp_path / "sparse.json")
    recs = doc["records"]
    assert {r["method"] for r in recs} >= {"zbound", "saga", "liblinear"}
    ours = next(r for r in recs if r["default"])
    assert ours["reached"] and ours["metrics"]["nonzeros"] > 0
    goal = ours["target_objective"]
    assert all(r["final_objective"] <= goal * (1 + 1e-12) for r in recs if r["reached"])
    text = (tmp_path / "sparse.md").read_text()
    assert "Claim" in text and ("holds" in text or "does not hold" in text)
