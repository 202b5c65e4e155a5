"""impute_mean, design_matrix / fit_design, split_dataset."""

import numpy as np
import pytest
import scipy.sparse as sp

from zbound.datasets import (
    design_matrix,
    fit_design,
    impute_mean,
    load_iris,
    make_multinomial,
    split_dataset,
)


def test_impute_mean_fills_with_observed_column_means():
    X = np.array([[1.0, np.nan, 5.0], [3.0, 4.0, np.nan], [np.nan, 8.0, 7.0]])
    out = impute_mean(X)
    expected = np.array([[1.0, 6.0, 5.0], [3.0, 4.0, 6.0], [2.0, 8.0, 7.0]])
    np.testing.assert_array_equal(out, expected)
    assert np.isnan(X[0, 1])  # input untouched
    assert out.dtype == np.float64


def test_impute_mean_with_given_means_and_errors():
    X = np.array([[np.nan, 1.0], [2.0, np.nan]])
    np.testing.assert_array_equal(impute_mean(X, means=[10.0, 20.0]), [[10.0, 1.0], [2.0, 20.0]])
    with pytest.raises(ValueError, match=r"columns \[1\]"):
        impute_mean(np.array([[1.0, np.nan], [2.0, np.nan]]))
    with pytest.raises(ValueError, match="means"):
        impute_mean(X, means=[1.0])
    with pytest.raises(ValueError, match="2-d"):
        impute_mean(np.array([1.0, np.nan]))


def test_design_matrix_drops_constant_standardizes_and_adds_bias():
    X = np.array([[1.0, 0.0, 2.0], [3.0, 0.0, 2.0], [5.0, 0.0, 2.0], [7.0, 0.0, 2.0]])
    Z = design_matrix(X)
    assert Z.shape == (4, 2)
    np.testing.assert_allclose(Z[:, 0], (X[:, 0] - 4.0) / np.sqrt(5.0))
    np.testing.assert_array_equal(Z[:, 1], 1.0)
    assert design_matrix(X, bias=False).shape == (4, 1)
    np.testing.assert_array_equal(design_matrix(X, standardize=False, bias=False), X[:, :1])
    with pytest.raises(ValueError, match="constant columns"):
        design_matrix(X, drop_constant=False)
    kept = design_matrix(X, standardize=False, drop_constant=False)
    assert kept.shape == (4, 4)


def test_fit_design_applies_training_statistics_to_test_rows():
    rng = np.random.default_rng(0)
    X_train, X_test = rng.normal(3.0, 2.0, (50, 3)), rng.normal(size=(5, 3))
    tr = fit_design(X_train)
    assert (tr.n_features_in, tr.n_features_out) == (3, 4)
    Z = tr.transform(X_test)
    np.testing.assert_allclose(Z[:, :3], (X_test - X_train.mean(0)) / X_train.std(0))
    with pytest.raises(ValueError, match="fitted on 3 columns"):
        tr.transform(X_test[:, :2])


def test_design_matrix_rejects_nan():
    with pytest.raises(ValueError, match="impute"):
        design_matrix(np.array([[1.0, np.nan], [2.0, 3.0]]))


def test_design_matrix_sparse_scales_without_centering():
    dense = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    Z = design_matrix(sp.csr_matrix(dense))
    assert sp.issparse(Z) and Z.format == "csr" and Z.shape == (3, 3)
    np.testing.assert_allclose(Z.toarray()[:, :2], dense[:, :2] / dense[:, :2].std(axis=0))
    np.testing.assert_array_equal(Z.toarray()[:, 2], 1.0)
    with pytest.raises(ValueError, match="sparse"):
        design_matrix(sp.csr_matrix(dense), center=True)


def test_split_dataset_is_deterministic_and_stratified():
    ds = load_iris()
    a = split_dataset(ds, test_size=0.2, random_state=3)
    b = split_dataset(ds, test_size=0.2, random_state=3)
    np.testing.assert_array_equal(a.meta["test_index"], b.meta["test_index"])
    assert a.X.shape == (120, 4) and a.X_test.shape == (30, 4)
    assert np.bincount(a.y_test).tolist() == [10, 10, 10]
    together = np.sort(np.concatenate([a.meta["train_index"], a.meta["test_index"]]))
    np.testing.assert_array_equal(together, np.arange(150))
    np.testing.assert_array_equal(a.X_test, ds.X[a.meta["test_index"]])
    c = split_dataset(ds, test_size=0.2, random_state=4)
    assert not np.array_equal(a.meta["test_index"], c.meta["test_index"])
    with pytest.raises(ValueError, match="already has a test part"):
        split_dataset(a)


def test_split_dataset_counts_and_errors():
    ds = make_multinomial(101, 2, 3, random_state=0)
    for stratify in (False, True):
        s = split_dataset(ds, test_size=25, stratify=stratify, random_state=0)
        assert s.X_test.shape == (25, 2) and s.X.shape == (76, 2)
    # Stratified: each class within one row of its proportional share.
    share = 25 * np.bincount(ds.y) / ds.y.size
    assert np.all(np.abs(np.bincount(s.y_test, minlength=3) - share) < 1)
    with pytest.raises(ValueError, match="test_size"):
        split_dataset(ds, test_size=1.5)
