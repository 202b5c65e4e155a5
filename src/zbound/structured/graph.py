"""Exact inference on graphs of small treewidth: junction trees built by elimination, and
sum-product / max-product in log space over them.

Graph. ``n_nodes`` variables, each with the same ``m`` labels, and undirected ``edges`` (an
(E, 2) array of node pairs). A pairwise model scores a labeling y by

    s(y) = sum_i S[i, y_i] + sum_e T[e, y_u(e), y_v(e)],

and log Z = log sum_y exp s(y). Node scores S are (n_nodes, m), edge scores T (E, m, m) with
T[e, a, b] the score of y_u = a, y_v = b for the edge's (u, v) as given.

Junction tree. :func:`junction_tree` eliminates the nodes one at a time by a greedy heuristic
("min-fill": the node whose neighbors need the fewest new edges to become a clique, ties to the
smaller degree; "min-degree": the node of smallest degree), as pgmpy and libDAI do. Each
elimination makes a clique of the node and its current neighbors; the maximal ones, joined by a
maximum spanning tree on the sizes of their intersections (Kruskal), form a tree with the
running-intersection property (a forest when the graph is disconnected). The treewidth is the
largest clique's size less one; a clique holds an m^size table, so ``max_treewidth`` refuses
graphs beyond a budget with a ValueError naming the graph and its treewidth. A tree's cliques
are its edges (and its isolated nodes): min-fill eliminates leaves first, without fill.

Inference. Every node and edge score is assigned to one clique that holds it; a clique's table
is the sum of its scores, with one axis per clique variable (in increasing node order) and a
leading batch axis: graphs of the same shape and different scores are one vectorized pass.
:func:`tree_sum_product` sends messages from the leaves to the roots and back (log-sum-exp, each
clique's maximum shifted out), giving log Z and every node's and edge's marginals;
:func:`tree_max_product` sends max-messages up and reads the highest-scoring labeling back down.
:class:`JunctionForest` runs the junction trees of many graphs as one pass, level by level.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from zbound.bounds.scalar import beta
from zbound.structured.chain import _TINY
from zbound.utils.logspace import log_softmax, logsumexp

HEURISTICS = ("min-fill", "min-degree")
#: the most label combinations the clique tables of one graph may hold (float64 entries:
#: 800 MB), checked before any table is built
MAX_TABLE_ENTRIES = 10 ** 8
#: orders with random tie-breaks tried, after min-fill and min-degree, before a graph of up to
#: RANDOM_TRIES_MAX_NODES nodes is refused for its width
RANDOM_TRIES = 8
RANDOM_TRIES_MAX_NODES = 2000


@dataclass(frozen=True)
class CliqueTree:
    """A junction tree (forest) of a graph: its cliques, their parents, and where each node
    and edge of the graph is scored.

    cliques: tuple of sorted int arrays (node indices). parent: (n_cliques,) parent clique, -1
    at a root (one root per connected component). order: the cliques from the roots down (a
    parent before its children). separators: per clique, the sorted nodes it shares with its
    parent (empty at a root). treewidth: largest clique size - 1. node_clique: (n_nodes,) a
    clique holding each node. edge_clique: (E,) a clique holding both ends of each edge.
    edges: the (E, 2) edges the tree was built for.
    """

    n_nodes: int
    edges: np.ndarray
    cliques: tuple
    parent: np.ndarray
    order: np.ndarray
    separators: tuple
    treewidth: int
    node_clique: np.ndarray
    edge_clique: np.ndarray

    @property
    def n_cliques(self) -> int:
        return len(self.cliques)


def check_edges(n_nodes: int, edges) -> np.ndarray:
    """The edges as an (E, 2) int64 array of distinct node pairs u != v in 0..n_nodes-1; a
    ValueError or TypeError naming the problem otherwise (checked in the given dtype, so an
    id too large for int64 is reported as given)."""
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int | np.integer) or n_nodes < 1:
        raise ValueError(f"n_nodes must be an integer >= 1, got {n_nodes!r}")
    if sp.issparse(edges):
        raise TypeError("edges must be a dense (E, 2) array of node pairs, got a sparse matrix")
    try:
        e = np.asarray(edges if edges is not None else np.empty((0, 2)))
    except (ValueError, TypeError):
        raise ValueError("edges must be an (E, 2) array of node pairs (a ragged sequence "
                         "was given)") from None
    if e.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"edges must be an (E, 2) array of node pairs, got shape {e.shape}")
    if e.dtype.kind not in "iuf":
        raise TypeError(f"edges must hold integer node indices, got dtype {e.dtype}")
    if e.dtype.kind == "f":
        if not np.isfinite(e).all():
            raise ValueError("edges contain NaN or inf; node indices must be integers in "
                             f"0..{n_nodes - 1}")
        if not np.all(e == np.round(e)):
            raise TypeError(f"edges must hold integer node indices, got dtype {e.dtype} with "
                            "fractional values")
    lo, hi = e.min(), e.max()
    if lo < 0 or hi >= n_nodes:
        bad = lo if lo < 0 else hi
        shown = int(bad) if e.dtype.kind in "iu" else float(bad)
        raise ValueError(f"edge endpoints must lie in 0..{n_nodes - 1}, got {shown!r}")
    e = e.astype(np.int64)
    if np.any(e[:, 0] == e[:, 1]):
        i = int(np.flatnonzero(e[:, 0] == e[:, 1])[0])
        raise ValueError(f"edge {i} joins node {int(e[i, 0])} to itself")
    # each undirected pair as one integer: a repeat is two equal neighbours once sorted
    key = np.sort(np.minimum(e[:, 0], e[:, 1]) * n_nodes + np.maximum(e[:, 0], e[:, 1]))
    same = np.flatnonzero(key[1:] == key[:-1])
    if same.size:
        u, v = divmod(int(key[same[0]]), n_nodes)
        raise ValueError(f"edge ({u}, {v}) appears more than once")
    return e


def _adjacency(n_nodes: int, edges: np.ndarray) -> list[set]:
    adj = [set() for _ in range(n_nodes)]
    for u, v in edges.tolist():
        adj[u].add(v)
        adj[v].add(u)
    return adj


def treewidth_lower_bound(n_nodes: int, edges: np.ndarray, stop: int | None = None) -> int:
    """A lower bound on the treewidth: the contraction degeneracy estimate MMD+ with the
    least-c rule (Bodlaender, Koster & Wolle 2006): repeatedly take a node of smallest degree
    (the bound is the largest such degree seen) and contract it into the neighbor sharing
    the fewest neighbors with it; every graph met is a minor, whose treewidth is at most the
    graph's, and a graph's treewidth is at least its minimum degree. Stops once the bound
    reaches ``stop``."""
    return _lower_bound(_adjacency(n_nodes, edges), stop)


def _lower_bound(adj: list[set], stop: int | None) -> int:
    """:func:`treewidth_lower_bound` on adjacency sets (consumed)."""
    n_nodes = len(adj)
    heap = [(len(a), v) for v, a in enumerate(adj)]
    heapq.heapify(heap)
    alive = [True] * n_nodes
    bound, left = 0, n_nodes
    while left > 1 and heap:
        d, v = heapq.heappop(heap)
        if not alive[v] or d != len(adj[v]):
            continue                       # a stale entry
        bound = max(bound, d)
        if stop is not None and bound >= stop:
            break
        alive[v] = False
        left -= 1
        nb = adj[v]
        if not nb:
            continue
        u = min(nb, key=lambda w: (len(adj[w] & nb), len(adj[w]), w))
        for w in nb:
            adj[w].discard(v)
            if w != u:
                adj[w].add(u)
                adj[u].add(w)
        adj[v] = set()
        for w in (*nb, u):
            heapq.heappush(heap, (len(adj[w]), w))
    return bound


def eliminate(adj: list[set], heuristic: str = "min-fill", limit: int | None = None,
              rng=None):
    """Greedy elimination of the graph with adjacency sets ``adj`` (consumed): the node of
    least cost first ("min-fill": fewest fill-in edges, then smallest degree; "min-degree":
    smallest degree), ties to the smaller node index, or to a random order with ``rng``.

    Returns (order, cliques): the nodes in elimination order and, per step, the sorted clique
    of the node and its neighbors at that time (the triangulated graph's elimination
    cliques). With ``limit``, stops as soon as a clique exceeds ``limit`` nodes and returns
    (None, that clique's size)."""
    if heuristic not in HEURISTICS:
        raise ValueError(f"heuristic must be one of {HEURISTICS}, got {heuristic!r}")
    n = len(adj)
    tie = list(range(n)) if rng is None else rng.permutation(n).tolist()

    def cost(v):
        if heuristic == "min-degree":
            return (len(adj[v]), 0, tie[v], v)
        nb = adj[v]
        d = len(nb)
        linked = sum(len(adj[a] & nb) for a in nb)          # each edge among nb twice
        return ((d * (d - 1) - linked) // 2, d, tie[v], v)

    heap = [cost(v) for v in range(n)]
    heapq.heapify(heap)
    current = {k[-1]: k for k in heap}
    eliminated = [False] * n
    order, cliques = [], []
    while heap:
        key = heapq.heappop(heap)
        v = key[-1]
        if eliminated[v] or current[v] != key:
            continue                       # a stale entry: v's cost changed since
        nb = sorted(adj[v])
        if limit is not None and len(nb) + 1 > limit:
            return None, len(nb) + 1
        eliminated[v] = True
        order.append(v)
        cliques.append(np.array(sorted([v, *nb]), dtype=np.int64))
        for i, a in enumerate(nb):         # the neighbors become a clique (fill-in)
            adj[a].discard(v)
            for b in nb[i + 1:]:
                if b not in adj[a]:
                    adj[a].add(b)
                    adj[b].add(a)
        touched = set(nb)
        for a in nb:                       # costs change for the neighbors and theirs
            touched |= adj[a]
        for a in touched:
            if not eliminated[a]:
                current[a] = cost(a)
                heapq.heappush(heap, current[a])
    return order, cliques


def elimination_cliques(n_nodes: int, edges: np.ndarray, heuristic: str = "min-fill"):
    """The maximal cliques of the graph triangulated by greedy elimination (``heuristic``), as
    sorted int arrays in the order they were formed."""
    order, cliques = eliminate(_adjacency(n_nodes, check_edges(n_nodes, edges)), heuristic)
    return [cliques[i] for i in _maximal_steps(order, cliques)[0]]


def _maximal_steps(order, cliques):
    """(kept, rep, top): the elimination steps whose cliques are maximal, in order; for each
    step the kept step whose clique holds its own; for each kept step the last step merged
    into it. A clique that is not maximal lies inside a child's clique of one more node
    (children: the steps whose first-eliminated later neighbor is this step's node)."""
    n = len(order)
    pos = {v: i for i, v in enumerate(order)}
    rep = list(range(n))
    top = list(range(n))
    grown = [None] * n              # per step, a child step whose clique is one node larger
    for i, c in enumerate(cliques):
        up = _parent_step(order, cliques, pos, i)
        if up >= 0 and c.size - 1 == cliques[up].size and grown[up] is None:
            grown[up] = i
    for i in range(n):
        c = grown[i]
        if c is not None:
            r = rep[c]
            rep[i] = r
            top[r] = i
    kept = [i for i in range(n) if rep[i] == i]
    return kept, rep, top


def _parent_step(order, cliques, pos, i):
    """The step whose node is eliminated first among step i's later neighbours (its parent
    in the elimination tree), -1 for none."""
    later = [pos[u] for u in cliques[i].tolist() if u != order[i]]
    return min(later) if later else -1


class TreewidthError(ValueError):
    """A graph refused because its junction tree would be too wide or its clique tables too
    large (a ValueError)."""


def _refuse(label, n_nodes, edges, why):
    raise TreewidthError(f"{label} ({n_nodes} nodes, {edges.shape[0]} edges) {why}")


def _width_limit(max_treewidth, n_labels, max_table_entries) -> tuple[int | None, str]:
    """The largest clique (in nodes) the budgets allow, and which budget binds."""
    limit, why = (None, "") if max_treewidth is None else (int(max_treewidth) + 1, "treewidth")
    if n_labels is not None and n_labels > 1:
        size = int(math.floor(math.log(max_table_entries) / math.log(n_labels) + 1e-12))
        if limit is None or size < limit:
            limit, why = size, "table"
    return limit, why


def _triangulate(n_nodes, edges, heuristic, max_treewidth, n_labels, max_table_entries,
                 label):
    """An elimination within the budgets: ``heuristic`` first, then the other heuristic,
    then (graphs of up to RANDOM_TRIES_MAX_NODES nodes) RANDOM_TRIES orders with random
    tie-breaks; a :class:`TreewidthError` naming the widths reached when none fits."""
    limit, binding = _width_limit(max_treewidth, n_labels, max_table_entries)
    adj = _adjacency(n_nodes, edges)
    if limit is None:
        return eliminate(adj, heuristic)
    low = _lower_bound([set(a) for a in adj], stop=limit)
    if low + 1 > limit:
        _refuse(label, n_nodes, edges, _budget_text(
            f"has treewidth at least {low} (a minor's minimum degree)", low + 1, binding,
            max_treewidth, n_labels, max_table_entries))
    others = [h for h in HEURISTICS if h != heuristic]
    tries = [(heuristic, None)] + [(h, None) for h in others]
    if n_nodes <= RANDOM_TRIES_MAX_NODES:
        tries += [(heuristic, np.random.default_rng(seed)) for seed in range(RANDOM_TRIES)]
    reached = []
    for h, rng in tries:
        order, cliques = eliminate([set(a) for a in adj], h, limit, rng)
        if order is not None:
            return order, cliques
        reached.append(cliques)
    _refuse(label, n_nodes, edges, _budget_text(
        f"has no elimination order of width <= {limit - 1} among the {len(tries)} tried "
        f"({heuristic} reached a clique of {reached[0]} nodes, the best of them "
        f"{min(reached)})", min(reached), binding, max_treewidth, n_labels,
        max_table_entries))


def _budget_text(found, size, binding, max_treewidth, n_labels, max_table_entries) -> str:
    known = n_labels is not None and n_labels > 1
    m = str(int(n_labels)) if known else "m"
    table = f"a clique of {size} nodes holds {m}^{size}"
    if known:
        table += f" = {float(n_labels) ** size:.3g}"
    table += " label combinations"
    if binding == "table":
        return (f"{found}: {table}, above the {max_table_entries:.3g} entries a graph's "
                f"clique tables may hold")
    return f"{found}, above max_treewidth={max_treewidth}: {table}"


def junction_tree(n_nodes: int, edges, heuristic: str = "min-fill",
                  max_treewidth: int | None = None, name: str | None = None,
                  n_labels: int | None = None,
                  max_table_entries: int = MAX_TABLE_ENTRIES) -> CliqueTree:
    """A :class:`CliqueTree` of the graph (``n_nodes`` nodes, ``edges`` node pairs).

    heuristic: "min-fill" or "min-degree" elimination. max_treewidth: refuse a graph with no
    elimination order of at most that width among those tried (``heuristic``, the other
    one, and random tie-breaks on small graphs), or whose treewidth a lower bound
    (:func:`treewidth_lower_bound`) already puts above it;
    n_labels: also refuse a graph whose clique tables (m^size entries each) would hold more
    than ``max_table_entries`` in all. A refusal is a :class:`TreewidthError` (a ValueError)
    naming ``name``, the width found and the table size, raised before any table is built.
    Time and memory grow as n_nodes times the squared clique size.
    """
    edges = check_edges(n_nodes, edges)
    label = "the graph" if name is None else f"graph {name!r}"
    order, cliques = _triangulate(n_nodes, edges, heuristic, max_treewidth, n_labels,
                                  max_table_entries, label)
    kept, rep, top = _maximal_steps(order, cliques)
    index = {step: k for k, step in enumerate(kept)}
    pos = {v: i for i, v in enumerate(order)}
    maximal = [cliques[i] for i in kept]
    width = max(c.size for c in maximal) - 1
    if n_labels is not None:
        total = sum(float(n_labels) ** c.size for c in maximal)
        if total > max_table_entries:
            _refuse(label, n_nodes, edges, _budget_text(
                f"has cliques whose tables hold {total:.3g} label combinations in all",
                width + 1, "table", max_treewidth, n_labels, max_table_entries))
    k = len(kept)
    nbrs = [[] for _ in range(k)]
    for a, step in enumerate(kept):
        up = _parent_step(order, cliques, pos, top[step])
        if up >= 0:
            b = index[rep[up]]
            nbrs[a].append(b)
            nbrs[b].append(a)
    parent = np.full(k, -1, dtype=np.int64)
    tree_order = []
    seen = np.zeros(k, dtype=bool)
    for r in range(k):
        if seen[r]:
            continue
        # root each component at its center (the middle of a longest path): the fewest
        # levels for a pass that runs level by level (JunctionForest)
        far, _ = _bfs(nbrs, r)
        end, up = _bfs(nbrs, far[-1])
        path = [end[-1]]
        while path[-1] != far[-1]:
            path.append(up[path[-1]])
        center = path[len(path) // 2]
        comp, up = _bfs(nbrs, center)
        for c in comp:
            seen[c] = True
            parent[c] = up[c]
        tree_order.extend(comp)
    sets = [set(c.tolist()) for c in maximal]
    separators = tuple(
        np.array(sorted(sets[c] & sets[parent[c]]), dtype=np.int64) if parent[c] >= 0
        else np.empty(0, dtype=np.int64) for c in range(k))
    node_clique = np.array([index[rep[pos[v]]] for v in range(n_nodes)], dtype=np.int64)
    first = np.where(np.array([pos[u] for u in edges[:, 0].tolist()], dtype=np.int64)
                     < np.array([pos[v] for v in edges[:, 1].tolist()], dtype=np.int64),
                     edges[:, 0], edges[:, 1]) if edges.size else np.empty(0, np.int64)
    edge_clique = np.array([index[rep[pos[v]]] for v in first.tolist()], dtype=np.int64)
    return CliqueTree(n_nodes=n_nodes, edges=edges, cliques=tuple(maximal), parent=parent,
                      order=np.array(tree_order, dtype=np.int64), separators=separators,
                      treewidth=int(width), node_clique=node_clique, edge_clique=edge_clique)


def _bfs(nbrs, start):
    """(cliques in breadth-first order from ``start``, parent of each reached: -1 at start)."""
    up = {start: -1}
    queue = [start]
    i = 0
    while i < len(queue):
        c = queue[i]
        i += 1
        for b in nbrs[c]:
            if b not in up:
                up[b] = c
                queue.append(b)
    return queue, up


def junction_trees(n_nodes, edges, indices=None, heuristic: str = "min-fill",
                   max_treewidth: int | None = None, n_labels: int | None = None,
                   max_table_entries: int = MAX_TABLE_ENTRIES) -> list:
    """One :class:`CliqueTree` per graph (``n_nodes[j]`` nodes, ``edges[j]`` node pairs) for
    the graphs ``indices`` (default all), built once per shape (node count and edge list)
    and shared by the graphs of that shape; a graph beyond the budgets of
    :func:`junction_tree` is refused naming it ("sample j")."""
    trees: dict = {}
    out = []
    for j in range(len(edges)) if indices is None else indices:
        n = int(n_nodes[j])
        e = check_edges(n, edges[j])
        key = (n, e.tobytes())
        if key not in trees:
            trees[key] = junction_tree(n, e, heuristic=heuristic, max_treewidth=max_treewidth,
                                       name=f"sample {j}", n_labels=n_labels,
                                       max_table_entries=max_table_entries)
        out.append(trees[key])
    return out


# --------------------------------------------------------------------------- clique tables
def _check_scores(tree: CliqueTree, node_scores, edge_scores):
    """(S, T, batched): S (B, n, m), T (B, E, m, m) float64, finite."""
    S = np.asarray(node_scores, dtype=np.float64)
    batched = S.ndim == 3
    if S.ndim == 2:
        S = S[None]
    if S.ndim != 3 or S.shape[1] != tree.n_nodes or S.shape[2] < 1:
        raise ValueError(f"node_scores must be (n_nodes, m) = ({tree.n_nodes}, m) or "
                         f"(batch, n_nodes, m), got shape {np.shape(node_scores)}")
    B, _, m = S.shape
    E = tree.edges.shape[0]
    T = np.asarray(edge_scores if edge_scores is not None else np.zeros((E, m, m)),
                   dtype=np.float64)
    if T.ndim == 3:
        T = T[None]
    if T.shape not in ((B, E, m, m), (1, E, m, m)):
        raise ValueError(f"edge_scores must be (E, m, m) = ({E}, {m}, {m})"
                         + (f" or ({B}, {E}, {m}, {m})" if batched else "")
                         + f", got shape {np.shape(edge_scores)}")
    if not (np.all(np.isfinite(S)) and np.all(np.isfinite(T))):
        raise ValueError("node_scores and edge_scores must be finite (no NaN or inf)")
    return S, np.broadcast_to(T, (B, E, m, m)), batched


def _place(values: np.ndarray, axes, k: int) -> np.ndarray:
    """(B, m, ..) values over the clique axes ``axes`` (increasing) as a (B, ...) array that
    broadcasts against (B, m, ..., m) tables of k axes."""
    shape = [values.shape[0]] + [1] * k
    for a, size in zip(axes, values.shape[1:]):
        shape[1 + a] = size
    return values.reshape(shape)


def _expand(table, table_vars, clique: np.ndarray):
    """``table`` (B, m, ...) over the sorted ``table_vars`` as a broadcastable array over the
    (sorted) ``clique``'s axes."""
    return _place(table, np.searchsorted(clique, table_vars), clique.size)


def clique_tables(tree: CliqueTree, S: np.ndarray, T: np.ndarray) -> list:
    """Per clique, the (B, m, ..., m) sum of the node and edge scores assigned to it."""
    B, _, m = S.shape
    tables = [np.zeros((B,) + (m,) * c.size) for c in tree.cliques]
    for i in range(tree.n_nodes):
        c = tree.node_clique[i]
        tables[c] += _expand(S[:, i], [i], tree.cliques[c])
    for e, (u, v) in enumerate(tree.edges):
        c = tree.edge_clique[e]
        Te = T[:, e] if u < v else np.swapaxes(T[:, e], 1, 2)
        tables[c] += _expand(Te, sorted((int(u), int(v))), tree.cliques[c])
    return tables


def _normalized(lp: np.ndarray) -> np.ndarray:
    """exp(lp) normalized over every axis but the leading batch axis."""
    return log_softmax(lp, axis=tuple(range(1, lp.ndim)))[1]


def _other_axes(clique, keep) -> tuple:
    keep = set(np.asarray(keep).tolist())
    return tuple(1 + i for i, v in enumerate(clique.tolist()) if v not in keep)


@dataclass
class GraphMarginals:
    """Outcome of :func:`tree_sum_product`: log_z (B,) (a float without a batch axis),
    node (B, n, m) and edge (B, E, m, m) marginals (no batch axis when the scores had none)."""

    log_z: np.ndarray | float
    node: np.ndarray
    edge: np.ndarray


def tree_sum_product(tree: CliqueTree, node_scores, edge_scores=None) -> GraphMarginals:
    """log Z and the node and edge marginals of the pairwise model on ``tree``'s graph, exact,
    by log-space sum-product on the junction tree (scores as in the module docstring)."""
    S, T, batched = _check_scores(tree, node_scores, edge_scores)
    tables = clique_tables(tree, S, T)
    cl, sep, parent = tree.cliques, tree.separators, tree.parent
    up = [None] * tree.n_cliques             # message to the parent, over the separator
    belief = [t.copy() for t in tables]
    for c in tree.order[::-1]:               # leaves first
        p = parent[c]
        if p >= 0:
            up[c] = logsumexp(belief[c], _other_axes(cl[c], sep[c]))
            belief[p] = belief[p] + _expand(up[c], sep[c], cl[p])
    roots = np.flatnonzero(parent < 0)
    log_z = sum(logsumexp(belief[r], tuple(range(1, cl[r].size + 1))) for r in roots)
    # after the upward pass a root's belief is final; send the rest down
    for c in tree.order:
        p = parent[c]
        if p >= 0:
            down = logsumexp(belief[p], _other_axes(cl[p], sep[c])) - up[c]
            belief[c] = belief[c] + _expand(down, sep[c], cl[c])
    # each clique's belief is now log Z_component + log P(clique variables): a marginal is
    # normalized by its own sum, not by subtracting log Z (at scores of 1e16 the difference
    # of two such logs keeps no digit)
    B, n, m = S.shape
    node = np.empty((B, n, m))
    for i in range(n):
        c = tree.node_clique[i]
        node[:, i] = _normalized(logsumexp(belief[c], _other_axes(cl[c], [i])))
    E = tree.edges.shape[0]
    edge = np.empty((B, E, m, m))
    for e, (u, v) in enumerate(tree.edges):
        c = tree.edge_clique[e]
        pe = _normalized(logsumexp(belief[c], _other_axes(cl[c], [u, v])))
        edge[:, e] = pe if u < v else np.swapaxes(pe, 1, 2)
    if not batched:
        return GraphMarginals(float(log_z[0]), node[0], edge[0])
    return GraphMarginals(log_z, node, edge)


def tree_max_product(tree: CliqueTree, node_scores, edge_scores=None):
    """(labels, score): the highest-scoring labeling (n,) (or (B, n)) of the pairwise model and
    its score, exact, by max-product on the junction tree; ties go to the smallest label index
    in C order over each clique's variables."""
    S, T, batched = _check_scores(tree, node_scores, edge_scores)
    tables = clique_tables(tree, S, T)
    cl, sep, parent = tree.cliques, tree.separators, tree.parent
    B, n, m = S.shape
    belief = [t.copy() for t in tables]
    for c in tree.order[::-1]:
        p = parent[c]
        if p >= 0:
            msg = np.max(belief[c], axis=_other_axes(cl[c], sep[c])) \
                if _other_axes(cl[c], sep[c]) else belief[c]
            belief[p] = belief[p] + _expand(msg, sep[c], cl[p])
    labels = np.full((B, n), -1, dtype=np.int64)
    score = np.zeros(B)
    rows = np.arange(B)
    for c in tree.order:                     # parents first: the separator is already set
        nodes = cl[c].tolist()
        if parent[c] >= 0:
            # the separator's labels are fixed: maximize over the clique's other variables
            fixed = set(sep[c].tolist())
            index = (rows, *(labels[:, v] if v in fixed else slice(None) for v in nodes))
            free = [v for v in nodes if v not in fixed]
            sub = belief[c][index]           # (B, m, ..., m) over the free variables
        else:
            free, sub = nodes, belief[c]
        flat = sub.reshape(B, -1)
        best = np.argmax(flat, axis=1)
        if parent[c] < 0:
            score += flat[rows, best]
        if free:
            for v, lab in zip(free, np.unravel_index(best, (m,) * len(free))):
                labels[:, v] = lab
    if not batched:
        return labels[0], float(score[0])
    return labels, score


# --------------------------------------------------------------------------- many graphs
def _tree_layout(tree: CliqueTree):
    """One tree's part of :func:`_collect_cliques`, in its own numbering: clique sizes,
    parents (-1 at a root), separator axes in each clique and in its parent, and (clique,
    axis, node) and (clique, axis of u, axis of v, edge) arrays."""
    cl = tree.cliques
    sizes = np.array([c.size for c in cl], dtype=np.int64)
    parent = np.asarray(tree.parent, dtype=np.int64)
    sep_child, sep_parent = [], []
    for c in range(tree.n_cliques):
        if parent[c] >= 0:
            s = tree.separators[c]
            sep_child.append(tuple(int(a) for a in np.searchsorted(cl[c], s)))
            sep_parent.append(tuple(int(a) for a in np.searchsorted(cl[parent[c]], s)))
        else:
            sep_child.append(())
            sep_parent.append(())
    node_at = np.array([(tree.node_clique[i], int(np.searchsorted(cl[tree.node_clique[i]], i)),
                         i) for i in range(tree.n_nodes)], dtype=np.int64).reshape(-1, 3)
    edge_at = np.array([(tree.edge_clique[e],
                         int(np.searchsorted(cl[tree.edge_clique[e]], u)),
                         int(np.searchsorted(cl[tree.edge_clique[e]], v)), e)
                        for e, (u, v) in enumerate(tree.edges)],
                       dtype=np.int64).reshape(-1, 4)
    return sizes, parent, sep_child, sep_parent, node_at, edge_at


def _collect_cliques(trees, node_offsets, edge_offsets):
    """Every clique of every tree, numbered in one sequence: sizes, graphs, parents (-1 at a
    root), separator axes in the clique and in its parent, and where each node and edge is
    scored: (clique, axis, node row) and (clique, axis of u, axis of v, edge row). A tree
    shared by several graphs (one per shape, :func:`junction_trees`) is laid out once."""
    node_offsets = np.asarray(node_offsets, dtype=np.int64)
    edge_offsets = np.asarray(edge_offsets, dtype=np.int64)
    layouts: dict = {}
    sizes, graph_of, parent, node_at, edge_at = [], [], [], [], []
    sep_child, sep_parent = [], []
    base = 0
    for j, tree in enumerate(trees):
        lay = layouts.get(id(tree))
        if lay is None:
            lay = layouts[id(tree)] = _tree_layout(tree)
        t_sizes, t_parent, t_sc, t_sp, t_node, t_edge = lay
        sizes.append(t_sizes)
        graph_of.append(np.full(t_sizes.size, j, dtype=np.int64))
        parent.append(np.where(t_parent >= 0, t_parent + base, -1))
        sep_child += t_sc
        sep_parent += t_sp
        node_at.append(t_node + np.array([base, 0, node_offsets[j]]))
        edge_at.append(t_edge + np.array([base, 0, 0, edge_offsets[j]]))
        base += t_sizes.size
    cat = lambda parts, w: np.concatenate(parts) if parts else np.empty((0, w), np.int64)  # noqa: E731
    return (np.concatenate(sizes) if sizes else np.empty(0, np.int64),
            np.concatenate(graph_of) if graph_of else np.empty(0, np.int64),
            np.concatenate(parent) if parent else np.empty(0, np.int64),
            sep_child, sep_parent, cat(node_at, 3), cat(edge_at, 4))


def _separator_major(tables: np.ndarray, sep: tuple, m: int):
    """(n, m^s, m^(k-s)) view of (n, m, ..., m) clique tables with the separator axes ``sep``
    first, and what :func:`_clique_major` needs to undo it."""
    k = tables.ndim - 1
    perm = (0, *(1 + a for a in sep), *(1 + a for a in range(k) if a not in sep))
    out = np.transpose(tables, perm).reshape(tables.shape[0], m ** len(sep), -1)
    return out, np.transpose(tables, perm).shape, perm


def _clique_major(values: np.ndarray, shape, perm) -> np.ndarray:
    """The inverse of :func:`_separator_major`: (n, m^s, m^(k-s)) back to clique axes."""
    return np.transpose(values.reshape(shape), np.argsort(perm))


@dataclass
class JunctionBoundState:
    """What :meth:`JunctionForest.bound_product` needs of an expansion point: log Z per graph,
    per clique size the conditional probability tables P(v | u) (clique axes), and per Alg. 1
    group (clique size and separator position) the rows, layout, visiting order, weights
    alpha / max alpha in that order, 1 / z_{i-1} (0 at the first) and beta_i."""

    log_z: np.ndarray
    prob: dict
    groups: list
    m: int


class JunctionForest:
    """The junction trees of many graphs as one schedule: every clique of every graph in one
    table per clique size, messages passed level by level (all cliques of one height at once,
    grouped by clique size and separator position), so that a pass costs a number of NumPy
    calls set by the trees' height, not by the number of graphs. Sum-product runs in linear
    space, each table and message rescaled (:meth:`_upward_scaled`), and in log space where
    that would underflow.

    Parameters
    ----------
    trees : one :class:`CliqueTree` per graph (the same object may serve several graphs)
    node_offsets : (n_graphs,) the row of each graph's node 0 in the node scores
    edge_offsets : (n_graphs,) the row of each graph's edge 0 in the edge scores
    """

    def __init__(self, trees, node_offsets, edge_offsets):
        self.n_graphs = len(trees)
        (sizes, graph_of, parent, sep_child, sep_parent, node_at,
         edge_at) = _collect_cliques(trees, node_offsets, edge_offsets)
        n = len(sizes)
        self.sizes = np.array(sizes, dtype=np.int64)
        self.parent = np.array(parent, dtype=np.int64)
        self.graph_of = np.array(graph_of, dtype=np.int64)
        # row of each clique in the table of its size
        self.row = np.empty(n, dtype=np.int64)
        self.count = {}
        for k in np.unique(self.sizes):
            idx = np.flatnonzero(self.sizes == k)
            self.row[idx] = np.arange(idx.size)
            self.count[int(k)] = idx.size
        # heights (children before parents) and depths (parents before children)
        height = np.zeros(n, dtype=np.int64)
        order = self._topological(n)
        for c in order[::-1]:
            p = self.parent[c]
            if p >= 0:
                height[p] = max(height[p], height[c] + 1)
        depth = np.zeros(n, dtype=np.int64)
        for c in order:
            p = self.parent[c]
            if p >= 0:
                depth[c] = depth[p] + 1
        self.roots = np.flatnonzero(self.parent < 0)
        self.members = self._members(trees, node_offsets)
        # message slots: one per non-root clique, in a table per separator size
        self.up_row = np.full(n, -1, dtype=np.int64)
        sep_size = np.array([len(s) for s in sep_child], dtype=np.int64)
        self.up_count = {}
        for s in np.unique(sep_size[self.parent >= 0]):
            idx = np.flatnonzero((self.parent >= 0) & (sep_size == s))
            self.up_row[idx] = np.arange(idx.size)
            self.up_count[int(s)] = idx.size

        def groups(cliques, key):
            out: dict = {}
            for c in cliques:
                out.setdefault(key(c), []).append(c)
            return [(k, np.array(v, dtype=np.int64)) for k, v in out.items()]

        nonroot = np.flatnonzero(self.parent >= 0)
        link = lambda c: (int(self.sizes[c]), sep_child[c], int(self.sizes[self.parent[c]]),  # noqa: E731
                          sep_parent[c])
        def distinct_parents(level):
            """The groups split so that no two cliques of one group share a parent (their
            messages are then added with one fancy-indexed +=, not np.add.at)."""
            out = []
            for key, cliques in level:
                seen: dict = {}
                rounds: dict = {}
                for c in cliques.tolist():
                    r = seen.get(int(self.parent[c]), 0)
                    seen[int(self.parent[c])] = r + 1
                    rounds.setdefault(r, []).append(c)
                out += [(key, np.array(v, dtype=np.int64)) for v in rounds.values()]
            return out

        self.up_levels = [distinct_parents(groups(nonroot[height[nonroot] == h], link))
                          for h in range(int(height.max()) + 1 if n else 0)]
        self.down_levels = [groups(nonroot[depth[nonroot] == d], link)
                            for d in range(1, int(depth.max()) + 1 if n else 1)]
        # Alg. 1 groups of the bound: the cliques of one size and separator position
        self.bound_groups = groups(np.arange(n), lambda c: (int(self.sizes[c]), sep_child[c]))
        self.node_groups = []
        node_key = np.column_stack([self.sizes[node_at[:, 0]], node_at[:, 1]])
        for k, a in np.unique(node_key, axis=0).tolist():
            sel = (node_key[:, 0] == k) & (node_key[:, 1] == a)
            self.node_groups.append((k, a, node_at[sel, 0], node_at[sel, 2]))
        self.edge_groups = []
        edge_key = np.column_stack([self.sizes[edge_at[:, 0]], edge_at[:, 1], edge_at[:, 2]])
        for k, au, av in np.unique(edge_key, axis=0).tolist():
            sel = (edge_key[:, 0] == k) & (edge_key[:, 1] == au) & (edge_key[:, 2] == av)
            self.edge_groups.append((k, au, av, edge_at[sel, 0], edge_at[sel, 3]))

    def _members(self, trees, node_offsets) -> dict:
        """Per clique size, each clique's variables as rows of the node scores (decoding a
        MAP labeling sets them)."""
        offsets = np.asarray(node_offsets, dtype=np.int64)
        members = {k: np.empty((cnt, k), dtype=np.int64) for k, cnt in self.count.items()}
        g = 0
        for j, tree in enumerate(trees):
            for clique in tree.cliques:
                members[clique.size][self.row[g]] = offsets[j] + clique
                g += 1
        return members

    def _topological(self, n):
        """Cliques with every parent before its children."""
        children = [[] for _ in range(n)]
        for c in range(n):
            if self.parent[c] >= 0:
                children[self.parent[c]].append(c)
        order = []
        stack = list(np.flatnonzero(self.parent < 0)[::-1])
        while stack:
            c = stack.pop()
            order.append(c)
            stack.extend(children[c][::-1])
        return np.array(order, dtype=np.int64)

    def _tables(self, S: np.ndarray, T: np.ndarray) -> dict:
        """Per clique size k, the (n_cliques_k, m, ..., m) sums of the node scores S (n_rows,
        m) and edge scores T (n_edges, m, m) assigned to each clique."""
        m = S.shape[1]
        tab = {k: np.zeros((cnt,) + (m,) * k) for k, cnt in self.count.items()}
        for k, a, cliques, rows in self.node_groups:
            tab[k][self.row[cliques]] += _place(S[rows], (a,), k)
        for k, au, av, cliques, rows in self.edge_groups:
            Te = T[rows] if au < av else np.swapaxes(T[rows], 1, 2)
            tab[k][self.row[cliques]] += _place(Te, (min(au, av), max(au, av)), k)
        return tab

    def _upward(self, S: np.ndarray, T: np.ndarray):
        """(tab, up, log_z): the clique tables after the log-space upward pass (each clique's
        scores plus its children's messages), the messages (per separator size, over the
        separator) and log Z per graph."""
        m = S.shape[1]
        tab = self._tables(S, T)
        up = {s: np.empty((cnt,) + (m,) * s) for s, cnt in self.up_count.items()}
        for level in self.up_levels:
            for (k, sc, kp, sp_), cliques in level:
                other = tuple(1 + a for a in range(k) if a not in sc)
                msg = logsumexp(tab[k][self.row[cliques]], other)
                up[len(sc)][self.up_row[cliques]] = msg
                tab[kp][self.row[self.parent[cliques]]] += _place(msg, sp_, kp)
        comp = np.empty(self.sizes.size)
        for k in self.count:
            rts = self.roots[self.sizes[self.roots] == k]
            comp[rts] = logsumexp(tab[k][self.row[rts]], tuple(range(1, k + 1)))
        log_z = np.bincount(self.graph_of[self.roots], weights=comp[self.roots],
                            minlength=self.n_graphs)
        return tab, up, log_z

    def _upward_scaled(self, S: np.ndarray, T: np.ndarray):
        """(phi, up, log_z) by the upward pass in linear space, or None where it would lose
        digits. phi: per clique, exp(its scores - their maximum) times its children's
        messages, each message divided by its largest entry (kept in ``up``: the largest
        entry 1) and the logarithms of the shifts and divisors summed per clique on the
        side; one exp per table entry, and products and sums instead of log-sum-exps. Every
        factor of a phi entry is at most 1, so where every entry of every phi exceeds
        ``_TINY`` no product or sum underflowed and the pass is exact to rounding (as the
        chain CRF's scaled recursion); otherwise None, and :meth:`_upward` runs in log
        space."""
        m = S.shape[1]
        phi = self._tables(S, T)
        scale = {}
        with np.errstate(under="ignore"):
            for k, t in phi.items():
                top = np.max(t, axis=tuple(range(1, k + 1)))
                scale[k] = top
                t -= top.reshape((-1,) + (1,) * k)
                np.exp(t, out=t)
        up = {s: np.empty((cnt,) + (m,) * s) for s, cnt in self.up_count.items()}
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            for level in self.up_levels:
                for (k, sc, kp, sp_), cliques in level:
                    other = tuple(1 + a for a in range(k) if a not in sc)
                    rows = self.row[cliques]
                    msg = np.sum(phi[k][rows], axis=other) if other else phi[k][rows]
                    top = np.max(msg.reshape(msg.shape[0], -1), axis=1)
                    msg = msg / top.reshape((-1,) + (1,) * len(sc))
                    up[len(sc)][self.up_row[cliques]] = msg
                    prow = self.row[self.parent[cliques]]
                    phi[kp][prow] *= _place(msg, sp_, kp)
                    scale[kp][prow] += scale[k][rows] + np.log(top)
            for t in phi.values():
                if not np.min(t) > _TINY:           # NaN or an underflow
                    return None
            comp = np.empty(self.sizes.size)
            for k in self.count:
                rts = self.roots[self.sizes[self.roots] == k]
                total = np.sum(phi[k][self.row[rts]], axis=tuple(range(1, k + 1)))
                comp[rts] = scale[k][self.row[rts]] + np.log(total)
        log_z = np.bincount(self.graph_of[self.roots], weights=comp[self.roots],
                            minlength=self.n_graphs)
        return phi, up, log_z

    def log_partition(self, S: np.ndarray, T: np.ndarray) -> np.ndarray:
        """log Z per graph (n_graphs,): the upward pass of :meth:`sum_product` alone."""
        out = self._upward_scaled(S, T)
        return (out if out is not None else self._upward(S, T))[2]

    def sum_product(self, S: np.ndarray, T: np.ndarray, bound: bool = False):
        """(log_z, node, edge): log Z per graph (n_graphs,), node marginals (rows of S, m:
        zero on rows no graph uses) and edge marginals (rows of T, m, m), exact, for node
        scores S (n_rows, m) and edge scores T (n_edges, m, m). With ``bound``, the
        junction-tree bound's state (:meth:`bound_state`) is appended, from the same upward
        pass."""
        out = self._upward_scaled(S, T)
        if out is not None:
            return self._downward_scaled(*out, S, T, bound)
        tab, up, log_z = self._upward(S, T)
        state = self._bound_state(tab, log_z, S.shape[1]) if bound else None
        for level in self.down_levels:
            for (k, sc, kp, sp_), cliques in level:
                other = tuple(1 + a for a in range(kp) if a not in sp_)
                down = (logsumexp(tab[kp][self.row[self.parent[cliques]]], other)
                        - up[len(sc)][self.up_row[cliques]])
                tab[k][self.row[cliques]] += _place(down, sc, k)
        # each clique's belief as probabilities, normalized by its own sum (see
        # tree_sum_product): one exp per entry, then the marginals are sums
        for k, t in tab.items():
            axes = tuple(range(1, k + 1))
            t -= np.max(t, axis=axes, keepdims=True)
            np.exp(t, out=t)
            t /= np.sum(t, axis=axes, keepdims=True)
        node, edge = self._row_sums(tab, S.shape, T.shape)
        return (log_z, node, edge, state) if bound else (log_z, node, edge)

    def _downward_scaled(self, phi, up, log_z, S, T, bound):
        """:meth:`sum_product` after :meth:`_upward_scaled`: each root's phi normalized to its
        clique's distribution; then, parents before children, a child's distribution is its
        phi times (the parent's marginal on the separator / the child's own message),
        normalized. No exp; the divisors, messages, exceed ``_TINY``."""
        state = self._bound_state(phi, log_z, S.shape[1], linear=True) if bound else None
        for k in self.count:
            rows = self.row[self.roots[self.sizes[self.roots] == k]]
            axes = tuple(range(1, k + 1))
            phi[k][rows] /= np.sum(phi[k][rows], axis=axes, keepdims=True)
        with np.errstate(under="ignore"):
            for level in self.down_levels:
                for (k, sc, kp, sp_), cliques in level:
                    other = tuple(1 + a for a in range(kp) if a not in sp_)
                    rows = self.row[cliques]
                    sep = np.sum(phi[kp][self.row[self.parent[cliques]]], axis=other)
                    blk = phi[k][rows] * _place(sep / up[len(sc)][self.up_row[cliques]],
                                                sc, k)
                    blk /= np.sum(blk, axis=tuple(range(1, k + 1)), keepdims=True)
                    phi[k][rows] = blk
        node, edge = self._row_sums(phi, S.shape, T.shape)
        return (log_z, node, edge, state) if bound else (log_z, node, edge)

    def max_product(self, S: np.ndarray, T: np.ndarray) -> np.ndarray:
        """The highest-scoring labeling of every graph, as labels of the rows of S (-1 on rows
        no graph uses): max-messages up the trees in log space, then, parents before
        children, each clique's free variables set to their best given its separator's
        labels. Ties go to the smallest label index in C order over each clique's variables,
        as in :func:`tree_max_product`."""
        m = S.shape[1]
        tab = self._tables(S, T)
        for level in self.up_levels:
            for (k, sc, kp, sp_), cliques in level:
                other = tuple(1 + a for a in range(k) if a not in sc)
                msg = np.max(tab[k][self.row[cliques]], axis=other)
                tab[kp][self.row[self.parent[cliques]]] += _place(msg, sp_, kp)
        labels = np.full(S.shape[0], -1, dtype=np.int64)
        for k in self.count:
            rows = self.row[self.roots[self.sizes[self.roots] == k]]
            if not rows.size:
                continue
            best = np.argmax(tab[k][rows].reshape(rows.size, -1), axis=1)
            for a, lab in enumerate(np.unravel_index(best, (m,) * k)):
                labels[self.members[k][rows, a]] = lab
        for level in self.down_levels:
            for (k, sc, _, _), cliques in level:
                rows = self.row[cliques]
                L = _separator_major(tab[k][rows], sc, m)[0]
                members = self.members[k][rows]
                u = np.ravel_multi_index(tuple(labels[members[:, a]] for a in sc), (m,) * len(sc))
                best = np.argmax(L[np.arange(rows.size), u], axis=1)
                free = [a for a in range(k) if a not in sc]
                for a, lab in zip(free, np.unravel_index(best, (m,) * len(free))):
                    labels[members[:, a]] = lab
        return labels

    def _row_sums(self, tab: dict, node_shape, edge_shape):
        """(node, edge): each node's (edge's) sum of its clique's table over the clique's other
        variables, (n_rows, m) and (n_edges, m, m) (zero on rows no graph uses): the
        marginals of probability tables, the transpose of :meth:`_tables` for others."""
        node = np.zeros(node_shape)
        for k, a, cliques, rows in self.node_groups:
            other = tuple(1 + b for b in range(k) if b != a)
            node[rows] = np.sum(tab[k][self.row[cliques]], axis=other)
        edge = np.zeros(edge_shape)
        for k, au, av, cliques, rows in self.edge_groups:
            other = tuple(1 + b for b in range(k) if b not in (au, av))
            pe = np.sum(tab[k][self.row[cliques]], axis=other)
            edge[rows] = pe if au < av else np.swapaxes(pe, 1, 2)
        return node, edge

    # ------------------------------------------------------------ the junction-tree bound
    def bound_state(self, S: np.ndarray, T: np.ndarray) -> JunctionBoundState:
        """Alg. 3 of Jebara & Choromanska (2012) on every junction tree at the scores S, T,
        with the children's curvatures combined by the shared rule: what
        :meth:`bound_product` needs, computed once per expansion point.

        At clique c and configuration u of its separator with the parent, Alg. 1 visits the
        configurations w = (u, v) of the clique's other variables, largest first, with
        weights alpha_w = exp(scores of c at w + the children's log z at w) and vectors
        l_w = f_c(w) + sum_b mu_{b|w} - (running mean), f_c the features of the scores
        assigned to c and mu_{b|w} child b's conditional mean. The shared rule keeps one
        curvature per clique, C_c = sum_b C_b + sum_u R_c(u), with R_c(u) Alg. 1's curvature
        sum_w beta_w l_w l_w^T: C_b dominates every Sigma_{b|w}, so C_c dominates every
        Sigma_{c|u} (see :mod:`zbound.bounds.junction`), and the curvature of a graph is the
        sum of R_c(u) over its cliques and their separator configurations."""
        tab, _, log_z = self._upward(S, T)
        return self._bound_state(tab, log_z, S.shape[1])

    def _bound_state(self, tab: dict, log_z: np.ndarray, m: int,
                     linear: bool = False) -> JunctionBoundState:
        """:meth:`bound_state` from the tables of the upward pass (read, not changed): log
        tables, or with ``linear`` the scaled tables of :meth:`_upward_scaled` (alpha up to
        a factor per clique, every entry above ``_TINY``)."""
        prob = {k: np.empty_like(t) for k, t in tab.items()}
        groups = []
        for (k, sc), cliques in self.bound_groups:
            rows = self.row[cliques]
            L, shape, perm = _separator_major(tab[k][rows], sc, m)
            top = np.max(L, axis=2, keepdims=True)
            # alpha / largest alpha, in (0, 1]
            w = L / top if linear else np.exp(L - top)
            cond = w / np.sum(w, axis=2, keepdims=True)  # P(v | u), self-normalized
            prob[k][rows] = _clique_major(cond, shape, perm)
            order = np.argsort(-L, axis=2, kind="stable")
            ws = np.take_along_axis(w, order, axis=2)
            z_prev = np.cumsum(ws, axis=2) - ws          # z_{i-1} / largest alpha
            with np.errstate(divide="ignore"):
                r = np.log(ws) - np.log(z_prev)
            r[:, :, 0] = np.inf                          # z_0 = 0: beta = 0
            inv = np.zeros_like(z_prev)
            np.divide(1.0, z_prev, out=inv, where=z_prev > 0)
            groups.append((k, sc, rows, shape, perm, order, ws, inv, beta(r)))
        return JunctionBoundState(log_z, prob, groups, m)

    def bound_product(self, state: JunctionBoundState, S_dir: np.ndarray,
                      T_dir: np.ndarray):
        """(node, edge): the curvature of :meth:`bound_state` applied to a direction given by
        its node and edge scores S_dir (n_rows, m) and T_dir (n_edges, m, m) (the scores that
        the direction's parameters give, f^T delta), returned as the coefficients of each
        node's and edge's features, (n_rows, m) and (n_edges, m, m): the product in parameter
        space is then X^T node and sum_e F_e (x) edge, as for a gradient.

        Two passes over the trees: up, the conditional means of the direction's score
        t_c(w) = f_c(w)^T delta + sum_b mu_{b|w}^T delta; at every clique and separator
        configuration, Alg. 1's a_i = beta_i l_i^T delta and their coefficients on each
        t (the running means transposed); down, a coefficient kappa on mu_{c|u} passed as
        kappa P(v | u) to f_c(u, v) and to the children's means."""
        m, prob = state.m, state.prob
        t = self._tables(S_dir, T_dir)
        for level in self.up_levels:
            for (k, sc, kp, sp_), cliques in level:
                other = tuple(1 + a for a in range(k) if a not in sc)
                rows = self.row[cliques]
                mean = np.sum(prob[k][rows] * t[k][rows], axis=other)
                t[kp][self.row[self.parent[cliques]]] += _place(mean, sp_, kp)
        coef = {k: np.empty_like(v) for k, v in t.items()}
        for k, sc, rows, shape, perm, order, ws, inv, b in state.groups:
            ts = np.take_along_axis(_separator_major(t[k][rows], sc, m)[0], order, axis=2)
            run = (np.cumsum(ws * ts, axis=2) - ws * ts) * inv   # mean of the earlier t
            a = b * (ts - run)
            r = a * inv
            later = np.cumsum(r[:, :, ::-1], axis=2)[:, :, ::-1] - r   # sum over i > k
            gs = a - ws * later
            g = np.empty_like(gs)
            np.put_along_axis(g, order, gs, axis=2)
            coef[k][rows] = _clique_major(g, shape, perm)
        for level in self.down_levels:
            for (k, sc, kp, sp_), cliques in level:
                other = tuple(1 + a for a in range(kp) if a not in sp_)
                kappa = np.sum(coef[kp][self.row[self.parent[cliques]]], axis=other)
                rows = self.row[cliques]
                coef[k][rows] += _place(kappa, sc, k) * prob[k][rows]
        return self._row_sums(coef, S_dir.shape, T_dir.shape)
