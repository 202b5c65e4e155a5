"""Suite ``moe``: a tiny run end to end (records, verdicts, plots) and the tuning rule."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from zbound.moe import MoEProblem
from zbound_benchmarks.records import read_suite
from zbound_benchmarks.runner import run_suite
from zbound_benchmarks.suites import moe
from zbound_benchmarks.suites.moe.runs import invert, tune, unit_init


@pytest.mark.slow
def test_tiny_run(tmp_path):
    doc = run_suite("moe", quick=True, out=tmp_path, show_progress=False,
                    options={"config": moe.tiny()})
    read_suite(tmp_path / "moe.json")
    methods = {(r["task"], r["method"]) for r in doc["records"]}
    for m in ("em", "em-inner-gd", "gradient-em", "gd", "adam"):
        assert ("synthetic", m) in methods and ("inverted", m) in methods
    assert ("inverted", "single-expert-original") in methods
    em = next(r for r in doc["records"] if r["task"] == "synthetic" and r["method"] == "em")
    assert em["default"] and em["metrics"]["monotone_all"]
    text = (tmp_path / "moe.md").read_text()
    assert "Claim (EM beats GD" in text and "ratio inner-GD / bound" in text
    assert "Test accuracy after t iterations" in text and "t = 8" in text
    gd = next(r for r in doc["records"] if r["task"] == "inverted" and r["method"] == "gd")
    assert set(gd["metrics"]["test_accuracy_at"]) == {"2", "8"}
    assert (tmp_path / "moe_smoline.png").exists()
    assert (tmp_path / "moe_inverted_digits.png").exists()


def test_tune_picks_lowest_final_objective():
    class Fit:
        def __init__(self, f):
            self.trace = SimpleNamespace(objective=np.array([f], dtype=float))

    def run_one(method, lr):
        if method == "gradient-em":
            a, b = lr
            return Fit((np.log10(a) - 0) ** 2 + (np.log10(b) - 1) ** 2)
        if method == "adam":
            return Fit(abs(np.log10(lr) + 2) if lr <= 1 else float("inf"))
        return Fit(abs(np.log10(lr) + 1))

    grid = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)
    chosen, _ = tune(run_one, grid)
    assert chosen["gd"] == 0.1
    assert chosen["gradient-em"] == (1.0, 10.0)
    # the walk finds the same minima of these unimodal scores with fewer runs
    calls = []

    def counted(method, lr):
        calls.append(method)
        return run_one(method, lr)

    walked, table = tune(counted, grid, search="walk")
    assert walked == chosen
    assert len(calls) < 3 * len(grid) + 2 * len(grid)
    assert len(table["gd"]) < len(grid)
    with pytest.raises(ValueError, match="search"):
        tune(run_one, grid, search="bisect")


def test_walk_takes_the_better_neighbour_of_its_start():
    from zbound_benchmarks.suites.moe.runs import _walk

    # two dips beside the start (the inner-GD M-step on digits): the walk goes to the lower
    scores = [0.63, 0.44, 0.48, 0.441, 9.2]
    seen = _walk(lambda i: scores[i], len(scores), 2)
    assert min(seen, key=seen.get) == 1
    assert len(seen) == 4


def test_tune_scores_the_mean_over_tuning_instances():
    class Fit:
        def __init__(self, f):
            self.trace = SimpleNamespace(objective=np.array([f], dtype=float))

    # a step that wins on one instance and diverges on the other is not chosen
    def first(method, lr):
        return Fit(0.5 if lr == 10.0 else 1.0)

    def second(method, lr):
        return Fit(float("inf") if lr == 10.0 else 1.0 + 0.1 * (lr == 0.1))

    chosen, table = tune([first, second], (0.1, 1.0, 10.0))
    assert chosen["gd"] == 1.0
    assert table["gd"]["10"] == float("inf")


def test_inversion_and_unit_init():
    rng = np.random.default_rng(0)
    X = rng.random((200, 4))
    Xi = invert(X, np.random.default_rng(1))
    flipped = ~np.isclose(X, Xi).all(axis=1)
    assert 0.3 < flipped.mean() < 0.7
    np.testing.assert_allclose(Xi[flipped], 1 - X[flipped])
    pb = MoEProblem(X, rng.integers(0, 3, 200), 2, "logistic")
    P = pb.unpack(unit_init(pb, rng))
    assert np.linalg.norm(P.gate) == np.float64(1.0) or abs(np.linalg.norm(P.gate) - 1) < 1e-12
    for c in P.coef:
        assert abs(np.linalg.norm(c) - 1) < 1e-12


def test_tune_marks_steps_whose_objective_jumps():
    class Fit:
        def __init__(self, objectives):
            self.trace = SimpleNamespace(objective=np.array(objectives, dtype=float))

    # step 10 jumps on the way but ends lowest: chosen, and listed as unstable; step 1's
    # small oscillation (below UNSTABLE_RISE) is not listed
    def run_one(method, lr):
        lr = lr[1] if isinstance(lr, tuple) else lr
        if lr == 10.0:
            return Fit([3.0, 5.0, 0.5])
        return Fit([3.0, 2.0, 2.01, 1.0 + 0.1 * (lr < 1)])

    chosen, table = tune(run_one, (0.1, 1.0, 10.0))
    assert chosen["gd"] == chosen["em-inner-gd"] == 10.0
    assert table["unstable"]["gd"] == ["10"]


def test_steps_at_the_grid_edge_are_flagged():
    from zbound_benchmarks.suites.moe.runs import at_grid_edge

    grid = (0.01, 0.1, 1.0)
    edge = at_grid_edge({"gd": 0.1, "adam": 0.01, "gradient-em": (0.1, 1.0)}, grid)
    assert edge == {"adam": 0.01, "gradient-em": [0.1, 1.0]}
