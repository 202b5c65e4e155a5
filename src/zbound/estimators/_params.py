"""How the estimators' ``fit`` and ``partial_fit`` run.

Each estimator states ``_parameter_constraints`` in scikit-learn's terms (``Interval`` /
``StrOptions`` / "boolean" / None ..., with :class:`zbound.utils.validation.Number`, an
``Interval`` that refuses booleans, and :class:`zbound.solvers.MethodNames`, the registered
solver names with a capability, so that an estimator's choices come from the registry and
never from a table of its own); :func:`fit_method` checks them once, before any work.
:class:`AdaGradFit` holds the AdaGrad epochs and steps of the CRF estimators.
"""

from __future__ import annotations

import inspect
import operator
import warnings
from typing import ClassVar

import numpy as np
from scipy.special import expit, log_expit
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Hidden, StrOptions
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted

from zbound.solvers.first_order import AdaGrad
from zbound.solvers.result import Recorder, Result, Status
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

    def score(self, X, y, sample_weight=None):
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

    def decision_function(self, X):
        """Scores: (t,) for two classes (log-odds of ``classes_[1]``), else (t, n_classes)."""
        lazy = self._lazy("decision_function", X)
        if lazy is not None:
            return lazy
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        scores = finite_prediction(
            lambda: safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict_proba(self, X):
        """Class probabilities (t, n_classes), columns in the order of ``classes_``."""
        lazy = self._lazy("predict_proba", X)
        if lazy is not None:
            return lazy
        scores = self.decision_function(X)
        if scores.ndim == 1:
            # expit(-s), not 1 - expit(s): keeps the small probability's relative accuracy
            return np.column_stack([expit(-scores), expit(scores)])
        return log_softmax(scores, axis=1)[1]

    def predict_log_proba(self, X):
        """Log class probabilities (t, n_classes), computed stably in log space."""
        lazy = self._lazy("predict_log_proba", X)
        if lazy is not None:
            return lazy
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([log_expit(-scores), log_expit(scores)])
        return scores - log_softmax(scores, axis=1, softmax=False)[:, None]

    def predict(self, X):
        """Most probable label per row of X."""
        lazy = self._lazy("predict", X)
        if lazy is not None:
            return lazy
        scores = self.decision_function(X)
        idx = (scores > 0).astype(np.intp) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]


__all__ = ["fit_method", "LabelCheckedClassifier", "LinearClassifier", "STACKLEVEL",
           "DEPRECATED", "renamed", "RenamedParameters", "renamed_attribute", "progress_printer"]


def crf_solver_options(solver: str, cg_maxiter: int, evaluation: str = "double") -> dict:
    """The options ``ChainCRF`` and ``GraphCRF`` pass to ``zbound.minimize`` for a batch
    ``solver``: Alg. 2's step (and SQUAREM's) by ``cg_maxiter`` CG products (the bound is
    matrix-free: an exact solve would cost thousands of them, and any partial one keeps the
    iterates monotone); the curvature pairs of "lbfgs-bound" in float32 (half their memory on a
    corpus of millions of parameters, the same iterations) and its ``evaluation`` (float64,
    or float32 first: ``LBFGSBound``'s option)."""
    if solver in ("bound", "squarem"):
        return dict(inner="cg", cg_maxiter=cg_maxiter, cg_rtol=1e-3)
    if solver == "newton-bound":
        return dict(inner="cg")
    if solver == "lbfgs-bound":
        return dict(precision="single", evaluation=evaluation)
    return {}


class AdaGradFit:
    """AdaGrad epochs and steps shared by the CRF estimators (``ChainCRF``, ``GraphCRF``):
    their ``solver="adagrad"`` fit and the steps of ``partial_fit``, on any loss with
    ``subset`` and ``value_and_grad``, the L2 term c2 ||theta||^2 shared out by mini-batch.

    Mixin of an estimator with ``c2``, ``learning_rate``, ``batch_size``, ``max_iter``,
    ``random_state`` and ``verbose``; the squared-gradient sums live in ``self.adagrad_``."""

    def _adagrad_step(self, loss, theta, frac):
        """One AdaGrad step on the mini-batch ``loss`` (its share ``frac`` of the L2 term). A
        step that leaves float64's range is a ValueError naming ``learning_rate``, not a
        warning and a NaN."""
        name = type(self).__name__
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            try:
                _, g = loss.value_and_grad(theta)
            except FloatingPointError:          # the chain kernels' check: log Z not finite
                g = np.full_like(theta, np.nan)
            g = g + frac * 2.0 * float(self.c2) * theta
            rule = AdaGrad(float(self.learning_rate))
            rule.G = self.adagrad_                   # the sums carried by the estimator
            new = rule.step(theta, g)
        if not np.isfinite(new).all():
            raise ValueError(f"{name}: the AdaGrad steps left float64's range; "
                             f"learning_rate={self.learning_rate} is too large for this data")
        return new

    def _adagrad_epochs(self, obj, theta) -> Result:
        """AdaGrad epochs from theta over shuffled mini-batches of ``batch_size`` samples: a
        Result with one trace row per epoch (AdaGrad has no stopping test: it runs its
        epochs, converged or not)."""
        name = type(self).__name__
        rng = np.random.default_rng(self.random_state)
        loss = obj.loss
        n = loss.n_samples
        theta = np.array(theta, dtype=np.float64)
        self.adagrad_ = np.zeros_like(theta)
        recorder = Recorder()
        recorder.record(obj.value(theta), np.nan, 0)
        for epoch in range(self.max_iter):
            perm = rng.permutation(n)
            for s in range(0, n, self.batch_size):
                batch = perm[s:s + self.batch_size]
                theta = self._adagrad_step(loss.subset(batch), theta, batch.size / n)
            with np.errstate(over="ignore", invalid="ignore"):
                f = obj.value(theta)
            if not np.isfinite(f):
                raise ValueError(f"{name}: the objective left float64's range after an "
                                 f"AdaGrad epoch; learning_rate={self.learning_rate} is too "
                                 "large for this data")
            recorder.record(f, np.nan, epoch + 1)
            if self.verbose >= 2:
                print(f"[{name}] epoch {epoch + 1}: objective {f:.12g}")
        return Result(x=theta.copy(), fun=float(recorder.last_objective), converged=False,
                      message=Status.MAX_ITER.message, nit=int(self.max_iter),
                      n_evals=int(self.max_iter), method="adagrad", trace=recorder.trace(),
                      status=Status.MAX_ITER)
