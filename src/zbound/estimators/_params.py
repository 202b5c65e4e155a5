"""How the estimators' ``fit`` and ``partial_fit`` run.

Each estimator states ``_parameter_constraints`` in scikit-learn's terms (``Interval`` /
``StrOptions`` / "boolean" / None ..., with :class:`zbound.utils.validation.Number`, an
``Interval`` that refuses booleans, and :class:`zbound.solvers.MethodNames`, the registered
solver names with a capability, so that an estimator's choices come from the registry and
never from a table of its own); :func:`fit_method` checks them once, before any work.
:class:`CRFFit` holds the fit and the stream of the CRF estimators.
"""

from __future__ import annotations

import inspect
import operator
import warnings
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, log_expit
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Hidden, StrOptions
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted

from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.solvers.policy import CRF_STREAM, SolverPolicy
from zbound.solvers.result import Result, Status
from zbound.solvers.stochastic import batch_objective, iterate_batches
from zbound.structured.chain import chain_fit_threads
from zbound.structured.features import label_array
from zbound.utils.logspace import log_softmax
from zbound.utils.threads import limit_small_fits
from zbound.utils.validation import check_score_labels, finite_prediction, validate_data

#: ``stacklevel`` of a warning raised in the body of a method decorated by
#: :func:`fit_method`: the user's line is four frames up (three wrappers and the method).
STACKLEVEL = 5


#: the default of a renamed parameter's old name: not given
DEPRECATED = "deprecated"


def renamed(*constraints) -> list:
    """``_parameter_constraints`` entry of a renamed parameter's old name: its new name's
    ``constraints`` or the :data:`DEPRECATED` default."""
    return [Hidden(StrOptions({DEPRECATED})), *constraints]


class RenamedParameters:
    """Parameters that have a new name: ``_renamed_parameters`` maps each old name to its new
    one. The old name stays in ``__init__`` with the default :data:`DEPRECATED` for one
    release; given, it takes effect with a ``FutureWarning`` naming the new one (raised by
    :func:`fit_method`). The estimator reads every renamed parameter through :meth:`_param`.
    """

    _renamed_parameters: ClassVar[dict[str, str]] = {}

    def _old_name_given(self, new: str) -> str | None:
        for old, name in self._renamed_parameters.items():
            value = getattr(self, old)
            if name == new and not (isinstance(value, str) and value == DEPRECATED):
                return old
        return None

    def _param(self, new: str):
        """The value of parameter ``new``: the old name's where that was given."""
        old = self._old_name_given(new)
        return getattr(self, new if old is None else old)

    def _warn_renamed(self) -> None:
        cls = type(self).__name__
        defaults = inspect.signature(type(self).__init__).parameters
        for new in self._renamed_parameters.values():
            old = self._old_name_given(new)
            if old is None:
                continue
            if getattr(self, new) is not defaults[new].default and \
                    getattr(self, new) != defaults[new].default:
                raise ValueError(f"{cls}: {old}={getattr(self, old)!r} and "
                                 f"{new}={getattr(self, new)!r} are the same parameter; "
                                 f"pass {new} alone")
            warnings.warn(f"{cls}: the parameter {old!r} is named {new!r}; {old!r} will be "
                          f"removed in 0.2", FutureWarning, stacklevel=STACKLEVEL - 1)


def renamed_attribute(old: str, new: str, convert=None) -> property:
    """A fitted attribute's old name for one release: reading it warns (``FutureWarning``)
    and returns the new one. ``new`` may be a dotted path (``"solver_result_.status"``);
    ``convert`` turns its value into the old attribute's form."""
    first = new.split(".", 1)[0]
    get_new = operator.attrgetter(new)

    def get(self):
        if not hasattr(self, first):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {old!r}")
        warnings.warn(f"{type(self).__name__}.{old} is named {new}; {old} will be removed in "
                      "0.2", FutureWarning, stacklevel=2)
        value = get_new(self)
        return value if convert is None else convert(value)

    return property(get, doc=f"Old name of ``{new}`` (FutureWarning; removed in 0.2).")


def progress_printer(name: str):
    """A solver callback for ``verbose >= 2``: prints each iteration's objective."""
    count = 0

    def callback(x, f):
        nonlocal count
        count += 1
        print(f"[{name}] iter {count}: objective {f:.12g}")
        return False

    return callback


def fit_method(fit):
    """Decorator for ``fit`` / ``partial_fit``: the parameters are checked once against
    ``_parameter_constraints`` before any work (scikit-learn's ``_fit_context``; a
    ``partial_fit`` on a fitted estimator skips it), renamed parameters given by their old
    names warn (:class:`RenamedParameters`), and a small fit runs with one BLAS thread
    (:func:`zbound.utils.threads.limit_small_fits`)."""
    checked = _fit_context(prefer_skip_nested_validation=True)(fit)

    def run(self, *args, **kwargs):
        if isinstance(self, RenamedParameters):
            self._warn_renamed()
        return checked(self, *args, **kwargs)

    run.__name__, run.__qualname__, run.__doc__ = fit.__name__, fit.__qualname__, fit.__doc__
    run.__wrapped__ = fit
    return limit_small_fits(run)


class LabelCheckedClassifier(ClassifierMixin):
    """scikit-learn's ``ClassifierMixin`` whose ``score`` refuses labels never seen in fit
    (:func:`zbound.utils.validation.check_score_labels`), as every classifier here does."""

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
              ) -> float:
        """Mean accuracy on (X, y). Unlike scikit-learn's default, labels never seen in fit
        raise a ValueError: such rows can never be predicted correctly, and they usually mean
        a label-encoding mismatch (e.g. fitting on strings and scoring on integers)."""
        check_is_fitted(self)
        check_score_labels(self.classes_, y)
        return super().score(X, y, sample_weight=sample_weight)


class LinearClassifier(LabelCheckedClassifier):
    """The prediction methods of a fitted linear classifier (``coef_`` (n, d) or (1, d) for
    two classes, ``intercept_``, ``classes_``), written once for every estimator that has
    them. :meth:`_lazy` lets an estimator answer a lazy input (a dask array) itself."""

    def _lazy(self, method: str, X):
        """``method``'s answer for an input the estimator maps lazily, else None."""
        return None

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Scores: (t,) for two classes (log-odds of ``classes_[1]``), else (t, n_classes)."""
        lazy = self._lazy("decision_function", X)
        if lazy is not None:
            return lazy
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        scores = finite_prediction(
            lambda: safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities (t, n_classes), columns in the order of ``classes_``."""
        lazy = self._lazy("predict_proba", X)
        if lazy is not None:
            return lazy
        scores = self.decision_function(X)
        if scores.ndim == 1:
            # expit(-s), not 1 - expit(s): keeps the small probability's relative accuracy
            return np.column_stack([expit(-scores), expit(scores)])
        return log_softmax(scores, axis=1)[1]

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Log class probabilities (t, n_classes), computed stably in log space."""
        lazy = self._lazy("predict_log_proba", X)
        if lazy is not None:
            return lazy
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([log_expit(-scores), log_expit(scores)])
        return scores - log_softmax(scores, axis=1, softmax=False)[:, None]

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Most probable label per row of X."""
        lazy = self._lazy("predict", X)
        if lazy is not None:
            return lazy
        scores = self.decision_function(X)
        idx = (scores > 0).astype(np.intp) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]


class CRFFit:
    """How the CRF estimators (``ChainCRF``, ``GraphCRF``) fit and stream, written once.

    ``fit`` runs the estimator's ``solver`` through :func:`zbound.solvers.minimize` with the
    options of :meth:`zbound.solvers.SolverPolicy.crf_options` ("adagrad", the registered
    mini-batch AdaGrad, runs its epochs in the same solver loop). ``partial_fit`` takes the
    registered "adagrad" method's updates over a chunk, the squared-gradient sums carried in
    ``adagrad_``. Mixin of an estimator with ``c2``, ``solver``, ``learning_rate``,
    ``batch_size``, ``max_iter``, ``tol``, ``cg_maxiter``, ``n_jobs``, ``random_state``,
    ``n_samples_hint`` and ``verbose``, whose ``_stream_loss`` gives a chunk's loss and whose
    ``_store_coef`` sets the weights."""

    def _diverged(self) -> ValueError:
        return ValueError(f"{type(self).__name__}: the AdaGrad steps left float64's range; "
                          f"learning_rate={self.learning_rate} is too large for this data")

    def _run_solver(self, obj, x0, evaluation: str = "double") -> Result:
        """Minimize ``obj`` from ``x0`` with the estimator's solver; sets ``solver_result_``,
        ``n_iter_`` and ``adagrad_`` (the sums "adagrad" leaves, zeros after a batch solver,
        for ``partial_fit`` to go on from)."""
        from zbound.solvers import minimize

        name = type(self).__name__
        solver = CRF_STREAM if self.solver == "sgd" else self.solver
        opts = SolverPolicy.crf_options(
            solver, cg_maxiter=self.cg_maxiter, evaluation=evaluation,
            learning_rate=self.learning_rate, batch_size=self.batch_size,
            random_state=self.random_state)
        callback = progress_printer(name) if self.verbose >= 2 else None
        try:
            with chain_fit_threads(self.n_jobs):
                res = minimize(obj, x0, method=solver, tol=self.tol, max_iter=self.max_iter,
                               callback=callback, **opts)
        except FloatingPointError:          # the chain kernels' check: log Z not finite
            if solver != CRF_STREAM:
                raise
            raise self._diverged() from None
        if solver == CRF_STREAM and res.status is Status.FAILED:
            raise self._diverged()
        if not res.converged and solver != CRF_STREAM:
            warnings.warn(f"{name} (solver={self.solver!r}) did not converge in "
                          f"max_iter={self.max_iter} iterations ({res.message}); increase "
                          "max_iter or raise tol", ConvergenceWarning, stacklevel=4)
        if self.verbose >= 1:
            print(f"[{name}] {res!r}")
        sums = res.info.get("sums")
        self.adagrad_ = np.zeros(res.x.size) if sums is None else np.array(sums)
        self.solver_result_ = res
        self.n_iter_ = int(res.nit)
        self.n_updates_ = 0
        return res

    def _partial_fit(self, X, y, classes=None, **data):
        """One pass of AdaGrad steps over the chunk (X, y) (any iterables of samples), in
        mini-batches of ``batch_size`` samples in the given order.

        Each step uses the mini-batch gradient plus its share of the L2 term (the batch's
        samples over ``n_samples_hint``, else over the samples seen so far); the
        per-coordinate squared-gradient sums carry over between calls, so a corpus streamed
        as a generator of chunks, a few passes over it, trains the model (the ``crf``
        benchmark compares its F1 with ``fit``'s). ``classes`` (all labels) is required on
        the first call. New attributes extend the vocabulary with zero weights.
        """
        from zbound.solvers import configure

        X, y = list(X), list(y)
        first = not hasattr(self, "classes_")
        if first:
            if classes is None:
                raise ValueError("classes (the list of all labels) is required on the first "
                                 "call to partial_fit")
            given = label_array(classes)
            self.classes_ = np.unique(given)
            if self.classes_.size != given.size or self.classes_.size < 1:
                raise ValueError("classes must be distinct and non-empty")
            self.n_seen_ = self.n_updates_ = 0
        loss, n_feat = self._stream_loss(X, y, **data)
        width, p = n_feat * len(self.classes_), loss.n_params
        if first:
            theta, self.adagrad_ = np.zeros(p), np.zeros(p)
        else:           # the feature block grows with the vocabulary, weights and sums alike
            theta, self.adagrad_ = (_grown(v, width, p) for v in (self.coef_, self.adagrad_))
        self.n_seen_ += loss.n_samples
        n_total = max(self.n_samples_hint or 0, self.n_seen_)
        solver = configure(CRF_STREAM, **SolverPolicy.crf_options(
            CRF_STREAM, cg_maxiter=1, learning_rate=self.learning_rate,
            batch_size=self.batch_size))
        obj = Objective(loss, L2Penalty(2.0 * float(self.c2)))
        state = solver.init(None, theta)
        state.opt.G = self.adagrad_
        for rows in iterate_batches(loss.n_samples, int(self.batch_size), None):
            try:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    solver.update(batch_objective(obj, rows, n_total), state)
            except FloatingPointError:      # the chain kernels' check: log Z not finite
                raise self._diverged() from None
            if state.status is Status.FAILED:
                raise self._diverged()
            self.n_updates_ += 1
        self.adagrad_ = state.opt.G
        self._store_coef(state.x, loss, n_feat)
        return self


def _grown(v: np.ndarray, width: int, p: int) -> np.ndarray:
    """``v`` (a feature block, then the fixed part) with zeros appended to its feature block,
    to ``width`` entries of a ``p``-vector."""
    fixed = p - width
    old = v.size - fixed
    return np.concatenate([v[:old], np.zeros(width - old), v[old:]])


__all__ = ["CRFFit", "fit_method", "LabelCheckedClassifier", "LinearClassifier", "STACKLEVEL",
           "DEPRECATED", "renamed", "RenamedParameters", "renamed_attribute", "progress_printer"]
