"""The one backtracking line search (zbound.solvers.linesearch)."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.solvers.linesearch import ARMIJO, armijo_search, backtrack, interpolated_step


def _quadratic(a=1.0):
    """f(t) = a (t - 1)^2 - a along a direction of slope -2a at 0: the minimum at t = 1."""
    calls = []

    def trial(t):
        calls.append(t)
        return a * (t - 1.0) ** 2 - a, {"t": t}

    return trial, calls


def test_accepts_the_first_trial_that_passes_armijo():
    trial, calls = _quadratic()
    t, value, payload = armijo_search(trial, 0.0, -2.0, 1.0)
    assert calls == [1.0] and t == 1.0 and value == -1.0 and payload == {"t": 1.0}


@pytest.mark.parametrize("shrink", ["interpolate", "halve"])
def test_shrinks_until_sufficient_decrease(shrink):
    trial, calls = _quadratic()
    t, value, _ = armijo_search(trial, 0.0, -2.0, 10.0, shrink=shrink)
    assert value <= ARMIJO * t * -2.0 and len(calls) >= 2
    for a, b in zip(calls, calls[1:]):
        assert 0.1 * a <= b <= 0.5 * a                # each trial within [0.1, 0.5] of the last
    if shrink == "halve":
        assert calls[1] == 5.0


def test_gives_up_after_trials_or_at_min_step():
    def rising(t):
        return t, None                                # never a decrease along this direction

    assert armijo_search(rising, 0.0, -1.0, 1.0, trials=3) is None
    calls = []
    assert armijo_search(lambda t: (calls.append(t) or t, None), 0.0, -1.0, 1.0,
                         shrink="halve", min_step=0.1) is None
    assert min(calls) > 0.1 and calls[-1] == 0.125


def test_a_given_first_trial_and_a_custom_test():
    trial, calls = _quadratic()
    found = armijo_search(trial, 0.0, -2.0, 4.0, first=(8.0, None), accept=lambda t, v: v < 0)
    assert calls and calls[0] < 4.0 and found[1] < 0
    # non-finite values shrink by halving and are never accepted
    t, v, _ = armijo_search(lambda t: (np.inf if t > 1 else -t, None), 0.0, -1.0, 8.0)
    assert np.isfinite(v) and t <= 1


def test_interpolated_step_and_backtrack_agree_with_the_search():
    f0, gd = 0.0, -2.0
    assert interpolated_step(4.0, f0, 8.0, gd) == pytest.approx(1.0)   # the quadratic's minimum
    assert interpolated_step(4.0, f0, np.nan, gd) == 2.0
    x, d = np.zeros(1), np.ones(1)
    step, value = backtrack(lambda z: float((z[0] - 1.0) ** 2 - 1.0), x, d, f0, gd, 4.0, 8.0, 5)
    assert step == pytest.approx(1.0) and value == pytest.approx(-1.0)
    assert backtrack(lambda z: 1.0, x, d, f0, gd, 4.0, 8.0, 0) is None
    with pytest.raises(ValueError, match="shrink"):
        armijo_search(lambda t: (0.0, None), 0.0, -1.0, shrink="double")
