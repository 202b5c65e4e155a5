"""Stochastic L2 logistic regression fitted by stochastic bound majorization, with partial_fit.

:class:`BoundSGDClassifier` minimizes, in scikit-learn's ``SGDClassifier(loss="log_loss")``
convention,

    J(W, b) = sum_j s_j log-loss_j(W, b) / sum_j s_j + alpha/2 ||W||_F^2      (b unpenalized),

by SPFB / LSPFB (Wang & Choromanska, SGB) or mini-batch SBM on mini-batches (``fit``) or on
chunks that arrive one at a time (``partial_fit``), so the data never has to sit in memory
together. (Unit weights: the mean log-loss; a weight of 2 counts as a repeated row.) ``fit``
then finishes with the full-batch solver (``finish_tol``). Binary problems use the binary
log-loss (one weight vector, as SGDClassifier); three or more classes the multinomial
(softmax) loss -- SGDClassifier fits one-vs-rest there.
See ``docs/stochastic.md``.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from zbound.estimators._params import (
    DEPRECATED,
    STACKLEVEL,
    LinearClassifier,
    RenamedParameters,
    fit_method,
    renamed,
    renamed_attribute,
)
from zbound.models.loss import check_sample_weight
from zbound.models.multinomial import logistic_objective
from zbound.solvers import SolverPolicy, solver_class
from zbound.solvers.base import MethodNames
from zbound.solvers.result import Recorder, Result, Status
from zbound.solvers.stochastic import KRON_MAX_WIDTH
from zbound.utils.validation import (
    POSITIVE_PENALTY,
    Choices,
    Number,
    check_class_targets,
    check_weighted_classes,
    label_indices,
    relative_weights,
    validate_data,
)

_SCHEDULES = ("constant", "inverse")
# what the estimator passes to its method, by the method's option names (rank and
# lowrank_rule where the method takes them)
_OPTIONS = {"lr": "learning_rate", "schedule": "schedule", "decay": "decay",
            "batch_size": "batch_size", "refresh": "refresh"}
#: batch_size="auto": an epoch of at least this many updates, batches of 100 to 1000 rows
AUTO_UPDATES_PER_EPOCH = 10
#: partial_fit: a chunk of fewer rows takes that fraction of a step and of the schedule's
#: time (the smallest automatic batch): a full step on a few rows overshoots
PARTIAL_FIT_FULL_ROWS = 100
#: partial_fit, refresh="auto": a bound every this many chunks. The stream's curvature is an
#: average (running Gram, or SPFB's averaged bounds), which one chunk moves little
STREAM_REFRESH = 4
#: decay="auto": the inverse schedule's half-life, in epochs of ``fit`` ...
FIT_DECAY = 0.5
#: ... and in chunks of ``partial_fit``, where each chunk is one update (the measurements are in
#: the guide's stochastic page)
STREAM_DECAY = 20.0
#: the full-batch finish's iteration limit (``finish_tol``; BoundLogisticRegression's max_iter)
FINISH_MAX_ITER = 1000
#: max_iter="auto": epochs of fit before the full-batch finish: none (as a warm start, a
#: stochastic pass never paid for its own cost; the guide's stochastic page has the table)
AUTO_EPOCHS_FINISHED = 0
#: ... and without it (finish_tol=None), where tol usually stops the epochs first
AUTO_EPOCHS = 100
#: PCG iterations of an SPFB step on designs wider than KRON_MAX_WIDTH (Jacobi-preconditioned
#: there): a truncated solve of a thin batch's curvature is enough
WIDE_CG_MAXITER = 5


def auto_batch_size(n_rows: int) -> int:
    """``batch_size="auto"``: ceil(rows / 10) between 100 and 1000, so that a small data set
    gets at least 10 updates an epoch (digits, 1347 rows: 135) and a large one batches of
    1000."""
    return int(min(1000, max(100, -(-n_rows // AUTO_UPDATES_PER_EPOCH))))


@dataclasses.dataclass
class _EpochRun:
    """What the epochs of ``fit`` reached: their trace, their count, the objective at the
    start and at the end, and whether ``tol`` stopped them."""

    recorder: Recorder
    epochs: int = 0
    f_start: float = 0.0
    f: float = 0.0
    settled: bool = False


class _Epochs:
    """``fit``'s epochs as a model of the stochastic solvers: the full objective (its mean
    form, rows weighted as the steps weigh them; every attribute but ``batch_model`` is its
    own), which their stopping tests and trace read, with the estimator's own mini-batch
    models (each batch's weights over their sum; None for a batch of zero weight, which is
    skipped)."""

    def __init__(self, full, est, X, y_idx, sw):
        self.full = full
        self._est, self._X, self._y, self._sw = est, X, y_idx, sw

    def __getattr__(self, name):
        # everything but the mini-batch models is the full objective's (what the solver asks
        # of a model: its parameters, values, majorizer, capabilities)
        if name.startswith("__") or name == "full":
            raise AttributeError(name)
        return getattr(self.full, name)

    def batch_model(self, rows):
        wr = None if self._sw is None else self._sw[rows]
        if wr is not None and not wr.any():
            return None
        w = np.full(rows.size, 1.0 / rows.size) if wr is None else wr / wr.sum()
        return self._est._objective(self._X[rows], self._y[rows], w)


class StepsDiverged(ValueError):
    """The stochastic steps left float64's range: the step size is too large for the data."""


def _without_centering(model, theta, f: float) -> float:
    """The objective ``f`` of ``model`` at theta without its intercept-centering term: J as
    the estimator reports it."""
    for pen in model.penalties:
        if type(pen).__name__ == "InterceptCentering":
            f -= pen.value(theta)
    return float(f)


def _bound_step(info) -> bool:
    """A registered stochastic bound method that takes the estimator's options."""
    return info.stochastic and info.uses_bound and \
        set(_OPTIONS) <= set(solver_class(info.name).options)


def _same_options(a: dict, b: dict) -> bool:
    """Two methods' options that differ at most in the batch size (a chunk of partial_fit is
    its own batch): the state of one carries over to the other."""
    return a.keys() == b.keys() and all(a[k] == b[k] for k in a if k != "batch_size")


class BoundSGDClassifier(RenamedParameters, LinearClassifier, BaseEstimator):
    """L2 logistic regression by stochastic bound majorization; ``fit`` and ``partial_fit``.

    Parameters
    ----------
    alpha : float > 0, default 1e-4
        L2 strength: alpha/2 ``||coef_||^2`` added to the *mean* log-loss (SGDClassifier's
        alpha). ``BoundLogisticRegression``'s C = 1 / (alpha n_samples) is the same problem.
    fit_intercept : bool, default True
    solver : {"auto", "spfb", "lspfb", "sbm", "sbm-boehning", ...}, default "auto"
        "spfb": Alg. 2 of Wang & Choromanska (the Alg. 1 curvature of the batch); "lspfb":
        their Alg. 4 (low-rank, ``rank``, ``lowrank_rule``); "sbm": mini-batch bound
        majorization with a constant step; "sbm-boehning": bound steps with Boehning's
        fixed curvature (the running mean of the batches' Gram matrices). "auto"
        (:meth:`zbound.solvers.SolverPolicy.stochastic`): "sbm-boehning" for three or more
        classes up to 2047 features, else "spfb". The choice is ``solver_``.
    learning_rate : float > 0, default 1.0
        The initial step eta_0; 1 is the majorizer's own step.
    schedule : {"auto", "constant", "inverse"}, default "auto"
        eta = learning_rate, or learning_rate / (1 + e / decay) at e epochs into ``fit`` (in
        ``partial_fit``, e counts chunks). "auto": "inverse" for "spfb" and "lspfb",
        "constant" for "sbm" and "sbm-boehning".
    decay : float > 0 or "auto", default "auto"
        The "inverse" schedule's half-life in epochs of ``fit`` (chunks of ``partial_fit``).
        "auto": 0.5 epochs of ``fit`` (each of at least 10 updates), 20 chunks of
        ``partial_fit`` (each chunk is one update).
    batch_size : int or "auto", default "auto"
        Rows per mini-batch in ``fit`` (``partial_fit`` takes each chunk as one batch).
        "auto" (:func:`auto_batch_size`): ceil(rows / 10) between 100 and 1000.
    max_iter : int or "auto", default "auto"
        Most epochs of ``fit`` (``tol`` may stop it first). "auto": none before the
        full-batch finish (``finish_tol``; as a warm start, epochs never paid for their own
        cost), 100 without it.
    tol : float >= 0 or None, default 1e-3
        The epochs stop once ``n_iter_no_change`` epochs in a row each lower J by less than
        tol * max(1, abs(J)); None: run all ``max_iter`` epochs.
    n_iter_no_change : int >= 1, default 2
    finish_tol : float > 0 or None, default 1e-3
        ``fit`` only: once the epochs stop, converge from there with the full-batch solver
        ``BoundLogisticRegression`` runs on this shape, until the gradient's inf-norm of the
        summed objective is <= finish_tol * max(1, abs(J_sum)) (an online pass, then a batch
        solver, as Agarwal et al. 2014). 1e-3, ``SGDClassifier``'s default tol, leaves J
        within about 1e-3 of the optimum (relative); 1e-4 within about 2e-5. None: the epochs
        alone (the papers' stochastic method), which approach the optimum slowly where the
        bound is loose (nearly separable data). ``partial_fit`` never finishes.
    rank : int, default 10
        Rank of the low-rank curvature ("lspfb").
    lowrank_rule : {"exact", "sgb", "paper"}, default "exact"
        How "lspfb" keeps its low-rank factor ("paper": the update as printed, which is not
        a bound; see the guarantees page).
    refresh : int or "auto", default "auto"
        Rebuild the bound every ``refresh`` updates (1: every update, as the papers). "auto":
        1 in ``fit``; in ``partial_fit`` every 4 chunks of at least 100 rows (the curvature
        is an average over the stream, which one chunk moves little), every smaller chunk.
    warm_start : bool, default False
        ``fit`` starts from the fitted ``coef_`` and ``intercept_`` (same classes and
        features) instead of zero.
    verbose : int, default 0
        1: a line per epoch and the finish's result.
    random_state : None, int or Generator, default None
        Shuffling of the rows in ``fit`` (None: a fresh shuffle every fit).
    method, lr : deprecated
        The old names of ``solver`` and ``learning_rate`` (FutureWarning; removed in 0.2).

    Attributes
    ----------
    classes_ : (n_classes,)
    coef_ : (1, n_features) for two classes, else (n_classes, n_features)
    intercept_ : (1,) or (n_classes,)
    n_features_in_ : int
    n_epochs_ : int
        Epochs of the last ``fit``.
    n_iter_ : int
        Its epochs plus the iterations of its full-batch finish.
    t_ : int
        Updates so far (``fit`` and ``partial_fit``).
    solver_ : str
        The solver run ("auto" resolved).
    objective_ : float or None
        J at the end of ``fit`` on its data; None after ``partial_fit``.
    solver_result_ : :class:`zbound.solvers.Result`
        The last ``fit``: its full-batch finish, or with ``finish_tol=None`` the epochs (one
        trace row per epoch); objectives in the mean form of ``objective_``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from zbound import BoundSGDClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = BoundSGDClassifier(random_state=0).fit(X, y)
    >>> clf.predict(X[:2])
    array([0, 0])
    >>> round(clf.score(X, y), 2)
    0.98
    >>> clf = BoundSGDClassifier(random_state=0)
    >>> for rows in (slice(0, 75), slice(75, 150)):         # a stream of chunks
    ...     _ = clf.partial_fit(X[rows], y[rows], classes=[0, 1, 2])
    >>> clf.n_features_in_
    4
    """

    _parameter_constraints: dict = {
        "alpha": [POSITIVE_PENALTY],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions(MethodNames(_bound_step, also=("auto",)))],
        "learning_rate": [Number(Real, 0, np.inf, closed="neither")],
        "schedule": [StrOptions(Choices("auto", *_SCHEDULES))],
        "decay": [Number(Real, 0, np.inf, closed="neither"), StrOptions({"auto"})],
        "batch_size": [Number(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "max_iter": [Number(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "tol": [None, Number(Real, 0, np.inf, closed="left")],
        "n_iter_no_change": [Number(Integral, 1, None, closed="left")],
        "finish_tol": [None, Number(Real, 0, np.inf, closed="neither")],
        "rank": [Number(Integral, 1, None, closed="left")],
        "lowrank_rule": [StrOptions(Choices("exact", "sgb", "paper"))],
        "refresh": [Number(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "warm_start": ["boolean"],
        "verbose": [Number(Integral, 0, None, closed="left")],
        "random_state": [None, Integral, np.random.Generator],
        "method": renamed(StrOptions(MethodNames(_bound_step, also=("auto",)))),
        "lr": renamed(Number(Real, 0, np.inf, closed="neither")),
    }
    _renamed_parameters = {"method": "solver", "lr": "learning_rate"}

    def __init__(self, alpha: float = 1e-4, fit_intercept: bool = True, solver: str = "auto",
                 learning_rate: float = 1.0, schedule: str = "auto", decay: float | str = "auto",
                 batch_size: int | str = "auto", max_iter: int | str = "auto",
                 tol: float | None = 1e-3, n_iter_no_change: int = 2,
                 finish_tol: float | None = 1e-3, rank: int = 10, lowrank_rule: str = "exact",
                 refresh: int | str = "auto", warm_start: bool = False, verbose: int = 0,
                 random_state=None,
                 method=DEPRECATED, lr=DEPRECATED):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.learning_rate = learning_rate
        self.method = method
        self.lr = lr
        self.schedule = schedule
        self.decay = decay
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.finish_tol = finish_tol
        self.rank = rank
        self.lowrank_rule = lowrank_rule
        self.refresh = refresh
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    @property
    def _rate(self):
        """``learning_rate`` as given (by its old name ``lr`` too), for messages."""
        return self._param("learning_rate")

    # -- settings --------------------------------------------------------------------------------
    def _solver(self, n_classes: int, n_features: int, updates_per_epoch: int = 1,
                batch_size: int = 1000, stream: bool = False, reuse=None):
        """The configured method (the parameters were checked by ``_parameter_constraints``):
        "auto" resolved, the schedule's half-life ``decay`` turned from epochs into updates;
        ``stream``: for ``partial_fit``. ``reuse``: a configured solver returned as it is
        where its settings differ at most in the batch size (a chunk of ``partial_fit`` is
        its own batch, and its state carries over), with no new one configured."""
        method = self._param("solver")
        if method == "auto":
            method = SolverPolicy.stochastic(n_classes, n_features)
        cls = solver_class(method)
        opts = {name: self._param(param) for name, param in _OPTIONS.items()}
        if opts["schedule"] == "auto":
            opts["schedule"] = cls.options["schedule"]
        decay = self.decay if self.decay != "auto" else STREAM_DECAY if stream else FIT_DECAY
        opts["decay"] = float(decay) * max(1, int(updates_per_epoch))
        opts["batch_size"] = int(batch_size)
        opts.update({name: getattr(self, name) for name in ("rank", "lowrank_rule")
                     if name in cls.options})
        if opts["refresh"] == "auto":
            opts["refresh"] = STREAM_REFRESH if stream and batch_size >= \
                PARTIAL_FIT_FULL_ROWS else 1
        width = n_features + bool(self.fit_intercept)
        if stream and "curvature" in cls.options and (
                (1 if n_classes == 2 else n_classes) * width <= cls.options["dense_max"]
                or width <= KRON_MAX_WIDTH):
            # a stream's step averages the bounds of every chunk so far: a chunk's own bound
            # spans only its rows, and its minimizer forgets the rest of the stream (binary,
            # one-row chunks: accuracy 0.70, 0.94 with the average; 1000-row chunks equal).
            # Wider data keeps each chunk's own bound: the average would be a dense
            # (width, width) Gram factor (KRON_MAX_WIDTH)
            opts["curvature"] = "average"
        if width > KRON_MAX_WIDTH and "cg_maxiter" in cls.options:
            opts["cg_maxiter"] = WIDE_CG_MAXITER
        if reuse is not None and type(reuse) is cls and _same_options(reuse._options, opts):
            return reuse, method
        return cls(**opts), method

    # -- objective of a chunk ------------------------------------------------------------------
    def _objective(self, X, y_idx, sw, total: float = 1.0):
        """The objective of rows (X, y_idx) with weights sw summing to ``total``: the mean
        form for 1 (a batch's weights, or 1/T each for the full J), else ``total`` times it
        (the summed form of the full-batch finish: sw the weights themselves, None for unit
        weights)."""
        n_classes = self.classes_.size
        k = 1 if n_classes == 2 else n_classes
        d = X.shape[1] + bool(self.fit_intercept)
        pen = np.full((k, d), float(self.alpha) * total)
        if self.fit_intercept:
            pen[:, -1] = 0.0
        center = total / k**2 if self.fit_intercept and k > 1 else 0.0
        return logistic_objective(X, y_idx, n_classes, pen.ravel(), sw, center,
                                  fit_intercept=bool(self.fit_intercept))

    def _theta(self):
        W = self.coef_
        if self.fit_intercept:
            W = np.hstack([W, self.intercept_[:, None]])
        return W.ravel().copy()

    def _set_theta(self, theta):
        k = 1 if self.classes_.size == 2 else self.classes_.size
        W = theta.reshape(k, -1)
        if self.fit_intercept:
            self.coef_ = np.ascontiguousarray(W[:, :-1])
            b = W[:, -1].copy()
            self.intercept_ = b - b.mean() if k > 1 else b
        else:
            self.coef_ = np.ascontiguousarray(W)
            self.intercept_ = np.zeros(k)

    def _encode(self, y, classes):
        y = np.asarray(y)
        try:                        # classes are sorted (np.unique): one vectorized lookup
            idx = np.minimum(np.searchsorted(classes, y), classes.size - 1)
            if np.all(classes[idx] == y):
                return idx.astype(np.intp)
        except TypeError:           # labels that do not compare with the classes
            pass
        known = {c: i for i, c in enumerate(classes.tolist())}
        vals = y.tolist()
        unknown = [v for v in dict.fromkeys(vals) if v not in known]
        if unknown:
            shown = ", ".join(repr(v) for v in unknown[:5])
            raise ValueError(f"y contains labels not in classes: {shown}; classes are "
                             f"{classes.tolist()!r}")
        return np.array([known[v] for v in vals], dtype=np.intp)

    def _step(self, solver, state, X, y_idx, sw, weight=1.0):
        """One update on the chunk, its step scaled by ``weight``; returns the new theta
        (state is updated)."""
        m = X.shape[0]
        w = np.full(m, 1.0 / m) if sw is None else sw / sw.sum()
        batch = self._objective(X, y_idx, w)
        # a step far too long overflows: detected below, not warned about on the way
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            solver.update(batch, state, weight)
        if state.status.name == "FAILED" or not np.isfinite(state.x).all():
            raise StepsDiverged(f"BoundSGDClassifier: the stochastic steps left float64's "
                                f"range ({state.message or 'non-finite weights'}); "
                                f"learning_rate={self._rate} is too large for this data")
        return state.x

    # -- fitting ---------------------------------------------------------------------------------
    @fit_method
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
            ) -> BoundSGDClassifier:
        """Fit by epochs of shuffled mini-batches from zero (at most ``max_iter``; see
        ``tol``), then by the full-batch finish (``finish_tol``). Returns self."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        check_class_targets(y)
        sw = relative_weights(check_sample_weight(sample_weight, X.shape[0]))
        classes, y_idx = label_indices(y)
        check_weighted_classes("BoundSGDClassifier", classes, y_idx, sw)
        y_idx = y_idx.astype(np.intp, copy=False)
        x0 = self._fit_start(classes, X.shape[1])      # before classes_ is replaced
        self.classes_ = classes
        bs = auto_batch_size(X.shape[0]) if self.batch_size == "auto" else int(self.batch_size)
        solver, self.solver_ = self._solver(classes.size, X.shape[1], -(-X.shape[0] // bs), bs)
        run, state = self._run_epochs(solver, x0, X, y_idx, sw, bs)
        finished = self._conclude(run, state, X, y_idx, sw, bs)
        self._sgd_solver, self._sgd_state = solver, state
        self.n_epochs_ = run.epochs
        self.n_iter_ = run.epochs + (0 if self.finish_tol is None else
                                     int(self.solver_result_.nit))
        self.t_ = int(state.t)
        self.objective_ = finished if finished is not None else \
            self._mean_objective(X, y_idx, sw)
        return self

    def _fit_start(self, classes, n_features: int) -> np.ndarray:
        """Zero, or with ``warm_start`` the fitted weights (same classes and features)."""
        k = 1 if classes.size == 2 else classes.size
        p = k * (n_features + bool(self.fit_intercept))
        if self.warm_start and hasattr(self, "coef_") and self._theta().size == p and \
                np.array_equal(getattr(self, "classes_", []), classes):
            return self._theta()
        return np.zeros(p)

    def _run_epochs(self, solver, x0, X, y_idx, sw, bs: int):
        """Epochs of shuffled mini-batch steps, run by the solver's own loop
        (:meth:`~zbound.solvers.base.Solver.run_iterator`), stopped by ``tol`` /
        ``n_iter_no_change`` (scikit-learn's rule) or ``max_iter``; a divergence raises
        StepsDiverged, or with the finish warns and restarts it from zero. Returns the run and
        the stream's state."""
        T = X.shape[0]
        run = _EpochRun(Recorder())
        max_iter = self._epochs()
        if not max_iter:
            return run, solver.init(None, x0)
        # the stopping rule's objective weighs rows as the steps do (weights over their sum:
        # a row of weight 2 and a repeated row stop the fit at the same epoch)
        full = self._objective(X, y_idx, np.full(T, 1.0 / T) if sw is None else sw / sw.sum())
        epochs = solver.replace(max_iter=max_iter, tol=0.0, random_state=self.random_state)
        f_prev, stalled = None, 0
        # a step far too long overflows: detected by the solver's status, not warned about
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for _, state in epochs.run_iterator(_Epochs(full, self, X, y_idx, sw), x0):
                run.f = state.f
                if f_prev is None:                  # the start
                    run.f_start = f_prev = run.f
                    run.recorder.record(run.f, np.nan, 0)
                    continue
                if state.status is Status.FAILED or not np.isfinite(run.f):
                    return self._diverged(run, state), state
                run.epochs += 1
                run.recorder.record(run.f, np.nan, run.epochs)
                if self.verbose:
                    print(f"[BoundSGDClassifier] epoch {run.epochs}: objective {run.f:.10g}")
                if self.tol is not None:
                    stalled = stalled + 1 if f_prev - run.f <= self.tol * max(1.0, abs(run.f)) \
                        else 0
                    if stalled >= int(self.n_iter_no_change):
                        run.settled = True
                        break
                f_prev = run.f
        return run, state

    def _diverged(self, run: _EpochRun, state) -> _EpochRun:
        """An epoch whose steps left float64's range: StepsDiverged, or with the finish a
        warning and the finish's start at zero (it converges from there)."""
        if self.finish_tol is None:
            raise StepsDiverged(f"BoundSGDClassifier: the stochastic steps left float64's "
                                f"range in epoch {run.epochs + 1} ({state.message}); "
                                f"learning_rate={self._rate} is too large for this data")
        run.f = np.inf
        state.x = np.zeros_like(state.x)
        state.status, state.message = Status.RUNNING, None      # the stream goes on from zero
        run.epochs += 1
        warnings.warn(f"BoundSGDClassifier: the stochastic steps diverged in epoch "
                      f"{run.epochs} (learning_rate={self._rate} too large?); the "
                      "full-batch finish starts from zero", ConvergenceWarning,
                      stacklevel=STACKLEVEL + 1)
        return run

    def _conclude(self, run: _EpochRun, state, X, y_idx, sw, bs: int) -> float | None:
        """The fit's end: the full-batch finish (``finish_tol``), or the epochs' own result
        with their warnings; sets the weights and ``solver_result_``; returns J at the
        finish's minimizer (None without a finish)."""
        self.solver_result_ = None
        if self.finish_tol is None:
            if run.f > run.f_start:
                warnings.warn(f"BoundSGDClassifier: the objective rose from {run.f_start:.6g} "
                              f"at the zero start to {run.f:.6g} after {run.epochs} epochs: "
                              f"the steps diverged (learning_rate={self._rate} too large?)",
                              ConvergenceWarning, stacklevel=STACKLEVEL + 1)
            elif self.tol is not None and not run.settled:
                warnings.warn(f"BoundSGDClassifier: max_iter={self._epochs()} epochs reached "
                              f"before the objective settled (tol={self.tol}); increase "
                              "max_iter", ConvergenceWarning, stacklevel=STACKLEVEL + 1)
            self._set_theta(state.x)
            status = Status.FTOL if run.settled else Status.MAX_ITER
            self.solver_result_ = Result(
                x=state.x.copy(), fun=run.f, converged=run.settled, message=status.message,
                nit=run.epochs, n_evals=run.epochs, method=self.solver_,
                trace=run.recorder.trace(), status=status)
            return None
        # from the better of the epochs' end and the zero start: where the epochs ended above
        # it (noise where the optimum is near zero, or a step far too large) the finish still
        # converges, and far out the objective's own scale would make the stationarity
        # test's tol * abs(J) loose enough to pass at once
        start = np.zeros_like(state.x) if run.f > run.f_start else state.x
        theta, finished = self._finish(X, y_idx, sw, start)
        self._set_theta(theta)
        state.x = self._theta()              # partial_fit goes on from the finished point
        if not run.epochs:
            # no pass ran: the stream's step schedule goes on as after one epoch of updates,
            # which the finish stands for; from the schedule's start, the first chunk would
            # take a full step to its own bound's minimizer and forget the fitted rows
            state.clock = float(-(-X.shape[0] // bs))
        return finished

    def _epochs(self) -> int:
        """Most epochs of ``fit``: ``max_iter``, "auto" resolved."""
        if self.max_iter != "auto":
            return int(self.max_iter)
        return AUTO_EPOCHS if self.finish_tol is None else AUTO_EPOCHS_FINISHED

    def _finish(self, X, y_idx, sw, theta):
        """``finish_tol``: minimize J from theta with the full-batch solver
        ``BoundLogisticRegression`` runs on this shape, on the summed form of J (its minimizer:
        sum_j s_j log-loss_j + (alpha sum_j s_j) / 2 ||W||^2), to its stopping rule. Sets
        ``solver_result_``; returns the minimizer and J there (the mean form, from the summed
        form's value: no second pass over the rows)."""
        total = float(X.shape[0]) if sw is None else float(sw.sum())
        model = self._objective(X, y_idx.astype(np.intp, copy=False), sw, total)
        with np.errstate(over="ignore", under="ignore"):
            result = SolverPolicy().solve(model, theta, tol=self.finish_tol,
                                          max_iter=FINISH_MAX_ITER)
        mean = _without_centering(model, result.x, result.fun) / total
        # reported in the mean form, as objective_ (the centering term is zero at the minimizer)
        self.solver_result_ = dataclasses.replace(
            result, fun=mean, trace=dataclasses.replace(
                result.trace, objective=result.trace.objective / total))
        if self.verbose:
            print(f"[BoundSGDClassifier] finish: {result!r}")
        if not result.converged:
            warnings.warn(f"BoundSGDClassifier: the full-batch finish ({result.method}) did "
                          f"not converge in {FINISH_MAX_ITER} iterations ({result.message})",
                          ConvergenceWarning, stacklevel=STACKLEVEL + 2)
        return result.x, mean

    @fit_method
    def partial_fit(self, X: ArrayLike, y: ArrayLike, classes: ArrayLike | None = None,
                    sample_weight: ArrayLike | None = None) -> BoundSGDClassifier:
        """One stochastic bound step on the chunk (X, y); ``classes`` is required on the first
        call (scikit-learn's semantics). Bad input raises before anything changes."""
        first = not hasattr(self, "classes_")
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit "
                                 "(the labels of every chunk to come)")
            all_classes = np.unique(np.asarray(classes))
            if all_classes.size < 2:
                raise ValueError("classes must hold at least 2 labels")
        else:
            all_classes = self.classes_
            if classes is not None and not np.array_equal(np.unique(np.asarray(classes)),
                                                          all_classes):
                raise ValueError(f"classes {np.asarray(classes).tolist()!r} differ from the "
                                 f"classes of the first call {all_classes.tolist()!r}")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C",
                             reset=first)
        solver, method = self._solver(all_classes.size, X.shape[1], 1, max(1, X.shape[0]),
                                      stream=True,
                                      reuse=None if first else getattr(self, "_sgd_solver",
                                                                       None))
        if first:
            check_class_targets(y)     # later chunks: _encode rejects unknown labels
        y_idx = self._encode(y, all_classes)
        sw = relative_weights(check_sample_weight(sample_weight, X.shape[0]))
        if sw is not None and not sw.any():
            raise ValueError("every sample_weight of the chunk is zero")
        if first:
            self.classes_ = all_classes
            k = 1 if all_classes.size == 2 else all_classes.size
            p = k * (X.shape[1] + bool(self.fit_intercept))
            state = solver.init(None, np.zeros(p))
        else:
            state = getattr(self, "_sgd_state", None)
            if state is None:
                state = solver.init(None, self._theta())
            else:
                state.x = self._theta()
        saved = copy.copy(state)
        try:
            theta = self._step(solver, state, X, y_idx, sw,
                               min(1.0, X.shape[0] / PARTIAL_FIT_FULL_ROWS))
        except Exception:
            vars(state).update(vars(saved))
            if first:
                del self.classes_
            raise
        self._set_theta(theta)
        self._sgd_solver, self._sgd_state = solver, state
        self.solver_ = method
        self.t_ = int(state.t)
        if first:
            self.n_iter_ = self.n_epochs_ = 0
        self.objective_ = None
        return self

    def objective(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
                  ) -> float:
        """``J(coef_, intercept_)`` on (X, y): the weighted mean log-loss (weights over their sum,
        as ``fit`` weighs them) + alpha/2 ``||coef_||^2``."""
        check_is_fitted(self)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C",
                             reset=False)
        y_idx = self._encode(y, self.classes_)
        sw = relative_weights(check_sample_weight(sample_weight, X.shape[0]))
        if sw is not None and not sw.any():
            raise ValueError("every sample_weight is zero: the weighted mean is undefined")
        return self._mean_objective(X, y_idx, sw)

    def _mean_objective(self, X, y_idx, sw) -> float:
        """:meth:`objective` on validated rows: class indices ``y_idx``, relative weights
        ``sw`` (None: equal)."""
        T = X.shape[0]
        w = np.full(T, 1.0 / T) if sw is None else sw / sw.sum()
        model = self._objective(X, y_idx, w)
        theta = self._theta()
        return _without_centering(model, theta, model.value(theta))

    # -- prediction ------------------------------------------------------------------------------
    method_ = renamed_attribute("method_", "solver_")
    finish_result_ = renamed_attribute("finish_result_", "solver_result_")
