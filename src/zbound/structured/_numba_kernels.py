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
def value_grad(E, off, counts, expT, expTt, P, pair, tiny, al, EB):
    """(sum of log s_t, ok): the forward pass and, with a non-empty ``P``, the node
    marginals (in P) and the summed pairwise marginals (added to ``pair``, times expT); not
    ok where an unnormalized entry falls below ``tiny``. E, expT, expTt and P share one
    floating type (float64 or float32); sums of rows and logs are float64. ``al`` and
    ``EB`` (shaped as E) receive the normalized forward messages and, at positions t >= 1,
    the pairwise weights w_t = E_t beta_t / (s_t r_t): pair_t(y', y) = al_{t-1}(y')
    expT(y', y) w_t(y) (what :func:`hessian_product` takes)."""
    n, m = E.shape
    sc = np.empty(n)
    if not forward(E, off, counts, expT, al, sc) > tiny:
        return 0.0, False
    log_s = 0.0
    for i in range(n):
        log_s += math.log(sc[i])
    if P.shape[0] == 0:
        return log_s, True
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
def forward_tangent(SV, ET0, expT, al, off, counts, q, X):
    """The tangent q of the log forward messages along (SV, V_T) in the scaled representation
    (see :func:`hessian_product`); X is scratch shaped as SV."""
    m = SV.shape[1]
    for i in range(counts[0]):
        for y in range(m):
            q[i, y] = SV[i, y]
    for t in range(1, counts.shape[0]):
        k, c0, p0 = counts[t], off[t], off[t - 1]
        for i in range(k):
            for y in range(m):
                X[p0 + i, y] = al[p0 + i, y] * q[p0 + i, y]
        num = np.dot(X[p0:p0 + k], expT) + np.dot(al[p0:p0 + k], ET0)
        den = np.dot(al[p0:p0 + k], expT)
        for i in range(k):
            for y in range(m):
                q[c0 + i, y] = SV[c0 + i, y] + num[i, y] / den[i, y]


@jit
def split_curvature(q, al, Dbar, c, off, counts, lam):
    """The split bound's label-space curvature on the forward tangent q, for every token with
    a successor: lam_{t-1} = c (r - pi sum(r)), r = Dbar_t (q_{t-1} - pi^T q_{t-1}), pi =
    al_{t-1} the forward marginal of y_{t-1}, c = 1 + eps (the last tokens are the caller's:
    Alg. 1)."""
    m = q.shape[1]
    r = np.empty(m)
    for t in range(1, counts.shape[0]):
        c0, p0 = off[t], off[t - 1]
        for i in range(counts[t]):
            mean = 0.0
            for y in range(m):
                mean += al[p0 + i, y] * q[p0 + i, y]
            tot = 0.0
            for y in range(m):
                r[y] = Dbar[c0 + i, y] * (q[p0 + i, y] - mean)
                tot += r[y]
            for y in range(m):
                lam[p0 + i, y] = c * (r[y] - al[p0 + i, y] * tot)


@jit
def forward_adjoint(expT, expTt, al, off, counts, lam, GT):
    """Back-propagate lam (the gradient with respect to the forward tangent) through
    :func:`forward_tangent` in place; the transition part, sum_t al_{t-1}^T (lam_t / (al_{t-1}
    expT)) times expT, is added to GT."""
    m = lam.shape[1]
    for t in range(counts.shape[0] - 1, 0, -1):
        k, c0, p0 = counts[t], off[t], off[t - 1]
        den = np.dot(al[p0:p0 + k], expT)
        R = np.empty((k, m))
        for i in range(k):
            for y in range(m):
                R[i, y] = lam[c0 + i, y] / den[i, y]
        back = np.dot(R, expTt)
        for i in range(k):
            for y in range(m):
                lam[p0 + i, y] += al[p0 + i, y] * back[i, y]
        GT += np.dot(al[p0:p0 + k].T, R)


@jit
def split_factors(al, expT, lT, off, counts, Dbar, K):
    """The split chain bound's factors on the scaled forward messages ``al`` (position-major):
    for every token at a position t >= 1 and each current label y, the Gershgorin diagonal
    G_y of Alg. 1's curvature over y_{t-1} with weights al_{t-1}(y') expT(y', y), visiting
    the largest first, then the others in index order (ties: the first maximal);
    Dbar[row] = max_y G_y (Dbar zero on entry), K[y', y] += G_y(y').
    Per :func:`zbound.bounds.junction.alg1_gershgorin`: with w relative to the largest weight
    and z_k = 1 + the weights visited before k, beta_k = beta(log(w_k / z_k)), G_k = 2 beta_k +
    2 w_k sum_{j visited after k} beta_j / z_j, and 2 sum_j beta_j / z_j for the largest. Since
    w_k / z_k <= 1, tanh(|r| / 2) = (1 - w_k / z_k) / (1 + w_k / z_k): the weights come as
    products, one logarithm each. A weight whose product would leave float64's normal range
    is taken in log space (log al + lT, lT = T - max T): beta decays only as 1 / log(1 /
    w), so a weight that underflowed to 0 would drop a term the bound needs."""
    m = al.shape[1]
    w = np.empty(m)
    be = np.empty(m)
    bz = np.empty(m)
    for t in range(1, counts.shape[0]):
        for i in range(counts[t]):
            prev, row = off[t - 1] + i, off[t] + i
            for y in range(m):
                am, mx = 0, -1.0
                for k in range(m):
                    v = al[prev, k] * expT[k, y]
                    w[k] = v
                    if v > mx:
                        am, mx = k, v
                tot, run = 0.0, 1.0
                for k in range(m):
                    be[k] = bz[k] = 0.0
                    if k == am:
                        continue
                    if w[k] > 1e-280:            # the product is exact to rounding
                        wk = w[k] / mx
                        rho = wk / run
                        r = -math.log(rho)
                    else:
                        lw = math.log(al[prev, k]) + lT[k, y] - math.log(mx)
                        wk = math.exp(lw)
                        r = math.log(run) - lw
                        rho = math.exp(-r)
                    w[k] = wk
                    if r < 1e-3:
                        beta = 0.25 - r * r / 48.0 + r * r * r * r / 480.0
                    else:
                        beta = 0.5 * (1.0 - rho) / ((1.0 + rho) * r)
                    be[k] = beta
                    bz[k] = beta / run
                    tot += bz[k]
                    run += wk
                cum = 0.0
                for k in range(m):
                    if k == am:
                        g = 2.0 * tot
                    else:
                        cum += bz[k]
                        g = 2.0 * (be[k] + w[k] * (tot - cum))
                    Dbar[row, k] = max(Dbar[row, k], g)
                    K[k, y] += g


@jit
def hessian_product(SV, ET0, ET0t, expT, expTt, al, w, Pres, yp, off, counts, lengths, dP, out):
    """One chunk's share of the exact Hessian product of sum log Z along (SV = X V_W, V_T), in
    the scaled representation of :func:`value_grad` (rows position-major): the tangent q of
    the log forward messages, q_t = SV_t + sum_y' p_f(y'|y) (q_{t-1}(y') + V_T[y', y]) with
    p_f(y'|y) = al_{t-1}(y') expT(y', y) / (al_{t-1} expT)(y); the tangent r of the log
    backward messages, r_{t-1} = sum_y'' p_b(y''|y) (SV_t + r_t + V_T[y, .])(y'') with
    p_b(y''|y) = expT(y, y'') w_t(y'') / (w_t expT^T)(y); the tangent of log Z, dlz = P_T^T
    q_T per sequence; the node marginals' tangent dP = P (q + r - dlz) (into ``dP``) and the
    pairwise ones contracted, sum_t pair_t(y', y) (q_{t-1}(y') - dlz + SV_t(y) + r_t(y))
    (added to ``out``; the caller adds V_T times the expected counts). ``Pres`` holds P - Y
    (the fast pass's residual; ``yp`` the labels), ET0 = expT * V_T."""
    n, m = SV.shape
    T = counts.shape[0]
    q = np.empty_like(SV)
    r = np.zeros_like(SV)
    X = np.empty_like(SV)
    forward_tangent(SV, ET0, expT, al, off, counts, q, X)
    for t in range(T - 1, 0, -1):          # r = 0 where a sequence ends
        k, c0, p0 = counts[t], off[t], off[t - 1]
        for i in range(k):
            for y in range(m):
                X[c0 + i, y] = w[c0 + i, y] * (SV[c0 + i, y] + r[c0 + i, y])
        num = np.dot(X[c0:c0 + k], expTt) + np.dot(w[c0:c0 + k], ET0t)
        den = np.dot(w[c0:c0 + k], expTt)
        for i in range(k):
            for y in range(m):
                r[p0 + i, y] = num[i, y] / den[i, y]
    dlz = np.zeros(counts[0])
    for j in range(counts[0]):
        row = off[lengths[j] - 1] + j
        for y in range(m):
            dlz[j] += (Pres[row, y] + (1.0 if y == yp[row] else 0.0)) * q[row, y]
    for t in range(T):
        for i in range(counts[t]):
            row = off[t] + i
            for y in range(m):
                p = Pres[row, y] + (1.0 if y == yp[row] else 0.0)
                dP[row, y] = p * (q[row, y] + r[row, y] - dlz[i])
    U = np.empty_like(SV)
    for t in range(1, T):
        k, c0, p0 = counts[t], off[t], off[t - 1]
        for i in range(k):
            for y in range(m):
                U[p0 + i, y] = al[p0 + i, y] * (q[p0 + i, y] - dlz[i])
        # X at position t still holds w_t (SV_t + r_t) from the backward pass
        out += np.dot(U[p0:p0 + k].T, w[c0:c0 + k]) + np.dot(al[p0:p0 + k].T, X[c0:c0 + k])
    for a in range(m):
        for y in range(m):
            out[a, y] *= expT[a, y]


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

