"""Feature sets of monomials on the Boolean hypercube (Beyler & Bach, Sec. 3.1 and 5).

A monomial x^alpha = prod_{i in alpha} x_i is stored as a bit mask: bit i of ``alpha`` is set when
x_i is in the product, so the constant 1 is ``alpha = 0`` and x_i is ``1 << i``. Masks are Python
ints (any d); internally they are packed into ``(n, w)`` arrays of uint64 words, w = ceil(d / 64),
so that every operation on a feature set is vectorized.

For a feature set I of size n, phi_I(x) = (x^alpha)_{alpha in I} and the moment matrix
Sigma_p = E_p[phi phi^T] has entries E_p[x^(alpha XOR beta)] (eq. (2)). The space V of eq. (3)
holds the n x n matrices that are constant on each *XOR class* {(a, b) : a XOR b = gamma};
:class:`XorClasses` stores that partition once and projects onto V in O(n^2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

__all__ = [
    "FeatureSet",
    "XorClasses",
    "default_features",
    "edge_features",
    "tree_features",
    "all_features",
    "degree_features",
    "coefficient_matrix",
    "distance_one_candidates",
]

_MAX_ALL_FEATURES_D = 12  # 2^12 = 4096 features, n^2 = 16.7M XOR classes entries


def _n_words(d: int) -> int:
    return max(1, -(-d // 64))


def _pack(masks: Iterable[int], d: int) -> np.ndarray:
    """Python-int masks -> (n, w) uint64 words (word k holds bits 64k .. 64k + 63)."""
    w = _n_words(d)
    masks = list(masks)
    out = np.zeros((len(masks), w), dtype=np.uint64)
    lo = (1 << 64) - 1
    for k in range(w):
        out[:, k] = [(m >> (64 * k)) & lo for m in masks]
    return out


def _unpack(words: np.ndarray) -> list[int]:
    """(m, w) uint64 words -> Python-int masks."""
    out = [0] * words.shape[0]
    for k in range(words.shape[1]):
        col = words[:, k].tolist()
        out = [o | (int(c) << (64 * k)) for o, c in zip(out, col)]
    return out


def _row_keys(words: np.ndarray) -> np.ndarray:
    """One sortable scalar per row of an (m, w) word array (structured dtype when w > 1)."""
    if words.shape[1] == 1:
        return np.ascontiguousarray(words[:, 0])
    dtype = np.dtype([(f"w{k}", np.uint64) for k in reversed(range(words.shape[1]))])
    # most significant word first, so that the structured order is the numeric order
    return np.ascontiguousarray(words[:, ::-1]).view(dtype).reshape(-1)


def _low_bits(words: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` lowest set bits of each row of (m, w) words, -1 if fewer.

    Vectorized over rows: within a word, the lowest set bit is ``v & -v`` and its position is the
    exponent of that power of two (exact in float64 up to 2^63, handled via frexp).
    """
    words = words.copy()
    m = words.shape[0]
    out = np.full((m, count), -1, dtype=np.int64)
    for c in range(count):
        for k in range(words.shape[1]):
            v = words[:, k]
            todo = (out[:, c] < 0) & (v != 0)
            if not np.any(todo):
                continue
            vv = v[todo]
            low = vv & (~vv + np.uint64(1))
            # frexp(2^p) = (0.5, p + 1); float conversion of a power of two is exact
            _, e = np.frexp(low.astype(np.float64))
            out[todo, c] = 64 * k + e.astype(np.int64) - 1
            words[todo, k] = vv ^ low
    return out


@dataclass(frozen=True, eq=False)
class XorClasses:
    """Partition of the n x n index pairs of a feature set by alpha XOR beta (eq. (3)).

    ``index``: (n, n) class id of each entry; ``counts``: (C,) entries per class; ``keys``: (C, w)
    uint64 words of each class's monomial gamma = alpha XOR beta; ``diag``: id of the class
    gamma = 0 (the diagonal). Class ids follow the numeric order of gamma.
    """

    index: np.ndarray
    counts: np.ndarray
    keys: np.ndarray
    diag: int

    @property
    def n_classes(self) -> int:
        return self.counts.shape[0]

    @cached_property
    def _flat(self) -> np.ndarray:
        return self.index.reshape(-1)

    @cached_property
    def pairs_only(self) -> bool:
        """True when every off-diagonal class is a single pair {(a, b), (b, a)}.

        Then, for a symmetric matrix, projecting onto V only replaces the diagonal by its mean;
        this holds for (1, x) and is the fast path of the solver.
        """
        n = self.index.shape[0]
        return self.n_classes == 1 + n * (n - 1) // 2

    def class_means(self, M: np.ndarray) -> np.ndarray:
        """(C,) mean of the entries of ``M`` (n, n) over each XOR class."""
        sums = np.bincount(self._flat, weights=M.reshape(-1), minlength=self.n_classes)
        return sums / self.counts

    def expand(self, values: np.ndarray) -> np.ndarray:
        """The matrix of V whose entry (a, b) is ``values[class(a XOR b)]``."""
        return values[self.index]

    def project(self, M: np.ndarray) -> np.ndarray:
        """Orthogonal (Frobenius) projection of a square matrix onto V: average each XOR class."""
        M = np.asarray(M, dtype=np.float64)
        n = self.index.shape[0]
        if M.shape != (n, n):
            raise ValueError(f"matrix must have shape ({n}, {n}), got {M.shape}")
        if self.pairs_only:
            out = 0.5 * (M + M.T)
            np.fill_diagonal(out, np.trace(M) / n)
            return out
        return self.expand(self.class_means(M))

    def project_perp(self, M: np.ndarray) -> np.ndarray:
        """Projection onto the orthogonal complement of V (each class sums to zero)."""
        return np.asarray(M, dtype=np.float64) - self.project(M)

    def class_id(self, masks: Iterable[int], d: int) -> np.ndarray:
        """Class id of each monomial mask (Python ints), -1 where no pair of features yields it."""
        words = _pack(masks, d)
        if words.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        keys = _row_keys(self.keys)
        q = _row_keys(words)
        pos = np.searchsorted(keys, q)
        pos = np.minimum(pos, keys.shape[0] - 1)
        return np.where(keys[pos] == q, pos, -1).astype(np.int64)


class FeatureSet:
    """Ordered set of distinct monomials of ``d`` variables (Sec. 3.1), as bit masks.

    ``FeatureSet(d, masks)`` with masks Python ints in [0, 2^d). The order of ``masks`` is the
    order of the rows of phi(x) and of every matrix built from this set.
    """


    def __init__(self, d: int, masks: Iterable[int]):
        if isinstance(d, bool) or not isinstance(d, int | np.integer):
            raise TypeError(f"d must be an int, got {type(d).__name__}")
        d = int(d)
        if d < 1:
            raise ValueError(f"d must be >= 1, got {d}")
        out = []
        for m in masks:
            if isinstance(m, bool) or not isinstance(m, int | np.integer):
                raise TypeError(f"feature masks must be ints, got {type(m).__name__}")
            m = int(m)
            if m < 0 or m >> d:
                raise ValueError(f"feature mask {m} is not a monomial of d={d} variables")
            out.append(m)
        if not out:
            raise ValueError("a feature set needs at least one monomial")
        if len(set(out)) != len(out):
            raise ValueError("feature masks must be distinct")
        self.d = d
        self.masks = tuple(out)

    def __len__(self) -> int:
        return len(self.masks)

    @property
    def n(self) -> int:
        return len(self.masks)

    def __repr__(self) -> str:
        return f"FeatureSet(d={self.d}, n={self.n})"

    def __eq__(self, other) -> bool:
        return isinstance(other, FeatureSet) and self.d == other.d and self.masks == other.masks

    def __hash__(self) -> int:
        return hash((self.d, self.masks))

    def __contains__(self, mask: int) -> bool:
        return int(mask) in self._mask_set

    @cached_property
    def _mask_set(self) -> frozenset[int]:
        return frozenset(self.masks)

    @cached_property
    def words(self) -> np.ndarray:
        """(n, w) uint64 words of the masks."""
        return _pack(self.masks, self.d)

    def add(self, *masks: int) -> FeatureSet:
        """A new feature set with ``masks`` appended (Sec. 5.2: extra features)."""
        return FeatureSet(self.d, self.masks + tuple(int(m) for m in masks))

    def position(self, mask: int) -> int:
        """Row of ``mask`` in phi(x)."""
        return self.masks.index(int(mask))

    @cached_property
    def xor_classes(self) -> XorClasses:
        """The XOR-class structure of V for this set (eq. (3)), computed once, O(n^2 w)."""
        W = self.words
        n, w = W.shape
        X = (W[:, None, :] ^ W[None, :, :]).reshape(n * n, w)
        keys, first, inv, counts = np.unique(
            _row_keys(X), return_index=True, return_inverse=True, return_counts=True
        )
        key_words = X[first]
        diag = int(inv[0])  # (0, 0) has gamma = 0
        return XorClasses(
            index=inv.reshape(n, n).astype(np.intp),
            counts=counts.astype(np.float64),
            keys=key_words,
            diag=diag,
        )

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """phi(x): (m, n) for x of shape (m, d) with entries in {-1, 1} (or (d,) -> (n,))."""
        x = np.asarray(x)
        single = x.ndim == 1
        x2 = np.atleast_2d(x)
        if x2.shape[1] != self.d:
            raise ValueError(f"x must have {self.d} columns, got shape {x.shape}")
        if not np.all(np.abs(x2) == 1):
            raise ValueError("x must have entries in {-1, 1}")
        neg = _pack_bool(x2 < 0)
        par = np.zeros((x2.shape[0], self.n), dtype=np.uint64)
        for k in range(neg.shape[1]):
            par += np.bitwise_count(neg[:, None, k] & self.words[None, :, k]).astype(np.uint64)
        phi = 1.0 - 2.0 * (par & np.uint64(1)).astype(np.float64)
        return phi[0] if single else phi


def _pack_bool(b: np.ndarray) -> np.ndarray:
    """(m, d) booleans -> (m, w) uint64 words, bit i set where b[:, i]."""
    m, d = b.shape
    w = _n_words(d)
    padded = np.zeros((m, 64 * w), dtype=np.uint64)
    padded[:, :d] = b
    shifts = np.arange(64, dtype=np.uint64)
    return (padded.reshape(m, w, 64) << shifts).sum(axis=2, dtype=np.uint64)


@lru_cache(maxsize=64)
def default_features(d: int) -> FeatureSet:
    """I_0 = {0, e_1, ..., e_d}: phi_0(x) = (1, x) (Sec. 3.1). Cached: the set is immutable and
    its XOR classes are computed once, in closed form."""
    fs = FeatureSet(d, [0] + [1 << i for i in range(d)])
    fs.__dict__["xor_classes"] = _default_xor_classes(d)     # the cached_property's value
    return fs


def _default_xor_classes(d: int) -> XorClasses:
    """:attr:`FeatureSet.xor_classes` of (1, x) without sorting the n^2 XORs. The classes are
    0, the singletons e_h and the pairs e_h + e_l (l < h); in numeric order the class of e_h
    comes at s_h = 1 + h + h (h - 1) / 2, followed by those of e_h + e_l for l = 0 .. h - 1.
    Feature 0 is the constant, feature i >= 1 the variable i - 1."""
    n = d + 1
    h = np.arange(d, dtype=np.intp)
    start = 1 + h + h * (h - 1) // 2                      # s_h
    i = np.arange(n, dtype=np.intp)
    hi, lo = np.maximum(i[:, None], i[None, :]), np.minimum(i[:, None], i[None, :])
    index = np.where(lo == 0, start[np.maximum(hi - 1, 0)], 0)    # (0, j): e_{j-1}
    pair = lo > 0
    index[pair] = start[hi[pair] - 1] + lo[pair]          # s_h + 1 + l with l = lo - 1
    index[i, i] = 0
    C = 1 + d + d * (d - 1) // 2
    counts = np.full(C, 2.0)
    counts[0] = n
    # keys: the words of gamma per class, in class order
    w = _n_words(d)
    keys = np.zeros((C, w), dtype=np.uint64)
    rows_h = np.repeat(h, h + 1)                          # every class of highest bit h ...
    low = np.arange(C - 1) - (start[rows_h] - 1) - 1      # ... -1 for e_h itself, else l
    one = np.uint64(1)
    np.bitwise_or.at(keys, (1 + np.arange(C - 1), rows_h // 64),
                     one << (rows_h % 64).astype(np.uint64))
    has_low = low >= 0
    ls = low[has_low]
    np.bitwise_or.at(keys, (1 + np.flatnonzero(has_low), ls // 64),
                     one << (ls % 64).astype(np.uint64))
    return XorClasses(index=index, counts=counts, keys=keys, diag=0)


def edge_features(d: int, edges) -> FeatureSet:
    """(1, x, (x_i x_j)_{(i, j) in edges}); with tree edges this is the set of Sec. 6 / App. B.2."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if edges.size and (edges.min() < 0 or edges.max() >= d):
        raise ValueError(f"edge endpoints must lie in [0, {d})")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("edges must join two distinct variables")
    base = default_features(d).masks
    extra = []
    seen = set()
    for i, j in edges.tolist():
        m = (1 << i) | (1 << j)
        if m not in seen:
            seen.add(m)
            extra.append(m)
    return FeatureSet(d, base + tuple(extra))


def tree_features(model) -> FeatureSet:
    """(1, x, x_i x_j on a spanning forest of the model's graph) (App. B.2).

    When the interaction graph is a forest this uses all its edges; otherwise a maximum-|J|
    spanning forest.
    """
    from scipy.sparse.csgraph import minimum_spanning_tree

    A = np.abs(np.triu(np.asarray(model.J, dtype=np.float64), 1))
    if not np.any(A):
        return default_features(model.d)
    # maximum spanning tree: minimum spanning tree of (max + 1 - |J|) on the support
    w = np.where(A > 0, A.max() + 1.0 - A, 0.0)
    T = minimum_spanning_tree(w).tocoo()
    return edge_features(model.d, np.stack([T.row, T.col], axis=1))


def all_features(d: int) -> FeatureSet:
    """All 2^d monomials, for which the relaxation is exact (Sec. 5.1). Needs d <= 12."""
    if d > _MAX_ALL_FEATURES_D:
        raise ValueError(
            f"all_features(d={d}) would have 2^{d} features; limit is d <= {_MAX_ALL_FEATURES_D}"
        )
    return FeatureSet(d, range(1 << d))


def degree_features(d: int, degree: int) -> FeatureSet:
    """All monomials of degree <= ``degree``, by increasing degree (the hierarchy of Sec. 7.3)."""
    from itertools import combinations

    if degree < 1:
        raise ValueError(f"degree must be >= 1, got {degree}")
    masks = []
    for k in range(min(degree, d) + 1):
        for c in combinations(range(d), k):
            masks.append(sum(1 << i for i in c))
    return FeatureSet(d, masks)


def distance_one_candidates(features: FeatureSet) -> list[int]:
    """tilde I = {alpha XOR e_i : alpha in I, i <= d} minus I (Sec. 5.3, Alg. 2), sorted."""
    d = features.d
    W = features.words
    n, w = W.shape
    E = _pack([1 << i for i in range(d)], d)  # (d, w)
    X = (W[:, None, :] ^ E[None, :, :]).reshape(n * d, w)
    keys, first = np.unique(_row_keys(X), return_index=True)
    cand = _unpack(X[first])
    have = features._mask_set
    return [c for c in cand if c not in have]


def coefficient_matrix(model, features: FeatureSet | None = None) -> np.ndarray:
    """F (n, n) in V with phi(x)^T F phi(x) = f(x) for the Ising model (Sec. 3, Sec. 5.2).

    The relaxation depends on F only modulo V's orthogonal complement, so this returns the
    representative of least Frobenius norm: the coefficient of the monomial gamma spread evenly
    over the entries of its XOR class. Raises ValueError if some monomial of f (x_i with h_i != 0
    or x_i x_j with J_ij != 0) is not alpha XOR beta for any two features.
    """
    if features is None:
        features = default_features(model.d)
    if features.d != model.d:
        raise ValueError(f"feature set is for d={features.d}, model has d={model.d}")
    xc = features.xor_classes
    C = xc.n_classes
    pop = np.zeros(C, dtype=np.int64)
    for k in range(xc.keys.shape[1]):
        pop += np.bitwise_count(xc.keys[:, k]).astype(np.int64)
    coef = np.zeros(C)
    h = model.h
    J = model.J
    one = np.flatnonzero(pop == 1)
    two = np.flatnonzero(pop == 2)
    if one.size:
        i = _low_bits(xc.keys[one], 1)[:, 0]
        coef[one] = h[i]
    if two.size:
        ij = _low_bits(xc.keys[two], 2)
        coef[two] = J[ij[:, 0], ij[:, 1]]
    covered_h = np.zeros(model.d, dtype=bool)
    if one.size:
        covered_h[i] = True
    missing = np.flatnonzero((h != 0) & ~covered_h)
    if missing.size:
        raise ValueError(
            f"feature set cannot represent the field term x_{missing[0]}: no two features have "
            f"XOR equal to e_{missing[0]} (include the constant 0 and x_i, e.g. default_features)"
        )
    covered_J = np.zeros((model.d, model.d), dtype=bool)
    if two.size:
        covered_J[ij[:, 0], ij[:, 1]] = True
    miss = np.argwhere(np.triu(J != 0, 1) & ~covered_J)
    if miss.size:
        a, b = miss[0]
        raise ValueError(
            f"feature set cannot represent the coupling x_{a} x_{b}: no two features have XOR "
            f"equal to e_{a} + e_{b}"
        )
    return xc.expand(coef / xc.counts)
