"""Class-major softmax kernels shared by the softmax models.

Scores are kept as S^T of shape (n_classes, t): reductions over the classes run across
contiguous rows (for two classes far cheaper than a row-wise reduction over a (t, 2)
array), and
P^T X gives the gradient in vec(W) order without a copy.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from zbound.utils.logspace import logsumexp


def class_major_scores(X, W: np.ndarray, intercept: bool = False) -> np.ndarray:
    """S^T = W X^T, (k, t) C-contiguous, for dense or CSR X (t, d) and W (k, d); with
    ``intercept`` W is (k, d + 1) and its last column b is added (S^T = W[:, :d] X^T + b: the
    design [X, 1] without forming it)."""
    if intercept:
        ST = class_major_scores(X, W[:, :-1])
        ST += W[:, -1:]
        return ST
    if sp.issparse(X):
        return np.ascontiguousarray((X @ W.T).T)
    k = W.shape[0]
    if 1 < k <= SCORE_GEMV_ROWS:
        # one matrix-vector product per row of W: OpenBLAS runs W X^T with two or three rows
        # of W faster this way (AVX-512 and AVX2 kernels alike); from four rows on the
        # product is as fast
        out = np.empty((k, X.shape[0]), dtype=np.result_type(X, W))
        for i in range(k):
            np.dot(X, W[i], out=out[i])
        return out
    return W @ X.T


def logsumexp_classes(ST: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log-sum-exp over the classes (axis 0) of S^T, and the column sums of exp(S^T - max).

    ``ST`` is overwritten with exp(S^T - max): dividing it by the sums gives P^T.
    """
    lse, _, s = logsumexp(ST, axis=0, return_exp=True, overwrite_a=True)
    return lse, s[0]


def class_major_product(R: np.ndarray, X, intercept: bool = False) -> np.ndarray:
    """R X, (k, d) C-contiguous, for R (k, t) and dense or CSR X (t, d): gradients and
    observed-feature sums in vec(W) order; with ``intercept`` R [X, 1], (k, d + 1), the last
    column the row sums of R."""
    if intercept:
        out = np.empty((R.shape[0], X.shape[1] + 1))
        out[:, :-1] = class_major_product(R, X)
        out[:, -1] = R.sum(axis=1)
        return out
    if sp.issparse(X):
        return np.ascontiguousarray(np.asarray(X.T @ R.T).T)
    t = X.shape[0]
    step = max(256, PRODUCT_BLOCK_BYTES // max(1, X.shape[1] * X.itemsize))
    if R.shape[0] < 2 or t < 2 * step:
        return R @ X
    # summed over row blocks of about PRODUCT_BLOCK_BYTES: OpenBLAS's AVX-512 kernels run
    # this product (a few rows of R against many of X) faster blocked than whole, its AVX2
    # kernels about as fast
    out = R[:, :step] @ X[:step]
    for a in range(step, t, step):
        out += R[:, a:a + step] @ X[a:a + step]
    return out


#: Most rows of W that :func:`class_major_scores` multiplies one at a time.
SCORE_GEMV_ROWS = 3
#: Bytes of X per block of :func:`class_major_product`'s row loop.
PRODUCT_BLOCK_BYTES = 256 << 10


__all__ = ["class_major_scores", "logsumexp_classes", "class_major_product",
           "PRODUCT_BLOCK_BYTES", "SCORE_GEMV_ROWS"]
