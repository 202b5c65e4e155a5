"""Hierarchies of quantum relaxations and greedy feature selection (Beyler & Bach, Sec. 5).

Adding monomials restricts the domain (Sec. 5.2: the enlarged K' maps into the smaller one) but
also changes the entropy term, -(eps/n) tr S log S with n the number of features, so a_eps(F)
is *not* monotone in the feature set (docs/quantum.md, "Hierarchies and greedy features":
e.g. going from (x) to (1, x) with h = 0 raises it whenever J != 0). Every a_eps along the
way is a valid bound on Phi_eps, so
:func:`greedy_features` and :func:`degree_hierarchy` report the best (smallest) bound found so
far and the feature set that achieved it: more features never give a worse answer.

:func:`greedy_features` is Alg. 2: from I (default (1, x)), try every candidate at XOR-distance
one, alpha XOR e_i, keep the one with the smallest bound, repeat k times. Candidates are scored at
a loose tolerance, warm-started from the current set's solution; each chosen set is solved at the
tight tolerance (Sec. 5.3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from zbound.ising.features import FeatureSet, default_features, distance_one_candidates
from zbound.ising.quantum import QuantumResult, quantum_bound
from zbound.ising.quantum.checks import check_int, check_positive, resolve_features
from zbound.ising.result import BoundResult
from zbound.solvers.result import Trace

__all__ = ["GreedyResult", "greedy_features", "degree_hierarchy"]


@dataclass(kw_only=True, repr=False)
class GreedyResult(BoundResult):
    """Outcome of :func:`greedy_features`, a :class:`~zbound.ising.result.BoundResult`.

    bound: the smallest tight-tolerance upper bound on Phi_eps over the sets along the greedy
    path (the start and each selected set), achieved with ``best_features``; never larger than
    the bound of the start set nor of any shorter greedy run.

    features: the full selected set (start plus the k picks). history: one dict per greedy step:
    ``added`` (mask), ``bound`` (selection-tolerance bound with it), ``tight_bound`` (its bound at
    ``tol_final``), ``n_candidates``, ``seconds``. ``result``: the QuantumResult that achieved
    ``bound``, whose ``converged``, ``status``, ``message``, ``marginals`` (P(x_i = 1)) and
    ``means`` (E[x_i]) are also this result's; ``final``: the QuantumResult of ``features``.
    ``nit``: greedy steps; ``n_evals``: quantum solves; ``trace``: the best bound after the
    start and after each step.
    """

    features: FeatureSet
    history: list[dict] = field(default_factory=list)
    result: QuantumResult | None = None
    best_features: FeatureSet | None = None
    final: QuantumResult | None = None

    @property
    def means(self):
        """E[x_i] of the final solve."""
        return None if self.result is None else self.result.means


def greedy_features(
    model,
    k: int,
    tol_select: float = 1e-3,
    tol_final: float = 1e-6,
    features: FeatureSet | None = None,
    max_iter_select: int = 2000,
    max_iter_final: int = 20000,
    warm_start: bool = True,
    **solver_options,
) -> GreedyResult:
    """Alg. 2 of Beyler & Bach: add ``k`` monomials one at a time, each the candidate at
    XOR-distance one from the current set whose bound a_eps is smallest.

    tol_select: relative gap while scoring candidates; tol_final: for the final value.
    features: starting set (default (1, x)). Extra keyword arguments go to quantum_bound.
    """
    start = time.perf_counter()
    features = resolve_features(model, features)
    k = check_int("k", k, 0)
    tol_select = check_positive("tol_select", tol_select)
    tol_final = check_positive("tol_final", tol_final)
    current = quantum_bound(model, features, tol=tol_final, max_iter=max_iter_final,
                            **solver_options)
    best = current
    start_bound, start_s = current.bound, time.perf_counter() - start
    history: list[dict] = []
    for _ in range(k):
        t0 = time.perf_counter()
        cands = distance_one_candidates(features)
        if not cands:
            break
        pick = None
        for c in cands:
            fs = features.add(c)
            r = quantum_bound(
                model, fs, tol=tol_select, max_iter=max_iter_select,
                warm_start=current if warm_start else None, **solver_options,
            )
            if pick is None or r.bound < pick[1].bound:
                pick = (c, r)
        c, selected = pick
        features = features.add(c)
        current = quantum_bound(
            model, features, tol=tol_final, max_iter=max_iter_final,
            warm_start=selected if warm_start else None, **solver_options,
        )
        if current.bound < best.bound:
            best = current
        history.append({
            "added": c,
            "bound": selected.bound,
            "tight_bound": current.bound,
            "n_candidates": len(cands),
            "seconds": time.perf_counter() - t0,
        })
    best_so_far = np.minimum.accumulate([start_bound] + [h["tight_bound"] for h in history])
    seconds = [start_s] + [h["seconds"] for h in history]
    n_solves = 1 + sum(h["n_candidates"] + 1 for h in history)
    return GreedyResult(
        bound=best.bound,
        converged=best.converged,
        status=best.status,
        message=best.message,
        marginals=best.marginals,
        nit=len(history),
        n_evals=n_solves,
        method="greedy-features",
        trace=Trace(best_so_far, np.cumsum(seconds), np.full(len(seconds), np.nan),
                    np.arange(len(seconds))),
        features=features,
        history=history,
        result=best,
        seconds=time.perf_counter() - start,
        best_features=best.features,
        final=current,
    )


def degree_hierarchy(model, max_features: int | None = None, tol: float = 1e-6,
                     best_so_far: bool = True, **options):
    """Bounds for feature sets grown in increasing degree (the non-greedy curve of Fig. 1).

    Starts from (1, x) and adds monomials of degree 2, 3, ... (in lexicographic order of their
    variables), one at a time, up to ``max_features`` (default: all 2^d, so needs d <= 12).
    Returns a list of (n, QuantumResult) (``marginals`` of each are P(x_i = 1)). With
    ``best_so_far`` (default) the result at n is the one with the smallest bound among the sets
    of size <= n (its ``features`` say which set achieved it), so bounds never increase with n;
    ``best_so_far=False`` gives each set's own a_eps, which can increase (module docstring).
    """
    from itertools import combinations

    d = model.d
    features = default_features(d)
    limit = (1 << d) if max_features is None else check_int("max_features", max_features, 1)
    if max_features is None and d > 12:
        raise ValueError(f"degree_hierarchy over all 2^{d} features needs d <= 12")
    extra = [sum(1 << i for i in c) for deg in range(2, d + 1)
             for c in combinations(range(d), deg)]
    out = []
    r = quantum_bound(model, features, tol=tol, **options)
    best = r
    out.append((features.n, r))
    for m in extra:
        if features.n >= limit:
            break
        features = features.add(m)
        r = quantum_bound(model, features, tol=tol, warm_start=r, **options)
        if r.bound < best.bound:
            best = r
        out.append((features.n, best if best_so_far else r))
    return out
