"""BLAS threads inside the library's own loops (threadpoolctl, as scikit-learn does in its hot
loops).

The rule: a fit whose work, rows x parameters, is below :data:`SMALL_WORK` runs with one BLAS
thread; larger fits keep the threads the user configured. On small matrices a second thread
gains nothing measurable even on an idle machine, and where the cores are shared OpenBLAS's
spinning threads cost up to two orders of magnitude. The Ising solvers, whose matrices are
at most a few hundred wide, always run with one thread (:func:`blas_threads`).
"""

from __future__ import annotations

from contextlib import nullcontext

#: rows x parameters below which a fit runs with one BLAS thread (2^23: digits, 1797 x 650,
#: is 1.2e6; KMNIST at 8000 x 7850 is 6.3e7)
SMALL_WORK = 1 << 23

_CONTROLLER = None


def blas_threads(limit: int | None):
    """Context limiting BLAS/LAPACK threads to ``limit`` (None: leave them as configured).
    Libraries are discovered once per process (slow); the switch itself is cheap."""
    global _CONTROLLER
    if limit is None:
        return nullcontext()
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
            return nullcontext()
        import numpy.linalg  # noqa: F401  (NumPy's and SciPy's BLAS loaded before they are
        import scipy.linalg  # noqa: F401   found: a library loaded later would not be limited)
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=limit, user_api="blas")


def fit_threads(rows: int, n_params: int):
    """The context a fit runs in: one BLAS thread when ``rows * n_params < SMALL_WORK``."""
    return blas_threads(1 if int(rows) * int(n_params) < SMALL_WORK else None)


def _work(X, y) -> int | None:
    """rows x parameters of a fit on (X, y), parameters taken as columns x classes (at most
    100 distinct labels counted); None where X has no known 2-D shape (dask with unknown
    chunks, sequences)."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2 or any(s != s for s in shape):    # NaN: unknown
        return None
    rows, cols = int(shape[0]), int(shape[1])
    if y is None or not hasattr(y, "__len__"):
        return rows * cols
    if 2 * rows * cols >= SMALL_WORK:       # two labels or more: not small, count them or not
        return 2 * rows * cols
    try:
        import numpy as np

        labels = min(np.unique(np.asarray(y)).size, 100)
    except (TypeError, ValueError):
        labels = 2
    return rows * cols * max(labels, 2)


def limit_small_fits(fit):
    """Decorator for an estimator's ``fit`` / ``partial_fit(X, y, ...)``: the call runs with
    one BLAS thread where its work is below :data:`SMALL_WORK` (see :func:`_work`). It adds
    one frame, which the estimators' ``STACKLEVEL`` counts so that warnings raised in the
    decorated method name the user's line."""
    import functools

    @functools.wraps(fit)
    def wrapper(self, X, y=None, *args, **kwargs):
        work = _work(X, y)
        if work is None or work >= SMALL_WORK:
            return fit(self, X, y, *args, **kwargs)
        with blas_threads(1):
            return fit(self, X, y, *args, **kwargs)

    return wrapper


__all__ = ["SMALL_WORK", "blas_threads", "fit_threads", "limit_small_fits"]
