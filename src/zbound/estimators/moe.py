"""Mixture of experts estimator: k experts with a softmax gate, trained by EM by default.

See :mod:`zbound.moe` for the model and the algorithms, and ``docs/moe.md``.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import check_random_state
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import StrOptions
from sklearn.utils._tags import ClassifierTags, RegressorTags
from sklearn.utils.validation import check_is_fitted

from zbound.estimators._params import (
    DEPRECATED,
    STACKLEVEL,
    RenamedParameters,
    fit_method,
    progress_printer,
    renamed,
    renamed_attribute,
)
from zbound.models.loss import check_design_magnitude, check_sample_weight
from zbound.moe.em import MSTEPS
from zbound.moe.model import EXPERTS, GatedMixture, MixtureLikelihood, MoEProblem
from zbound.solvers import SolverPolicy
from zbound.solvers.base import MethodNames, solver_class
from zbound.utils.linalg import column_units
from zbound.utils.validation import (
    PENALTY,
    SCALE_MAX,
    Choices,
    Number,
    check_class_targets,
    check_score_labels,
    check_weighted_classes,
    finite_prediction,
    label_indices,
    relative_weights,
    scaling_hint,
    validate_data,
)

#: the registered training methods of a mixture are named "moe-<method>"
_PREFIX = "moe-"


def _mixture_method(info) -> bool:
    """A registered method that trains a mixture of experts (MoEProblem's capabilities)."""
    return info.requires in (MixtureLikelihood, GatedMixture)


#: the ``method`` values: the registered mixture methods without their prefix
METHODS = Choices(*(name.removeprefix(_PREFIX) for name in MethodNames(_mixture_method)))


def _is_logistic(est) -> bool:
    """Logistic experts: asked for, or chosen by ``expert="auto"`` at fit time."""
    return est.expert == "logistic" or (est.expert == "auto"
                                        and getattr(est, "expert_", None) == "logistic")


def expert_for(y) -> str:
    """What ``expert="auto"`` fits to targets ``y``: "logistic" (a classifier) for class
    labels, meaning y of any dtype but a floating one (integers, booleans, strings, objects),
    "linear" (a regressor) for floating-point y. A float array of class codes, or an integer
    array of counts to regress on, says so with ``expert=``."""
    return "linear" if np.asarray(y).dtype.kind in "fc" else "logistic"


#: the default ``tol`` of each kind of stopping rule (``tol=None``)
DEFAULT_TOL = {"gradient": 1e-4, "decrease": 1e-7}
#: largest |y| of linear experts: the noise variances are in y's units squared
_MAX_TARGET = 1e150


def _single_logistic(problem: MoEProblem) -> np.ndarray:
    """(m, p): one logistic expert fitted to all the data (its penalty, the problem's sample
    weights), by the solver ``BoundLogisticRegression`` runs on this shape, to its default
    tol: a start, perturbed before use, needs no tighter fit (an exact M-step with every
    responsibility on one expert would also fit the gate and the empty experts)."""
    from zbound.models.loss import SoftmaxLoss
    from zbound.models.objective import Objective
    from zbound.models.penalty import L2Penalty

    size = problem.m * problem.p
    pen = problem.penalty[problem.n_gate:problem.n_gate + size]
    loss = SoftmaxLoss(problem.Xb, problem.y, problem.n_classes, problem.v,
                       reference_class=True)
    with np.errstate(over="ignore", under="ignore"):
        result = SolverPolicy().solve(Objective(loss, L2Penalty(pen)), np.zeros(size), tol=1e-4,
                                      max_iter=1000)
    return result.x.reshape(problem.m, problem.p)


class MixtureOfExperts(RenamedParameters, BaseEstimator):
    """Mixture of ``n_components`` linear or logistic experts with a softmax gate on x.

    Maximizes the (weighted) mean log-likelihood minus ``alpha / 2 * ||weights||^2`` (intercepts not
    penalized); see :mod:`zbound.moe.model`. With ``expert="linear"`` it is a regressor
    (Gaussian experts, one noise variance per expert, fitted or fixed), with
    ``expert="logistic"`` a classifier (softmax experts; binary problems use the binary
    logistic expert). The default, ``expert="auto"``, is a classifier for class labels and a
    regressor for real-valued targets (:func:`expert_for`).

    Parameters
    ----------
    n_components : int >= 1, default 2
        Number of experts.
    expert : {"auto", "linear", "logistic"}, default "auto"
        "auto": "logistic" when y holds class labels (any dtype but floating point), "linear"
        when y is floating point. The choice is ``expert_``. Until it is fitted, an
        ``expert="auto"`` estimator reports the tags of a regressor.
    noise : None or float > 0, default None
        None fits each linear expert's noise variance; a number fixes it (the paper: 1).
    alpha : float >= 0, default 1e-4
        L2 strength on the mean objective (``SGDClassifier``'s convention). Keeps a separable
        gate or expert finite. The linear experts' weights are penalized in units of y's root
        mean square (alpha / 2 ``||w / rms(y)||^2``), so the fit does not depend on the units
        of y.
    solver : {"auto", "em", "squarem", "lbfgs", "gradient-em", "gd", "adam"}, default "auto"
        "auto": "lbfgs" (quasi-Newton on the marginal likelihood) for logistic experts, "em"
        for linear ones (:meth:`zbound.solvers.SolverPolicy.mixture`). The choice is
        ``solver_``. "squarem": EM
        accelerated by SQUAREM, monotone; with linear experts faster than "em" where EM
        crawls, but it may settle in another local optimum; with logistic experts it can
        speed into experts collapsing onto no data, whose M-steps are slow.
    m_step : {"newton-bound", "bound", "squarem", "gd"}, default "newton-bound"
        EM's M-step solver: the library's bound-safeguarded Newton, or "gd", the paper's
        inner gradient loop.
    learning_rate : float, or (experts, gate) pair for "gradient-em"; default 1.0
        Step size of the first-order methods (and of the inner loop of ``m_step="gd"``).
    max_iter : int >= 1, default 200
    tol : None or float >= 0, default None
        "lbfgs": stop when the gradient's inf-norm is <= tol * max(1, abs(objective)) (default
        1e-4, scikit-learn's ``LogisticRegression`` rule on the same mean objective) or an
        iteration lowers it by <= 2.2e-9 relative; the other methods: stop when an iteration
        lowers the objective by <= tol * max(1, abs(objective)) (default 1e-7).
    n_init : int >= 1, default 1
        Random starts; the fit with the lowest objective is kept.
    fit_intercept : bool, default True
    random_state : None, int or RandomState
    init_scale : float >= 0, default 1.0
        Spread of the random start (gate weights and the experts' perturbations around a single
        fitted expert), in units of 1 / (std(x) sqrt(d)).
    verbose : int, default 0
        1: each start's result; 2: a line per iteration too.
    n_experts, reg, method, mstep : deprecated
        The old names of ``n_components``, ``alpha``, ``solver`` and ``m_step``
        (FutureWarning; removed in 0.2).

    Attributes
    ----------
    gate_coef_ : (k - 1, n_features), ``gate_intercept_`` : (k - 1,)
        Gate scores of experts 1..k-1 (expert 0 is the reference with score 0).
    coef_ : (k, n_features) linear, or (k, n_classes - 1, n_features) logistic
    intercept_ : (k,) or (k, n_classes - 1)
    noise_variance_ : (k,) (linear experts)
    classes_ : (n_classes,) (logistic experts)
    objective_ : float, the objective at the fitted attributes, to rounding::

            sum_i v_i * -log sum_j g_j(x_i) p_j(y_i | x_i) + alpha / 2 * penalty

        with v = sample_weight / sum(sample_weight) (1 / n without weights); g(x) the
        softmax of ``[0, gate_coef_ @ x + gate_intercept_]``; p_j the Gaussian density with
        mean ``coef_[j] @ x + intercept_[j]`` and variance ``noise_variance_[j]`` (linear), or
        the softmax of ``[0, coef_[j] @ x + intercept_[j]]`` at class index y (logistic);
        penalty = ``||gate_coef_||^2 + ||coef_||^2`` (logistic) or ``||gate_coef_||^2 +
        ||coef_||^2 / rms(y)^2`` with rms(y) = sqrt(sum_i v_i y_i^2) (linear).
    n_iter_ : int, iterations of the kept start
    solver_ : str, the solver run ("auto" resolved)
    solver_result_ : :class:`zbound.solvers.Result` of the kept start (its ``fun`` and
        ``trace.objective`` in the units of ``objective_``)
    collapsed_components_ : tuple of experts left with less than one sample's responsibility
        (or at the noise-variance floor); a warning names them
    expert_mass_ : (k,) share of the data each expert is responsible for

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from zbound import MixtureOfExperts
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MixtureOfExperts(n_components=2, random_state=0).fit(X, y)
    >>> round(clf.score(X, y), 2)
    0.98
    >>> rng = np.random.default_rng(0)                     # two regimes of a regression
    >>> x = rng.uniform(-1, 1, size=(200, 1))
    >>> t = np.where(x[:, 0] > 0, 2 * x[:, 0], -x[:, 0]) + 0.05 * rng.normal(size=200)
    >>> reg = MixtureOfExperts(n_components=2, expert="linear", random_state=0).fit(x, t)
    >>> reg.predict(np.array([[0.5], [-0.5]])).round(1)
    array([1. , 0.5])
    """

    _renamed_parameters = {"n_experts": "n_components", "reg": "alpha", "method": "solver",
                           "mstep": "m_step"}

    def __init__(self, n_components: int = 2, expert: str = "auto", noise: float | None = None,
                 alpha: float = 1e-4, solver: str = "auto", m_step: str = "newton-bound",
                 learning_rate: float | tuple = 1.0, max_iter: int = 200,
                 tol: float | None = None, n_init: int = 1, fit_intercept: bool = True,
                 random_state=None, init_scale: float = 1.0, verbose: int = 0,
                 n_experts=DEPRECATED, reg=DEPRECATED, method=DEPRECATED, mstep=DEPRECATED):
        self.n_components = n_components
        self.expert = expert
        self.noise = noise
        self.alpha = alpha
        self.solver = solver
        self.m_step = m_step
        self.n_experts = n_experts
        self.reg = reg
        self.method = method
        self.mstep = mstep
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.init_scale = init_scale
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if _is_logistic(self):
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags()
        else:
            tags.estimator_type = "regressor"
            tags.regressor_tags = RegressorTags()
        return tags

    # -- checks ---------------------------------------------------------------------------------
    _parameter_constraints: dict = {
        "n_components": [Number(Integral, 1, None, closed="left")],
        "expert": [StrOptions(Choices("auto", *EXPERTS))],
        "noise": [None, Number(Real, 0, np.inf, closed="neither")],
        "alpha": [PENALTY],
        "solver": [StrOptions(Choices("auto", *METHODS))],
        "m_step": [StrOptions(MSTEPS)],
        "n_experts": renamed(Number(Integral, 1, None, closed="left")),
        "reg": renamed(PENALTY),
        "method": renamed(StrOptions(Choices("auto", *METHODS))),
        "mstep": renamed(StrOptions(MSTEPS)),
        "learning_rate": [Number(Real, 0, np.inf, closed="neither"), tuple, list],
        "max_iter": [Number(Integral, 1, None, closed="left")],
        "tol": [None, Number(Real, 0, np.inf, closed="left")],
        "n_init": [Number(Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "random_state": ["random_state"],
        "init_scale": [Number(Real, 0, SCALE_MAX, closed="both")],
        "verbose": [Number(Integral, 0, None, closed="left")],
    }

    def _check_params(self):
        """The (experts, gate) learning-rate pair (a pair's entries are checked here; every
        parameter alone by ``_parameter_constraints``)."""
        lr = self.learning_rate
        pair = tuple(lr) if isinstance(lr, tuple | list) else (lr, lr)
        if len(pair) != 2 or not all(isinstance(a, numbers.Real) and not isinstance(a, bool)
                                     and np.isfinite(a) and a > 0 for a in pair):
            raise ValueError(f"learning_rate must be a number > 0 or a pair of them, got {lr!r}")
        return pair

    # -- fitting --------------------------------------------------------------------------------
    @fit_method
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
            ) -> MixtureOfExperts:
        """Fit from ``n_init`` random starts and keep the best. Returns self."""
        lr = self._check_params()
        expert = expert_for(y) if self.expert == "auto" else self.expert
        logistic = expert == "logistic"
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=not logistic)
        self.expert_ = expert
        solver = self._param("solver")
        self.solver_ = SolverPolicy.mixture(expert) if solver == "auto" else solver
        # the objective weighs rows over the weights' sum: their scale is free
        sw = relative_weights(check_sample_weight(sample_weight, X.shape[0]))
        if sw is not None and not sw.sum() > 0:
            raise ValueError("MixtureOfExperts: every sample_weight is zero: nothing to fit")
        n = X.shape[0] if sw is None else int(np.count_nonzero(sw))
        k = int(self._param("n_components"))
        if n < 2 * k:
            raise ValueError(f"a mixture of k={k} experts needs at least 2 samples per expert; "
                             f"got {n} sample(s) with non-zero weight (n_samples = {n})")
        if logistic:
            check_class_targets(y)
            self.classes_, y_idx = label_indices(y)
            check_weighted_classes("MixtureOfExperts (logistic experts)", self.classes_, y_idx,
                                   sw)
            target = y_idx.astype(np.intp)
            self._y_scale = 1.0
            noise = self.noise
        else:
            # Fitted to y / sigma (sigma: y's weighted root mean square), so that the units of
            # y do not decide how much the penalty weighs: the Gaussian likelihood with fitted
            # variances is the same in any units, a penalty on weights in y's units is not
            # (y in units of 1e8: R^2 0.68 against 0.99). The weights and variances are
            # reported in y's units; the objective is the likelihood of y.
            target = np.asarray(y, dtype=np.float64)
            big = float(np.max(np.abs(target)))
            if big > _MAX_TARGET:
                raise ValueError(f"y has values of magnitude {big:.3g}: the noise variances "
                                 f"(squares of y's units) would overflow float64 (|y| must "
                                 f"stay below {_MAX_TARGET:.0e}); rescale y")
            self._y_scale = _rms(target, sw)
            target = target / self._y_scale
            noise = None if self.noise is None else float(self.noise) / self._y_scale ** 2
            if noise is not None and not 1e-200 <= noise <= 1e200:
                raise ValueError(f"noise={self.noise!r} is {noise:.3g} times y's mean square: "
                                 "a fixed noise variance must lie within 1e-200 and 1e200 of "
                                 "it for the likelihood's terms to stay in float64's range")
        # Fitted on X / u with the penalty on the weights of X (MoEProblem's ``units``): the
        # same problem in coordinates where no column's units steer the solver (a column in
        # units of 1e6 beside standardized ones stopped L-BFGS at twice the objective of
        # the standardized fit, reported converged). u: column_units, the ridge against a
        # logistic column's curvature s^2 / 4 in the mean objective.
        check_design_magnitude(X, sw)          # the loss's own range check, before scaling
        units = column_units(X, sw, 4.0 * float(self._param("alpha")))
        problem = MoEProblem(X / units, target, k, expert,
                             n_classes=len(self.classes_) if logistic else None,
                             sample_weight=sw, reg=float(self._param("alpha")), noise=noise,
                             fit_intercept=self.fit_intercept, units=units)
        rng = check_random_state(self.random_state)
        best = None
        for _ in range(self.n_init):
            theta0 = self._start(problem, rng)
            fit = self._run(problem, theta0, lr)
            if self.verbose:
                print(f"[MixtureOfExperts] {fit!r}")
            if best is None or fit.fun < best.fun:
                best = fit
        self._store(problem, best)
        self._warn_outcome(best, X, sw)
        return self

    def _warn_outcome(self, best, X, sw) -> None:
        """The fit's warnings: not converged, diverged, collapsed experts."""
        if not best.converged and not best.info.get("diverged", False):
            warnings.warn(f"MixtureOfExperts ({self.solver_}) did not converge in max_iter="
                          f"{self.max_iter} iterations." + scaling_hint(X, sw),
                          ConvergenceWarning,
                          stacklevel=STACKLEVEL + 1)
        if best.info.get("diverged", False):
            warnings.warn(f"the objective became non-finite with learning_rate={self.learning_rate}"
                          "; the last finite iterate is kept", ConvergenceWarning,
                          stacklevel=STACKLEVEL + 1)
        if self.collapsed_components_:
            warnings.warn(f"experts {list(self.collapsed_components_)} collapsed (responsibility "
                          "for less than one sample, or noise variance at its floor); fewer "
                          "experts may fit as well", UserWarning, stacklevel=STACKLEVEL + 1)

    def _start(self, problem: MoEProblem, rng) -> np.ndarray:
        """A weight-consistent random start: a single expert fitted to all the data
        (logistic: :func:`_single_logistic`; linear: one exact M-step with every
        responsibility on it), plus random perturbations (and a random gate)."""
        v = problem.v
        Xb = problem.Xb
        xs = np.sqrt(v @ (Xb - v @ Xb) ** 2)
        if problem.fit_intercept:
            xs[-1] = 1.0
        # a constant column gets no random weight: any weight on it would only add penalty
        # (1 / its spread would be huge), and the objective could not move it back but slowly
        flat = xs <= 1e-8 * max(float(xs.max()), 1e-300)
        unit = np.where(flat, 0.0, float(self.init_scale) / (np.where(flat, 1.0, xs)
                                                             * np.sqrt(problem.p)))
        k, m, p = problem.k, problem.m, problem.p
        gate = rng.normal(size=(k - 1, p)) * unit
        if problem.expert == "logistic":
            coef = _single_logistic(problem) + rng.normal(size=(k, m, p)) * unit
            return problem.pack(gate, coef)
        from zbound.moe.em import MStep

        R = np.zeros((problem.n_samples, k))
        R[:, 0] = 1.0
        base = problem.pack(np.zeros((k - 1, p)), np.zeros((k, p)),
                            np.full(k, np.log(problem.y_var)) if problem.fit_var else None)
        single = problem.unpack(MStep(problem, "newton-bound", 1e-6)(base, R))
        res = problem.y - Xb @ single.coef[0]
        sd = float(np.sqrt(max(v @ res ** 2, 1e-12)))
        coef = single.coef[0] + rng.normal(size=(k, p)) * unit * sd
        log_var = np.full(k, np.log(max(sd * sd, problem.min_variance)))
        return problem.pack(gate, coef, log_var)

    def _run(self, problem, theta0, lr):
        """The registered method "moe-<method>" with the options it takes: the M-step solver
        and its inner step (EM), one step size, or the (experts, gate) pair."""
        cls = solver_class(_PREFIX + self.solver_)
        given = {"mstep": self._param("m_step"), "inner_lr": float(lr[0]), "lr": float(lr[0]),
                 "lr_experts": float(lr[0]), "lr_gate": float(lr[1])}
        opts = {k: v for k, v in given.items() if k in cls.options}
        if self.solver_ == "lbfgs":
            tol = DEFAULT_TOL["gradient"] if self.tol is None else float(self.tol)
            stop = {"tol": tol, "ftol": 2.2e-9}
        else:
            tol = DEFAULT_TOL["decrease"] if self.tol is None else float(self.tol)
            stop = {"tol": 0.0, "ftol": tol}
        callback = progress_printer("MixtureOfExperts") if self.verbose >= 2 else None
        solver = cls(max_iter=int(self.max_iter), callback=callback, **stop, **opts)
        return solver.run(problem, theta0)

    def _store(self, problem, fit):
        P = problem.unpack(problem.original(fit.x))
        shift = 0.0
        if problem.expert == "linear":
            # back to y's units: weights and intercepts times sigma, variances times sigma^2,
            # and the mean negative log-likelihood of y is that of y / sigma plus log sigma
            c = self._y_scale
            P.coef *= c
            if problem.fit_var:
                P.log_var += 2.0 * np.log(c)
            self.noise_variance_ = np.exp(P.log_var) if problem.fit_var else \
                np.full(problem.k, float(self.noise))
            shift = float(np.log(c))
        split = -1 if self.fit_intercept else None
        self.gate_coef_ = P.gate[:, :split].copy()
        self.gate_intercept_ = P.gate[:, -1].copy() if self.fit_intercept else \
            np.zeros(P.gate.shape[0])
        self.coef_ = P.coef[..., :split].copy()
        self.intercept_ = P.coef[..., -1].copy() if self.fit_intercept else \
            np.zeros(P.coef.shape[:-1])
        self._theta = problem.pack(P.gate, P.coef, P.log_var if problem.fit_var else None)
        self.objective_ = float(fit.fun) + shift
        self.n_iter_ = int(fit.nit)
        self.solver_result_ = dataclasses.replace(
            fit, x=self._theta.copy(), jac=None, fun=self.objective_,
            trace=dataclasses.replace(fit.trace, objective=np.asarray(fit.trace.objective)
                                      + shift))
        self.collapsed_components_ = tuple(fit.info.get("collapsed", ()))
        R = problem.responsibilities(fit.x)
        self.expert_mass_ = problem.expert_mass(R)
        self._predictor = _strip(problem)
        if problem.expert == "linear" and not problem.fit_var:
            self._predictor.noise = float(self.noise)      # y's units, as _theta

    # -- prediction -----------------------------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self)
        return validate_data(self, X, dtype=np.float64, reset=False)

    def gate_proba(self, X: ArrayLike) -> np.ndarray:
        """(n, k) gate probabilities P(z = j | x)."""
        X = self._check_X(X)
        return np.exp(finite_prediction(self._predictor.log_gate, self._theta,
                                        self._predictor.design(X)))

    @available_if(_is_logistic)
    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """(n, n_classes) P(y | x) = sum_j P(z = j | x) P(y | x, z = j) (logistic experts)."""
        X = self._check_X(X)
        return finite_prediction(self._predictor.predict_proba, self._theta, X)

    @available_if(_is_logistic)
    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """(n, n_classes) log P(y | x), computed in log space (logistic experts)."""
        X = self._check_X(X)
        return finite_prediction(self._predictor.predict_log_proba, self._theta, X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Logistic experts: the most probable class; linear: E[y | x], the gate-weighted mean
        of the experts' predictions."""
        X = self._check_X(X)
        if self.expert_ == "logistic":
            return self.classes_[np.argmax(
                finite_prediction(self._predictor.predict_proba, self._theta, X), 1)]
        return finite_prediction(self._predictor.predict_mean, self._theta, X)

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
              ) -> float:
        """Accuracy (logistic experts; labels never seen in fit raise a ValueError, as in
        every classifier here) or R^2 (linear experts)."""
        if _is_logistic(self):
            check_is_fitted(self)
            check_score_labels(self.classes_, y)
            return accuracy_score(y, self.predict(X), sample_weight=sample_weight)
        return r2_score(y, self.predict(X), sample_weight=sample_weight)

    method_ = renamed_attribute("method_", "solver_")
    collapsed_experts_ = renamed_attribute("collapsed_experts_", "collapsed_components_")

    objective_curve_ = renamed_attribute("objective_curve_", "solver_result_.trace.objective")


def _rms(y: np.ndarray, sample_weight) -> float:
    """The weighted root mean square of y without overflow (1 for y = 0)."""
    m = float(np.max(np.abs(y))) if y.size else 0.0
    if not m > 0.0:
        return 1.0
    w = np.ones(y.size) if sample_weight is None else sample_weight
    r = m * float(np.sqrt((w @ (y / m) ** 2) / w.sum()))
    return r if np.isfinite(r) and r > 0.0 else 1.0


def _strip(problem: MoEProblem) -> MoEProblem:
    """A copy of the problem's layout without its training data (what prediction needs)."""
    import copy

    out = copy.copy(problem)
    for name in ("Xb", "y", "Y", "v", "sample_weight", "_label_index"):
        if hasattr(out, name):
            setattr(out, name, None)
    return out
