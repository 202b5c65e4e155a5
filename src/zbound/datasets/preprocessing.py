"""Preprocessing shared by the benchmarks: mean imputation, design matrices, deterministic splits.

Design matrix choices that reproduce the dimensions of Table 3 of Jebara & Choromanska (2012)
(supplement, "Small scale experiments"), with ``design_matrix(X)`` at its defaults
(drop constant columns, standardize, append a bias column):

==========  =====  ==============================================  ===========
data        t      features from the loader                        dim
==========  =====  ==============================================  ===========
Bupa        345    6 (selector column 7 is the label)              6 + 1 = 7
Wine        178    13                                              13 + 1 = 14
Heart       187    22 (SPECT.test, label = first column)           22 + 1 = 23
Ion         351    34, column 2 is constant 0 and is dropped       33 + 1 = 34
Hepatitis   155    19 (label = first column), '?' mean-imputed     19 + 1 = 20
==========  =====  ==============================================  ===========

Without dropping the constant ionosphere column the dimension would be 35, and without the bias
column every other set would be one short, so these two choices are what the paper's numbers imply.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ._base import Dataset


def impute_mean(X, means=None) -> np.ndarray:
    """Replace missing values (NaN) by the column mean of the observed values.

    This is the "mean-imputation" of Jebara & Choromanska (2012), supplement, used for the
    hepatitis data. The mean of each column is taken over the rows where it is observed.

    Parameters
    ----------
    X : (t, d) array_like of float, NaN marks a missing value
    means : (d,) array_like, optional
        Column means to fill with (e.g. computed on a training part and applied to a test part).
        Default: ``np.nanmean(X, axis=0)``.

    Returns
    -------
    (t, d) float64 ndarray, a new array without NaN.

    Raises
    ------
    ValueError
        If a column has no observed value and no ``means`` are given, or ``means`` has the
        wrong length or holds NaN.
    """
    X = np.array(X, dtype=np.float64, copy=True)
    if X.ndim != 2:
        raise ValueError(f"impute_mean expects a 2-d array, got shape {X.shape}")
    missing = np.isnan(X)
    if means is None:
        observed = (~missing).sum(axis=0)
        empty = np.flatnonzero(observed == 0)
        if empty.size:
            raise ValueError(
                f"cannot mean-impute columns {empty.tolist()}: no observed value in them"
            )
        means = np.nansum(X, axis=0) / observed
    else:
        means = np.asarray(means, dtype=np.float64)
        if means.shape != (X.shape[1],) or np.isnan(means).any():
            raise ValueError(
                f"means must be {X.shape[1]} finite values, got shape {means.shape}"
            )
    rows, cols = np.nonzero(missing)
    X[rows, cols] = means[cols]
    return X


@dataclass(frozen=True)
class DesignTransform:
    """Column selection, centering/scaling and bias column learned by :func:`fit_design`.

    Attributes
    ----------
    keep : (d_in,) bool ndarray, columns kept (False for constant columns when dropped)
    mean : (d_kept,) float64 ndarray, subtracted (zeros when not centering)
    scale : (d_kept,) float64 ndarray, divided by (ones when not standardizing)
    bias : bool, whether a column of ones is appended last
    """

    keep: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    bias: bool

    @property
    def n_features_in(self) -> int:
        return int(self.keep.size)

    @property
    def n_features_out(self) -> int:
        return int(self.keep.sum()) + int(self.bias)

    def transform(self, X):
        """Apply to ``X`` (t, d_in), dense or sparse; returns (t, d_out) of the same kind."""
        if X.ndim != 2 or X.shape[1] != self.keep.size:
            raise ValueError(
                f"X has shape {X.shape}; this transform was fitted on {self.keep.size} columns"
            )
        if sp.issparse(X):
            if np.any(self.mean != 0):
                raise ValueError("cannot center a sparse matrix; fit with center=False")
            Z = sp.csr_matrix(X, dtype=np.float64)[:, self.keep]
            Z = Z @ sp.diags(1.0 / self.scale)
            if self.bias:
                Z = sp.hstack([Z, np.ones((Z.shape[0], 1))])
            return sp.csr_matrix(Z)
        Z = (np.asarray(X, dtype=np.float64)[:, self.keep] - self.mean) / self.scale
        if self.bias:
            Z = np.hstack([Z, np.ones((Z.shape[0], 1))])
        return Z


def _column_stats(X):
    """Column min, max, mean and (population) std of a dense or sparse matrix."""
    if sp.issparse(X):
        X = sp.csc_matrix(X, dtype=np.float64)
        cmin = X.min(axis=0).toarray().ravel()
        cmax = X.max(axis=0).toarray().ravel()
        mean = np.asarray(X.mean(axis=0)).ravel()
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        std = np.sqrt(np.maximum(sq - mean**2, 0.0))
        return cmin, cmax, mean, std
    X = np.asarray(X, dtype=np.float64)
    return X.min(axis=0), X.max(axis=0), X.mean(axis=0), X.std(axis=0)


def fit_design(X, standardize=True, bias=True, *, drop_constant=True, center=None):
    """Learn the transform of :func:`design_matrix` from ``X`` (to apply it to test data too).

    Parameters
    ----------
    X : (t, d) array_like or sparse matrix, no NaN (impute first, see :func:`impute_mean`)
    standardize : bool
        Divide each kept column by its standard deviation (population, ``ddof=0``).
    bias : bool
        Append a final column of ones.
    drop_constant : bool
        Drop columns whose values are all equal (e.g. ionosphere column 2, all zeros). They
        carry no information, and standardizing them would divide by zero.
    center : bool, optional
        Subtract column means. Default: ``standardize`` for dense input, False for sparse
        input (centering would destroy sparsity; ``center=True`` with sparse input raises).

    Returns
    -------
    DesignTransform
    """
    if sp.issparse(X):
        if center:
            raise ValueError("center=True is not supported for sparse X (it would densify it)")
        center = False
    else:
        X = np.asarray(X, dtype=np.float64)
        if center is None:
            center = standardize
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d, got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError("X has no rows")
    cmin, cmax, mean, std = _column_stats(X)
    if np.isnan(cmin).any() or np.isnan(cmax).any():
        raise ValueError("X contains NaN; impute missing values first (impute_mean)")
    keep = ~(cmax == cmin) if drop_constant else np.ones(X.shape[1], dtype=bool)
    mean = mean[keep] if center else np.zeros(int(keep.sum()))
    if standardize:
        scale = std[keep]
        if np.any(scale == 0):
            raise ValueError(
                "cannot standardize constant columns "
                f"{np.flatnonzero(keep)[scale == 0].tolist()}; use drop_constant=True"
            )
    else:
        scale = np.ones(int(keep.sum()))
    return DesignTransform(keep=keep, mean=mean, scale=scale, bias=bool(bias))


def design_matrix(X, standardize=True, bias=True, *, drop_constant=True, center=None):
    """Design matrix for the log-linear benchmarks: drop constant columns, standardize, add bias.

    ``design_matrix(load_ionosphere().X)`` is (351, 34): 33 non-constant standardized columns
    and a last column of ones. The module docstring lists the choices that reproduce the
    dimensions of Jebara & Choromanska (2012), Table 3. To transform test data with the
    training statistics, use ``fit_design(X_train).transform(X_test)``.

    Parameters are those of :func:`fit_design`.

    Returns
    -------
    (t, d_out) float64 ndarray (CSR matrix for sparse input), ``d_out = kept columns + bias``.
    """
    return fit_design(
        X, standardize, bias, drop_constant=drop_constant, center=center
    ).transform(X)


def split_dataset(dataset: Dataset, test_size=0.2, random_state=0, *, stratify=True) -> Dataset:
    """Deterministic train/test split of a data set that has none (e.g. the KMNIST test images).

    Parameters
    ----------
    dataset : Dataset without ``X_test``
    test_size : float in (0, 1) or int
        Fraction or number of rows put in the test part.
    random_state : int or numpy Generator
        The same seed gives the same split on every machine (``numpy.random.default_rng``).
    stratify : bool
        Keep class proportions (each class split separately; per-class counts rounded so
        that they add up to the requested test size).

    Returns
    -------
    Dataset with ``X``/``y`` the training rows, ``X_test``/``y_test`` the test rows, and
    ``meta["train_index"]``, ``meta["test_index"]`` (sorted row indices into the input).
    """
    if dataset.X_test is not None:
        raise ValueError(f"data set {dataset.name!r} already has a test part")
    t = dataset.X.shape[0]
    if isinstance(test_size, float):
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size as a fraction must be in (0, 1), got {test_size}")
        frac = test_size
    else:
        if not 0 < int(test_size) < t:
            raise ValueError(f"test_size must be between 1 and {t - 1}, got {test_size}")
        frac = int(test_size) / t
    rng = np.random.default_rng(random_state)
    n_test_total = int(round(frac * t))
    if stratify:
        y = np.asarray(dataset.y)
        labels, sizes = np.unique(y, return_counts=True)
        # Largest-remainder rounding: per-class counts proportional to the class sizes that add
        # up to exactly n_test_total.
        quota = frac * sizes
        n_test = np.floor(quota).astype(np.int64)
        short = n_test_total - int(n_test.sum())
        n_test[np.argsort(-(quota - n_test), kind="stable")[:short]] += 1
        test = np.concatenate([
            rng.permutation(np.flatnonzero(y == label))[:k] for label, k in zip(labels, n_test)
        ])
    else:
        test = rng.permutation(t)[:n_test_total]
    test = np.sort(test)
    mask = np.zeros(t, dtype=bool)
    mask[test] = True
    train = np.flatnonzero(~mask)
    meta = dict(dataset.meta, train_index=train, test_index=test)
    return replace(
        dataset,
        X=dataset.X[train],
        y=dataset.y[train],
        X_test=dataset.X[test],
        y_test=dataset.y[test],
        description=dataset.description
        + f" Split here into {train.size} train / {test.size} test rows "
        f"(split_dataset, random_state={random_state!r}, stratify={stratify}).",
        meta=meta,
    )
