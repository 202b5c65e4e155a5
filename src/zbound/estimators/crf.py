"""``ChainCRF``: a linear-chain CRF for sequence labelling, trained by bound majorization.

Inputs follow sklearn-crfsuite: ``X`` is a list of sequences, a sequence a list of tokens, a
token a feature dict (``{"w": "the", "upper": False, "len": 3.0}``) or a list of feature
strings; ``y`` a list of label sequences. Raw tokens (strings, or (word, POS) tuples) are
featurized by the built-in templates (:func:`zbound.structured.token_features`). Precomputed
features: a list of (n_tokens_j, n_features) matrices, sparse or dense, one per sequence.

The objective is CRFsuite's with its ``c2``: sum_j -log p(y_j | x_j) + c2 ||theta||^2 (the
library's ``reg = 2 c2``). Solvers: "bound" (Alg. 2 with the chain bound of Alg. 3 as a
matrix-free curvature, each step a truncated preconditioned CG solve of the majorizer, so every
iterate decreases the objective), "lbfgs-bound" (the default: L-BFGS directions, a short
value-only backtracking, and the bound as the monotone last resort), "newton-bound", "lbfgs"
(SciPy L-BFGS-B on the same objective), "adagrad" (AdaGrad epochs). ``partial_fit`` runs AdaGrad
steps over the mini-batches of each chunk it is given, accepts any iterable of sequences, and
grows the attribute vocabulary as new attributes arrive, so a corpus can be streamed from a
generator.
Forward-backward runs over chunks of sequences on ``n_jobs`` threads (the scaled recursion,
position-major, see :func:`zbound.structured.chain.chunk_value_grad`).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions

from zbound.estimators._params import (
    CRFFit,
    renamed_attribute,
)
from zbound.models.crf import ChainCRFLoss, chain_crf_objective
from zbound.models.graph_crf import weighted_chain_objective
from zbound.models.loss import check_design_magnitude, check_sample_weight
from zbound.solvers.base import MethodNames
from zbound.solvers.policy import PRECISIONS, SolverPolicy, chain_crf_method
from zbound.structured.chain import ChainLayout, forward_backward, marginals
from zbound.structured.features import Sequences, encode_labels, featurize
from zbound.utils.validation import PENALTY, Choices, Number, finite_prediction


class ChainCRF(CRFFit, BaseEstimator):
    """Linear-chain conditional random field (first-order transitions), L2-regularized.

    Minimizes CRFsuite's objective, sum_j -log p(y_j | x_j) + c2 ||theta||^2, over the state
    weights and the transitions.

    Parameters
    ----------
    c2 : float >= 0, default 1.0
        L2 strength in CRFsuite's (and sklearn-crfsuite's) convention.
    solver : str, default "lbfgs-bound"
        "lbfgs-bound": L-BFGS directions, the unit step when it passes Armijo, else a few
        interpolated lengths, else the chain bound's minimizer along the direction;
        monotone. "bound": Alg. 2 of Jebara & Choromanska, each step a truncated PCG solve
        of the chain bound's majorizer; monotone but slow (the bound's curvature is far
        above the Hessian's on real corpora). "newton-bound": Hessian-free Newton
        safeguarded by the bound. "lbfgs": SciPy's L-BFGS-B on the same objective. Any other
        registered batch method (``zbound.solvers.METHODS``), or "adagrad": AdaGrad epochs
        over shuffled mini-batches, the steps of ``partial_fit``.
    max_iter : int >= 1, default 100
        Iterations (epochs for "adagrad").
    tol : float >= 0, default 1e-6
        Stationarity tolerance of the batch solvers (relative, as ``zbound.minimize``).
    cg_maxiter : int >= 1, default 10
        CG products per bound step ("bound"; any number keeps the iterates monotone).
    batch_size : int >= 1, default 8
        Sequences per stochastic step ("adagrad" and ``partial_fit``).
    learning_rate : float > 0, default 0.3
        AdaGrad's step eta: theta -= eta g / sqrt(sum of past g^2) per coordinate, g the
        mini-batch gradient plus its share of the L2 term.
    n_features : int or None, default None
        None learns a vocabulary of attributes; a number hashes them into that many columns.
    n_jobs : int or None, default None
        Threads for forward-backward (None or 1: one, -1: all cores, -2: all but one). With
        more than one, BLAS runs on one thread during the fit (the threads are the chunks').
    precision : {"auto", "double", "mixed", "mixed-lean"}, default "auto"
        "mixed": "lbfgs-bound" takes its early iterations with the loss evaluated in
        float32 (scores, forward-backward and the gradient's products with X; half the
        memory traffic) from a float32 copy of the feature values, then finishes in float64;
        the result, its objective and the convergence test are float64's. "mixed-lean": the
        same, converting each chunk's feature values at every evaluation instead of copying
        them (no extra memory, about the same speed). "double": float64 throughout. "auto":
        "mixed-lean" for "lbfgs-bound" from 10^6 sequences x parameters, else "double".
        Other solvers take "auto" or "double" only.
    random_state : None, int or Generator, default None
        The mini-batch order of "adagrad".
    n_samples_hint : int or None, default None
        ``partial_fit``: the corpus size, for each mini-batch's share of the L2 term (else
        the sequences seen so far).
    verbose : int, default 0
        1: the solver's result; 2: a line per iteration.

    Attributes
    ----------
    classes_ : ndarray of labels
    state_weights_ : (n_features, n_labels)
    transitions_ : (n_labels, n_labels), transitions_[a, b] scores label a followed by b
    coef_ : all weights as one vector (see the property)
    index_ : attribute vocabulary (dict and tokens input)
    n_features_in_ : int
    objective_ : float
        The objective at the fit.
    n_iter_ : int
        Iterations (epochs for "adagrad") of ``fit``.
    solver_result_ : :class:`zbound.solvers.Result`
        The fit's result, its trace one row per iteration (per epoch for "adagrad").
    n_seen_, n_updates_ : int
        Sequences seen and AdaGrad steps taken by ``partial_fit``.

    Notes
    -----
    ``fit(X, y, sample_weight)`` weighs each sequence's log-likelihood (CRFsuite and
    sklearn-crfsuite take no weights): unit weights run on the chain kernels, other weights
    on the junction-tree kernels of :class:`~zbound.GraphCRF`, which are slower.

    Examples
    --------
    >>> from zbound import ChainCRF
    >>> X = [[{"w": "the"}, {"w": "dog"}, {"w": "runs"}],
    ...      [{"w": "a"}, {"w": "cat"}, {"w": "sleeps"}]]
    >>> y = [["DET", "NOUN", "VERB"], ["DET", "NOUN", "VERB"]]
    >>> crf = ChainCRF(c2=0.1).fit(X, y)
    >>> crf.predict([[{"w": "the"}, {"w": "cat"}, {"w": "runs"}]])
    [['DET', 'NOUN', 'VERB']]
    >>> crf.classes_
    array(['DET', 'NOUN', 'VERB'], dtype='<U4')
    >>> marginals = crf.predict_marginals([[{"w": "a"}, {"w": "dog"}]])
    >>> max(marginals[0][0], key=marginals[0][0].get)
    'DET'
    """

    def __init__(self, c2: float = 1.0, solver: str = "lbfgs-bound", max_iter: int = 100,
                 tol: float = 1e-6, cg_maxiter: int = 10, batch_size: int = 8,
                 learning_rate: float = 0.3, n_features: int | None = None, n_jobs=None,
                 random_state=None, n_samples_hint: int | None = None, precision: str = "auto",
                 verbose: int = 0):
        self.c2 = c2
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.cg_maxiter = cg_maxiter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.n_features = n_features
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.n_samples_hint = n_samples_hint
        self.precision = precision
        self.verbose = verbose

    # ------------------------------------------------------------------ input handling
    _parameter_constraints: dict = {
        "c2": [PENALTY],
        "solver": [StrOptions(MethodNames(chain_crf_method, also=("sgd",)),
                              deprecated={"sgd"})],
        "max_iter": [Number(Integral, 1, None, closed="left")],
        "tol": [Number(Real, 0, np.inf, closed="left")],
        "cg_maxiter": [Number(Integral, 1, None, closed="left")],
        "batch_size": [Number(Integral, 1, None, closed="left")],
        "learning_rate": [Number(Real, 0, np.inf, closed="neither")],
        "n_features": [None, Number(Integral, 1, None, closed="left")],
        # joblib's convention: None or 1 one thread, -1 all cores, -2 all but one; 0 is no count
        "n_jobs": [None, Number(Integral, 1, None, closed="left"),
                   Number(Integral, None, -1, closed="right")],
        "random_state": ["random_state"],
        "n_samples_hint": [None, Number(Integral, 1, None, closed="left")],
        "precision": [StrOptions(Choices(*PRECISIONS))],
        "verbose": [Number(Integral, 0, None, closed="left")],
    }

    def _matrices(self, X, grow: bool):
        """Sequences -> (CSR of all tokens, lengths) by :func:`zbound.structured.featurize`,
        with this model's feature index (made on the first call); sets ``_precomputed``."""
        fitted = hasattr(self, "state_weights_")
        M, lengths, index = featurize(X, getattr(self, "index_", None), grow=grow,
                                      n_features=self.n_features)
        if fitted and (index is None) != (not hasattr(self, "index_")):
            # the columns of the other kind of input mean nothing to this model
            kinds = ("feature matrices", "tokens or feature dicts")
            fit_kind, x_kind = (kinds[0], kinds[1]) if index is not None else kinds[::-1]
            raise ValueError(f"this ChainCRF was fitted on {fit_kind}; X holds {x_kind}, "
                             "whose columns it has no vocabulary for")
        self._precomputed = index is None
        if self._precomputed:
            if grow and not hasattr(self, "n_features_in_"):
                self.n_features_in_ = M.shape[1]
            if M.shape[1] != getattr(self, "n_features_in_", M.shape[1]):
                raise ValueError(f"X has {M.shape[1]} features, the model "
                                 f"{self.n_features_in_}")
        elif not hasattr(self, "index_"):
            self.index_ = index
        return M, lengths

    def _labels(self, y, lengths, grow: bool):
        """Label indices by :func:`zbound.structured.encode_labels` (``classes_`` set on the
        first call with ``grow``)."""
        known = getattr(self, "classes_", None)
        if known is None and not grow:
            raise ValueError("no labels known: fit first")
        yi, classes = encode_labels(y, lengths, known)
        if known is None:
            self.classes_ = classes
        return yi

    def _objective(self, M, lengths, yi):
        return chain_crf_objective(M, lengths, yi, len(self.classes_), self.c2, self.n_jobs)

    @property
    def coef_(self) -> np.ndarray:
        """All weights as one vector: the state weights (n_features, n_labels) row-major,
        then the transitions (n_labels, n_labels); setting it sets both (the parameter
        vector of :func:`zbound.models.crf.chain_crf_objective`)."""
        return np.concatenate([self.state_weights_.ravel(), self.transitions_.ravel()])

    @coef_.setter
    def coef_(self, theta):
        self._set_coef(np.asarray(theta, dtype=np.float64))

    def _set_coef(self, theta):
        m = len(self.classes_)
        k = theta.size - m * m
        self.state_weights_ = theta[:k].reshape(-1, m).copy()
        self.transitions_ = theta[k:].reshape(m, m).copy()

    # ------------------------------------------------------------------ training
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Sequences, y: Sequences, sample_weight: ArrayLike | None = None
            ) -> ChainCRF:
        """Fit on lists of sequences ``X`` and label sequences ``y``; ``sample_weight``: one
        weight >= 0 per sequence (None: all 1)."""
        for attr in ("index_", "classes_", "n_features_in_", "state_weights_"):
            if hasattr(self, attr):
                delattr(self, attr)
        M, lengths = self._matrices(X, grow=True)
        yi = self._labels(y, lengths, grow=True)
        if not self._precomputed:
            self.n_features_in_ = M.shape[1]
        sw = check_sample_weight(sample_weight, len(lengths))
        if sw is None or np.all(sw == 1.0):
            obj = self._objective(M, lengths, yi)
        else:           # the chain kernels sum sequences unweighted
            obj = weighted_chain_objective(M, lengths, yi, len(self.classes_), self.c2, sw,
                                           self.n_jobs)
        n_seen = len(lengths)
        del M, lengths, yi              # the objective holds its own (reordered) copy of M
        if self.solver == "sgd":
            warnings.warn("ChainCRF: solver='sgd' is named 'adagrad'; 'sgd' will be removed "
                          "in 0.2", FutureWarning, stacklevel=3)
        evaluation = SolverPolicy.crf_evaluation(obj, self.solver, self.precision)
        res = self._run_solver(obj, np.zeros(obj.n_params), evaluation)
        self.objective_ = float(res.fun)
        self._set_coef(res.x)
        self.n_seen_ = n_seen
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X: Sequences, y: Sequences, classes: ArrayLike | None = None
                    ) -> ChainCRF:
        return self._partial_fit(X, y, classes)

    partial_fit.__doc__ = CRFFit._partial_fit.__doc__

    def _stream_loss(self, X, y):
        """The chunk's loss over the vocabulary grown by its attributes, and its size."""
        M, lengths = self._matrices(X, grow=True)
        yi = self._labels(y, lengths, grow=False)
        if not self._precomputed:
            self.n_features_in_ = M.shape[1]
        return ChainCRFLoss(M, lengths, yi, len(self.classes_), n_jobs=self.n_jobs), M.shape[1]

    def _store_coef(self, theta, loss, n_feat):
        self._set_coef(theta)

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self):
        if not hasattr(self, "state_weights_"):
            from sklearn.exceptions import NotFittedError
            raise NotFittedError("this ChainCRF is not fitted yet; call fit or partial_fit")

    def _prepare(self, X):
        self._check_fitted()
        M, lengths = self._matrices(X, grow=False)
        check_design_magnitude(M)             # the range fit accepts
        n = self.state_weights_.shape[0]
        if M.shape[1] < n:
            M = sp.csr_matrix((M.data, M.indices, M.indptr), shape=(M.shape[0], n))
        elif M.shape[1] > n:
            M = M[:, :n]
        return M, lengths

    def _potentials(self, M):
        from zbound.structured.chain import Potentials
        scores = finite_prediction(lambda: np.asarray(M @ self.state_weights_))
        return Potentials(scores, self.transitions_)

    def _split(self, flat, lengths):
        out, off = [], 0
        for n in lengths:
            out.append(flat[off:off + n])
            off += n
        return out

    def predict(self, X: Sequences) -> list[list]:
        """Viterbi labels: a list of label lists."""
        from zbound.structured.chain import viterbi
        M, lengths = self._prepare(X)
        yi = viterbi(ChainLayout(lengths), self._potentials(M), self.n_jobs)
        labels = self.classes_[yi]
        return [s.tolist() for s in self._split(labels, lengths)]

    def predict_marginals(self, X: Sequences) -> list[list[dict]]:
        """Per token {label: marginal probability} (sklearn-crfsuite's format)."""
        M, lengths = self._prepare(X)
        lay = ChainLayout(lengths)
        pot = self._potentials(M)
        log_z, A, B = forward_backward(lay, pot, self.n_jobs)
        P, _ = marginals(lay, pot, log_z, A, B, pairs=False)
        names = self.classes_.tolist()          # plain Python labels, as sklearn-crfsuite's
        out = []
        for block in self._split(P, lengths):
            out.append([dict(zip(names, row.tolist())) for row in block])
        return out

    def score(self, X: Sequences, y: Sequences) -> float:
        """Token accuracy."""
        pred = self.predict(X)
        y = list(y)
        if len(y) != len(pred):
            raise ValueError(f"X has {len(pred)} sequences but y has {len(y)}")
        known = set(self.classes_)
        tot = hit = 0
        for j, (p, t) in enumerate(zip(pred, y)):
            if len(p) != len(t):
                raise ValueError(f"sequence {j} has {len(p)} tokens but {len(t)} labels")
            for a, b in zip(p, t):
                if b not in known:
                    raise ValueError(f"label {b!r} was not seen in training")
                hit += a == b
                tot += 1
        return hit / tot

    history_ = renamed_attribute("history_", "solver_result_.trace.objective",
                                 convert=lambda objective: list(objective[1:]))
    status_ = renamed_attribute("status_", "solver_result_.status")
