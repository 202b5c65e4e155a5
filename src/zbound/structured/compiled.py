"""Compiled chain kernels (Numba, the ``fast`` extra), with the NumPy recursions as fallback.

The value and gradient of a chain CRF (:func:`zbound.structured.chain.chunk_value_grad`) step
through the positions of a chunk of sequences; at each position the work is one (b, m) x (m, m)
product and a few elementwise passes over (b, m) rows. In NumPy every one of those is a call
that takes the interpreter lock on entry and exit, so two threads on two chunks spend much of
their time waiting for each other (the ``crf`` benchmark's forward-backward task shows it).
Here the whole position loop of a chunk is one compiled function that never holds the
lock (``nogil``): the products are still BLAS calls (batched over the b sequences, which is
what makes them fast: a per-sequence loop of (m,) x (m, m) products is slower),
the elementwise passes are fused into one loop per row, and the exponentials of the scores stay
one vectorized NumPy call per chunk. Same recursion, same underflow floors, same results to
rounding (tested against the NumPy path).

The curvature products of the solvers that take them (the exact Hessian, the split chain
bound) run the same way on the state the scaled recursion leaves (normalized forward messages,
pairwise weights): a tangent forward pass, a backward or adjoint pass and a contraction, each a
(b, m) x (m, m) product per position, with no exponential or logarithm per product. Their
fallback is the log-space operators of :mod:`zbound.models.crf` (tested against each other
and against enumeration).

Which path runs: ``ZBOUND_KERNELS`` in the environment, ``"auto"`` (the default: compiled where
Numba imports) or ``"numpy"``; :func:`use` switches within a process (the tests run both).
Numba is imported, and a kernel compiled, on first use; compiled code is cached on disk
(Numba's ``cache=True``), so later processes start without compiling.
"""

from __future__ import annotations

import contextlib
import os
import warnings

import numpy as np

KERNELS = ("auto", "numpy")
_state = {"choice": None, "kernels": None}


def _choice() -> str:
    if _state["choice"] is None:
        env = os.environ.get("ZBOUND_KERNELS", "auto").strip().lower() or "auto"
        if env not in KERNELS:
            raise ValueError(f"ZBOUND_KERNELS must be one of {KERNELS}, got {env!r}")
        _state["choice"] = env
    return _state["choice"]


@contextlib.contextmanager
def use(choice: str):
    """Run the chain recursions with ``choice`` ("auto": compiled where Numba is installed,
    "numpy": the NumPy fallback) inside the ``with`` block."""
    if choice not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, got {choice!r}")
    old = _state["choice"]
    _state["choice"] = choice
    try:
        yield
    finally:
        _state["choice"] = old


def kernels():
    """The compiled kernels (a module), or None: Numba missing or ``"numpy"`` chosen."""
    if _choice() == "numpy":
        return None
    if _state["kernels"] is None:
        _state["kernels"] = _build()
    return _state["kernels"] or None


def available() -> bool:
    """Whether the compiled kernels run (Numba installed and not switched off)."""
    return kernels() is not None


def _build():
    """The kernels module (compiled on first call of each kernel), or False without Numba."""
    try:
        from zbound.structured import _numba_kernels
    except ImportError:
        return False
    except Exception as exc:     # noqa: BLE001  (e.g. Numba finds no writable cache directory)
        warnings.warn(f"the compiled chain kernels are unavailable ({type(exc).__name__}: "
                      f"{exc}); the NumPy recursions run instead", RuntimeWarning, stacklevel=3)
        return False
    return _numba_kernels


def chunk_value_grad(c, E, expT, P, tiny, keep: bool = False):
    """The compiled core of :func:`zbound.structured.chain.chunk_value_grad` on the chunk
    ``c``'s exponentiated, shifted scores ``E`` (float64 or float32; ``expT`` and ``P`` of the
    same type): (sum over its positions of log s_t, pairwise marginals (m, m) in float64 or
    None), or None where an entry falls below the floor ``tiny`` (the caller falls back).
    ``keep``: also the forward messages and pairwise weights (al, w) of the chunk, what
    :func:`hessian_chunk` takes."""
    k = kernels()
    m = E.shape[1]
    pair = np.zeros((m, m))
    Pa = np.empty((0, m)) if P is None else P
    expT = np.ascontiguousarray(expT)
    al, EB = np.empty_like(E), np.empty_like(E)
    log_s, ok = k.value_grad(E, c.off, c.counts, expT, np.ascontiguousarray(expT.T), Pa, pair,
                             tiny, al, EB)
    if not ok:
        return None
    out = log_s, (None if P is None else pair)
    return (*out, al, EB) if keep else out


def hessian_chunk(c, SV, VT, expT, al, w, Pres, yp, dP) -> np.ndarray:
    """The compiled Hessian product of one chunk (``_numba_kernels.hessian_product``):
    the node marginals' tangent into ``dP`` (the chunk's rows, position-major); returns the
    chunk's contracted pairwise tangent (m, m), without the V_T x counts term."""
    ET0 = np.ascontiguousarray(expT * VT)
    out = np.zeros(expT.shape)
    kernels().hessian_product(SV, ET0, np.ascontiguousarray(ET0.T), np.ascontiguousarray(expT),
                              np.ascontiguousarray(expT.T), al, w, Pres, yp, c.off, c.counts,
                              c.lengths, dP, out)
    return out


def viterbi_chunk(c, S, T, D, bp, y) -> None:
    """The compiled Viterbi pass of chunk ``c`` (:func:`zbound.structured.chain.viterbi`):
    max-product scores in D, back-pointers in bp, the labels of its tokens in y."""
    kernels().viterbi(S, np.ascontiguousarray(T), c.tokens, c.off, c.counts, c.lengths, D, bp,
                      y)


def split_factors(c, al, T):
    """The compiled :func:`zbound.structured.chain.scaled_split_factors` of chunk ``c``:
    (Dbar, K) from the normalized forward messages ``al`` and the transitions ``T``."""
    n, m = al.shape
    Dbar, K = np.zeros((n, m)), np.zeros((m, m))
    lT = np.ascontiguousarray(T - T.max())
    kernels().split_factors(al, np.exp(lT), lT, c.off, c.counts, Dbar, K)
    return Dbar, K


def bound_forward(c, SV, VT, expT, al, Dbar, eps, lam) -> np.ndarray:
    """The first half of the split chain bound's product on one chunk (position-major rows):
    the forward tangent q (returned) and the label-space curvature (1 + eps) Dbar centered at
    the forward mean, into ``lam`` on every token with a successor (the caller sets the last
    tokens' rows, Alg. 1). ``al``: the chunk's normalized forward messages."""
    k = kernels()
    expT = np.ascontiguousarray(expT)
    q, X = np.empty_like(SV), np.empty_like(SV)
    k.forward_tangent(SV, np.ascontiguousarray(expT * VT), expT, al, c.off, c.counts, q, X)
    k.split_curvature(q, al, Dbar, 1.0 + eps, c.off, c.counts, lam)
    return q


def bound_adjoint(c, expT, al, lam) -> np.ndarray:
    """The second half: ``lam`` back-propagated through the forward tangent in place (X^T lam
    is the product's state part); returns the transition part (m, m)."""
    expT = np.ascontiguousarray(expT)
    GT = np.zeros(expT.shape)
    kernels().forward_adjoint(expT, np.ascontiguousarray(expT.T), al, c.off, c.counts, lam, GT)
    GT *= expT
    return GT


__all__ = ["KERNELS", "available", "bound_adjoint", "bound_forward", "chunk_value_grad",
           "hessian_chunk", "kernels", "split_factors", "use", "viterbi_chunk"]
