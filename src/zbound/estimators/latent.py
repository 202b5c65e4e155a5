"""``LatentLogisticRegression``: a mixture of Gaussian-gated logistic regressions, trained by the
quadratic bound (paper 003, Section 4).

Each class has ``n_components`` latent components; p(y | x) = sum_m p(y, m | x), a softmax over
all (class, component) pairs summed over the components of each class (the conditional of a
mixture of Gaussians per class with one shared covariance). The objective is the negative
latent conditional log-likelihood plus 1/(2C) ||theta||^2 (all weights and offsets; 1/C for two
classes, LogisticRegression's binary convention); it is not
convex, so the fit runs from ``n_init`` random starts near 0 and keeps the best objective.
See ``docs/latent.md``.
"""

from __future__ import annotations

import dataclasses
import warnings
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from zbound.estimators._params import (
    STACKLEVEL,
    LabelCheckedClassifier,
    fit_method,
    progress_printer,
)
from zbound.models.base import LatentLikelihood
from zbound.models.latent import latent_objective
from zbound.models.loss import check_design_magnitude, check_sample_weight
from zbound.solvers import SolverPolicy, minimize
from zbound.solvers.base import MethodNames
from zbound.utils.linalg import column_units
from zbound.utils.validation import (
    INIT_SCALE,
    PENALTY_MAX,
    Number,
    check_class_targets,
    check_penalty_against_weights,
    check_weighted_classes,
    finite_prediction,
    label_indices,
    scaling_hint,
    validate_data,
)


def _latent_method(info) -> bool:
    """A registered batch method that runs on a latent conditional likelihood: the generic
    ones (L-BFGS, Newton, the bound methods, ...) and those made for it (EM)."""
    return not (info.stochastic or info.step_size) and info.requires in (None,
                                                                          LatentLikelihood)




class CollapsedComponentWarning(UserWarning):
    """A latent component explains (almost) none of the training data."""


class LatentLogisticRegression(LabelCheckedClassifier, BaseEstimator):
    """Latent conditional likelihood classifier (mixture of Gaussian-gated logistic regressions).

    Parameters
    ----------
    n_components : int >= 1, default 2
        Latent components per class (m in the paper); n_components = 1 is multinomial logistic
        regression. Every class needs at least n_components samples.
    C : float > 0 or np.inf, default 1.0
        Inverse regularization strength (scikit-learn's convention): the penalty is
        1/(2C) ||theta||^2 over all weights and offsets, and 1/C ||theta||^2 for two classes,
        so that n_components = 1 is ``LogisticRegression(C=C)``'s model for any number of
        classes (offsets penalized too): a binary logistic regression has one weight vector
        w, the latent softmax two per component, theta_1 = -theta_0 = w / 2 at the optimum,
        and 1/C ||theta||^2 = ||w||^2 / (2C) there. ``np.inf`` fits the unregularized
        likelihood (the paper's lambda = 0), which is unbounded on data the components can
        separate: the fit then stops on ``tol`` / ``max_iter`` with growing weights.
    solver : str, default "auto"
        "auto" runs "lbfgs-bound" (L-BFGS directions, safeguarded by the quadratic bound), the
        fastest in the ``latent`` benchmark (the guide's latent page). The others: "bound"
        (Alg. 2: minimize the quadratic bound, Jensen on the numerator + Alg. 1 on the
        denominator, every step),
        "squarem" (the same bound steps, SQUAREM-accelerated and still monotone),
        "newton-bound", "em" (generalized EM on the conditional likelihood), "em-joint" (EM on
        the joint likelihood of the generative Gaussian mixture), or a baseline: "lbfgs",
        "bfgs", "cg", "steepest", "newton".
    tol : float >= 0, default 1e-4
        Stop when the gradient's inf-norm is <= tol * max(1, abs(J)) or when one iteration
        decreases J by <= 1e-3 * tol * max(1, abs(J)). 1e-4 (``BoundLogisticRegression``'s
        default) leaves J within about 2e-4 (relative) of where 1e-6 stops, at the same
        accuracy.
    max_iter : int >= 1, default 1000
    n_init : int >= 1, default 1
        Random starts; the fit with the lowest objective is kept.
    init_scale : float > 0, default 0.1
        Standard deviation of the random start (parameters "close to 0"; exactly 0 would leave
        the components of a class identical forever).
    random_state : None, int or RandomState
    warm_start : bool, default False
        Start from the fitted ``coef_`` and ``intercept_`` (same classes, features and
        n_components) instead of ``n_init`` random starts.
    verbose : int, default 0
        1: the solver's result; 2: a line per iteration.

    Attributes
    ----------
    classes_ : (n_classes,)
    coef_ : (n_classes, n_components, n_features) theta_{y,m}
    intercept_ : (n_classes, n_components) nu_{y,m}
    component_weights_ : (n_classes, n_components) share of each class's (weighted) training
        samples each component explains (responsibilities summed, rows sum to 1)
    collapsed_components_ : list of (class label, component) pairs whose share is below 1e-6
        (a :class:`CollapsedComponentWarning` is raised when it is not empty)
    objective_ : float, the objective at the fit (negative log-likelihood + penalty)
    n_iter_ : int, iterations of the kept fit
    converged_ : bool
    solver_result_ : :class:`zbound.solvers.Result` of the kept fit
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from zbound import LatentLogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LatentLogisticRegression(n_components=2, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:1]).shape
    (1, 3)
    >>> round(clf.score(X, y), 2)
    0.99
    """

    def __init__(self, n_components: int = 2, C: float = 1.0, solver: str = "auto",
                 tol: float = 1e-4, max_iter: int = 1000, n_init: int = 1,
                 init_scale: float = 0.1, random_state=None, warm_start: bool = False,
                 verbose: int = 0):
        self.n_components = n_components
        self.C = C
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_scale = init_scale
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    _parameter_constraints: dict = {
        "n_components": [Number(Integral, 1, None, closed="left")],
        "C": [Number(Real, 1.0 / PENALTY_MAX, None, closed="both")],  # np.inf: no penalty
        "solver": [StrOptions(MethodNames(_latent_method, also=("auto",)))],
        "tol": [Number(Real, 0, np.inf, closed="left")],
        "max_iter": [Number(Integral, 1, None, closed="left")],
        "n_init": [Number(Integral, 1, None, closed="left")],
        "init_scale": [INIT_SCALE],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": [Number(Integral, 0, None, closed="left")],
    }

    def _check_params(self):
        """(n_components, L2 strength) from the parameters checked by
        ``_parameter_constraints``."""
        C = self.C
        return int(self.n_components), (0.0 if np.isinf(C) else 1.0 / float(C))

    @fit_method
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
            ) -> LatentLogisticRegression:
        """Fit to X (t, n_features) and labels y (t,); returns self."""
        M, reg = self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=False)
        check_class_targets(y)
        sw = check_sample_weight(sample_weight, X.shape[0])
        classes, y_idx = label_indices(y)
        if classes.size == 2:
            reg *= 2.0          # LogisticRegression's binary penalty (the C parameter)
        check_weighted_classes("LatentLogisticRegression", classes, y_idx, sw)
        if sw is not None:
            check_penalty_against_weights(float(self.C), sw)
        counts = np.bincount(y_idx, minlength=classes.size)
        small = [classes[c].item() for c in range(classes.size) if counts[c] < M]
        if small:
            raise ValueError(f"n_components={M} is more than the samples of class(es) "
                             f"{small}: every class needs at least n_components samples")
        # Fitted on X / u with the penalty on the original weights theta = theta_u / u: the
        # same problem, in coordinates where the Hessian's diagonal is about even, so no
        # column's units steer the solver (a column in units of 1e6 left L-BFGS 3x above
        # the optimum, reported converged) and the random start is the same size for every
        # column (u: column_units, the ridge against a column's diagonal t s^2 / 4).
        check_design_magnitude(X, sw)          # the loss's own range check, before scaling
        scale = column_units(X, sw, 4.0 * reg / (X.shape[0] if sw is None else float(sw.sum())))
        units = np.append(scale, 1.0)                             # the offsets: unscaled
        strength = np.tile(reg / units**2, classes.size * M) if reg else 0.0
        model = latent_objective(X / scale, y_idx.astype(np.intp), M, strength, classes.size,
                                 sw)
        rng = check_random_state(self.random_state)
        method, opts = SolverPolicy.latent_plan(self.solver, self.tol)
        starts = [float(self.init_scale) * rng.standard_normal(model.n_params)
                  for _ in range(int(self.n_init))]
        if self.warm_start and hasattr(self, "coef_") and \
                self.coef_.shape == (classes.size, M, X.shape[1]) and \
                np.array_equal(self.classes_, classes):
            starts = [np.concatenate([self.coef_ * scale, self.intercept_[:, :, None]],
                                     axis=2).ravel()]
        callback = progress_printer("LatentLogisticRegression") if self.verbose >= 2 else None
        best = None
        with np.errstate(over="ignore", under="ignore"):
            for x0 in starts:
                res = minimize(model, x0, method=method, tol=float(self.tol),
                               max_iter=int(self.max_iter), callback=callback, **opts)
                if best is None or res.fun < best.fun:
                    best = res
        if self.verbose >= 1:
            print(f"[LatentLogisticRegression] {best!r}")
        if not best.converged:
            warnings.warn(f"LatentLogisticRegression (solver={self.solver!r}) did not converge "
                          f"in max_iter={self.max_iter} iterations ({best.message})."
                          + scaling_hint(X, sw),
                          ConvergenceWarning, stacklevel=STACKLEVEL)
        K, d = classes.size, X.shape[1]
        W = best.x.reshape(K, M, d + 1)
        self.classes_ = classes
        self.coef_ = np.ascontiguousarray(W[:, :, :d] / scale)
        self.intercept_ = np.ascontiguousarray(W[:, :, d])
        mass = model.loss.pair_mass(best.x)
        total = mass.sum(axis=1, keepdims=True)
        self.component_weights_ = np.divide(mass, total, out=np.zeros_like(mass),
                                            where=total > 0)
        self.collapsed_components_ = [(classes[k].item(), m) for k in range(K) for m in range(M)
                                      if total[k, 0] > 0 and self.component_weights_[k, m] < 1e-6]
        if self.collapsed_components_:
            warnings.warn(f"LatentLogisticRegression: components {self.collapsed_components_} "
                          "(class label, component) explain none of the training data "
                          "(collapsed); fewer n_components may do", CollapsedComponentWarning,
                          stacklevel=STACKLEVEL)
        self.objective_ = float(best.fun)
        self.n_iter_ = int(best.nit)
        self.converged_ = bool(best.converged)
        # the result in the original coordinates (jac: theta_s = s theta, so grad = s grad_s)
        tile = np.tile(units, K * M)
        self.solver_result_ = dataclasses.replace(
            best, x=best.x / tile, jac=None if best.jac is None else best.jac * tile)
        self._model_shape = (K, M)
        return self

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """(t, n_classes) log p(y | x)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        S = finite_prediction(
            lambda: np.einsum("kmd,td->tkm", self.coef_, X) + self.intercept_[None])
        lc = logsumexp(S, axis=2)                                   # (t, K), per class
        return lc - logsumexp(lc, axis=1, keepdims=True)


    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """(t, n_classes) p(y | x) = sum_m p(y, m | x)."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The most probable class of each row."""
        idx = np.argmax(self.predict_log_proba(X), axis=1)
        return self.classes_[idx]

    def objective(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
                  ) -> float:
        """The objective ``fit`` minimizes, at the fitted weights on (X, y): the (weighted)
        negative latent conditional log-likelihood plus the penalty (``objective_`` on the
        training data)."""
        check_is_fitted(self)
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=False,
                             reset=False)
        sw = check_sample_weight(sample_weight, X.shape[0])
        idx = self._class_indices(y)
        K, M = self._model_shape
        reg = 0.0 if np.isinf(self.C) else 1.0 / float(self.C)
        if K == 2:
            reg *= 2.0
        model = latent_objective(X, idx.astype(np.intp), M, reg, K, sw)
        theta = np.concatenate([self.coef_, self.intercept_[:, :, None]], axis=2).ravel()
        with np.errstate(over="ignore", under="ignore"):
            return float(model.value(theta))

    def loglik(self, X: ArrayLike, y: ArrayLike) -> float:
        """Old form of ``-objective(X, y)`` without the penalty: the latent conditional
        log-likelihood sum_j log p(y_j | x_j) (FutureWarning; removed in 0.2)."""
        warnings.warn("LatentLogisticRegression.loglik will be removed in 0.2; objective(X, y) "
                      "is the minimized objective (negative log-likelihood plus penalty)",
                      FutureWarning, stacklevel=2)
        lp = self.predict_log_proba(X)
        idx = self._class_indices(y)
        return float(lp[np.arange(lp.shape[0]), idx].sum())

    def _class_indices(self, y) -> np.ndarray:
        """The positions of y's labels in ``classes_``; a ValueError for any other label."""
        y, classes = np.asarray(y), self.classes_
        idx = np.searchsorted(classes, y)
        if np.any(idx >= classes.size) or np.any(classes[np.minimum(idx, classes.size - 1)]
                                                 != y):
            raise ValueError("y has labels the model was not fitted on")
        return idx
