"""Optional dependencies: a module from one of the package's extras, or an ImportError that
names the extra to install.

The core (the estimators, bounds and solvers at their defaults) needs NumPy, SciPy,
scikit-learn, pooch, threadpoolctl and, for box constraints, qpsolvers with Clarabel. The
extras add the rest: ``cvxpy`` (the
semidefinite relaxations of the Ising bounds), ``crf``, ``pgmpy``, ``fast`` (Numba: the
compiled chain kernels), ``dask``, ``torch``, ``docs``.
"""

from __future__ import annotations

import importlib

#: the extra that provides each optional module
EXTRA_OF = {
    "cvxpy": "cvxpy",
    "pycrfsuite": "crf",
    "pgmpy": "pgmpy",
    "numba": "fast",
    "dask": "dask",
    "distributed": "dask",
    "torch": "torch",
}


def require(module: str, what: str):
    """The imported ``module``; without it, an ImportError saying that ``what`` needs it and
    which extra of zbound installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRA_OF.get(top)
        how = f"pip install 'zbound[{extra}]'" if extra else f"pip install {top}"
        raise ImportError(f"{what} needs {top}, which is not installed: {how}") from exc


__all__ = ["EXTRA_OF", "require"]
