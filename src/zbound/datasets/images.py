"""Image sets: KMNIST test images (with a deterministic split) and Fashion-MNIST labels.

The benchmark data directory (named by ZBOUND_DATA) holds only part of these sets (its
SOURCES.md, sections 3 and 4): KMNIST's 10000 test images with test and training labels (the
60000 training images are missing), and Fashion-MNIST's labels (all images are missing). Where
a paper trained on the full 60000 images, benchmarks use a split of the KMNIST test images
(:func:`load_kmnist` with ``test_size``) or scikit-learn's digits, and say so in their reports.
"""

from __future__ import annotations

import gzip

import numpy as np

from ._base import ENV_VAR, Dataset, DataUnavailableError, data_file
from .preprocessing import split_dataset

KMNIST_CLASSES = ("o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo")
FASHION_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
    "Ankle boot",
)
_KMNIST_CITE = (
    "KMNIST Dataset (created by CODH), adapted from Kuzushiji Dataset (created by NIJL and "
    "others), doi:10.20676/00000341; Clanuwat et al. (2018), arXiv:1812.01718; CC BY-SA 4.0"
)


def _npz_array(relpath: str) -> np.ndarray:
    with np.load(data_file(relpath), allow_pickle=False) as npz:
        return npz["arr_0"]


def load_kmnist(test_size=None, random_state=0) -> Dataset:
    """KMNIST (Kuzushiji-MNIST) test images: X (10000, 784) float64 in [0, 1], y (10000,).

    The 28 x 28 uint8 images of ``kmnist/kmnist-test-imgs.npz``, flattened row-major and
    divided by 255; labels from ``kmnist-test-labels.npz``, 10 classes of 1000. The KMNIST
    training images are not available here, so this is all the image data there is.

    Parameters
    ----------
    test_size : None, float or int
        None (default): all 10000 rows in ``X``. Otherwise split them with
        :func:`split_dataset` (stratified, deterministic for a given ``random_state``), e.g.
        ``test_size=0.2`` gives 8000 training and 2000 test rows, 800 / 200 per class.
    random_state : int
        Seed of the split.
    """
    images = _npz_array("kmnist/kmnist-test-imgs.npz")
    labels = _npz_array("kmnist/kmnist-test-labels.npz")
    if images.shape != (10000, 28, 28) or labels.shape != (10000,):
        raise ValueError(
            f"kmnist test files: expected (10000, 28, 28) images and (10000,) labels, got "
            f"{images.shape} and {labels.shape}"
        )
    ds = Dataset(
        X=images.reshape(10000, 784).astype(np.float64) / 255.0,
        y=labels.astype(np.int64),
        feature_names=tuple(f"px{r}_{c}" for r in range(28) for c in range(28)),
        name="kmnist",
        description=(
            "KMNIST test images (10000 x 784, pixels / 255), 10 classes of 1000; the training "
            f"images are not available. {_KMNIST_CITE}."
        ),
        target_names=KMNIST_CLASSES,
    )
    if test_size is not None:
        ds = split_dataset(ds, test_size=test_size, random_state=random_state)
    return ds


def load_kmnist_labels(subset: str = "train") -> np.ndarray:
    """KMNIST labels as int64: ``"train"`` (60000,) or ``"test"`` (10000,).

    Only the labels of the training set exist here (its images do not).
    """
    files = {"train": "kmnist/kmnist-train-labels.npz", "test": "kmnist/kmnist-test-labels.npz"}
    if subset not in files:
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
    return _npz_array(files[subset]).astype(np.int64)


def _read_idx1(relpath: str) -> np.ndarray:
    """Labels of an idx1-ubyte.gz file (big-endian magic 0x00000801, count, then one byte each)."""
    with gzip.open(data_file(relpath), "rb") as fh:
        raw = fh.read()
    magic = int.from_bytes(raw[:4], "big")
    count = int.from_bytes(raw[4:8], "big")
    if magic != 0x801 or len(raw) != 8 + count:
        raise ValueError(f"{relpath}: not an idx1-ubyte label file (magic {magic:#x})")
    return np.frombuffer(raw, dtype=np.uint8, offset=8).astype(np.int64)


def load_fashion_mnist_labels(subset: str = "train") -> np.ndarray:
    """Fashion-MNIST labels as int64: ``"train"`` (60000,) or ``"test"`` (10000,).

    Xiao, Rasul & Vollgraf (2017), arXiv:1708.07747, MIT license; 10 classes
    (:data:`FASHION_CLASSES`), 6000 / 1000 per class. The images are NOT available here; see
    :func:`load_fashion_mnist`.
    """
    files = {
        "train": "fashion-mnist/train-labels-idx1-ubyte.gz",
        "test": "fashion-mnist/t10k-labels-idx1-ubyte.gz",
    }
    if subset not in files:
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
    return _read_idx1(files[subset])


def load_fashion_mnist(**_ignored) -> Dataset:
    """Always raises :class:`DataUnavailableError`: the Fashion-MNIST images are not available.

    SOURCES.md (section 3): no complete copy of ``train-images-idx3-ubyte.gz`` or
    ``t10k-images-idx3-ubyte.gz`` was found, so only the labels are in the data directory
    (:func:`load_fashion_mnist_labels`). Use :func:`load_kmnist` (split) or the digits set.
    """
    raise DataUnavailableError(
        "Fashion-MNIST images are not available: the shared data directory "
        f"({ENV_VAR}/fashion-mnist) holds only the label files (no complete copy of "
        "train-images-idx3-ubyte.gz / t10k-images-idx3-ubyte.gz was found; see SOURCES.md, "
        "section 3). Labels: load_fashion_mnist_labels(). For an MNIST-like image task use "
        "load_kmnist(test_size=...) or load_digits(), and say so in the report."
    )
