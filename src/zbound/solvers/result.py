"""One result type for every solver (STYLE.md: SciPy's ``OptimizeResult``, plus a trace).

Every solver in :mod:`zbound.solvers` -- the bound majorization variants and the baselines --
returns a :class:`Result`, so bench code never special-cases a solver. The per-iteration
:class:`Trace` holds one row per accepted iterate (row 0 is the start point).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

#: relative rise of an objective between iterations that counts as rounding, not as a failure
#: of monotonicity (:meth:`Trace.is_monotone`)
MONOTONE_RTOL = 1e-10


class Status(IntEnum):
    """Why a solver stopped (SciPy's ``OptimizeResult.status`` with a message table).

    ``converged`` holds for STATIONARY, FTOL, TARGET, ZERO_STEP and NO_DECREASE (the step
    cannot decrease the objective any more in float64: a numerical optimum).
    """

    RUNNING = -1
    STATIONARY = 0
    FTOL = 1
    TARGET = 2
    ZERO_STEP = 3
    NO_DECREASE = 4
    CALLBACK = 5
    MAX_ITER = 6
    LINE_SEARCH_FAILED = 7
    FAILED = 8

    @property
    def message(self) -> str:
        return _MESSAGES[self]

    @property
    def converged(self) -> bool:
        return self in _CONVERGED


_MESSAGES = {
    Status.RUNNING: "running",
    Status.STATIONARY: "stationarity measure below tol",
    Status.FTOL: "relative objective change below ftol",
    Status.TARGET: "target objective reached",
    Status.ZERO_STEP: "zero step: stationary to the accuracy of the step solver",
    Status.NO_DECREASE: "no decrease (numerical limit of the bound step)",
    Status.CALLBACK: "stopped by callback",
    Status.MAX_ITER: "maximum number of iterations reached",
    Status.LINE_SEARCH_FAILED: "line search failed",
    Status.FAILED: "the solver failed",
}
_CONVERGED = frozenset({Status.STATIONARY, Status.FTOL, Status.TARGET, Status.ZERO_STEP,
                        Status.NO_DECREASE})


@dataclass(frozen=True)
class Trace:
    """Per-iteration record, one row per accepted iterate (row 0 = start point).

    Attributes
    ----------
    objective : (k,) objective value J(theta_i)
    seconds : (k,) wall seconds since the solver started
    grad_norm : (k,) Euclidean norm of the objective's gradient at theta_i (nan where a method
        did not compute it at that point)
    n_evals : (k,) cumulative model evaluations (objective, gradient, Hessian or bound calls)
    """

    objective: np.ndarray
    seconds: np.ndarray
    grad_norm: np.ndarray
    n_evals: np.ndarray

    def __len__(self) -> int:
        return int(self.objective.shape[0])

    def time_to(self, target: float) -> float | None:
        """Seconds at which the objective first reached ``target`` (None if never)."""
        hit = np.flatnonzero(self.objective <= target)
        return float(self.seconds[hit[0]]) if hit.size else None

    def evals_to(self, target: float) -> int | None:
        """Cumulative evaluations when the objective first reached ``target`` (None if never)."""
        hit = np.flatnonzero(self.objective <= target)
        return int(self.n_evals[hit[0]]) if hit.size else None

    def iterations_to(self, target: float) -> int | None:
        """The first row (iteration) whose objective is <= ``target`` (None if never)."""
        hit = np.flatnonzero(self.objective <= target)
        return int(hit[0]) if hit.size else None

    def is_monotone(self, rtol: float = MONOTONE_RTOL) -> bool:
        """Whether the objective never rose between rows by more than ``rtol`` * max(1, |f|)
        (rounding)."""
        f = self.objective
        if f.size < 2:
            return True
        return bool(np.all(np.diff(f) <= rtol * np.maximum(1.0, np.abs(f[:-1]))))


@dataclass
class Result:
    """Outcome of :func:`zbound.solvers.minimize`, whatever the method.

    Attributes
    ----------
    x : (p,) final iterate
    fun : objective at ``x``
    converged : True when a stopping test (tolerance or target) was met, False when the
        iteration limit was hit, a callback stopped it, or the method failed
    message : why it stopped (the status's message, or the peer solver's own words)
    nit : accepted iterations
    n_evals : model evaluations in total (objective, gradient, Hessian and bound calls each count 1)
    method : registry name of the method that produced it
    trace : :class:`Trace`
    jac : (p,) gradient at ``x`` where known, else None
    target_reached : whether ``fun <= target`` (False when no target was given)
    counts : evaluations by kind, e.g. {"value": 3, "value_and_grad": 10, "bound": 7}
    info : method-specific extras (e.g. accepted Newton / bound steps)
    status : :class:`Status` code

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from zbound.models.multinomial import MultinomialLogistic
    >>> from zbound.solvers import minimize
    >>> X, y = load_iris(return_X_y=True)
    >>> model = MultinomialLogistic(X, y, 3, 1.0)
    >>> res = minimize(model, np.zeros(model.n_params))
    >>> res.converged, res.method
    (True, 'newton-bound')
    >>> round(res.fun, 4)
    37.9079
    >>> bool(np.all(np.diff(res.trace.objective) <= 1e-12))     # monotone
    True
    """

    x: np.ndarray
    fun: float
    converged: bool
    message: str
    nit: int
    n_evals: int
    method: str
    trace: Trace
    jac: np.ndarray | None = None
    target_reached: bool = False
    counts: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    status: Status = Status.RUNNING

    @property
    def success(self) -> bool:
        """SciPy-compatible alias of ``converged``."""
        return self.converged

    def __repr__(self) -> str:
        return (f"Result(method={self.method!r}, status={self.status.name}, "
                f"converged={self.converged}, fun={self.fun:.10g}, nit={self.nit}, "
                f"n_evals={self.n_evals}, message={self.message!r})")

    def __str__(self) -> str:
        head = "converged" if self.converged else "NOT converged"
        return (f"{self.method}: {head} ({self.status.name}: {self.message}) after {self.nit} "
                f"iterations and {self.n_evals} evaluations; objective {self.fun:.10g}")


class Recorder:
    """Collects the trace while a solver runs; cheap enough to call every iteration."""

    __slots__ = ("_t0", "_f", "_s", "_g", "_e")

    def __init__(self):
        self._t0 = time.perf_counter()
        self._f: list[float] = []
        self._s: list[float] = []
        self._g: list[float] = []
        self._e: list[int] = []

    def record(self, f: float, grad_norm: float, n_evals: int) -> None:
        self._s.append(time.perf_counter() - self._t0)
        self._f.append(f)
        self._g.append(grad_norm)
        self._e.append(n_evals)

    def amend(self, f: float, grad_norm: float, n_evals: int) -> None:
        """Replace the last entry's values (the same iterate, evaluated again: in float64
        after float32 iterations); its time stays."""
        self._f[-1], self._g[-1], self._e[-1] = f, grad_norm, n_evals

    @property
    def last_objective(self) -> float | None:
        return self._f[-1] if self._f else None

    def __len__(self) -> int:
        return len(self._f)

    def trace(self) -> Trace:
        return Trace(objective=np.asarray(self._f, dtype=np.float64),
                     seconds=np.asarray(self._s, dtype=np.float64),
                     grad_norm=np.asarray(self._g, dtype=np.float64),
                     n_evals=np.asarray(self._e, dtype=np.int64))
