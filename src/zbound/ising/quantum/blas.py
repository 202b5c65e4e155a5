"""Limiting BLAS/LAPACK threads while the solver runs (threadpoolctl)."""

from __future__ import annotations

from contextlib import nullcontext

_CONTROLLER = None


def blas_threads(limit: int | None):
    """Context limiting BLAS/LAPACK threads to ``limit`` (None: leave them as configured).

    The solver defaults to 1 for every size: its matrices are small (n <= a few hundred) and
    threading gains nothing measurable even on an idle 2-core machine, while with the cores
    shared OpenBLAS's spinning threads cost 20x at d = 400, ~6x at n = 32 and up to 28x in the
    Newton polish at n = 22 (measurements in docs/quantum.md, "Single-threaded BLAS"). The
    switch itself costs ~15 us per solve.
    """
    global _CONTROLLER
    if limit is None:
        return nullcontext()
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
            return nullcontext()
        _CONTROLLER = ThreadpoolController()  # library discovery is slow: do it once
    return _CONTROLLER.limit(limits=limit, user_api="blas")
