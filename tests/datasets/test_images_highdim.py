"""KMNIST, Fashion-MNIST labels, SRBCT and SSL Text against SOURCES.md."""

import numpy as np
import pytest
import scipy.sparse as sp

from zbound.datasets import (
    DataUnavailableError,
    load,
    load_fashion_mnist,
    load_fashion_mnist_labels,
    load_kmnist,
    load_kmnist_labels,
    load_srbct,
    load_ssl_text,
)

pytestmark = pytest.mark.data


def test_kmnist_test_images_scaled_to_unit_interval(real_data_dir):
    ds = load_kmnist()
    assert ds.X.shape == (10000, 784) and ds.X.dtype == np.float64
    assert ds.X.min() == 0.0 and ds.X.max() == 1.0
    assert np.bincount(ds.y).tolist() == [1000] * 10
    with np.load(real_data_dir / "kmnist" / "kmnist-test-imgs.npz") as npz:
        raw = npz["arr_0"]
    np.testing.assert_array_equal(ds.X[17].reshape(28, 28) * 255.0, raw[17])


def test_kmnist_split_is_deterministic_and_stratified():
    a = load_kmnist(test_size=0.2, random_state=0)
    b = load("kmnist", test_size=0.2, random_state=0)
    assert a.X.shape == (8000, 784) and a.X_test.shape == (2000, 784)
    assert np.bincount(a.y_test).tolist() == [200] * 10
    np.testing.assert_array_equal(a.meta["test_index"], b.meta["test_index"])
    assert np.intersect1d(a.meta["train_index"], a.meta["test_index"]).size == 0


def test_kmnist_and_fashion_labels():
    assert np.bincount(load_kmnist_labels("train")).tolist() == [6000] * 10
    assert load_kmnist_labels("test").shape == (10000,)
    train = load_fashion_mnist_labels("train")
    test = load_fashion_mnist_labels("test")
    assert train.shape == (60000,) and test.shape == (10000,)
    assert np.bincount(train).tolist() == [6000] * 10
    assert np.bincount(test).tolist() == [1000] * 10
    with pytest.raises(ValueError, match="subset"):
        load_fashion_mnist_labels("val")


def test_fashion_mnist_images_raise_a_clear_error():
    with pytest.raises(DataUnavailableError, match="images are not available") as err:
        load_fashion_mnist()
    assert "load_fashion_mnist_labels" in str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    with pytest.raises(DataUnavailableError):
        load("fashion-mnist")


def test_srbct():
    ds = load_srbct()
    assert ds.X.shape == (83, 2308) and ds.X.dtype == np.float64
    assert np.bincount(ds.y).tolist() == [29, 25, 11, 18]
    assert ds.feature_names[0] == "2" and ds.feature_names[-1] == "2309"
    assert np.isfinite(ds.X).all()


def test_ssl_text_sparse_and_splits():
    ds = load_ssl_text()
    assert sp.issparse(ds.X) and ds.X.format == "csr" and ds.X.dtype == np.float64
    assert ds.X.shape == (1500, 11960) and ds.X.nnz == 78440
    assert np.bincount(ds.y).tolist() == [750, 750]
    assert ds.target_names == ("-1", "1")
    splits = ds.meta["splits"]
    assert len(splits) == 12
    for labeled, unlabeled in splits:
        assert labeled.shape == (10,) and unlabeled.shape == (1490,)
        np.testing.assert_array_equal(np.sort(np.concatenate([labeled, unlabeled])),
                                      np.arange(1500))
