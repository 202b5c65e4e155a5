"""Download the benchmark data from its public sources (pooch: a registry of URLs and SHA-256
hashes, a cache directory, retries).

Every file the loaders read comes from a public repository at a pinned commit (``SOURCES``),
into ``DIR/<set>/<file>``, the layout of the data directory, where ``DIR`` is, in order: the
directory given, ``ZBOUND_DATA``, or the user cache directory (:func:`default_dir`; the loaders
read it when ``ZBOUND_DATA`` is unset). Each file's sha256 is checked against
:data:`zbound.datasets.SHA256` after download. Where a source publishes another layout than the
one the loaders read (a header line the UCI file does not have, an uncompressed file stored
gzipped, members of a zip archive, trees from which the tagged corpus is derived) the file is
converted once after download; a converted ``.gz`` file is checked by the sha256 of its content
(:data:`CONTENT_SHA256`: gzip output differs between tools in its header bytes).

``ZBOUND_DATA_MIRROR=URL`` takes every file from ``URL/<set>/<file>`` instead, as stored (the
layout of the data directory): for institutional mirrors, offline sites and tests.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._base import ENV_VAR, SHA256, default_dir, verified

MIRROR_VAR = "ZBOUND_DATA_MIRROR"

class DataFetchError(OSError):
    """A download failed (offline, server error, interrupted) or a file's hash differs."""


def _github(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


# -- conversions: downloaded bytes -> the bytes the loaders read ----------------------------------

def _drop_first_line(data: bytes) -> bytes:
    """The UCI file from a copy that added a header line."""
    return data[data.index(b"\n") + 1:]


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def _zip_member(member: str) -> Callable[[bytes], bytes]:
    def extract(data: bytes) -> bytes:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return z.read(member)
    return extract


_LEAF = re.compile(rb"\(([^\s()]+) ([^\s()]+)\)")


def treebank_tagged(data: bytes) -> bytes:
    """The tagged corpus (``word<TAB>tag`` per line, an empty line after each sentence, every
    leaf kept, ``-NONE-`` traces included, as NLTK's ``treebank.tagged_sents()``) from NLTK's
    ``treebank.zip``: the trees of ``combined/*.mrg`` in sorted file order."""
    out = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = sorted(n for n in z.namelist() if re.search(r"combined/[^/]+\.mrg$", n))
        for name in names:
            text = z.read(name)
            depth, start = 0, None
            for m in re.finditer(rb"[()]", text):
                if m.group() == b"(":
                    if depth == 0:
                        start = m.start()
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0 and start is not None:
                        leaves = _LEAF.findall(text[start:m.end()])
                        if leaves:
                            out.append(b"".join(w + b"\t" + t + b"\n" for t, w in leaves)
                                       + b"\n")
    return b"".join(out)


def _then(*steps: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    def run(data: bytes) -> bytes:
        for step in steps:
            data = step(data)
        return data
    return run


@dataclass(frozen=True)
class Remote:
    """One file of the data directory: its path there (a key of ``SHA256``), the URL it is
    downloaded from, and the conversion of the downloaded bytes (None: as downloaded)."""

    target: str
    url: str
    convert: Callable[[bytes], bytes] | None = None


@dataclass(frozen=True)
class Source:
    """A benchmark set: what ``zbound data list`` shows and the files ``fetch`` writes."""

    name: str
    description: str
    origin: str
    licence: str
    citation: str
    files: tuple[Remote, ...]

    @property
    def size_bytes(self) -> int:
        return sum(SIZES.get(f.target, 0) for f in self.files)


#: Bytes of every file as the loaders read it (SOURCES.md of the data directory).
SIZES: dict[str, int] = {
    "ionosphere/ionosphere.data": 76467, "liver-disorders/bupa.data": 7297,
    "hepatitis/hepatitis.data": 7545, "spect/SPECT.train": 3760, "spect/SPECT.test": 8789,
    "adult/adult.data.gz": 439363, "adult/adult.test.gz": 220798,
    "fashion-mnist/train-labels-idx1-ubyte.gz": 29515,
    "fashion-mnist/t10k-labels-idx1-ubyte.gz": 5148,
    "kmnist/kmnist-test-imgs.npz": 3079479, "kmnist/kmnist-test-labels.npz": 5304,
    "kmnist/kmnist-train-labels.npz": 29700,
    "conll2002/esp.train": 2151515, "conll2002/esp.testa": 430144,
    "conll2002/esp.testb": 415949, "conll2002/nltk_with_pos/esp.train.gz": 702649,
    "conll2002/nltk_with_pos/esp.testa.gz": 139218,
    "conll2002/nltk_with_pos/esp.testb.gz": 136009,
    "conll2000/train.txt.gz": 599146, "conll2000/test.txt.gz": 136827,
    "treebank/treebank.zip": 1710651, "treebank/wsj_sample_tagged.txt.gz": 241815,
    "srbct/SRBCT.arff.gz": 490123, "ssl-text/SSL,set=9,data.mat": 1726264,
    "ssl-text/SSL,set=9,splits,labeled=10.mat": 36256,
}

_ROHIT = ("rohitpaul23/density_based_clustering", "9fca3d3f94fd740ed01084ba7e01ee622a53fc3b")
_NLTK = ("nltk/nltk", "c90be5e1b36a576057c8bef2ba948cafd28e863d")
_UCI = "Dua & Graff, UCI Machine Learning Repository (archive.ics.uci.edu)"

SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("ionosphere", "radar returns, 351 x 34, 2 classes", "UCI ML Repository",
           "none stated", f"Sigillito et al. (1989), Johns Hopkins APL Tech. Digest 10; {_UCI}",
           (Remote("ionosphere/ionosphere.data", _github(*_ROHIT, "ionosphere.data")),)),
    Source("liver-disorders", "BUPA liver disorders, 345 x 6", "UCI ML Repository",
           "none stated", _UCI,
           (Remote("liver-disorders/bupa.data", _github(*_ROHIT, "liverdisorder.data")),)),
    Source("hepatitis", "155 x 19 with missing values, 2 classes", "UCI ML Repository",
           "none stated", f"Diaconis & Efron (1983); {_UCI}",
           (Remote("hepatitis/hepatitis.data",
                   _github("sudheerchalla/Hepatitis", "0ba6852a58da864e9fcdca6ce48ac8feb441ab9c",
                           "hepatitis.data"), _drop_first_line),)),
    Source("spect", "SPECT heart, 267 x 22 binary", "UCI ML Repository", "none stated",
           f"Kurgan et al. (2001), Artificial Intelligence in Medicine 23(2); {_UCI}",
           tuple(Remote(f"spect/SPECT.{part}",
                        _github("vishwesh-D-kumar/NaiveBayesClassifier",
                                "e6aea3b308f2d73ac09aef48dd4e649f744a556a", f"SPECT.{part}"),
                        _drop_first_line) for part in ("train", "test"))),
    Source("adult", "census income, 32 561 + 16 281 rows, 14 attributes", "UCI ML Repository",
           "none stated", f"Kohavi (1996), KDD-96; {_UCI}",
           tuple(Remote(f"adult/adult.{part}.gz",
                        _github("vukk/lfr", "ed62ba97952b233be794314ce2ed748877edfeeb",
                                f"data/adult-delve/Source/adult.{part}.gz"))
                 for part in ("data", "test"))),
    Source("fashion-mnist", "Fashion-MNIST labels only (60 000 + 10 000)", "Zalando Research",
           "MIT", "Xiao, Rasul & Vollgraf (2017), arXiv:1708.07747",
           tuple(Remote(f"fashion-mnist/{f}",
                        _github("zalandoresearch/fashion-mnist",
                                "b2617bb6d3ffa2e429640350f613e3291e10b141", f"data/fashion/{f}"))
                 for f in ("train-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte.gz"))),
    Source("kmnist", "Kuzushiji-MNIST: the 10 000 test images and all labels",
           "ROIS-DS Center for Open Data in the Humanities", "CC BY-SA 4.0",
           "Clanuwat et al. (2018), arXiv:1812.01718",
           tuple(Remote(f"kmnist/{f}",
                        _github("Vasu-Shrivastava/Kuzushiji-MNIST-Classification",
                                "24b9450513e4d74627554eb98c949cb17b06fc01", f"KMNIST/{f}"))
                 for f in ("kmnist-test-imgs.npz", "kmnist-test-labels.npz",
                           "kmnist-train-labels.npz"))),
    Source("conll2002", "CoNLL-2002 Spanish NER, with NLTK's POS-tagged copy",
           "CoNLL-2002 shared task", "research use in the context of the shared task only",
           "Tjong Kim Sang (2002), CoNLL-2002",
           tuple(Remote(f"conll2002/esp.{p}",
                        _github("ragerri/evaluation-spanish-language-models",
                                "1c4579e54ab2bfa16f28c960cee554328c51c318",
                                f"conll2002/esp.{p}")) for p in ("train", "testa", "testb"))
           + tuple(Remote(f"conll2002/nltk_with_pos/esp.{p}.gz",
                          _github(*_NLTK, "nltk_data/corpora/conll2002.zip"),
                          _then(_zip_member(f"conll2002/esp.{p}"), _gzip))
                   for p in ("train", "testa", "testb"))),
    Source("conll2000", "CoNLL-2000 chunking (WSJ sections 15-18 and 20)",
           "CoNLL-2000 shared task (NLTK's copy)", "WSJ text: LDC",
           "Tjong Kim Sang & Buchholz (2000), CoNLL-2000",
           tuple(Remote(f"conll2000/{p}.txt.gz",
                        _github(*_NLTK, "nltk_data/corpora/conll2000.zip"),
                        _then(_zip_member(f"conll2000/{p}.txt"), _gzip))
                 for p in ("train", "test"))),
    Source("treebank", "Penn Treebank WSJ sample (NLTK's tenth of the WSJ)", "LDC (1995), via NLTK",
           "non-commercial use", "Marcus et al. (1993), Computational Linguistics 19(2)",
           (Remote("treebank/treebank.zip", _github(*_NLTK, "nltk_data/corpora/treebank.zip")),
            Remote("treebank/wsj_sample_tagged.txt.gz",
                   _github(*_NLTK, "nltk_data/corpora/treebank.zip"),
                   _then(treebank_tagged, _gzip)))),
    Source("srbct", "small round blue cell tumours, 83 x 2308, 4 classes (GEMS)",
           "Khan et al. (2001); GEMS (Statnikov et al., 2005)", "none stated",
           "Khan et al. (2001), Nature Medicine 7; Statnikov et al. (2005), Bioinformatics 21",
           (Remote("srbct/SRBCT.arff.gz",
                   _github("lyceia/FS-DB", "0a44bce1f84c64bcfd457cf4ecacdf504076912f",
                           "SRBCT.arff"), _gzip),)),
    Source("ssl-text", "SSL benchmark set 9 'Text', 1500 x 11 960 sparse",
           "Chapelle, Schölkopf & Zien (2006)", "none stated",
           "Chapelle, Schölkopf & Zien (eds.), Semi-Supervised Learning, MIT Press (2006)",
           tuple(Remote(f"ssl-text/{f}",
                        _github("snknitin/Learning-from-Labeled-and-Unlabeled-Data-with-"
                                "Label-Propagation",
                                "92ad9db832035300992f27243b2a0f0a78535f20", f))
                 for f in ("SSL,set=9,data.mat", "SSL,set=9,splits,labeled=10.mat"))),
)}


def target_dir(directory: str | os.PathLike | None = None) -> Path:
    """The directory ``fetch`` writes to: ``directory``, else ``ZBOUND_DATA``, else
    :func:`default_dir`."""
    if directory is not None:
        return Path(directory).expanduser()
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser() if value else default_dir()


def _download(url: str, dest: Path, known_hash: str | None, retries: int,
              progress: bool) -> Path:
    """One download by pooch into ``dest`` (written under a temporary name and moved into
    place only when complete and, with ``known_hash``, verified)."""
    import pooch
    import requests

    dest.parent.mkdir(parents=True, exist_ok=True)
    downloader = pooch.HTTPDownloader(progressbar=progress, timeout=60)
    fetcher = pooch.create(path=dest.parent, base_url="", registry={dest.name: known_hash},
                           urls={dest.name: url}, retry_if_failed=retries)
    try:
        return Path(fetcher.fetch(dest.name, downloader=downloader))
    except ValueError as exc:             # pooch: hash mismatch
        raise DataFetchError(f"{url}: the download's sha256 differs from the registered one "
                             f"({exc}). The server holds another file; nothing was kept.") \
            from None
    except (requests.RequestException, OSError) as exc:
        raise DataFetchError(f"could not download {url}: {type(exc).__name__}: {exc}. "
                             f"Check the network connection, or set {MIRROR_VAR} to a mirror "
                             f"of the data directory.") from None


def fetch(name: str, directory: str | os.PathLike | None = None, *, progress: bool = False,
          retries: int = 2) -> Path:
    """Download benchmark set ``name`` (a key of :data:`SOURCES`) into
    ``target_dir(directory)/<name>/...`` unless every file is already there and verified, and
    return the data directory. From ``ZBOUND_DATA_MIRROR`` when set, else from the public
    sources (converted where their layout differs).

    Raises
    ------
    ValueError
        Unknown set name (the message lists the known ones).
    DataFetchError
        A download failed or a file's hash differs from the registered one.
    """
    if name not in SOURCES:
        raise ValueError(f"unknown benchmark data set {name!r}; known: {', '.join(SOURCES)}")
    root = target_dir(directory)
    mirror = os.environ.get(MIRROR_VAR, "").strip().rstrip("/")
    src = SOURCES[name]
    missing = [f for f in src.files if not verified(root / f.target, f.target)]
    if not missing:
        return root
    with tempfile.TemporaryDirectory(prefix=".zbound-fetch-", dir=_mkdir(root)) as tmp:
        downloads: dict[str, Path] = {}
        for f in missing:
            final = root / f.target
            if mirror:
                got = _download(f"{mirror}/{f.target}", Path(tmp) / f.target, SHA256[f.target],
                                retries, progress)
                _place(got, final)
                continue
            if f.convert is None:
                got = _download(f.url, Path(tmp) / f.target, SHA256[f.target], retries,
                                progress)
                _place(got, final)
                continue
            if f.url not in downloads:
                downloads[f.url] = _download(f.url, Path(tmp) / "raw" / str(len(downloads)),
                                             None, retries, progress)
            data = f.convert(downloads[f.url].read_bytes())
            out = Path(tmp) / f.target
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            if not verified(out, f.target):
                raise DataFetchError(
                    f"{f.target}: converted from {f.url}, its sha256 differs from the "
                    f"registered one: the source has changed. Nothing was kept.")
            _place(out, final)
    return root


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _place(src: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(src), str(final))
