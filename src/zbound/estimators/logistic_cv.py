"""``BoundLogisticRegressionCV``: :class:`~zbound.BoundLogisticRegression` with C (and the
elastic net's ``l1_ratio``) chosen by cross-validation, in scikit-learn's
``LogisticRegressionCV`` dialect.

Each fold fits a path: the C values from the strongest penalty to the weakest, every fit
started from the last one (``warm_start``), which for L1 penalties starts each fit near its
sparse solution and keeps its working sets small.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, clone
from sklearn.metrics import get_scorer
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import StrOptions

from zbound.estimators._params import LinearClassifier, fit_method
from zbound.estimators.logistic import BoundLogisticRegression
from zbound.utils.validation import Choices, Number, check_class_targets, validate_data


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
