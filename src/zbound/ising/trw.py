"""Tree-reweighted belief propagation upper bound (Wainwright, Jaakkola & Willsky 2005).

Beyler & Bach, Suppl. A.2. With natural parameters theta_s(x_s) = h_s x_s / eps and
theta_st(x_s, x_t) = J_st x_s x_t / eps on x in {-1, 1}^d, and edge appearance probabilities rho
in the spanning-tree polytope of the graph G, the TRW bound on A(theta) = log sum_x exp(f(x)/eps) is

    B(theta; rho) = max_{tau in LOCAL(G)} <theta, tau> + sum_s H(tau_s) - sum_st rho_st I_st(tau_st)

(WJW 2005, Thm. 1 / eq. (28)). Its maximizer is the fixed point of the reweighted messages
(WJW 2005, eq. (39)), computed here in log space, all directed edges at once (damped):

    log M_ts(x_s) = logsumexp_{x_t} [ theta_st(x_s, x_t) / rho_st + theta_t(x_t)
                                      + sum_{v in N(t)} rho_vt log M_vt(x_t) - log M_st(x_t) ].

In the paper's convention (eq. (5), uniform base measure, temperature eps) the returned value is

    bound = eps * (B(theta; rho) - d log 2)  >=  Phi_eps(f),

guaranteed only when the messages converged (otherwise B is evaluated at a non-optimal tau and
may fall below the true maximum). rho is optimized by conditional gradient (Frank-Wolfe) over the
spanning-tree polytope, dB/drho_st = -I_st(tau*), whose linear minimization is a maximum-weight
spanning tree with weights I_st (WJW 2005, Sec. VI); or fixed to the uniform 2/d (complete graph,
as in the paper's d >= 10 experiments).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree
from scipy.special import logsumexp

from zbound.ising.model import IsingModel

_S = np.array([-1.0, 1.0])


@dataclass(frozen=True)
class TRWResult:
    """TRW output (Phi_eps convention). ``bound`` is guaranteed >= Phi_eps only if ``converged``.

    ``bound``: eps (B(theta; rho) - d log 2); ``converged``: the messages converged (for every
    accepted rho); ``status``: "converged" or "messages did not converge in N sweeps".
    ``marginals``: P(x_i = 1), shape (d,) (``means``: E[x_i] = 2 P(x_i = 1) - 1);
    ``pairwise``: edge moments E[x_s x_t], shape (m,) in the order of ``edges``; ``rho``: edge
    appearance probabilities (m,); ``iterations``: total message-passing sweeps (over all rho
    steps); ``rho_steps``: conditional-gradient steps taken.
    """

    bound: float
    marginals: np.ndarray
    pairwise: np.ndarray
    edges: np.ndarray
    rho: np.ndarray
    converged: bool
    iterations: int
    rho_steps: int
    status: str = ""

    @property
    def means(self) -> np.ndarray:
        """E[x_i] = 2 P(x_i = 1) - 1."""
        return 2.0 * self.marginals - 1.0


class _Graph:
    """Directed-edge index arrays for vectorized message passing."""

    def __init__(self, d: int, edges: np.ndarray):
        self.d = d
        self.edges = edges
        m = edges.shape[0]
        self.m = m
        # directed edge k < m: s=edges[k,0] -> t=edges[k,1]; k >= m: reverse
        self.src = np.concatenate([edges[:, 0], edges[:, 1]])
        self.dst = np.concatenate([edges[:, 1], edges[:, 0]])
        self.rev = np.concatenate([np.arange(m, 2 * m), np.arange(m)])
        self.und = np.concatenate([np.arange(m), np.arange(m)])
        self.incidence = coo_matrix(
            (np.ones(2 * m), (self.dst, np.arange(2 * m))), shape=(d, 2 * m)).tocsr()


def spanning_tree_polytope_point(d: int, edges: np.ndarray) -> np.ndarray:
    """A point of the spanning-forest polytope with every edge weight > 0.

    Average of spanning forests built so that each new forest covers a not-yet-covered edge
    (maximum spanning forest with weight 2 on uncovered edges and 1 on covered ones).
    """
    m = edges.shape[0]
    covered = np.zeros(m, dtype=bool)
    total = np.zeros(m)
    count = 0
    while not covered.all():
        tree = max_weight_spanning_forest(d, edges, np.where(covered, 1.0, 2.0))
        total += tree
        covered |= tree > 0
        count += 1
    return total / max(count, 1)


def max_weight_spanning_forest(d: int, edges: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Indicator (m,) of a maximum-weight spanning forest of the graph (scipy.sparse.csgraph)."""
    m = edges.shape[0]
    if m == 0:
        return np.zeros(0)
    w = np.asarray(weights, dtype=np.float64)
    # minimum spanning tree of (max - w + 1) > 0; zero entries would read as missing edges
    cost = w.max() - w + 1.0
    g = coo_matrix((cost, (edges[:, 0], edges[:, 1])), shape=(d, d)).tocsr()
    t = minimum_spanning_tree(g).tocoo()
    chosen = set(zip(np.minimum(t.row, t.col).tolist(), np.maximum(t.row, t.col).tolist(),
                     strict=True))
    return np.array([1.0 if (int(i), int(j)) in chosen else 0.0 for i, j in edges])


def _check_rho(d: int, edges: np.ndarray, rho: np.ndarray) -> np.ndarray:
    rho = np.asarray(rho, dtype=np.float64)
    if rho.shape != (edges.shape[0],):
        raise ValueError(f"rho must have one entry per edge, shape ({edges.shape[0]},), "
                         f"got {rho.shape}")
    if np.any(~np.isfinite(rho)) or np.any(rho <= 0) or np.any(rho > 1 + 1e-12):
        raise ValueError("edge appearance probabilities rho must lie in (0, 1]")
    n_comp = connected_components(
        coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(d, d)),
        directed=False)[0] if len(edges) else d
    if abs(rho.sum() - (d - n_comp)) > 1e-6 * max(1, d):
        raise ValueError(
            f"rho must lie in the spanning-tree polytope: its sum must be d - #components = "
            f"{d - n_comp}, got {rho.sum():.6g}"
        )
    return rho


class _TRW:
    """Message passing for one model at fixed rho; holds log messages between calls."""

    def __init__(self, model: IsingModel, edges: np.ndarray):
        eps = model.epsilon
        self.model = model
        self.g = _Graph(model.d, edges)
        self.theta_s = (model.h[:, None] / eps) * _S[None, :]                  # (d, 2)
        jst = model.J[edges[:, 0], edges[:, 1]] / eps
        self.theta_st = jst[:, None, None] * np.outer(_S, _S)[None]           # (m, 2, 2) [xs, xt]
        self.logm = np.full((2 * self.g.m, 2), -np.log(2.0))                  # message to dst

    def _node_sums(self, rho):
        # a_t(x_t) = theta_t(x_t) + sum_{v in N(t)} rho_vt log M_vt(x_t)
        return self.theta_s + self.g.incidence @ (rho[self.g.und][:, None] * self.logm)

    def run(self, rho, damping, tol, max_iter):
        """Damped parallel updates until max |M_new - M_old| < tol (normalized messages).

        The test is on messages as probabilities: log messages of near-deterministic edges can
        drift towards -inf for a long time without changing beliefs or the bound.
        """
        g = self.g
        if g.m == 0:
            return True, 0
        # pairwise table oriented (x_dst, x_src) for every directed edge src -> dst
        pair = np.concatenate([self.theta_st, self.theta_st.transpose(0, 2, 1)])
        pair = np.swapaxes(pair, 1, 2) / rho[g.und][:, None, None]            # [x_dst, x_src]
        p0, p1 = pair[:, :, 0], pair[:, :, 1]                                  # (2m, 2) over x_dst
        old_p = np.exp(self.logm)
        for it in range(1, max_iter + 1):
            a = self._node_sums(rho)
            pre = a[g.src] - self.logm[g.rev]                                 # (2m, 2) over x_src
            new = np.logaddexp(p0 + pre[:, :1], p1 + pre[:, 1:])               # (2m, 2) over x_dst
            new -= np.logaddexp(new[:, :1], new[:, 1:])
            if damping > 0:
                new = (1 - damping) * new + damping * self.logm
                new -= np.logaddexp(new[:, :1], new[:, 1:])
            self.logm = new
            new_p = np.exp(new)
            delta = np.max(np.abs(new_p - old_p))
            old_p = new_p
            if delta < tol:
                return True, it
        return False, max_iter

    def beliefs(self, rho):
        g = self.g
        a = self._node_sums(rho)
        log_bs = a - logsumexp(a, axis=1, keepdims=True)                      # (d, 2)
        m = g.m
        s, t = g.edges[:, 0], g.edges[:, 1]
        # edge (s,t): message k: s -> t, message m + k: t -> s
        ps = a[s] - self.logm[m:]            # exclude t -> s, over x_s
        pt = a[t] - self.logm[:m]            # exclude s -> t, over x_t
        log_bst = self.theta_st / rho[:, None, None] + ps[:, :, None] + pt[:, None, :]
        if m:
            log_bst -= logsumexp(log_bst, axis=(1, 2), keepdims=True)
        return log_bs, log_bst

    def value(self, rho):
        """B(theta; rho) at the current beliefs, and the mutual informations I_st."""
        log_bs, log_bst = self.beliefs(rho)
        bs, bst = np.exp(log_bs), np.exp(log_bst)
        s, t = self.g.edges[:, 0], self.g.edges[:, 1]
        energy = np.sum(bs * self.theta_s) + np.sum(bst * self.theta_st)
        ent_s = -np.sum(bs * log_bs, axis=1)
        if self.g.m:
            ind = log_bs[s][:, :, None] + log_bs[t][:, None, :]
            mi = np.sum(bst * (log_bst - ind), axis=(1, 2))
        else:
            mi = np.zeros(0)
        return energy + ent_s.sum() - np.dot(rho, mi), mi, bs, bst


def trw_bound(
    model: IsingModel,
    rho: str | np.ndarray = "optimize",
    damping: float = 0.5,
    tol: float = 1e-6,
    max_iter: int = 10000,
    rho_steps: int = 30,
    rho_tol: float = 1e-7,
    warn: bool = True,
) -> TRWResult:
    """TRW upper bound on Phi_eps(f) (eq. (5)), node marginals and edge moments.

    ``rho``: "optimize" (conditional gradient over the spanning-tree polytope, started from a
    point with all weights positive), "uniform" (rho_st = 2/d; needs the complete graph, the
    paper's choice for d >= 10), or an explicit (m,) array in the order of ``model.edges()``.
    ``damping`` in [0, 1): weight of the old log message. Messages have converged when the largest
    change of a normalized log message is below ``tol``; if they have not after ``max_iter``
    sweeps a RuntimeWarning is emitted (if ``warn``) and ``converged`` is False.
    """
    if not isinstance(model, IsingModel):
        raise TypeError(f"expected an IsingModel, got {type(model).__name__}")
    if model.epsilon <= 0:
        raise ValueError("TRW needs a positive temperature epsilon (got 0)")
    if not 0 <= damping < 1:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    d, eps = model.d, model.epsilon
    edges = model.edges()
    m = edges.shape[0]
    optimize = isinstance(rho, str) and rho == "optimize"
    if isinstance(rho, str):
        if rho == "uniform":
            if m != d * (d - 1) // 2:
                raise ValueError("rho='uniform' (2/d) is the spanning-tree point of the complete "
                                 "graph only; the model has missing edges")
            rho_v = np.full(m, 2.0 / d)
        elif rho == "optimize":
            rho_v = spanning_tree_polytope_point(d, edges) if m else np.zeros(0)
        else:
            raise ValueError(f"rho must be 'optimize', 'uniform' or an array, got {rho!r}")
    else:
        rho_v = _check_rho(d, edges, rho)

    solver = _TRW(model, edges)
    conv, its = solver.run(rho_v, damping, tol, max_iter)
    total_its = its
    value, mi, bs, bst = solver.value(rho_v)
    steps = 0
    if optimize and m and conv:
        for k in range(rho_steps):
            tree = max_weight_spanning_forest(d, edges, mi)
            direction = tree - rho_v
            # gap of the linearization: <grad, rho - tree> = <mi, tree - rho>
            fw_gap = float(np.dot(mi, direction))
            if fw_gap <= rho_tol * max(1.0, abs(value)):
                break
            saved = solver.logm.copy()
            step = 2.0 / (k + 3)
            accepted = False
            for _ in range(6):
                cand = rho_v + step * direction
                solver.logm = saved.copy()
                c_conv, c_its = solver.run(cand, damping, tol, max_iter)
                total_its += c_its
                if c_conv:
                    c_value, c_mi, c_bs, c_bst = solver.value(cand)
                    if c_value < value:
                        rho_v, value, mi, bs, bst = cand, c_value, c_mi, c_bs, c_bst
                        accepted = True
                        break
                step *= 0.5
            steps += 1
            if not accepted:
                solver.logm = saved
                break
    status = "converged" if conv else f"messages did not converge in {max_iter} sweeps"
    if not conv and warn:
        warnings.warn(
            f"TRW message passing did not converge within {max_iter} iterations "
            f"(d={d}, eps={eps}); the returned value is not guaranteed to be an upper bound",
            RuntimeWarning,
            stacklevel=2,
        )
    pair_moments = (bst[:, 0, 0] + bst[:, 1, 1] - bst[:, 0, 1] - bst[:, 1, 0]) if m else np.zeros(0)
    return TRWResult(
        bound=float(eps * (value - d * np.log(2.0))),
        marginals=bs[:, 1].copy(),
        pairwise=pair_moments,
        edges=edges,
        rho=rho_v,
        converged=bool(conv),
        iterations=int(total_its),
        rho_steps=steps,
        status=status,
    )
