"""Newton and bound majorization for L2-regularized softmax regression in sample space (d >> t).

When the number of parameters p = k d is much larger than t k (t rows, k free classes), every
curvature the library uses for ``MultinomialLogistic`` has the form

    H = reg I + U F F^T U^T,      U = I_k (x) X^T  (p x t k),     F = blockdiag_j F_j,

with F_j (k x m) a factor of the per-row k x k block: s_j (diag p_j - p_j p_j^T) for the exact
Hessian, s_j B_j for the Alg. 1 bound (Jebara & Choromanska 2012). Woodbury gives

    H^{-1} = (I - U F M^{-1} F^T U^T) / reg,     M = reg I + F^T G F,   G = U^T U = I_k (x) K,

with K = X X^T the t x t Gram matrix. With theta's scores z = U^T theta (vec of X W^T) and the
weighted residuals r = vec(s (P - Y)) the gradient is g = U r + reg theta, and the step
theta' = theta - H^{-1} g simplifies to (for any theta, in the span of the data or not)

    theta' = U a',    a' = (F y - r) / reg,    y = M^{-1} F^T (G r + reg z).

So every step lands in the span of the data, theta = U a, and the solver keeps (a, z = G a)
instead of theta: an iteration costs O(t^2 k m) plus an (t m)^3 / 3 Cholesky ("cholesky":
K formed once, dense X) or a few products with X per CG iteration ("cg": matrix-free, sparse X,
the preconditioner Jacobi). The start theta_0 need not be in the span: the iterate is
theta = c theta_0 + U a with c = 1 at the start and 0 after the first full step. theta itself
(p entries) is formed once per accepted iterate, together with its gradient, by one product
X^T [a, r + reg a].

Two methods:

``sample-newton``
    Newton's method with the exact Hessian, Armijo backtracking, and the bound as safeguard: if
    no step along the Newton direction passes Armijo, the exact minimizer of the Alg. 1
    majorizer is taken (a certified decrease).
``sample-bound``
    Alg. 2 (bound majorization) with the full Alg. 1 curvature: every step minimizes the
    majorizer exactly, so the objective decreases monotonically.

Both need ``model`` = ``Objective(SoftmaxLoss, L2Penalty(reg))`` with one scalar reg > 0 (e.g.
:class:`~zbound.models.multinomial.MultinomialLogistic`): with a per-coordinate penalty the
optimum leaves the span of the data and the reduction does not hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from zbound.models.base import SoftmaxData, supports
from zbound.solvers.base import MethodInfo, Solver, State, model_name, register
from zbound.solvers.linesearch import ARMIJO as _ARMIJO
from zbound.solvers.linesearch import armijo_search
from zbound.solvers.result import Status
from zbound.utils.linalg import pcg
from zbound.utils.logspace import log_softmax
from zbound.utils.validation import NON_NEGATIVE_INT, POSITIVE_INT

#: "auto" uses the dense Cholesky path (K = X X^T formed once) for dense X while t m is at most
#: this; otherwise matrix-free CG in sample space.
DIRECT_MAX = 3000


@dataclass
class SampleSpaceWork:
    """What the sample-space Newton method keeps between iterations. The iterate is
    theta = c theta_0 + U A (U the rows' class-block design), with scores ``Z``,
    probabilities ``P``, per-row label-bound data ``S``, residuals ``R``, ||theta||^2
    ``nrm2``, X^T R (``XtR``) and its Gram product (``GR``, None until needed); ``design``
    the data's products, ``reg`` the L2 strength, ``k`` classes (the first ``free`` not
    among the sample-space unknowns), ``m`` unknowns per row, ``t`` rows, ``complete``
    whether the classes are complete, labels ``y`` and weights ``sw``, the labelled rows and
    their labels among the unknowns (``rows``, ``yfree``), the inner solver, theta_0 and the
    first gradient norm."""

    design: Any
    reg: float
    k: int
    free: int
    m: int
    t: int
    complete: bool
    y: np.ndarray
    sw: np.ndarray | None
    rows: np.ndarray
    yfree: np.ndarray
    inner: str
    theta0: np.ndarray
    c: float = 1.0
    A: np.ndarray | None = None
    Z: np.ndarray | None = None
    R: np.ndarray | None = None
    P: np.ndarray | None = None
    S: Any = None
    nrm2: float = 0.0
    g0: float = 1.0
    XtR: np.ndarray | None = None
    GR: np.ndarray | None = None


@dataclass
class SampleSpaceState(State):
    """The sample-space method's state: its :class:`SampleSpaceWork`."""

    work: SampleSpaceWork | None = None


def _softmax_parts(Z: np.ndarray, y: np.ndarray, sw, free: int):
    """Loss sum_j s_j (lse_j - S_{j,y_j}), probabilities over all classes (t, n), for the
    scores Z (t, k) of the free classes (a zero reference column in front when free = 1)."""
    S = np.hstack([np.zeros((Z.shape[0], 1)), Z]) if free else Z
    lse, P = log_softmax(S, axis=1)
    per_row = lse - S[np.arange(S.shape[0]), y]
    loss = float(per_row.sum()) if sw is None else float(sw @ per_row)
    return loss, P, S


def _factor(A: np.ndarray, complete: bool) -> np.ndarray:
    """A factor Phi (t, k, m) with Phi_j Phi_j^T = A_j for PSD blocks A (t, k, k).

    With ``complete`` (no reference class) the blocks act on score changes of a loss that is
    invariant to adding a constant to every score: A_j is replaced by Pi A_j Pi, Pi the
    projection onto 1^perp, which is exact for the Hessian (it annihilates 1), still a bound
    for the Alg. 1 curvature (the loss at u equals the loss at Pi u), and saves one column.
    """
    t, k, _ = A.shape
    E = _perp_basis(k) if (complete and k >= 2) else None
    if E is not None:
        A = np.einsum("ka,jkl,lb->jab", E, A, E)
    if A.shape[1] == 1:                       # binary: a square root per row
        Phi = np.sqrt(np.maximum(A, 0.0))
    else:
        lam, Q = np.linalg.eigh(A)
        np.maximum(lam, 0.0, out=lam)
        Phi = Q * np.sqrt(lam)[:, None, :]
    if E is not None:
        Phi = np.einsum("ka,jab->jkb", E, Phi)
    return Phi


_PERP: dict[int, np.ndarray] = {}


def _perp_basis(k: int) -> np.ndarray:
    """Orthonormal basis (k, k - 1) of the vectors orthogonal to 1 (cached per k)."""
    E = _PERP.get(k)
    if E is None:
        E = _PERP[k] = np.linalg.qr(np.eye(k) - 1.0 / k)[0][:, : k - 1]
    return E


class _Design:
    """Products with the design [X, 1 (if fit_intercept)] and its Gram matrix K.

    ``zero_sum=True`` says the rows of the (t, c) argument sum to 0 (residuals, steps and
    coefficients of a model without reference class live in 1^perp): then only c - 1 columns
    are multiplied and the last is minus their sum. Sparse X is multiplied one column at a time
    (SciPy's single-vector kernel is faster per column than its multi-vector one for a few
    columns) and X^T through the CSC view X.T (no transposed copy).
    """

    def __init__(self, X, fit_intercept: bool):
        self.X = X
        self.fit_intercept = fit_intercept
        self.sparse = sp.issparse(X)
        self.Xt = X.T
        self.K = None
        self._K_diag = None

    @property
    def K_diag(self) -> np.ndarray:
        if self._K_diag is None:
            X = self.X
            if self.sparse:
                sq = np.zeros(X.shape[0])
                nz = np.flatnonzero(np.diff(X.indptr))
                if nz.size:
                    sq[nz] = np.add.reduceat(X.data * X.data, X.indptr[nz])
            else:
                sq = np.einsum("ij,ij->i", X, X)
            self._K_diag = sq + 1.0 if self.fit_intercept else sq
        return self._K_diag

    def gram(self) -> np.ndarray:
        if self.K is None:
            X = self.X
            K = (X @ self.Xt).toarray() if self.sparse else X @ self.Xt
            if self.fit_intercept:
                K += 1.0
            self.K = np.asarray(K)
        return self.K

    @staticmethod
    def _zero_sum(fn, A: np.ndarray, zero_sum: bool) -> np.ndarray:
        if not zero_sum or A.shape[1] < 2:
            return fn(A)
        part = fn(A[:, :-1])
        return np.hstack([part, -part.sum(axis=1, keepdims=True)])

    def t_product(self, A: np.ndarray, zero_sum: bool = False) -> np.ndarray:
        """[X, 1]^T A: (d, c) for A (t, c)."""
        def fn(A):
            out = np.asarray(self.Xt @ A)
            if self.fit_intercept:
                out = np.vstack([out, A.sum(axis=0, keepdims=True)])
            return out
        return self._zero_sum(fn, A, zero_sum)

    def product(self, B: np.ndarray, zero_sum: bool = False) -> np.ndarray:
        """[X, 1] B: (t, c) for B (d, c)."""
        fi = self.fit_intercept

        def fn(B):
            Bx = B[:-1] if fi else B
            if self.sparse:
                out = np.empty((self.X.shape[0], B.shape[1]))
                for i in range(B.shape[1]):
                    out[:, i] = self.X @ np.ascontiguousarray(Bx[:, i])
            else:
                out = self.X @ Bx
            if fi:
                out += B[-1]
            return out
        return self._zero_sum(fn, B, zero_sum)

    def gram_product(self, A: np.ndarray, zero_sum: bool = False) -> np.ndarray:
        """K A for A (t, c): the stored Gram matrix if formed, else two products with X."""
        if self.K is not None:
            return self.K @ A
        if zero_sum and A.shape[1] >= 2:
            part = self.product(self.t_product(A[:, :-1]))
            return np.hstack([part, -part.sum(axis=1, keepdims=True)])
        return self.product(self.t_product(A))


def _check_model(model):
    """(loss, reg) of an objective over a softmax loss (:class:`SoftmaxData`) with one penalty
    reg/2 ||theta||^2; TypeError/ValueError otherwise."""
    loss = getattr(model, "loss", None)
    if loss is None or not supports(loss, SoftmaxData):
        name = model_name(model)
        raise TypeError("the sample-space methods need a softmax regression objective "
                        "(zbound.models.multinomial.MultinomialLogistic, or an Objective over a "
                        f"SoftmaxLoss), got {name}")
    pens = tuple(getattr(model, "penalties", ()))
    form = pens[0].curvature(model.n_params).diagonal_plus_rank_one() if len(pens) == 1 \
        else None
    if form is None or form[1] or not (form[0] == form[0][0]).all():
        raise ValueError("the sample-space methods need exactly one L2 penalty reg/2 "
                         "||theta||^2 with a scalar reg > 0 (the optimum then lies in the span "
                         "of the data); got "
                         f"{[type(p).__name__ for p in pens] or 'no penalty'}"
                         + (" with per-coordinate strengths" if form is not None and not form[1]
                            else ""))
    reg = float(form[0][0])
    if not reg > 0.0:
        raise ValueError(f"the sample-space methods need reg > 0, got {reg}")
    return loss, reg


class _SampleSpace(Solver):
    """Shared machinery of ``sample-newton`` and ``sample-bound`` (see the module docstring)."""

    curvature: str = "hessian"
    options = {"backtracks": 30, "cg_maxiter": None}
    option_constraints = {"backtracks": [NON_NEGATIVE_INT],
                          "cg_maxiter": [None, POSITIVE_INT]}

    # -- evaluation at a point given by its scores ---------------------------------------------
    def _eval(self, model, ex, Z: np.ndarray):
        loss, P, S = _softmax_parts(Z, ex.y, ex.sw, ex.free)
        R = P[:, ex.free:].copy()
        R[ex.rows, ex.yfree] -= 1.0
        if ex.sw is not None:
            R *= ex.sw[:, None]
        model.count("value")
        return loss, P, S, R

    def _materialize(self, model, ex, c: float, A: np.ndarray, R: np.ndarray):
        """theta = c theta_0 + U a and its gradient U (r + reg a) + reg c theta_0, by one
        product X^T [a, r + reg a] (caches X^T r for the next G r)."""
        k, reg, zs = ex.k, ex.reg, ex.complete
        RA = R + reg * A
        if zs:
            B = ex.design.t_product(np.hstack([A[:, :-1], RA[:, :-1]]))
            B1, B2 = B[:, : k - 1], B[:, k - 1:]
            B1 = np.hstack([B1, -B1.sum(axis=1, keepdims=True)])
            B2 = np.hstack([B2, -B2.sum(axis=1, keepdims=True)])
        else:
            B = ex.design.t_product(np.hstack([A, RA]))
            B1, B2 = B[:, :k], B[:, k:]
        theta = np.ascontiguousarray(B1.T).ravel()
        g = np.ascontiguousarray(B2.T).ravel()
        if c != 0.0:
            theta += c * ex.theta0
            g += (reg * c) * ex.theta0
        ex.XtR = B2 - reg * B1
        model.count("value_and_grad")
        return theta, g

    def init(self, model, x):
        loss, reg = _check_model(model)
        X = loss.X
        t = X.shape[0]
        k = loss.k
        free = loss.free
        design = _Design(X, loss.fit_intercept)
        complete = free == 0
        m = k - 1 if (complete and k >= 2) else k
        inner = self.inner
        if inner == "auto":
            inner = "cholesky" if (not design.sparse and t * m <= DIRECT_MAX) else "cg"
        if inner == "cholesky":
            design.gram()
        yl = loss.y
        yfree = yl - free
        rows = np.arange(t)
        has = yfree >= 0
        ex = SampleSpaceWork(design=design, reg=reg, k=k, free=free, m=m, t=t,
                             complete=complete, y=yl, sw=loss.sample_weight, rows=rows[has],
                             yfree=yfree[has], inner=inner, theta0=x.copy())
        W0 = x.reshape(k, loss.d)
        Z0 = design.product(np.ascontiguousarray(W0.T))                # (t, k) scores
        n0 = float(x @ x)
        f_loss, P, S, R = self._eval(model, ex, Z0)
        f = f_loss + 0.5 * reg * n0
        # gradient at theta_0 (not in the span): U r + reg theta_0
        XtR = design.t_product(R, complete)
        g = np.ascontiguousarray(XtR.T).ravel() + reg * x
        model.count("value_and_grad")
        ex.c, ex.A, ex.Z, ex.R, ex.P, ex.S, ex.nrm2 = 1.0, np.zeros((t, k)), Z0, R, P, S, n0
        ex.g0, ex.XtR, ex.GR = max(math.sqrt(float(g @ g)), 1e-300), XtR, None
        return SampleSpaceState(x, f, g, work=ex)

    # -- the step -------------------------------------------------------------------------------
    def _blocks(self, model, ex, kind: str) -> np.ndarray:
        """Per-row curvature blocks (t, k, k) over the free classes, sample weights included."""
        free = ex.free
        if kind == "hessian":
            Pf = ex.P[:, free:]
            A = -Pf[:, :, None] * Pf[:, None, :]
            idx = np.arange(Pf.shape[1])
            A[:, idx, idx] += Pf
            model.count("hessian")
        else:
            from zbound.bounds.multinomial import label_bound

            _, _, B = label_bound(ex.S, self.order)
            A = np.ascontiguousarray(B[:, free:, free:])
            model.count("bound")
        sw = ex.sw
        if sw is not None:
            A = A * sw[:, None, None]
        return A

    def _solve(self, ex, Phi: np.ndarray, b: np.ndarray, rtol: float):
        """(y, G Phi y) with y = M^{-1} b, M = reg I + Phi^T G Phi; b (t, m)."""
        reg, design = ex.reg, ex.design
        t, k, m = Phi.shape
        if ex.inner == "cholesky":
            K = design.K
            Pm = np.ascontiguousarray(Phi.transpose(0, 2, 1)).reshape(t * m, k)
            M = (Pm @ Pm.T).reshape(t, m, t, m)
            M *= K[:, None, :, None]
            M = M.reshape(t * m, t * m)
            M.flat[:: t * m + 1] += reg
            cf = scipy.linalg.cho_factor(M, lower=True, check_finite=False)
            y = scipy.linalg.cho_solve(cf, b.ravel(), check_finite=False).reshape(t, m)
            V = np.einsum("jkm,jm->jk", Phi, y)
            return y, K @ V
        # matrix-free PCG in sample space; tracks G Phi y alongside y
        diag = reg + design.K_diag[:, None] * np.einsum("jkm,jkm->jm", Phi, Phi)
        # The theta-space residual of the step is U Phi rho / reg for the sample-space residual
        # rho = b - M y, and ||b|| <= sqrt(lambda_max(N)) ||g|| (N = Phi^T G Phi), so
        # ||rho|| <= rtol' ||b|| gives a Newton residual <= rtol' (lambda_max(N) / reg) ||g||:
        # scale the forcing term by reg / (reg + tr N) (tr N >= lambda_max(N)).
        rtol = rtol * reg / (reg + float(diag.sum()) - reg * diag.size)
        maxiter = self.opts["cg_maxiter"] or max(20, min(t * m, 500))
        if not np.any(b):
            return np.zeros((t, m)), np.zeros((t, k))

        def product(p):
            GVp = design.gram_product(np.einsum("jkm,jm->jk", Phi, p), ex.complete)
            return reg * p + np.einsum("jkm,jk->jm", Phi, GVp), GVp

        y, GV, _ = pcg(product, b, lambda r: r / diag, rtol, maxiter, companion=True)
        return y, GV

    def _candidate(self, model, ex, kind: str, rtol: float):
        """(a', z') of the step to the minimizer of the quadratic model with curvature
        ``kind`` ("hessian" or "bound"); G r is cached per iterate."""
        reg = ex.reg
        Phi = _factor(self._blocks(model, ex, kind), ex.complete)
        GR = ex.GR
        if GR is None:
            design, zs = ex.design, ex.complete
            if design.K is not None:
                GR = design.K @ ex.R
            else:
                GR = design.product(ex.XtR, zs)
            ex.GR = GR
        rhs = GR + reg * ex.Z
        b = np.einsum("jkm,jk->jm", Phi, rhs)
        y, GV = self._solve(ex, Phi, b, rtol)
        V = np.einsum("jkm,jm->jk", Phi, y)
        A_new = (V - ex.R) / reg
        Z_new = (GV - GR) / reg
        return A_new, Z_new

    def _line(self, model, state, A_new, Z_new, armijo: bool):
        """Try theta + s (theta' - theta), s = 1, 1/2, ...; returns the accepted point or None.
        ``armijo``: sufficient decrease (Newton); else any decrease (majorizer minimizer)."""
        ex, reg = state.work, state.work.reg
        c, A, Z, R, nrm2, f = ex.c, ex.A, ex.Z, ex.R, ex.nrm2, state.f
        dZ = Z_new - Z
        tn = float(np.vdot(Z, A_new))                 # theta . theta'
        n_new = float(np.vdot(A_new, Z_new))          # ||theta'||^2
        dtd = tn - nrm2                               # theta . (theta' - theta)
        dd = n_new - 2.0 * tn + nrm2                  # ||theta' - theta||^2
        gd = float(np.vdot(R, dZ)) + reg * dtd
        if armijo and not gd < 0.0:
            return None
        # A Newton step whose predicted decrease is below the rounding of f cannot be checked
        # on f: the full step is taken if f does not rise by more than its rounding.
        noise = 1e-13 * max(1.0, abs(f)) if (armijo and -gd <= 1e-13 * max(1.0, abs(f))) \
            else None

        def trial(s):
            Zs = Z_new if s == 1.0 else Z + s * dZ
            f_loss, P, S, Rs = self._eval(model, ex, Zs)
            n_s = max(nrm2 + 2.0 * s * dtd + s * s * dd, 0.0)
            return f_loss + 0.5 * reg * n_s, (Zs, Rs, P, S, n_s)

        def accept(s, fs):
            if armijo:
                return fs <= f + _ARMIJO * s * gd or (noise is not None and fs <= f + noise)
            return fs <= f

        found = armijo_search(trial, f, gd, 1.0, shrink="halve",
                              trials=self.opts["backtracks"] + 1, accept=accept)
        if found is None:
            return None
        s, fs, (Zs, Rs, P, S, n_s) = found
        As = A_new if s == 1.0 else (1.0 - s) * A + s * A_new
        return {"c": (1.0 - s) * c, "A": As, "Z": Zs, "R": Rs, "P": P, "S": S, "nrm2": n_s,
                "f": fs}

    def update(self, model, state):
        ex = state.work
        gn = math.sqrt(float(state.g @ state.g))
        rtol = min(0.5, math.sqrt(gn / ex.g0))
        new = None
        if self.curvature == "hessian":
            A_new, Z_new = self._candidate(model, ex, "hessian", rtol)
            new = self._line(model, state, A_new, Z_new, armijo=True)
        if new is None:          # the bound: its minimizer decreases f (tight solve)
            A_new, Z_new = self._candidate(model, ex, "bound", rtol)
            new = self._line(model, state, A_new, Z_new, armijo=False)
            if new is None and ex.inner == "cg":
                A_new, Z_new = self._candidate(model, ex, "bound", 1e-12)
                new = self._line(model, state, A_new, Z_new, armijo=False)
        if new is None:
            state.status = Status.LINE_SEARCH_FAILED
            state.message = ("no decrease along the Newton direction nor at the bound's "
                             "minimizer (rounding level reached)")
            return
        theta, g = self._materialize(model, ex, new["c"], new["A"], new["R"])
        for key in ("c", "A", "Z", "R", "P", "S", "nrm2"):
            setattr(ex, key, new[key])
        ex.GR = None
        self.accept(model, state, theta, new["f"], g)

    def result_info(self, state):
        return {"inner": state.work.inner, "curvature": self.curvature,
                "sample_dim": state.work.t * state.work.m}


@register
class SampleNewton(_SampleSpace):
    """Newton's method in sample space (exact Hessian by Woodbury on the t x t Gram matrix),
    Armijo backtracking, the Alg. 1 bound's minimizer as safeguard. For d >> t softmax
    regression with a scalar L2 penalty; see :mod:`zbound.solvers.sample_space`."""

    info = MethodInfo("sample-newton", peer=False, constraints="none", uses_bound=True,
                      requires=SoftmaxData,
                      description="Newton with the exact Hessian solved in sample space "
                                  "(Woodbury on X X^T; d >> t softmax + L2), bound safeguard")
    curvature = "hessian"


@register
class SampleBound(_SampleSpace):
    """Alg. 2 (bound majorization, full Alg. 1 curvature) with each step solved in sample
    space; monotone. For d >> t softmax regression with a scalar L2 penalty."""

    info = MethodInfo("sample-bound", peer=False, constraints="none", uses_bound=True,
                      requires=SoftmaxData,
                      description="Alg. 2 bound majorization with the step solved in sample "
                                  "space (Woodbury on X X^T; d >> t softmax + L2)")
    curvature = "bound"
