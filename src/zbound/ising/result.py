"""The record every Ising bound returns: a solver :class:`~zbound.solvers.Result` with the bound.

:class:`BoundResult` is a :class:`~zbound.solvers.Result`, so the Ising methods report what every
iterative method of the library reports (``fun``, ``converged``, ``status``, ``message``, ``nit``,
``n_evals``, ``method``, ``trace``), and adds the certificate: ``bound``, the upper bound on
Phi_eps (None where a peer solver failed), ``certified`` (whether the value is a proven upper
bound whatever the state of the iterations), ``marginals`` (P(x_i = 1)) and ``seconds``. ``fun``
is the bound (the value the method minimizes), ``status`` a :class:`~zbound.solvers.Status` and
``message`` the method's own words ("converged", "max_iter reached", CVXPY's status, ...).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from zbound.solvers.result import Result, Status, Trace


@dataclass(kw_only=True, repr=False)
class BoundResult(Result):
    """An upper bound on an Ising log-partition function, as a solver :class:`Result`.

    bound: the upper bound on Phi_eps (None where the solver failed); certified: True when
    ``bound`` is a proven upper bound whatever the iterations did (a dual value or a
    decomposition certificate), False for a solver's reported optimum; marginals: (d,)
    P(x_i = 1) where the method gives them (``x`` holds the same array); seconds: wall time.
    Unless given, ``fun`` is ``bound``, ``status`` is STATIONARY when converged (FAILED
    without a bound, MAX_ITER otherwise), ``message`` the status's message and ``trace`` one
    row at the end.
    """

    x: np.ndarray | None = None
    fun: float = math.nan
    converged: bool = False
    message: str = ""
    nit: int = 0
    n_evals: int = 0
    method: str = ""
    trace: Trace | None = None
    bound: float | None
    marginals: np.ndarray | None = None
    seconds: float = 0.0
    certified: bool = True

    @property
    def iterations(self) -> int:
        """The method's iterations (``nit``)."""
        return self.nit

    def __post_init__(self) -> None:
        if math.isnan(self.fun) and self.bound is not None:
            self.fun = float(self.bound)
        if self.x is None:
            self.x = self.marginals
        if self.status is Status.RUNNING:
            self.status = (Status.STATIONARY if self.converged else
                           Status.FAILED if self.bound is None else Status.MAX_ITER)
        if not self.message:
            self.message = self.status.message
        if self.trace is None:
            self.trace = Trace(np.array([self.fun]), np.array([self.seconds]),
                               np.array([np.nan]), np.array([self.n_evals]))


class CheckLog(list):
    """(iteration, best bound, best primal value) per duality-gap check, a list that also keeps
    when each check was appended (``seconds``, since the log was made)."""

    def __init__(self) -> None:
        super().__init__()
        self.t0 = time.perf_counter()
        self.seconds: list[float] = []

    def append(self, check: tuple[int, float, float]) -> None:
        super().append(check)
        self.seconds.append(time.perf_counter() - self.t0)

    def trace(self) -> Trace | None:
        """One :class:`Trace` row per check: the best bound so far, the seconds, the iteration
        as the evaluation count (None without checks)."""
        if not self:
            return None
        return Trace(np.array([c[1] for c in self], dtype=np.float64),
                     np.array(self.seconds, dtype=np.float64), np.full(len(self), np.nan),
                     np.array([c[0] for c in self]))
