"""The one preconditioner policy for conjugate-gradient solves with softmax-type curvature.

Solvers that run preconditioned CG on a sequence of curvatures (Newton or bound steps of one
fit) hold a :class:`PreconditionerPolicy` and ask it for a preconditioner; which form it
builds follows from the curvature's shape (rows, class blocks, block size, sparsity) and the
memory budget of :func:`zbound.bounds.preconditioners.block_budget`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from zbound.bounds.curvature import DiagonalCurvature, RankOneCurvature, SoftmaxCurvature
from zbound.bounds.preconditioners import (
    EIGEN_MAX_ELEMS,
    SOFTMAX_WOODBURY_MAX,
    block_budget,
    block_preconditioner_kind,
    eigen_block_preconditioner,
    factor_blocks,
    factor_gram,
    gram_block_jacobi,
    gram_eigenbasis,
    softmax_woodbury,
    stored_entries,
)
from zbound.utils.linalg import block_jacobi

# Dense class blocks (m b^2 numbers) above which kind="auto" uses the Gram eigenbasis.
BLOCKS_MAX_ELEMS = 1 << 20


def block_shape(H) -> tuple[int, int, int] | None:
    """(rows, m, b) of the dense class blocks of ``H`` (m blocks of size (b, b), Gram matrices
    over ``rows`` rows), or None when ``H`` has no factored form or its data are sparse."""
    fac = H.block_factors()
    if fac is None or any(sp.issparse(f[0]) for f in fac[0]):
        return None
    m, b = fac[1].shape
    return sum(f[0].shape[0] for f in fac[0]), m, b


def eigen_fits(H) -> bool:
    """kind="auto" takes the Gram-eigenbasis form for m >= 2 dense class blocks of size b
    over at least b rows once the m (b, b) blocks pass ``BLOCKS_MAX_ELEMS`` (8 MB) and while
    the (b, b) eigenvectors fit in ``EIGEN_MAX_ELEMS``: one (b, b) array instead of m, and
    refreshes about m b / 2 times cheaper. Below that size the exact blocks stay (they took
    fewer products on the benchmark problems)."""
    shape = block_shape(H)
    if shape is None:
        return False
    rows, m, b = shape
    return m >= 2 and rows >= b and m * b * b > BLOCKS_MAX_ELEMS and b * b <= EIGEN_MAX_ELEMS


def fewer_rows_than_block(H) -> bool:
    """Whether H's class blocks have more columns than there are rows (or no factored form)."""
    fac = H.block_factors()
    if fac is None:
        return True
    return sum(f[0].shape[0] for f in fac[0]) < fac[1].shape[1]


def block_preconditioner(H):
    """``H.preconditioner()``, except that dense class blocks of dense factors are built by
    :func:`factor_blocks` (row chunks of 256 KB and syrk, where the operator's own assembly
    holds a weighted copy of the data) and inverted in place by ``block_jacobi``."""
    fac = H.block_factors()
    if fac is not None:
        pairs, extra = fac
        rows = sum(f[0].shape[0] for f in pairs)
        if block_preconditioner_kind(rows, extra.shape[1], extra.shape[0],
                                     block_budget(pairs), stored_entries(pairs)) == "dense":
            blocks = factor_blocks(pairs, extra)
            del pairs, fac
            if blocks is not None:
                pre = block_jacobi(blocks)
                if pre is not None:
                    return pre
    return H.preconditioner()


def softmax_parts(H):
    """(S, extra) when ``H`` is one softmax curvature S plus diagonal and rank-one terms,
    ``extra`` (n, d) S's ridge plus those terms' diagonal; None otherwise."""
    parts = getattr(H, "parts", (H,))
    soft = [c for c in parts if isinstance(c, SoftmaxCurvature)]
    if len(soft) != 1:
        return None
    S = soft[0]
    extra = np.full((S.n, S.d), S.reg)
    for c in parts:
        if c is S:
            continue
        if not isinstance(c, DiagonalCurvature | RankOneCurvature):
            return None
        extra += c.diagonal().reshape(extra.shape)
    return S, extra


class PreconditionerPolicy:
    """The preconditioner policy for preconditioned CG on a sequence of softmax-type
    curvatures (Newton or bound steps of one fit), with what it caches across builds.

    ``kind``: "blocks" (the operator's own block-Jacobi preconditioner, built by
    :func:`block_preconditioner`), "gram" (the blocks approximated by w_a X^T X + D_a, X^T X
    formed once: exact at theta = 0, a refresh costs m b^3), "eigen" (each block's exact
    diagonal in the eigenbasis of X^T X: one (b, b) array for all classes, a refresh one pass
    over the rows) or "auto": "eigen" for m >= 2 dense blocks over at least b rows once
    m b^2 > ``BLOCKS_MAX_ELEMS``; with fewer rows than b the whole softmax Hessian by Woodbury
    (:func:`softmax_woodbury`, rebuilt every step; dense X, t n <= ``SOFTMAX_WOODBURY_MAX``)
    or else the operator's own per-class Woodbury form (sparse data); otherwise the Gram form
    first and true blocks from the first refresh on.
    """

    KINDS = ("auto", "gram", "blocks", "eigen")

    def __init__(self, kind: str = "auto"):
        if kind not in self.KINDS:
            raise ValueError(f"precond must be one of {self.KINDS}, got {kind!r}")
        self.kind = kind
        self.gram = None
        self.rows_gram = None       # (id of X, X X^T) for softmax_woodbury
        self.basis = None

    def build(self, H, first: bool = True):
        """(preconditioner, every_step): a map r -> M^{-1} r for ``H``, and whether it is to
        be rebuilt at every step (the exact Woodbury inverse). ``first``: no preconditioner
        was built before in this fit (kind="auto" starts with the cheaper Gram form)."""
        kind = self.kind
        if kind == "auto" and eigen_fits(H):
            kind = "eigen"
        elif kind == "auto" and fewer_rows_than_block(H):
            # the whole Hessian, class coupling included, by Woodbury through one (t n, t n)
            # system when that is small: rebuilt at every step (it is then the exact inverse
            # up to the penalty's rank-one part, taken by its diagonal); else the operator's
            # own preconditioner, Woodbury through rows x rows systems per class block (the
            # Gram form would build and invert m dense (b, b) blocks)
            pre = self._softmax_woodbury(H)
            if pre is not None:
                return pre, True
            kind = "blocks"
        elif kind == "auto":
            # the Gram form first (cheap, exact at theta = 0); true blocks once a solve with it
            # got long (the probabilities then vary too much over the rows)
            kind = "gram" if first else "blocks"
        if kind == "eigen":
            pre = self._from_factors(H, "basis", gram_eigenbasis, eigen_block_preconditioner)
            if pre is not None:
                return pre, False
            kind = "gram"
        if kind == "gram":
            pre = self._from_factors(H, "gram", factor_gram, gram_block_jacobi)
            if pre is not None:
                return pre, False
        return block_preconditioner(H), False

    def _softmax_woodbury(self, H):
        """:func:`softmax_woodbury` for H = one dense softmax Hessian plus diagonal and
        rank-one penalties (those by their diagonal), X X^T kept across builds; None for any
        other H or too many rows x classes."""
        found = softmax_parts(H)
        if found is None:
            return None
        S, extra = found
        if S.n < 2 or sp.issparse(S.X) or S.X.shape[0] * S.n > SOFTMAX_WOODBURY_MAX:
            return None
        key = id(S.X)
        if self.rows_gram is None or self.rows_gram[0] != key:
            self.rows_gram = (key, S.X @ S.X.T)
        return softmax_woodbury(S.X, S.P, S.weights, S.intercept, extra, self.rows_gram[1])

    def _from_factors(self, H, attr: str, setup, make):
        """``make(setup(factors), factors, extra)`` from H's dense ``block_factors``, the
        per-data-set ``setup`` (X^T X or its eigenvectors) cached in ``attr`` by the identity
        of the data arrays; None for sparse or unfactored H."""
        fac = H.block_factors()
        if fac is None or any(sp.issparse(f[0]) for f in fac[0]):
            return None
        b = fac[1].shape[1]
        if b * b > block_budget(fac[0]):
            # one (b, b) array beyond the data's own size (wide data: 300 rows x 20 000
            # columns asked for 3.2 GB and crashed the process): the block preconditioner,
            # which picks a form within the budget (Woodbury over the rows, or the diagonal)
            return None
        key = tuple(id(f[0]) for f in fac[0])
        cached = getattr(self, attr)
        if cached is None or cached[0] != key:
            cached = (key, setup(fac[0]))
            setattr(self, attr, cached)
        return make(cached[1], fac[0], fac[1])


__all__ = ["PreconditionerPolicy", "block_preconditioner", "block_shape", "eigen_fits",
           "fewer_rows_than_block", "softmax_parts", "BLOCKS_MAX_ELEMS"]
