"""Suite ``logreg-small``: objective mapping to scikit-learn, a tiny smoke run, report logic."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from zbound.solvers import DEFAULT_METHOD, MethodInfo, Solver, State, register, unregister
from zbound_benchmarks.records import REQUIRED_FIELDS, read_suite
from zbound_benchmarks.runner import run_suite
from zbound_benchmarks.suites import logreg_small as L
from zbound_benchmarks.suites.logreg import Data, Problem, start_points
from zbound_benchmarks.suites.logreg_small.config import (
    LAMBDAS,
    SKLEARN_PEERS,
    SOLVER_PEERS,
    TABLE3_SETS,
)
from zbound_benchmarks.suites.logreg_small.problems import (
    PAPER_DIMS,
    build_problem,
    cells,
    load_design,
    reference_optimum,
)
from zbound_benchmarks.suites.logreg_small.report import (
    PAPER_TABLE3,
    PAPER_TO_OURS,
    ranking_rows,
    ratio_rows,
    ratio_verdict,
    squarem_rows,
)
from zbound_benchmarks.suites.logreg_small.runs import (
    method_plan,
    squarem_count_check,
)


def _wine(binary: bool) -> Data:
    data = load_design("wine")
    if binary:
        keep = data.y < 2
        return Data("wine", data.X[keep], data.y[keep], 2, "two classes")
    return data


def _problem(data: Data, reg: float) -> Problem:
    return Problem("t", data.name, "s", data, data.X, C=1.0 / reg)


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("reg", [5.0, 50.0])
def test_sklearn_objective_matches_ours(binary, reg):
    """scikit-learn's optimum, mapped to our theta, is our optimum (the C = 2/reg rule for 2
    classes, C = 1/reg for >= 3)."""
    from sklearn.linear_model import LogisticRegression

    data = _wine(binary)
    prob = _problem(data, reg)
    model = prob.model()
    ref = reference_optimum(model)
    clf = LogisticRegression(C=prob.sklearn_C(), fit_intercept=False, tol=1e-12,
                             max_iter=10000).fit(data.X, data.y)
    theta = prob.theta_from(clf.coef_)
    assert theta.shape == (model.n_params,)
    f_sk = model.value(theta)
    assert abs(f_sk - ref["f_star"]) <= 1e-9 * abs(ref["f_star"])
    np.testing.assert_allclose(theta, ref["theta_star"], atol=1e-5)
    # the reference: BFGS and the Newton polish agree, and the polished gradient is ~0
    assert ref["bfgs_newton_rel_diff"] < 1e-8
    assert ref["grad_inf_norm"] < 1e-6


def test_binary_mapping_has_opposite_rows():
    w = np.array([[1.0, -2.0, 4.0]])
    binary, three = _problem(_wine(True), 4.0), _problem(_wine(False), 4.0)
    theta = binary.theta_from(w)
    W = theta.reshape(2, 3)
    np.testing.assert_allclose(W[1] - W[0], w[0])
    np.testing.assert_allclose(W[0] + W[1], 0.0)
    assert binary.sklearn_C() == 0.5 and three.sklearn_C() == 0.25


def test_paper_table_is_complete():
    for method, table in PAPER_TABLE3.items():
        assert len(table) == 15, method
        assert set(table) == {(d, lam) for d in TABLE3_SETS for lam in LAMBDAS}
    assert PAPER_TABLE3["Bound"][("ionosphere", 1.0)] == 0.16
    assert PAPER_TABLE3["SD"][("ionosphere", 1.0)] == 12.04
    assert set(PAPER_TO_OURS) == set(PAPER_TABLE3)


def test_cells_and_quick_config_keep_every_method():
    full, quick = L.config(False), L.config(True)
    assert len(cells(full)) == 15 + 12
    assert full.starts_table3 == 10 and full.repeats >= 3 and quick.repeats >= 3
    assert quick.methods is None  # --quick keeps every method and peer
    methods = {m.name: m for m in method_plan(quick)}
    library = {n for n, m in methods.items() if not m.peer}
    assert DEFAULT_METHOD in library and set(SOLVER_PEERS) | set(SKLEARN_PEERS) <= set(methods)
    assert {"bound", "squarem", "newton-bound"} <= library


def test_start_points_shared_and_small():
    a = start_points("wine", 4, 42)
    b = start_points("wine", 4, 42)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (4, 42) and 0.003 < a.std() < 0.03


def test_tiny_config_is_small_and_keeps_every_method():
    cfg = L.tiny()
    assert [tuple(c) for c in cells(cfg)] == [("table3", "wine", "lambda=100", 100.0, None),
                                                ("weak-l2", "wine", "C=1", None, 1.0)]
    assert cfg.methods is None and method_plan(cfg) == method_plan(L.config(True))
    assert L.tiny(weak_sets=()).weak_sets == ()


class TinyNewton(Solver):
    """A small new solver: full Newton steps, no line search (enough on these convex cells)."""

    info = MethodInfo("tiny-newton", peer=False, constraints="none",
                      needs=("value_and_grad", "value_grad_hessian"),
                      description="full Newton steps (test)")

    def init(self, model, x):
        f, g = model.value_and_grad(x)
        return State(x, f, g)

    def update(self, model, state):
        _, g, H = model.value_grad_hessian(state.x)
        x = state.x - np.linalg.solve(H.to_dense(), g)
        f, g = model.value_and_grad(x)
        self.accept(model, state, x, f, g)


class TinyPeer(TinyNewton):
    info = dataclasses.replace(TinyNewton.info, name="tiny-peer", peer=True)


@pytest.fixture
def tiny_methods():
    register(TinyNewton)
    register(TinyPeer)
    yield
    unregister("tiny-newton")
    unregister("tiny-peer")


def test_extra_methods_come_from_the_registry(tiny_methods):
    base = [m.name for m in method_plan(L.config(True))]
    plan = method_plan(L.tiny(extra_methods=("tiny-newton", "tiny-peer", "bfgs", "bound")))
    spec = {m.name: m.spec for m in plan}
    assert spec["tiny-newton"] == "tiny-newton" and spec["tiny-peer"] == "tiny-peer"
    peer = {m.name: m.peer for m in plan}
    assert not peer["tiny-newton"] and peer["tiny-peer"]  # METHODS[name].peer
    # already run under another record name (scipy-bfgs) or as a built-in: not twice
    assert "bfgs" not in spec and [m.name for m in plan].count("bound") == 1
    assert set(spec) == set(base) | {"tiny-newton", "tiny-peer"}
    with pytest.raises(ValueError, match="not registered"):
        method_plan(L.tiny(extra_methods=("no-such-method",)))


@pytest.mark.slow
def test_smoke_run_json_contract(tmp_path):
    doc = run_suite("logreg-small", quick=True, out=tmp_path, show_progress=False,
                    options={"config": L.tiny()})
    on_disk = read_suite(tmp_path / "logreg-small.json")
    assert on_disk["suite"] == "logreg-small" and on_disk["quick"] is True
    assert on_disk["records"] == doc["records"]
    recs = doc["records"]
    plan = method_plan(L.tiny())
    library = {m.name for m in plan if not m.peer}
    methods = {m.name for m in plan}
    default = DEFAULT_METHOD
    cells = {("table3", "wine", "lambda=100"), ("weak-l2", "wine", "C=1")}
    cells_sorted = sorted(cells)
    assert {(r["task"], r["dataset"], r["setting"]) for r in recs} == cells
    assert len(recs) == len(cells) * len(methods)
    for cell in cells:
        cell_recs = [r for r in recs if (r["task"], r["dataset"], r["setting"]) == cell]
        assert {r["method"] for r in cell_recs} == methods
        defaults = [r for r in cell_recs if r["default"]]
        assert len(defaults) == 1 and defaults[0]["method"] == default
        assert not defaults[0]["peer"]
    for r in recs:
        assert set(REQUIRED_FIELDS) <= set(r)
        assert r["peer"] == (r["method"] not in library)
        assert r["reached"], r["method"]
        assert r["time_to_target_s"] > 0
        assert r["final_objective"] <= r["target_objective"]
        m = r["metrics"]
        assert m["iterations"] >= 0 and m["n_reached"] == m["n_starts"]
        assert len(m["time_per_start_s"]) == m["n_starts"]
        f_star = m["f_star"]
        # the cell's numbers are stored, not parsed back from the setting string
        data = load_design("wine")
        X = data.X
        assert (m["t"], m["d"], m["n_classes"]) == (X.shape[0], X.shape[1], data.n_classes)
        if r["task"] == "table3":
            assert m["lambda"] == 100.0 and m["C"] is None
            assert m["reg"] == pytest.approx(X.shape[0] * 100.0)
        else:
            assert m["C"] == 1.0 and m["lambda"] is None and m["reg"] == 1.0
        assert r["target_objective"] == pytest.approx(f_star + 1e-6 * abs(f_star), rel=1e-12)
        if r["method"].startswith("sklearn-"):
            assert r["evaluations"] is None and m["tol"] in (1e-2, 1e-4, 1e-6, 1e-8)
            assert m["stops_at_target"] is False
        else:
            assert r["evaluations"] >= 1 and m["stops_at_target"] is True
    extra = doc["extra"]
    assert set(extra["references"]) == {"/".join(c) for c in cells}
    assert extra["config"]["default_method"] == default
    curve = extra["curves"]["table3/wine/lambda=100"]
    assert (curve["task"], curve["dataset"], curve["setting"]) == cells_sorted[0]
    assert set(curve["methods"]) == methods
    text = (tmp_path / "logreg-small.md").read_text()
    for heading in ("## Table 3: seconds to target", "## Default solver vs fastest peer",
                    "## SQUAREM vs plain Alg. 2", "## Does the paper's ranking hold?",
                    "## Convergence", "## All records"):
        assert heading in text
    assert (tmp_path / "logreg-small-table3-wine.png").stat().st_size > 1000
    assert (tmp_path / "logreg-small-weak-l2-wine.png").stat().st_size > 1000


def test_a_registered_method_runs_through_the_suite(tmp_path, tiny_methods):
    """A newly registered solver is benchmarked by name: ``run_suite(methods=[...])`` adds it
    to the suite's own methods, and it runs through ``zbound.solvers.minimize``."""
    default = DEFAULT_METHOD
    cfg = L.tiny(weak_sets=(), starts_table3=1, repeats=1,
                 methods=(default, "tiny-newton", "tiny-peer", "newton", "sklearn-lbfgs"))
    doc = run_suite("logreg-small", quick=True, out=tmp_path, show_progress=False,
                    methods=["tiny-newton", "tiny-peer"], options={"config": cfg})
    recs = {r["method"]: r for r in doc["records"]}
    assert set(recs) == {default, "tiny-newton", "tiny-peer", "newton", "sklearn-lbfgs"}
    for name, peer in (("tiny-newton", False), ("tiny-peer", True)):
        r = recs[name]
        assert r["peer"] is peer and r["default"] is False and r["reached"], name
        assert r["metrics"]["solver"] == name and r["evaluations"] >= 1
        assert r["final_objective"] <= r["target_objective"]
    assert doc["extra"]["config"]["extra_methods"] == ["tiny-newton", "tiny-peer"]
    assert "tiny-newton" in (tmp_path / "logreg-small.md").read_text()


def _rec(task, dataset, setting, method, t, peer=False, default=False, reached=True, evals=None,
         **metrics):
    return {"task": task, "dataset": dataset, "setting": setting, "method": method,
            "peer": peer, "default": default, "reached": reached,
            "time_to_target_s": t if reached else None,
            "metrics": {"bound_evaluations": evals, "iterations": 1, **metrics}}


def test_ratio_verdict_counts_and_cap():
    recs = []
    for k, ratio in enumerate([0.4] * 12 + [0.9, 0.6, 0.7]):
        recs += [_rec("table3", f"d{k}", "lambda=1", "newton-bound", ratio, default=True),
                 _rec("table3", f"d{k}", "lambda=1", "newton", 1.0, peer=True),
                 _rec("table3", f"d{k}", "lambda=1", "steepest", 2.0, peer=True),
                 _rec("table3", f"d{k}", "lambda=1", "scipy-lbfgsb", 4.0, peer=True)]
    rows = ratio_rows(recs, "table3")
    assert [r["peer"] for r in rows] == ["newton"] * 15
    # the SciPy/sklearn-only comparison skips the library's own baselines
    assert [r["external_peer"] for r in rows] == ["scipy-lbfgsb"] * 15
    assert rows[0]["external_ratio"] == pytest.approx(0.1)
    v = ratio_verdict(rows, "table3")
    assert v["good"] == 12 and v["pass"] and v["worst"] == pytest.approx(0.9)
    recs[-4]["time_to_target_s"] = 1.5  # one cell above the cap
    v = ratio_verdict(ratio_rows(recs, "table3"), "table3")
    assert not v["pass"] and v["worst"] == pytest.approx(1.5)
    recs[-4]["reached"] = False  # a default that misses the target fails the cap
    v = ratio_verdict(ratio_rows(recs, "table3"), "table3")
    assert not v["pass"] and math.isinf(v["worst"])
    assert v["needed"] == 12 and v["decided"]


def test_ratio_verdict_on_a_quick_grid_counts_the_cells_present():
    """Three cells that all pass: the share is counted on them (3 of 3), not the full grid's
    12 of 15, and three cells are too few to decide."""
    recs = []
    for k in range(3):
        recs += [_rec("table3", f"d{k}", "lambda=1", "newton-bound", 0.3, default=True),
                 _rec("table3", f"d{k}", "lambda=1", "newton", 1.0, peer=True)]
    v = ratio_verdict(ratio_rows(recs, "table3"), "table3")
    assert v["cells"] == 3 and v["needed"] == 3 and v["pass"] and not v["decided"]
    recs[0]["time_to_target_s"] = 0.9                      # one cell above 0.5x
    v = ratio_verdict(ratio_rows(recs, "table3"), "table3")
    assert not v["pass"]
    rows = [dict(r, ratio=0.4) for r in ratio_rows(recs, "table3")] * 2
    v = ratio_verdict(rows, "table3")
    assert v["cells"] == 6 and v["needed"] == 5 and v["pass"] and v["decided"]


def test_squarem_rule_applies_only_above_100_bound_evaluations():
    recs = [_rec("weak-l2", "a", "C=1", "bound", 1.0, evals=90),
            _rec("weak-l2", "a", "C=1", "squarem", 1.0, evals=30),
            _rec("weak-l2", "b", "C=1", "bound", 1.0, evals=500),
            _rec("weak-l2", "b", "C=1", "squarem", 1.0, evals=99),
            _rec("weak-l2", "c", "C=1", "bound", 1.0, evals=500),
            _rec("weak-l2", "c", "C=1", "squarem", 1.0, evals=101)]
    recs += [_rec("weak-l2", "d", "C=1", "bound", None, reached=False, evals=300),
             _rec("weak-l2", "d", "C=1", "squarem", 1.0, evals=150),
             _rec("weak-l2", "e", "C=1", "bound", None, reached=False, evals=300),
             _rec("weak-l2", "e", "C=1", "squarem", None, reached=False, evals=150)]
    rows = {r["dataset"]: r for r in squarem_rows(recs)}
    assert rows["a"]["applies"] is False and rows["a"]["pass"] is None
    assert rows["b"]["pass"] is True and rows["c"]["pass"] is False
    # plain Alg. 2 cut off by the budget: 2x is only a lower bound, so undetermined
    assert rows["d"]["applies"] and rows["d"]["pass"] is None and rows["d"]["factor_is_lower_bound"]
    assert rows["e"]["pass"] is False  # SQUAREM did not reach the target either


def test_ranking_rows():
    times = {"bound": 0.1, "newton": 0.2, "scipy-cg": 0.3, "scipy-bfgs": 0.5, "steepest": 0.4}
    recs = [_rec("table3", "w", "lambda=1", m, t, peer=m != "bound") for m, t in times.items()]
    (row,) = ranking_rows(recs)
    assert row["order"] == ["Bound", "Newton", "CG", "SD", "BFGS"] and row["holds"]
    recs[0]["time_to_target_s"] = 0.35
    (row,) = ranking_rows(recs)
    assert not row["bound_first"] and row["newton_before_cg"] and not row["holds"]


def test_report_reads_cell_numbers_from_metrics(tmp_path):
    """Table 3 and the ranking take lambda from the records' metrics: a setting label that does
    not spell it out still finds the paper's numbers."""
    times = {"bound": 0.1, "newton": 0.2, "scipy-cg": 0.3, "scipy-bfgs": 0.5, "steepest": 0.4,
             "newton-bound": 0.05}
    recs = [_rec("table3", "wine", "strong", m, t, peer=m not in ("bound", "newton-bound"),
                 default=m == "newton-bound", **{"lambda": 100.0, "C": None})
            for m, t in times.items()]
    (row,) = ranking_rows(recs)
    assert row["lambda"] == 100.0
    text = L.report({"records": recs, "extra": {}}, tmp_path)
    paper = PAPER_TABLE3["BFGS"][("wine", 100.0)]
    assert f"| wine | 100 | {paper:.2f} |" in text
    assert "| wine | 100 | Bound < Newton" in text


@pytest.mark.data
def test_table3_design_dimensions():
    for name, dim in PAPER_DIMS.items():
        data = load_design(name)
        assert data.X.shape[1] == dim, name
        assert data.n_classes == (3 if name == "wine" else 2)
        np.testing.assert_allclose(data.X[:, -1], 1.0)
    assert load_design("spect").X.shape[0] == 187


@pytest.mark.data
def test_squarem_count_check_decides_without_running_to_the_end():
    """Plain Alg. 2 on wine, C = 10, needs several hundred bound evaluations: capped at 5x a
    small count it stops unreached (pass, factor a lower bound); capped above its true count it
    reaches the target and the exact factor decides (fail below 5x)."""
    prob = build_problem("weak-l2", "wine", "C=10", None, 10.0, load_design("wine"))
    starts = start_points("wine", 1, prob.n_params)
    cfg = L.Config(count_check_starts=1, count_check_budget_s=60.0)
    missed = {"reached": [False], "bound_evals": [50]}      # plain Alg. 2's timed run, cut
    low = squarem_count_check(prob, starts, {"reached": [True], "bound_evals": [20]}, missed,
                                cfg)
    (row,) = low["starts"]
    assert low["verdict"] == "pass"
    assert row["cap"] == 100 and row["bound_evaluations"] == 100
    assert not row["reached"] and row["decided"] and row["factor"] == pytest.approx(5.0)
    high = squarem_count_check(prob, starts, {"reached": [True], "bound_evals": [1000]},
                                 missed, cfg)
    (row,) = high["starts"]
    assert row["reached"] and row["exact"] and 100 < row["bound_evaluations"] < 5000
    assert high["verdict"] == "fail" and row["factor"] < 5.0
    # SQUAREM's timed run cut by the budget: its count comes from an untimed re-run, and the
    # cap follows from it (wine C = 10: SQUAREM needs tens of evaluations, plain hundreds)
    cut = squarem_count_check(prob, starts, {"reached": [False], "bound_evals": [3]},
                                missed, cfg)
    (row,) = cut["starts"]
    assert row["squarem_rerun"] and row["squarem_reached"] and row["squarem_evaluations"] > 3
    assert row["cap"] == int(np.ceil(5 * row["squarem_evaluations"]))
    assert cut["verdict"] == "pass"
    # the report row takes the check's counts over the timed run's budget-limited ones
    recs = [_rec("weak-l2", "wine", "C=10", "bound", None, reached=False, evals=50),
            _rec("weak-l2", "wine", "C=10", "squarem", 1.0, evals=20)]
    recs[0]["metrics"]["count_check"] = low
    (r,) = squarem_rows(recs)
    assert r["pass"] is True and r["count_check"] and r["factor_is_lower_bound"]
    assert r["bound"] == 100 and r["squarem"] == 20
