"""Suite ``moe``: a tiny run end to end (records, verdicts, plots) and the tuning rule."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.bench.records import read_suite
from zbound.bench.runner import run_suite
from zbound.bench.suites import moe
from zbound.bench.suites.moe.runs import invert, tune, unit_init
from zbound.moe import MoEProblem


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
    assert (tmp_path / "moe_smoline.png").exists()
    assert (tmp_path / "moe_inverted_digits.png").exists()


def test_tune_picks_lowest_final_objective():
    class Fit:
        def __init__(self, f):
            self.objectives = [f]

    def run_one(method, lr):
        if method == "gradient-em":
            a, b = lr
            return Fit((np.log10(a) - 0) ** 2 + (np.log10(b) - 1) ** 2)
        return Fit(abs(np.log10(lr) + 1) if method != "adam" else float("inf") * (lr > 1))

    chosen, _ = tune(run_one, (0.01, 0.1, 1.0, 10.0))
    assert chosen["gd"] == 0.1
    assert chosen["gradient-em"] == (1.0, 10.0)


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
