"""Linear-chain inference over a batch of sequences: forward-backward, Viterbi, marginals,
and the products of the chain bound's curvature (Alg. 3, matrix-free).

Layout. The tokens of all sequences are stored one sequence after the other (rows of the
feature matrix). :class:`ChainLayout` sorts the sequences by length and cuts them into chunks;
inside a chunk, position t of every sequence still running is one vectorized step, so a pass
costs O(max length) numpy calls per chunk whatever the number of sequences. Chunks are
independent: :func:`map_chunks` runs them on a thread pool (numpy releases the GIL in its
kernels).

Numerics. Scores are potentials in log space. The recursions multiply by exp(T - max T) with a
max-shift per row (a scaled forward-backward, one (b, m) x (m, m) product per position); when
the transition scores span more than 600 nats that could underflow and the exact log-space
recursion (log-sum-exp over (b, m, m)) is used instead.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from zbound.bounds.scalar import beta

_LOGSPACE_RANGE = 600.0


class Chunk:
    """Sequences sorted by decreasing length; ``pos[t]`` the token rows at position t."""

    def __init__(self, seqs, lengths, offsets):
        self.seqs = seqs
        self.lengths = lengths[seqs]
        self.T = int(self.lengths[0])
        starts = offsets[seqs]
        counts = (self.lengths[:, None] > np.arange(self.T)[None, :]).sum(axis=0)
        self.pos = [starts[:counts[t]] + t for t in range(self.T)]
        self.last = starts + self.lengths - 1
        self.tokens = np.concatenate(self.pos)


class ChainLayout:
    """Sequence lengths -> offsets, per-token sequence ids, chunks of sorted sequences."""

    def __init__(self, lengths, chunk_tokens: int = 8192):
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
        while start < order.size:
            base = cum[start - 1] if start else 0
            stop = int(np.searchsorted(cum, base + chunk_tokens, side="right"))
            stop = max(stop, start + 1)
            self.chunks.append(Chunk(order[start:stop], lengths, self.offsets))
            start = stop


def n_threads(n_jobs) -> int:
    if n_jobs is None:
        return 1
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return max(1, n_jobs)


def map_chunks(fn, chunks, n_jobs=None):
    """[fn(c) for c in chunks], on a thread pool when n_jobs > 1."""
    k = n_threads(n_jobs)
    if k == 1 or len(chunks) == 1:
        return [fn(c) for c in chunks]
    with ThreadPoolExecutor(max_workers=k) as ex:
        return list(ex.map(fn, chunks))


def _lse(a, axis):
    mx = np.max(a, axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(mx, axis) + np.log(np.sum(np.exp(a - mx), axis=axis))


class Potentials:
    """State scores S (n_tokens, m) and transitions T (m, m) with their scaled exponentials."""

    def __init__(self, S, T):
        self.S = S
        self.T = T
        self.tmax = float(T.max())
        self.logspace = bool(T.max() - T.min() > _LOGSPACE_RANGE)
        self.expT = np.exp(T - self.tmax)


def forward_chunk(c: Chunk, pot: Potentials, A: np.ndarray) -> None:
    """Log forward messages A[token, y] (log-sum over the prefix ending in y)."""
    S, T = pot.S, pot.T
    A[c.pos[0]] = S[c.pos[0]]
    for t in range(1, c.T):
        cur = c.pos[t]
        pa = A[cur - 1]
        if pot.logspace:
            A[cur] = S[cur] + _lse(pa[:, :, None] + T[None], axis=1)
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
            B[nxt - 1] = _lse(T[None] + v[:, None, :], axis=2)
        else:
            mx = v.max(axis=1, keepdims=True)
            with np.errstate(divide="ignore"):
                B[nxt - 1] = np.log(np.exp(v - mx) @ pot.expT.T) + mx + pot.tmax


def forward_backward(layout: ChainLayout, pot: Potentials, n_jobs=None, backward=True):
    """log Z per sequence, forward A and backward B messages (B None without ``backward``)."""
    m = pot.S.shape[1]
    A = np.empty((layout.n_tokens, m))
    B = np.empty((layout.n_tokens, m)) if backward else None

    def run(c):
        forward_chunk(c, pot, A)
        if backward:
            backward_chunk(c, pot, B)

    map_chunks(run, layout.chunks, n_jobs)
    log_z = _lse(A[layout.last], axis=1)
    if not np.all(np.isfinite(log_z)):
        raise FloatingPointError("log Z is not finite; the weights are too large")
    return log_z, A, B


def marginals(layout: ChainLayout, pot: Potentials, log_z, A, B):
    """Node marginals (n_tokens, m) and the expected transition counts (m, m)."""
    lz = log_z[layout.seq_of_token]
    P = np.exp(A + B - lz[:, None])
    cur = layout.inner
    prev = cur - 1
    if cur.size == 0:
        return P, np.zeros_like(pot.T)
    pa = A[prev]
    v = pot.S[cur] + B[cur]
    if pot.logspace:
        pair = np.zeros_like(pot.T)
        for s in range(0, cur.size, 4096):
            sl = slice(s, s + 4096)
            pair += np.exp(pa[sl, :, None] + pot.T[None] + v[sl, None, :]
                           - lz[cur[sl], None, None]).sum(axis=0)
        return P, pair
    c1 = pa.max(axis=1, keepdims=True)
    c2 = v.max(axis=1, keepdims=True)
    f = np.exp(c1[:, 0] + c2[:, 0] + pot.tmax - lz[cur])
    pair = pot.expT * ((np.exp(pa - c1) * f[:, None]).T @ np.exp(v - c2))
    return P, pair


def viterbi(layout: ChainLayout, pot: Potentials, n_jobs=None) -> np.ndarray:
    """Most probable label of every token (n_tokens,), sequence by sequence."""
    S, T = pot.S, pot.T
    n, m = S.shape
    D = np.empty((n, m))
    bp = np.zeros((n, m), dtype=np.int64)
    y = np.zeros(n, dtype=np.int64)

    def run(c):
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


# ------------------------------------------------------------- Alg. 1 curvature in label space
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


def bound_matvec_chunk(c: Chunk, pot: Potentials, A, SV, VT, q, lam, GT_parts):
    """One chunk's share of the chain bound's curvature product (rule "shared").

    For the majorizer at theta~ with forward messages A, and a direction v with state part
    SV = X V_W (n_tokens, m) and transition part VT (m, m):

    - tangent: q_t(y) = mu_t(y)^T v, mu_t(y) the expected features of the prefix given y_t = y:
      q_t(y) = SV_t(y) + sum_y' p_t(y'|y) (VT[y', y] + q_{t-1}(y'));
    - label space: u_{t,y}(y') = VT[y', y] + q_{t-1}(y') is J_{t,y} v; r = B_{t,y} u (Alg. 1 over
      y', the weights alpha_{y'} = exp(A_{t-1}(y') + T[y', y])); at the root Alg. 1 over
      y_{T-1} with weights exp(A_{T-1}(y)) and u = q_{T-1};
    - adjoint: J^T r through the tangent recursion gives lam (n_tokens, m) (-> X^T lam) and
      the transition part (summed into GT_parts).
    """
    T = pot.T
    GT = np.zeros_like(T)
    q[c.pos[0]] = SV[c.pos[0]]
    lam[c.tokens] = 0.0
    logP = [None]
    for t in range(1, c.T):
        cur = c.pos[t]
        prev = cur - 1
        lp = A[prev][:, :, None] + T[None] - (A[cur] - pot.S[cur])[:, None, :]
        P = np.exp(lp)
        logP.append(lp)
        q[cur] = SV[cur] + (P * VT[None]).sum(axis=1) + np.einsum("nky,nk->ny", P, q[prev])
        u = VT[None] + q[prev][:, :, None]                      # (n, y', y)
        r = alg1_apply(np.swapaxes(lp, 1, 2), np.swapaxes(u, 1, 2))   # (n, y, y')
        GT += r.sum(axis=0).T
        lam[prev] += r.sum(axis=1)
    lam[c.last] += alg1_apply(A[c.last], q[c.last])
    for t in range(c.T - 1, 0, -1):
        cur = c.pos[t]
        P = np.exp(logP[t])
        lc = lam[cur]
        GT += np.einsum("nky,ny->ky", P, lc)
        lam[cur - 1] += np.einsum("nky,ny->nk", P, lc)
    GT_parts.append(GT)
