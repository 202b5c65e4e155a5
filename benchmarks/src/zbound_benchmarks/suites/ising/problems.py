"""The random Ising problems of the suite: a :class:`Problem` names one parameter family of
:func:`zbound.ising.generators.random_model`, draws its models and describes itself in records.

A record's ``dataset`` string (e.g. ``"logdet-mixed/d=5/complete"``) is for people; the report
reads the same facts from the explicit fields :meth:`Problem.fields` puts in ``metrics``
(``d``, ``params``, ``coupling``, ``graph``, ``w``, ``eps``) and never parses the string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zbound.ising.generators import random_model
from zbound.ising.model import IsingModel


@dataclass(frozen=True)
class Problem:
    """One family of random models.

    d: number of spins. params: parameter setting ("gaussian", "logdet" for Jordan-Wainwright,
    "trw" for Wainwright et al.). graph: "complete", "tree" or "independent". coupling:
    "attractive", "mixed" or "repulsive" (logdet / trw settings only). w: coupling strength
    (logdet / trw only). epsilon: temperature.
    """

    d: int
    params: str = "gaussian"
    graph: str = "complete"
    coupling: str | None = None
    w: float | None = None
    epsilon: float = 1.0

    @property
    def family(self) -> str:
        """Parameter setting and coupling type, e.g. "logdet-mixed" (or "gaussian")."""
        return self.params if self.coupling is None else f"{self.params}-{self.coupling}"

    @property
    def dataset(self) -> str:
        """The record's ``dataset`` string, e.g. "logdet-mixed/d=5/complete"."""
        return f"{self.family}/d={self.d}/{self.graph}"

    def fields(self) -> dict[str, Any]:
        """The explicit description stored in every record's ``metrics``."""
        return {"d": self.d, "params": self.params, "coupling": self.coupling,
                "graph": self.graph, "w": self.w, "eps": self.epsilon}

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"d": self.d, "setting": self.params, "graph": self.graph}
        if self.coupling is not None:
            kwargs["coupling"] = self.coupling
        if self.w is not None:
            kwargs["w"] = self.w
        if self.epsilon != 1.0:
            kwargs["epsilon"] = self.epsilon
        return kwargs

    def draw(self, n: int, seed: int) -> list[IsingModel]:
        """``n`` models from one generator seeded with ``seed`` (the same seed, the same models)."""
        rng = np.random.default_rng(seed)
        return [random_model(random_state=rng, **self._kwargs()) for _ in range(n)]

    def one(self, seed: int) -> IsingModel:
        """A single model drawn with ``random_state=seed`` (timings and convergence tasks)."""
        return random_model(random_state=seed, **self._kwargs())
