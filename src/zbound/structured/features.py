"""Token features for sequence labelling: built-in templates and dict features -> sparse rows.

Two conventions are accepted, as in sklearn-crfsuite / python-crfsuite:

- a sequence is a list of feature dicts, one per token, ``{name: value}`` with a string value
  (attribute ``"name=value"``, weight 1), a bool (``name`` with weight 1 if True) or a number
  (``name`` with that weight); a list of strings (``["w=the", ...]``) means weight 1 each;
- raw tokens: :func:`token_features` turns ``[word, ...]`` (optionally with POS tags) into the
  dicts of the built-in templates.

:class:`FeatureIndex` maps attributes to columns, from a vocabulary learned once (``fit``) or by
feature hashing (``n_features=2**k``, for streams whose vocabulary is not known in advance). A
corpus becomes one CSR matrix of all tokens, sequence after sequence, plus the lengths.
"""

from __future__ import annotations

import itertools
import numbers
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets

from zbound.utils.validation import label_indices

#: what the structured estimators take as X or y: one item per sequence or graph (a list,
#: or any iterable of them)
Sequences = Iterable[Any]

_SHAPE_SUBS = ((re.compile(r"[A-Z]"), "X"), (re.compile(r"[a-z]"), "x"),
               (re.compile(r"[0-9]"), "d"))


def word_shape(word: str) -> str:
    """'Mr.' -> 'Xx.', '1990s' -> 'dx' after collapsing repeats: 'ddddx'.  -> 'dx'."""
    s = word
    for pat, rep in _SHAPE_SUBS:
        s = pat.sub(rep, s)
    return re.sub(r"(.)\1+", r"\1", s)


def token_features(words, pos=None, window: int = 1) -> list[dict]:
    """Built-in templates for one sentence: word, lowercase, prefixes and suffixes (1-3),
    shape, capitalization and digit flags, POS (and its first two letters) when given, and the
    lowercase words and POS of the neighbours within ``window``; BOS / EOS at the edges."""
    n = len(words)
    if pos is not None and len(pos) != n:
        raise ValueError(f"got {n} words but {len(pos)} POS tags")
    out = []
    low = [w.lower() for w in words]
    for i, w in enumerate(words):
        f = {"bias": 1.0, "w": w, "wl": low[i], "shape": word_shape(w),
             "p1": w[:1], "p2": w[:2], "p3": w[:3], "s1": w[-1:], "s2": w[-2:], "s3": w[-3:],
             "upper": w.isupper(), "title": w.istitle(), "digit": w.isdigit()}
        if pos is not None:
            f["pos"] = pos[i]
            f["pos2"] = pos[i][:2]
        for k in range(1, window + 1):
            if i - k >= 0:
                f[f"wl[-{k}]"] = low[i - k]
                if pos is not None:
                    f[f"pos[-{k}]"] = pos[i - k]
            else:
                f[f"BOS[-{k}]"] = True
            if i + k < n:
                f[f"wl[+{k}]"] = low[i + k]
                if pos is not None:
                    f[f"pos[+{k}]"] = pos[i + k]
            else:
                f[f"EOS[+{k}]"] = True
        out.append(f)
    return out


def attributes(token) -> list[tuple[str, float]]:
    """One token's features as (attribute, weight) pairs (see the module docstring)."""
    if isinstance(token, dict):
        items = []
        for k, v in token.items():
            if isinstance(v, str):
                items.append((f"{k}={v}", 1.0))
            elif isinstance(v, bool | np.bool_):
                if v:
                    items.append((str(k), 1.0))
            elif isinstance(v, numbers.Real):
                v = float(v)
                if not np.isfinite(v):
                    raise ValueError(f"feature {k!r} has a non-finite value {v}")
                items.append((str(k), v))
            else:
                raise TypeError(f"feature {k!r} has a value of type {type(v).__name__}; use "
                                "str, bool or a number")
        return items
    if isinstance(token, list | tuple):
        out = []
        for a in token:
            if not isinstance(a, str):
                raise TypeError(f"a token's feature list must hold strings, got "
                                f"{type(a).__name__}")
            out.append((a, 1.0))
        return out
    raise TypeError(f"a token must be a feature dict or a list of feature strings, got "
                    f"{type(token).__name__}")


def _check_sequence(j: int, seq) -> None:
    """Sequence ``j`` must be a non-empty list of tokens."""
    if isinstance(seq, str | bytes) or not hasattr(seq, "__len__"):
        raise TypeError(f"sequence {j} must be a list of tokens, got {type(seq).__name__}")
    if len(seq) == 0:
        raise ValueError(f"sequence {j} is empty")


class FeatureIndex:
    """Attribute -> column map: a learned vocabulary, or hashing into ``n_features`` columns."""

    def __init__(self, n_features: int | None = None):
        if n_features is not None and (isinstance(n_features, bool) or int(n_features) < 1):
            raise ValueError(f"n_features must be None or a positive integer, got {n_features}")
        self.n_features_hash = None if n_features is None else int(n_features)
        self.vocabulary_: dict[str, int] = {}

    @property
    def hashing(self) -> bool:
        return self.n_features_hash is not None

    @property
    def n_features(self) -> int:
        return self.n_features_hash if self.hashing else len(self.vocabulary_)

    def _column(self, name: str, grow: bool) -> int:
        if self.hashing:
            from sklearn.utils import murmurhash3_32
            return murmurhash3_32(name, positive=True) % self.n_features_hash
        j = self.vocabulary_.get(name)
        if j is None and grow:
            j = self.vocabulary_[name] = len(self.vocabulary_)
        return -1 if j is None else j

    def transform(self, sequences, grow: bool = False):
        """Sequences of tokens -> (CSR of all tokens, lengths). ``grow`` adds new attributes to
        the vocabulary; otherwise unseen attributes are dropped."""
        indptr, indices, data, lengths = [0], [], [], []
        for s, seq in enumerate(sequences):
            _check_sequence(s, seq)
            for tok in seq:
                for name, v in attributes(tok):
                    j = self._column(name, grow)
                    if j >= 0:
                        indices.append(j)
                        data.append(v)
                indptr.append(len(indices))
            lengths.append(len(seq))
        if not lengths:
            raise ValueError("no sequences given")
        n_cols = max(self.n_features, 1)
        X = sp.csr_matrix((np.asarray(data, dtype=np.float64),
                           np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
                          shape=(len(indptr) - 1, n_cols))
        X.sum_duplicates()
        return X, np.asarray(lengths, dtype=np.int64)


def _is_raw(seq) -> bool:
    tok = seq[0]
    return isinstance(tok, str) or (isinstance(tok, tuple) and all(isinstance(a, str)
                                                                    for a in tok))


def _raw_features(seq):
    if isinstance(seq[0], str):
        return token_features(list(seq))
    words = [t[0] for t in seq]
    pos = [t[1] for t in seq] if len(seq[0]) > 1 else None
    return token_features(words, pos)


def _is_matrix(x) -> bool:
    """A sequence given as its (n_tokens, n_features) numeric feature matrix, sparse or dense."""
    return sp.issparse(x) or (isinstance(x, np.ndarray) and x.ndim == 2
                              and x.dtype.kind in "biuf")


def featurize(X, index: FeatureIndex | None, grow: bool = False, n_features: int | None = None):
    """Sequences -> (M, lengths, index): the CSR matrix of every token's features (rows in
    sequence order), the sequence lengths, and the :class:`FeatureIndex` that named the
    columns (None for precomputed matrices).

    ``X``: a list of sequences, each a list of tokens: raw tokens (strings, or (word, POS)
    tuples: featurized by :func:`token_features`), feature dicts or lists of feature
    strings (columns from ``index``, a new one of ``n_features`` hashed columns or a learned
    vocabulary when ``index`` is None; new attributes get columns only with ``grow``); or a
    list of (n_tokens_j, n_features) numeric matrices, sparse or dense, taken as they are.
    Empty input, empty sequences, matrices of different widths, non-finite values and a
    single 2-D array for X raise.
    """
    if isinstance(X, np.ndarray) and X.dtype != object:
        raise TypeError("X must be a list of sequences (lists of tokens), not a 2-D array")
    X = list(X)
    if not X:
        raise ValueError("X holds no sequences")
    if all(_is_matrix(x) for x in X):
        for j, x in enumerate(X):
            if x.shape[0] == 0:
                raise ValueError(f"sequence {j} is empty")
        if len({x.shape[1] for x in X}) > 1:
            raise ValueError(f"the sequences' feature matrices differ in width: "
                             f"{sorted({x.shape[1] for x in X})}")
        M = sp.vstack([sp.csr_matrix(x, dtype=np.float64) for x in X]).tocsr()
        if not np.all(np.isfinite(M.data)):
            raise ValueError("feature values contain NaN or inf")
        return M, np.array([x.shape[0] for x in X]), None
    for j, seq in enumerate(X):
        _check_sequence(j, seq)
    X = [_raw_features(s) if _is_raw(s) else s for s in X]
    if index is None:
        index = FeatureIndex(n_features)
    M, lengths = index.transform(X, grow=grow)
    return M, lengths, index


def label_array(flat) -> np.ndarray:
    """A flat sequence of labels as a NumPy array of their own dtype (int, float, bool or
    str, as ``np.asarray`` gives it); a ValueError for NaN labels, float labels that are not
    whole numbers (scikit-learn's "continuous" targets) or a mix of strings and numbers
    (which NumPy would silently turn into strings), a TypeError for labels that are
    neither."""
    flat = list(flat)
    kinds = {isinstance(v, str | np.str_) for v in flat}
    if len(kinds) > 1:
        raise ValueError("labels mix strings and numbers; use one type for all labels")
    arr = np.asarray(flat)
    if arr.dtype.kind not in "biufU":
        raise TypeError(f"labels must be numbers, booleans or strings, got "
                        f"{type(flat[0]).__name__}" if flat else "no labels")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("labels contain NaN or inf")
        # as scikit-learn's classifiers: float labels must be whole numbers
        check_classification_targets(arr)
    return arr


def encode_labels(y, lengths, classes=None):
    """Label sequences -> (indices of every token's label, classes): ``y`` a list of label
    sequences matching ``lengths``; ``classes`` the known labels (None: the distinct labels
    of ``y`` in ``np.unique`` order and their own dtype, as scikit-learn's classifiers
    give ``classes_``). A label outside ``classes``, NaN, a mix of strings and numbers, or a
    length that differs raises."""
    y = list(y)
    if len(y) != len(lengths):
        raise ValueError(f"X has {len(lengths)} sequences but y has {len(y)}")
    for j, (ys, n) in enumerate(zip(y, lengths)):
        if isinstance(ys, str | bytes) or not hasattr(ys, "__len__"):
            raise TypeError(f"y[{j}] must be a sequence of labels (one per token or node), "
                            f"got {type(ys).__name__} {ys!r}")
        if len(ys) != n:
            raise ValueError(f"sequence {j} has {n} tokens but {len(ys)} labels")
    flat = label_array(itertools.chain.from_iterable(y))
    if flat.size < 1:
        raise ValueError("no labels")
    if classes is None:
        classes, idx = label_indices(flat)
        return idx.astype(np.int64, copy=False), classes
    lookup = {c: i for i, c in enumerate(classes.tolist())}
    try:
        return np.array([lookup[v] for v in flat.tolist()], dtype=np.int64), classes
    except KeyError as exc:
        raise ValueError(f"label {exc.args[0]!r} was not seen in training; known labels: "
                         f"{list(classes)}") from None


