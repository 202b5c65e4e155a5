"""The declarative core of the benchmarks: a suite declares cells, the harness runs them.

A :class:`Cell` is one comparison: a task, a data set and a setting, the methods that run on them
(each a zero-argument callable, marked peer or default), and a ``score`` that turns the timed
results into record fields (ratios to the peer, accuracies, objectives). :func:`run_cells` times
every cell's methods alternating over repeats (:func:`zbound_benchmarks.timing.time_alternating`),
traces each one's peak memory once, asks ``score`` for the rest, and writes one record per
method through the run's :class:`~zbound_benchmarks.records.RecordWriter`, so a long run keeps
what it measured. Adding a comparison to a suite is adding one ``Cell``::

    Cell("latent", "wine", "n_components=2",
         methods=[Method("sklearn-logistic", fit(LogisticRegression, X, y), peer=True),
                  Method("zbound-latent", fit(LatentLogisticRegression, X, y), default=True)],
         score=ratio_to("sklearn-logistic"))

The smaller pieces are shared by suites whose loops are their own: :func:`quiet` (a call with
warnings silenced), :func:`timed` (one call's seconds) and :class:`Curve` (objective against
time, from a callback).
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from zbound_benchmarks.timing import time_alternating, traced_peak

#: score(timing) -> {method name: record fields}; timing[name] is time_alternating's entry
#: (``median_s``, ``times``, ``calls``, ``result``, ``last_s``) with ``peak_mb`` added
Score = Callable[[dict[str, dict[str, Any]]], dict[str, dict[str, Any]]]


@dataclass(frozen=True)
class Method:
    """A method of a cell: ``call()`` runs it once (a whole fit), ``peer`` marks another
    library's, ``default`` the one a user of the library gets without choosing."""

    name: str
    call: Callable[[], Any]
    peer: bool = False
    default: bool = False


@dataclass
class Cell:
    """One comparison: ``methods`` on the same data and target, timed alternating; ``score``
    gives each method's record fields (``metrics``, ``final_objective``, ...) from the
    timings; ``memory``: trace each method's peak memory in one untimed call."""

    task: str
    dataset: str
    setting: str
    methods: list[Method]
    score: Score | None = None
    memory: bool = True


def ratio_to(peer: str) -> Score:
    """The simplest score: each method's median time as a multiple of ``peer``'s
    (``metrics["ratio_to_peer"]``)."""
    def score(timing):
        base = timing[peer]["median_s"]
        return {n: {"metrics": {"ratio_to_peer": e["median_s"] / base}}
                for n, e in timing.items()}
    return score


def quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with every warning silenced (a benchmark times fits, it does not judge them)."""
    def call():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    return call


def fit(make: Callable[[], Any], X, y, **fit_params) -> Callable[[], Any]:
    """A quiet call of ``make().fit(X, y)`` returning the fitted estimator."""
    return quiet(lambda: make().fit(X, y, **fit_params))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call of ``fn``."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


@contextlib.contextmanager
def stopwatch(into: dict[str, float], key: str):
    """Add the seconds the ``with`` block takes to ``into[key]``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        into[key] = into.get(key, 0.0) + time.perf_counter() - t0


class Curve:
    """Objective values against seconds since the curve was made (or :meth:`restart`):
    ``curve(f)`` from a solver's callback appends a point."""

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self.t0 = time.perf_counter()
        self.points: list[tuple[float, float]] = []

    def __call__(self, value: float) -> None:
        self.points.append((time.perf_counter() - self.t0, float(value)))

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def measure(methods: dict[str, Callable[[], Any]], repeats: int, min_time: float = 0.0,
            memory: bool = True) -> dict[str, dict[str, Any]]:
    """Alternating timed repeats of every method (calls under ``min_time`` in back-to-back
    runs), then, with ``memory``, each method's traced peak in one more call (``peak_mb``,
    None without)."""
    timing = time_alternating({k: quiet(v) for k, v in methods.items()}, repeats=repeats,
                              min_time=min_time)
    for name, fn in methods.items():
        timing[name]["peak_mb"] = traced_peak(quiet(fn))[0] if memory else None
    return timing


def suite_config(ctx, config: Callable[[bool], Any], kind: type) -> Any:
    """The run's configuration: ``ctx.options["config"]`` where given (a ``kind``, else a
    TypeError naming the suite's class), else ``config(ctx.quick)``. The runner has already
    refused option names the suite does not know."""
    cfg = (getattr(ctx, "options", None) or {}).get("config")
    if cfg is None:
        return config(ctx.quick)
    if not isinstance(cfg, kind):
        raise TypeError(f"option 'config' must be a {kind.__module__}.{kind.__name__}, got "
                        f"{type(cfg).__name__}")
    return cfg


def run_cells(ctx, cells: Iterable[Cell], repeats: int, min_time: float = 0.0) -> None:
    """Time each cell, score it, and write one record per method (the median as
    ``time_to_target_s``, the repeats' times and peak memory among the metrics)."""
    for cell in cells:
        timing = measure({m.name: m.call for m in cell.methods}, repeats, min_time,
                         cell.memory)
        scored = cell.score(timing) if cell.score is not None else {}
        for m in cell.methods:
            entry = timing[m.name]
            fields = dict(scored.get(m.name, {}))
            metrics = {"peak_memory_mb": entry["peak_mb"], "times_s": entry["times"],
                       "calls_per_repeat": entry["calls"], **fields.pop("metrics", {})}
            ctx.writer.add(task=cell.task, dataset=cell.dataset, setting=cell.setting,
                           method=m.name, peer=m.peer, default=m.default,
                           reached=fields.pop("reached", True),
                           time_to_target_s=fields.pop("time_to_target_s", entry["median_s"]),
                           metrics=metrics, **fields)
        ctx.advance()
