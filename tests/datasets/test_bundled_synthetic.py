"""scikit-learn bundled sets (no ZBOUND_DATA needed) and make_multinomial."""

import numpy as np
import pytest

from zbound.datasets import available, load, make_multinomial


@pytest.mark.parametrize(
    ("name", "shape", "counts"),
    [
        ("wine", (178, 13), [59, 71, 48]),
        ("digits", (1797, 64), [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]),
        ("iris", (150, 4), [50, 50, 50]),
        ("breast_cancer", (569, 30), [212, 357]),
    ],
)
def test_bundled_sets_without_data_dir(monkeypatch, name, shape, counts):
    monkeypatch.delenv("ZBOUND_DATA", raising=False)
    ds = load(name)
    assert ds.X.shape == shape and ds.X.dtype == np.float64
    assert ds.y.dtype == np.int64 and np.bincount(ds.y).tolist() == counts
    assert len(ds.feature_names) == shape[1] and ds.name == name
    assert name in available(needs_data=False)


def test_unknown_name_lists_available():
    with pytest.raises(ValueError, match="unknown data set 'mnist'.*bupa"):
        load("mnist")


def test_make_multinomial_shapes_and_determinism():
    a = make_multinomial(200, 5, 4, random_state=7)
    b = make_multinomial(200, 5, 4, random_state=7)
    assert a.X.shape == (200, 5) and a.y.shape == (200,) and a.X.dtype == np.float64
    assert a.meta["coef"].shape == (4, 5) and a.meta["intercept"].shape == (4,)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert set(a.y.tolist()) <= set(range(4))
    np.testing.assert_allclose(a.meta["proba"].sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="n_classes"):
        make_multinomial(10, 2, 1)


def test_make_multinomial_labels_follow_the_model():
    ds = make_multinomial(20000, 3, 3, random_state=0, scale=3.0)
    W, b = ds.meta["coef"], ds.meta["intercept"]
    logits = ds.X @ W.T + b
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, ds.meta["proba"])
    # Empirical class frequencies match the mean model probabilities (binomial error ~ 0.004).
    freq = np.bincount(ds.y, minlength=3) / ds.y.size
    np.testing.assert_allclose(freq, proba.mean(axis=0), atol=0.015)
    # The Bayes classifier beats chance clearly with scale=3.
    assert np.mean(proba.argmax(axis=1) == ds.y) > 0.6
