"""The result every MoE training method returns, and the per-iteration recorder behind it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

# An objective that rises by more than this (relative) between EM iterations is a failure of
# monotonicity rather than rounding.
MONOTONE_RTOL = 1e-10


@dataclass
class MoEFit:
    """Outcome of one training run.

    Attributes
    ----------
    theta : final parameters (flat, see :class:`zbound.moe.model.MoEProblem`)
    objective : L(theta) at the final parameters
    n_iter : iterations done
    converged : stopped on the tolerance (False: the iteration limit, or a failure)
    objectives : L at iterates 0..n_iter (iterate 0 = the start)
    times : cumulative wall seconds at the same iterates (0 at the start)
    collapsed : experts whose responsibility mass fell below the collapse threshold (or whose
        noise variance hit its floor) at the end
    method : "em", "gradient-em", "gd", "adam"
    info : method details (M-step solver, inner iterations, step sizes, ...)
    """

    theta: np.ndarray
    objective: float
    n_iter: int
    converged: bool
    objectives: list[float]
    times: list[float]
    collapsed: tuple[int, ...] = ()
    method: str = ""
    info: dict = field(default_factory=dict)
    thetas: list[np.ndarray] | None = None

    @property
    def monotone(self) -> bool:
        """True when the objective never rose by more than rounding between iterates."""
        f = np.asarray(self.objectives)
        if f.size < 2:
            return True
        return bool(np.all(np.diff(f) <= MONOTONE_RTOL * np.maximum(1.0, np.abs(f[:-1]))))

    def iterations_to(self, target: float) -> int | None:
        """First iterate index whose objective is <= target (None if never)."""
        hit = np.flatnonzero(np.asarray(self.objectives) <= target)
        return int(hit[0]) if hit.size else None

    def time_to(self, target: float) -> float | None:
        """Wall seconds to the first iterate whose objective is <= target (None if never)."""
        i = self.iterations_to(target)
        return None if i is None else float(self.times[i])


class Recorder:
    """Objective and time after each iteration; time spent recording (an extra objective
    evaluation) is excluded from the clock."""

    def __init__(self, keep_thetas: bool = False):
        self.objectives: list[float] = []
        self.times: list[float] = []
        self.thetas: list[np.ndarray] | None = [] if keep_thetas else None
        self._elapsed = 0.0
        self._start = None

    def start(self) -> None:
        self._start = time.perf_counter()

    def pause(self) -> None:
        self._elapsed += time.perf_counter() - self._start

    def record(self, f: float, theta: np.ndarray) -> None:
        """Record an iterate (clock paused by the caller)."""
        self.objectives.append(float(f))
        self.times.append(self._elapsed)
        if self.thetas is not None:
            self.thetas.append(np.array(theta, copy=True))


def collapsed_experts(mass: np.ndarray, n_eff: float, log_var=None, floor=None) -> tuple:
    """Experts responsible for less than one effective sample, or at the variance floor."""
    out = set(int(j) for j in np.flatnonzero(mass * n_eff < 1.0))
    if log_var is not None and floor is not None:
        out |= set(int(j) for j in np.flatnonzero(np.exp(log_var) <= floor * (1 + 1e-9)))
    return tuple(sorted(out))
