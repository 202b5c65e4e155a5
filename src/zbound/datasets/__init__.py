"""Data set loaders, the benchmark data fetchers, and synthetic generators.

Benchmark data is read from the directory named by the environment variable ``ZBOUND_DATA``, or,
when it is unset, from the directory ``zbound data fetch`` downloads into (the user cache
directory; :mod:`zbound.datasets.remote`). Nothing is copied into the repository. Every file's
sha256 is checked against :data:`SHA256` the first time it is read in a process; a missing or
corrupted file raises ``FileNotFoundError`` / :class:`DataChecksumError` naming the file and
how to get it. The scikit-learn sets (wine, digits, iris, breast_cancer) and the synthetic
generators need no data.

Loaders return a :class:`Dataset` (``X`` float64 (t, d) ndarray or CSR, ``y`` int64 codes,
``feature_names``, ``name``, ``description``, optional ``X_test``/``y_test``), or for the
sequence corpora, lists of sentences of tuples. ``load(name)`` looks loaders up by name.

Partial sets: KMNIST has only its 10000 test images (``load_kmnist(test_size=...)``
splits them deterministically); Fashion-MNIST has only labels (``load_fashion_mnist`` raises
``DataUnavailableError`` explaining this); GEMS 14_Tumors and SecStr are absent.

Jebara & Choromanska (2012), supplement Table 3 (``TABLE3``): ``design_matrix(load(n).X)``
with its defaults (drop constant columns, standardize, append bias) gives Bupa 345 x 7,
Wine 178 x 14, Heart (SPECT test file) 187 x 23, Ion 351 x 34 (constant column a02 dropped),
Hepatitis 155 x 20 (mean-imputed); see :mod:`zbound.datasets.preprocessing`.
"""

from ._base import (
    ENV_VAR,
    HOW_TO_GET,
    SHA256,
    DataChecksumError,
    Dataset,
    DataUnavailableError,
    data_dir,
    data_file,
)
from .bundled import load_breast_cancer, load_digits, load_iris, load_wine
from .highdim import load_srbct, load_ssl_text
from .images import (
    load_fashion_mnist,
    load_fashion_mnist_labels,
    load_kmnist,
    load_kmnist_labels,
)
from .preprocessing import DesignTransform, design_matrix, fit_design, impute_mean, split_dataset
from .registry import TABLE3, available, load
from .remote import DataFetchError, fetch
from .sequences import load_conll2000, load_conll2002, load_treebank
from .synthetic import make_multinomial
from .uci import load_adult, load_bupa, load_hepatitis, load_ionosphere, load_spect

__all__ = [
    "ENV_VAR",
    "HOW_TO_GET",
    "SHA256",
    "TABLE3",
    "DataChecksumError",
    "DataFetchError",
    "DataUnavailableError",
    "Dataset",
    "DesignTransform",
    "available",
    "data_dir",
    "data_file",
    "design_matrix",
    "fetch",
    "fit_design",
    "impute_mean",
    "load",
    "load_adult",
    "load_breast_cancer",
    "load_bupa",
    "load_conll2000",
    "load_conll2002",
    "load_digits",
    "load_fashion_mnist",
    "load_fashion_mnist_labels",
    "load_hepatitis",
    "load_ionosphere",
    "load_iris",
    "load_kmnist",
    "load_kmnist_labels",
    "load_spect",
    "load_srbct",
    "load_ssl_text",
    "load_treebank",
    "load_wine",
    "make_multinomial",
    "split_dataset",
]
