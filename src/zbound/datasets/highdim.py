"""High-dimensional sets: SRBCT gene expression (ARFF) and the SSL-book Text set (MATLAB)."""

from __future__ import annotations

import gzip
import io

import numpy as np
import scipy.io
import scipy.sparse as sp

from ._base import Dataset, data_file, encode_labels


def load_srbct() -> Dataset:
    """SRBCT gene expression: X (83, 2308) float64, y (83,) with 4 classes (29, 25, 11, 18).

    Khan et al. (2001), Nature Medicine 7:673-679, GEMS version (Statnikov et al. 2005), read
    from ``srbct/SRBCT.arff.gz``. Features are the ARFF attributes ``2`` .. ``2309``; the
    class (last attribute, nominal ``{0,1,2,3}``) keeps its codes. From the class counts the
    codes are EWS=0, RMS=1, BL=2, NB=3 (inferred by SOURCES.md, not stated in the file).
    """
    with gzip.open(data_file("srbct/SRBCT.arff.gz"), "rt", encoding="ascii") as fh:
        lines = fh.read().splitlines()
    names: list[str] = []
    start = None
    for i, line in enumerate(lines):
        low = line.strip().lower()
        if low.startswith("@attribute"):
            names.append(line.split()[1])
        elif low.startswith("@data"):
            start = i + 1
            break
    if start is None or names[-1] != "class":
        raise ValueError("srbct/SRBCT.arff.gz: no @data section or no final 'class' attribute")
    body = "\n".join(ln for ln in lines[start:] if ln.strip() and not ln.startswith("%"))
    data = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64)
    if data.shape != (83, len(names)):
        raise ValueError(f"srbct: expected 83 rows x {len(names)} columns, got {data.shape}")
    y, target_names = encode_labels(
        data[:, -1].astype(np.int64).astype(str), order=["0", "1", "2", "3"]
    )
    return Dataset(
        X=data[:, :-1],
        y=y,
        feature_names=tuple(names[:-1]),
        name="srbct",
        description=(
            "SRBCT (small round blue cell tumours), 83 x 2308 gene expression, 4 classes "
            "(0=EWS, 1=RMS, 2=BL, 3=NB, inferred); GEMS version via lyceia/FS-DB "
            "(ZBOUND_DATA/SOURCES.md). Cite Khan et al. (2001), Statnikov et al. (2005)."
        ),
        target_names=target_names,
        meta={"class_meaning": ("EWS", "RMS", "BL", "NB")},
    )


def load_ssl_text() -> Dataset:
    """SSL-book benchmark 9 "Text": X (1500, 11960) CSR float64, y (1500,) in {0, 1}, 750 each.

    Chapelle, Schölkopf & Zien (2006), *Semi-Supervised Learning*, benchmark data set 9,
    files ``ssl-text/SSL,set=9,data.mat`` and ``SSL,set=9,splits,labeled=10.mat``. Labels
    -1 -> 0, +1 -> 1. ``meta["splits"]`` is a list of 12 ``(labeled, unlabeled)`` pairs of
    0-based row indices (10 and 1490 rows; the file's indices are 1-based MATLAB indices).
    The ``labeled=100`` splits are not available.
    """
    mat = scipy.io.loadmat(data_file("ssl-text/SSL,set=9,data.mat"))
    X = sp.csr_matrix(mat["X"], dtype=np.float64)
    raw = np.asarray(mat["y"]).ravel().astype(np.int64)
    y, names = encode_labels(raw.astype(str), order=["-1", "1"])
    splits_mat = scipy.io.loadmat(data_file("ssl-text/SSL,set=9,splits,labeled=10.mat"))
    labeled = np.asarray(splits_mat["idxLabs"], dtype=np.int64) - 1
    unlabeled = np.asarray(splits_mat["idxUnls"], dtype=np.int64) - 1
    if X.shape != (1500, 11960) or labeled.shape != (12, 10) or unlabeled.shape != (12, 1490):
        raise ValueError(
            f"ssl-text: unexpected shapes X {X.shape}, idxLabs {labeled.shape}, "
            f"idxUnls {unlabeled.shape}"
        )
    return Dataset(
        X=X,
        y=y,
        feature_names=tuple(f"w{j}" for j in range(X.shape[1])),
        name="ssl-text",
        description=(
            "SSL-book benchmark 9 'Text', 1500 x 11960 sparse, labels -1 -> 0, +1 -> 1; "
            "12 splits with 10 labelled points in meta['splits'] (0-based). Cite Chapelle, "
            "Schölkopf & Zien (2006)."
        ),
        target_names=names,
        meta={"splits": [(labeled[i], unlabeled[i]) for i in range(labeled.shape[0])]},
    )
