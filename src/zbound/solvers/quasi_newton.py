"""Quasi-Newton directions safeguarded by the bound: ``"lbfgs-bound"`` and its preconditioned
form ``"lbfgs-precond"`` (both monotone).

On problems where the Alg. 1 / Alg. 3 curvature is far above the Hessian (chain CRFs with many
labels: along the gradient the chain bound's curvature is 20-70 times the Hessian at theta = 0
and several hundred times near the optimum, docs/crf.md), a step that minimizes the majorizer
is very short, and even an exact Newton step costs dozens of Hessian products per iteration.
This method lets limited-memory BFGS choose the direction and uses the bound only where a
quasi-Newton line search would run out of options:

- the unit quasi-Newton step is taken when it passes the Armijo test (one value-and-gradient
  evaluation per iteration, no line search); the first step (no curvature pairs yet) tries
  the length 1 / ||g|| along -g (CRFsuite's first step; ``first_step="hessian"``: the length
  -g^T d / d^T H d from one Hessian product);
- a trial that fails Armijo is followed by up to ``backtracks`` value-only interpolated
  lengths;
- only if those fail too, the step goes to the minimizer of the majorizer along the
  direction, s* = -g^T d / d^T C d (<= 1), which surely descends: J(x + s d) <= J + s g^T d +
  s^2/2 d^T C d. On the CRF corpora of ``zbound bench crf`` this last resort is never reached
  (0 bound steps): the bound is the method's guarantee of monotone progress, not its speed.

Every accepted iterate decreases the objective (tested in tests/solvers/test_quasi_newton.py and
tests/estimators/test_chain_crf.py). ``LBFGSBound`` is not in the method registry: pass the
class, ``minimize(model, x0, method=LBFGSBound)``, or ``ChainCRF(solver="lbfgs-bound")``. The
inverse Hessian is kept in compact form (:class:`CompactMemory`, the two-loop recursion's
matrix in a few GEMVs) over ``memory`` pairs (s, y) with s^T y > 0 (the objective is convex
wherever a bound is used; pairs that fail are skipped).

Preconditioned (``precondition="bound"``, or the registered ``"lbfgs-precond"`` with
``"auto"``): for softmax / logistic objectives the initial inverse Hessian is gamma B^{-1},
B a FIXED curvature built once: Boehning's bound
(I_k - 1 1^T / K) / 2 (x) X^T X plus the penalties (binary: X^T X / 4 + reg), shrunk towards
a multiple of the identity (B + mu I, mu = ``shrink`` x the median of the bound's diagonal:
the median, so that a few features in large units do not set it), gamma =
s^T y / y^T B^{-1} y of the newest pair. The class factor has two eigenvalues, so B^{-1} costs
one Cholesky factor of a (d, d) matrix (:class:`BoundPreconditioner`, kept in LAPACK's
rectangular full packed form: d (d + 1) / 2 numbers), never a (p, p) one, and the intercept
column stays implicit (for d <= 256 the inverses are kept explicitly: one GEMM per
application). ``lbfgs-precond`` keeps that factor and its curvature pairs in single
precision once the pairs would take more than 1 MB (``precision="auto"``: about half the
peak memory, the same iteration counts). The first step goes along
-B^{-1} g, the minimizer of a quadratic upper bound; at x = 0 its trial length minimizes the
exact second-order model there (uniform class probabilities: the Hessian is 2 / K times
Boehning's data curvature), Armijo-tested. The shrink, the memory and the precision rules are
checked by the ``logreg-large`` and ``estimators`` benchmarks.

Mixed precision (``evaluation="mixed"``; "auto", the ``lbfgs-precond`` default, from 10^6
rows x parameters): the iterations evaluate the model's float32 form
(``model.single_precision()``, :class:`zbound.models.loss.SingleSoftmaxLoss`: a float32 copy
of X, exp / log on float32 SIMD lanes) until a stopping test holds on its values or float32
stops resolving the progress (a decrease or a gradient near its rounding level); then the
iterate is evaluated in float64 and the run goes on with the same curvature pairs
(``finish="lbfgs"``) or with safeguarded Newton steps (``finish="newton"``; "auto": Newton
for one weight vector, binary logistic regression, whose Hessian is a single (d, d) block).
Every stop is decided on float64 values: ``target`` on a float64 value, ``tol`` on a float64
gradient; ``fun`` is float64's (``jac`` too, except after a target stop, where it is the last
float32 gradient); the trace holds float32 values before ``info["single_iterations"]`` and
float64 ones from there, and only the float64 part is monotone in float64. A float32
evaluation that overflows, or a float32 line search that fails, hands over to float64
silently.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils._param_validation import StrOptions

from zbound.bounds.boehning import BoundPreconditioner  # noqa: F401  (re-exported)
from zbound.models.base import FixedCurvature, SinglePrecision, loss_and_penalties, supports
from zbound.models.boehning import (  # noqa: F401  (re-exported)
    bound_preconditioner,
    preconditioner_cost,
    preconditioner_fits,
)
from zbound.solvers.base import (
    CountedModel,
    MethodInfo,
    Solver,
    State,
    little_left,
    model_name,
    register,
)
from zbound.solvers.linesearch import ARMIJO as _ARMIJO
from zbound.solvers.linesearch import backtrack
from zbound.solvers.result import Status
from zbound.utils.validation import NON_NEGATIVE, NON_NEGATIVE_INT, POSITIVE_INT, Choices

_ROUND = 1e-12


def two_loop(g: np.ndarray, S: list, Y: list, rho: list, h0=None,
             h0_scale: float | None = None) -> np.ndarray:
    """-H g for the L-BFGS inverse Hessian H of the pairs (S, Y), H0 = (s^T y / y^T y) I, or,
    with a preconditioner ``h0`` (a callable v -> B^{-1} v), H0 = h0_scale B^{-1}
    (``h0_scale`` None: s^T y / y^T B^{-1} y of the last pair is not known here, so 1).
    The textbook two-loop recursion: the solvers use :class:`CompactMemory`, the same matrix
    in fewer calls, and the tests check it against this.

    BLAS dot / axpy in place (numpy's ``q -= a * y`` allocates and passes over a temporary:
    at p ~ 10^6 the recursion is memory-bound and this halves its cost), in the precision of
    the stored pairs (float32 pairs: the recursion in single precision, the direction returned
    in float64)."""
    from scipy.linalg.blas import get_blas_funcs

    dtype = S[0].dtype if S else np.float64
    dot, axpy = get_blas_funcs(("dot", "axpy"), dtype=dtype)
    q = np.array(g, dtype=dtype, copy=True)
    alpha = []
    for s, y, r in zip(reversed(S), reversed(Y), reversed(rho)):
        a = r * float(dot(s, q))
        q = axpy(y, q, a=-a)
        alpha.append(a)
    if h0 is None:
        y = Y[-1]
        q *= float(dot(S[-1], y)) / float(dot(y, y))
    else:
        q = np.array(h0(q), dtype=dtype, copy=False)
        if h0_scale is not None:
            q *= h0_scale
    for s, y, r, a in zip(S, Y, rho, reversed(alpha)):
        b = r * float(dot(y, q))
        q = axpy(s, q, a=a - b)
    q = q.astype(np.float64, copy=False)
    q *= -1.0
    return q


# CompactMemory takes B^{-1} y as B^{-1} g_new - B^{-1} g_old while ||y|| >= this x ||g_new||
# (the difference loses about ||g|| / ||y|| times the precision of a product with B^{-1})
_DIFF_MIN = 1e-2


class CompactMemory:
    """The L-BFGS inverse Hessian in the compact form of Byrd, Nocedal & Schnabel (1994,
    Thm 2.2), with H0 = gamma B^{-1} (``h0`` a callable v -> B^{-1} v, or None: B = I):

        H = gamma B^{-1} + [S, gamma Z] M [S, gamma Z]^T,  Z = B^{-1} Y,
        M = [[R^{-T} (D + gamma Y^T Z) R^{-1}, -R^{-T}], [-R^{-1}, 0]],

    R the upper triangle of S^T Y (pairs in the order they came), D its diagonal, gamma =
    s^T y / y^T z of the newest pair. The same matrix as the two-loop recursion
    (:func:`two_loop`; tested to 1e-10), for far fewer calls: a direction costs one GEMV over
    the stacked (2m, p) array [S; Z] and one back plus two (m, m) triangular solves, where the
    recursion makes 4m BLAS-1 calls. Each iteration needs one product with B^{-1}, of g_new:
    z = B^{-1} g_new - B^{-1} g_old while ||y|| >= 0.01 ||g_new|| (else B^{-1} y directly),
    where the recursion needed a second one for gamma. In float64 the new column of S^T Y
    and of Y^T Z are differences of the products [S; Z] g kept from the previous iteration
    (L-BFGS-B's bookkeeping); in float32 (``dtype``: half the memory; the (m, m) matrices,
    gamma and the direction stay float64) they come from one more GEMV with y, which does
    not cancel. Pairs live in a ring buffer of ``m`` slots."""

    def __init__(self, p: int, m: int, dtype=np.float64, h0=None):
        from scipy.linalg.blas import get_blas_funcs

        self.m, self.dtype, self.h0 = int(m), np.dtype(dtype), h0
        self.SZ = np.zeros((2 * self.m, p), dtype=self.dtype)   # rows: S slots, then Z slots
        # (m, m) in the order the pairs came (position 0 the oldest): R = triu(S^T Y) and
        # Y^T Z, float64, Fortran order for BLAS
        self.R = np.zeros((self.m, self.m), order="F")
        self.YZ = np.zeros((self.m, self.m), order="F")
        self.n = 0                      # pairs kept
        self.head = 0                   # slot of the oldest pair once all m slots are used
        self.gamma = 1.0
        self.u = None                   # B^{-1} g at the current iterate
        self.WS = None                  # [S; Z] g at the current iterate, by slot (2m,)
        self.W = None                   # the same by position: S part, then Z part (2n,)
        self._trsv = get_blas_funcs("trsv", dtype=np.float64)
        # rows of [S; Z] by position: n < m pairs in slots 0..n-1; m pairs from ``head`` on
        self._pos_cache: dict[tuple[int, int], np.ndarray] = {}
        self._coef = np.zeros(2 * self.m, dtype=self.dtype)

    def __len__(self) -> int:
        return self.n

    def _positions(self) -> np.ndarray:
        """Rows of [S; Z] by position: the S slots oldest first, then the Z slots (n < m
        pairs sit in slots 0..n-1; m pairs in slots head, head + 1, ... modulo m)."""
        key = (self.n, self.head)
        pos = self._pos_cache.get(key)
        if pos is None:
            slots = (np.arange(self.n) + self.head) % self.m
            pos = self._pos_cache[key] = np.concatenate([slots, slots + self.m])
        return pos

    def _apply_h0(self, g: np.ndarray) -> np.ndarray:
        """B^{-1} g; without a preconditioner g itself (not copied: it is only read, and at
        p ~ 10^6 each copy is one more vector at the peak)."""
        if self.h0 is None:
            return np.asarray(g, dtype=np.float64)
        return np.asarray(self.h0(g), dtype=np.float64)

    def start(self, g: np.ndarray) -> None:
        """Forget every pair; ``g`` is the gradient at the current iterate."""
        self.n = self.head = 0
        self._coef[:] = 0.0
        self.u = self._apply_h0(g)
        self.WS = self.W = None

    def regrad(self, g: np.ndarray) -> None:
        """The gradient at the current iterate was re-evaluated (e.g. in float64 after float32
        iterations): keep the pairs, recompute what was kept of the old gradient."""
        self.u = self._apply_h0(g)
        if self.WS is not None:
            self.WS = (self.SZ @ np.asarray(g, dtype=self.dtype)).astype(np.float64)
            self.W = self.WS[self._positions()]

    def first_direction(self) -> np.ndarray:
        """-B^{-1} g (no pairs)."""
        return -self.u

    def push(self, s: np.ndarray, y: np.ndarray, g_new: np.ndarray) -> bool:
        """Move to the next iterate (gradient ``g_new``, reached by the step ``s`` with
        gradient change ``y``) and keep the pair if s^T y > 1e-12 y^T B^{-1} y > 0; whether it
        was kept."""
        u_new = self._apply_h0(g_new)
        yy = float(y @ y)
        if self.h0 is None:
            z = y                       # B = I
        elif yy >= _DIFF_MIN ** 2 * float(g_new @ g_new):
            z = u_new - self.u          # B^{-1} y without a second product
        else:                           # y << g: the difference would cancel
            z = self._apply_h0(y)
        self.u = u_new
        sy, yz = float(s @ y), float(y @ z)
        # the curvature test in H0's metric, y^T B^{-1} y (y^T y without a preconditioner):
        # in plain y^T y a gradient column in units of 1e6 rejected every pair
        keep = sy > 0.0 and yz > 0.0 and sy > 1e-12 * yz and math.isfinite(yz)
        m, n = self.m, self.n
        if not keep and not n:
            return False
        single = self.dtype == np.float32
        if keep:
            R, YZ = self.R, self.YZ
            if n == m:                  # the oldest pair's slot takes the new one
                j = self.head
                self.head = (j + 1) % m
                n -= 1
                R[:n, :n] = R[1:, 1:]
                YZ[:n, :n] = YZ[1:, 1:]
            else:
                j = n
                self.n = n + 1
            if n and single:
                # s_i^T y and z_i^T y (= y_i^T B^{-1} y) of the older pairs from y itself:
                # in float32, [S; Z] g_new - [S; Z] g_old would cancel
                dW = (self.SZ @ np.asarray(y, dtype=self.dtype)).astype(np.float64)
            self.SZ[j] = s
            self.SZ[m + j] = z
        WS = (self.SZ @ np.asarray(g_new, dtype=self.dtype)).astype(np.float64)
        pos = self._positions()
        if keep:
            if n:
                if not single:
                    dW = WS - self.WS           # slot j's entry is not used
                dW = dW[pos]
                R[:n, n] = dW[:n]
                YZ[:n, n] = YZ[n, :n] = dW[n + 1:2 * n + 1]
            R[n, :n] = 0.0
            R[n, n], YZ[n, n] = sy, yz
            self.gamma = sy / yz
        self.WS = WS
        self.W = WS[pos]
        return keep

    def direction(self) -> np.ndarray:
        """-H g at the current iterate."""
        n = self.n
        if not n:
            return -self.u
        gamma, W = self.gamma, self.W
        R = self.R[:n, :n]
        c = self._trsv(R, W[:n])                           # R^{-1} S^T g
        rhs = self.YZ[:n, :n] @ c
        rhs -= W[n:]
        rhs *= gamma
        rhs += np.diag(R) * c
        coef = self._coef
        pos = self._positions()
        coef[pos[:n]] = self._trsv(R, rhs, trans=1)
        c *= -gamma
        coef[pos[n:]] = c
        out = coef @ self.SZ
        out = out.astype(np.float64)
        out += gamma * self.u
        out *= -1.0
        return out


PRECONDITIONERS = ("none", "bound", "auto")
# memory="auto" (lbfgs-precond): 80 pairs where they fit in 1 MB as float64 (p <= 819), else
# 40: more pairs help small p and cost large p memory.
_AUTO_MEMORY = (40, 80)
_AUTO_MEMORY_BYTES = 1 << 20
PRECISIONS = ("double", "single", "auto")
EVALUATIONS = ("double", "mixed", "mixed-lean", "auto")
FINISHES = ("lbfgs", "newton", "auto")
# evaluation="mixed" leaves float32 once an accepted step decreased the objective by less than
# the first fraction of it, or the gradient's largest entry fell below the second fraction of
# the first gradient's: at float32's own resolution when L-BFGS goes on in float64 (the sums
# over rows average the per-row rounding); much earlier when Newton steps finish, as Newton
# needs about as many steps from there as from a finer point.
_SINGLE_LEVELS = {"lbfgs": (1e-8, 1e-6), "newton": (1e-4, 1e-3)}
# precision="auto": float32 pairs (and factor) once the float64 pairs would take more than this
_AUTO_SINGLE_BYTES = 2**20
# precision="single" keeps the preconditioner's factor in float32 only for shrink >= this (a
# shrunk B has condition number <= 1 + d / shrink; shrink = 0, the bound itself, stays float64)
_SINGLE_MIN_SHRINK = 0.1


def has_single_form(model) -> bool:
    """Whether ``model`` can evaluate in float32 (``single_precision()``; for an objective,
    its loss too: :meth:`zbound.models.loss.SoftmaxLoss.single_precision`)."""
    return supports(model, SinglePrecision) and \
        supports(loss_and_penalties(model)[0], SinglePrecision)


@dataclass
class LBFGSState(State):
    """The bound-safeguarded L-BFGS state: the curvature pairs (``memory``) and the fixed
    preconditioner ``h0`` (or None); the float32 model while iterations run in float32
    (``fast``, None in float64) with the levels at which they stop (``levels``: decrease and
    gradient relative to ``g_first``); the Newton finish (solver, its state) once started;
    and step counts."""

    memory: Any = None
    h0: Any = None
    fast: Any = None
    g_first: float = 0.0
    levels: tuple[float, float] = (0.0, 0.0)
    newton: tuple | None = None
    newton_iterations: int = 0
    initial_steps: int = 0
    unit_steps: int = 0
    interpolated_steps: int = 0
    bound_steps: int = 0
    single_iterations: int = 0
    single_evaluations: int = 0
    # (the gradient it was computed at, the direction): computed by the stopping test, taken
    # by the next step while the gradient is the same object
    direction: tuple | None = None
    # the model evaluations from which Newton steps take over (None: never)
    newton_after: int | None = None


def _has_hessian(model) -> bool:
    """Whether the model (inside a :class:`CountedModel` too) can take Newton steps."""
    return callable(getattr(model, "value_grad_hessian", None))


def _single_vector_newton(model) -> bool:
    """A model whose loss has a single weight vector (binary logistic regression: its Hessian
    is one (d, d) block, where Newton converges in a few steps) and a Hessian to take them."""
    return getattr(getattr(model, "loss", model), "k", 0) == 1 and _has_hessian(model)


@register
class LBFGSBound(Solver):
    """L-BFGS directions; the bound gives the step length where the unit step fails (monotone).

    Options: ``memory`` (pairs kept, default 10); ``first_step``: "gradient" (default: the
    trial length 1 / ||g||), "hessian" (the length -g^T d / d^T H d from one Hessian product,
    when the model has ``hessian``) or "bound" (the bound's step); ``backtracks`` (default 4):
    value-only trials (safeguarded quadratic interpolation) after a trial that fails Armijo,
    before the bound; ``precondition``: "none" (default: H0 = (s^T y / y^T y) I),
    "bound" (H0 = gamma B^{-1}, B the fixed bound curvature of :class:`BoundPreconditioner`;
    ValueError for a model without it) or "auto" (the same where :func:`preconditioner_fits`,
    else "none"); ``shrink`` (default 1.0): B + mu I with mu = shrink x the median of the
    bound's diagonal (0: the bound itself); ``precision``: "double" (default), "single" (curvature
    pairs stored in float32, the (m, m) matrices of the compact form and the direction in
    float64, and, for shrink >= 0.1, the preconditioner's factor in float32: half the memory
    of both) or "auto" (single once 2 x ``memory`` float64 pairs would exceed 1 MB);
    ``evaluation``: "double" (default), "mixed" (float32 evaluations of the model's
    ``single_precision()`` form first, from a float32 copy of the data, see the module
    docstring; ValueError for a model without one), "mixed-lean" (the same converting row
    blocks of the data at every evaluation: no copy, one block's memory, slower than
    "mixed") or "auto" ("mixed" from ``AUTO_MIN_WORK`` rows x parameters where
    available); ``finish`` after float32: "lbfgs" (default), "newton" (NewtonBound from that
    iterate, same stopping settings) or "auto" (Newton for a single weight vector);
    ``newton_after``: None (default: L-BFGS throughout), a number of model evaluations
    after which Newton steps (NewtonBound) take over (from float32 iterations too), or "auto"
    (for a single weight vector, :func:`newton_switch`; else None). The inverse Hessian is kept in
    compact form (:class:`CompactMemory`). With a preconditioner the first step is along
    -B^{-1} g, trial length 1, or, where every class has the same score (x = 0), the
    minimizer of the exact second-order model along it
    (:meth:`BoundPreconditioner.first_length`); ``first_step`` is not used. ``result_info``:
    how many steps were initial, unit, interpolated and by the bound.
    """

    info = MethodInfo(
        "lbfgs-bound", peer=False, constraints="none", uses_bound=True,
        needs=("majorizer",),
        description="L-BFGS direction, unit step when it passes Armijo, else interpolated "
                    "lengths, else the minimizer of the bound along it; monotone")
    options = {"memory": 10, "first_step": "gradient", "backtracks": 4, "precondition": "none",
               "shrink": 1.0, "precision": "double", "evaluation": "double",
               "finish": "lbfgs", "newton_after": None}

    option_constraints = {
        "memory": [POSITIVE_INT, StrOptions(Choices("auto"))],
        "first_step": [StrOptions(Choices("gradient", "hessian", "bound"))],
        "backtracks": [NON_NEGATIVE_INT],
        "precondition": [StrOptions(Choices(*PRECONDITIONERS))],
        "shrink": [NON_NEGATIVE],
        "precision": [StrOptions(Choices(*PRECISIONS))],
        "evaluation": [StrOptions(Choices(*EVALUATIONS))],
        "finish": [StrOptions(Choices(*FINISHES))],
        "newton_after": [None, NON_NEGATIVE_INT, StrOptions(Choices("auto"))],
    }

    def init(self, model, x):
        fast = self._single_model(model)
        f, g = (model if fast is None else fast).value_and_grad(x)
        if fast is not None and not (math.isfinite(f) and np.isfinite(g).all()):
            fast = None                          # float32 overflowed here: float64 throughout
            f, g = model.value_and_grad(x)
        single = self.single_precision(x.shape[0])
        h0 = self._preconditioner(model, single)
        dtype = np.float32 if single else np.float64
        mem = CompactMemory(x.shape[0], self.memory_size(x.shape[0]), dtype, h0)
        mem.start(g)
        return LBFGSState(x, f, g, memory=mem, h0=h0, fast=fast,
                          g_first=float(np.max(np.abs(g))),
                          levels=_SINGLE_LEVELS["newton" if self.newton_finish(model)
                                                else "lbfgs"],
                          newton_after=self._newton_after(model))

    def _newton_after(self, model) -> int | None:
        """Model evaluations after which the run hands over to Newton steps (``newton_after``,
        "auto" resolved), or None."""
        rule = self.opts["newton_after"]
        if rule is None:
            return None
        if rule == "auto":
            if _single_vector_newton(model):
                X = getattr(loss_and_penalties(model)[0], "X", None)
                return newton_switch(int(model.n_params),
                                     X.nbytes if isinstance(X, np.ndarray) else 0)
            price = _blocks_newton_price(model)
            return None if price is None else int(math.ceil(NEWTON_RENT * price))
        if not _has_hessian(model):
            raise ValueError(f"newton_after={rule!r} needs a model with value_grad_hessian(), "
                             f"which {model_name(model)} does not have")
        return int(rule)

    def memory_size(self, p: int) -> int:
        """Pairs kept: ``memory``; "auto": ``_AUTO_MEMORY[1]`` where that many float64 pairs
        take at most ``_AUTO_MEMORY_BYTES``, else ``_AUTO_MEMORY[0]``."""
        k = self.opts["memory"]
        if k != "auto":
            return int(k)
        small, large = _AUTO_MEMORY
        return large if 2 * large * int(p) * 8 <= _AUTO_MEMORY_BYTES else small

    def mixed(self, model) -> bool:
        """Whether the early iterations evaluate in float32 (``evaluation``; "auto": "mixed"
        for a model with a float32 form, ``single_precision()``, from ``AUTO_MIN_WORK`` rows
        x parameters of work per gradient upwards, the size from which the solver policy picks
        this method)."""
        rule = self.opts["evaluation"]
        if rule == "double":
            return False
        if not has_single_form(model):
            if rule in ("mixed", "mixed-lean"):
                raise ValueError(f"evaluation={rule!r} needs a model with a float32 form "
                                 f"(single_precision()), which {model_name(model)} does "
                                 "not have; use evaluation='auto' or 'double'")
            return False
        if rule == "auto":
            return gradient_work(model) >= AUTO_MIN_WORK
        return True     # "mixed", "mixed-lean"

    def _single_model(self, model):
        """The float32 form of ``model`` counted on its own, or None (see :meth:`mixed`)."""
        if not self.mixed(model):
            return None
        rule = self.opts["evaluation"]
        fast = model.single_precision(copy=False) if rule == "mixed-lean" else \
            model.single_precision()
        if fast is None:
            if rule in ("mixed", "mixed-lean"):
                warnings.warn(f"evaluation={rule!r}: X does not fit float32's range; "
                              "evaluating in float64", RuntimeWarning, stacklevel=4)
            return None
        return CountedModel(fast)

    def _leave_single(self, state) -> str | None:
        """Why the float32 phase is over, or None: a stopping test holds on the float32
        values ("target", "other": they are only estimates, every stop is decided in
        float64), or float32 no longer resolves the progress ("other": the last decrease or
        the gradient at float32's noise)."""
        stat = float(np.max(np.abs(state.g)))
        status = self.stop_status(state, stat)
        if status is not None:
            return "target" if status is Status.TARGET else "other"
        min_decrease, min_grad = state.levels
        if stat <= min_grad * state.g_first or (
                state.f_prev is not None
                and state.f_prev - state.f <= min_decrease * max(1.0, abs(state.f))):
            return "other"
        return None

    def newton_finish(self, model) -> bool:
        """Whether the float64 phase after float32 iterations takes Newton steps
        (``finish``; "auto": for a single weight vector, binary logistic regression, whose
        Hessian is one (d, d) block, where Newton converges in a few steps from there)."""
        rule = self.opts["finish"]
        if rule == "auto":
            return _single_vector_newton(model)
        return rule == "newton"

    def _to_double(self, model, state, f: float | None = None, newton: bool = False) -> None:
        """End the float32 phase: re-evaluate at the current iterate in float64 (the value
        ``f`` if already known: then the gradient stays float32's, for a run that stops here)
        and carry on with the same curvature pairs, or with Newton steps (``finish``, or
        ``newton``)."""
        state.single_evaluations = state.fast.n_evals
        state.fast = None
        state.single_iterations = state.nit
        if f is None and (newton or self.newton_finish(model)):
            f = self._start_newton(model, state)
        elif f is None:
            f, g = model.value_and_grad(state.x)
            state.g = g
            state.memory.regrad(g)
        state.f, state.f_prev = float(f), None
        if state.recorder is not None and len(state.recorder):    # the trace holds float64
            g = state.g                                           # from this iterate on
            state.recorder.amend(state.f, math.sqrt(g @ g), model.n_evals)

    @staticmethod
    def _evaluations(model, state) -> int:
        """Model evaluations so far, float32 ones included (what ``newton_after`` counts: a
        backtracking L-BFGS iteration costs several)."""
        n = int(getattr(model, "n_evals", state.nit))
        return n + (int(state.fast.n_evals) if state.fast is not None else 0)

    def _start_newton(self, model, state) -> float:
        """Hand the run over to Newton steps (NewtonBound, the same stopping settings) from the
        current iterate; returns the objective there (the gradient is set on ``state``)."""
        from zbound.solvers.majorization import NewtonBound

        newton = NewtonBound(tol=self.tol, ftol=self.ftol, max_iter=self.max_iter,
                             target=self.target, order=self.order)
        ns = newton.init(model, state.x)
        state.newton = (newton, ns)
        state.g = ns.g
        return ns.f

    def check(self, model, state):
        if state.fast is not None:
            why = self._leave_single(state)
            if why is None and not self.limit_reached(model, state):
                return
            f = model.value(state.x) if why == "target" else None
            if f is not None and f <= self.target:
                self._to_double(model, state, f)        # reached: stop on the float64 value
            else:
                self._to_double(model, state)
        super().check(model, state)

    def result(self, model, state):
        if state.fast is not None:                    # stopped in float32 (callback): certify
            self._to_double(model, state)
        return super().result(model, state)

    def single_precision(self, p: int) -> bool:
        """Whether the curvature pairs are kept in float32 (``precision``; "auto": once 2 x
        ``memory`` float64 vectors of length p would exceed 1 MB)."""
        rule = self.opts["precision"]
        if rule == "auto":
            return 2 * self.memory_size(p) * p * 8 > _AUTO_SINGLE_BYTES
        return rule == "single"

    def _preconditioner(self, model, single: bool = False):
        """The fixed-curvature preconditioner (``precondition``), or None; its factor in
        float32 when the pairs are (``single``) and B is shrunk enough."""
        rule = self.opts["precondition"]
        if rule == "none":
            return None
        if rule == "auto" and not preconditioner_fits(model):
            return None
        single = single and self.opts["shrink"] >= _SINGLE_MIN_SHRINK
        pre = None
        for dtype in (np.float32, np.float64) if single else (np.float64,):
            try:
                pre = bound_preconditioner(model, float(self.opts["shrink"]),
                                           sample=self.opts["shrink"] > 0, dtype=dtype)
                break
            except FloatingPointError as exc:
                # X^T X out of float32's range: build it in float64; out of float64's too: no
                # preconditioner ("auto": plain L-BFGS with the bound safeguard)
                if dtype is np.float64:
                    if rule == "bound":
                        raise ValueError(f"precondition='bound': {exc}; rescale the features "
                                         "or use precondition='auto' or 'none'") from None
                    return None
        if pre is None and rule == "bound":
            raise ValueError("precondition='bound' needs a softmax objective (a loss with "
                             "bound_gram() and L2 penalties equal over classes); use "
                             "precondition='auto' or 'none'")
        return pre

    def _bound_step(self, model, state, d):
        """x + s* d with s* the majorizer's minimizer along d (capped at 1)."""
        maj = model.majorizer(state.x, self.order)
        # along the unit direction u = d / ||d||: d^T C d itself overflows where the
        # features and the gradient are both huge (1e100)
        dn = float(np.linalg.norm(d))
        if not (dn > 0.0 and math.isfinite(dn)):
            return None
        u = d / dn
        with np.errstate(over="ignore", invalid="ignore"):     # checked just below
            uCu = float(u @ maj.curvature.matvec(u))
        if not (uCu > 0.0 and math.isfinite(uCu)):
            return None
        return state.x + min(1.0, -float(state.g @ u) / (dn * uCu)) * d

    def _first_length(self, model, x, g, d, gd):
        """Trial length of the first step (no curvature pairs yet), None for the bound."""
        rule = self.opts["first_step"]
        if rule == "gradient":
            return 1.0 / math.sqrt(-gd)                 # d = -g: CRFsuite's 1 / ||g||
        if rule == "hessian" and callable(getattr(model, "hessian", None)):
            with np.errstate(over="ignore", invalid="ignore"):  # checked just below
                dHd = float(d @ model.hessian(x).matvec(d))
            if dHd > 0.0 and math.isfinite(dHd):
                return -gd / dHd
        return None

    def stop_status(self, state, stat):
        """The shared tests, with one more condition on the relative stationarity test
        (||g||_inf <= tol * abs(f) where the absolute one fails): the quasi-Newton model must
        predict at most ``STILL_MOVING_RTOL`` of abs(f) left to gain, (1/2) g^T H g <= 1e-2
        abs(f). Far from the optimum a quadratic penalty makes f grow faster than g (theta ~
        1e5 over 21 parameters: f = 7e8 with ||g||_inf = 1e3, 20 million times the optimum,
        passed the relative test after one short first step); the pairs' curvature then puts
        the decrease left at about f itself."""
        status = super().stop_status(state, stat)
        if status is not Status.STATIONARY or stat <= self.tol or state.newton is not None:
            return status
        mem = state.memory
        if mem is None or (not len(mem) and state.h0 is None):
            return status                   # no curvature yet: -g has no scale of f
        d = mem.direction()
        state.direction = (state.g, d)
        return status if little_left(-0.5 * float(state.g @ d), state.f) else None

    def update(self, model, state):
        if state.newton is None and state.newton_after is not None and \
                self._evaluations(model, state) >= state.newton_after:  # Newton takes over
            if state.fast is not None:                  # from float32: via float64
                self._to_double(model, state, newton=True)
            else:
                state.f = float(self._start_newton(model, state))
        if state.newton is not None:                    # the Newton finish
            newton, ns = state.newton
            newton.update(model, ns)
            if ns.status is not Status.RUNNING:
                state.status = ns.status
                return
            self.accept(model, state, ns.x, ns.f, ns.g)
            state.newton_iterations += 1
            return
        fast = state.fast
        if fast is not None:
            self._step(fast, model, state)
            if state.status is Status.NO_DECREASE:      # float32 lost its way: float64 on
                state.status = Status.RUNNING
                self._to_double(model, state)
            return
        self._step(model, model, state)

    def _step(self, model, exact, state):
        """One iteration evaluating ``model`` (float32 or float64); the bound safeguard is
        ``exact``'s majorizer."""
        f, g, x = state.f, state.g, state.x
        mem, h0 = state.memory, state.h0
        pairs = len(mem) > 0
        cached, state.direction = state.direction, None
        if cached is not None and cached[0] is g:        # computed by the stopping test
            d = cached[1]
        else:
            d = mem.direction() if (pairs or h0 is not None) else -g
        gd = float(g @ d)
        if not gd < 0.0:                      # not a descent direction: restart
            mem.start(g)
            pairs = False
            d = -g if h0 is None else mem.first_direction()
            gd = float(g @ d)
            if not gd < 0.0:
                d, gd = -g, -float(g @ g)
        if gd == 0.0:
            state.status = Status.ZERO_STEP
            return
        x_new = None
        step = 1.0
        if not pairs:                  # no pairs yet: the first trial length
            step = self._first_length(exact, x, g, d, gd) if h0 is None else \
                h0.first_length(x, d, gd)
        if step is not None:
            x_try = x + step * d if step != 1.0 else x + d
            f_new, g_new = model.value_and_grad(x_try)
            if f_new <= f + _ARMIJO * step * gd:
                x_new = x_try
                if pairs:
                    state.unit_steps += 1
                else:
                    state.initial_steps += 1
            else:
                # value-only backtracking: up to ``backtracks`` interpolated Armijo trials
                found = backtrack(model.value, x, d, f, gd, step, f_new, self.opts["backtracks"])
                if found is not None:
                    x_new = x + found[0] * d
                    f_new, g_new = model.value_and_grad(x_new)
                    state.interpolated_steps += 1
        if x_new is None:
            x_new = self._bound_step(exact, state, d)
            if x_new is None:
                state.status = Status.NO_DECREASE
                return
            f_new, g_new = model.value_and_grad(x_new)
            if not f_new <= f + _ROUND * max(1.0, abs(f)):
                state.status = Status.NO_DECREASE
                return
            state.bound_steps += 1
        if not (math.isfinite(f_new) and np.isfinite(g_new).all()):
            state.status = Status.NO_DECREASE
            return
        mem.push(x_new - x, g_new - g, g_new)
        self.accept(exact, state, x_new, f_new, g_new)

    def result_info(self, state):
        info = {"initial_steps": state.initial_steps, "unit_steps": state.unit_steps,
                "interpolated_steps": state.interpolated_steps, "bound_steps": state.bound_steps}
        if state.single_iterations or state.single_evaluations:
            info.update(single_iterations=state.single_iterations,
                        single_evaluations=state.single_evaluations)
        if state.newton is not None:
            info.update(newton_iterations=state.newton_iterations,
                        newton=state.newton[0].result_info(state.newton[1]))
        return info


@register
class PreconditionedLBFGS(LBFGSBound):
    """``"lbfgs-precond"``: :class:`LBFGSBound` with ``precondition="auto"``: for a softmax /
    logistic objective whose preconditioner is cheap (see :func:`preconditioner_cost`), the
    L-BFGS initial inverse Hessian is gamma B^{-1}, B the fixed bound curvature of
    :class:`BoundPreconditioner` shrunk towards a multiple of the identity (``shrink``), gamma
    s^T y / y^T B^{-1} y of the last pair; the first step goes along the minimizer of that
    bound (at x = 0 with the exact model's length, Armijo-tested). Other models, or a
    preconditioner costing more than 40 gradients (d large against t: SRBCT, Text), get plain
    L-BFGS with the bound safeguard. ``memory`` defaults to "auto" here: 80 pairs where they
    fit in 1 MB as float64, else 40; ``precision`` to "auto": float32 pairs and factor for
    large p, float64 below 1 MB of pairs (float32 pairs cost nearly separable small problems
    iterations); ``evaluation`` to "auto" (float32 evaluations first from 10^6 rows x
    parameters) and ``finish`` to "auto" (binary: Newton steps after float32). Monotone in
    float64 (the float32 phase is monotone in its own values)."""

    info = MethodInfo(
        "lbfgs-precond", peer=False, constraints="none", uses_bound=True,
        needs=("majorizer",),
        description="L-BFGS with the fixed Boehning bound curvature (shrunk) as its initial "
                    "inverse Hessian, unit step under Armijo, bound safeguard; monotone")
    options = {**LBFGSBound.options, "precondition": "auto", "memory": "auto",
               "precision": "auto", "evaluation": "auto", "finish": "auto"}


#: ``newton_after="auto"``: model evaluations of L-BFGS before Newton steps take over, in
#: units of the cost ratio of one Newton step (a (d, d) Hessian and its factor) to one
#: L-BFGS iteration, which :func:`newton_price` puts at 2 + d / 16 for one weight vector of d
#: parameters where X stays in cache, 2 + d / 100 where it streams from memory. Ski rental:
#: L-BFGS runs while its cost stays within NEWTON_RENT Newton steps, about what Newton needs
#: from there, so a run costs at most about twice the cheaper of the two.
NEWTON_RENT = 4
#: X larger than this streams from memory at every evaluation (a last-level cache share of a
#: few MB per core is common), and :func:`newton_price` takes the streamed price.
NEWTON_CACHE_BYTES = 8 << 20


def newton_price(d: int, nbytes: int = 0) -> float:
    """One Newton step's cost in L-BFGS iterations, for one weight vector of ``d`` parameters
    over a dense X of ``nbytes``. In cache an iteration is cheap against the Hessian's d^2 work
    per row: 2 + d / 16. Streamed from memory an iteration costs two passes over X, and
    Newton's Hessian about one more: 2 + d / 100 (both fitted to the ratio observed on
    problems of d = 11-201 over 500-200 000 rows)."""
    if nbytes > NEWTON_CACHE_BYTES:
        return 2.0 + d / 100.0
    return 2.0 + d / 16.0


def blocks_newton_price(rows: int, b: int, n: int) -> float:
    """One truncated Newton step's cost in gradients (about one L-BFGS iteration each) for
    ``n`` class blocks of ``b`` columns over ``rows`` dense rows, where the bound
    preconditioner does not pay (d large against the rows): the gradient and two or three
    Hessian products, plus the preconditioner :class:`NewtonBound` builds, from flop counts
    against a gradient's 4 rows b n: with fewer rows than columns the Woodbury form,
    (rows n)^3 / 3 for the whole Hessian up to 1500 rows x classes, n rows^3 / 3 by classes
    beyond, and rows^2 b for X E^-1 X^T; else n dense class blocks, n (rows b^2 + b^3 / 3),
    about every other step. It prices a step above its observed cost, which keeps
    L-BFGS longer on the well-conditioned problems where it wins."""
    T, b, n = float(rows), float(b), float(n)
    grad = 4.0 * T * b * n
    if T < b:
        pre = (T * n) ** 3 / 3.0 if T * n <= 1500 else n * T ** 3 / 3.0
        pre += T * T * b
    else:
        pre = n * (T * b * b + b ** 3 / 3.0) / 2.0
    return 3.0 + pre / grad


def _blocks_newton_price(model) -> float | None:
    """:func:`blocks_newton_price` for a softmax objective with several weight vectors over a
    dense X in memory and a Hessian; None for anything else."""
    if not _has_hessian(model):
        return None
    loss, _ = loss_and_penalties(model)
    X = getattr(loss, "X", None)
    n, b = int(getattr(loss, "k", 0)), int(getattr(loss, "d", 0))
    if n < 2 or not isinstance(X, np.ndarray) or not supports(loss, FixedCurvature):
        return None
    return blocks_newton_price(X.shape[0], b, n)


#: :func:`precond_tail_switch`: preconditioned L-BFGS on several weight vectors hands over to
#: Newton steps after at least this many evaluations. It converges well before on every
#: suite problem (scaled digits at C = 100, its longest: 124 iterations); past it the run is
#: in a crawling tail (raw digits at C = 1000 stopped at max_iter without the handover; at 100
#: evaluations the handover came too early for scaled digits at C = 100).
PRECOND_TAIL_EVALS = 200


def precond_tail_switch(model) -> int | None:
    """``newton_after`` for "lbfgs-precond" on a softmax objective with several weight vectors
    over a dense X (:func:`blocks_newton_price` applies): the later of
    ``PRECOND_TAIL_EVALS`` and NEWTON_RENT x the price of a Newton step; None for anything
    else (two classes have their own Newton finish after float32)."""
    price = _blocks_newton_price(model)
    if price is None:
        return None
    return max(PRECOND_TAIL_EVALS, int(math.ceil(NEWTON_RENT * price)))


def newton_switch(d: int, nbytes: int = 0) -> int:
    """``newton_after="auto"`` for one weight vector of ``d`` parameters over a dense X of
    ``nbytes``: ceil(NEWTON_RENT x :func:`newton_price`) model evaluations."""
    return int(math.ceil(NEWTON_RENT * newton_price(d, nbytes)))


@register
class LBFGSNewton(LBFGSBound):
    """``"lbfgs-newton"``: :class:`LBFGSBound` in float64 that hands over to Newton steps
    (:class:`~zbound.solvers.majorization.NewtonBound`) once it has made
    :func:`newton_switch` model evaluations (``newton_after="auto"``; binary logistic regression:
    one (d, d) Hessian block). Well-conditioned problems converge in the L-BFGS phase at a
    fraction of Newton's cost per step; nearly separable, weakly regularized ones, whose
    L-BFGS tail runs to hundreds of iterations, finish in a few Newton steps. Monotone."""

    info = MethodInfo(
        "lbfgs-newton", peer=False, constraints="none", uses_bound=True,
        needs=("majorizer",),
        description="L-BFGS (bound-safeguarded) for a budget of evaluations priced in Newton "
                    "steps, then Newton steps safeguarded by the bound; monotone")
    options = {**LBFGSBound.options, "newton_after": "auto"}


#: "lbfgs-precond" evaluates in float32 first (``evaluation="auto"``) from this much work per
#: gradient (rows x parameters); :class:`zbound.solvers.SolverPolicy` picks it for two
#: classes from there
AUTO_MIN_WORK = 1_000_000


def gradient_work(model) -> int:
    """Rows x parameters of a model's loss: the work of one gradient, the size that
    ``AUTO_MIN_WORK`` is compared with."""
    loss, _ = loss_and_penalties(model)
    return int(getattr(loss, "n_samples", 0)) * int(model.n_params)


__all__ = ["LBFGSBound", "LBFGSNewton", "PreconditionedLBFGS", "NEWTON_CACHE_BYTES", "NEWTON_RENT",
           "PRECOND_TAIL_EVALS", "precond_tail_switch", "newton_price", "newton_switch",
           "blocks_newton_price", "BoundPreconditioner", "bound_preconditioner",
           "preconditioner_cost", "preconditioner_fits", "gradient_work", "AUTO_MIN_WORK",
           "two_loop"]
