"""The Numba kernels behind :mod:`zbound.structured.compiled` (imported only where Numba is
installed and the compiled path is chosen; see that module for what they do and why)."""

import math

import numba
import numpy as np

jit = numba.njit(nogil=True, cache=True, error_model="numpy")


@jit
def forward(E, off, counts, expT, al, sc):
    """Scaled forward pass over the exponentiated scores E: normalized messages ``al``,
    their row sums ``sc``; the smallest unnormalized message entry."""
    m = E.shape[1]
    lo = np.inf
    for i in range(counts[0]):
        s = 0.0
        for y in range(m):
            v = E[i, y]
            s += v
            lo = min(lo, v)
        sc[i] = s
        for y in range(m):
            al[i, y] = E[i, y] / s
    for t in range(1, counts.shape[0]):
        k, r, p = counts[t], off[t], off[t - 1]
        u = np.dot(al[p:p + k], expT)
        for i in range(k):
            s = 0.0
            for y in range(m):
                v = u[i, y] * E[r + i, y]
                u[i, y] = v
                s += v
                lo = min(lo, v)
            sc[r + i] = s
            for y in range(m):
                al[r + i, y] = u[i, y] / s
    return lo


@jit
def backward(E, off, counts, expTt, be, EB):
    """Normalized backward messages ``be`` (the marginals' buffer) and E * be in ``EB``;
    the smallest unnormalized message entry."""
    m = E.shape[1]
    T = counts.shape[0]
    lo = np.inf
    be[off[T - 1]:] = 1.0
    for t in range(T - 1, 0, -1):
        k, r, p = counts[t], off[t], off[t - 1]
        be[p + k:r] = 1.0                   # sequences that end at t - 1
        for i in range(r, r + k):
            for y in range(m):
                EB[i, y] = E[i, y] * be[i, y]
        b = np.dot(EB[r:r + k], expTt)
        for i in range(k):
            s = 0.0
            for y in range(m):
                v = b[i, y]
                s += v
                lo = min(lo, v)
            for y in range(m):
                be[p + i, y] = b[i, y] / s
    return lo


@jit
def value_grad(E, off, counts, expT, expTt, P, pair, tiny):
    """(sum of log s_t, ok): the forward pass and, with a non-empty ``P``, the node
    marginals (in P) and the summed pairwise marginals (added to ``pair``, times expT); not
    ok where an unnormalized entry falls below ``tiny``. E, expT, expTt and P share one
    floating type (float64 or float32); sums of rows and logs are float64."""
    n, m = E.shape
    al = np.empty_like(E)
    sc = np.empty(n)
    if not forward(E, off, counts, expT, al, sc) > tiny:
        return 0.0, False
    log_s = 0.0
    for i in range(n):
        log_s += math.log(sc[i])
    if P.shape[0] == 0:
        return log_s, True
    EB = np.empty_like(E)
    if not backward(E, off, counts, expTt, P, EB) > tiny:
        return 0.0, False
    rs = np.empty(n)
    for i in range(n):
        s = 0.0
        for y in range(m):
            v = P[i, y] * al[i, y]
            P[i, y] = v
            s += v
        if not s > tiny:
            return 0.0, False
        rs[i] = s
        for y in range(m):
            P[i, y] /= s
    for t in range(1, counts.shape[0]):
        k, r, p = counts[t], off[t], off[t - 1]
        for i in range(r, r + k):
            c = sc[i] * rs[i]
            if not c > tiny:
                return 0.0, False
            for y in range(m):
                EB[i, y] /= c
        pair += np.dot(al[p:p + k].T, EB[r:r + k])
    for a in range(m):
        for y in range(m):
            pair[a, y] *= expT[a, y]
    return log_s, True


@jit
def viterbi(S, T, tokens, off, counts, lengths, D, bp, y):
    """The max-product recursion of one chunk (position-major rows ``tokens`` of S, sequence
    ``lengths`` longest first) and its backtrack into ``y``; ties go to the first label, as
    numpy.argmax's do."""
    m = S.shape[1]
    for i in range(counts[0]):
        for a in range(m):
            D[tokens[i], a] = S[tokens[i], a]
    for t in range(1, counts.shape[0]):
        r, p = off[t], off[t - 1]
        for i in range(counts[t]):
            cur, prev = tokens[r + i], tokens[p + i]
            for b in range(m):
                best = D[prev, 0] + T[0, b]
                arg = 0
                for a in range(1, m):
                    v = D[prev, a] + T[a, b]
                    if v > best:
                        best, arg = v, a
                D[cur, b] = S[cur, b] + best
                bp[cur, b] = arg
    for j in range(counts[0]):
        L = lengths[j]
        row = tokens[off[L - 1] + j]
        arg = 0
        for a in range(1, m):
            if D[row, a] > D[row, arg]:
                arg = a
        y[row] = arg
        for t in range(L - 1, 0, -1):
            cur = tokens[off[t] + j]
            y[cur - 1] = bp[cur, y[cur]]

