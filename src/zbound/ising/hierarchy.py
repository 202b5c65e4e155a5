"""Hierarchies of quantum relaxations and greedy feature selection (Beyler & Bach, Sec. 5).

Adding monomials to the feature vector can only lower a_eps(F) (Sec. 5.2): the enlarged K' maps
into the smaller one. :func:`greedy_features` is Alg. 2: from I (default (1, x)), try every
candidate at XOR-distance one, alpha XOR e_i, keep the one with the smallest bound, repeat k times.
Candidates are scored at a loose tolerance, warm-started from the current set's solution, and
the chosen set is solved once more at the tight tolerance (Sec. 5.3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from zbound.ising.features import FeatureSet, default_features, distance_one_candidates
from zbound.ising.quantum import QuantumResult, quantum_bound
from zbound.ising.quantum.checks import check_int, check_positive, resolve_features

__all__ = ["GreedyResult", "greedy_features", "degree_hierarchy"]


@dataclass
class GreedyResult:
    """bound: final (tight-tolerance) upper bound on Phi_eps with ``features``.

    history: one dict per greedy step: ``added`` (mask), ``bound`` (selection-tolerance bound
    with it), ``n_candidates``, ``seconds``. ``result``: the final QuantumResult, whose
    ``converged``, ``status``, ``marginals`` (P(x_i = 1)) and ``means`` (E[x_i]) are also
    readable here.
    """

    bound: float
    features: FeatureSet
    history: list[dict] = field(default_factory=list)
    result: QuantumResult | None = None
    seconds: float = 0.0

    @property
    def converged(self) -> bool:
        return self.result is not None and self.result.converged

    @property
    def status(self) -> str:
        return "no final solve" if self.result is None else self.result.status

    @property
    def marginals(self):
        """P(x_i = 1) of the final solve (NaN where x_i is not representable)."""
        return None if self.result is None else self.result.marginals

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
    current = quantum_bound(model, features, tol=tol_select, max_iter=max_iter_select,
                            **solver_options)
    history: list[dict] = []
    for _ in range(k):
        t0 = time.perf_counter()
        cands = distance_one_candidates(features)
        if not cands:
            break
        best = None
        for c in cands:
            fs = features.add(c)
            r = quantum_bound(
                model, fs, tol=tol_select, max_iter=max_iter_select,
                warm_start=current if warm_start else None, **solver_options,
            )
            if best is None or r.bound < best[1].bound:
                best = (c, r)
        c, current = best
        features = features.add(c)
        history.append({
            "added": c,
            "bound": current.bound,
            "n_candidates": len(cands),
            "seconds": time.perf_counter() - t0,
        })
    final = quantum_bound(
        model, features, tol=tol_final, max_iter=max_iter_final,
        warm_start=current if warm_start else None, **solver_options,
    )
    return GreedyResult(
        bound=final.bound,
        features=features,
        history=history,
        result=final,
        seconds=time.perf_counter() - start,
    )


def degree_hierarchy(model, max_features: int | None = None, tol: float = 1e-6, **options):
    """Bounds for feature sets grown in increasing degree (the non-greedy curve of Fig. 1).

    Starts from (1, x) and adds monomials of degree 2, 3, ... (in lexicographic order of their
    variables), one at a time, up to ``max_features`` (default: all 2^d, so needs d <= 12).
    Returns a list of (n, QuantumResult) (``marginals`` of each are P(x_i = 1)).
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
    out.append((features.n, r))
    for m in extra:
        if features.n >= limit:
            break
        features = features.add(m)
        r = quantum_bound(model, features, tol=tol, warm_start=r, **options)
        out.append((features.n, r))
    return out
