"""``zbound.show_versions()``: what a bug report needs (scikit-learn's helper, for zbound)."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

#: the core dependencies, then the optional ones (an extra each, or a peer)
CORE = ("numpy", "scipy", "scikit-learn", "pooch", "threadpoolctl", "qpsolvers", "clarabel")
OPTIONAL = ("numba", "cvxpy", "dask", "distributed", "dask-ml", "torch", "python-crfsuite",
            "pgmpy", "matplotlib", "rich", "zbound-benchmarks")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _blas() -> list[dict]:
    import numpy  # noqa: F401  (loads NumPy's BLAS, whose pool is reported)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    return [{k: info.get(k) for k in ("internal_api", "version", "architecture",
                                      "num_threads", "filepath")}
            for info in threadpool_info()]


def versions() -> dict:
    """System, Python, zbound, dependency versions (None: not installed) and the BLAS and
    OpenMP thread pools, as a dict."""
    return {
        "system": {"python": sys.version.replace("\n", " "), "executable": sys.executable,
                   "machine": platform.platform()},
        "zbound": _version("zbound"),
        "dependencies": {d: _version(d) for d in CORE},
        "optional": {d: _version(d) for d in OPTIONAL},
        "threadpools": _blas(),
    }


def show_versions() -> None:
    """Print the system, Python, zbound and dependency versions and the BLAS thread pools:
    paste the output into a bug report.

    Examples
    --------
    >>> import zbound
    >>> zbound.show_versions()        # doctest: +ELLIPSIS
    <BLANKLINE>
    System:
        python: ...
    <BLANKLINE>
    zbound: ...
    ...
    """
    v = versions()
    print("\nSystem:")
    for k, val in v["system"].items():
        print(f"{k:>16}: {val}")
    print(f"\nzbound: {v['zbound']}")
    print("\nDependencies:")
    for k, val in v["dependencies"].items():
        print(f"{k:>16}: {val}")
    print("\nOptional (None: not installed):")
    for k, val in v["optional"].items():
        print(f"{k:>16}: {val}")
    print("\nThread pools (threadpoolctl):")
    for pool in v["threadpools"]:
        print("")
        for k, val in pool.items():
            print(f"{k:>16}: {val}")
