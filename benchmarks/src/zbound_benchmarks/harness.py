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
import math
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


@dataclass(frozen=True)
class Target:
    """A cell timed to a target objective: every method's ``call(tol)`` fits at a tolerance of
    its own kind and returns what ``objective`` (one function for every method, so that no
    method reports its own value) turns into the objective. Each method runs its ``tols``
    from loose to tight until its objective stops changing (relative ``settled``) or one fit
    takes over ``budget_s``; the target is the best objective any fit reached (or
    ``reference``), plus ``rel`` of it; each method is timed at the loosest tolerance that
    reached it (its users' best setting for that accuracy); ``extra(result)`` adds metrics
    (e.g. nonzeros)."""

    objective: Callable[[Any], float]
    rel: float = 1e-6
    tols: tuple = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
    reference: float | None = None
    extra: Callable[[Any], dict] | None = None
    budget_s: float = 60.0
    settled: float = 1e-12


@dataclass
class Cell:
    """One comparison: ``methods`` on the same data and target, timed alternating; ``score``
    gives each method's record fields (``metrics``, ``final_objective``, ...) from the
    timings; ``memory``: trace each method's peak memory in one untimed call. With a
    ``target`` (:class:`Target`) each method's ``call`` takes a tolerance, and the cell is
    timed to that objective (:func:`run_cells` searches each method's tolerance first)."""

    task: str
    dataset: str
    setting: str
    methods: list[Method]
    score: Score | None = None
    memory: bool = True
    target: Target | None = None


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


def search_tolerances(cell: Cell) -> tuple[float, dict[str, tuple[float | None, float]]]:
    """(target objective, {method: (the loosest tolerance that reaches it or None, the
    objective there or the best it reached)}) of a cell with a target (:class:`Target`)."""
    tgt = cell.target
    seen: dict[str, list[tuple[float, float]]] = {}
    for m in cell.methods:
        runs = seen[m.name] = []
        for tol in tgt.tols:
            t0 = time.perf_counter()
            f = tgt.objective(quiet(lambda m=m, tol=tol: m.call(tol))())
            took = time.perf_counter() - t0
            runs.append((tol, f))
            if took > tgt.budget_s:
                break
            if len(runs) > 1 and abs(runs[-2][1] - f) <= tgt.settled * max(1.0, abs(f)):
                break
    finite = [f for runs in seen.values() for _, f in runs if math.isfinite(f)]
    best = min(finite + ([tgt.reference] if tgt.reference is not None else []))
    goal = best + tgt.rel * abs(best)
    found = {}
    for name, runs in seen.items():
        hit = next(((tol, f) for tol, f in runs if f <= goal), None)
        found[name] = hit if hit is not None else (None, min(f for _, f in runs))
    return goal, found


def _run_target_cell(ctx, cell: Cell, repeats: int, min_time: float) -> None:
    """Time every method at its tolerance for the cell's target; one record each."""
    goal, found = search_tolerances(cell)
    calls = {m.name: (lambda m=m, tol=found[m.name][0]: m.call(tol))
             for m in cell.methods if found[m.name][0] is not None}
    timing = measure(calls, repeats, min_time, cell.memory) if calls else {}
    extra = cell.target.extra
    for m in cell.methods:
        tol, f = found[m.name]
        entry = timing.get(m.name)
        metrics = {"tolerance": tol, "objective_gap": (f - goal) / max(abs(goal), 1e-300)}
        if entry is not None:
            metrics.update(peak_memory_mb=entry["peak_mb"], times_s=entry["times"],
                           calls_per_repeat=entry["calls"])
            if extra is not None:
                metrics.update(extra(entry["result"]))
        ctx.writer.add(task=cell.task, dataset=cell.dataset, setting=cell.setting,
                       method=m.name, peer=m.peer, default=m.default, reached=entry is not None,
                       time_to_target_s=entry["median_s"] if entry is not None else None,
                       final_objective=f, target_objective=goal, metrics=metrics)
    ctx.advance()


def run_cells(ctx, cells: Iterable[Cell], repeats: int, min_time: float = 0.0) -> None:
    """Time each cell, score it, and write one record per method (the median as
    ``time_to_target_s``, the repeats' times and peak memory among the metrics); a cell with
    a :class:`Target` is timed to it (:func:`search_tolerances`)."""
    for cell in cells:
        if cell.target is not None:
            _run_target_cell(ctx, cell, repeats, min_time)
            continue
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
