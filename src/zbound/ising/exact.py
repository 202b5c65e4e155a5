"""Exact log-partition function, marginals and maximum of small or low-treewidth Ising models.

Everything is in the convention of Beyler & Bach, eq. (5): uniform base measure q = 2^-d and
temperature eps,

    Phi_eps(f) = eps * log( 2^-d * sum_x exp(f(x) / eps) ),     Phi_0(f) = max_x f(x).

Two exact routes:

- :func:`enumerate_exact`: all 2^d states, in chunks; the states are split into a block of
  "low" variables enumerated once (2^dl rows) and "high" variables enumerated in batches, so the
  energies of a batch are one matrix product (cross terms x_high^T J x_low) and no Python loop
  runs over states. Sums are taken in log space with a running maximum (logsumexp).
- :func:`eliminate_exact`: variable elimination in the (log-mean-exp, +) or (max, +) semiring with a
  min-fill elimination order; exact on trees (width 1) and on any graph of small treewidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from zbound.ising.model import IsingModel, check_scale, energy_scale
from zbound.utils.logspace import log_mean_exp

MAX_ENUMERATION_D = 26
_LOW_BITS = 14


@dataclass(frozen=True)
class ExactResult:
    """Exact quantities of an Ising model (Phi_eps convention of eq. (5)).

    ``log_partition``: Phi_eps(f) (also as ``bound``; ``converged`` is True, ``status`` "exact");
    ``marginals``: P(x_i = 1), shape (d,); ``means``: E[x_i] = 2 P(x_i = 1) - 1;
    ``moments``: E[x_i x_j], shape (d, d) with unit diagonal (None if not computed);
    ``max_value``: max_x f(x); ``argmax``: a maximizer in {-1, 1}^d.
    """

    log_partition: float
    marginals: np.ndarray | None = None
    means: np.ndarray | None = None
    moments: np.ndarray | None = None
    max_value: float | None = None
    argmax: np.ndarray | None = None

    @property
    def bound(self) -> float:
        """Phi_eps itself (an exact value is also the tightest upper bound), named like the
        ``bound`` of the relaxations."""
        return self.log_partition

    @property
    def converged(self) -> bool:
        return True

    @property
    def status(self) -> str:
        return "exact"


def _check_model(model) -> IsingModel:
    if not isinstance(model, IsingModel):
        raise TypeError(f"expected an IsingModel, got {type(model).__name__}")
    check_scale(model, "exact computation")
    return model


def _finite(value: float, model: IsingModel, what: str = "log-partition") -> float:
    if not np.isfinite(value):
        raise ValueError(
            f"exact {what} is not finite ({value}): parameters / eps overflow float64 "
            f"(scale {energy_scale(model):.3g}, eps = {model.epsilon:.3g})")
    return float(value)


def hypercube(d: int) -> np.ndarray:
    """All 2^d points of {-1, 1}^d, shape (2^d, d); row k holds the bits of k (bit 0 = x_0)."""
    if d < 0 or d > MAX_ENUMERATION_D:
        raise ValueError(f"hypercube dimension must be in [0, {MAX_ENUMERATION_D}], got {d}")
    k = np.arange(2**d, dtype=np.int64)[:, None]
    bits = (k >> np.arange(d, dtype=np.int64)[None, :]) & 1
    return (2 * bits - 1).astype(np.float64)


def enumerate_exact(model: IsingModel, moments: bool = True, batch_states: int = 2**20
                    ) -> ExactResult:
    """Exact Phi_eps, marginals, pairwise moments and max f by chunked enumeration (eq. (5)).

    Cost O(2^d d) time and O(batch_states) memory; d <= 26. At eps = 0 the log-partition is
    max f and the moments are those of the uniform distribution over the maximizers.

    Kept as one function: one pass over the batches accumulates Z, the moments and the
    maximizers with a running shift; split into steps, the accumulators would travel between
    them.
    """
    model = _check_model(model)
    d = model.d
    if d > MAX_ENUMERATION_D:
        raise ValueError(
            f"enumeration of 2^{d} states is too large (d <= {MAX_ENUMERATION_D}); "
            "use eliminate_exact for low-treewidth graphs"
        )
    eps = model.epsilon
    dl = min(d, _LOW_BITS)
    dh = d - dl
    h, J = model.h, model.J
    xl = hypercube(dl)                                  # (L, dl)
    fl = xl @ h[:dl] + 0.5 * np.einsum("ki,ij,kj->k", xl, J[:dl, :dl], xl)
    Jhl = J[dl:, :dl]                                   # (dh, dl)
    per_batch = max(1, batch_states // xl.shape[0])
    n_high = 2**dh

    # running accumulators, all scaled by exp(-shift); ``excess`` = total - count, the sum of
    # expm1(logw - shift), keeps the digits that log(total) - d log 2 would cancel at high
    # temperature (f / eps ~ 1e-7: 1e-16 of a sum near 2^d, times eps ~ 1e7)
    shift = -np.inf
    total = 0.0
    excess = 0.0
    count = 0
    s_low = np.zeros(dl)
    s_high = np.zeros(dh)
    m_ll = np.zeros((dl, dl))
    m_hh = np.zeros((dh, dh))
    m_hl = np.zeros((dh, dl))
    best = -np.inf
    best_x = None
    for start in range(0, n_high, per_batch):
        k = np.arange(start, min(n_high, start + per_batch), dtype=np.int64)[:, None]
        xh = (2 * ((k >> np.arange(dh, dtype=np.int64)[None, :]) & 1) - 1).astype(np.float64)
        fh = xh @ h[dl:] + 0.5 * np.einsum("ki,ij,kj->k", xh, J[dl:, dl:], xh)
        energy = fh[:, None] + fl[None, :] + (xh @ Jhl) @ xl.T    # (B, L)
        b_idx = np.unravel_index(np.argmax(energy), energy.shape)
        if energy[b_idx] > best:
            best = float(energy[b_idx])
            best_x = np.concatenate([xl[b_idx[1]], xh[b_idx[0]]])
        if eps == 0:
            continue
        logw = energy / eps
        new_shift = max(shift, float(logw.max()))
        if np.isfinite(shift) and new_shift > shift:
            scale = np.exp(shift - new_shift)
            excess = count * math.expm1(shift - new_shift) + excess * scale
            total *= scale
            s_low *= scale
            s_high *= scale
            m_ll *= scale
            m_hh *= scale
            m_hl *= scale
        shift = new_shift
        em = np.expm1(logw - shift)
        excess += float(em.sum())
        count += em.size
        w = em + 1.0                                              # (B, L), entries in [0, 1]
        wl = w.sum(axis=0)
        wh = w.sum(axis=1)
        total += wl.sum()
        s_low += xl.T @ wl
        s_high += xh.T @ wh
        if moments:
            m_ll += (xl * wl[:, None]).T @ xl
            m_hh += (xh * wh[:, None]).T @ xh
            m_hl += xh.T @ (w @ xl)
    if eps == 0:
        return _enumerate_zero_temperature(model, best, best_x, moments, batch_states)
    log_partition = eps * (shift + math.log1p(excess / count))   # count = 2^d
    means = np.concatenate([s_low, s_high]) / total
    mom = None
    if moments:
        mom = np.block([[m_ll, m_hl.T], [m_hl, m_hh]]) / total
        mom = 0.5 * (mom + mom.T)
        np.fill_diagonal(mom, 1.0)
    return ExactResult(_finite(log_partition, model), np.clip((1 + means) / 2, 0, 1), means, mom,
                       best,
                       best_x)


def _enumerate_zero_temperature(model, best, best_x, moments, batch_states) -> ExactResult:
    """eps = 0: Phi_0 = max f; moments of the uniform law on the maximizers."""
    d = model.d
    tol = 1e-12 * max(1.0, abs(best))
    count = 0
    s = np.zeros(d)
    mom = np.zeros((d, d))
    for x in _iter_state_batches(d, batch_states):
        keep = x[model.energy(x) >= best - tol]
        count += keep.shape[0]
        s += keep.sum(axis=0)
        if moments:
            mom += keep.T @ keep
    means = s / count
    mom = mom / count if moments else None
    return ExactResult(float(best), (1 + means) / 2, means, mom, float(best), best_x)


def _iter_state_batches(d: int, batch_states: int):
    n = 2**d
    for start in range(0, n, batch_states):
        k = np.arange(start, min(n, start + batch_states), dtype=np.int64)[:, None]
        yield (2 * ((k >> np.arange(d, dtype=np.int64)[None, :]) & 1) - 1).astype(np.float64)


def max_energy(model: IsingModel) -> tuple[float, np.ndarray]:
    """max_x f(x) and a maximizer: by enumeration for d <= 26, else by max-product elimination."""
    model = _check_model(model)
    if model.d <= 20:
        res = enumerate_exact(model.with_epsilon(1.0), moments=False)
        return res.max_value, res.argmax
    return max_product(model)


# ----------------------------------------------------------------------------------------------
# variable elimination


@dataclass
class _Factor:
    vars: tuple[int, ...]          # sorted
    table: np.ndarray              # (2,) * len(vars); axis k is vars[k]; index 0 is x = -1


def _expand(f: _Factor, scope: tuple[int, ...]) -> np.ndarray:
    shape = [2 if v in f.vars else 1 for v in scope]
    return f.table.reshape(shape)


def _model_factors(model: IsingModel, scale: float) -> list[_Factor]:
    s = np.array([-1.0, 1.0])
    factors = [_Factor((i,), scale * model.h[i] * s) for i in range(model.d)]
    for i, j in model.edges():
        factors.append(_Factor((int(i), int(j)), scale * model.J[i, j] * np.outer(s, s)))
    return factors


def elimination_order(d: int, edges: np.ndarray, heuristic: str = "min-fill") -> list[int]:
    """Greedy elimination order ("min-fill" or "min-degree") for the graph on d nodes."""
    if heuristic not in ("min-fill", "min-degree"):
        raise ValueError(f"unknown elimination heuristic {heuristic!r}")
    adj = [set() for _ in range(d)]
    for i, j in np.asarray(edges).reshape(-1, 2):
        adj[int(i)].add(int(j))
        adj[int(j)].add(int(i))
    remaining = set(range(d))
    order = []
    while remaining:
        def cost(v):
            nb = adj[v]
            if heuristic == "min-degree":
                return (len(nb), v)
            nbl = list(nb)
            fill = sum(1 for a in range(len(nbl)) for b in range(a + 1, len(nbl))
                       if nbl[b] not in adj[nbl[a]])
            return (fill, len(nb), v)
        v = min(remaining, key=cost)
        nb = list(adj[v])
        for a in nb:
            adj[a].update(u for u in nb if u != a)
            adj[a].discard(v)
        adj[v] = set()
        remaining.remove(v)
        order.append(v)
    return order


def _eliminate(factors: list[_Factor], order: list[int], reduce: str, max_width: int
               ) -> list[_Factor]:
    """Eliminate the variables of ``order``; return the remaining factors (over other vars)."""
    factors = list(factors)
    for v in order:
        touching = [f for f in factors if v in f.vars]
        if not touching:
            continue
        factors = [f for f in factors if v not in f.vars]
        scope = tuple(sorted(set().union(*(f.vars for f in touching))))
        if len(scope) > max_width + 1:
            raise ValueError(
                f"elimination creates a factor over {len(scope)} variables (max_width={max_width});"
                " the graph's treewidth is too large, use enumerate_exact"
            )
        table = sum(_expand(f, scope) for f in touching)
        table = np.broadcast_to(table, (2,) * len(scope))
        axis = scope.index(v)
        if reduce == "logmeanexp":
            # the mean over a binary variable, with the digits kept where the entries are
            # close (at high temperature a log sum exp near log 2, minus log 2, would keep
            # 1e-16 absolute, which the temperature turns into an error above the value)
            new = log_mean_exp(table, axis)
        else:
            new = table.max(axis=axis)
        factors.append(_Factor(scope[:axis] + scope[axis + 1:], np.asarray(new)))
    return factors


def _log_z_ve(model: IsingModel, keep: tuple[int, ...], order_all: list[int], max_width: int
              ) -> np.ndarray:
    """Log marginal table over ``keep`` (sorted), natural scale f / eps, up to a constant: the
    eliminated variables are averaged out (log E_q over them), not summed."""
    factors = _model_factors(model, 1.0 / model.epsilon)
    order = [v for v in order_all if v not in keep]
    rest = _eliminate(factors, order, "logmeanexp", max_width)
    table = np.zeros((2,) * len(keep))
    for f in rest:
        table = table + _expand(f, keep)
    return np.broadcast_to(table, (2,) * len(keep))


def eliminate_exact(model: IsingModel, pairs: str | np.ndarray | None = "edges",
                    heuristic: str = "min-fill", max_width: int = 20) -> ExactResult:
    """Exact Phi_eps (eq. (5)), marginals and pairwise moments by variable elimination.

    Sum-product in log space with a ``heuristic`` elimination order; exact for any graph whose
    induced width under that order is <= ``max_width`` (trees: 1). ``pairs``: "edges" (moments on
    the model's edges), "all", None, or an (m, 2) array of pairs; moments of other pairs are NaN.
    Marginals and moments cost one elimination per node / pair (O(d) each on a tree).
    """
    model = _check_model(model)
    if model.epsilon == 0:
        value, x = max_product(model, heuristic=heuristic, max_width=max_width)
        return ExactResult(value, None, None, None, value, x)
    d, eps = model.d, model.epsilon
    order = elimination_order(d, model.edges(), heuristic)
    # log E_q exp(f / eps) = log Z - d log 2, each variable averaged out as it is eliminated
    log_mean = float(_log_z_ve(model, (), order, max_width))
    log_partition = _finite(eps * log_mean, model)
    means = np.empty(d)
    for i in range(d):
        t = _log_z_ve(model, (i,), order, max_width)
        p = np.exp(t - logsumexp(t))
        means[i] = p[1] - p[0]
    if isinstance(pairs, str) and pairs == "edges":
        pair_list = model.edges()
    elif isinstance(pairs, str) and pairs == "all":
        pair_list = np.stack(np.triu_indices(d, 1), axis=1)
    elif pairs is None:
        pair_list = None
    else:
        pair_list = np.sort(np.asarray(pairs, dtype=np.intp).reshape(-1, 2), axis=1)
    mom = None
    if pair_list is not None:
        mom = np.full((d, d), np.nan)
        np.fill_diagonal(mom, 1.0)
        for i, j in pair_list:
            t = _log_z_ve(model, (int(i), int(j)), order, max_width)
            p = np.exp(t - logsumexp(t))
            mom[i, j] = mom[j, i] = p[0, 0] + p[1, 1] - p[0, 1] - p[1, 0]
    return ExactResult(log_partition, (1 + means) / 2, means, mom, None, None)


def max_product(model: IsingModel, heuristic: str = "min-fill", max_width: int = 20
                ) -> tuple[float, np.ndarray]:
    """max_x f(x) and a maximizer by max-product variable elimination (exact on trees).

    The maximizer is decoded by back-substitution in reverse elimination order.
    """
    model = _check_model(model)
    d = model.d
    order = elimination_order(d, model.edges(), heuristic)
    factors = _model_factors(model, 1.0)
    # forward pass, keeping the factors touched at each step for decoding
    steps = []
    current = list(factors)
    for v in order:
        touching = [f for f in current if v in f.vars]
        current = [f for f in current if v not in f.vars]
        steps.append((v, touching))
        current += _eliminate(touching, [v], "max", max_width)
    value = float(sum(f.table.item() for f in current))
    x = np.zeros(d)
    for v, touching in reversed(steps):
        score = np.zeros(2)
        for f in touching:
            idx = tuple(slice(None) if u == v else (1 if x[u] > 0 else 0) for u in f.vars)
            score = score + f.table[idx]
        x[v] = 1.0 if score[1] >= score[0] else -1.0
    return value, x


def exact(model: IsingModel, moments: bool = True, max_enumeration_d: int = 22) -> ExactResult:
    """Exact quantities by the cheaper route: elimination if the graph has small width, else
    enumeration (d <= ``max_enumeration_d``)."""
    model = _check_model(model)
    order = elimination_order(model.d, model.edges())
    width = _induced_width(model.d, model.edges(), order)
    if width <= 12 and (model.d > 12 or width <= 2):
        res = eliminate_exact(model, pairs="all" if moments else None)
        if model.epsilon > 0:
            value, x = max_product(model)
            res = ExactResult(res.log_partition, res.marginals, res.means, res.moments, value, x)
        return res
    if model.d > max_enumeration_d:
        raise ValueError(
            f"d = {model.d} with induced width {width}: too large for exact computation "
            f"(enumeration limited to d <= {max_enumeration_d})"
        )
    return enumerate_exact(model, moments=moments)


def _induced_width(d: int, edges: np.ndarray, order: list[int]) -> int:
    adj = [set() for _ in range(d)]
    for i, j in np.asarray(edges).reshape(-1, 2):
        adj[int(i)].add(int(j))
        adj[int(j)].add(int(i))
    width = 0
    for v in order:
        nb = list(adj[v])
        width = max(width, len(nb))
        for a in nb:
            adj[a].update(u for u in nb if u != a)
            adj[a].discard(v)
    return width


def log_partition(model: IsingModel) -> float:
    """Exact Phi_eps(f) of eq. (5) (Phi_0 = max f).

    Examples
    --------
    >>> import numpy as np
    >>> from zbound import IsingModel
    >>> from zbound.ising import log_partition
    >>> model = IsingModel(np.zeros(2), np.zeros((2, 2)))
    >>> round(log_partition(model), 6)     # log of the mean of e^f over {-1, 1}^d
    0.0
    """
    return exact(model, moments=False).log_partition
