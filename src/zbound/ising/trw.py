"""Tree-reweighted belief propagation upper bound (Wainwright, Jaakkola & Willsky 2005).

Beyler & Bach, Suppl. A.2. With natural parameters theta_s(x_s) = h_s x_s / eps and
theta_st(x_s, x_t) = J_st x_s x_t / eps on x in {-1, 1}^d, and edge appearance probabilities rho
in the spanning-tree polytope of the graph G, the TRW bound on A(theta) = log sum_x exp(f(x)/eps) is

    B(theta; rho) = max_{tau in LOCAL(G)} <theta, tau> + sum_s H(tau_s) - sum_st rho_st I_st(tau_st)

(WJW 2005, Thm. 1 / eq. (28)). Its maximizer is the fixed point of the reweighted messages
(WJW 2005, eq. (39)), computed here in log space, all directed edges at once (damped):

    log M_ts(x_s) = logsumexp_{x_t} [ theta_st(x_s, x_t) / rho_st + theta_t(x_t)
                                      + sum_{v in N(t)} rho_vt log M_vt(x_t) - log M_st(x_t) ].

**The reported value is a certificate, valid at any messages.** B evaluated at the beliefs of
unconverged messages is *not* a bound (it is a value of the maximized function at a point that
need not even lie in LOCAL(G)). Instead, write rho = sum_k mu_k 1[T_k] as a convex combination
of spanning trees (stars for the uniform 2/d, the conditional-gradient trees for "optimize", a
column-generation decomposition for an explicit rho) and split theta over the trees using the
current messages M (the tree reparametrization, exact at the fixed point):

    theta^k_s(x_s)    = theta_s(x_s) + sum_{v in N(s)} rho_vs log M_vs(x_s)
                        - sum_{t: st in T_k} log M_ts(x_s),
    theta^k_st        = theta_st / rho_st                    (st in T_k).

Then sum_k mu_k theta^k = theta for *any* M, and by convexity of A

    A(theta) <= D(M) = sum_k mu_k A(theta^k),

each A(theta^k) exact by sum-product on the tree. At the TRW fixed point D = B(theta; rho).
Floating-point residuals of the split are added (A is 1-Lipschitz in the sup norm of each term).
In the paper's convention (eq. (5), uniform base measure, temperature eps) the returned value is

    bound = eps * (D(M) - d log 2)  >=  Phi_eps(f)      (whether or not the messages converged).

Convergence (``converged``) means that D(M) and B at the beliefs agree to ``tol`` (relative, see
:func:`relative_gap`) *and* the beliefs are locally consistent to ``tol``: only then is the
certificate known to be close to the TRW optimum B(theta; rho). rho is optimized by conditional
gradient (Frank-Wolfe) over the spanning-tree polytope, dB/drho_st = -I_st(tau*), whose linear
minimization is a maximum-weight spanning tree with weights I_st (WJW 2005, Sec. VI); or fixed
to the uniform 2/d (complete graph, as in the paper's d >= 10 experiments).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree
from sklearn.exceptions import ConvergenceWarning

from zbound.ising.model import IsingModel, check_scale, relative_gap
from zbound.ising.result import BoundResult
from zbound.solvers.linesearch import armijo_search

_S = np.array([-1.0, 1.0])
_MACH = np.finfo(np.float64).eps


@dataclass(kw_only=True, repr=False)
class TRWResult(BoundResult):
    """TRW output (Phi_eps convention), a :class:`~zbound.ising.result.BoundResult`.

    ``bound``: eps (D(M) - d log 2), the tree-decomposition certificate at the final messages: an
    upper bound on Phi_eps whatever the state of the messages (``certified`` is True unless the
    certificate could not be evaluated). ``converged``: the certificate and the TRW objective at
    the beliefs agree to ``tol`` and the beliefs are locally consistent (for every accepted rho);
    only then is ``bound`` close to the TRW optimum. ``message``: "converged" or "messages did
    not converge in N sweeps (...)". ``primal``: eps (B(tau) - d log 2) at the final beliefs
    (not a bound); ``gap``: relative gap between ``bound`` and ``primal``
    (:func:`relative_gap`). ``marginals``: P(x_i = 1), shape (d,) (``means``: E[x_i] =
    2 P(x_i = 1) - 1); ``pairwise``: edge moments E[x_s x_t], shape (m,) in the order of
    ``edges``; ``rho``: edge appearance probabilities (m,); ``iterations`` (= ``nit``): total
    message-passing sweeps (over all rho steps); ``rho_steps``: conditional-gradient steps taken.
    """

    pairwise: np.ndarray
    edges: np.ndarray
    rho: np.ndarray
    rho_steps: int
    primal: float = float("nan")
    gap: float = float("nan")

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


def _cover_trees(d: int, edges: np.ndarray) -> list[np.ndarray]:
    """Spanning forests (indicators (m,)) that together cover every edge."""
    m = edges.shape[0]
    covered = np.zeros(m, dtype=bool)
    trees = []
    while not covered.all():
        tree = max_weight_spanning_forest(d, edges, np.where(covered, 1.0, 2.0))
        trees.append(tree)
        covered |= tree > 0
    return trees


def spanning_tree_polytope_point(d: int, edges: np.ndarray) -> np.ndarray:
    """A point of the spanning-forest polytope with every edge weight > 0.

    Average of spanning forests built so that each new forest covers a not-yet-covered edge
    (maximum spanning forest with weight 2 on uncovered edges and 1 on covered ones).
    """
    trees = _cover_trees(d, edges)
    if not trees:
        return np.zeros(edges.shape[0])
    return np.mean(trees, axis=0)


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
    index = {(int(i), int(j)): k for k, (i, j) in enumerate(edges.tolist())}
    out = np.zeros(m)
    for i, j in zip(np.minimum(t.row, t.col).tolist(), np.maximum(t.row, t.col).tolist(),
                    strict=True):
        out[index[(i, j)]] = 1.0
    return out


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


# ---------------------------------------------------------------- tree decompositions of rho

class _Decomposition:
    """rho' = sum_k mu_k 1[T_k]: trees (K, m) 0/1, mu (K,) >= 0 summing to 1, and for every tree
    a rooted orientation (parent node and parent edge of each node, depth) for sum-product."""

    def __init__(self, d: int, edges: np.ndarray, trees: np.ndarray, mu: np.ndarray,
                 structure=None):
        keep = mu > 0
        self.trees = np.asarray(trees, dtype=np.float64)[keep]
        mu = np.asarray(mu, dtype=np.float64)[keep]
        self.mu = mu / mu.sum()
        self.d, self.edges = d, edges
        self.rho = self.mu @ self.trees                                        # (m,)
        if structure is None:
            structure = [_root_tree(d, edges, t) for t in self.trees]
        else:
            structure = [s for s, k in zip(structure, keep, strict=True) if k]
        self.structure = structure
        self.parent = np.array([s[0] for s in structure])                     # (K, d)
        self.pedge = np.array([s[1] for s in structure])                      # (K, d)
        self.depth = np.array([s[2] for s in structure])                      # (K, d)
        self.levels = []
        for lev in range(int(self.depth.max()), 0, -1):
            kk, vv = np.nonzero(self.depth == lev)
            self.levels.append((kk, vv, self.parent[kk, vv], self.pedge[kk, vv]))
        self.roots = np.nonzero(self.parent < 0)
        K = self.trees.shape[0]
        tk, te = np.nonzero(self.trees)
        # flat (tree, node) targets of the two messages carried by each tree edge
        self.into_msg = np.r_[te, te + edges.shape[0]]
        self.into_idx = np.r_[tk * d + edges[te, 1], tk * d + edges[te, 0]]
        self.size = K * d
        self.levels = [(kk, vv, kk * d + pp, ee) for kk, vv, pp, ee in self.levels]

    def with_tree(self, tree: np.ndarray, step: float) -> _Decomposition:
        """(1 - step) * self + step * tree."""
        trees = np.vstack([self.trees, tree[None]])
        mu = np.r_[(1 - step) * self.mu, step]
        return _Decomposition(self.d, self.edges, trees, mu,
                              self.structure + [_root_tree(self.d, self.edges, tree)])


def _root_tree(d: int, edges: np.ndarray, tree: np.ndarray):
    """Parent node, parent edge (-1 at roots) and depth of every node of a spanning forest."""
    idx = np.nonzero(tree > 0)[0]
    parent = np.full(d, -1)
    pedge = np.full(d, -1)
    depth = np.zeros(d, dtype=np.int64)
    if len(idx) == 0:
        return parent, pedge, depth
    e = edges[idx]
    g = coo_matrix((idx + 1.0, (e[:, 0], e[:, 1])), shape=(d, d)).tocsr()
    g = (g + g.T).tocsr()
    n_comp, labels = connected_components(g, directed=False)
    for c in range(n_comp):
        root = int(np.nonzero(labels == c)[0][0])
        order, pred = breadth_first_order(g, root, directed=False, return_predecessors=True)
        for v in order[1:]:
            p = pred[v]
            parent[v] = p
            pedge[v] = int(g[v, p]) - 1
            depth[v] = depth[p] + 1
    return parent, pedge, depth


def _star_decomposition(d: int, edges: np.ndarray) -> _Decomposition:
    """Complete graph: the d stars, each with weight 1/d, give rho = 2/d on every edge."""
    m = edges.shape[0]
    index = np.full((d, d), -1)
    index[edges[:, 0], edges[:, 1]] = np.arange(m)
    index[edges[:, 1], edges[:, 0]] = np.arange(m)
    trees = np.zeros((d, m))
    structure = []
    for c in range(d):
        trees[c, index[c][np.arange(d) != c]] = 1.0
        parent = np.full(d, c)
        parent[c] = -1
        pedge = index[c].copy()
        pedge[c] = -1
        depth = np.ones(d, dtype=np.int64)
        depth[c] = 0
        structure.append((parent, pedge, depth))
    return _Decomposition(d, edges, trees, np.full(d, 1.0 / d), structure)


def _decompose(d: int, edges: np.ndarray, rho: np.ndarray, max_trees: int = 400) -> _Decomposition:
    """Column generation: trees from maximum-weight spanning forests of the residual, weights
    by non-negative least squares with sum mu = 1 (heavily weighted row). Exact up to rounding
    once the right trees are found (Caratheodory: at most m + 1 are needed); an inexact rho'
    still gives a valid certificate, only for B(theta; rho') instead of B(theta; rho)."""
    trees = _cover_trees(d, edges)
    if np.allclose(rho, 1.0) and len(trees) == 1:
        return _Decomposition(d, edges, np.array(trees), np.ones(1))
    best = None
    for _ in range(max_trees):
        T = np.array(trees)
        A = np.vstack([T.T, 1e3 * np.ones(len(trees))])
        mu, _ = nnls(A, np.r_[rho, 1e3], maxiter=50 * A.shape[1])
        mu = np.maximum(mu, 0)
        resid = rho - mu @ T
        err = np.abs(resid).max()
        if best is None or err < best[0]:
            best = (err, T.copy(), mu.copy())
        if err < 1e-12:
            break
        tree = max_weight_spanning_forest(d, edges, resid)
        if any(np.array_equal(tree, t) for t in trees):
            break
        trees.append(tree)
    _, T, mu = best
    # every edge must keep positive weight for the split theta_st / rho'_st
    cover = _cover_trees(d, edges)
    if np.any((mu @ T) <= 0):
        T = np.vstack([T, cover])
        mu = np.r_[mu * (1 - 1e-9), np.full(len(cover), 1e-9 / len(cover))]
    return _Decomposition(d, edges, T, mu)


def _tree_log_partition(dec: _Decomposition, node: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Exact log-partition of each tree k with node tables node[k] (d, 2) over x in (-1, +1)
    and pairwise weights w[e] x_s x_t on its edges (sum-product from the leaves up)."""
    acc = node.copy()
    K, d = acc.shape[:2]
    for kk, vv, flat_p, ee in dec.levels:
        a0, a1, we = acc[kk, vv, 0], acc[kk, vv, 1], w[ee]
        m_minus = np.logaddexp(a0 + we, a1 - we)        # parent x_p = -1
        m_plus = np.logaddexp(a0 - we, a1 + we)         # parent x_p = +1
        acc[:, :, 0] += np.bincount(flat_p, m_minus, minlength=K * d).reshape(K, d)
        acc[:, :, 1] += np.bincount(flat_p, m_plus, minlength=K * d).reshape(K, d)
    rk, rv = dec.roots
    out = np.zeros(acc.shape[0])
    np.add.at(out, rk, np.logaddexp(acc[rk, rv, 0], acc[rk, rv, 1]))
    return out


class _TRW:
    """Message passing for one model at fixed rho; holds log messages between calls."""

    def __init__(self, model: IsingModel, edges: np.ndarray):
        eps = model.epsilon
        self.model = model
        self.g = _Graph(model.d, edges)
        self.theta_s = (model.h[:, None] / eps) * _S[None, :]                  # (d, 2)
        self.jst = model.J[edges[:, 0], edges[:, 1]] / eps
        self.theta_st = self.jst[:, None, None] * np.outer(_S, _S)[None]      # (m, 2, 2) [xs, xt]
        self.logm = np.full((2 * self.g.m, 2), -np.log(2.0))                  # message to dst

    def _node_sums(self, rho):
        # a_t(x_t) = theta_t(x_t) + sum_{v in N(t)} rho_vt log M_vt(x_t)
        return self.theta_s + self.g.incidence @ (rho[self.g.und][:, None] * self.logm)

    def certificate(self, dec: _Decomposition) -> float:
        """D(M) = sum_k mu_k A(theta^k) + rounding slack >= A(theta) (module docstring)."""
        g = self.g
        m, d = g.m, g.d
        if m == 0:
            return float(np.sum(np.logaddexp(self.theta_s[:, 0], self.theta_s[:, 1])))
        rho = dec.rho
        base = self._node_sums(rho)                                            # (d, 2)
        K = dec.trees.shape[0]
        node = np.empty((K, d, 2))
        for x in range(2):
            # sum over tree edges of the message arriving at each endpoint
            into = np.bincount(dec.into_idx, self.logm[dec.into_msg, x], minlength=dec.size)
            node[:, :, x] = base[:, x][None, :] - into.reshape(K, d)
        w = self.jst / rho
        logz = _tree_log_partition(dec, node, w)
        value = float(dec.mu @ logz)
        # rounding residuals of the split (A is 1-Lipschitz in each node / edge term)
        r_node = self.theta_s - np.einsum("k,kdx->dx", dec.mu, node)
        r_edge = self.jst - w * (dec.mu @ dec.trees)
        slack = np.abs(r_node).max(axis=1).sum() + np.abs(r_edge).sum()
        slack += 8 * _MACH * (float(dec.mu @ np.abs(logz)) + np.abs(node).max() * d)
        return value + slack

    def run(self, rho, damping, tol, max_iter, dec, check_every=10):
        """Damped parallel updates; every ``check_every`` sweeps, converged when the certificate
        D (an upper bound on B(theta; rho)) and the TRW objective at the beliefs projected onto
        LOCAL(G) (a lower bound on it) agree to ``tol`` (:func:`relative_gap`) and the last sweep
        changed no message, as a probability, by more than ``tol`` (the gap is second order in
        the error of the beliefs; this keeps the marginals accurate too).

        Returns (converged, sweeps, best certificate D, best projected value P, gap)."""
        g = self.g
        eps = self.model.epsilon
        d = g.d
        if g.m == 0:
            D = self.certificate(dec)
            return True, 0, D, D, 0.0
        # pairwise table oriented (x_dst, x_src) for every directed edge src -> dst
        pair = np.concatenate([self.theta_st, self.theta_st.transpose(0, 2, 1)])
        pair = np.swapaxes(pair, 1, 2) / rho[g.und][:, None, None]            # [x_dst, x_src]
        p0, p1 = pair[:, :, 0], pair[:, :, 1]                                  # (2m, 2) over x_dst
        best_D, best_P = np.inf, -np.inf
        shift = d * np.log(2)
        gap = np.inf
        for it in range(1, max_iter + 1):
            a = self._node_sums(rho)
            pre = a[g.src] - self.logm[g.rev]                                 # (2m, 2) over x_src
            new = np.logaddexp(p0 + pre[:, :1], p1 + pre[:, 1:])               # (2m, 2) over x_dst
            new -= np.logaddexp(new[:, :1], new[:, 1:])
            if damping > 0:
                new = (1 - damping) * new + damping * self.logm
                new -= np.logaddexp(new[:, :1], new[:, 1:])
            check = it % check_every == 0 or it == max_iter
            if check:
                step = float(np.max(np.abs(np.exp(new) - np.exp(self.logm))))
            self.logm = new
            if check:
                best_D = min(best_D, self.certificate(dec))
                best_P = max(best_P, self.projected_value(rho))
                gap = relative_gap(eps * (best_D - shift), eps * (best_P - shift), eps)
                if gap <= tol and step <= tol:
                    return True, it, best_D, best_P, gap
        return False, max_iter, best_D, best_P, gap

    def projected_value(self, rho) -> float:
        """B at the beliefs projected onto LOCAL(G): node beliefs kept, each edge belief replaced
        by the table with those marginals and P(1, 1) clipped into the feasible interval. A
        point of LOCAL(G), so its value is a lower bound on B(theta; rho)."""
        log_bs, log_bst = self.beliefs(rho)
        bs = np.exp(log_bs)
        s, t = self.g.edges[:, 0], self.g.edges[:, 1]
        ps, pt = bs[s, 1], bs[t, 1]
        q = np.clip(np.exp(log_bst[:, 1, 1]), np.maximum(0.0, ps + pt - 1), np.minimum(ps, pt))
        tab = np.empty((len(s), 2, 2))
        tab[:, 1, 1] = q
        tab[:, 1, 0] = ps - q
        tab[:, 0, 1] = pt - q
        tab[:, 0, 0] = 1 - ps - pt + q
        tab = np.maximum(tab, 0.0)
        energy = np.sum(bs * self.theta_s) + np.sum(tab * self.theta_st)
        ent_s = -np.sum(np.where(bs > 0, bs * log_bs, 0.0), axis=1)
        log_ind = log_bs[s][:, :, None] + log_bs[t][:, None, :]     # finite: from log space
        pos = tab > 0
        mi = np.sum(np.where(pos, tab * (np.log(np.where(pos, tab, 1.0)) - log_ind), 0.0),
                    axis=(1, 2))
        return float(energy + ent_s.sum() - np.dot(rho, mi))

    def inconsistency(self, bs, bst):
        if self.g.m == 0:
            return 0.0
        s, t = self.g.edges[:, 0], self.g.edges[:, 1]
        return float(max(np.abs(bst.sum(axis=2) - bs[s]).max(),
                         np.abs(bst.sum(axis=1) - bs[t]).max()))

    def beliefs(self, rho):
        g = self.g
        a = self._node_sums(rho)
        log_bs = a - np.logaddexp(a[:, :1], a[:, 1:])                         # (d, 2)
        m = g.m
        s, t = g.edges[:, 0], g.edges[:, 1]
        # edge (s,t): message k: s -> t, message m + k: t -> s
        ps = a[s] - self.logm[m:]            # exclude t -> s, over x_s
        pt = a[t] - self.logm[:m]            # exclude s -> t, over x_t
        log_bst = self.theta_st / rho[:, None, None] + ps[:, :, None] + pt[:, None, :]
        if m:
            rows = np.logaddexp(log_bst[:, :, :1], log_bst[:, :, 1:])
            log_bst -= np.logaddexp(rows[:, :1], rows[:, 1:])
        return log_bs, log_bst

    def value(self, rho):
        """B(theta; rho) at the current beliefs (not a bound), and the mutual informations I_st."""
        log_bs, log_bst = self.beliefs(rho)
        bs, bst = np.exp(log_bs), np.exp(log_bst)
        s, t = self.g.edges[:, 0], self.g.edges[:, 1]
        energy = np.sum(bs * self.theta_s) + np.sum(bst * self.theta_st)
        ent_s = -np.sum(np.where(bs > 0, bs * log_bs, 0.0), axis=1)
        if self.g.m:
            ind = log_bs[s][:, :, None] + log_bs[t][:, None, :]
            mi = np.sum(np.where(bst > 0, bst * (log_bst - ind), 0.0), axis=(1, 2))
        else:
            mi = np.zeros(0)
        return energy + ent_s.sum() - np.dot(rho, mi), mi, bs, bst


#: relative gap of the messages below which rho steps start (their direction is then accurate)
_RHO_START_GAP = 1e-3
#: message sweeps per candidate rho (warm-started from the current messages)
_RHO_INNER_ITER = 1000


def _start_rho(d: int, edges: np.ndarray, rho):
    """The starting edge weights and their spanning-tree decomposition: "uniform" (2/d, the
    complete graph's stars), "optimize" (an average of trees covering every edge) or an
    explicit array; (decomposition or None without edges, rho)."""
    m = edges.shape[0]
    if isinstance(rho, str):
        if rho == "uniform":
            if m != d * (d - 1) // 2:
                raise ValueError("rho='uniform' (2/d) is the spanning-tree point of the complete "
                                 "graph only; the model has missing edges")
            return (_star_decomposition(d, edges) if m else None), np.full(m, 2.0 / d)
        if rho == "optimize":
            if not m:
                return None, np.zeros(0)
            trees = np.array(_cover_trees(d, edges))
            dec = _Decomposition(d, edges, trees, np.full(len(trees), 1.0 / len(trees)))
            return dec, dec.rho
        raise ValueError(f"rho must be 'optimize', 'uniform' or an array, got {rho!r}")
    rho_v = _check_rho(d, edges, rho)
    if not m:
        return None, rho_v
    dec = _decompose(d, edges, rho_v)
    return dec, dec.rho


@dataclass
class _Run:
    """Where TRW stands: the decomposition and weights, whether the messages converged, the
    certificate D, the TRW objective B at the beliefs and their relative gap, the objective's
    value, mutual informations and beliefs at rho, the sweeps so far and the rho steps taken."""

    dec: object
    rho: np.ndarray
    conv: bool
    D: float
    B: float
    gap: float
    value: float
    mi: np.ndarray
    bs: np.ndarray
    bst: np.ndarray
    its: int
    steps: int = 0


def _optimize_rho(solver, run: _Run, d, edges, damping, tol, inner, rho_steps, rho_tol,
                  check_every) -> None:
    """Conditional-gradient steps on rho over the spanning-tree polytope (the linear step a
    maximum-weight spanning tree of the mutual informations), each kept where the certified
    bound decreases (halving, at most 6 trials, messages warm-started); updates ``run``."""
    for k in range(rho_steps):
        tree = max_weight_spanning_forest(d, edges, run.mi)
        # gap of the linearization: <grad, rho - tree> = <mi, tree - rho>
        fw_gap = float(np.dot(run.mi, tree - run.rho))
        if fw_gap <= rho_tol * max(1.0, abs(run.value)):
            return
        saved = solver.logm.copy()
        its = []

        def trial(step, tree=tree, dec=run.dec, saved=saved, its=its):
            c_dec = dec.with_tree(tree, step)
            solver.logm = saved.copy()
            c_conv, c_its, c_D, c_B, c_gap = solver.run(c_dec.rho, damping, tol, inner, c_dec,
                                                        check_every)
            its.append(c_its)
            return c_D, (c_dec, c_conv, c_B, c_gap)

        found = armijo_search(trial, run.D, -1.0, 2.0 / (k + 3), shrink="halve", trials=6,
                              accept=lambda step, c_D, D=run.D: c_D < D)
        run.its += sum(its)
        if found is None:
            solver.logm = saved
            return
        _, run.D, (run.dec, run.conv, run.B, run.gap) = found
        run.rho = run.dec.rho
        run.value, run.mi, run.bs, run.bst = solver.value(run.rho)
        run.steps += 1


def _check_arguments(model, damping, max_iter, check_every) -> None:
    """:func:`trw_bound`'s arguments: a TypeError or ValueError naming the first bad one."""
    if not isinstance(model, IsingModel):
        raise TypeError(f"expected an IsingModel, got {type(model).__name__}")
    if model.epsilon <= 0:
        raise ValueError("TRW needs a positive temperature epsilon (got 0)")
    if not 0 <= damping < 1:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if check_every < 1:
        raise ValueError(f"check_every must be >= 1, got {check_every}")
    check_scale(model, "TRW")


def trw_bound(
    model: IsingModel,
    rho: str | np.ndarray = "optimize",
    damping: float = 0.5,
    tol: float = 1e-6,
    max_iter: int = 10000,
    rho_steps: int = 30,
    rho_tol: float = 1e-7,
    warn: bool = True,
    check_every: int = 10,
) -> TRWResult:
    """TRW upper bound on Phi_eps(f) (eq. (5)), node marginals and edge moments.

    ``rho``: "optimize" (conditional gradient over the spanning-tree polytope, started from a
    point with all weights positive), "uniform" (rho_st = 2/d; needs the complete graph, the
    paper's choice for d >= 10), or an explicit (m,) array in the order of ``model.edges()``.
    ``damping`` in [0, 1): weight of the old log message. ``bound`` is the tree-decomposition
    certificate (module docstring), an upper bound at any messages. Converged: every
    ``check_every`` sweeps, the relative gap between the certificate and the TRW objective at the
    beliefs is below ``tol`` and the beliefs are locally consistent to ``tol``; otherwise after
    ``max_iter`` sweeps a ConvergenceWarning is emitted (if ``warn``) and ``converged`` is False
    (the bound is still certified, but may be far above B(theta; rho)).
    """
    _check_arguments(model, damping, max_iter, check_every)
    start = time.perf_counter()
    d, eps = model.d, model.epsilon
    edges = model.edges()
    m = edges.shape[0]
    dec, rho_v = _start_rho(d, edges, rho)
    solver = _TRW(model, edges)
    conv, its, D, B, gap = solver.run(rho_v, damping, tol, max_iter, dec, check_every)
    run = _Run(dec, rho_v, conv, D, B, gap, *solver.value(rho_v), its)
    # The conditional-gradient steps on rho use the beliefs' mutual informations only as a
    # direction, so they start once the messages are within _RHO_START_GAP of the TRW objective
    # (on dense Gaussian models the gap shrinks like 1 / sweeps and 1e-6 may take 10^5 sweeps);
    # a step is accepted when the certificate D, an upper bound at any messages, decreases.
    if isinstance(rho, str) and rho == "optimize" and m and (conv or gap <= _RHO_START_GAP):
        _optimize_rho(solver, run, d, edges, damping, tol, min(max_iter, _RHO_INNER_ITER),
                      rho_steps, rho_tol, check_every)
    conv, D, B, gap, rho_v = run.conv, run.D, run.B, run.gap, run.rho
    bs, bst, total_its, steps = run.bs, run.bst, run.its, run.steps
    bound = float(eps * (D - d * np.log(2.0)))
    primal = float(eps * (B - d * np.log(2.0)))
    if not np.isfinite(bound):
        raise ValueError(f"TRW bound is not finite ({bound}): parameters / eps overflow float64 "
                         f"(d={d}, eps={eps:.3g})")
    if conv:
        status = "converged"
    else:
        status = (f"messages did not converge in {max_iter} sweeps (certified bound, "
                  f"relative gap {gap:.2e} to the TRW objective at the beliefs)")
    if not conv and warn:
        warnings.warn(
            f"TRW message passing did not converge within {max_iter} iterations "
            f"(d={d}, eps={eps}): the returned bound is the certified tree-decomposition value "
            f"at the current messages, valid but possibly far above the TRW optimum "
            f"(relative gap {gap:.2e}); the marginals are not the TRW fixed point",
            ConvergenceWarning,
            stacklevel=2,
        )
    pair_moments = (bst[:, 0, 0] + bst[:, 1, 1] - bst[:, 0, 1] - bst[:, 1, 0]) if m else np.zeros(0)
    return TRWResult(
        bound=bound,
        marginals=bs[:, 1].copy(),
        pairwise=pair_moments,
        edges=edges,
        rho=rho_v,
        converged=bool(conv),
        nit=int(total_its),
        n_evals=int(total_its),
        method="trw",
        seconds=time.perf_counter() - start,
        rho_steps=steps,
        message=status,
        primal=primal,
        gap=float(gap),
        certified=True,
    )
