"""Pairwise CRF on graphs of small treewidth: negative log-likelihood as a loss of the core
contracts, with exact inference on junction trees (:mod:`zbound.structured.graph`).

A sample j is a graph: nodes (rows of X, one graph after another), undirected edges between
its nodes (pairs (u, v) in the graph's own numbering) with optional edge features F_e (K of
them; K = 1 and F_e = 1 by default), and a label per node. With m labels the parameters are
theta = [vec(W), vec(V)]: W (n_features, m) node weights (row-major, as
:class:`~zbound.models.crf.ChainCRFLoss`'s), V (K, m, m) pairwise weights; the scores are

    S_i = x_i^T W,    T_e = sum_k F_ek V_k,    s_j(y) = sum_i S_i[y_i] + sum_e T_e[y_u, y_v],

and the loss is sum_j w_j [log Z_j(theta) - s_j(y_j)] (w the sample weights). On a chain with
edges (t, t + 1) and K = 1 it is exactly the chain CRF's loss, V_0 its transitions.

Chains (edges (0, 1), (1, 2), ... in node order, weight 1, every edge with the same feature
vector f0: the constant feature when there are none) run on the chain CRF's kernels with
transitions sum_k f0_k V_k (:class:`~zbound.models.crf.ChainCRFLoss`, the scaled
forward-backward over position-major chunks); the other graphs on junction trees (one per
graph shape, node count and edge list), all of them passed as one
:class:`~zbound.structured.graph.JunctionForest`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from zbound.bounds.curvature import MatrixFreeCurvature
from zbound.models.base import Majorizer
from zbound.models.crf import ChainCRFLoss
from zbound.models.loss import check_design_magnitude, check_sample_weight
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.structured.graph import JunctionForest, check_edges, junction_trees


def check_edge_features(edge_features, edges, n_edge_features: int | None = None):
    """(K, per-graph (E_j, K) float arrays): one constant feature per edge when None; each
    graph's array dense (sparse ones densified: E_j x K is small), 2-D with E_j rows and the
    same K >= 1 columns in every graph (``n_edge_features`` where the model has one), finite;
    a ValueError or TypeError naming the graph otherwise."""
    if edge_features is None:
        if n_edge_features not in (None, 1):
            raise ValueError(f"X has no edge features, the model {n_edge_features}")
        return 1, [np.ones((e.shape[0], 1)) for e in edges]
    if len(edge_features) != len(edges):
        raise ValueError(f"edge_features must hold one array per graph ({len(edges)}), "
                         f"got {len(edge_features)}")
    feats = []
    for j, f in enumerate(edge_features):
        if sp.issparse(f):
            f = f.toarray()
        try:
            f = np.asarray(f, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"edge_features[{j}] must be a numeric (E, K) array") from None
        if f.ndim != 2:
            raise ValueError(f"edge_features[{j}] must be a 2-D (E, K) array, one row per "
                             f"edge, got shape {f.shape}")
        feats.append(f)
    K = feats[0].shape[1] if n_edge_features is None else int(n_edge_features)
    if K < 1:
        raise ValueError("edge_features need at least one column (K >= 1)")
    for j, (f, e) in enumerate(zip(feats, edges)):
        if f.shape != (e.shape[0], K):
            where = "" if n_edge_features is None else " (the model's K)"
            raise ValueError(f"edge_features[{j}] must be ({e.shape[0]}, {K}){where}, got "
                             f"{f.shape}")
        if not np.all(np.isfinite(f)):
            raise ValueError(f"edge_features[{j}] contains NaN or inf")
    return K, feats


class GraphCRFLoss:
    """Sum over graphs of the pairwise CRF's weighted negative log-likelihood.

    Parameters
    ----------
    X : (n_nodes_total, n_features) dense or CSR, the nodes of all graphs one graph after
        another
    n_nodes : (n_graphs,) nodes per graph
    edges : sequence of (E_j, 2) int arrays, each graph's edges in its own node numbering
    y : (n_nodes_total,) label indices in 0..n_labels-1
    n_labels : m
    edge_features : None (one constant feature per edge) or a sequence of (E_j, K) arrays
    sample_weight : None or (n_graphs,) weights >= 0
    max_treewidth : refuse graphs whose junction tree is wider (ValueError naming the graph)
    heuristic : the elimination order of the junction trees ("min-fill" or "min-degree")
    chain_kernels : run the chains on the chain CRF's kernels (default); False runs every
        graph on its junction tree (the reference the chain kernels are tested against)
    n_jobs : threads of the chain kernels (:class:`~zbound.models.crf.ChainCRFLoss`'s)
    """

    def __init__(self, X, n_nodes, edges, y, n_labels: int, edge_features=None,
                 sample_weight=None, max_treewidth: int | None = 4,
                 heuristic: str = "min-fill", chain_kernels: bool = True, n_jobs=None):
        X, _ = check_design_magnitude(X)
        X = sp.csr_matrix(X, dtype=np.float64)
        n_nodes = np.asarray(n_nodes, dtype=np.int64)
        if n_nodes.ndim != 1 or n_nodes.size == 0 or np.any(n_nodes < 1):
            raise ValueError("n_nodes must be a non-empty 1-d array of node counts >= 1")
        if int(n_nodes.sum()) != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but the graphs have "
                             f"{int(n_nodes.sum())} nodes")
        if len(edges) != n_nodes.size:
            raise ValueError(f"edges must hold one edge list per graph ({n_nodes.size}), "
                             f"got {len(edges)}")
        m = int(n_labels)
        y = np.asarray(y)
        if y.shape != (X.shape[0],) or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"y must hold one integer label per node ({X.shape[0]})")
        if m < 1 or y.min() < 0 or y.max() >= m:
            raise ValueError(f"labels must lie in 0..{m - 1}")
        G = n_nodes.size
        self.sample_weight = check_sample_weight(sample_weight, G)
        self.edges = [check_edges(int(n), e) for n, e in zip(n_nodes, edges)]
        K, feats = check_edge_features(edge_features, self.edges)
        self.X, self.y, self.m, self.K = X, y.astype(np.int64), m, K
        self.n_nodes = n_nodes
        self.max_treewidth, self.heuristic = max_treewidth, heuristic
        self.n_jobs = n_jobs
        self.offsets = np.concatenate([[0], np.cumsum(n_nodes)])
        self.edge_features = feats
        self._given_features = edge_features is not None
        self.n_features = X.shape[1]
        self.n_params = self.n_features * m + K * m * m
        self.n_samples = G
        # chains (edges (0, 1), (1, 2), ... in order, weight 1, every edge with the same
        # feature vector f0) take the chain CRF's kernels, with transitions sum_k f0_k V_k;
        # the other graphs the junction trees
        w = self._weights()
        shaped = [chain_kernels and w[j] == 1.0 and np.array_equal(
            self.edges[j], np.column_stack([np.arange(n - 1), np.arange(1, n)]))
            for j, n in enumerate(n_nodes)]
        f0 = np.ones(1) if edge_features is None else next(
            (feats[j][0] for j in range(G) if shaped[j] and feats[j].shape[0]
             and np.all(feats[j] == feats[j][0])), np.zeros(K))
        is_chain = np.array([shaped[j] and np.all(feats[j] == f0) for j in range(G)],
                            dtype=bool)
        self.chain_feature = f0
        self.chain_graphs = np.flatnonzero(is_chain)
        self._chain = None
        if self.chain_graphs.size:
            rows = np.concatenate([np.arange(self.offsets[j], self.offsets[j + 1])
                                   for j in self.chain_graphs])
            self._chain = ChainCRFLoss(X[rows], n_nodes[self.chain_graphs], self.y[rows], m,
                                       n_jobs=n_jobs)
        self.tree_graphs = np.flatnonzero(~is_chain)
        self.forest = None
        if self.tree_graphs.size:
            self._build_forest(w)
        self.obs = self._observed(np.where(is_chain, 0.0, w))

    def _build_forest(self, w: np.ndarray) -> None:
        """The graphs in ``tree_graphs``: one junction tree per shape, all of them one forest
        over the rows of X_tree (their nodes) and the rows of F_tree (their edges)."""
        tree_list = junction_trees(self.n_nodes, self.edges, self.tree_graphs,
                                   heuristic=self.heuristic, max_treewidth=self.max_treewidth,
                                   n_labels=self.m)
        tn = self.n_nodes[self.tree_graphs]
        te = np.array([self.edges[j].shape[0] for j in self.tree_graphs], dtype=np.int64)
        self.forest = JunctionForest(tree_list, np.concatenate([[0], np.cumsum(tn)[:-1]]),
                                     np.concatenate([[0], np.cumsum(te)[:-1]]))
        rows = np.concatenate([np.arange(self.offsets[j], self.offsets[j + 1])
                               for j in self.tree_graphs])
        self.X_tree = self.X[rows]
        self.F_tree = np.concatenate([self.edge_features[j]
                                      for j in self.tree_graphs]).reshape(-1, self.K)
        self.w_tree = w[self.tree_graphs]
        self.w_tree_nodes = np.repeat(self.w_tree, tn)
        self.w_tree_edges = np.repeat(self.w_tree, te)

    def _observed(self, w: np.ndarray) -> np.ndarray:
        """The observed sufficient statistics [X^T Y, sum_e F_e (x) pair_e], graphs weighted
        by ``w``."""
        m, K, y = self.m, self.K, self.y
        node_w = np.repeat(w, self.n_nodes)
        Y1 = sp.csr_matrix((node_w, (np.arange(y.size), y)), shape=(y.size, m))
        obs_W = np.asarray((self.X.T @ Y1).toarray())
        obs_V = np.zeros((K, m, m))
        for j in np.flatnonzero(w):
            e, f = self.edges[j], self.edge_features[j]
            if e.shape[0]:
                yl = y[self.offsets[j]:self.offsets[j + 1]]
                pair = np.zeros((e.shape[0], m, m))
                pair[np.arange(e.shape[0]), yl[e[:, 0]], yl[e[:, 1]]] = 1.0
                obs_V += w[j] * np.einsum("ek,eab->kab", f, pair)
        return np.concatenate([obs_W.ravel(), obs_V.ravel()])

    def _weights(self) -> np.ndarray:
        return np.ones(self.n_samples) if self.sample_weight is None else self.sample_weight

    def split(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},), got {theta.shape}")
        k = self.n_features * self.m
        return theta[:k].reshape(self.n_features, self.m), theta[k:].reshape(self.K, self.m,
                                                                             self.m)

    def _tree_part(self, theta, grad: bool, bound: bool = False):
        """(value, gradient or None) of the junction-tree graphs (0, None without any); with
        ``bound`` (and ``grad``), the junction-tree bound's state appended, from the same
        pass."""
        if self.forest is None:
            out = 0.0, (np.zeros(self.n_params) if grad else None)
            return (*out, None) if bound else out
        S, T = self._scores(theta)
        if not grad:
            log_z = self.forest.log_partition(S, T)
            return float(self.w_tree @ log_z) - float(theta @ self.obs), None
        log_z, node, edge, *state = self.forest.sum_product(S, T, bound=bound)
        total = float(self.w_tree @ log_z) - float(theta @ self.obs)
        gW = np.asarray(self.X_tree.T @ (node * self.w_tree_nodes[:, None]))
        gV = np.einsum("ek,exy->kxy", self.F_tree * self.w_tree_edges[:, None], edge)
        g = np.concatenate([gW.ravel(), gV.ravel()]) - self.obs
        return (total, g, *state)

    def _pass(self, theta, grad: bool):
        theta = np.asarray(theta, dtype=np.float64)
        self.split(theta)                           # the shape check
        total, g = self._tree_part(theta, grad)
        if self._chain is not None:
            tc = self._to_chain(theta)
            if grad:
                fc, gc = self._chain.value_and_grad(tc)
                return total + fc, g + self._from_chain(gc)
            total += self._chain.value(tc)
        return total, g

    def _chain_is_theta(self) -> bool:
        """Whether the chains' parameters [W, T] are theta itself (K = 1, f0 = 1)."""
        return self.K == 1 and self.chain_feature[0] == 1.0

    def _to_chain(self, theta):
        """The chains' parameters [W, T = sum_k f0_k V_k] at theta."""
        if self._chain_is_theta():
            return theta
        W, V = self.split(theta)
        T = np.einsum("k,kxy->xy", self.chain_feature, V)
        return np.concatenate([W.ravel(), T.ravel()])

    def _from_chain(self, gc):
        """A gradient in the chains' parameters [gW, gT] as one in theta: [gW, f0_k gT]."""
        if self._chain_is_theta():
            return gc
        k = self.n_features * self.m
        gV = self.chain_feature[:, None] * gc[k:][None, :]
        return np.concatenate([gc[:k], gV.ravel()])

    # ----------------------------------------------------------------------- protocol
    def value(self, theta) -> float:
        return self._pass(theta, grad=False)[0]

    def value_and_grad(self, theta):
        return self._pass(theta, grad=True)

    def subset(self, graphs) -> GraphCRFLoss:
        """The loss of the graphs ``graphs`` (a mini-batch), with their weights."""
        graphs = np.asarray(graphs, dtype=np.int64)
        off = self.offsets
        rows = np.concatenate([np.arange(off[j], off[j + 1]) for j in graphs])
        sw = None if self.sample_weight is None else self.sample_weight[graphs]
        return GraphCRFLoss(self.X[rows], self.n_nodes[graphs], [self.edges[j] for j in graphs],
                            self.y[rows], self.m,
                            edge_features=None if not self._given_features
                            else [self.edge_features[j] for j in graphs],
                            sample_weight=sw, max_treewidth=None, heuristic=self.heuristic,
                            n_jobs=self.n_jobs)

    def _scores(self, theta):
        """The node and edge scores (S, T) of the junction-tree graphs at ``theta``."""
        W, V = self.split(theta)
        return np.asarray(self.X_tree @ W), np.einsum("ek,kxy->exy", self.F_tree, V)

    def majorizer(self, theta, order: str = "descending") -> Majorizer:
        """A quadratic upper bound at ``theta`` valid for every step: the chain bound of
        :class:`~zbound.models.crf.ChainCRFLoss` on the chains, and on the other graphs the
        junction-tree bound (Alg. 3, shared rule) as the matrix-free
        :class:`JunctionCurvature` (both visit the largest configuration first; ``order`` is
        ignored)."""
        theta = np.asarray(theta, dtype=np.float64).copy()
        f, g, state = self._tree_part(theta, grad=True, bound=True)
        if self.forest is not None:
            curv = JunctionCurvature(self.forest, state, self.X_tree, self.w_tree_nodes,
                                     self.F_tree, self.w_tree_edges, self.m)
            maj = Majorizer(theta, f, g, curv)
            if self._chain is not None:
                maj = maj + self._chain_majorizer(theta)
            return maj
        return self._chain_majorizer(theta)

    def _chain_majorizer(self, theta) -> Majorizer:
        """The chain bound at theta, in theta's coordinates (C -> A^T C A for the linear map
        A: theta -> [W, sum_k f0_k V_k])."""
        maj = self._chain.majorizer(self._to_chain(theta))
        if self._chain_is_theta():
            return maj
        curv = _ChainMapCurvature(maj.curvature, self)
        return Majorizer(theta, maj.value, self._from_chain(maj.grad), curv)


class _ChainMapCurvature(MatrixFreeCurvature):
    """A^T C A: the chains' curvature C in [W, T] mapped to theta = [W, V] by the map A that
    :meth:`GraphCRFLoss._to_chain` applies."""

    def __init__(self, curvature, loss: GraphCRFLoss):
        self.curvature, self.loss = curvature, loss
        self.shape = (loss.n_params, loss.n_params)

    def matvec(self, v):
        return self.loss._from_chain(self.curvature.matvec(self.loss._to_chain(v)))

    def jacobi_diagonal(self):
        """The chains' Jacobi diagonal mapped: the same on W, f0_k^2 times T's on V_k."""
        d = self.curvature.jacobi_diagonal()
        k = self.loss.n_features * self.loss.m
        dV = self.loss.chain_feature[:, None] ** 2 * d[k:][None, :]
        return np.concatenate([d[:k], dV.ravel()])


class JunctionCurvature(MatrixFreeCurvature):
    """The junction-tree bound's curvature (Alg. 3, shared rule) on the graphs of a
    :class:`~zbound.structured.graph.JunctionForest`, matrix-free.

    A product maps the direction to its node and edge scores (S = X V_W, T = F V_V), runs
    :meth:`~zbound.structured.graph.JunctionForest.bound_product` (two passes over the
    trees) and maps the coefficients back (X^T, F^T), the graphs weighted by their sample
    weights: the cost of about two value-and-gradient evaluations of those graphs.
    """

    def __init__(self, forest, state, X, w_nodes, F, w_edges, m: int):
        self.forest, self.state = forest, state
        self.X, self.F, self.m = X, F, int(m)
        self.w_nodes, self.w_edges = w_nodes, w_edges
        self.n_features, self.K = X.shape[1], F.shape[1]
        p = self.n_features * self.m + self.K * self.m * self.m
        self.shape = (p, p)

    def matvec(self, v):
        v = np.asarray(v, dtype=np.float64)
        k = self.n_features * self.m
        VW = v[:k].reshape(self.n_features, self.m)
        VV = v[k:].reshape(self.K, self.m, self.m)
        S = np.asarray(self.X @ VW)
        T = np.einsum("ek,kxy->exy", self.F, VV)
        node, edge = self.forest.bound_product(self.state, S, T)
        gW = np.asarray(self.X.T @ (node * self.w_nodes[:, None]))
        gV = np.einsum("ek,exy->kxy", self.F * self.w_edges[:, None], edge)
        return np.concatenate([gW.ravel(), gV.ravel()])

    def jacobi_diagonal(self):
        """sum_i w_i x_i^2 / 4 on every label's node weights and sum_e w_e F_e^2 / 4 on every
        label pair's edge weights: each node's and edge's own score variance bound
        (Popoviciu), without the coupling along the graph."""
        X2 = self.X.multiply(self.X) if sp.issparse(self.X) else self.X ** 2
        dW = np.asarray(X2.T @ self.w_nodes).ravel() / 4.0
        dV = (self.F ** 2).T @ self.w_edges / 4.0
        return np.concatenate([np.repeat(dW, self.m), np.repeat(dV, self.m * self.m)])


def weighted_chain_objective(M, lengths, y, n_labels: int, c2: float, sample_weight,
                             n_jobs=None) -> Objective:
    """CRFsuite's chain objective with one weight per sequence, sum_j w_j (-log p(y_j | x_j))
    + c2 ||theta||^2, in the parameter layout of
    :func:`zbound.models.crf.chain_crf_objective` (state weights, then the transitions: one
    edge feature per chain edge (t, t + 1)). The sequences of weight 1 run on the chain
    kernels, the others on their junction trees (width 1)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    edges = [np.column_stack([np.arange(n - 1), np.arange(1, n)]) for n in lengths.tolist()]
    loss = GraphCRFLoss(M, lengths, edges, y, n_labels, sample_weight=sample_weight,
                        max_treewidth=1, n_jobs=n_jobs)
    return Objective(loss, L2Penalty(2.0 * float(c2)))
