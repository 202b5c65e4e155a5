"""Alg. 3 of Jebara & Choromanska (2012): the quadratic bound over a junction tree.

For Z(theta) = sum_Y prod_c h_c(Y_c) exp(theta^T f_c(Y_c)) over a junction tree of cliques,
one pass from the leaves to the root keeps, for every clique c and every configuration u of
its separator with the parent, a bound (z_{c|u}, mu_{c|u}, Sigma_{c|u}) on the sum over the
variables of the subtree below c given u:

    log sum_{subtree | u} ... <= log z_{c|u} + mu_{c|u}^T delta + 1/2 delta^T Sigma_{c|u} delta.

At clique c, each configuration w = u (x) v of the clique is one term of an Alg. 1 pass over v:

    log alpha_w = log h_c(w) + theta~^T f_c(w) + sum_{b in ch(c)} log z_{b|w}
    l_w          = f_c(w) + sum_b mu_{b|w} - (running mean)
    A_w          = sum_b Sigma_{b|w}                     (the children's curvature at w)

so ``log z`` and ``mu`` are the exact log-partition function and gradient (the usual
sum-product recursion) and the curvature is Alg. 1's plus a combination of the A_w.

**Combining the children's curvature.** The paper's Alg. 3 reads
``Sigma_{c|u} = sum_b Sigma_{b|w} + beta l l^T`` for every v, i.e. the A_w of all |Y_solo|
configurations are summed (``rule="literal"``). That is a valid bound, but on a chain every
label at position t adds the curvatures of all m labels at t-1, so the curvature grows like m^T.
It is enough that the combination *dominates every* A_w: with A* >= A_w for all w,

    sum_w alpha_w exp(l_w^T delta + 1/2 delta^T A_w delta)
        <= exp(1/2 delta^T A* delta) sum_w alpha_w exp(l_w^T delta),

and Alg. 1 bounds the last sum. ``rule="tight"`` (the default) takes the common upper bound
A* = A_r + sum_{w != r} (A_w - A_r)_+ (positive parts, r the term of largest trace) for dense
curvature and the elementwise maximum for diagonal curvature; equal A_w (a chain's leaves, a
shared curvature) cost nothing. ``rule="shared"`` (chains only) keeps one curvature per
position for all labels, C_t = C_{t-1} + sum_y R_t(y) with R_t(y) the Alg. 1 curvature of label
y: it dominates every label's bound, is linear in the features, and so has a matrix-free form
(:mod:`zbound.models.crf` before the "split" rule). Domination of every A_w is also necessary:
along a direction where only A_w is large the left side grows like exp(1/2 delta^T A_w delta).

``rule="split"`` (chains only, the CRF's operator) is a cheaper common bound. Label y's Alg. 1
pass over y' has vectors mu(y') + e(y', y) and label-space curvature B_y with B_y 1 = 0, so the
prefix means can be centered at their forward mean pi (mu_c = mu - pi^T mu) for free; then
(mu_c + e_y)^T B_y (mu_c + e_y) <= (1 + eps) mu_c^T Dbar mu_c + (1 + 1/eps) e_y^T G_y e_y with
G_y the Gershgorin diagonal of B_y (:func:`alg1_gershgorin`) and Dbar = max_y G_y, and the edge
part summed over y. It is looser than "shared" on generic features (the edge sum, the factors
2 of the split and of Gershgorin) but, for CRF features, is diagonal in label space, so a
product costs two (b, m) x (m, m) recursions instead of Alg. 1 over (b, m, m) per position;
on CoNLL-2000 (m = 19) it is also tighter than "shared" along the gradient (d^T C d / d^T H d
24 against 72 at theta = 0, 850 against 1900 at CRFsuite's optimum), though looser along the
transitions alone (400 against 77).

**Diagonal curvature** (``curvature="diagonal"``): every rank-one term beta l l^T is replaced
by the diagonal beta |l| ||l||_1 >= l l^T (Gershgorin), so the bound stays valid with O(d)
storage per configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zbound.bounds.curvature import DenseCurvature, DiagonalCurvature
from zbound.bounds.enumerate import alg1_terms
from zbound.bounds.scalar import ordering

RULES = ("tight", "literal")
CHAIN_RULES = ("tight", "literal", "shared", "split")
CURVATURES = ("dense", "diagonal")


@dataclass
class JunctionTree:
    """A junction tree of cliques of discrete variables with log-linear clique factors.

    Parameters
    ----------
    cliques : sequence of sequences of variable indices (each clique's variables, in the order
        that indexes its configurations)
    cardinality : (n_vars,) number of states of each variable
    parent : (n_cliques,) index of each clique's parent, -1 for the (single) root
    features : list of ``(|Y_c|, d)`` arrays, f_c(w) for every configuration w of clique c, in
        C order over the clique's variables (``np.ndindex``)
    log_prior : list of ``(|Y_c|,)`` arrays of log h_c(w) (-inf: zero weight), or None for 0

    Examples
    --------
    >>> import numpy as np
    >>> from zbound import JunctionTree
    >>> tree = JunctionTree(cliques=[[0, 1], [1, 2]], cardinality=np.array([2, 2, 2]),
    ...                     parent=np.array([-1, 0]), features=[np.eye(4), np.eye(4)])
    >>> len(tree.cliques)
    2
    """

    cliques: list
    cardinality: np.ndarray
    parent: np.ndarray
    features: list
    log_prior: list | None = None

    def __post_init__(self):
        self.cliques = [tuple(int(v) for v in c) for c in self.cliques]
        self.cardinality = np.asarray(self.cardinality, dtype=np.int64)
        self.parent = np.asarray(self.parent, dtype=np.int64)
        k = len(self.cliques)
        if k == 0:
            raise ValueError("a junction tree needs at least one clique")
        if self.parent.shape != (k,):
            raise ValueError(f"parent must have one entry per clique ({k}), got "
                             f"{self.parent.shape}")
        if np.sum(self.parent < 0) != 1:
            raise ValueError("the tree must have exactly one root (parent -1)")
        if np.any(self.cardinality < 1):
            raise ValueError("every variable needs at least one state")
        if len(self.features) != k:
            raise ValueError(f"features must hold one array per clique ({k}), got "
                             f"{len(self.features)}")
        feats = [np.asarray(f, dtype=np.float64) for f in self.features]
        d = feats[0].shape[-1] if feats[0].ndim == 2 else -1
        for c, (clique, f) in enumerate(zip(self.cliques, feats)):
            if len(set(clique)) != len(clique) or not clique:
                raise ValueError(f"clique {c} must list distinct variables, got {clique}")
            if min(clique) < 0 or max(clique) >= self.cardinality.size:
                raise ValueError(f"clique {c} names a variable outside "
                                 f"0..{self.cardinality.size - 1}")
            size = int(np.prod(self.cardinality[list(clique)]))
            if f.ndim != 2 or f.shape != (size, d):
                raise ValueError(f"features[{c}] must have shape ({size}, {d}), got {f.shape}")
            if not np.all(np.isfinite(f)):
                raise ValueError(f"features[{c}] contain NaN or inf")
        self.features = feats
        if self.log_prior is None:
            self.log_prior = [np.zeros(f.shape[0]) for f in feats]
        else:
            if len(self.log_prior) != k:
                raise ValueError("log_prior must hold one array per clique")
            lp = [np.asarray(h, dtype=np.float64) for h in self.log_prior]
            for c, (h, f) in enumerate(zip(lp, feats)):
                if h.shape != (f.shape[0],):
                    raise ValueError(f"log_prior[{c}] must have shape ({f.shape[0]},), "
                                     f"got {h.shape}")
                if np.any(np.isnan(h)) or np.any(h == np.inf):
                    raise ValueError(f"log_prior[{c}] contains NaN or +inf")
            self.log_prior = lp
        self.order = self._reverse_topological()
        self._check_running_intersection()

    @property
    def n_features(self) -> int:
        return self.features[0].shape[1]

    def children(self, c: int) -> list[int]:
        return [int(b) for b in np.flatnonzero(self.parent == c)]

    def _reverse_topological(self) -> list[int]:
        k = len(self.cliques)
        root = int(np.flatnonzero(self.parent < 0)[0])
        seen, stack, order = set(), [root], []
        while stack:
            c = stack.pop()
            if c in seen:
                raise ValueError("parent does not describe a tree (a clique is reached twice)")
            seen.add(c)
            order.append(c)
            stack.extend(self.children(c))
        if len(order) != k:
            raise ValueError("parent does not describe a tree (some cliques are not connected "
                             "to the root)")
        return order[::-1]          # leaves first

    def _check_running_intersection(self):
        # every variable's cliques must form a connected subtree: each clique holding v, but
        # the topmost one, has a parent holding v
        for v in range(self.cardinality.size):
            holders = [c for c, cl in enumerate(self.cliques) if v in cl]
            tops = [c for c in holders
                    if self.parent[c] < 0 or v not in self.cliques[self.parent[c]]]
            if len(tops) > 1:
                raise ValueError(f"variable {v} violates the running intersection property")

    def separator(self, c: int) -> tuple[int, ...]:
        p = int(self.parent[c])
        if p < 0:
            return ()
        return tuple(sorted(set(self.cliques[c]) & set(self.cliques[p])))


@dataclass
class JunctionBound:
    """log Z(theta') <= log_z + mean @ delta + 1/2 delta @ C @ delta, delta = theta' - theta.

    ``curvature`` is (d, d) (dense) or (d,) (diagonal); ``log_z`` and ``mean`` are exact.
    """

    log_z: float
    mean: np.ndarray
    curvature: np.ndarray
    theta: np.ndarray

    def evaluate(self, theta_new: np.ndarray) -> float:
        delta = np.asarray(theta_new, dtype=np.float64) - self.theta
        if self.curvature.ndim == 1:
            quad = float(np.sum(self.curvature * delta * delta))
        else:
            quad = float(delta @ self.curvature @ delta)
        return float(self.log_z + delta @ self.mean + 0.5 * quad)

    def operator(self):
        """The curvature as a :class:`zbound.bounds.curvature.Curvature`."""
        if self.curvature.ndim == 1:
            return DiagonalCurvature(self.curvature)
        return DenseCurvature(self.curvature)


# --------------------------------------------------------------------------- the combination
def _psd_part(M: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(0.5 * (M + M.T))
    vals = np.maximum(vals, 0.0)
    return (vecs * vals) @ vecs.T


def common_upper_bound(A: np.ndarray) -> np.ndarray:
    """A matrix dominating every A[i] (A of shape (n, d, d) dense or (n, d) diagonal).

    Diagonal: the elementwise maximum (the least common upper bound). Dense:
    A_r + sum_{i != r} (A_i - A_r)_+ with r the term of largest trace (each A_i <= A_r +
    (A_i - A_r)_+); identical terms are skipped, so equal curvatures cost nothing.
    """
    if A.ndim == 2:
        return A.max(axis=0)
    n = A.shape[0]
    r = int(np.argmax(np.einsum("nii->n", A)))
    out = A[r].copy()
    for i in range(n):
        if i == r:
            continue
        diff = A[i] - A[r]
        if np.any(np.abs(diff) > 1e-14 * (1.0 + np.abs(A[r]).max())):
            out += _psd_part(diff)
    return out


def _combine(A: np.ndarray, rule: str) -> np.ndarray:
    """Children's curvatures of one group (n, d, d) / (n, d) -> one (d, d) / (d,)."""
    if rule == "literal":
        return A.sum(axis=0)
    return common_upper_bound(A)


def _order(log_alpha: np.ndarray, order: str) -> np.ndarray:
    """Visiting order: those of :func:`zbound.bounds.scalar.ordering`, or "argmax-first" (the
    largest term, then the rest in their given order: the order of the CRF's matrix-free
    operator, which needs no sort)."""
    if order != "argmax-first":
        return ordering(log_alpha, order)
    n = log_alpha.shape[-1]
    am = np.argmax(log_alpha, axis=-1)[..., None]
    rest = np.broadcast_to(np.arange(n), log_alpha.shape)
    rest = np.sort(np.where(rest == am, -1, rest), axis=-1)[..., 1:]
    return np.concatenate([am, rest], axis=-1)


def _alg1_groups(log_alpha: np.ndarray, vecs: np.ndarray, curvature: str, order: str):
    """Alg. 1 on t groups of n terms: log_z (t,), mean (t, d), curvature (t, d, d) or (t, d)."""
    # a group whose terms all have zero weight (a separator value excluded by the priors)
    # contributes z = 0: log z = -inf, and its mean and curvature are never used
    empty = np.all(log_alpha == -np.inf, axis=1)
    if np.any(empty):
        log_alpha = np.where(empty[:, None], 0.0, log_alpha)
    perm = _order(log_alpha, order)
    la = np.take_along_axis(log_alpha, perm, axis=1)
    fv = np.take_along_axis(vecs, perm[:, :, None], axis=1)
    log_z, mean, w, L = alg1_terms(la, fv)
    if curvature == "dense":
        C = np.einsum("tn,tni,tnj->tij", w, L, L)
    else:
        absL = np.abs(L)
        C = np.einsum("tn,tni,tn->ti", w, absL, absL.sum(axis=2))
    if np.any(empty):
        log_z[empty] = -np.inf
        mean[empty] = 0.0
        C[empty] = 0.0
    return log_z, mean, C


def _check(theta, d, rule, curvature, rules=RULES):
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (d,):
        raise ValueError(f"theta must have shape ({d},), got {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta contains NaN or inf")
    if rule not in rules:
        raise ValueError(f"unknown rule {rule!r}; use one of {rules}")
    if curvature not in CURVATURES:
        raise ValueError(f"unknown curvature {curvature!r}; use one of {CURVATURES}")
    return theta


# --------------------------------------------------------------------------- general trees
def junction_bound(tree: JunctionTree, theta, rule: str = "tight", curvature: str = "dense",
                   order: str = "descending") -> JunctionBound:
    """Alg. 3: quadratic upper bound on log Z over a junction tree, one pass leaves -> root.

    Parameters
    ----------
    tree : :class:`JunctionTree`
    theta : (d,) expansion point
    rule : "tight" (default; common upper bound of the children's curvatures, which does not
        grow with depth) or "literal" (the paper's child sum, for reproduction)
    curvature : "dense" (d, d) or "diagonal" (d,)
    order : visiting order of each Alg. 1 pass ("descending", "ascending", "given")

    Returns
    -------
    :class:`JunctionBound` with exact ``log_z`` and ``mean`` (= grad log Z).

    Examples
    --------
    >>> import numpy as np
    >>> from zbound import JunctionTree, junction_bound
    >>> tree = JunctionTree(cliques=[[0, 1]], cardinality=np.array([2, 2]),
    ...                     parent=np.array([-1]), features=[np.eye(4)])
    >>> b = junction_bound(tree, np.zeros(4))
    >>> round(float(b.log_z), 6)                            # log 4: two binary variables
    1.386294
    >>> b.mean
    array([0.25, 0.25, 0.25, 0.25])
    """
    d = tree.n_features
    theta = _check(theta, d, rule, curvature)
    card = tree.cardinality
    msgs: dict[int, tuple] = {}          # clique -> (sep vars, log_z, mu, Sigma) per sep config
    for c in tree.order:
        clique = tree.cliques[c]
        shape = tuple(int(card[v]) for v in clique)
        n_conf = int(np.prod(shape))
        with np.errstate(over="ignore", invalid="ignore"):
            log_alpha = tree.log_prior[c] + tree.features[c] @ theta
        if np.any(np.isnan(log_alpha) | (log_alpha == np.inf)):
            raise ValueError("scores overflow float64; rescale the features")
        vecs = tree.features[c].copy()
        A = np.zeros((n_conf, d, d) if curvature == "dense" else (n_conf, d))
        idx = np.indices(shape).reshape(len(clique), -1)          # (|clique|, n_conf)
        pos = {v: i for i, v in enumerate(clique)}
        for b in tree.children(c):
            sep, lz, mu, S = msgs.pop(b)
            if sep:
                sub = np.ravel_multi_index(tuple(idx[pos[v]] for v in sep),
                                           tuple(int(card[v]) for v in sep))
            else:
                sub = np.zeros(n_conf, dtype=np.int64)
            log_alpha = log_alpha + lz[sub]
            vecs += mu[sub]
            A += S[sub]
        log_alpha = np.where(np.isnan(log_alpha), -np.inf, log_alpha)
        sep = tree.separator(c)
        if sep:
            key = np.ravel_multi_index(tuple(idx[pos[v]] for v in sep),
                                       tuple(int(card[v]) for v in sep))
            n_sep = int(np.prod([card[v] for v in sep]))
        else:
            key = np.zeros(n_conf, dtype=np.int64)
            n_sep = 1
        groups = np.argsort(key, kind="stable").reshape(n_sep, -1)     # equal-size groups
        lz, mu, S = _alg1_groups(log_alpha[groups], vecs[groups], curvature, order)
        if np.any(A):
            for g in range(n_sep):
                S[g] += _combine(A[groups[g]], rule)
        msgs[c] = (sep, lz, mu, S)
    _, lz, mu, S = msgs.popitem()[1]
    if lz[0] == -np.inf:
        raise ValueError("every configuration has zero prior weight: log Z = -inf")
    return JunctionBound(float(lz[0]), mu[0], S[0], theta)


# --------------------------------------------------------------------------- label space
def alg1_gershgorin(logw: np.ndarray) -> np.ndarray:
    """A diagonal D >= B of the Alg. 1 curvature B of log sum_k exp(logw_k + u_k) in u (along
    the last axis, batched), visiting the largest term first, then the others in index order.

    B = sum_k beta_k l_k l_k^T with l_k = e_k - m_{k-1} (m_{k-1} the weighted mean of the terms
    before k: a probability vector without k, so ||l_k||_1 = 2); each term is replaced by its
    Gershgorin diagonal beta_k |l_k| ||l_k||_1, which closes in cumulative sums:
    D_i = 2 beta_i + 2 w_i sum_{k visited after i} beta_k / z_{k-1} (w relative to the largest
    weight, z the running sums), and 2 sum_k beta_k / z_{k-1} for the largest.
    """
    logw = np.asarray(logw, dtype=np.float64)
    am = np.argmax(logw, axis=-1)[..., None]           # the first maximal index on ties
    mx = np.take_along_axis(logw, am, axis=-1)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    lw = logw - mx
    w = np.exp(lw)
    z = w.copy()
    np.put_along_axis(z, am, 0.0, axis=-1)
    q = z.copy()
    np.cumsum(q, axis=-1, out=z)
    z -= q
    z += 1.0                                           # running sums before each term, >= 1
    b = _beta_fast(lw - np.log(z))
    np.put_along_axis(b, am, 0.0, axis=-1)
    c = np.cumsum(b / z, axis=-1)
    tot = c[..., -1:]
    out = tot - c
    out *= w
    out += b
    out *= 2.0
    np.put_along_axis(out, am, 2.0 * tot, axis=-1)
    return out


def _beta_fast(r: np.ndarray) -> np.ndarray:
    """:func:`zbound.bounds.scalar.beta` for large arrays (no boolean gathers on the bulk)."""
    a = np.abs(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 0.5 * np.tanh(0.5 * a) / a
    small = a < 1e-3
    if small.any():
        a2 = a[small] ** 2
        out[small] = 0.25 - a2 / 48.0 + a2 * a2 / 480.0
    out[np.isnan(out)] = 0.0
    return out


# --------------------------------------------------------------------------- chains
def _split_step(la, lz, mu, e, eps):
    """The split rule's curvature added at one position (b, d, d).

    For label y the Alg. 1 pass over y' has vectors mu(y') + e(y', y) (+ a constant) and
    label-space curvature B_y with B_y 1 = 0, so any common shift c of the mu drops out:
    with pi the forward marginal of y' and mu_c = mu - pi^T mu,

        (mu_c + e_y)^T B_y (mu_c + e_y) <= (1 + eps) mu_c^T Dbar mu_c
                                           + (1 + 1/eps) sum_y' e_y^T diag(G_y) e_y,

    G_y >= B_y the Gershgorin diagonal (:func:`alg1_gershgorin`), Dbar = max_y G_y elementwise
    >= every B_y, and the edge part summed over y (each term PSD): one matrix dominating the
    curvature of every label y.
    """
    G = alg1_gershgorin(la.transpose(0, 2, 1))                     # (b, y, y')
    Dbar = G.max(axis=1)                                           # (b, y')
    top = lz.max(axis=1, keepdims=True)
    # a chain whose every prefix is excluded by the priors (log Z = -inf, refused at the end):
    # any pi will do there, uniform is taken
    pi = np.exp(lz - np.where(np.isfinite(top), top, 0.0))
    total = pi.sum(axis=1, keepdims=True)
    pi = np.where(total > 0, pi / np.where(total > 0, total, 1.0), 1.0 / lz.shape[1])
    mu_c = mu - np.einsum("bk,bkd->bd", pi, mu)[:, None, :]
    out = (1.0 + eps) * np.einsum("bk,bki,bkj->bij", Dbar, mu_c, mu_c)
    out += (1.0 + 1.0 / eps) * np.einsum("byk,bkyi,bkyj->bij", G, e, e)
    return out


def _rounding_allowance(hg, g, he, e, theta) -> np.ndarray:
    """(b,) what float64 rounding can take off log Z along the forward pass: each of its
    2T - 1 additions of a position's terms (scores and log priors) to a running sum of at most
    the sum of their magnitudes M loses at most a unit roundoff of it, so 4 u T M covers
    the pass with room to spare. Added to log Z, it keeps the value an upper bound where
    large terms of opposite signs cancel (log priors of +-1e20 at two positions leave 0.3 of
    the scores below one rounding step); about 1e-14 relative for scores of ordinary size."""
    with np.errstate(over="ignore", invalid="ignore"):
        node = np.abs(hg + g @ theta)                              # (b, T, m)
        edge = np.abs(he + e @ theta)                              # (b, T-1, m, m)
        node = np.where(np.isfinite(node), node, 0.0).max(axis=2).sum(axis=1)
        edge = np.where(np.isfinite(edge), edge, 0.0).max(axis=(2, 3), initial=0.0).sum(axis=1)
        T = hg.shape[1]
        return 4.0 * np.finfo(np.float64).eps * T * (node + edge)


def chain_bound(node_features, edge_features, theta, node_log_prior=None,
                edge_log_prior=None, rule: str = "tight", curvature: str = "dense",
                order: str = "descending", eps: float = 1.0) -> JunctionBound:
    """Alg. 3 on chains y_0 - y_1 - ... - y_{T-1}, vectorized over labels and a batch.

    Z = sum_y exp(sum_t theta^T g_t(y_t) + sum_{t>=1} theta^T e_t(y_{t-1}, y_t)) (times the
    priors). The pass runs forward: for every label y at position t it bounds the sum over
    y_0..y_{t-1} with y_t = y (an Alg. 1 pass over y_{t-1} for all labels and sequences at
    once), then a last Alg. 1 pass over y_{T-1} closes log Z. This is the junction tree with
    cliques (y_{t-1}, y_t) and separators y_t, plus a root clique {y_{T-1}}.

    Parameters
    ----------
    node_features : (T, m, d) or (b, T, m, d) g_t(y)
    edge_features : (T-1, m, m, d) or (b, T-1, m, m, d) e_t(y', y) for t = 1..T-1 (index
        [t-1, y', y])
    theta : (d,)
    node_log_prior, edge_log_prior : optional log priors of shapes (.., T, m), (.., T-1, m, m)
    rule : "tight" (default), "literal" (the paper's child sum), "shared" (one curvature per
        position for all labels, C_t = C_{t-1} + sum_y R_t(y)) or "split" (one curvature per
        position from a common diagonal bound in label space: the CRF's matrix-free operator;
        dense curvature only, visiting order "argmax-first"; see the module docstring)
    curvature : "dense" or "diagonal"
    eps : the split rule's weight, (l + e)^T B (l + e) <= (1 + eps) l^T B l + (1 + 1/eps)
        e^T B e between the prefix means l and the edge features e

    Kept as one function: every rule shares the forward recursion's arrays (log normalizers,
    prefix means and curvatures per position, label and sequence); split into steps, each
    would pass them all.

    Returns
    -------
    :class:`JunctionBound`; for a batch, ``log_z`` (b,), ``mean`` (b, d) and ``curvature``
    (b, d, d) / (b, d).
    """
    g = np.asarray(node_features, dtype=np.float64)
    e = np.asarray(edge_features, dtype=np.float64)
    single = g.ndim == 3
    if single:
        g, e = g[None], e[None]
    if g.ndim != 4:
        raise ValueError(f"node_features must have shape (T, m, d) or (b, T, m, d), got "
                         f"{np.shape(node_features)}")
    b, T, m, d = g.shape
    if T < 1 or m < 1:
        raise ValueError("a chain needs at least one position and one label")
    if e.shape != (b, T - 1, m, m, d):
        raise ValueError(f"edge_features must have shape {(b, T - 1, m, m, d)[single:]}, got "
                         f"{np.shape(edge_features)}")
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(e))):
        raise ValueError("features contain NaN or inf")
    theta = _check(theta, d, rule, curvature, CHAIN_RULES)
    if rule == "split":
        if curvature != "dense":
            raise ValueError("rule 'split' has dense curvature only")
        if not (np.isfinite(eps) and eps > 0):
            raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
        order = "argmax-first"
    hg = np.zeros((b, T, m)) if node_log_prior is None else \
        np.broadcast_to(np.asarray(node_log_prior, dtype=np.float64), (b, T, m))
    he = np.zeros((b, T - 1, m, m)) if edge_log_prior is None else \
        np.broadcast_to(np.asarray(edge_log_prior, dtype=np.float64), (b, T - 1, m, m))
    for name, h in (("node_log_prior", hg), ("edge_log_prior", he)):
        if np.isnan(h).any() or (h == np.inf).any():
            raise ValueError(f"{name} contains NaN or +inf (use -inf for zero weight)")
    # log priors near -1e308 sum to -inf (zero weight: exact), near +1e308 to +inf (log Z
    # beyond float64: refused below with the other non-finite outcomes)
    with np.errstate(over="ignore", invalid="ignore"):
        dense = curvature == "dense"
        # position 0: one term per label
        lz = hg[:, 0] + g[:, 0] @ theta                                 # (b, m)
        mu = g[:, 0].copy()                                             # (b, m, d)
        S = np.zeros((b, m, d, d) if dense else (b, m, d))
        for t in range(1, T):
            # terms indexed by y' (axis 1) for each label y (axis 2)
            la = lz[:, :, None] + he[:, t - 1] + e[:, t - 1] @ theta + \
                (hg[:, t] + g[:, t] @ theta)[:, None, :]                # (b, m', m)
            vec = mu[:, :, None, :] + e[:, t - 1] + g[:, t][:, None, :, :]   # (b, m', m, d)
            if rule == "split":
                S = S + _split_step(la, lz, mu, e[:, t - 1], eps)[:, None]
                S = np.broadcast_to(S[:, :1], (b, m) + S.shape[2:]).copy()
                lz_n, mu_n, _ = _alg1_groups(la.transpose(0, 2, 1).reshape(b * m, m),
                                             vec.transpose(0, 2, 1, 3).reshape(b * m, m, d),
                                             curvature, order)
                lz, mu = lz_n.reshape(b, m), mu_n.reshape(b, m, d)
                continue
            la_g = la.transpose(0, 2, 1).reshape(b * m, m)
            vec_g = vec.transpose(0, 2, 1, 3).reshape(b * m, m, d)
            lz_n, mu_n, R = _alg1_groups(la_g, vec_g, curvature, order)
            lz = lz_n.reshape(b, m)
            mu = mu_n.reshape(b, m, d)
            R = R.reshape((b, m) + R.shape[1:])
            if rule == "shared":
                S = S + R.sum(axis=1, keepdims=True)        # S constant over labels
            elif rule == "literal":
                S = S.sum(axis=1, keepdims=True) + R
            else:
                comb = np.stack([_combine(S[i], "tight") for i in range(b)])
                S = comb[:, None] + R
            S = np.broadcast_to(S, (b, m) + S.shape[2:]).copy()
        lz_r, mu_r, R = _alg1_groups(lz, mu, curvature, order)
        if rule == "literal":
            total = S.sum(axis=1) + R
        elif rule in ("shared", "split"):
            total = S[:, 0] + R
        else:
            total = np.stack([_combine(S[i], "tight") for i in range(b)]) + R
    if not np.isfinite(lz_r).all():
        bad = int(np.flatnonzero(~np.isfinite(lz_r))[0])
        where = "" if single else f" (chain {bad} of the batch)"
        if lz_r[bad] == -np.inf:
            raise ValueError("every configuration has zero prior weight: log Z = -inf" + where)
        raise ValueError("log Z overflows float64: the scores or log priors are too large"
                         + where)
    with np.errstate(over="ignore"):
        lz_r = lz_r + _rounding_allowance(hg, g, he, e, theta)
    if not np.isfinite(lz_r).all():
        raise ValueError("the scores or log priors are too large (near 1e308) for log Z to be "
                         "bounded in float64 with its rounding allowance")
    if not (np.isfinite(mu_r).all() and np.isfinite(total).all()):
        raise ValueError("the bound's mean or curvature overflows float64: the features are "
                         "too large")
    if single:
        return JunctionBound(float(lz_r[0]), mu_r[0], total[0], theta)
    return JunctionBound(lz_r, mu_r, total, theta)
