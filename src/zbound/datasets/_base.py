"""Shared pieces of the loaders: the ``Dataset`` record, the data directory and checksums.

Benchmark data lives outside the repository, in the directory named by the environment variable
``ZBOUND_DATA``, else in the directory ``zbound data fetch`` downloads into. Every file a loader
reads is listed in ``SHA256`` with the checksum of the file as stored (for ``.gz`` files, the
compressed bytes; a ``.gz`` file the fetcher made itself is checked by its content). A file is
hashed the first time it is read in a process; the result is cached by (absolute path, size,
modification time), so a file that is replaced or edited while the process runs is checked again.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

ENV_VAR = "ZBOUND_DATA"
#: overrides where ``zbound data fetch`` puts the data by default (the user cache directory)
CACHE_VAR = "ZBOUND_CACHE"

#: Expected sha256 of every file read from ``ZBOUND_DATA``, keyed by path relative to it.
#: Values copied from ``SOURCES.md``.
SHA256: dict[str, str] = {
    "ionosphere/ionosphere.data": (
        "46d52186b84e20be52918adb93e8fb9926b34795ff7504c24350ae0616a04bbd"
    ),
    "liver-disorders/bupa.data": (
        "a166a3e7a6f4dc41aaaedc59a107e57d8adcaeb8821f0873d756982f1ea74c92"
    ),
    "hepatitis/hepatitis.data": (
        "9971f9d18abb4fc9dd6749eefb0f864b36fa7bdd59f54188c0b148a5c28214bc"
    ),
    "spect/SPECT.train": "9b56d9cc1ac620b6d3c40aefca137710c4e6f8a2034ebe3b87905ec1fbb7dab4",
    "spect/SPECT.test": "0b963206a741022d73a0491aa954c62b02b45cb427c3788f4e25fc1e94ac3a79",
    "adult/adult.data.gz": "fb986d3609cdf068a1c234ed2695603b74c66c4be723467d9d69542024847442",
    "adult/adult.test.gz": "74aa81a0e0880467a50de97be6ba8130df14a3ef8c0c3a14de2a9a997d068fbf",
    "fashion-mnist/train-labels-idx1-ubyte.gz": (
        "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"
    ),
    "fashion-mnist/t10k-labels-idx1-ubyte.gz": (
        "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"
    ),
    "kmnist/kmnist-test-imgs.npz": (
        "692d824896bec8f3c357ebf7a0fe904ed67ac632ce953d0b58f7fbef7bb27d87"
    ),
    "kmnist/kmnist-test-labels.npz": (
        "660f13a4705431ea2a6391c41ecbe384cd0d932c595a101ec4f3b8989e785046"
    ),
    "kmnist/kmnist-train-labels.npz": (
        "a325c877035602cb9b9ba54f4194a2a1b5f718026a463db5b5e0cdc124c03720"
    ),
    "conll2002/esp.train": "4bfdbbfe46fd3a8587ba5262571d1ad996933eda4814eae602a447580fe114bc",
    "conll2002/esp.testa": "6cf70d5c753784ab65ebb4f864767b0db02f1276744a2310d7d825213b1c5cac",
    "conll2002/esp.testb": "57db3dd40984a1eec64f03a1af173e7ee1628f92015f00aaa8be221d1b0bdcfd",
    "conll2002/nltk_with_pos/esp.train.gz": (
        "393b56c19974aac1e1dda7b3cba74e59178eaa19e1d0e281ed9444b7c96cf434"
    ),
    "conll2002/nltk_with_pos/esp.testa.gz": (
        "28061a7d1f4d1f21b837ed06400f330bcb6cd0a4e652705c7f78e575798e6fb9"
    ),
    "conll2002/nltk_with_pos/esp.testb.gz": (
        "a1a2092e3f9d7e6adb6288b5d64d0b92ea3c8182b5cb31069e286b469327eb06"
    ),
    "conll2000/train.txt.gz": "c36219269bf9debdcc281ca2dac3fbef596858d8d981d788697a3b6ece30360f",
    "conll2000/test.txt.gz": "aca2678bf0292bc6fa49addf93b2a5ee33ddf7c03ccff9f154d285e8ff4ef67e",
    "treebank/wsj_sample_tagged.txt.gz": (
        "e5430b101bca64af612c1583d9f0f2d5e480dfb8bb274d3fbdf46c4c816ec460"
    ),
    "treebank/treebank.zip": "cc00cb1b66ab405d0d61e9924a48b5c70c4e772c07e7f8e2f23b5d611b3ef8ae",
    "srbct/SRBCT.arff.gz": "5508ea6013d68e049b53a422750614c98dee446ae04df94b91ca78cc8a40a3a5",
    "ssl-text/SSL,set=9,data.mat": (
        "1a763cbae64d4cde3b3595ee0872a055df7b613a93439646628d0a423112299b"
    ),
    "ssl-text/SSL,set=9,splits,labeled=10.mat": (
        "06c57dfddd7b4fa148f926094675d15aed621b5cb7157ab895885320377c7d8c"
    ),
}

# (absolute path, size, mtime_ns) -> sha256 hex digest already computed in this process.
_VERIFIED: dict[tuple[str, int, int], str] = {}


#: How to get the benchmark data, for every message about missing data.
HOW_TO_GET = (
    "Benchmark data sets are not bundled: `zbound data fetch --all` downloads them (13 MB) "
    "from their public sources into the user cache directory, where the loaders find them; "
    f"or set {ENV_VAR} to a directory holding them (`zbound data list` names every set and "
    "its source)."
)


#: sha256 of the decompressed content of the ``.gz`` files that the fetcher makes itself
CONTENT_SHA256: dict[str, str] = {
    "conll2000/train.txt.gz": "82033cd7a72b209923a98007793e8f9de3abc1c8b79d646c50648eb949b87cea",
    "conll2000/test.txt.gz": "73b7b1e565fa75a1e22fe52ecdf41b6624d6f59dacb591d44252bf4d692b1628",
    "conll2002/nltk_with_pos/esp.train.gz": (
        "a20d95cab7d88a19a86f8c1ad6329325c99fbd9529ed978cbd7e31d4b01b4008"
    ),
    "conll2002/nltk_with_pos/esp.testa.gz": (
        "85c17793b77881c53d19017d9d0f1e6fb98b7ddcab54a5f24b05ed1793103c87"
    ),
    "conll2002/nltk_with_pos/esp.testb.gz": (
        "1f8f7a392c6d4979a5592a5794eed43d7869b46da6851bbcde99714149f1d016"
    ),
    "srbct/SRBCT.arff.gz": "7a52f82af270634fd500e4c096d705c289fcc530df33cfa5ee439ddfec4b3235",
    "treebank/wsj_sample_tagged.txt.gz": (
        "72e1a1e17de890d01de7e0701f4f0c8dd4de1e6176cad31880615f7ac4a7035d"
    ),
}


class DataChecksumError(ValueError):
    """Raised for a data file whose sha256 differs from the registered one."""


class DataUnavailableError(FileNotFoundError):
    """Raised for data that the benchmark data directory (ZBOUND_DATA) does not hold at all.

    SOURCES.md in that directory lists what is missing.
    """


@dataclass
class Dataset:
    """A labelled data set, as returned by every ``load_*`` function of this package.

    Attributes
    ----------
    X : (t, d) float64 ndarray, or scipy.sparse CSR matrix of float64
        Features, one row per sample, in the source's column order (no preprocessing beyond
        what the loader's docstring states; see :func:`design_matrix`).
    y : (t,) ndarray
        Labels. Classification sets use int64 codes ``0 .. K-1``; ``target_names[k]`` names
        code ``k`` (the label as written in the source file, or its documented meaning where
        the file uses numbers for it, e.g. hepatitis ``DIE``/``LIVE``).
    feature_names : tuple of str, length d
    name : str
        Registry name (``load(name)`` returns this data set).
    description : str
        Provenance and shape summary (source, citation, what the loader did).
    X_test, y_test : optional
        Held-out part, when the source ships a split (adult) or one was made with
        :func:`split_dataset`.
    target_names : tuple of str, optional
    meta : dict
        Anything else a loader or generator knows (true parameters of synthetic data, split
        indices, category lists).
    """

    X: Any
    y: np.ndarray
    feature_names: tuple[str, ...]
    name: str
    description: str
    X_test: Any = None
    y_test: np.ndarray | None = None
    target_names: tuple[str, ...] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_classes(self) -> int:
        """Number of classes (``len(target_names)`` when known, else distinct labels)."""
        if self.target_names is not None:
            return len(self.target_names)
        labels = self.y if self.y_test is None else np.concatenate([self.y, self.y_test])
        return int(np.unique(labels).size)

    @property
    def has_test(self) -> bool:
        return self.X_test is not None

    def __repr__(self) -> str:
        kind = "sparse" if sp.issparse(self.X) else "dense"
        test = "" if self.X_test is None else f", test={self.X_test.shape[0]}"
        return (
            f"Dataset(name={self.name!r}, X={self.X.shape} {kind}{test}, "
            f"n_classes={self.n_classes})"
        )


def data_dir() -> Path:
    """The benchmark data directory: the one named by ``ZBOUND_DATA``, else the directory
    ``zbound data fetch`` writes to by default (:func:`default_dir`)
    when it exists.

    Raises
    ------
    FileNotFoundError
        If the variable is unset and nothing was fetched, or it names a path that is not a
        directory.
    """
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        cache = default_dir()
        if cache.is_dir():
            return cache
        raise FileNotFoundError(
            f"No benchmark data: {ENV_VAR} is not set and nothing was fetched into {cache}. "
            f"{HOW_TO_GET}"
        )
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"{ENV_VAR}={value!r} does not name an existing directory "
            f"(resolved to {path.resolve()}). Point {ENV_VAR} to the benchmark data directory."
        )
    return path


def file_sha256(path: Path) -> str:
    """sha256 hex digest of a file, read in 1 MB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_file(relpath: str, *, verify: bool = True) -> Path:
    """Path of ``relpath`` inside :func:`data_dir`, after checking that it exists and its sha256.

    Parameters
    ----------
    relpath : str
        Path relative to ``ZBOUND_DATA``, a key of :data:`SHA256`.
    verify : bool
        Check the checksum (once per process per unchanged file).

    Raises
    ------
    FileNotFoundError
        The file is missing (the message names it and ``ZBOUND_DATA``).
    DataChecksumError
        A ``ValueError``: the file's sha256 differs from the registered one (corrupted or
        replaced).
    """
    root = data_dir()
    path = root / relpath
    if not path.is_file():
        raise FileNotFoundError(
            f"Data file {relpath!r} not found in {ENV_VAR}={str(root)!r} (looked for {path}). "
            f"{HOW_TO_GET}"
        )
    if not verify:
        return path
    try:
        expected = SHA256[relpath]
    except KeyError:
        raise KeyError(f"no checksum known for data file {relpath!r}") from None
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    actual = _VERIFIED.get(key)
    if actual is None:
        actual = _sha256_or_content(path, relpath, expected)
        if actual == expected:
            _VERIFIED[key] = actual
    if actual != expected:
        raise DataChecksumError(
            f"Checksum mismatch for data file {relpath!r} in {ENV_VAR}={str(root)!r}: "
            f"sha256 is {actual}, expected {expected}. The file is corrupted or was "
            f"replaced; restore it from its source (docs/benchmarks.md, section 'Data')."
        )
    return path


def _sha256_or_content(path: Path, relpath: str, expected: str) -> str:
    """The file's sha256; for a ``.gz`` file made by ``zbound data fetch`` (gzip's header
    bytes differ between tools) ``expected`` where its content's sha256 is the registered
    one."""
    actual = file_sha256(path)
    if actual != expected:
        if relpath in CONTENT_SHA256 and verified(path, relpath):
            return expected
    return actual


def default_dir() -> Path:
    """Where fetched data goes and where the loaders look when ``ZBOUND_DATA`` is unset:
    ``ZBOUND_CACHE`` if set, else the user cache directory (e.g. ``~/.cache/zbound``)."""
    value = os.environ.get(CACHE_VAR, "").strip()
    if value:
        return Path(value).expanduser()
    import pooch

    return Path(pooch.os_cache("zbound"))


def verified(path: Path, target: str) -> bool:
    """Whether the file at ``path`` is the registered ``target``: its sha256, or for a ``.gz``
    file the fetcher makes, the sha256 of its content."""
    if not path.is_file():
        return False
    if file_sha256(path) == SHA256[target]:
        return True
    content = CONTENT_SHA256.get(target)
    if content is None:
        return False
    try:
        with gzip.open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest() == content
    except (OSError, EOFError):
        return False


def clear_checksum_cache() -> None:
    """Forget which files were verified in this process (tests use it)."""
    _VERIFIED.clear()


def encode_labels(raw: np.ndarray, order: list[str] | None = None):
    """Map raw labels (strings) to int64 codes ``0..K-1``.

    ``order`` fixes the code of each label; otherwise labels are sorted. Returns
    ``(codes, target_names)``.
    """
    raw = np.asarray(raw).astype(str)
    names = sorted(set(raw.tolist())) if order is None else list(order)
    unknown = set(raw.tolist()) - set(names)
    if unknown:
        raise ValueError(f"unexpected labels {sorted(unknown)}; expected {names}")
    lookup = {name: k for k, name in enumerate(names)}
    codes = np.fromiter((lookup[v] for v in raw), dtype=np.int64, count=raw.size)
    return codes, tuple(names)
