"""The data of an ``estimators`` run: scikit-learn's bundled sets, scaled and split, synthetic
text-classification shapes (tf-idf rows over Zipf-distributed columns), SSL Text where the
benchmark data is there, a streamed multinomial problem, two-class draws in raw units, and the
objectives every method is scored on."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import log_expit, logsumexp


def scaled_split(name: str, seed: int = 0):
    """(X, Xt, y, yt): a bundled data set (digits, breast_cancer), 75 / 25 split, scaled on
    the training rows."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), scaler.transform(Xt), y, yt


def cv_accuracy(make, name: str, folds: int = 5, seed: int = 0) -> float:
    """Out-of-fold accuracy of ``make()`` by stratified ``folds``-fold cross-validation of a
    bundled data set, each fold scaled on its training rows: every row is predicted once, by
    the fit that did not see it, and the accuracy is over all rows (one 75 / 25 split decides
    by a test row or two on breast_cancer; five folds see every row once). Pooled, not the
    mean of the folds' accuracies: folds of 113 and 114 rows would weigh their rows
    differently, and two models that get the same rows right in total could differ."""
    import warnings

    from sklearn import datasets
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    correct = 0
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y):
        scaler = StandardScaler().fit(X[train])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make().fit(scaler.transform(X[train]), y[train])
        correct += int(np.sum(est.predict(scaler.transform(X[test])) == y[test]))
    return correct / X.shape[0]


def zipf_text(t: int, d: int, k: int, nnz: int = 50, seed: int = 0):
    """(X CSR, y): ``t`` tf-idf rows over ``d`` columns drawn with Zipf(1.1) frequencies,
    about ``nnz`` stored entries a row; labels from a sparse random linear model over the
    columns (``k`` classes), noise of a tenth of the scores' spread."""
    from sklearn.feature_extraction.text import TfidfTransformer

    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1) ** 1.1
    p /= p.sum()
    cols = rng.choice(d, size=t * nnz, p=p)
    rows = np.repeat(np.arange(t), nnz)
    X = sp.csr_matrix((np.ones(t * nnz), (rows, cols)), shape=(t, d))
    X.sum_duplicates()
    X = TfidfTransformer().fit_transform(X).tocsr()
    W = sp.random(d, k, density=0.05, random_state=seed, format="csr",
                  data_rvs=rng.standard_normal)
    S = np.asarray((X @ W).todense())
    S += 0.1 * max(float(S.std()), 1e-12) * rng.standard_normal((t, k))
    y = (S[:, 0] > np.median(S[:, 0])).astype(np.intp) if k == 2 else S.argmax(axis=1)
    return X, y


def synthetic_multiclass(t: int = 3000, d: int = 20, k: int = 5, seed: int = 0):
    """(X, Xt, y, yt): a ``k``-class Gaussian multinomial problem, 2 / 3 for training."""
    rng = np.random.default_rng(seed)
    n = t + t // 2
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((k, d))
    P = np.exp(X @ W.T - logsumexp(X @ W.T, axis=1, keepdims=True))
    y = (P.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return X[:t], X[t:], y[:t], y[t:]


def stream(t: int, d: int, k: int, seed: int = 0):
    """(X, y): a ``k``-class multinomial problem in ``t`` rows for ``partial_fit``."""
    X, _, y, _ = synthetic_multiclass(t, d, k, seed)
    return X, y


def two_class_draw(t: int, d: int, seed: int, raw: bool):
    """(X, y): scikit-learn's ``make_classification`` (half the columns informative); ``raw``:
    each column then multiplied by 10^U(-2, 2) and shifted by U(-50, 50), as measurements in
    their own units are; else standardized."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(n_samples=t, n_features=d, n_informative=max(1, d // 2),
                               n_redundant=min(2, d - max(1, d // 2)), random_state=seed)
    if raw:
        rng = np.random.default_rng(seed)
        return X * 10.0 ** rng.uniform(-2, 2, d) + rng.uniform(-50, 50, d), y
    return StandardScaler().fit_transform(X), y


def logistic_objective(X, y, coef, intercept, C: float) -> float:
    """sum_j log-loss_j + 1 / (2 C) ||coef||^2 (intercepts unpenalized): binary with one
    weight vector, else multinomial; the objective scikit-learn's ``LogisticRegression`` and
    the library's ``BoundLogisticRegression`` minimize."""
    coef = np.atleast_2d(coef)
    Z = np.asarray(X @ coef.T) + np.asarray(intercept)
    pen = 0.5 / C * float(np.sum(coef * coef))
    if Z.shape[1] == 1:
        z = Z[:, 0]
        return float(-np.sum(log_expit(np.where(y == 1, z, -z)))) + pen
    return float(np.sum(logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), y])) + pen
