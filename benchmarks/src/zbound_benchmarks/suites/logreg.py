"""What the two logistic-regression suites share (``logreg-small``, ``logreg-large``): a cell's
:class:`Problem` (its objective and targets, and how a peer's solution maps to its parameters),
the :class:`Method` kinds that run on it, and :func:`run_cell`, which times every method to
every target from shared start points.

Objectives
    ``paper`` cells: ``MultinomialLogistic(X, y, n_classes, reg)``, J(theta) = sum_j log-loss_j
    + reg/2 ||theta||^2 with reg = t lambda (the paper's (t lambda / 2) ||theta||^2) or 1 / C,
    X a design whose last column is the (penalized) bias. Other cells: scikit-learn's
    convention, ``BoundLogisticRegression``'s objective (sum of log-losses + 1/(2C) ||W||^2,
    intercepts unpenalized).

Timing
    Methods that take a target stop at it; one run to the tightest target also gives the time
    to the looser ones (the seconds at which its trace first crossed them, plus the model
    construction). Peers that cannot stop at a target (scikit-learn, glum, the estimator) get,
    per cell and target, the loosest tolerance whose solution reaches it (searched untimed; a
    fit longer than the time budget ends the search: not reached). Repeats are the outer loop,
    start points the next, and the methods alternate within each (repeat, start); medians over
    repeats, then over starts. A method that misses every target in the first repeat is not
    timed again.

Peak memory
    One more untimed run per method (to the loosest target, stopped after
    ``memory_budget_s``; None: not measured) under ``tracemalloc``: Python and NumPy
    allocations, not the private buffers of compiled code (SciPy's L-BFGS-B work arrays,
    scikit-learn's Cython scratch, glum's C++), and not the inputs, but any copy a method makes
    of them. A low-rank method whose single iteration is estimated over
    ``Config.lowrank_limit_s`` is not timed; :func:`memory_probe` gives its peak memory.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from zbound_benchmarks.harness import stopwatch, timed
from zbound_benchmarks.timing import budget_callback, downsample, first_at_or_below, traced_peak

#: Scale of the shared random starts N(0, START_SCALE^2) near 0.
START_SCALE = 0.01


class RunConfig(Protocol):
    """What :func:`run_cell` reads of a suite's ``Config``."""

    repeats: int
    max_iter: int
    peer_max_iter: int
    #: a run still going after this many seconds is stopped (not reached)
    time_budget_s: float
    #: the untimed peak-memory run's budget (None: memory not measured)
    memory_budget_s: float | None
    #: a unit whose first repeat took longer than this is timed once (None: every repeat)
    slow_unit_s: float | None
    lowrank_limit_s: float
    probe_rows: tuple[int, ...]
    #: tolerances searched, loosest first, for the methods that cannot stop at a target
    tols: tuple[float, ...]
    tol_stride: int
    curve_points: int


def cell_default(problem: Problem) -> str:
    """What ``minimize`` runs on this cell's objective when no method is named
    (``zbound.solvers.choose_method``); its record carries ``default=True``."""
    from zbound.solvers import choose_method

    return choose_method(problem.model())


@dataclass
class Data:
    """A data set as the cells use it: features (no intercept column), labels, classes."""

    name: str
    X: Any
    y: np.ndarray
    n_classes: int
    note: str


def with_bias(X):
    """``X`` with a last column of ones (sparse stays sparse)."""
    ones = np.ones((X.shape[0], 1))
    if sp.issparse(X):
        return sp.hstack([X, ones], format="csr")
    return np.hstack([np.asarray(X, dtype=np.float64), ones])


@dataclass
class Problem:
    """One cell: data, objective, targets, and the maps from a peer's solution to our theta.

    ``lam`` (reg = t lambda) or ``C`` (reg = 1 / C) names the regularization; ``paper``: the
    paper's objective on the design ``X`` (bias penalized, no intercept fitted), else
    scikit-learn's (intercepts fitted, unpenalized)."""

    task: str
    dataset: str
    setting: str
    data: Data
    #: design matrix of our objective (features + a last column of ones)
    X: Any
    lam: float | None = None
    C: float | None = None
    paper: bool = True
    f_star: float = math.nan
    targets: dict[str, float] = field(default_factory=dict)
    rel: dict[str, float] = field(default_factory=dict)
    reference: dict[str, Any] = field(default_factory=dict)

    @property
    def y(self) -> np.ndarray:
        return self.data.y

    @property
    def n_classes(self) -> int:
        return self.data.n_classes

    @property
    def t(self) -> int:
        return int(self.X.shape[0])

    @property
    def k(self) -> int:
        """Weight vectors: n_classes, except 1 for the estimator's binary model."""
        return 1 if (not self.paper and self.n_classes == 2) else self.n_classes

    @property
    def n_params(self) -> int:
        return self.k * int(self.X.shape[1])

    @property
    def reg(self) -> float:
        return self.t * self.lam if self.lam is not None else 1.0 / self.C

    @property
    def target(self) -> float:
        """The tightest target."""
        return min(self.targets.values())

    @property
    def group(self) -> str:
        return f"{self.task}/{self.dataset}/{self.setting}"

    def model(self):
        """Our objective (built anew: building it is part of what every library run pays)."""
        if self.paper:
            from zbound.models.multinomial import MultinomialLogistic

            return MultinomialLogistic(self.X, self.y, self.n_classes, self.reg)
        from zbound.models.multinomial import logistic_objective

        k, d = self.k, self.X.shape[1]
        pen = np.full((k, d), 1.0 / self.C)
        pen[:, -1] = 0.0
        center = self.t / k**2 if k > 1 else 0.0
        return logistic_objective(self.X, self.y, self.n_classes, pen.ravel(), None, center)

    # -- peers ------------------------------------------------------------------------------
    @property
    def fit_X(self):
        """What a peer's ``fit`` gets: the design (Table 1, no intercept fitted) or the raw
        features (larger data, intercept fitted, unpenalized)."""
        return self.X if self.paper else self.data.X

    @property
    def fit_intercept(self) -> bool:
        return not self.paper

    def sklearn_C(self) -> float:
        """scikit-learn's C whose optimum is ours. Table 1: C = 1/reg for >= 3 classes and
        2/reg for 2 (its one vector w is our w_1 - w_0; see logreg-small). Larger data: C."""
        if self.paper:
            return (2.0 if self.n_classes == 2 else 1.0) / self.reg
        return float(self.C)

    def glum_alpha(self) -> float:
        """glum's alpha whose optimum is ours (two classes).

        glum minimizes sum_i s_i deviance_i / (2 sum_i s_i) + alpha/2 ||w||^2 (l1_ratio 0,
        intercept unpenalized), and the binomial deviance is 2 x the log-loss, so with unit
        weights it minimizes (1/t) sum loss + alpha/2 ||w||^2 = (ours) / t when
        alpha = 1 / (C t) (larger data). Table 1 (bias a penalized column, no intercept): ours
        is sum loss + reg/4 ||w||^2 at w = w_1 - w_0, so alpha = reg / (2 t) = lambda / 2.
        """
        if self.paper:
            return self.reg / (2.0 * self.t)
        return 1.0 / (self.C * self.t)

    def theta_from(self, coef, intercept=None) -> np.ndarray:
        """Our theta from a peer's coefficients (and intercepts, larger data)."""
        coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
        if self.paper:
            if self.n_classes == 2:
                w = coef.ravel()
                return np.concatenate([-0.5 * w, 0.5 * w])
            return coef.ravel().copy()
        b = np.zeros(coef.shape[0]) if intercept is None else \
            np.asarray(intercept, dtype=np.float64).ravel()
        if coef.shape[0] > 1:
            b = b - b.mean()        # the sum-zero representative (same loss and penalty)
        return np.hstack([coef, b[:, None]]).ravel()

    def theta_to_glum_start(self, theta: np.ndarray) -> np.ndarray:
        """glum's ``start_params`` for our start theta (Table 1, two classes)."""
        W = theta.reshape(2, -1)
        return W[1] - W[0]

    def describe(self) -> dict[str, Any]:
        """The cell's numbers, stored in every record's metrics."""
        return {"lambda": self.lam, "C": self.C, "reg": self.reg, "t": self.t,
                "d": int(self.X.shape[1]), "features": int(self.X.shape[1]) - 1,
                "n_classes": self.n_classes, "n_params": self.n_params, "f_star": self.f_star,
                "sparse": bool(sp.issparse(self.X))}


def start_points(dataset: str, n_starts: int, p: int) -> np.ndarray:
    """Shared random starts N(0, START_SCALE^2) near 0, fixed per data set (the paper: "ten
    random initializations close to 0"), the same for every setting."""
    rng = np.random.default_rng(zlib.crc32(dataset.encode()))
    return START_SCALE * rng.standard_normal((n_starts, p))


def peer_failure(m: Method, exc: Exception) -> str:
    """The record's reason for a peer whose fit raised: the error and the versions of the
    peer's package and of the libraries it builds on."""
    from importlib.metadata import PackageNotFoundError, version

    package = {"glum": "glum", "sklearn": "scikit-learn"}.get(m.kind)
    versions = []
    for name in (package, "scipy", "numpy"):
        if name is None:
            continue
        try:
            versions.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    message = " ".join(str(exc).split())[:200]
    return f"failed: {type(exc).__name__}: {message} ({', '.join(versions)})"


@dataclass
class Method:
    """One record name: how it runs (``kind``: solver, sklearn, glum, estimator)."""

    name: str
    kind: str
    spec: str
    peer: bool
    default: bool = False
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        """Fitted like scikit-learn (no start-to-target control): tolerance searched."""
        return self.kind != "solver"


# -- one call of each kind -----------------------------------------------------------------

def solver_call(problem: Problem, m: Method, x0: np.ndarray, goal: float, budget_s: float,
                max_iter: int) -> dict[str, Any]:
    """Build the model and run ``minimize`` to ``goal`` (stopped after ``budget_s``)."""
    from zbound.solvers import minimize

    t_build, model = timed(problem.model)
    seconds, r = timed(lambda: minimize(model, x0, method=m.spec, target=goal, tol=1e-12,
                                        max_iter=max_iter, callback=budget_callback(budget_s),
                                        **m.options))
    return {"res": r, "t_build": t_build, "total": t_build + seconds, "theta": r.x,
            "n_iter": int(r.nit)}


def _peer(problem: Problem, m: Method, tol: float, max_iter: int, x0: np.ndarray | None):
    """The unfitted estimator of a fitted method: scikit-learn's ``LogisticRegression``, glum's
    binomial ``GeneralizedLinearRegressor`` (from the shared start on paper cells) or
    ``BoundLogisticRegression`` (``m.spec`` its precision), each on our objective."""
    if m.kind == "sklearn":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=problem.sklearn_C(), fit_intercept=problem.fit_intercept,
                                  tol=tol, solver=m.spec, max_iter=max_iter)
    if m.kind == "glum":
        from glum import GeneralizedLinearRegressor

        start = problem.theta_to_glum_start(x0) if problem.paper and x0 is not None else None
        return GeneralizedLinearRegressor(
            family="binomial", alpha=problem.glum_alpha(), l1_ratio=0.0,
            fit_intercept=problem.fit_intercept, solver=m.spec, gradient_tol=tol,
            max_iter=max_iter, start_params=start)
    if m.kind == "estimator":
        from zbound.estimators.logistic import BoundLogisticRegression

        return BoundLogisticRegression(C=problem.C, tol=tol, max_iter=max_iter, precision=m.spec)
    raise ValueError(f"not a fitted method: {m.kind!r}")


@contextlib.contextmanager
def _glum_quiet():
    """glum's "lbfgs" passes SciPy's L-BFGS-B ``iprint``: deprecated up to SciPy 1.17 (the
    warning is the peer's business, not the bench's output), removed in 1.18 (dropped)."""
    import glum._solvers

    from zbound_benchmarks.compat import patched_lbfgsb

    with warnings.catch_warnings(), patched_lbfgsb(glum._solvers):
        warnings.filterwarnings("ignore", message=".*`disp` and `iprint`.*",
                                category=DeprecationWarning)
        yield


def fit_call(problem: Problem, m: Method, tol: float, max_iter: int,
             x0: np.ndarray | None = None) -> dict[str, Any]:
    """One scikit-learn / glum / estimator fit at ``tol``; theta mapped to ours."""
    est = _peer(problem, m, tol, max_iter, x0)
    with _glum_quiet() if m.kind == "glum" else contextlib.nullcontext():
        total, clf = timed(lambda: est.fit(problem.fit_X, problem.y))
    intercept = clf.intercept_ if problem.fit_intercept or m.kind == "estimator" else None
    return {"theta": problem.theta_from(clf.coef_, intercept), "total": total,
            "n_iter": int(np.max(clf.n_iter_))}


def search_tol(problem: Problem, m: Method, cfg: RunConfig, evaluate: Callable[[np.ndarray], float],
               x0: np.ndarray | None) -> dict[str, dict[str, Any]]:
    """Per target (loosest first): the loosest tol in ``cfg.tols`` whose fit reaches it.

    The tols are stepped ``cfg.tol_stride`` at a time (then the tightest); once a fit reaches
    the target, the skipped looser tols are tried back up to the last fit that missed it, so
    the answer is the same as a tol-by-tol search with fewer fits. A fit longer than
    ``cfg.time_budget_s`` ends the search (that target and the tighter ones are not
    reached). ``max_iter`` is capped at 1.5 x the iterations that fit in the budget at the
    seconds per iteration of a 2-iteration probe fit (then of the last fit), so no fit
    overruns the budget by much.
    """
    order = sorted(problem.targets, key=problem.targets.get, reverse=True)
    tols = cfg.tols
    stride = max(1, int(cfg.tol_stride))
    tried: list[dict[str, Any]] = []
    done: dict[int, dict[str, Any]] = {}
    out: dict[str, dict[str, Any]] = {}
    state: dict[str, Any] = {"per_iter": None}

    def fit_at(j: int) -> dict[str, Any]:
        if j in done:
            return done[j]
        tol = tols[j]
        if state["per_iter"] is None:  # a 2-iteration probe fit: the cost of an iteration
            probe = fit_call(problem, m, tol, 2, x0)
            state["per_iter"] = probe["total"] / max(probe["n_iter"], 1)
        max_iter = max(5, min(cfg.peer_max_iter,
                              int(1.5 * cfg.time_budget_s / state["per_iter"])))
        r = fit_call(problem, m, tol, max_iter, x0)
        state["per_iter"] = r["total"] / max(r["n_iter"], 1)
        e = {"tol": tol, "f": evaluate(r["theta"]), "seconds": r["total"],
             "n_iter": r["n_iter"], "max_iter": max_iter}
        tried.append(e)
        done[j] = e
        return e

    def over(e: dict[str, Any]) -> bool:
        return e["seconds"] > cfg.time_budget_s

    # i: index of the last fit; miss: of the last fit that missed the current target; cap: a
    # fit over budget (the tols from it on are out of reach)
    i, last, miss, cap, stopped = 0, None, -1, None, False
    for name in order:
        target = problem.targets[name]
        found = None
        while not stopped:
            if last is not None and over(last):
                if i - miss > 1:              # looser tols were skipped: go through them
                    cap, stride, i = i, 1, miss + 1
                    last = fit_at(i)
                    continue
                stopped = True
                break
            if last is not None and last["f"] <= target:
                found = last
                j = i - 1                     # the looser tols the stride skipped
                while j > miss:
                    e = fit_at(j)
                    if over(e) or e["f"] > target:
                        break
                    found = e
                    j -= 1
                break
            if last is not None:
                miss = i
                if i == len(tols) - 1:
                    break
                i = min(i + stride, len(tols) - 1)
            if cap is not None and i >= cap:
                stopped = True
                break
            last = fit_at(i)
        out[name] = {"tol": found["tol"] if found else None, "reached": found is not None,
                     "max_iter": found["max_iter"] if found else (last or {}).get("max_iter"),
                     "over_budget": stopped, "tried": [dict(t) for t in tried]}
    return out


def iteration_estimate(problem: Problem, m: Method, rows: int = 500) -> float:
    """Seconds one iteration of solver method ``m`` should take on the whole cell: one
    iteration timed on the first ``rows`` rows, scaled by t / rows (a bound build is linear in
    the rows). The time budget is checked between iterations, so a method whose single
    iteration exceeds it could not be stopped in time."""
    from zbound.solvers import minimize

    r = min(problem.t, rows)
    sub = _rows(problem, r)
    x0 = np.zeros(sub.n_params)
    seconds, _ = timed(lambda: minimize(sub.model(), x0, method=m.spec, max_iter=1, tol=0.0,
                                        **m.options))
    return seconds * problem.t / r


def _rows(problem: Problem, rows: int) -> Problem:
    """The cell restricted to its first ``rows`` rows (same columns, same parameters)."""
    r = min(problem.t, int(rows))
    return replace(problem, X=problem.X[:r],
                   data=replace(problem.data, X=problem.data.X[:r], y=problem.data.y[:r]))


def memory_probe(problem: Problem, m: Method, rows: tuple[int, ...]) -> dict[str, Any]:
    """Peak memory of ONE iteration of solver method ``m`` (one bound build and one step, from
    0) on the first ``r`` rows of the cell for each ``r`` in ``rows`` (a cell with fewer than
    twice the largest: a quarter and a half of its rows, so the probe stays cheaper than one
    iteration of the cell), under tracemalloc.

    For a method too slow to time (the low-rank bound on KMNIST): the rows only change how many
    rank-one updates stream through the same O(p k) working set, so the peaks at two row counts
    show whether memory grows with the rows. ``p_by_p_mb`` is the size of one dense p x p
    float64 matrix (8 p^2 bytes), which the low-rank curvature must never form.
    """
    from zbound.solvers import minimize

    rows = tuple(sorted({int(r) for r in rows}))
    if problem.t < 2 * rows[-1]:  # a small cell (SRBCT): a quarter and half of its rows
        rows = tuple(sorted({max(1, problem.t // 4), max(1, problem.t // 2)}))
    peaks, seconds, used = [], [], []
    for r in rows:
        sub = _rows(problem, r)
        x0 = np.zeros(sub.n_params)
        peak, secs, _ = traced_peak(lambda sub=sub, x0=x0: minimize(
            sub.model(), x0, method=m.spec, max_iter=1, tol=0.0, **m.options))
        peaks.append(peak)
        seconds.append(secs)
        used.append(sub.t)
    p = problem.n_params
    return {"rows": used, "rank_one_updates_at_most": [u * problem.n_classes for u in used],
            "peak_mb_by_rows": peaks, "seconds": seconds, "iterations": 1,
            "peak_memory_mb": max(peaks), "p": p, "p_by_p_mb": 8.0 * p * p / 2**20,
            "note": (f"one-iteration probe (one bound build + one step from 0) on the first "
                     f"{used} of {problem.t} rows under tracemalloc; the method was not timed "
                     "to the target")}


def _peak_mb(fn: Callable[[], Any]) -> float:
    return traced_peak(fn)[0]


# -- one cell --------------------------------------------------------------------------------

def run_cell(problem: Problem, starts: np.ndarray, cfg: RunConfig, methods: list[Method],
             skipped: dict[str, str], writer=None, log: Callable[[str], None] | None = None
             ) -> tuple[list[dict], dict[str, Any]]:
    """Time every method of one cell at every target; returns (records, curves)."""
    check = problem.model()

    def evaluate(theta: np.ndarray) -> float:
        return float(check.value(theta))

    def say(text: str) -> None:
        if log is not None:
            log(f"  {problem.group}: {text}")

    tnames = sorted(problem.targets, key=problem.targets.get, reverse=True)  # loosest first
    skipped = dict(skipped)
    phase: dict[str, float] = {}
    pass_s = pass_seconds(check, starts[0])
    methods, probes = _too_slow_to_time(problem, methods, cfg, skipped, phase, say)
    searches = _tolerance_searches(problem, methods, cfg, evaluate, starts, skipped, phase, say)
    methods = [m for m in methods if m.name not in skipped]
    units = _units(methods, searches, tnames)
    timing = _time_units(problem, starts, cfg, units, searches, evaluate, phase, say)
    peaks = _peaks(problem, starts, cfg, methods, searches, tnames[0], phase)
    curves: dict[str, Any] = {"_seconds": phase}
    records: list[dict] = []
    for m in methods:
        mu = [u for u in units if units[u][0].name == m.name]
        curve = _curve_of(problem, cfg, m, mu, timing["first"])
        if curve is not None:
            curves[m.name] = curve
        for tn in tnames:
            rec = _method_record(problem, cfg, m, mu, tn, units, timing, searches, peaks,
                                 len(starts))
            t = rec["time_to_target_s"]
            rec["metrics"].update(pass_s=pass_s, passes=None if t is None else t / pass_s)
            if writer is not None:
                rec = writer.add(**rec)
            records.append(rec)
            if not rec["reached"]:
                say(f"{m.name} missed the {tn} target")
    for name, reason in skipped.items():
        for tn in tnames:
            rec = _skipped_record(problem, name, reason, tn, probes.get(name))
            records.append(writer.add(**rec) if writer is not None else rec)
    return records, curves


def pass_seconds(model, x: np.ndarray, repeats: int = 5) -> float:
    """Seconds of one pass over the data: the fastest of ``repeats`` value-and-gradient
    evaluations of ``model`` at ``x`` (after one uncounted). A method's time to a target over
    this is its cost in passes (``metrics["passes"]``)."""
    model.value_and_grad(x)
    return min(timed(lambda: model.value_and_grad(x))[0] for _ in range(repeats))


def _too_slow_to_time(problem, methods, cfg, skipped, phase, say):
    """The methods to time; a low-rank method whose one iteration is estimated over
    ``cfg.lowrank_limit_s`` goes to ``skipped`` with a one-iteration memory probe instead."""
    kept, probes = [], {}
    for m in methods:
        if m.kind == "solver" and m.options.get("rank") is not None:
            est = iteration_estimate(problem, m)
            if est > cfg.lowrank_limit_s:
                skipped[m.name] = (
                    f"skipped: one iteration estimated at {est:.1f} s (one iteration on 500 "
                    f"rows, scaled to {problem.t}), over the {cfg.lowrank_limit_s:g} s limit "
                    "(the time budget is checked between iterations); peak memory from a "
                    "one-iteration probe instead")
                if cfg.probe_rows:
                    seconds, probes[m.name] = timed(
                        lambda m=m: memory_probe(problem, m, tuple(cfg.probe_rows)))
                    probes[m.name]["iteration_estimate_s"] = est
                    phase[f"probe {m.name}"] = seconds
                say(f"{m.name} {skipped[m.name]}")
                continue
        kept.append(m)
    return kept, probes


def _tolerance_searches(problem, methods, cfg, evaluate, starts, skipped, phase, say):
    """Per fitted method (scikit-learn, glum, the estimator) and target, the loosest tol
    that reaches it; a peer that raises goes to ``skipped``, the library's own error is
    raised."""
    searches = {}
    for m in (m for m in methods if m.fits):
        with stopwatch(phase, "search"), stopwatch(phase, f"search {m.name}"):
            try:
                searches[m.name] = search_tol(problem, m, cfg, evaluate, starts[0])
            except Exception as exc:
                if not m.peer:
                    raise                      # the library's own failure is a bug: loud
                # a peer broken by its own dependencies (glum 3.4.1 calls SciPy's L-BFGS-B
                # with an argument SciPy 1.18 removed) is recorded, not the end of the run
                skipped[m.name] = peer_failure(m, exc)
                say(f"{m.name} {skipped[m.name]}")
    return searches


def _units(methods, searches, tnames) -> dict[str, tuple[Method, float | None, list[str]]]:
    """What is timed: one unit per solver method (it answers every target) and one per
    distinct tol of a fitted method, each with the targets it answers."""
    units: dict[str, tuple[Method, float | None, list[str]]] = {}
    for m in methods:
        if not m.fits:
            units[m.name] = (m, None, list(tnames))
            continue
        by_tol: dict[float, list[str]] = {}
        for tn in tnames:
            s = searches[m.name][tn]
            if s["reached"]:
                by_tol.setdefault(s["tol"], []).append(tn)
        for tol, tns in by_tol.items():
            units[f"{m.name}@{tol:g}"] = (m, tol, tns)
    return units


def _time_units(problem, starts, cfg, units, searches, evaluate, phase, say) -> dict:
    """Repeats outer, starts inner, units alternating; a unit that misses every target in
    the first repeat is not timed again, one slower than ``cfg.slow_unit_s`` is timed once.
    Returns times[unit][start][target], first[unit][start] (the first repeat's outcome) and
    reps[unit] (repeats run from the first start)."""
    targets, n = problem.targets, len(starts)
    times = {u: [{tn: [] for tn in units[u][2]} for _ in range(n)] for u in units}
    first: dict[str, list[dict[str, Any]]] = {u: [None] * n for u in units}
    goal = {u: [min(targets[tn] for tn in units[u][2])] * n for u in units}
    alive = {u: [True] * n for u in units}

    def make(u: str, i: int) -> Callable[[], dict[str, Any]]:
        m, tol, _ = units[u]
        if tol is None:
            return lambda: solver_call(problem, m, starts[i], goal[u][i], cfg.time_budget_s,
                                       cfg.max_iter)
        max_iter = searches[m.name][units[u][2][0]]["max_iter"]
        return lambda: fit_call(problem, m, tol, max_iter, starts[i])

    spent = {u: 0.0 for u in units}       # seconds of the first repeat, per unit
    reps = {u: 0 for u in units}
    for rep in range(cfg.repeats):
        for i in range(n):
            order = [u for u in units if alive[u][i]]
            if rep and cfg.slow_unit_s is not None:
                order = [u for u in order if spent[u] <= cfg.slow_unit_s]
            for u in order:
                dt, out = timed(make(u, i))
                if rep == 0:
                    spent[u] += dt
                if i == 0:
                    reps[u] += 1
                key = f"run {units[u][0].name}"
                phase[key] = phase.get(key, 0.0) + dt
                _times_to_targets(out, units[u], goal[u][i], times[u][i], targets, evaluate,
                                  cfg.time_budget_s)
                if rep == 0:
                    first[u][i] = out
                    reached = [tn for tn in units[u][2] if times[u][i][tn]]
                    if not reached:
                        alive[u][i] = False
                    else:
                        goal[u][i] = min(targets[tn] for tn in reached)
        if rep == 0:
            say("repeat 1 done")
    return {"times": times, "first": first, "reps": reps}


def _times_to_targets(out, unit, goal, times, targets, evaluate, budget_s) -> None:
    """Add one run's seconds to each target it reached: a solver's from its trace (the
    model's construction included; its own stopping target the whole run), a fit's whole
    time where its solution reaches the target within the budget."""
    m, tol, tns = unit
    if tol is None:
        r = out["res"]
        obj = np.asarray(r.trace.objective)
        secs = np.asarray(r.trace.seconds)
        for tn in tns:
            k = first_at_or_below(obj, targets[tn])
            if k is None:
                continue
            times[tn].append(out["total"] if targets[tn] == goal else
                             out["t_build"] + float(secs[k]))
            out.setdefault("iters", {})[tn] = k
            out.setdefault("evals", {})[tn] = int(r.trace.n_evals[k])
        for tn in tns:          # the run aimed at this target: its majorizer builds
            if targets[tn] == goal:
                out.setdefault("bound_evals", {})[tn] = int(r.counts.get("bound", 0))
        out["f"] = float(r.fun)
    else:
        out["f"] = evaluate(out["theta"])
        if out["total"] <= budget_s:
            for tn in tns:
                if out["f"] <= targets[tn]:
                    times[tn].append(out["total"])


def _peaks(problem, starts, cfg, methods, searches, loose, phase) -> dict[str, float | None]:
    """Peak memory: one untimed run per method, to the loose target, from the first start
    (None for every method where ``cfg.memory_budget_s`` is None)."""
    peaks: dict[str, float | None] = {m.name: None for m in methods}
    if cfg.memory_budget_s is None:
        return peaks
    for m in methods:
        with stopwatch(phase, "memory"), stopwatch(phase, f"memory {m.name}"):
            peaks[m.name] = _peak_of(problem, starts, cfg, m, searches, loose)
    return peaks


def _peak_of(problem, starts, cfg, m, searches, loose) -> float:
    """Peak memory of one untimed run of ``m`` to the loose target (a fit at the tol found for
    it, or at the last tried, its iterations cut to the memory budget)."""
    if m.fits:
        s = searches[m.name][loose]
        tried = s["tried"]
        tol = s["tol"] if s["reached"] else (tried[-1]["tol"] if tried else cfg.tols[0])
        max_iter = s["max_iter"] or cfg.peer_max_iter
        if tried and not s["reached"] and tried[-1]["seconds"] > cfg.memory_budget_s:
            max_iter = max(1, int(tried[-1]["n_iter"] * cfg.memory_budget_s
                                  / tried[-1]["seconds"]))
        return _peak_mb(lambda: fit_call(problem, m, tol, max_iter, starts[0]))
    return _peak_mb(lambda: solver_call(problem, m, starts[0], problem.targets[loose],
                                        cfg.memory_budget_s, cfg.max_iter))


def _curve_of(problem, cfg, m, mu, first) -> dict[str, Any] | None:
    """The first start's objective gap against seconds: a fit's points, a solver's trace."""
    if m.fits:
        pts = [first[u][0] for u in mu if first[u][0] is not None]
        return {"point": True, "seconds": [p["total"] for p in pts],
                "iteration": [p["n_iter"] for p in pts],
                "gap": [p["f"] - problem.f_star for p in pts]} if pts else None
    if first[m.name][0] is None:
        return None
    out = first[m.name][0]
    r = out["res"]
    obj = np.asarray(r.trace.objective)
    idx = downsample(obj.shape[0], cfg.curve_points)
    return {"seconds": (out["t_build"] + np.asarray(r.trace.seconds)[idx]).tolist(),
            "iteration": idx.tolist(), "gap": (obj[idx] - problem.f_star).tolist()}


def _method_record(problem, cfg, m, mu, tn, units, timing, searches, peaks, n) -> dict:
    """The record of one method at one target, from its units' times and first runs."""
    times, first = timing["times"], timing["first"]
    unit = next((u for u in mu if tn in units[u][2]), None)
    per_start, finals, iters, evals, builds = [], [], [], [], []
    for i in range(n):
        ts = times[unit][i][tn] if unit is not None else []
        per_start.append(statistics.median(ts) if ts else None)
        o = first[unit][i] if unit is not None else None
        if o is not None:
            finals.append(o["f"])
            if m.fits:
                iters.append(o["n_iter"])
            elif tn in o.get("iters", {}):
                iters.append(o["iters"][tn])
                evals.append(o["evals"][tn])
            else:
                iters.append(o["n_iter"])
            if tn in o.get("bound_evals", {}):
                builds.append(o["bound_evals"][tn])
    ok = n > 0 and all(t is not None for t in per_start)
    rec = _record(problem, m, tn, ok, per_start, finals, iters, evals, peaks[m.name], cfg)
    rec["metrics"]["repeats"] = max((timing["reps"][u] for u in mu), default=0)
    if m.fits:
        s = searches[m.name][tn]
        rec["metrics"].update({
            "tol": s["tol"], "tols_tried": [t["tol"] for t in s["tried"]],
            "search": s["tried"], "over_budget": s["over_budget"],
            "max_iter": s["max_iter"], "stops_at_target": False,
            "start_point": _start_note(m, problem)})
        if m.kind == "glum":
            rec["metrics"]["glum_alpha"] = problem.glum_alpha()
        if m.kind == "sklearn":
            rec["metrics"]["sklearn_C"] = problem.sklearn_C()
    else:
        rec["metrics"].update({"stops_at_target": True, "options": m.options,
                               "start_point": _start_note(m, problem),
                               "bound_evaluations_per_start": builds,
                               "bound_evaluations": int(statistics.median(builds))
                               if builds else None})
        if first[m.name][0] is not None:
            rec["metrics"]["message"] = first[m.name][0]["res"].message
    return rec


def _skipped_record(problem, name, reason, tn, probe) -> dict:
    rec = {"task": problem.task, "dataset": problem.dataset,
           "setting": setting_label(problem, tn), "method": name,
           "peer": not name.startswith("bound"),
           "default": False, "reached": False, "time_to_target_s": None,
           "evaluations": None, "final_objective": None,
           "target_objective": problem.targets[tn],
           "metrics": {"skipped": reason, "target_name": tn, "rel_target":
                       problem.rel[tn], **problem.describe()}}
    if probe is not None:  # not timed; its peak memory from the one-iteration probe
        rec["metrics"].update({"peak_memory_mb": probe["peak_memory_mb"],
                               "peak_memory_note": probe["note"], "memory_probe": probe})
    return rec


def setting_label(problem: Problem, target_name: str) -> str:
    if problem.paper:
        return problem.setting
    return f"{problem.setting} {target_name}"


def _start_note(m: Method, problem: Problem) -> str:
    if m.kind == "sklearn":
        return "0 (scikit-learn cannot take a start point)"
    if m.kind == "estimator":
        return "0 (the estimator's start)"
    if m.kind == "glum":
        return "the shared starts (start_params)" if problem.paper else \
            "glum's own (intercept at the mean response, coefficients 0)"
    return f"shared N(0, {START_SCALE}^2) starts" if problem.paper else "0"


def _record(problem: Problem, m: Method, tn: str, ok: bool, per_start: list, finals: list,
            iters: list, evals: list, peak: float | None, cfg: RunConfig) -> dict[str, Any]:
    reached_times = [t for t in per_start if t is not None]
    return {
        "task": problem.task, "dataset": problem.dataset,
        "setting": setting_label(problem, tn), "method": m.name, "peer": m.peer,
        "default": m.default, "reached": ok,
        "time_to_target_s": statistics.median(per_start) if ok else None,
        "evaluations": int(statistics.median(evals)) if (evals and ok) else None,
        "final_objective": statistics.median(finals) if finals else None,
        "target_objective": problem.targets[tn],
        "metrics": {
            "iterations": int(statistics.median(iters)) if iters else None,
            "n_starts": len(per_start), "n_reached": len(reached_times),
            "repeats": cfg.repeats, "time_per_start_s": per_start,
            "time_mean_over_starts_s": statistics.fmean(reached_times) if ok else None,
            "peak_memory_mb": peak, "target_name": tn, "rel_target": problem.rel[tn],
            "kind": m.kind, "solver": m.spec, "time_budget_s": cfg.time_budget_s,
            **problem.describe(),
        },
    }
