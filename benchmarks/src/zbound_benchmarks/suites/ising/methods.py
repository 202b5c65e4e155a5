"""The bounds compared on each problem. Every method maps a model to a dict

    {bound, marginals (P(x_i = 1), (d,), or None), iterations, converged, guaranteed}

where ``guaranteed`` says whether ``bound`` is certified to be >= Phi_eps: TRW's ``certified``
(its bound is the tree-decomposition certificate whether or not the messages converged, so
unconverged TRW values are checked against exact values too; ``converged`` says whether it is
close to the TRW optimum), log-det whenever the solver returned a value, the quantum bounds always.
Every library result already reports ``marginals`` as P(x_i = 1); entries the feature set cannot
represent are NaN, and such marginals are dropped (None) rather than guessed.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from zbound.ising.logdet import logdet_bound
from zbound.ising.model import IsingModel
from zbound.ising.trw import trw_bound


def _finite_or_none(marginals) -> np.ndarray | None:
    if marginals is None:
        return None
    p = np.asarray(marginals, dtype=np.float64)
    return None if np.any(~np.isfinite(p)) else p


def m_quantum(model: IsingModel) -> dict[str, Any]:
    from zbound.ising.quantum import quantum_bound

    r = quantum_bound(model)
    return {"bound": r.bound, "marginals": _finite_or_none(r.marginals),
            "iterations": r.iterations, "converged": r.converged, "guaranteed": True}


def m_greedy(k: int):
    def run(model: IsingModel) -> dict[str, Any]:
        from zbound.ising.hierarchy import greedy_features

        r = greedy_features(model, k)
        res = r.result
        return {"bound": r.bound, "marginals": _finite_or_none(r.marginals),
                "iterations": res.iterations if res else None,
                "converged": r.converged, "guaranteed": True, "greedy": r}
    return run


def m_metric(max_iter: int):
    def run(model: IsingModel) -> dict[str, Any]:
        from zbound.ising.metric import metric_learning_bound

        r = metric_learning_bound(model, max_iter=max_iter)
        # the bound is valid whether or not Kelley's gap closed (min with the plain bound)
        return {"bound": r.bound, "marginals": _finite_or_none(r.quantum.marginals),
                "iterations": r.iterations, "converged": r.converged, "guaranteed": True,
                "kelley_gap": r.gap}
    return run


def m_logdet(model: IsingModel) -> dict[str, Any]:
    r = logdet_bound(model)
    return {"bound": r.bound, "marginals": r.marginals, "iterations": None,
            "converged": r.converged, "guaranteed": r.bound is not None}


def m_trw(rho: str):
    def run(model: IsingModel) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)   # recorded via ``converged``
            r = trw_bound(model, rho=rho, max_iter=10000)
        return {"bound": r.bound, "marginals": r.marginals, "iterations": r.iterations,
                "converged": r.converged, "guaranteed": bool(r.certified)}
    return run


def competitors(d: int, ks=(3,)) -> dict[str, Any]:
    """quantum (1, x), greedy k for each k in ``ks``, log-det and TRW, in that order."""
    methods = {"quantum": m_quantum}
    for k in ks:
        methods[f"quantum-greedy-k{k}"] = m_greedy(k)
    methods["logdet"] = m_logdet
    # the paper optimizes rho at d = 5 and fixes rho = 2/d from d = 10 on (Sec. 7.4, E.2-E.5)
    methods["trw"] = m_trw("optimize" if d <= 5 else "uniform")
    return methods
