"""Linear-chain inference over a batch of sequences: forward-backward, Viterbi, marginals,
and the products of the chain bound's curvature (Alg. 3, matrix-free).

Layout. The tokens of all sequences are stored one sequence after the other (rows of the
feature matrix). :class:`ChainLayout` sorts the sequences by length and cuts them into chunks;
inside a chunk, position t of every sequence still running is one vectorized step, so a pass
costs O(max length) numpy calls per chunk whatever the number of sequences. With
``interleave = k`` each group of sequences is dealt round-robin into k chunks of the same
longest length (one per thread). Chunks are independent: :func:`map_chunks` runs them on a
process-wide thread pool (numpy's BLAS calls and SciPy's sparse products release the GIL).
``layout.perm`` is the order of all chunks' position-major rows: a loss that stores X in that
order gets each chunk's scores, marginals and rows of X as contiguous blocks
(:func:`chunk_value_grad`, the value and gradient without logarithms of (n, m) arrays).

Numerics. Scores are potentials in log space. Forward-backward runs the scaled (Rabiner)
recursion in linear space on the chunk's position-major rows (position t is a contiguous block,
its predecessors the first rows of position t - 1: no gathers), one (b, m) x (m, m) product
per position, and returns log messages; where a scale underflows, or the transition scores
span more than 600 nats, the max-shifted log-space recursion (log-sum-exp over (b, m, m) in
the extreme case) is used instead.

Products. The exact Hessian (:func:`hessian_matvec`: tangents of the forward and backward
messages, then of the marginals) and the split chain bound (:func:`split_matvec_chunk`: the
tangent recursion, a diagonal label-space curvature, the adjoint) act on a direction with
(b, m) x (m, m) products per position and two sparse products.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from zbound.bounds.junction import alg1_gershgorin
from zbound.bounds.scalar import beta
from zbound.structured import compiled
from zbound.utils.logspace import log_softmax, logsumexp
from zbound.utils.threads import blas_threads

# Score range (nats) of a sequence above which its recursion runs in log space from the start.
LOGSPACE_RANGE = 600.0
# Floor on every unnormalized message entry of the scaled recursion. A product or sum term that
# underflows is below 2.3e-308 (absolute rounding error of subnormals: 5e-324), so where every
# entry it belongs to exceeds this floor, what was lost is relatively below 1e-18: the
# recursion is exact to rounding. Where an entry is below it, the log-space recursion is used.
_TINY = 1e-290
# The same floor for a float32 recursion (:func:`chunk_value_grad` on float32 scores): subnormal
# rounding (1.4e-45) below 1e-15 relative.
_TINY32 = 1e-30


def floor_of(dtype) -> float:
    """The underflow floor of the scaled recursion in ``dtype`` (float64 or float32)."""
    return _TINY32 if np.dtype(dtype) == np.float32 else _TINY


def _entries_above(M: np.ndarray, s: np.ndarray, tiny: float = _TINY) -> bool:
    """Whether every entry of the unnormalized rows ``M * s[:, None]`` exceeds ``tiny``
    (``M`` rows normalized by their sums ``s``): one pass over M when the product of the
    minima already clears it, else row by row."""
    if M.size == 0:
        return True
    lo = float(M.min())
    if not lo > 0.0:
        return False
    if lo * float(s.min()) > tiny:
        return True
    return bool((M.min(axis=1) * s).min() > tiny)


class Chunk:
    """Sequences sorted by decreasing length; ``pos[t]`` the token rows at position t."""

    def __init__(self, seqs, lengths, offsets):
        self.seqs = seqs
        self.lengths = lengths[seqs]
        self.T = int(self.lengths[0])
        starts = offsets[seqs]
        counts = (self.lengths[:, None] > np.arange(self.T)[None, :]).sum(axis=0)
        self.counts = counts
        self.off = np.concatenate([[0], np.cumsum(counts)])   # position t: rows off[t]..
        self.pos = [starts[:counts[t]] + t for t in range(self.T)]
        # row (position t, sequence j) of the position-major layout -> t * n_seqs + j, and
        # each row's successor row (same sequence, position t + 1; -1 at the end)
        self.pad_idx = np.concatenate([t * seqs.size + np.arange(counts[t])
                                       for t in range(self.T)])
        nxt = np.full(int(counts.sum()), -1, dtype=np.int64)
        for t in range(self.T - 1):
            nxt[self.off[t]:self.off[t] + counts[t + 1]] = self.off[t + 1] + \
                np.arange(counts[t + 1])
        self.next_row = nxt
        # each row at position t >= 1 (rows off[1]:) -> its predecessor's row (position t - 1)
        self.prev_row = np.concatenate([self.off[t - 1] + np.arange(counts[t])
                                        for t in range(1, self.T)]) if self.T > 1 else \
            np.zeros(0, dtype=np.int64)
        self.last = starts + self.lengths - 1
        self.tokens = np.concatenate(self.pos)


class ChainLayout:
    """Sequence lengths -> offsets, per-token sequence ids, chunks of sorted sequences."""

    def __init__(self, lengths, chunk_tokens: int = 8192, interleave: int = 1):
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.ndim != 1 or lengths.size == 0:
            raise ValueError("need at least one sequence")
        if np.any(lengths < 1):
            raise ValueError("every sequence needs at least one token")
        self.lengths = lengths
        self.offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.n_tokens = int(lengths.sum())
        self.seq_of_token = np.repeat(np.arange(lengths.size), lengths)
        self.first = self.offsets
        self.last = self.offsets + lengths - 1
        has_prev = np.ones(self.n_tokens, dtype=bool)
        has_prev[self.first] = False
        self.inner = np.flatnonzero(has_prev)           # tokens with a predecessor
        order = np.argsort(-lengths, kind="stable")
        self.chunks = []
        start = 0
        cum = np.cumsum(lengths[order])
        k = max(1, int(interleave))
        while start < order.size:
            base = cum[start - 1] if start else 0
            stop = int(np.searchsorted(cum, base + k * chunk_tokens, side="right"))
            stop = max(stop, start + 1)
            group = order[start:stop]
            # ``interleave`` chunks per group, sequence i of the group to chunk i mod k: the
            # chunks of a group have the same longest length and about the same token count,
            # so ``interleave`` threads finish together
            for i in range(min(k, group.size)):
                self.chunks.append(Chunk(group[i::k], lengths, self.offsets))
            start = stop
        # row order of the chunks' position-major rows, one chunk after another
        self.perm = np.concatenate([c.tokens for c in self.chunks])
        self.bounds = np.concatenate([[0], np.cumsum([c.tokens.size for c in self.chunks])])


def n_threads(n_jobs) -> int:
    if n_jobs is None:
        return 1
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return max(1, n_jobs)


_POOLS: dict = {}


def _pool(k: int) -> ThreadPoolExecutor:
    """A process-wide pool of k threads (created once: starting threads on every evaluation
    costs more than a small chunk's work)."""
    key = (os.getpid(), k)          # a forked child does not inherit the pool's threads
    ex = _POOLS.get(key)
    if ex is None:
        ex = _POOLS[key] = ThreadPoolExecutor(max_workers=k, thread_name_prefix="zbound-chain")
    return ex


def one_blas_thread():
    """A context in which BLAS runs on one thread. The per-position products of a chunk are
    small ((b, m) x (m, m)): OpenBLAS splitting each over its threads costs more than it
    saves, and under ``n_jobs`` chunk threads it oversubscribes the cores. A whole
    evaluation runs inside it: one multi-threaded BLAS call in it (a dot product) wakes
    OpenBLAS's workers, which then spin on a core the chunk threads need. (SciPy's BLAS, which
    the compiled kernels call, is among those limited: :func:`blas_threads` loads it.)"""
    return blas_threads(1)


def chain_fit_threads(n_jobs):
    """The context a fit with ``n_jobs`` chunk threads runs in: with more than one, BLAS on
    one thread for the whole fit (:func:`one_blas_thread`; the solver's multi-threaded vector
    products between evaluations would leave OpenBLAS's workers spinning on the cores the
    chunk threads use), else no change."""
    return one_blas_thread() if n_threads(n_jobs) > 1 else contextlib.nullcontext()


def map_chunks(fn, chunks, n_jobs=None):
    """[fn(c) for c in chunks], on a thread pool when n_jobs > 1, with BLAS on one thread
    (the chunks are the parallelism)."""
    k = n_threads(n_jobs)
    if threading.current_thread().name.startswith("zbound-chain"):   # no nesting
        return [fn(c) for c in chunks]
    with one_blas_thread():
        if k == 1 or len(chunks) == 1:
            return [fn(c) for c in chunks]
        return list(_pool(k).map(fn, chunks))


class Potentials:
    """State scores S (n_tokens, m) and transitions T (m, m) with their scaled exponentials."""

    def __init__(self, S, T):
        self.S = S
        self.T = T
        self.tmax = float(T.max())
        self.logspace = bool(T.max() - T.min() > LOGSPACE_RANGE)
        self.expT = np.exp(T - self.tmax)


def forward_chunk(c: Chunk, pot: Potentials, A: np.ndarray) -> None:
    """Log forward messages A[token, y] (log-sum over the prefix ending in y)."""
    S, T = pot.S, pot.T
    A[c.pos[0]] = S[c.pos[0]]
    for t in range(1, c.T):
        cur = c.pos[t]
        pa = A[cur - 1]
        if pot.logspace:
            A[cur] = S[cur] + logsumexp(pa[:, :, None] + T[None], axis=1)
        else:
            mx = pa.max(axis=1, keepdims=True)
            with np.errstate(divide="ignore"):
                A[cur] = S[cur] + np.log(np.exp(pa - mx) @ pot.expT) + mx + pot.tmax


def backward_chunk(c: Chunk, pot: Potentials, B: np.ndarray) -> None:
    """Log backward messages B[token, y] (log-sum over the suffix after y); 0 at the end."""
    S, T = pot.S, pot.T
    B[c.tokens] = 0.0
    for t in range(c.T - 2, -1, -1):
        nxt = c.pos[t + 1]
        v = S[nxt] + B[nxt]
        if pot.logspace:
            B[nxt - 1] = logsumexp(T[None] + v[:, None, :], axis=2)
        else:
            mx = v.max(axis=1, keepdims=True)
            with np.errstate(divide="ignore"):
                B[nxt - 1] = np.log(np.exp(v - mx) @ pot.expT.T) + mx + pot.tmax


def _seq_cumsum(c: Chunk, x: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Cumulative sums along each sequence of per-row values x (position-major rows of the
    chunk), from the start (or, ``reverse``, from the end)."""
    pad = np.zeros((c.T, c.lengths.size))
    pad.ravel()[c.pad_idx] = x
    if reverse:
        pad = np.cumsum(pad[::-1], axis=0)[::-1]
    else:
        pad = np.cumsum(pad, axis=0)
    return pad.ravel()[c.pad_idx]


def scaled_chunk(c: Chunk, pot: Potentials, A: np.ndarray, B: np.ndarray | None) -> bool:
    """Forward (and backward) messages of one chunk by the scaled recursion (Rabiner):
    normalized messages in linear space, position-major and contiguous (the sequences at
    position t are rows off[t]..off[t] + counts[t] of the chunk, the first ones of position
    t - 1 their predecessors), the log scales summed along each sequence afterwards; written
    to A, B in log space. False (nothing written) where an unnormalized message entry falls
    below ``_TINY`` (an entry, not only a row sum: a state whose score lies hundreds of nats
    below its row's maximum can still carry the mass of a later position through a strong
    transition): then the log-space recursion is needed."""
    S = pot.S[c.tokens]
    mx = S.max(axis=1)
    E = np.exp(S - mx[:, None])
    expT, expTt = pot.expT, pot.expT.T
    off, counts = c.off, c.counts
    al = np.empty_like(E)
    sc = np.empty(E.shape[0])
    k = int(counts[0])
    np.sum(E[:k], axis=1, out=sc[:k])
    np.divide(E[:k], sc[:k, None], out=al[:k])
    for t in range(1, c.T):
        k = int(counts[t])
        r, p = off[t], off[t - 1]
        u = al[p:p + k] @ expT
        u *= E[r:r + k]
        np.sum(u, axis=1, out=sc[r:r + k])
        np.divide(u, sc[r:r + k, None], out=al[r:r + k])
    if not _entries_above(al, sc):
        return False
    lsc = np.log(sc) + mx
    lsc[counts[0]:] += pot.tmax
    cum = _seq_cumsum(c, lsc)
    if B is not None:
        be = np.ones_like(E)
        dd = np.zeros(E.shape[0])
        for t in range(c.T - 1, 0, -1):
            k = int(counts[t])
            r, p = off[t], off[t - 1]
            w = (E[r:r + k] * be[r:r + k]) @ expTt
            np.sum(w, axis=1, out=dd[p:p + k])
            np.divide(w, dd[p:p + k, None], out=be[p:p + k])
        # dd[row at t-1] holds the scale of the step from t; rows that end a sequence keep 0
        has_next = np.zeros(E.shape[0], dtype=bool)
        for t in range(1, c.T):
            has_next[off[t - 1]:off[t - 1] + counts[t]] = True
        if not _entries_above(be[has_next], dd[has_next]):
            return False
        ld = np.zeros(E.shape[0])
        nxt = c.next_row[has_next]
        ld[has_next] = np.log(dd[has_next]) + mx[nxt] + pot.tmax
        with np.errstate(divide="ignore"):
            B[c.tokens] = np.log(be) + _seq_cumsum(c, ld, reverse=True)[:, None]
    with np.errstate(divide="ignore"):
        A[c.tokens] = np.log(al) + cum[:, None]
    return True


@np.errstate(divide="ignore", invalid="ignore")     # underflow: checked, then None
def _scaled_forward(c: Chunk, E: np.ndarray, expT: np.ndarray, one: np.ndarray, tiny: float):
    """The NumPy forward pass of :func:`chunk_value_grad`: the normalized messages alpha and
    their row sums s_t, or None where an entry falls below ``tiny``."""
    off, counts = c.off, c.counts
    al = np.empty_like(E)
    sc = np.empty(E.shape[0], E.dtype)
    k = int(counts[0])
    np.dot(E[:k], one, out=sc[:k])
    np.divide(E[:k], sc[:k, None], out=al[:k])
    for t in range(1, c.T):
        k = int(counts[t])
        r, p = off[t], off[t - 1]
        u = al[r:r + k]
        np.dot(al[p:p + k], expT, out=u)
        u *= E[r:r + k]
        s = sc[r:r + k]
        np.dot(u, one, out=s)
        u /= s[:, None]
    return (al, sc) if _entries_above(al, sc, tiny) else None


def _scaled_backward(c: Chunk, E: np.ndarray, expT: np.ndarray, one: np.ndarray, tiny: float,
                     be: np.ndarray):
    """The NumPy backward pass of :func:`chunk_value_grad`, its messages normalized by their
    row sums, written to ``be``; returns E * beta (the pairwise weights before their
    normalizers), or None where an entry falls below ``tiny``."""
    off, counts = c.off, c.counts
    EB = np.empty_like(E)
    bs = np.ones(E.shape[0], E.dtype)                   # row sums of the unnormalized be
    be[off[c.T - 1]:] = 1.0
    expTt = expT.T
    for t in range(c.T - 1, 0, -1):
        k = int(counts[t])
        r, p = off[t], off[t - 1]
        if k < int(counts[t - 1]):                      # sequences that end at t - 1
            be[p + k:r] = 1.0
        w = EB[r:r + k]
        np.multiply(E[r:r + k], be[r:r + k], out=w)
        b = be[p:p + k]
        np.dot(w, expTt, out=b)
        s = bs[p:p + k]
        np.dot(b, one, out=s)
        b /= s[:, None]
    return EB if _entries_above(be, bs, tiny) else None


def chunk_value_grad(c: Chunk, S: np.ndarray, expT: np.ndarray, tmax: float,
                     P: np.ndarray | None = None, row_shift: bool = False, keep: bool = False):
    """Sum of log Z over the sequences of one chunk and, with ``P``, the node marginals
    (written to P) and the summed pairwise marginals (m, m), all by the scaled recursion.

    S (n_c, m) are the chunk's scores in its position-major row order (``c.tokens``), consumed
    (overwritten); expT = exp(T - tmax). Forward: alpha_t = (alpha_{t-1} expT) * E_t / s_t with
    E = exp(S - max S) (one shift for the chunk) and s_t the row sum, so log Z = sum_t (log s_t
    + max S) + (T - 1) tmax per sequence, no logarithm of an (n, m) array. Backward, normalized
    by its own row sums: beta_{t-1} ~ expT (E_t * beta_t). Then P_t ~ alpha_t * beta_t (rows
    normalized by r_t) and the pairwise marginal of (y_{t-1}, y_t) is alpha_{t-1}(y') expT(y',
    y) E_t(y) beta_t(y) / (s_t r_t), summed over the chunk by one (m, n) x (n, m) product. Row
    sums are products with a vector of ones (a BLAS call, cheaper than NumPy's reduction along
    a short axis).
    ``row_shift``: shift every row by its own maximum instead (slower; for chunks whose
    scores span more than ~650 nats, where the shared shift underflows). Returns None where an
    unnormalized forward or backward message entry, a row sum of the marginals or a pairwise
    normalizer s_t r_t falls below ``_TINY`` (the test is per entry: a state far below its
    row's maximum can carry a later position's mass through a strong transition): the caller
    retries with ``row_shift``, then uses the log-space recursion.
    Float32 S (with float32 expT and P) runs the same recursion in float32 against float32's
    floor (:func:`floor_of`), log Z and the pairwise marginals summed in float64.
    ``keep`` (with P): also return the normalized forward messages alpha and, at positions
    t >= 1, the pairwise weights w_t = E_t beta_t / (s_t r_t) (so that the pairwise marginal
    is alpha_{t-1}(y') expT(y', y) w_t(y)): the state of the compiled Hessian product
    (:func:`zbound.structured.compiled.hessian_chunk`).
    After the exponentials, the passes run compiled where Numba is installed
    (:mod:`zbound.structured.compiled`: the same recursion without the interpreter lock), else
    as the NumPy loops below."""
    off, counts = c.off, c.counts
    n, m = S.shape
    if row_shift:                    # each row by its own maximum: E never underflows
        mxr = S.max(axis=1)
        S -= mxr[:, None]
        shift = float(mxr.sum())
    else:                            # one shift for the chunk (cheaper than a row maximum)
        mx = float(S.max())
        S -= mx
        shift = mx * n
    # what log Z gets back beyond the log scales: the shifts and tmax per transition
    shift += tmax * (n - int(counts[0]))
    E = np.exp(S, out=S)
    tiny = floor_of(E.dtype)
    if compiled.available() and E.flags.c_contiguous and \
            (P is None or P.flags.c_contiguous):
        out = compiled.chunk_value_grad(c, E, expT, P, tiny, keep)
        return None if out is None else (out[0] + shift, *out[1:])
    one = np.ones(m, E.dtype)
    forward = _scaled_forward(c, E, expT, one, tiny)
    if forward is None:
        return None
    al, sc = forward
    log_z = float(np.log(sc).sum(dtype=np.float64)) + shift
    if P is None:
        return log_z, None
    EB = _scaled_backward(c, E, expT, one, tiny, P)
    if EB is None:
        return None
    P *= al
    rs = P @ one
    if not rs.min() > tiny:
        return None
    P /= rs[:, None]
    if c.T < 2:
        return (log_z, np.zeros(expT.shape), al, EB) if keep else (log_z, np.zeros(expT.shape))
    r1 = off[1]
    # the pairwise terms of position t sum to s_t r_t: above the floor, what E * be lost to
    # underflow is negligible against it
    if not (sc[r1:] * rs[r1:]).min() > tiny:
        return None
    w = EB[r1:]
    w /= (sc[r1:] * rs[r1:])[:, None]
    pair = np.asarray(al[c.prev_row].T @ w, dtype=np.float64)
    pair *= expT
    return (log_z, pair, al, EB) if keep else (log_z, pair)


def forward_backward(layout: ChainLayout, pot: Potentials, n_jobs=None, backward=True):
    """log Z per sequence, forward A and backward B messages (B None without ``backward``).

    The scaled linear-space recursion (:func:`scaled_chunk`) where it does not underflow,
    else the max-shifted log-space one (:func:`forward_chunk`, :func:`backward_chunk`)."""
    m = pot.S.shape[1]
    A = np.empty((layout.n_tokens, m))
    B = np.empty((layout.n_tokens, m)) if backward else None

    def run(c):
        if not pot.logspace and scaled_chunk(c, pot, A, B):
            return
        forward_chunk(c, pot, A)
        if backward:
            backward_chunk(c, pot, B)

    map_chunks(run, layout.chunks, n_jobs)
    log_z = logsumexp(A[layout.last], axis=1)
    if not np.all(np.isfinite(log_z)):
        raise FloatingPointError("log Z is not finite; the weights are too large")
    return log_z, A, B


def _pair_sum(cur, pot: Potentials, lz, A, B):
    """sum over the tokens ``cur`` (each with a predecessor) of the pairwise marginals;
    ``lz`` the log Z of each token's sequence."""
    m = pot.T.shape[0]
    if cur.size == 0:
        return np.zeros((m, m))
    pa = A[cur - 1]
    v = pot.S[cur] + B[cur]
    if pot.logspace:
        pair = np.zeros((m, m))
        for s in range(0, cur.size, 4096):
            sl = slice(s, s + 4096)
            pair += np.exp(pa[sl, :, None] + pot.T[None] + v[sl, None, :]
                           - lz[sl, None, None]).sum(axis=0)
        return pair
    c1 = pa.max(axis=1, keepdims=True)
    c2 = v.max(axis=1, keepdims=True)
    f = np.exp(c1[:, 0] + c2[:, 0] + pot.tmax - lz)
    return pot.expT * ((np.exp(pa - c1) * f[:, None]).T @ np.exp(v - c2))


def marginals(layout: ChainLayout, pot: Potentials, log_z, A, B, n_jobs=None,
              pairs: bool = True):
    """Node marginals (n_tokens, m) and the expected transition counts (m, m), chunk by chunk
    (on ``n_jobs`` threads).

    Without ``pairs`` (prediction) the counts are None and each token's row is normalized by
    its own log-sum of A + B (log Z in exact arithmetic): where the scores are large (1e7 and
    beyond) A + B - log Z loses the digits that exp needs, and the rows would not sum to 1.
    With them (a fit's gradient and bound, on scores of the fitted range) log Z is
    subtracted as it is, without a log-sum per token."""
    P = np.empty_like(A)
    seq = layout.seq_of_token

    def run(c):
        tok = c.tokens
        if not pairs:
            AB = A[tok] + B[tok]
            P[tok] = np.exp(AB - logsumexp(AB, axis=1)[:, None])
            return None
        P[tok] = np.exp(A[tok] + B[tok] - log_z[seq[tok]][:, None])
        if c.T < 2:
            return np.zeros_like(pot.T)
        cur = np.concatenate(c.pos[1:])
        return _pair_sum(cur, pot, log_z[seq[cur]], A, B)

    counts = map_chunks(run, layout.chunks, n_jobs)
    return P, (sum(counts) if pairs else None)


def viterbi(layout: ChainLayout, pot: Potentials, n_jobs=None) -> np.ndarray:
    """Most probable label of every token (n_tokens,), sequence by sequence (compiled where
    Numba is installed: :mod:`zbound.structured.compiled`); ties go to the first label."""
    S, T = pot.S, pot.T
    n, m = S.shape
    D = np.empty((n, m))
    bp = np.zeros((n, m), dtype=np.int64)
    y = np.zeros(n, dtype=np.int64)

    fast = compiled.available() and S.flags.c_contiguous

    def run(c):
        if fast:
            compiled.viterbi_chunk(c, S, T, D, bp, y)
            return
        D[c.pos[0]] = S[c.pos[0]]
        for t in range(1, c.T):
            cur = c.pos[t]
            s = D[cur - 1][:, :, None] + T[None]
            k = np.argmax(s, axis=1)
            bp[cur] = k
            D[cur] = S[cur] + np.take_along_axis(s, k[:, None, :], axis=1)[:, 0, :]
        y[c.last] = np.argmax(D[c.last], axis=1)
        for t in range(c.T - 1, 0, -1):
            cur = c.pos[t]
            y[cur - 1] = bp[cur, y[cur]]

    map_chunks(run, layout.chunks, n_jobs)
    return y


# ------------------------------------------------------------- tangent / adjoint recursions
# Position t of a chunk: cur = c.pos[t] (tokens), prev = cur - 1. The forward conditional is
# p_f(y'|y) = exp(A[prev](y') + T[y', y] - (A[cur] - S[cur])(y)) (the previous label given the
# current one and the prefix), the backward one p_b(y''|y) = exp(T[y, y''] + S[cur](y'') +
# B[cur](y'') - B[prev](y)). Both are applied through (b, m) x (m, m) products of exp(T - max T)
# with rows scaled by max-shifted exponentials; with the log-space potentials they are formed
# explicitly as (b, m, m) arrays.
def _fwd_P(pot, A, cur):
    return np.exp(A[cur - 1][:, :, None] + pot.T[None] - (A[cur] - pot.S[cur])[:, None, :])


def _fwd_factors(pot, A, cur):
    pa = A[cur - 1]
    a = np.exp(pa - pa.max(axis=1, keepdims=True))
    return a, 1.0 / (a @ pot.expT)


def fwd_apply(pot, A, cur, x, ET=None):
    """sum_y' p_f(y'|y) x(y') (+ sum_y' p_f(y'|y) VT[y', y], ET = expT * VT given)."""
    if pot.logspace:
        P = _fwd_P(pot, A, cur)
        out = np.einsum("nky,nk->ny", P, x)
        if ET is not None:
            out += np.einsum("nky,ky->ny", P, ET[1])
        return out
    a, iz = _fwd_factors(pot, A, cur)
    num = (a * x) @ pot.expT
    if ET is not None:
        num += a @ ET[0]
    return num * iz


def fwd_adjoint(pot, A, cur, lam):
    """(sum_y p_f(y'|y) lam(y) per token, sum over tokens of p_f(y'|y) lam(y) as (m, m))."""
    if pot.logspace:
        P = _fwd_P(pot, A, cur)
        return np.einsum("nky,ny->nk", P, lam), np.einsum("nky,ny->ky", P, lam)
    a, iz = _fwd_factors(pot, A, cur)
    r = lam * iz
    return a * (r @ pot.expT.T), pot.expT * (a.T @ r)


def bwd_apply(pot, B, cur, x, ET):
    """sum_y'' p_b(y''|y) (x(y'') + VT[y, y'']) for the tokens before ``cur``."""
    v = pot.S[cur] + B[cur]
    if pot.logspace:
        P = np.exp(pot.T[None] + v[:, None, :] - B[cur - 1][:, :, None])
        return np.einsum("nyk,nk->ny", P, x) + np.einsum("nyk,yk->ny", P, ET[1])
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return ((e * x) @ pot.expT.T + e @ ET[0].T) / (e @ pot.expT.T)


def tangent_terms(pot, VT):
    """(exp(T) * V_T, V_T): the transition terms of a tangent product along V."""
    return (pot.expT * VT, VT)


def tangent_chunk(c: Chunk, pot, A, SV, ET, q) -> None:
    """q = dA (the tangent of the log forward messages along v), i.e. q_t(y) = mu_t(y)^T v with
    mu_t(y) the expected features of the prefix given y_t = y."""
    q[c.pos[0]] = SV[c.pos[0]]
    for t in range(1, c.T):
        cur = c.pos[t]
        q[cur] = SV[cur] + fwd_apply(pot, A, cur, q[cur - 1], ET)


def adjoint_chunk(c: Chunk, pot, A, lam) -> np.ndarray:
    """Back-propagate lam (the gradient with respect to q) through :func:`tangent_chunk`
    in place; returns the transition part (m, m)."""
    GT = np.zeros_like(pot.T)
    for t in range(c.T - 1, 0, -1):
        cur = c.pos[t]
        back, gt = fwd_adjoint(pot, A, cur, lam[cur])
        lam[cur - 1] += back
        GT += gt
    return GT


def backward_tangent_chunk(c: Chunk, pot, B, SV, ET, r) -> None:
    """r = dB (the tangent of the log backward messages)."""
    r[c.tokens] = 0.0
    for t in range(c.T - 1, 0, -1):
        cur = c.pos[t]
        r[cur - 1] = bwd_apply(pot, B, cur, SV[cur] + r[cur], ET)


def pair_contract(layout: ChainLayout, pot: Potentials, log_z, A, B, U, W):
    """sum over inner tokens of pair_t(y', y) (U_t(y') + W_t(y)), pair_t the pairwise marginal
    of (y_{t-1}, y_t) and U, W (n_inner, m); also returns sum_t pair_t."""
    cur = layout.inner
    m = pot.T.shape[0]
    if cur.size == 0:
        return np.zeros((m, m)), np.zeros((m, m))
    prev = cur - 1
    lz = log_z[layout.seq_of_token[cur]]
    pa = A[prev]
    v = pot.S[cur] + B[cur]
    if pot.logspace:
        out = np.zeros((m, m))
        pair = np.zeros((m, m))
        for s in range(0, cur.size, 4096):
            sl = slice(s, s + 4096)
            P = np.exp(pa[sl, :, None] + pot.T[None] + v[sl, None, :] - lz[sl, None, None])
            pair += P.sum(axis=0)
            out += np.einsum("nky,nk->ky", P, U[sl]) + np.einsum("nky,ny->ky", P, W[sl])
        return out, pair
    c1 = pa.max(axis=1, keepdims=True)
    c2 = v.max(axis=1, keepdims=True)
    f = np.exp(c1[:, 0] + c2[:, 0] + pot.tmax - lz)
    a = np.exp(pa - c1) * f[:, None]
    b = np.exp(v - c2)
    pair = pot.expT * (a.T @ b)
    out = pot.expT * ((a * U).T @ b + a.T @ (b * W))
    return out, pair


def hessian_matvec(layout, pot, log_z, A, B, P, SV, VT, n_jobs=None):
    """Exact Hessian-vector product of sum_j log Z_j in the scores: (dP, dpair) with dP
    (n_tokens, m) the tangent of the node marginals (-> X^T dP) and dpair (m, m) that of the
    expected transition counts, along (SV = X V_W, VT)."""
    n, m = SV.shape
    q = np.empty((n, m))
    r = np.empty((n, m))
    ET = tangent_terms(pot, VT)

    def run(c):
        tangent_chunk(c, pot, A, SV, ET, q)
        backward_tangent_chunk(c, pot, B, SV, ET, r)

    map_chunks(run, layout.chunks, n_jobs)
    last = layout.last
    dlz = np.einsum("ny,ny->n", P[last], q[last])
    dP = P * (q + r - dlz[layout.seq_of_token][:, None])
    cur = layout.inner
    U = q[cur - 1] - dlz[layout.seq_of_token[cur]][:, None]
    W = SV[cur] + r[cur]
    out, pair = pair_contract(layout, pot, log_z, A, B, U, W)
    return dP, out + VT * pair


# ------------------------------------------------------------- the split chain bound
def alg1_apply(logw: np.ndarray, u: np.ndarray) -> np.ndarray:
    """B u for the Alg. 1 curvature B of log sum_k exp(logw_k + u_k) in the argument u, along
    the last axis, batched over the leading axes; visiting order: the largest term first, then
    the others in index order (no sort).

    B = sum_i beta_i (e_i - m_{i-1})(e_i - m_{i-1})^T with m_{i-1} the weighted mean of the
    terms before i. With weights relative to the largest (which is 1), the running sums
    z_{i-1} >= 1 never underflow; everything closes in cumulative sums: O(k) per batch entry.
    """
    mx = logw.max(axis=-1, keepdims=True)
    lw = logw - mx
    first = lw == 0.0
    # ties: keep the first maximal index as "the largest"
    first &= np.cumsum(first, axis=-1) == 1
    w_rel = np.exp(lw)
    Q = np.where(first, 0.0, w_rel)
    cQ = np.cumsum(Q, axis=-1)
    z_prev = 1.0 + cQ - Q
    Qu = Q * u
    u_first = np.sum(np.where(first, u, 0.0), axis=-1, keepdims=True)
    s_prev = u_first + np.cumsum(Qu, axis=-1) - Qu
    with np.errstate(divide="ignore", invalid="ignore"):
        w = beta(lw - np.log(z_prev))
    w = np.where(first, 0.0, w)
    wc = w * (u - s_prev / z_prev)
    h = wc / z_prev
    tot = h.sum(axis=-1, keepdims=True)
    after = tot - np.cumsum(h, axis=-1)
    return np.where(first, -tot, wc - Q * after)


class SplitFactors:
    """What a product with the split chain bound needs, computed once per majorizer.

    For every inner token (position t >= 1): Dbar (n_tokens, m), the elementwise maximum over
    the current label y of the Gershgorin diagonals of the label-space Alg. 1 curvatures B_y
    (over y_{t-1}, weights exp(A_{t-1}(y') + T[y', y])), and pi, the forward marginal of
    y_{t-1}; K (m, m), the sum over inner tokens of those Gershgorin diagonals per (y', y)
    (the transition part). See :func:`zbound.bounds.junction.chain_bound`, rule "split".
    """

    def __init__(self, layout: ChainLayout, pot: Potentials, A, n_jobs=None, block=None):
        n, m = pot.S.shape
        self.Dbar = np.zeros((n, m))
        self.pi = np.zeros((n, m))
        inner = layout.inner
        if block is None:         # about 4 MB per (block, m, m) temporary
            block = max(64, (1 << 19) // (m * m))
        blocks = [inner[s:s + block] for s in range(0, inner.size, block)]
        T_t = pot.T.T

        def run(cur):
            pa = A[cur - 1]
            G = alg1_gershgorin(pa[:, None, :] + T_t[None])            # (b, y, y')
            self.Dbar[cur] = G.max(axis=1)
            self.pi[cur] = log_softmax(pa, axis=1)[1]
            return G.sum(axis=0).T

        parts = map_chunks(run, blocks, n_jobs)
        self.K = sum(parts) if parts else np.zeros((m, m))


def scaled_split_factors(c: Chunk, al: np.ndarray, T: np.ndarray, block: int | None = None):
    """:class:`SplitFactors` of one chunk from its normalized forward messages ``al``
    (position-major rows, the scaled recursion's): (Dbar, K), Dbar (n_c, m) on the rows of
    positions t >= 1 (zero on the first position's), K (m, m). The forward marginal pi of
    y_{t-1} is al itself. Compiled where the kernels run (weights al_{t-1} expT without
    exponentials, one logarithm each), else by :func:`alg1_gershgorin` on log al + T."""
    if compiled.available():
        return compiled.split_factors(c, al, T)
    n, m = al.shape
    Dbar = np.zeros((n, m))
    K = np.zeros((m, m))
    if block is None:             # about 4 MB per (block, m, m) temporary
        block = max(64, (1 << 19) // (m * m))
    cur0 = int(c.off[1]) if c.T > 1 else n
    T_t = T.T
    for s in range(cur0, n, block):
        e = min(n, s + block)
        pa = np.log(al[c.prev_row[s - cur0:e - cur0]])
        G = alg1_gershgorin(pa[:, None, :] + T_t[None])              # (b, y, y')
        Dbar[s:e] = G.max(axis=1)
        K += G.sum(axis=0).T
    return Dbar, K


def scaled_split_matvec_chunk(c: Chunk, SV, VT, expT, al, Dbar, eps, lam) -> np.ndarray:
    """:func:`split_matvec_chunk` compiled, on the scaled recursion's state (position-major
    rows; ``al`` the chunk's normalized forward messages, ``Dbar`` its
    :func:`scaled_split_factors`): the tangent, the label-space curvature (Alg. 1 at each
    sequence's last token, from log al) and the adjoint, into ``lam``; returns the
    transition part without the (1 + 1/eps) K V_T term."""
    q = compiled.bound_forward(c, SV, VT, expT, al, Dbar, eps, lam)
    last = c.off[c.lengths - 1] + np.arange(c.counts[0])
    lam[last] = alg1_apply(np.log(al[last]), q[last])
    return compiled.bound_adjoint(c, expT, al, lam)


def split_matvec_chunk(c: Chunk, pot, A, fac: SplitFactors, SV, ET, eps, q, lam):
    """One chunk's share of the split bound's product: the tangent q, the label-space
    curvature (centered, diagonal, (1 + eps) Dbar; Alg. 1 at the root), the adjoint; returns
    the transition part of the adjoint (m, m)."""
    tangent_chunk(c, pot, A, SV, ET, q)
    if c.T > 1:
        cur = np.concatenate(c.pos[1:])
        prev = cur - 1
        pi = fac.pi[cur]
        z = q[prev] - np.einsum("ny,ny->n", pi, q[prev])[:, None]
        r = fac.Dbar[cur] * z
        lam[prev] = (1.0 + eps) * (r - pi * r.sum(axis=1, keepdims=True))
    lam[c.last] = alg1_apply(A[c.last], q[c.last])
    return adjoint_chunk(c, pot, A, lam)
