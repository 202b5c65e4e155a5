"""Timing helpers: alternate methods across repeats and report medians.

Benchmark and demo times are measured in one process, with the compared methods alternating
(A B C A B C ...) over at least 3 repeats, and the median is reported, so that a burst of load
from other processes lands on one repeat of several methods rather than on every repeat of one.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable, Mapping
from typing import Any


def time_alternating(
    methods: Mapping[str, Callable[[], Any]], repeats: int = 3, min_time: float = 0.0
) -> dict[str, dict[str, Any]]:
    """Run each method ``repeats`` times, round-robin, and time every call.

    Returns ``{name: {"times": [...], "median_s": float, "result": last_result, "calls": n,
    "last_s": the last call's own time}}``.
    Alternating (A B C A B C ...) rather than batching (A A A B B B) spreads machine noise over
    all methods.

    ``min_time`` > 0: a method whose first call took less than that is timed, from then on,
    in runs of n back-to-back calls lasting about ``min_time`` (n = ``"calls"``; timeit's
    autorange), each repeat's time per call recorded, and its first call not counted (it set
    n, and carried the cold start). A single call of a few milliseconds is at the mercy of
    the caches and the scheduler: five of them spread by 20-50% around their median. Methods
    at or above ``min_time`` keep one call a repeat, the first one counted, as with
    ``min_time`` = 0.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if not min_time >= 0.0:
        raise ValueError(f"min_time must be >= 0, got {min_time}")
    out: dict[str, dict[str, Any]] = {name: {"times": [], "result": None, "calls": 1}
                                      for name in methods}

    def timed(name, fn, calls):
        start = time.perf_counter()
        for _ in range(calls):
            t0 = time.perf_counter()
            result = fn()
            last = time.perf_counter() - t0
        out[name]["times"].append((time.perf_counter() - start) / calls)
        out[name]["result"], out[name]["last_s"] = result, last

    for _ in range(repeats):
        for name, fn in methods.items():
            entry = out[name]
            if len(entry["times"]) >= repeats:
                continue
            first = not entry["times"] and entry["calls"] == 1
            timed(name, fn, entry["calls"])
            if first and min_time > 0.0 and entry["times"][0] < min_time:
                # the first call only sets the run length: n calls of about min_time in all
                entry["calls"] = min(1000, max(2, math.ceil(min_time / max(entry["times"][0],
                                                                           1e-9))))
                entry["times"].clear()
    for name, fn in methods.items():            # the runs the uncounted first calls owe
        while len(out[name]["times"]) < repeats:
            timed(name, fn, out[name]["calls"])
    for entry in out.values():
        entry["median_s"] = statistics.median(entry["times"])
    return out


def traced_peak(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(peak MB, seconds, result) of ``fn()`` under tracemalloc: Python and NumPy allocations
    (NumPy reports its buffers), not compiled code's private buffers nor existing inputs."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    try:
        out = fn()
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20, seconds, out


def thread_limit(n: int | None = 1):
    """Context with at most ``n`` threads in every pool threadpoolctl knows (BLAS and OpenMP),
    as the fairness rules of docs/benchmarks.md ask; ``None`` leaves them as configured."""
    if n is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n)


def budget_callback(budget_s: float) -> Callable[..., bool]:
    """A solver callback that stops the run once ``budget_s`` seconds have passed since it was
    made (the solver then reports the budget as its stopping reason)."""
    t0 = time.perf_counter()
    return lambda x, f: time.perf_counter() - t0 > budget_s


def first_at_or_below(values, target: float) -> int | None:
    """The index of the first value <= ``target`` (a trace's first point at a target); None if
    none is."""
    import numpy as np

    hit = np.flatnonzero(np.asarray(values) <= target)
    return int(hit[0]) if hit.size else None


def downsample(n: int, k: int):
    """About ``k`` indices of a length-``n`` curve, geometrically spaced, first and last kept
    (convergence curves are plotted on a log axis of iterations)."""
    import numpy as np

    if n <= k:
        return np.arange(n)
    idx = np.unique(np.round(np.geomspace(1, n, k)).astype(int) - 1)
    return np.unique(np.concatenate([[0], idx, [n - 1]]))

