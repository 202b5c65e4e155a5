"""The tolerance rule of the test suite: every floating-point comparison follows from the problem.

A test never copies the last digits one machine produced. It states where the error comes from
and takes the tolerance from one of these rules (``EPS`` is the float64 unit roundoff,
2.2e-16; ``SAFETY`` covers the constants of the textbook bounds):

1. **Rounding of a computed quantity** (:func:`rounding`): a value formed by ``ops`` floating-
   point operations on terms of magnitude at most ``scale`` differs from the exact one by at
   most about ``ops * scale * EPS``. Examples: a log-partition function over a chain of L
   positions whose scores reach ``s`` in magnitude (``ops = L``, ``scale = s``); a sum of n
   losses (``ops = n``, ``scale`` the largest loss).
2. **A linear solve** (:func:`solve`): relative error ``cond * EPS`` times the dimension, for
   a matrix of condition number ``cond``.
3. **A solver's stopping rule** (:func:`objective_gap`): two runs stopped at gradient norm
   ``g`` on an objective that is ``mu``-strongly convex are each within ``g^2 / (2 mu)`` of the
   optimum in value, so they differ by at most ``g^2 / mu``, plus the rounding of the value
   itself (rule 1). Their iterates differ by at most ``2 g / mu``.
4. **float32 against float64**: as rule 1 with ``EPS32`` where float32 arithmetic is part of
   the result (a mixed-precision solver's float64 stopping test removes it from the final
   value: rule 3 applies then).

Kernels differ between CPUs (OpenBLAS picks AVX-512 or AVX2 kernels by the processor, and
summation order with them), so a tolerance tighter than these rules is luck on one machine.
"""

from __future__ import annotations

import numpy as np

EPS = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)
SAFETY = 16.0


def rounding(scale: float, ops: int = 1, eps: float = EPS) -> float:
    """Absolute rounding error of ``ops`` operations on terms of magnitude ``scale``."""
    return SAFETY * max(int(ops), 1) * float(scale) * eps


def solve(cond: float, dim: int, eps: float = EPS) -> float:
    """Relative error of a backward-stable solve of a ``dim`` system of condition ``cond``."""
    return SAFETY * max(int(dim), 1) * float(cond) * eps


def objective_gap(grad_norm: float, mu: float, value: float = 0.0, ops: int = 1) -> float:
    """Largest difference in value of two points each stopped at gradient norm ``grad_norm``
    on a ``mu``-strongly convex objective, plus the rounding of a value of size ``value``
    computed in ``ops`` operations."""
    return grad_norm ** 2 / mu + rounding(abs(value), ops)
