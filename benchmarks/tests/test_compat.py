"""The peers' compatibility shims: output-only arguments dropped where SciPy no longer takes
them, everything else passed through, the peer's module restored."""

from __future__ import annotations

import types

import numpy as np
import pytest
import scipy.optimize

from zbound_benchmarks.compat import lbfgsb_accepting, patched_lbfgsb


def _quadratic(x):
    return float((x - 3.0) @ (x - 3.0)), 2.0 * (x - 3.0)


def test_output_only_arguments_are_dropped_where_not_taken():
    def new_scipy(func, x0, fprime=None, m=10, pgtol=1e-5, maxiter=15000):
        return {"m": m, "pgtol": pgtol, "maxiter": maxiter}

    call = lbfgsb_accepting(new_scipy)
    assert call is not new_scipy
    assert call(_quadratic, np.zeros(2), iprint=-1, disp=0, m=5, pgtol=1e-9) == \
        {"m": 5, "pgtol": 1e-9, "maxiter": 15000}
    with pytest.raises(TypeError, match="factr"):      # anything else still fails loudly
        call(_quadratic, np.zeros(2), factr=10.0)


def test_a_function_that_takes_them_is_left_alone():
    def old_scipy(func, x0, iprint=-1, disp=None):
        return iprint, disp

    def anything(*args, **kwargs):
        return kwargs

    assert lbfgsb_accepting(old_scipy) is old_scipy
    assert lbfgsb_accepting(anything) is anything


def test_the_installed_lbfgsb_runs_as_a_peer_calls_it():
    """What dask-glm and glum pass (iprint) reaches the same minimizer with the installed
    SciPy, whether it still takes the argument or not."""
    x, f, info = lbfgsb_accepting(scipy.optimize.fmin_l_bfgs_b)(
        _quadratic, np.zeros(3), iprint=-1, pgtol=1e-10, factr=10.0)
    assert info["warnflag"] == 0 and np.allclose(x, 3.0) and f < 1e-12


def test_the_module_attribute_is_patched_and_restored():
    def strict(func, x0):
        return "ran"

    peer = types.SimpleNamespace(fmin_l_bfgs_b=strict)
    with patched_lbfgsb(peer):
        assert peer.fmin_l_bfgs_b(None, None, iprint=-1) == "ran"
    assert peer.fmin_l_bfgs_b is strict
    with pytest.raises(RuntimeError), patched_lbfgsb(peer):
        raise RuntimeError("the peer failed")
    assert peer.fmin_l_bfgs_b is strict
