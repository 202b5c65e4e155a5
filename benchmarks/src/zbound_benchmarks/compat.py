"""Keeping the peers running across their dependencies' releases.

A peer that calls a SciPy function with an argument a newer SciPy removed stops working for
every user who installs that SciPy, though nothing in the peer's algorithm changed. SciPy 1.18
removed ``iprint`` and ``disp`` from ``scipy.optimize.fmin_l_bfgs_b`` (they only set what it
prints); dask-glm (the L-BFGS of dask-ml's ``LogisticRegression``) and glum 3.4.1 (its
"lbfgs" solver) still pass ``iprint``, and raised ``TypeError`` there. The wrappers here drop
those output-only arguments and pass every other one through unchanged, so the peers run the
algorithm they always ran. Any other failure of a peer is recorded with its error by the
suites, not hidden.
"""

from __future__ import annotations

import contextlib
import functools
import inspect

#: arguments of ``fmin_l_bfgs_b`` that set only its printed output
OUTPUT_ONLY = ("iprint", "disp")


def lbfgsb_accepting(fn):
    """``fn`` (SciPy's ``fmin_l_bfgs_b``, or a wrapper of it with its signature) that drops the
    :data:`OUTPUT_ONLY` keyword arguments it does not take; ``fn`` itself where it takes them
    all (or any keyword)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):          # a builtin without a signature: leave it
        return fn
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn
    dropped = tuple(name for name in OUTPUT_ONLY if name not in params)
    if not dropped:
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for name in dropped:
            kwargs.pop(name, None)
        return fn(*args, **kwargs)

    return call


@contextlib.contextmanager
def patched_lbfgsb(module):
    """Within the block, ``module.fmin_l_bfgs_b`` (a peer's own import of SciPy's) is
    :func:`lbfgsb_accepting` of it; restored on exit."""
    original = module.fmin_l_bfgs_b
    module.fmin_l_bfgs_b = lbfgsb_accepting(original)
    try:
        yield
    finally:
        module.fmin_l_bfgs_b = original


__all__ = ["OUTPUT_ONLY", "lbfgsb_accepting", "patched_lbfgsb"]
