"""Curvature operators whose data stay on the Dask workers, and the gathered dense form.

- :class:`GatheredCurvature`: the (p, p) matrix reduced over the chunks (p small); its
  ``solve`` is exact for every method (the matrix is in hand: a Cholesky factorization costs
  p^3 / 3 flops, nothing next to one pass over the data), which saves the passes an inexact
  Newton step would cost in extra iterations.
- :class:`DistributedCurvature`: one operator per chunk, kept on the worker that holds the
  chunk (in the result of the pass that made them, one per worker, released with the
  curvature); ``matvec``, ``diagonal``, ``diagonal_blocks`` and ``to_dense`` are one pass each
  (one task per worker), only (p,) vectors, (k, d, d) blocks or the (p, p) matrix coming
  back. Conjugate gradient and block-Jacobi preconditioning then work on it
  unchanged (``zbound.bounds.curvature.Curvature``).
"""

from __future__ import annotations

import numpy as np

from zbound.bounds.curvature import Curvature, DenseCurvature
from zbound.utils.linalg import psd_solve


class GatheredCurvature(DenseCurvature):
    """A (p, p) curvature summed over the chunks on the workers and brought back.

    ``solve`` factors it whatever ``method`` asks (an exact answer satisfies any CG
    tolerance); minimum-norm least squares when it is singular.
    """

    def solve(self, rhs, method="cholesky", *, return_iterations=False, **kwargs):
        if method not in ("cholesky", "cg"):
            raise ValueError(f"unknown solve method {method!r}; use 'cholesky' or 'cg'")
        x = psd_solve(self.to_dense(), np.asarray(rhs, dtype=np.float64))
        return (x, 0) if return_iterations else x

    def diagonal_blocks(self):
        return None


class DistributedCurvature(Curvature):
    """Sum of per-chunk curvature operators that live on the Dask workers.

    Parameters
    ----------
    engine : the :class:`~zbound.distributed.loss.DaskSoftmaxLoss` that made it (runs the
        passes and counts them)
    parts : (worker, persisted Dask object) pairs, one per group of chunks (the chunks one
        worker holds), each object a tuple whose last item is the list of the chunks'
        :class:`~zbound.bounds.curvature.Curvature` operators
    n_blocks, block : the class-block structure (k blocks of d parameters)
    """

    def __init__(self, engine, parts, n_blocks: int, block: int):
        self.engine = engine
        self.parts = list(parts)
        self.n_blocks = int(n_blocks)
        self.block = int(block)
        p = self.n_blocks * self.block
        self.shape = (p, p)
        self.reg = 0.0

    def _reduce(self, kernel, *args, what: str):
        return self.engine._map_parts(kernel, self.parts, args, what=what)

    def matvec(self, v):
        from zbound.distributed import _kernels as K

        v = np.ascontiguousarray(v, dtype=np.float64)
        out = self._reduce(K.curv_matvec, v, what="curvature product")
        if self.reg:
            out = out + self.reg * v
        return out

    def diagonal(self):
        from zbound.distributed import _kernels as K

        return self._reduce(K.curv_diagonal, what="curvature diagonal") + self.reg

    def diagonal_blocks(self):
        from zbound.distributed import _kernels as K

        blocks = self._reduce(K.curv_blocks, what="curvature blocks")
        if blocks is None:
            return None
        if self.reg:
            idx = np.arange(self.block)
            blocks[:, idx, idx] += self.reg
        return blocks

    def to_dense(self):
        from zbound.distributed import _kernels as K

        out = self._reduce(K.curv_dense, what="curvature assembly")
        if self.reg:
            out.flat[:: out.shape[0] + 1] += self.reg
        return out

    def with_ridge(self, scale: float, inplace: bool = False):
        out = self if inplace else DistributedCurvature(self.engine, self.parts,
                                                        self.n_blocks, self.block)
        out.reg = self.reg + float(scale)
        return out
