"""Data sets bundled with scikit-learn (no ``ZBOUND_DATA`` needed)."""

from __future__ import annotations

import numpy as np

from ._base import Dataset


def _from_sklearn(loader, name: str, description: str) -> Dataset:
    bunch = loader()
    return Dataset(
        X=np.asarray(bunch.data, dtype=np.float64),
        y=np.asarray(bunch.target, dtype=np.int64),
        feature_names=tuple(str(f) for f in bunch.feature_names),
        name=name,
        description=description,
        target_names=tuple(str(t) for t in bunch.target_names),
    )


def load_wine() -> Dataset:
    """Wine: X (178, 13) float64, y (178,) with 3 classes (59, 71, 48).

    ``sklearn.datasets.load_wine`` (UCI "Wine", Forina et al.). Jebara & Choromanska (2012),
    Table 3: Wine t=178, dim=14 = 13 + bias.
    """
    from sklearn.datasets import load_wine as sk_load

    return _from_sklearn(
        sk_load, "wine",
        "UCI Wine recognition, 178 x 13, 3 classes; bundled with scikit-learn (load_wine).",
    )


def load_digits() -> Dataset:
    """Digits: X (1797, 64) float64 with values 0..16, y (1797,) with 10 classes.

    ``sklearn.datasets.load_digits`` (UCI "Optical Recognition of Handwritten Digits", 8x8).
    """
    from sklearn.datasets import load_digits as sk_load

    return _from_sklearn(
        sk_load, "digits",
        "UCI optical handwritten digits, 1797 x 64 (8x8 pixels, 0..16), 10 classes; "
        "bundled with scikit-learn (load_digits).",
    )


def load_iris() -> Dataset:
    """Iris: X (150, 4) float64, y (150,) with 3 classes of 50 (``sklearn.datasets.load_iris``)."""
    from sklearn.datasets import load_iris as sk_load

    return _from_sklearn(
        sk_load, "iris",
        "Fisher's Iris, 150 x 4, 3 classes; bundled with scikit-learn (load_iris).",
    )


def load_breast_cancer() -> Dataset:
    """Breast cancer Wisconsin (diagnostic): X (569, 30) float64, y (569,), 2 classes.

    ``sklearn.datasets.load_breast_cancer``: malignant -> 0 (212), benign -> 1 (357).
    """
    from sklearn.datasets import load_breast_cancer as sk_load

    return _from_sklearn(
        sk_load, "breast_cancer",
        "UCI Breast Cancer Wisconsin (diagnostic), 569 x 30, 2 classes; bundled with "
        "scikit-learn (load_breast_cancer).",
    )
