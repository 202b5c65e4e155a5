"""scikit-learn estimators built on the bounds and solvers (estimators sit on top of both).

:class:`BoundLogisticRegression` is L2-regularized logistic regression (binary or multinomial)
fitted by the library's solvers, with optional box constraints on the coefficients (Alg. 2 of
Jebara & Choromanska 2012 takes a convex set of admissible parameters). It minimizes, in
scikit-learn's convention,

    J(W, b) = sum_j s_j * log-loss_j(W, b) + 1 / (2 C) * ||W||_F^2,

with the intercept b unpenalized; see ``docs/estimators.md``.
"""

from __future__ import annotations

import numbers
import uuid
import warnings
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import get_scorer
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import Hidden, StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from zbound.constraints import LinearConstraints
from zbound.distributed import is_dask_array
from zbound.estimators._params import (
    STACKLEVEL,
    LinearClassifier,
    fit_method,
    progress_printer,
)
from zbound.models.loss import check_sample_weight
from zbound.models.multinomial import logistic_objective
from zbound.solvers import DEFAULT_METHOD, METHODS, SolverPolicy
from zbound.solvers.base import MethodNames
from zbound.solvers.policy import PRECISIONS, logistic_method
from zbound.utils.validation import (
    INVERSE_PENALTY,
    SCALE_MAX,
    Choices,
    Number,
    check_class_targets,
    check_penalty_against_weights,
    check_weighted_classes,
    label_indices,
    scaling_hint,
    validate_data,
)

_ORDERS = ("descending", "ascending", "given")
# Relative weight of the intercept-centering term when intercept bounds are given (see
# logistic_objective).
_WEAK_CENTER = 1e-8


def _known_chunks(x):
    """A dask array whose row chunk sizes are known: after boolean masking they are NaN
    until computed (one pass over the mask's inputs)."""
    if x.ndim and any(np.isnan(c) for c in x.chunks[0]):
        return x.compute_chunk_sizes()
    return x


# -- parameter checks --------------------------------------------------------------------------


def _dask_name(what: str) -> str:
    """A key prefix no other dask graph has (a fit's or a prediction's own)."""
    return f"zbound-{what}-{uuid.uuid4().hex}"


def _check_bound_pair(name: str, value, shape: tuple[int, ...]):
    """(lower, upper) arrays of ``shape`` from None or a (lower, upper) pair of scalars/arrays."""
    if value is None:
        return None
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{name} must be None or a pair (lower, upper) of scalars or arrays "
                         f"(None for no bound on that side), got {value!r}")
    out = []
    for side, fill, bad in (("lower", -np.inf, np.inf), ("upper", np.inf, -np.inf)):
        v = value[0] if side == "lower" else value[1]
        if v is None:
            out.append(np.full(shape, fill))
            continue
        try:
            arr = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} {side} bound must be numeric, got {v!r}") from None
        try:
            arr = np.broadcast_to(arr, shape).copy()
        except ValueError:
            raise ValueError(f"{name} {side} bound of shape {arr.shape} does not broadcast to "
                             f"{shape}") from None
        if np.isnan(arr).any():
            raise ValueError(f"{name} {side} bound contains NaN")
        if (np.isfinite(arr) & (np.abs(arr) > SCALE_MAX)).any():
            raise ValueError(f"{name} {side} bound has finite entries beyond +-{SCALE_MAX:.0e}, "
                             "the range of weights the fit handles (use +-inf or None for "
                             "'no bound')")
        if (arr == bad).any():
            raise ValueError(f"{name} {side} bound contains {bad}: the feasible set is empty "
                             f"(use {fill} or None for 'no bound')")
        out.append(arr)
    lower, upper = out
    if (lower > upper).any():
        i = np.unravel_index(int(np.flatnonzero(lower > upper)[0]), shape)
        raise ValueError(f"{name}: lower > upper at index {tuple(int(j) for j in i)} "
                         f"({lower[i]} > {upper[i]})")
    return lower, upper


# -- the estimator -----------------------------------------------------------------------------


class BoundLogisticRegression(LinearClassifier, BaseEstimator):
    """Regularized logistic regression (binary and multinomial) fitted with zbound solvers.

    Minimizes ``sum_j sample_weight_j * log_loss_j + 1/(2 C) ||coef_||^2`` -- the objective of
    ``sklearn.linear_model.LogisticRegression(C=C)`` -- with the intercept unpenalized; with
    ``penalty="l1"`` the penalty is ``1/C ||coef_||_1``, with ``"elasticnet"``
    ``1/C (l1_ratio ||coef_||_1 + (1 - l1_ratio)/2 ||coef_||^2)`` (scikit-learn's, fitted by
    the proximal method "bound-cd": bound majorization with coordinate descent), and with
    ``None`` there is none. Binary
    problems use the binary logistic loss (one weight vector); three or more classes the softmax
    (multinomial) loss. Optional box constraints on the coefficients and intercepts are handled by
    the constrained step of Alg. 2 (a QP per iteration).

    Parameters
    ----------
    C : float > 0, default 1.0
        Inverse regularization strength, as in scikit-learn: the penalty is 1/(2C) ``||coef_||^2``
        added to the *sum* (not mean) of the per-sample log-losses.
    penalty : {"l2", "l1", "elasticnet", None}, default "l2"
        The penalty's form (above). "l1" and "elasticnet" give sparse ``coef_`` (exact zeros),
        fitted by a proximal method ("auto": "bound-cd"; also "fista"), which stops when the
        largest KKT violation is <= ``tol`` times the largest entry of the loss's gradient at
        zero (``solver_result_.info["kkt_violation"]``); they take no ``coef_bounds``.
        None: no penalty (C unused).
    l1_ratio : float in [0, 1] or None, default None
        The L1 share of the elastic net (``penalty="elasticnet"`` only, where it is
        required): 1 is the L1 penalty, 0 the L2 penalty.
    fit_intercept : bool, default True
        Add an unpenalized intercept per class.
    solver : str, default "auto"
        A registered batch method of :func:`zbound.solvers.minimize` ("newton-bound",
        "lbfgs-precond", "lbfgs-newton", "bound", "squarem", "lbfgs", "bfgs", "cg", "newton",
        "steepest", ...); "auto" is :func:`zbound.solvers.choose_method` for this data, made at
        fit time: L-BFGS preconditioned by the fixed bound curvature for large multiclass
        data, L-BFGS then Newton for dense two-class data, SciPy's L-BFGS-B (finished by
        Newton steps where it crawls) for boxes on large standardized data, else
        "newton-bound". With bounds, the solver must support them.
    tol : float >= 0, default 1e-4
        Stop when the gradient's largest entry (constrained: that of the model step's
        curvature times the step) is <= tol * max(1, abs(J)). The default lands at or below
        the relative objective error of scikit-learn's default (lbfgs, tol=1e-4);
        ``objective_`` reports what was reached.
    max_iter : int >= 1, default 1000
        Iteration limit; a ConvergenceWarning is raised when it is reached.
    order : {"descending", "ascending", "given"}, default "descending"
        Order in which Alg. 1 visits the classes (bound-based solvers only; "descending", the
        largest score first, gives the tightest bound).
    coef_bounds : None or (lower, upper), default None
        Box constraints lower <= ``coef_`` <= upper; each side is None, a scalar, or an array that
        broadcasts to ``coef_``'s shape (1, n_features) for two classes, (n_classes, n_features)
        otherwise. -inf / +inf mean no bound on that entry.
    intercept_bounds : None or (lower, upper), default None
        Box constraints on ``intercept_`` (shape (1,) or (n_classes,)); needs fit_intercept=True.
    class_weight : None, "balanced" or dict {label: weight}, default None
        Weights multiplying each sample's weight by its class, as in scikit-learn:
        "balanced" uses n_samples / (n_classes * weighted class counts).
    warm_start : bool, default False
        Start the next ``fit`` from the previous solution (``coef_`` and ``intercept_`` of the same
        shape, projected onto the bounds if any) instead of zero.
    precision : {"auto", "double", "mixed", "mixed-lean"}, default "auto"
        "mixed": the preconditioned L-BFGS solver ("lbfgs-precond") takes its early
        iterations with the loss evaluated in float32 from a float32 copy of X (half X's
        memory more), then finishes in float64 (two classes: with Newton steps); the result,
        its objective and the convergence test are float64's. "mixed-lean": the same,
        converting row blocks of X at every evaluation instead of copying it. "double": float64
        throughout, the fit's memory near scikit-learn's. "auto": "mixed-lean" where the fit
        runs "lbfgs-precond" on at least 10^6 rows x parameters of dense X spanning at least
        four row blocks (large multiclass data), else "double".
    verbose : int, default 0
        1 prints a summary after fitting, 2 also prints the objective at every iteration.

    Attributes
    ----------
    classes_ : (n_classes,) the labels, sorted (np.unique)
    coef_ : (1, n_features) for two classes, else (n_classes, n_features)
    intercept_ : (1,) or (n_classes,); zeros when fit_intercept is False
    n_iter_ : (1,) int array, iterations of the solver
    n_features_in_ : int
    feature_names_in_ : (``n_features_in_``,) when X has string column names
    objective_ : float, the objective ``J(coef_, intercept_)`` the fit reached (sum of weighted
        log-losses + 1/(2C) ``||coef_||^2``): how accurate the fit is, compared between fits of the
        same data and C (e.g. with a smaller tol)
    solver_result_ : :class:`zbound.solvers.Result` of the fit (trace, evaluations, message)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from zbound import BoundLogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = BoundLogisticRegression(C=1.0).fit(X, y)
    >>> clf.classes_
    array([0, 1, 2])
    >>> clf.predict(X[:2])
    array([0, 0])
    >>> round(clf.score(X, y), 2)
    0.97
    >>> clf.solver_result_.converged
    True
    """

    def __init__(self, C: float = 1.0, penalty: str | None = "l2",
                 l1_ratio: float | None = None, fit_intercept: bool = True, solver: str = "auto",
                 tol: float = 1e-4, max_iter: int = 1000, order: str = "descending",
                 coef_bounds: tuple | None = None, intercept_bounds: tuple | None = None,
                 class_weight: dict | str | None = None, warm_start: bool = False,
                 precision: str = "auto", verbose: int = 0):
        self.C = C
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.order = order
        self.coef_bounds = coef_bounds
        self.intercept_bounds = intercept_bounds
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.precision = precision
        self.verbose = verbose

    # a stochastic method passes here, to be refused in _check_params with the estimator
    # that runs it
    _parameter_constraints: dict = {
        "C": [INVERSE_PENALTY],
        "penalty": [None, StrOptions(Choices("l2", "l1", "elasticnet"))],
        "l1_ratio": [None, Number(Real, 0, 1, closed="both")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions(MethodNames(logistic_method, also=("auto",))),
                   Hidden(StrOptions(MethodNames(lambda info: info.stochastic)))],
        "tol": [Number(Real, 0, np.inf, closed="left")],
        "max_iter": [Number(Integral, 1, None, closed="left")],
        "order": [StrOptions(Choices(*_ORDERS))],
        "coef_bounds": "no_validation",          # checked against the data's shape in fit
        "intercept_bounds": "no_validation",
        "class_weight": [None, dict, StrOptions(Choices("balanced"))],
        "warm_start": ["boolean"],
        "precision": [StrOptions(Choices(*PRECISIONS))],
        "verbose": [Number(Integral, 0, None, closed="left")],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- validation --------------------------------------------------------------------------
    def _check_params(self) -> str:
        """The checks that relate parameters (each one alone is checked by
        ``_parameter_constraints``); returns the method to run."""
        # "auto" is the library's one default, read at fit time so that the estimator and the
        # benchmarks never disagree on it: DEFAULT_METHOD here (it takes bounds), refined by
        # zbound.solvers.choose_method once the objective is built.
        solver = DEFAULT_METHOD if self.solver == "auto" else self.solver
        batch = sorted(MethodNames(logistic_method))
        if METHODS[solver].stochastic:
            raise ValueError(f"solver {solver!r} is stochastic (mini-batches over epochs); use "
                             f"zbound.BoundSGDClassifier(solver={solver!r}) for it, or one of "
                             f"{batch} here")
        if (self.coef_bounds is not None or self.intercept_bounds is not None) and \
                not METHODS[solver].supports_constraints:
            ok = sorted(k for k, v in METHODS.items() if v.supports_constraints)
            raise ValueError(f"solver {solver!r} does not support coef_bounds / "
                             f"intercept_bounds; use 'auto' or one of {ok}")
        if self.intercept_bounds is not None and not self.fit_intercept:
            raise ValueError("intercept_bounds needs fit_intercept=True")
        if self.penalty == "elasticnet" and self.l1_ratio is None:
            raise ValueError("penalty='elasticnet' needs l1_ratio (a number in [0, 1])")
        if self.l1_ratio is not None and self.penalty != "elasticnet":
            warnings.warn(f"l1_ratio is used only with penalty='elasticnet' (penalty="
                          f"{self.penalty!r}); it is ignored", UserWarning, stacklevel=4)
        if self._sparse_penalty():
            if self.coef_bounds is not None or self.intercept_bounds is not None:
                raise ValueError(f"penalty={self.penalty!r} takes no coef_bounds / "
                                 "intercept_bounds")
            if self.solver != "auto" and not METHODS[solver].proximal:
                prox = sorted(k for k, v in METHODS.items() if v.proximal)
                raise ValueError(f"penalty={self.penalty!r} needs a proximal solver: 'auto' "
                                 f"or one of {prox}, got {self.solver!r}")
        return solver

    def _sparse_penalty(self) -> bool:
        """Whether the penalty has an L1 part (a proximal method fits it)."""
        return self.penalty == "l1" or (self.penalty == "elasticnet"
                                        and float(self.l1_ratio) > 0.0)

    def _strengths(self) -> tuple[float, float]:
        """(L1, L2) strengths per penalized coefficient."""
        if self.penalty is None:
            return 0.0, 0.0
        if self.penalty == "l1":
            return 1.0 / float(self.C), 0.0
        if self.penalty == "elasticnet":
            r = float(self.l1_ratio)
            return r / float(self.C), (1.0 - r) / float(self.C)
        return 0.0, 1.0 / float(self.C)

    def _class_weights(self, classes, y_idx, sw) -> np.ndarray | None:
        """Per-sample multipliers from ``class_weight`` (None: no class weights)."""
        cw = self.class_weight
        if cw is None:
            return None
        if isinstance(cw, dict):
            known = set(classes.tolist())
            unknown = [k for k in cw if k not in known]
            if unknown:
                raise ValueError(f"class_weight has labels not in the data: {unknown!r}; "
                                 f"classes are {classes.tolist()!r}")
            for k, v in cw.items():
                if isinstance(v, bool) or not isinstance(v, numbers.Real) or \
                        not np.isfinite(v) or v < 0:
                    raise ValueError(f"class_weight[{k!r}] must be a finite number >= 0, "
                                     f"got {v!r}")
        with np.errstate(divide="ignore", invalid="ignore"):
            # "balanced" divides by each class's total weight; a class whose samples all have
            # zero weight gets inf, and its samples (weight 0) keep weight 0
            per_class = compute_class_weight(cw, classes=classes, y=classes[y_idx],
                                             sample_weight=sw)
        per_class = np.where(np.isfinite(per_class), per_class, 0.0)
        return per_class[y_idx]

    # -- fitting -----------------------------------------------------------------------------
    @fit_method
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
            ) -> BoundLogisticRegression:
        """Fit the model to X (t, n_features; dense or sparse) and labels y (t,).

        Returns self.
        """
        self._check_params()
        X, y_idx, classes, sw, sw_given = self._inputs(X, y, sample_weight)
        self.classes_ = classes
        k = 1 if classes.size == 2 else classes.size
        model, center, exact_center = self._objective(X, y_idx, classes.size, sw, sw_given)
        constraints = self._constraints(k, X.shape[1])
        x0 = self._start(classes, k, X.shape[1], constraints)
        callback = progress_printer("BoundLogisticRegression") if self.verbose >= 2 else None
        # "auto" is the solver policy's choice for this objective (zbound.solvers.SolverPolicy)
        policy = SolverPolicy(precision=self.precision)
        result = policy.solve(model, x0, solver=self.solver, constraints=constraints,
                              tol=float(self.tol), max_iter=int(self.max_iter), order=self.order,
                              callback=callback)
        if self.verbose >= 1:
            print(f"[BoundLogisticRegression] {result!r}")
        if not result.converged:
            warnings.warn(
                f"BoundLogisticRegression (solver={result.method!r}) did not converge in "
                f"max_iter={self.max_iter} iterations ({result.message}); increase max_iter, "
                "raise tol, or standardize the features." + scaling_hint(X, sw_given),
                ConvergenceWarning,
                stacklevel=STACKLEVEL)
        self._set_solution(result, k, X.shape[1], center, exact_center)
        self._fitted_classes = classes
        self.solver_result_ = result
        return self

    def _inputs(self, X, y, sample_weight):
        """Validated inputs: (X, class indices, classes, the weights' sum holder, the sample
        weights times the class weights or None for unit weights)."""
        if is_dask_array(X):
            X, y_idx, classes, sw, sw_given, present = self._dask_inputs(X, y, sample_weight)
            if present.size < 2:
                raise ValueError("BoundLogisticRegression needs samples of at least 2 classes "
                                 f"with positive sample_weight; got {present.size}")
            return X, y_idx, classes, sw, sw_given
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                             order="C", y_numeric=False)
        check_class_targets(y)
        sw_given = check_sample_weight(sample_weight, X.shape[0])
        classes, y_idx = label_indices(y)
        per_sample = self._class_weights(classes, y_idx, sw_given)
        if per_sample is not None:
            with np.errstate(over="ignore"):
                sw_given = per_sample if sw_given is None else sw_given * per_sample
                total = float(sw_given.sum())
            if not np.isfinite(total):
                raise ValueError("class_weight x sample_weight sums beyond float64's "
                                 "range; rescale the class weights")
        check_weighted_classes("BoundLogisticRegression", classes, y_idx, sw_given)
        if sw_given is not None:
            check_penalty_against_weights(float(self.C), sw_given)
        # unit weights: no (t,) array of ones
        sw = np.array([float(X.shape[0])]) if sw_given is None else sw_given
        return X, y_idx, classes, sw, sw_given

    def _objective(self, X, y_idx, n_classes, sw, sw_given):
        """The summed objective (the intercept an implicit column of ones, so X is never
        copied; theta = vec([W, b]), b the last entry of each class) with its
        intercept-centering weight; (model, center, whether the centering is exact)."""
        k = 1 if n_classes == 2 else n_classes
        d = X.shape[1] + bool(self.fit_intercept)
        l1, l2 = self._strengths()
        solver = DEFAULT_METHOD if self.solver == "auto" else self.solver
        if (self._sparse_penalty() or METHODS[solver].proximal) and not is_dask_array(X):
            return self._elastic_net_objective(X, y_idx, n_classes, sw_given, k, d, l1, l2)
        pen = np.full((k, d), l2)
        if self.fit_intercept:
            pen[:, -1] = 0.0
        center = 0.0
        exact_center = self.fit_intercept and k > 1 and self.intercept_bounds is None
        if self.fit_intercept and k > 1:
            # eigenvalue of the rank-one term = the typical intercept curvature sum(s) / k
            center = float(sw.sum()) / k**2 * (1.0 if exact_center else _WEAK_CENTER)
        if is_dask_array(X):            # the chunk map runs on the Dask workers
            from zbound.distributed import dask_logistic_objective as build
        else:
            build = logistic_objective
        model = build(X, y_idx.astype(np.intp, copy=False), n_classes, pen.ravel(), sw_given,
                      center, fit_intercept=bool(self.fit_intercept))
        if self.verbose >= 1 and hasattr(model, "passes"):
            print(f"[BoundLogisticRegression] dask: {model.loss!r}")
        return model, center, exact_center

    def _elastic_net_objective(self, X, y_idx, n_classes, sw_given, k, d, l1, l2):
        """The loss plus one ElasticNetPenalty (the form the proximal methods take), the
        intercepts unpenalized: (model, no centering, the sum-zero intercepts exact)."""
        from zbound.models.loss import SoftmaxLoss
        from zbound.models.objective import Objective
        from zbound.models.penalty import ElasticNetPenalty

        if is_dask_array(X):
            raise ValueError(f"penalty={self.penalty!r} takes in-memory X, not a dask array")
        loss = SoftmaxLoss(X, y_idx.astype(np.intp, copy=False), n_classes,
                           sample_weight=sw_given, reference_class=n_classes == 2,
                           fit_intercept=bool(self.fit_intercept))
        L1, L2 = np.full((k, d), l1), np.full((k, d), l2)
        if self.fit_intercept:
            L1[:, -1] = L2[:, -1] = 0.0
        model = Objective(loss, ElasticNetPenalty(L1.ravel(), L2.ravel()))
        return model, 0.0, bool(self.fit_intercept) and k > 1

    def _constraints(self, k: int, n_features: int) -> LinearConstraints | None:
        """``coef_bounds`` and ``intercept_bounds`` as a box on theta (None without)."""
        coef_box = _check_bound_pair("coef_bounds", self.coef_bounds, (k, n_features))
        icpt_box = _check_bound_pair("intercept_bounds", self.intercept_bounds, (k,))
        if coef_box is None and icpt_box is None:
            return None
        d = n_features + bool(self.fit_intercept)
        lb = np.full((k, d), -np.inf)
        ub = np.full((k, d), np.inf)
        if coef_box is not None:
            lb[:, :n_features], ub[:, :n_features] = coef_box
        if icpt_box is not None:
            lb[:, -1], ub[:, -1] = icpt_box
        return LinearConstraints(lb=lb.ravel(), ub=ub.ravel())

    def _start(self, classes, k: int, n_features: int, constraints) -> np.ndarray:
        """Zero, or with ``warm_start`` the previous solution; projected onto the box."""
        d = n_features + bool(self.fit_intercept)
        x0 = np.zeros(k * d)
        if self.warm_start and hasattr(self, "coef_"):
            x0 = self._warm_start_point(classes, k, n_features, d)
        if constraints is not None:
            x0 = np.clip(x0, constraints.lb, constraints.ub)
        return x0

    def _set_solution(self, result, k: int, n_features: int, center: float,
                      exact_center: bool) -> None:
        """``coef_``, ``intercept_`` (the sum-zero representative), ``objective_`` and
        ``n_iter_`` from the solver's result."""
        d = n_features + bool(self.fit_intercept)
        W = result.x.reshape(k, d)
        self.coef_ = np.ascontiguousarray(W[:, :n_features])
        if self.fit_intercept:
            intercept = W[:, -1].copy()
            if exact_center:
                intercept -= intercept.mean()   # the exact sum-zero representative
            self.intercept_ = intercept
        else:
            self.intercept_ = np.zeros(k)
        # J(coef_, intercept_), without the intercept-centering term (zero up to rounding at
        # the sum-zero representative; with intercept bounds the weak term is not part of J)
        shift = float(W[:, -1].sum()) if self.fit_intercept and k > 1 else 0.0
        self.objective_ = float(result.fun) - 0.5 * center * shift * shift
        self.n_iter_ = np.array([result.nit], dtype=np.int32)

    def _dask_inputs(self, X, y, sample_weight):
        """The fit's inputs for a dask array X (y and sample_weight dask or NumPy): labels
        encoded on the workers, only the classes and the (weighted) class counts come back.
        Returns (X, y_idx, classes, sw sum holder, sample weights or None, present classes)."""
        import dask
        import dask.array as da

        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim} dimensions")
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X must be numeric, got dtype {X.dtype}")
        X = _known_chunks(X)
        t = X.shape[0]
        if t == 0:
            raise ValueError("X has no rows")
        X = X.astype(np.float64)
        rows = (X.chunks[0],)
        yd = _known_chunks(y) if is_dask_array(y) else da.from_array(np.asarray(y),
                                                                       chunks=rows)
        if yd.ndim != 1 or yd.shape[0] != t:
            raise ValueError(f"y must have shape ({t},) to match X, got {yd.shape}")
        yd = yd.rechunk(rows)
        classes = np.asarray(da.unique(yd).compute())
        check_classification_targets(classes)
        # every graph built here is named uniquely: dask names a lambda's blocks by its code,
        # not its defaults, and the same key with another task makes a distributed scheduler
        # warn of "different run_spec" (and may give one task's result for the other)
        y_idx = yd.map_blocks(lambda b, c=classes: np.searchsorted(c, b), dtype=np.intp,
                              name=_dask_name("label-index"))
        if sample_weight is None:
            swd = None
        elif is_dask_array(sample_weight):
            swd = _known_chunks(sample_weight)
            if swd.ndim != 1 or swd.shape[0] != t:
                raise ValueError(f"sample_weight must have shape ({t},) to match X, got "
                                 f"{swd.shape}")
            swd = swd.astype(np.float64).rechunk(rows)
        else:
            swd = da.from_array(check_sample_weight(sample_weight, t), chunks=rows)
        # held once (t small entries): the counts below and the loss's passes then read the
        # same blocks, instead of two graphs computing the same keys differently optimized
        y_idx, = dask.persist(y_idx)
        counts = da.bincount(y_idx, minlength=classes.size)
        wcounts = counts if swd is None else da.bincount(y_idx, weights=swd,
                                                          minlength=classes.size)
        counts, wcounts = dask.compute(counts, wcounts)
        cw = self.class_weight
        if cw is not None:
            if isinstance(cw, dict):
                self._class_weights(classes, np.arange(classes.size), None)   # checks labels
                per_class = np.array([float(cw.get(c, 1.0)) for c in classes.tolist()])
            else:   # "balanced": n_samples / (n_classes * weighted counts), as scikit-learn
                per_class = float(wcounts.sum()) / (classes.size * np.asarray(wcounts, float))
            base = da.ones(t, chunks=rows) if swd is None else swd
            swd = base * y_idx.map_blocks(lambda b, w=per_class: w[b], dtype=np.float64,
                                          name=_dask_name("class-weight"))
            wcounts = np.asarray(wcounts, float) * per_class
        if swd is not None:
            swd, = dask.persist(swd)
        present = np.flatnonzero(np.asarray(wcounts) > 0)
        self.n_features_in_ = int(X.shape[1])
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        total = np.array([float(np.sum(wcounts))])
        return X, y_idx, classes, total, swd, present

    def _warm_start_point(self, classes, k: int, n_features: int, d: int) -> np.ndarray:
        """theta from the previous fit's ``coef_`` and ``intercept_`` (scikit-learn's
        warm_start)."""
        prev_classes = getattr(self, "_fitted_classes", None)
        if prev_classes is None or not np.array_equal(prev_classes, classes):
            raise ValueError("warm_start=True needs the same classes as the previous fit; got "
                             f"{classes.tolist()!r}, before "
                             f"{None if prev_classes is None else prev_classes.tolist()!r}")
        if self.coef_.shape != (k, n_features):
            raise ValueError(f"warm_start=True: the previous coef_ has shape {self.coef_.shape},"
                             f" this fit needs ({k}, {n_features})")
        W = np.zeros((k, d))
        W[:, :n_features] = self.coef_
        if self.fit_intercept:
            W[:, -1] = self.intercept_
        if not np.isfinite(W).all():
            raise ValueError("warm_start=True: the previous solution is not finite")
        return W.ravel()

    # -- prediction --------------------------------------------------------------------------
    def _dask_map(self, method: str, X):
        """``method`` applied block by block to a dask array X (a lazy dask array)."""
        check_is_fitted(self)
        fn = getattr(self, method)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} columns, got shape {X.shape}")
        X = X.rechunk({1: -1})
        name = _dask_name(method)        # the bound method's key would not see the weights
        if method == "predict":
            return X.map_blocks(fn, drop_axis=1, dtype=self.classes_.dtype, name=name)
        if method == "decision_function" and self.coef_.shape[0] == 1:
            return X.map_blocks(fn, drop_axis=1, dtype=np.float64, name=name)
        return X.map_blocks(fn, dtype=np.float64, name=name,
                            chunks=(X.chunks[0], (max(2, self.coef_.shape[0]),)))

    def _lazy(self, method: str, X):
        """A dask array X gives a lazy dask array, for every prediction method."""
        return self._dask_map(method, X) if is_dask_array(X) else None


class BoundLogisticRegressionCV(LinearClassifier, BaseEstimator):
    """Logistic regression whose C (and ``l1_ratio``) is chosen by cross-validation.

    For every fold and ``l1_ratio``, :class:`~zbound.BoundLogisticRegression` fits the path of
    ``Cs`` from the smallest C up, each fit warm-started at the last; the C (and ratio) with
    the best mean score over the folds is refitted on all the data (``refit=True``), or its
    folds' coefficients averaged (``refit=False``), as in ``LogisticRegressionCV``.

    Parameters
    ----------
    Cs : int or sequence of float > 0, default 10
        The C values, or how many on a log grid from 1e-4 to 1e4.
    penalty : {"l2", "l1", "elasticnet"}, default "l2"
        As :class:`~zbound.BoundLogisticRegression`'s.
    l1_ratios : sequence of float in [0, 1] or None, default None
        The elastic net's L1 shares to try (``penalty="elasticnet"``, where it is required).
    cv : int, cross-validation generator or iterable, default None
        As scikit-learn's ``check_cv`` (None: 5-fold stratified).
    scoring : str, callable or None, default None
        A scikit-learn scorer (None: accuracy).
    refit : bool, default True
    fit_intercept : bool, default True
    solver : str, default "auto"
    tol : float >= 0, default 1e-4
    max_iter : int >= 1, default 1000
    class_weight : None, "balanced" or dict, default None
    verbose : int, default 0

    Attributes
    ----------
    classes_, coef_, intercept_, n_features_in_ : as :class:`~zbound.BoundLogisticRegression`
    Cs_ : (n_cs,) the C grid, ascending
    l1_ratios_ : (n_l1_ratios,) the ratios tried (``[None]`` without an elastic net)
    C_ : float, the chosen C
    l1_ratio_ : float or None, the chosen ratio
    scores_ : (n_folds, n_l1_ratios, n_cs) the validation scores
    coefs_paths_ : (n_folds, n_l1_ratios, n_cs, n_coef_rows, n_features + fit_intercept)
    n_iter_ : (n_folds, n_l1_ratios, n_cs) solver iterations of every fit

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from zbound import BoundLogisticRegressionCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = BoundLogisticRegressionCV(Cs=8, penalty="l1", cv=3).fit(X, y)
    >>> clf.scores_.shape
    (3, 1, 8)
    >>> bool(clf.C_ in clf.Cs_), bool(clf.score(X, y) > 0.95)
    (True, True)
    """

    def __init__(self, Cs=10, penalty: str = "l2", l1_ratios=None, cv=None, scoring=None,
                 refit: bool = True, fit_intercept: bool = True, solver: str = "auto",
                 tol: float = 1e-4, max_iter: int = 1000, class_weight=None,
                 verbose: int = 0):
        self.Cs = Cs
        self.penalty = penalty
        self.l1_ratios = l1_ratios
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.verbose = verbose

    _parameter_constraints: dict = {
        "Cs": [Number(Integral, 1, None, closed="left"), "array-like"],
        "penalty": [StrOptions(Choices("l2", "l1", "elasticnet"))],
        "l1_ratios": [None, "array-like"],
        "cv": ["cv_object"],
        "scoring": [None, str, callable],
        "refit": ["boolean"],
        "fit_intercept": ["boolean"],
        "solver": [str],
        "tol": [Number(Real, 0, np.inf, closed="left")],
        "max_iter": [Number(Integral, 1, None, closed="left")],
        "class_weight": [None, dict, StrOptions(Choices("balanced"))],
        "verbose": [Number(Integral, 0, None, closed="left")],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _grids(self):
        if isinstance(self.Cs, Integral):
            Cs = np.logspace(-4, 4, int(self.Cs))
        else:
            Cs = np.sort(np.asarray(self.Cs, dtype=np.float64).ravel())
            if Cs.size == 0 or not (np.isfinite(Cs).all() and (Cs > 0).all()):
                raise ValueError("Cs must be a positive count or finite values > 0")
        if self.penalty == "elasticnet":
            if self.l1_ratios is None:
                raise ValueError("penalty='elasticnet' needs l1_ratios (values in [0, 1])")
            ratios = np.asarray(self.l1_ratios, dtype=np.float64).ravel()
            if ratios.size == 0 or not ((ratios >= 0) & (ratios <= 1)).all():
                raise ValueError(f"l1_ratios must lie in [0, 1], got {self.l1_ratios!r}")
            return Cs, list(ratios)
        return Cs, [None]

    def _base(self, ratio) -> BoundLogisticRegression:
        return BoundLogisticRegression(
            penalty=self.penalty, l1_ratio=ratio, fit_intercept=self.fit_intercept,
            solver=self.solver, tol=self.tol, max_iter=self.max_iter,
            class_weight=self.class_weight, warm_start=True, verbose=max(self.verbose - 1, 0))

    @fit_method
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
            ) -> BoundLogisticRegressionCV:
        """Cross-validate the grid, then refit (or average) at the best point."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        check_class_targets(y)
        Cs, ratios = self._grids()
        cv = check_cv(self.cv, y, classifier=True)
        folds = list(cv.split(X, y))
        scorer = get_scorer(self.scoring) if self.scoring is not None else None
        sw = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        scores = np.empty((len(folds), len(ratios), Cs.size))
        n_iter = np.zeros(scores.shape, dtype=np.int64)
        paths = []
        for f, (train, test) in enumerate(folds):
            fold_paths = []
            for r, ratio in enumerate(ratios):
                est, path = self._base(ratio), []
                for c, C in enumerate(Cs):
                    est.set_params(C=float(C))
                    est.fit(X[train], y[train],
                            sample_weight=None if sw is None else sw[train])
                    scores[f, r, c] = est.score(X[test], y[test]) if scorer is None else \
                        scorer(est, X[test], y[test])
                    n_iter[f, r, c] = int(np.ravel(est.n_iter_)[0])
                    path.append(np.hstack([est.coef_, est.intercept_[:, None]])
                                if self.fit_intercept else est.coef_.copy())
                fold_paths.append(path)
            paths.append(fold_paths)
        mean = scores.mean(axis=0)
        r, c = np.unravel_index(int(np.argmax(mean)), mean.shape)
        self.Cs_, self.l1_ratios_ = Cs, np.array(ratios, dtype=object if ratios == [None]
                                                    else np.float64)
        self.C_, self.l1_ratio_ = float(Cs[c]), ratios[r]
        self.scores_, self.n_iter_ = scores, n_iter
        self.coefs_paths_ = np.array(paths)
        if self.refit:
            best = clone(self._base(self.l1_ratio_)).set_params(C=self.C_, warm_start=False)
            best.fit(X, y, sample_weight=sw)
            self.classes_ = best.classes_
            self.coef_, self.intercept_ = best.coef_, best.intercept_
            self.solver_result_ = best.solver_result_
        else:
            avg = self.coefs_paths_[:, r, c].mean(axis=0)
            self.classes_ = np.unique(y)
            self.coef_ = avg[:, :-1].copy() if self.fit_intercept else avg.copy()
            self.intercept_ = avg[:, -1].copy() if self.fit_intercept else \
                np.zeros(avg.shape[0])
        return self
