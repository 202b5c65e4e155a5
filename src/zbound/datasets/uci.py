"""Loaders for the small UCI classification sets and UCI Adult, read from ``ZBOUND_DATA``.

Formats, shapes and provenance are those of ``SOURCES.md`` in the data directory. Labels are
int64 codes ``0..K-1``; ``Dataset.target_names`` gives the label as written in the file.
"""

from __future__ import annotations

import gzip

import numpy as np

from ._base import Dataset, data_file, encode_labels
from .preprocessing import impute_mean

_UCI = "UCI Machine Learning Repository (Dua & Graff), copy described in ZBOUND_DATA/SOURCES.md"


def _read_csv_rows(path, *, encoding="ascii") -> list[list[str]]:
    """Comma-separated rows of a small text file, blank lines skipped, CR/LF handled."""
    with open(path, encoding=encoding, newline="") as fh:
        text = fh.read()
    return [line.split(",") for line in text.splitlines() if line.strip()]


def _float_matrix(rows: list[list[str]], missing: str | None = None) -> np.ndarray:
    """Rows of numeric strings to float64; ``missing`` marks NaN."""
    def conv(v: str) -> float:
        v = v.strip()
        return np.nan if (missing is not None and v == missing) else float(v)

    return np.array([[conv(v) for v in row] for row in rows], dtype=np.float64)


def load_bupa() -> Dataset:
    """BUPA liver-disorders: X (345, 6) float64, y (345,) from the selector column.

    Features: mcv, alkphos, sgpt, sgot, gammagt, drinks (UCI "Liver Disorders", BUPA Medical
    Research Ltd., R. S. Forsyth). Column 7 is the UCI "selector" field, used as the class by
    the benchmarks (and by Jebara & Choromanska 2012, Table 3, Bupa t=345, dim=7 = 6 + bias):
    ``y = 0`` for selector 1 (145 rows), ``y = 1`` for selector 2 (200 rows).
    File: ``liver-disorders/bupa.data``.
    """
    rows = _read_csv_rows(data_file("liver-disorders/bupa.data"))
    if any(len(r) != 7 for r in rows):
        raise ValueError("liver-disorders/bupa.data: expected 7 comma-separated columns per row")
    data = _float_matrix(rows)
    y, names = encode_labels(data[:, 6].astype(np.int64).astype(str), order=["1", "2"])
    return Dataset(
        X=data[:, :6],
        y=y,
        feature_names=("mcv", "alkphos", "sgpt", "sgot", "gammagt", "drinks"),
        name="bupa",
        description=(
            "BUPA liver-disorders, 345 x 6, label = selector column 7 (1 -> 0, 2 -> 1). "
            f"Source: {_UCI}."
        ),
        target_names=names,
    )


def load_ionosphere() -> Dataset:
    """Ionosphere: X (351, 34) float64, y (351,) with b -> 0 (126), g -> 1 (225).

    Radar returns (Sigillito et al. 1989, Johns Hopkins APL Tech. Digest 10:262-266). Label is
    the last column (g = good, b = bad). Column 2 (``a02``) is constant 0: :func:`design_matrix`
    drops it, which gives the paper's dim = 34 (33 + bias). File: ``ionosphere/ionosphere.data``.
    """
    rows = _read_csv_rows(data_file("ionosphere/ionosphere.data"))
    if any(len(r) != 35 for r in rows):
        raise ValueError("ionosphere/ionosphere.data: expected 35 columns per row")
    X = _float_matrix([r[:34] for r in rows])
    y, names = encode_labels([r[34].strip() for r in rows], order=["b", "g"])
    return Dataset(
        X=X,
        y=y,
        feature_names=tuple(f"a{j:02d}" for j in range(1, 35)),
        name="ionosphere",
        description=(
            "Ionosphere radar returns, 351 x 34 continuous features, label last column "
            "(b -> 0, g -> 1); column a02 is constant 0. "
            f"Source: {_UCI}; cite Sigillito et al. (1989)."
        ),
        target_names=names,
    )


def load_spect(subset: str = "test") -> Dataset:
    """SPECT heart: X (187, 22) float64 in {0, 1} for ``subset="test"`` (the default).

    Kurgan et al. (2001), Artificial Intelligence in Medicine 23(2):149-169. Label is the first
    column (OVERALL_DIAGNOSIS, 0/1; codes unchanged). Jebara & Choromanska (2012), Table 3
    ("Heart", t=187, dim=23 = 22 + bias) use the TEST file, which is the default here.

    Parameters
    ----------
    subset : {"test", "train", "all"}
        ``"test"``: SPECT.test, 187 rows (172 ones, 15 zeros). ``"train"``: SPECT.train, 80 rows
        (40/40). ``"all"``: both, train rows first, 267 rows. None of these sets ``X_test``.
    """
    files = {"train": ["spect/SPECT.train"], "test": ["spect/SPECT.test"]}
    files["all"] = files["train"] + files["test"]
    if subset not in files:
        raise ValueError(f"subset must be 'test', 'train' or 'all', got {subset!r}")
    rows = [r for f in files[subset] for r in _read_csv_rows(data_file(f))]
    if any(len(r) != 23 for r in rows):
        raise ValueError("SPECT: expected 23 columns per row (label + 22 binary features)")
    data = _float_matrix(rows)
    y, names = encode_labels(data[:, 0].astype(np.int64).astype(str), order=["0", "1"])
    return Dataset(
        X=data[:, 1:],
        y=y,
        feature_names=tuple(f"F{j}" for j in range(1, 23)),
        name="spect",
        description=(
            f"SPECT heart ({subset}: {', '.join(files[subset])}), {len(rows)} x 22 binary "
            "features, label = first column OVERALL_DIAGNOSIS. "
            f"Source: {_UCI}; cite Kurgan et al. (2001)."
        ),
        target_names=names,
        meta={"subset": subset},
    )


HEPATITIS_FEATURES = (
    "age", "sex", "steroid", "antivirals", "fatigue", "malaise", "anorexia", "liver_big",
    "liver_firm", "spleen_palpable", "spiders", "ascites", "varices", "bilirubin",
    "alk_phosphate", "sgot", "albumin", "protime", "histology",
)


def load_hepatitis(impute: bool = True) -> Dataset:
    """Hepatitis: X (155, 19) float64, y (155,) with DIE (1) -> 0 (32), LIVE (2) -> 1 (123).

    UCI "Hepatitis" (G. Gong, CMU, via B. Cestnik, 1988). Label is the first column. 167 cells in
    75 rows are missing (``?``).

    Parameters
    ----------
    impute : bool
        True (default): fill missing cells with the column mean of the observed values,
        :func:`impute_mean`, as in Jebara & Choromanska (2012), supplement ("missing values
        were handled via mean-imputation"; Hepatitis t=155, dim=20 = 19 + bias). The mask of
        missing cells is kept in ``meta["missing"]`` ((155, 19) bool). False: missing cells are
        NaN.
    """
    rows = _read_csv_rows(data_file("hepatitis/hepatitis.data"))
    if any(len(r) != 20 for r in rows):
        raise ValueError("hepatitis/hepatitis.data: expected 20 columns per row")
    y, names = encode_labels([r[0].strip() for r in rows], order=["1", "2"])
    X = _float_matrix([r[1:] for r in rows], missing="?")
    missing = np.isnan(X)
    if impute:
        X = impute_mean(X)
    return Dataset(
        X=X,
        y=y,
        feature_names=HEPATITIS_FEATURES,
        name="hepatitis",
        description=(
            "Hepatitis, 155 x 19, label = first column (1=DIE -> 0, 2=LIVE -> 1); "
            f"{int(missing.sum())} missing cells "
            + ("mean-imputed (impute_mean)." if impute else "left as NaN.")
            + f" Source: {_UCI}."
        ),
        target_names=("DIE", "LIVE"),
        meta={"missing": missing, "raw_labels": names},
    )


ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country",
)
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week")


def _read_adult(relpath: str) -> tuple[list[list[str]], list[str]]:
    """Records and raw labels of an adult file: handles the test file's first line and periods."""
    with gzip.open(data_file(relpath), "rt", encoding="ascii") as fh:
        lines = fh.read().splitlines()
    records, labels = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("|"):
            # adult.test begins with "|1x3 Cross validator"; both files end with an empty line.
            continue
        fields = [v.strip() for v in line.split(",")]
        if len(fields) != 15:
            raise ValueError(f"{relpath}: line {number} has {len(fields)} fields, expected 15")
        records.append(fields[:14])
        labels.append(fields[14].rstrip("."))  # test labels read "<=50K." / ">50K."
    return records, labels


def _encode_adult(arr: np.ndarray, categories: dict, encoding: str) -> np.ndarray:
    """Adult's rows (strings, file order) as a float64 matrix: the numeric columns, then one
    0/1 column per training category of each categorical column ("onehot"), or every column
    in file order with categories as their index in the sorted training categories, -1 if
    unseen ("ordinal")."""
    blocks: list[np.ndarray] = []
    if encoding == "onehot":
        for j, col in enumerate(ADULT_COLUMNS):
            if col in ADULT_NUMERIC:
                blocks.append(arr[:, j].astype(np.float64)[:, None])
        for j, col in enumerate(ADULT_COLUMNS):
            if col not in ADULT_NUMERIC:
                cats = np.array(categories[col], dtype=object)
                blocks.append((arr[:, j][:, None] == cats[None, :]).astype(np.float64))
    else:
        for j, col in enumerate(ADULT_COLUMNS):
            if col in ADULT_NUMERIC:
                blocks.append(arr[:, j].astype(np.float64)[:, None])
            else:
                lookup = {c: k for k, c in enumerate(categories[col])}
                codes = [lookup.get(v, -1) for v in arr[:, j]]
                blocks.append(np.array(codes, dtype=np.float64)[:, None])
    return np.hstack(blocks)


def load_adult(encoding: str = "onehot", missing: str = "category") -> Dataset:
    """UCI Adult (census income), with the official train/test split.

    Kohavi (1996), KDD-96; US Census 1994. Label: ``<=50K`` -> 0, ``>50K`` -> 1 (the test
    file's trailing period is removed). Files ``adult/adult.data.gz``, ``adult/adult.test.gz``.

    Parameters
    ----------
    encoding : {"onehot", "ordinal"}
        ``"onehot"`` (default): the 6 numeric columns as they are, then one 0/1 column per
        category of each of the 8 categorical columns (categories as seen in the training
        file, sorted; a test category unseen in training would give an all-zero block).
        ``"ordinal"``: the 14 columns in file order, each categorical replaced by the index of
        its category in the sorted training categories (-1 for a test category unseen in
        training; there is none in these files). This gives d = 14 as in Wang &
        Choromanska (SGB paper), Fig. 1 (adult, T = 48842 = train + test, d = 14).
    missing : {"category", "drop"}
        ``"category"`` (default): ``?`` is kept as a category of its own (column
        ``workclass=?`` etc.; all 32561 + 16281 rows kept). ``"drop"``: rows with any ``?``
        are removed (30162 train + 15060 test rows). The three columns with missing values
        are all categorical.

    Returns
    -------
    Dataset with X (32561, d), y (32561,), X_test (16281, d), y_test (16281,) float64 dense
    (30162 and 15060 rows with ``missing="drop"``). d = 6 numeric + 102 one-hot = 108 for
    onehot with missing="category" (including the three ``=?`` columns); 104 with
    missing="drop" (the ``=?`` columns and ``workclass=Never-worked``, whose 7 rows all lack
    occupation, disappear); 14 for ordinal. ``meta["categories"]`` maps each categorical
    column to its category list.
    """
    if encoding not in ("onehot", "ordinal"):
        raise ValueError(f"encoding must be 'onehot' or 'ordinal', got {encoding!r}")
    if missing not in ("category", "drop"):
        raise ValueError(f"missing must be 'category' or 'drop', got {missing!r}")
    train, y_train_raw = _read_adult("adult/adult.data.gz")
    test, y_test_raw = _read_adult("adult/adult.test.gz")
    if missing == "drop":
        keep = [i for i, r in enumerate(train) if "?" not in r]
        train, y_train_raw = [train[i] for i in keep], [y_train_raw[i] for i in keep]
        keep = [i for i, r in enumerate(test) if "?" not in r]
        test, y_test_raw = [test[i] for i in keep], [y_test_raw[i] for i in keep]
    y_train, names = encode_labels(y_train_raw, order=["<=50K", ">50K"])
    y_test, _ = encode_labels(y_test_raw, order=["<=50K", ">50K"])

    train_arr = np.array(train, dtype=object)
    test_arr = np.array(test, dtype=object)
    categories = {
        col: sorted(set(train_arr[:, j].tolist()))
        for j, col in enumerate(ADULT_COLUMNS)
        if col not in ADULT_NUMERIC
    }

    if encoding == "onehot":
        feature_names = [c for c in ADULT_COLUMNS if c in ADULT_NUMERIC]
        for col in ADULT_COLUMNS:
            if col not in ADULT_NUMERIC:
                feature_names += [f"{col}={c}" for c in categories[col]]
    else:
        feature_names = list(ADULT_COLUMNS)
    X, X_test = (_encode_adult(arr, categories, encoding) for arr in (train_arr, test_arr))
    return Dataset(
        X=X,
        y=y_train,
        feature_names=tuple(feature_names),
        name="adult",
        description=(
            f"UCI Adult, train {X.shape} / test {X_test.shape}, {encoding} encoding, "
            f"'?' handled as {missing!r}; label <=50K -> 0, >50K -> 1. "
            f"Source: {_UCI}; cite Kohavi (1996)."
        ),
        X_test=X_test,
        y_test=y_test,
        target_names=names,
        meta={"categories": categories, "encoding": encoding, "missing": missing},
    )
