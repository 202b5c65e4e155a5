"""Stochastic bound majorization: SPFB, LSPFB (Wang & Choromanska, SGB), mini-batch SBM and
Sherman-Morrison SBM (Pan, slides Alg. 3 and 4), and the first-order peers on the same stream.

Every method here is a :class:`~zbound.solvers.base.Solver` with ``MethodInfo(stochastic=True)``.
``update(batch, state)`` takes one step on the *model of a mini-batch*, built by
:func:`batch_objective`: the mean loss of the batch rows plus the penalties divided by the
number of rows,

    F_B(theta) = (1/m) sum_{j in B} s_j l_j(theta) + P(theta) / T,

an unbiased estimate of J(theta) / T for the full objective J = sum_j s_j l_j + P over T rows
(the paper's per-sample objective L with lambda = reg / T). ``run(model, x0)`` draws shuffled
mini-batches for ``max_iter`` epochs and records the full objective after every epoch.
``partial_fit`` of :class:`zbound.BoundSGDClassifier` sits on ``update``.

Bound methods (step d, then theta <- theta - eta_t d):

- ``"spfb"`` -- SGB Alg. 2 on mini-batches: d = (Sigma_B + lambda I)^{-1} grad F_B(theta), with
  Sigma_B the Alg. 1 curvature of the batch at theta (the factored softmax bound; dense
  Cholesky up to ``dense_max`` parameters, else warm-started Jacobi-PCG on products).
- ``"lspfb"`` -- SGB Alg. 4: the same with the curvature kept low-rank plus diagonal
  (``rank``, ``lowrank_rule`` "exact" / "sgb" / "paper"; the exact rule accumulated ``block``
  terms at a time by :class:`BlockedLowRank`) and a Woodbury solve; matrix-free.
- ``"sbm"`` -- slides Alg. 3 (mini-batch SBM): the exact bound step scaled by a constant eta.
- ``"sbm-sm"`` -- slides Alg. 4: the inverse (lambda I + Sigma_B)^{-1} built by one
  Sherman-Morrison update per rank-one term of Alg. 1, and phi = M grad kept alongside; O(p^2)
  per term, so limited to ``max_params``.

Curvature rebuild (``refresh``): the papers rebuild the bound at every update (``refresh=1``,
the default). ``refresh=r`` rebuilds it every r updates and reuses it (and its factorization)
in between; ``curvature_rows=c`` builds it from the first c rows of the batch only (scaled to
the batch). Step schedules: ``schedule="constant"`` (eta_t = lr) or ``"inverse"``
(eta_t = lr / (1 + (t - 1) / decay); ``decay=1`` is the paper's eta_0 / t).

Peers (``peer=True``): ``"sgd"``, ``"momentum"`` (heavy ball, optional Nesterov) and ``"adam"``,
PyTorch's ``torch.optim`` when torch is installed (``backend="auto"``), else the NumPy rules of
:mod:`zbound.solvers.first_order`, which match them to rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy.linalg.blas import dger
from sklearn.utils._param_validation import StrOptions

from zbound.bounds.lowrank import BlockedLowRank, blocked_lowrank_update
from zbound.bounds.preconditioners import KroneckerFactored
from zbound.models.base import Batchable, Majorizer, SoftmaxData, loss_and_penalties, supports
from zbound.models.objective import Objective, ScaledObjective
from zbound.solvers.base import MethodInfo, Solver, State, register
from zbound.solvers.first_order import SGD, AdaGrad, Adam, TorchRule, torch_available
from zbound.solvers.result import Status
from zbound.utils.linalg import (
    factor_solve,
    jacobi,
    pcg,
    pd_cholesky,
    singular_rtol,
    unit_diagonal_form,
)
from zbound.utils.validation import (
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    Choices,
    Number,
)

__all__ = ["SPFB", "LSPFB", "SBM", "BoehningSBM", "ShermanMorrisonSBM", "StochasticSGD",
           "StochasticMomentum", "StochasticAdam", "StochasticAdaGrad", "StochasticSolver",
           "BlockedLowRank", "KroneckerFactored",
           "batch_objective", "blocked_lowrank_update", "iterate_batches",
           "lowrank_majorizer_blocked", "sherman_morrison_inverse", "softmax_bound_terms"]

SCHEDULES = ("constant", "inverse")
# Above this many parameters "spfb" solves with matrix-free PCG instead of a dense Cholesky
# (a dense softmax bound costs n^2/2 Gram products of the batch: 55 of 1000 x 784 on KMNIST).
DENSE_MAX = 1000
#: The Kronecker curvature's Gram factor is a dense (w, w) matrix over the w columns of the
#: design (with the intercept): up to this width (128 MiB, and a batch of 1000 dense rows of
#: 32 MB); wider data (text: 10^4-10^6 columns) gets the Jacobi preconditioner, and the
#: averaged Kronecker curvature is an error there (it segfaulted allocating 30 000 x 30 000).
KRON_MAX_WIDTH = 4096


@dataclass
class StochasticState(State):
    """A stochastic method's state (``x``; ``f`` is NaN: no full objective is evaluated).

    ``t`` counts steps, ``clock`` the schedule's time (steps, each counted by its weight;
    ``step_weight`` that of the last), ``updates`` accepted updates, ``batch_value``
    the last mini-batch objective. The bound steps keep their curvature (``cache``, built
    ``n_bound`` times, next at step ``next_build``), the majorizer stashed by the pass that
    gave the gradient (``stashed``: (majorizer, penalties), None when absent), running
    averages of the bound pieces (``avg_dense``, ``avg_label``), the Gram factor's average
    and eigendecomposition (``gram``, ``gram_n`` builds over ``gram_rows`` rows,
    ``gram_eig``, ``gram_shift``), the last CG direction (``last_dir``) and the last
    Sherman-Morrison inverse (``M``); the first-order methods their update rule (``opt``, a
    rule of :mod:`zbound.solvers.first_order`)."""

    t: int = 0
    epochs: tuple | None = None
    clock: float = 0.0
    step_weight: float = 1.0
    updates: int = 0
    batch_value: float = math.nan
    cache: Any = None
    n_bound: int = 0
    next_build: int = 1
    stashed: tuple | None = None
    avg_dense: np.ndarray | None = None
    avg_label: np.ndarray | None = None
    gram: np.ndarray | None = None
    gram_n: int = 0
    gram_rows: int = 0
    gram_eig: tuple | None = None
    gram_shift: float = 0.0
    last_dir: np.ndarray | None = None
    M: np.ndarray | None = None
    opt: Any = None


# ---------------------------------------------------------------------------- batch models
def _scaled_penalty(pen, c: float):
    scaled = getattr(pen, "scaled", None)
    if not callable(scaled):
        raise TypeError(f"cannot scale penalty {type(pen).__name__} for a mini-batch (it has "
                        "no scaled(c) method)")
    return scaled(c)


def batch_objective(model, rows, n_total: int | None = None) -> Objective:
    """F_B = (1/m) sum_{j in rows} s_j l_j + P / T: the mini-batch model of ``model``.

    Parameters
    ----------
    model : :class:`~zbound.models.objective.Objective` whose loss has ``subset(rows)`` and
        ``reweighted(sample_weight)`` (e.g. ``SoftmaxLoss``)
    rows : indices of the batch rows (m of them)
    n_total : T, the number of rows of the full objective (default ``model.loss.n_samples``)
    """
    loss = getattr(model, "loss", None)
    if loss is None or not supports(loss, Batchable):
        raise TypeError(f"stochastic methods need an Objective whose loss has subset(rows); got "
                        f"{type(model).__name__}")
    rows = np.asarray(rows)
    m = rows.shape[0] if rows.dtype != bool else int(rows.sum())
    if m == 0:
        raise ValueError("a mini-batch needs at least one row")
    T = loss.n_samples if n_total is None else int(n_total)
    sub = loss.subset(rows)
    if not callable(getattr(sub, "reweighted", None)):
        # a loss without row weights of its own (the CRFs'): (1/m) (sum + (m / T) P), whose
        # value and gradient are all a first-order method asks for
        return ScaledObjective(Objective(sub, *(_scaled_penalty(p, m / T)
                                                for p in model.penalties)), 1.0 / m)
    sw = np.full(m, 1.0 / m) if sub.sample_weight is None else sub.sample_weight / m
    sub = sub.reweighted(sw)
    return Objective(sub, *(_scaled_penalty(p, 1.0 / T) for p in model.penalties))


def iterate_batches(n: int, batch_size: int, rng: np.random.Generator | None):
    """Row indices of the mini-batches of one epoch (shuffled with ``rng``, in order without)."""
    order = np.arange(n) if rng is None else rng.permutation(n)
    for a in range(0, n, batch_size):
        yield order[a:a + batch_size]


def softmax_bound_terms(loss, theta: np.ndarray, order: str = "descending") -> np.ndarray:
    """The rank-one terms of the Alg. 1 bound of a :class:`~zbound.models.loss.SoftmaxLoss`.

    Returns R of shape (m, p), one row r = sqrt(s_j w_i) (l_i (x) x_j) per sample j and visited
    label i with a positive weight (sample-major, labels in visiting order), so that
    R^T R = the loss's bound curvature sum_j s_j B_j (x) x_j x_j^T (over the free classes, with
    the implicit intercept column if any). l_i = e_{label_i} - m_{i-1} with the running mean
    m_i = m_{i-1} + rho_i l_i (the factors of ``label_bound_factors``), vectorized over samples.
    Dense; meant for small p (Sherman-Morrison SBM).
    """
    return loss.majorizer(np.asarray(theta, dtype=np.float64), order).curvature.rank_one_terms()


def lowrank_majorizer_blocked(batch, theta: np.ndarray, order: str = "descending",
                              rank: int = 10, block: int = 16):
    """The Alg. 1 majorizer of a softmax batch model with the curvature accumulated low-rank
    plus diagonal ``block`` rank-one terms at a time (:func:`blocked_lowrank_update`), the
    penalties added as in ``Objective.lowrank_majorizer``. Value and gradient exact; the
    curvature dominates the full Alg. 1 curvature (the "exact" rule, blocked). Never forms a
    p x p matrix; memory O(p (rank + block)) plus a chunk of terms."""
    theta = np.asarray(theta, dtype=np.float64)
    maj = batch.loss.majorizer(theta, order)
    C = maj.curvature
    Lw = C.label_vectors()
    if Lw is None:                                 # not one softmax chunk: stream the terms
        return batch.lowrank_majorizer(theta, order, rank=rank, rule="exact")
    X = C.design()
    t, n, kf = Lw.shape
    d = X.shape[1]
    p = kf * d
    acc = BlockedLowRank(p, int(rank), int(block))
    chunk = max(1, (8 * acc.block) // n)           # rows whose terms are built at once
    pending = np.zeros((0, p))
    for a in range(0, t, chunk):
        R = (Lw[a:a + chunk, :, :, None] * X[a:a + chunk, None, None, :]).reshape(-1, p)
        R = R[np.any(R != 0.0, axis=1)]
        if pending.shape[0]:
            R = np.vstack([pending, R])
        stop = R.shape[0] - R.shape[0] % acc.block
        acc.add_rows(R[:stop])
        pending = R[stop:]
    acc.add_rows(pending)
    f, g = maj.value, maj.grad.copy()
    curv = acc.curvature()
    for q in batch.penalties:
        f += q.add_value_grad(theta, g)
        curv = q.add_lowrank_curvature(curv, rule="exact")
    return Majorizer(theta, float(f), g, curv)


def sherman_morrison_inverse(M: np.ndarray, R: np.ndarray) -> np.ndarray:
    """(M^{-1} + R^T R)^{-1} by one Sherman-Morrison update per row of R (slides eq. (4)):
    M <- M - (M r)(M r)^T / (1 + r^T M r). ``M`` (p, p) symmetric positive definite, updated
    in place when Fortran-ordered; returns it."""
    M = np.asfortranarray(M)
    for r in R:
        u = M @ r
        den = 1.0 + float(r @ u)
        M = dger(-1.0 / den, u, u, a=M, overwrite_a=1)
    return M


# ------------------------------------------------------------------------------ the base
class StochasticSolver(Solver):
    """Shared by the stochastic methods: mini-batch epochs, step schedules, the run loop.

    Options (every stochastic method)
    ---------------------------------
    lr : eta_0 > 0
    schedule : "constant" (eta_t = lr) or "inverse" (eta_t = lr / (1 + (t - 1) / decay))
    decay : updates over which "inverse" halves the step (1: the paper's eta_0 / t)
    batch_size : rows per mini-batch in ``run``
    random_state : seed of the shuffling in ``run`` (None: unshuffled, in row order)

    ``max_iter`` counts epochs in ``run``; ``target``, ``tol`` and ``callback`` are checked
    after every epoch on the full objective.
    """

    options = {"lr": 1.0, "schedule": "constant", "decay": 1.0, "batch_size": 1000,
               "random_state": 0}
    option_constraints = {"lr": [POSITIVE], "schedule": [StrOptions(Choices(*SCHEDULES))],
                          "decay": [POSITIVE], "batch_size": [POSITIVE_INT],
                          "random_state": [None, Integral, np.random.Generator]}

    def step_size(self, t: float) -> float:
        """eta_t for the t-th update (t >= 1; a fractional t, from updates of less than a
        full weight, at most lr)."""
        lr = float(self.opts["lr"])
        if self.opts["schedule"] == "constant":
            return lr
        return lr / (1.0 + max(0.0, t - 1) / float(self.opts["decay"]))

    def current_step(self, state) -> float:
        """The step of the update in progress: eta at the schedule's clock, times the update's
        weight (1 for a full batch; less for a small ``partial_fit`` chunk)."""
        return state.step_weight * self.step_size(state.clock)

    # -- what a method implements --------------------------------------------------------------
    def direction(self, batch, state: State, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The step direction d (theta <- theta - eta_t d) on the batch model."""
        raise NotImplementedError

    def init(self, model, x):
        return StochasticState(np.array(x, dtype=np.float64, copy=True), math.nan)

    def update(self, batch, state: State, weight: float = 1.0) -> None:
        """One step on the mini-batch model ``batch`` (see :func:`batch_objective`).

        ``weight`` in (0, 1] scales the step and advances the schedule's clock by that much
        instead of one update: a chunk of a few rows counts as a fraction of a batch (a
        ``partial_fit`` stream of one-row chunks would otherwise take a full majorizer step
        per row, on a one-row bound, and halve the step every few rows)."""
        x = state.x
        with np.errstate(over="ignore", invalid="ignore"):
            f, g = self.value_and_grad(batch, state, x)
        if not (math.isfinite(f) and np.isfinite(g).all()):
            state.status = Status.FAILED
            state.message = "non-finite objective or gradient on a mini-batch (step too large?)"
            return
        state.t += 1
        state.clock += float(weight)
        state.step_weight = float(weight)
        d = self.direction(batch, state, x, g)
        with np.errstate(over="ignore", invalid="ignore"):
            x_new = self.apply_step(state, x, d)
        if not np.isfinite(x_new).all():
            state.status = Status.FAILED
            state.message = "the iterate became non-finite (step too large?)"
            return
        state.x = x_new
        state.batch_value = f
        state.updates += 1

    def value_and_grad(self, batch, state, x):
        """The batch model's value and gradient at x (a method may compute more alongside)."""
        return batch.value_and_grad(x)

    def apply_step(self, state, x, d):
        return x - self.current_step(state) * d

    # -- epochs: what ``run`` iterates (the loop and its stopping tests are Solver.run's) -------
    def start(self, model, x):
        """``run``'s state: the stream's (:meth:`init`) at x, with the full objective's value
        and gradient there and the epochs' shuffling (``random_state``) and batch size."""
        state = self.init(model, x)
        state.f, state.g = model.value_and_grad(state.x)
        rs = self.opts["random_state"]
        state.epochs = (None if rs is None else np.random.default_rng(rs),
                        model.loss.n_samples, int(self.opts["batch_size"]))
        return state

    def iterate(self, model, state):
        """One epoch: a step on every mini-batch of a shuffled pass over the rows, then the
        full objective's value and gradient at the new iterate. A model with a
        ``batch_model(rows)`` of its own gives the mini-batch models (None: a batch to skip,
        e.g. one of zero weight); else they are :func:`batch_objective`'s."""
        rng, T, bs = state.epochs
        make = getattr(model, "batch_model", None)
        for rows in iterate_batches(T, bs, rng):
            batch = batch_objective(model, rows, T) if make is None else make(rows)
            if batch is None:
                continue
            self.update(batch, state)
            if state.status is not Status.RUNNING:
                return
        with np.errstate(over="ignore", invalid="ignore"):
            f, g = model.value_and_grad(state.x)
        if not (math.isfinite(f) and np.isfinite(g).all()):
            state.status = Status.FAILED
            state.message = "the full objective became non-finite after an epoch (step too " \
                "large?)"
            return
        self.accept(model, state, state.x, f, g)

    def stop_status(self, state, stat):
        """The epochs' tests: ``target``, then the gradient's inf-norm <= tol * max(1, |f|);
        no objective-change test (a stochastic epoch may raise f)."""
        if self.target is not None and state.f <= self.target:
            return Status.TARGET
        if stat <= self.tol * max(1.0, abs(state.f)):
            return Status.STATIONARY
        return None

    def result_info(self, state):
        return {"updates": state.updates}


# ----------------------------------------------------------------------------- bound steps
class _BoundStep(StochasticSolver):
    """Curvature of the Alg. 1 bound of the batch, rebuilt every ``refresh`` updates, from all
    rows of the batch or the first ``curvature_rows`` of them."""

    options = {**StochasticSolver.options, "refresh": 1, "curvature_rows": None}
    option_constraints = {**StochasticSolver.option_constraints, "refresh": [POSITIVE_INT],
                          "curvature_rows": [None, POSITIVE_INT]}

    def curvature_model(self, batch):
        """The batch model whose bound curvature the step uses (the first ``curvature_rows``
        rows, reweighted to the batch's mean form)."""
        c = self.opts["curvature_rows"]
        loss = batch.loss
        if c is None or c >= loss.n_samples:
            return batch
        sub = loss.subset(np.arange(c))
        sw = sub.sample_weight * (loss.n_samples / c)
        return Objective(sub.reweighted(sw), *batch.penalties)

    def build(self, batch, x):
        """The cached curvature object for this method (rebuilt every ``refresh`` updates)."""
        raise NotImplementedError

    def solve(self, cache, g, state):
        raise NotImplementedError

    def direction(self, batch, state, x, g):
        if state.cache is None or (state.t - 1) % int(self.opts["refresh"]) == 0:
            state.cache = self.build(self.curvature_model(batch), x)
            state.n_bound += 1
        return self.solve(state.cache, g, state)

    def result_info(self, state):
        return {**super().result_info(state), "curvatures": state.n_bound}


def _penalty_diagonal(penalties, p: int) -> np.ndarray:
    """The diagonal of the penalties' curvature (L2 strengths; the centering term's u_i^2 w)."""
    diag = np.zeros(p)
    for pen in penalties:
        diag += pen.curvature(p).diagonal()
    return diag


@register
class SPFB(_BoundStep):
    """SGB Alg. 2 (Stochastic Partition Function Bound) on mini-batches.

    ``curvature="batch"`` (the paper): d = (Sigma_B + lambda I)^{-1} grad F_B with the full
    Alg. 1 curvature of the batch at theta, rebuilt every ``refresh`` updates. Up to
    ``dense_max`` parameters it is formed and Cholesky-factored; above, the step is
    ``cg_maxiter`` PCG iterations on products with it, warm-started from the previous direction
    and preconditioned by its Kronecker approximation (:class:`KroneckerFactored`: label factor
    of the batch, Gram factor averaged over the first ``gram_updates`` bound builds and then
    reused; ``precond="jacobi"`` for the diagonal instead, and the diagonal on designs wider
    than ``KRON_MAX_WIDTH`` columns, where the (w, w) Gram factor would not fit).

    ``curvature="average"`` (our extension, not in the paper): the curvature is the average of
    the batch bounds built so far, Sigma_bar <- (1 - rho_k) Sigma_bar + rho_k Sigma_B at the k-th
    build with rho_k = max(1/k, ``average_weight``) (None: the running mean 1/k), a semi-stochastic
    curvature with the noise of a single batch averaged out. Above ``dense_max`` parameters the
    average is kept in Kronecker form (averaged label factor (x) Gram factor) and solved exactly
    by its eigendecompositions (no PCG); ``kron_rank`` truncates its Gram factor (see
    :class:`KroneckerFactored`), up to ``KRON_MAX_WIDTH`` design columns (wider: a
    ValueError). Default step: eta_0 / (1 + (t - 1) / decay).

    Kronecker-path knobs (above ``dense_max``; defaults keep the earlier behaviour):
    ``gram_shrink`` = s damps the Gram factor to G + s tr(G) / rows I (rows averaged so far:
    the d / rows scale of a covariance estimate's noise; it only adds a PSD term, so the
    curvature only grows); ``gram_eig_builds`` lists the builds at which the Gram average is
    decomposed again (None: 1, 2, 4, ... and ``gram_updates``; must contain 1);
    ``late_refresh`` rebuilds the bound every ``late_refresh`` updates once the Gram average
    is complete (``"doubling"``: a build at update t is next rebuilt at update 2 t, so
    O(log t) builds; None: every ``refresh`` updates throughout).
    """

    info = MethodInfo("spfb", peer=False, constraints="none", uses_bound=True,
                      needs=("majorizer",), stochastic=True,
                      description="SGB Alg. 2: stochastic bound step (Sigma_B + lambda I)^-1 "
                                  "grad on mini-batches, eta_0 / t")
    options = {**_BoundStep.options, "schedule": "inverse", "dense_max": DENSE_MAX,
               "cg_maxiter": 20, "cg_rtol": 1e-3, "curvature": "batch",
               "average_weight": None, "gram_updates": 2, "precond": "kron",
               "kron_rank": None, "gram_shrink": 0.0, "gram_eig_builds": None,
               "late_refresh": None}

    option_constraints = {
        **_BoundStep.option_constraints,
        "dense_max": [NON_NEGATIVE_INT],
        "cg_maxiter": [POSITIVE_INT],
        "cg_rtol": [NON_NEGATIVE],
        "curvature": [StrOptions(Choices("batch", "average"))],
        "average_weight": [None, Number(Real, 0, 1, closed="right")],
        "gram_updates": [POSITIVE_INT],
        "precond": [StrOptions(Choices("kron", "jacobi"))],
        "kron_rank": [None, POSITIVE_INT],
        "gram_shrink": [NON_NEGATIVE],
        "gram_eig_builds": [None, list, tuple],
        "late_refresh": [None, POSITIVE_INT, StrOptions(Choices("doubling"))],
    }

    def check_options(self):
        at = self.opts["gram_eig_builds"]
        if at is not None:
            if not len(at) or not all(POSITIVE_INT.is_satisfied_by(k) for k in at):
                raise ValueError(f"gram_eig_builds must be None or a non-empty sequence of "
                                 f"build numbers >= 1, got {at!r}")
            if 1 not in at:
                raise ValueError(f"gram_eig_builds must contain 1 (the first build needs a "
                                 f"decomposition), got {at!r}")

    def _mix(self, ex, old, new):
        """The running / exponential average of a bound piece (``curvature="average"``): the
        piece ``new`` of this build averaged with ``old`` (None before the first)."""
        if self.opts["curvature"] != "average" or old is None:
            return new
        k = ex.n_bound + 1
        w = self.opts["average_weight"]
        rho = 1.0 / k if w is None else max(1.0 / k, float(w))
        return (1.0 - rho) * old + rho * new

    def _gram(self, ex, C):
        """Eigendecomposition of the Gram factor, averaged over the first ``gram_updates``
        builds (decomposed again at builds 1, 2, 4, ... and the last, or at the builds in
        ``gram_eig_builds``; in between the last decomposition is reused), then reused: the
        design does not depend on theta. (Its diagonal instead of the early decompositions
        diverges on KMNIST: the pixels are strongly correlated.) With ``gram_shrink`` = s the
        eigenvalues are shifted by s tr(G) / rows (rows: the rows averaged so far)."""
        K = int(self.opts["gram_updates"])
        if ex.gram_n < K:
            X = C.design()
            G = X.T @ X / X.shape[0]
            k = ex.gram_n + 1
            ex.gram = G if k == 1 else ex.gram + (G - ex.gram) / k
            ex.gram_n = k
            ex.gram_rows += X.shape[0]
            at = self.opts["gram_eig_builds"]
            if (k == K or k & (k - 1) == 0) if at is None else k in at:
                ex.gram_eig = np.linalg.eigh(ex.gram)
            # damping: G + gram_shrink * tr(G) / rows * I (rows averaged so far; the same
            # eigenvectors, so no extra decomposition): the Gram factor only grows (PSD order)
            ex.gram_shift = (float(self.opts["gram_shrink"]) * float(np.trace(ex.gram))
                             / ex.gram_rows)
        eg, Ug = ex.gram_eig
        c = ex.gram_shift
        return (eg + c, Ug) if c else (eg, Ug)

    def build(self, batch, x, ex=None):
        ex = StochasticState(x, math.nan) if ex is None else ex
        p = x.shape[0]
        if batch is None:                       # the majorizer stashed by value_and_grad
            (M, pen), ex.stashed = ex.stashed, None
        else:
            M, pen = batch.loss.majorizer(x, self.order), batch.penalties
        C = M.curvature
        diag = _penalty_diagonal(pen, p)
        if p <= int(self.opts["dense_max"]):
            A = C.assemble()
            for q in pen:
                q.curvature(p).add_to_dense(A)
            A = ex.avg_dense = self._mix(ex, ex.avg_dense, A)
            # factored with a unit diagonal, S A S (S = diag(A)^{-1/2}): the condition test
            # then judges the matrix, not the units of the columns (a column in units of 1e9
            # made A "singular", and the minimum-norm inverse dropped every other direction)
            As, S = unit_diagonal_form(A)
            c = pd_cholesky(As)
            if c is not None:
                return ("chol", c, S)
            # numerically singular (the condition test of singular_rtol): the minimum-norm
            # inverse, singular values below the same threshold dropped
            inv = np.linalg.pinv(As, rtol=singular_rtol(p), hermitian=True)
            return ("pinv", inv if S is None else inv * S[:, None] * S[None, :])
        lam = float(diag.max()) if diag.size and diag.max() > 0 else 1e-12
        kron = Bc = None
        average = self.opts["curvature"] == "average"
        if average or self.opts["precond"] == "kron":
            Bc = C.label_weight_matrix()
            if Bc is None:
                raise TypeError("the Kronecker curvature needs a softmax bound curvature")
            width = p // max(1, Bc.shape[0])
            if width > KRON_MAX_WIDTH:
                if average:
                    raise ValueError(
                        f"curvature='average' above dense_max={self.opts['dense_max']} "
                        f"parameters keeps a dense ({width}, {width}) Gram factor of the "
                        f"design ({8 * width**2 / 2**30:.1f} GiB), limit {KRON_MAX_WIDTH} "
                        "columns: use curvature='batch' (with precond='jacobi') or 'lspfb' "
                        "on data this wide")
                Bc = None                   # precond="kron": the Jacobi preconditioner
        if Bc is not None:
            B = ex.avg_label = self._mix(ex, ex.avg_label, Bc)
            kron = KroneckerFactored(B, self._gram(ex, C), lam, self.opts["kron_rank"])
        if average:
            return ("kron", kron)
        op = C
        for q in pen:
            op = op + q.curvature(p)
        pre = kron.solve if kron is not None else jacobi(op.diagonal())
        return ("cg", op, pre)

    def _interval(self, ex) -> int:
        """Updates until the next bound build: ``refresh``, or ``late_refresh`` once the Gram
        factor's average is complete (only above ``dense_max``, where a Gram factor is kept)."""
        late = self.opts["late_refresh"]
        if late is not None and ex.gram_n >= int(self.opts["gram_updates"]):
            return max(1, int(ex.t)) if late == "doubling" else int(late)
        return int(self.opts["refresh"])

    def _due(self, state) -> bool:
        return state.cache is None or state.t >= state.next_build

    def value_and_grad(self, batch, state, x):
        # one pass gives the value, the gradient and the bound (the Alg. 1 sums share it)
        state.stashed = None
        if self.opts["curvature_rows"] is None and self._due_next(state):
            M = batch.loss.majorizer(x, self.order)
            f, g = M.value, M.grad.copy()
            for q in batch.penalties:
                f += q.add_value_grad(x, g)
            state.stashed = (M, batch.penalties)
            return f, g
        return batch.value_and_grad(x)

    def _due_next(self, state) -> bool:
        return state.cache is None or state.t + 1 >= state.next_build

    def direction(self, batch, state, x, g):
        if self._due(state):
            src = None if state.stashed is not None else self.curvature_model(batch)
            state.cache = self.build(src, x, state)
            state.n_bound += 1
            state.next_build = state.t + self._interval(state)
        state.stashed = None
        return self.solve(state.cache, g, state)

    def solve(self, cache, g, state):
        kind = cache[0]
        if kind == "chol":
            return factor_solve(cache[1], g, cache[2])
        if kind == "pinv":
            return cache[1] @ g
        if kind == "kron":
            return cache[1].solve(g)
        C, pre = cache[1], cache[2]
        x0 = state.last_dir
        if x0 is not None:
            e, _ = pcg(C.matvec, g - C.matvec(x0), pre, float(self.opts["cg_rtol"]),
                       int(self.opts["cg_maxiter"]))
            d = x0 + e
        else:
            d, _ = pcg(C.matvec, g, pre, float(self.opts["cg_rtol"]),
                       int(self.opts["cg_maxiter"]))
        state.last_dir = d
        return d


@register
class LSPFB(_BoundStep):
    """SGB Alg. 4 (low-rank SPFB): the batch curvature kept as V^T S V + diag(D) (rank
    ``rank``, update rule ``lowrank_rule``: "exact", "sgb" -- SGB's Alg. 3 -- or "paper"),
    the step a Woodbury solve in O(p k^2 + k^3). Never forms a p x p matrix.

    ``accumulate``: "sequential" streams the rank-one terms one at a time (the papers'
    algorithm, ``Objective.lowrank_majorizer``); "blocked" takes ``block`` terms at a time
    (:class:`BlockedLowRank`, the exact rule only: still a bound, one (rank + block)-sized
    eigenproblem per block); "auto" (default) is "blocked" for the exact rule on a softmax
    loss and "sequential" otherwise."""

    info = MethodInfo("lspfb", peer=False, constraints="none", uses_bound=True,
                      needs=("majorizer",), stochastic=True,
                      description="SGB Alg. 4: stochastic bound step with a low-rank plus "
                                  "diagonal curvature (Woodbury solve)")
    options = {**_BoundStep.options, "schedule": "inverse", "rank": 10,
               "lowrank_rule": "exact", "accumulate": "auto", "block": 8}

    option_constraints = {**_BoundStep.option_constraints, "rank": [POSITIVE_INT],
                          "block": [POSITIVE_INT],
                          "lowrank_rule": [StrOptions(Choices("exact", "sgb", "paper"))],
                          "accumulate": [StrOptions(Choices("auto", "blocked", "sequential"))]}

    def check_options(self):
        acc = self.opts["accumulate"]
        if acc == "blocked" and self.opts["lowrank_rule"] != "exact":
            raise ValueError("accumulate='blocked' is the block version of the 'exact' rule; "
                             f"lowrank_rule={self.opts['lowrank_rule']!r} is sequential only")

    def blocked(self) -> bool:
        """Whether the bound is accumulated ``block`` terms at a time (the exact rule)."""
        acc = self.opts["accumulate"]
        return acc == "blocked" or (acc == "auto" and self.opts["lowrank_rule"] == "exact")

    def build(self, batch, x):
        if self.blocked() and supports(batch.loss, SoftmaxData):
            return lowrank_majorizer_blocked(batch, x, self.order, rank=int(self.opts["rank"]),
                                             block=int(self.opts["block"])).curvature
        return batch.lowrank_majorizer(x, self.order, rank=int(self.opts["rank"]),
                                       rule=self.opts["lowrank_rule"]).curvature

    def solve(self, cache, g, state):
        return cache.solve(g)


@register
class SBM(SPFB):
    """Mini-batch stochastic bound majorization (slides Alg. 3): the exact bound step of the
    batch, theta <- theta - eta (sum_i Sigma_i + lambda I)^{-1} (sum_i mu_i - f_i + lambda
    theta), with a constant eta (SPFB's step with ``schedule="constant"``)."""

    info = MethodInfo("sbm", peer=False, constraints="none", uses_bound=True,
                      needs=("majorizer",), stochastic=True,
                      description="slides Alg. 3: mini-batch bound step with a constant eta")
    options = {**SPFB.options, "schedule": "constant", "lr": 1.0}


@register
class BoehningSBM(_BoundStep):
    """Mini-batch bound majorization with Boehning's curvature of the batch (not in the
    papers): d = B_B^{-1} grad F_B with B_B = (I - 1 1^T / K) / 2 (x) X_B^T X_B / m plus the
    penalties (X_B^T X_B / (4 m) for one weight vector), the curvature of a quadratic bound
    on the batch objective at every theta (Boehning 1992). The Alg. 1 curvature of "spfb"
    is tighter but depends on theta: it costs n (n - 1) / 2 Gram products of the batch and a
    (p, p) Cholesky factor per update, this one one (d, d) Gram product and factor
    (:class:`~zbound.bounds.boehning.BoundPreconditioner`, never a (p, p) matrix). With
    ``lr`` = 1 every update minimizes a majorizer of the batch objective (the step never
    raises it); the default schedule is constant."""

    info = MethodInfo("sbm-boehning", peer=False, constraints="none", uses_bound=True,
                      needs=("majorizer",), stochastic=True,
                      description="mini-batch bound step with Boehning's fixed-form "
                                  "curvature of the batch: one (d, d) factor per update")
    options = {**_BoundStep.options, "schedule": "constant", "lr": 1.0, "gram": "running"}
    option_constraints = {**_BoundStep.option_constraints,
                          "gram": [StrOptions(Choices("batch", "running"))]}

    def build(self, batch, x, gram=None):
        from zbound.models.boehning import bound_preconditioner

        pre = bound_preconditioner(batch, shrink=0.0, gram=gram)
        if pre is None:
            raise ValueError("'sbm-boehning' needs a softmax or logistic objective with L2 "
                             "penalties equal over classes")
        return pre

    def solve(self, cache, g, state):
        return cache(g)

    def direction(self, batch, state, x, g):
        """``gram="batch"``: the batch's own Gram matrix (a bound of the batch objective);
        ``"running"`` (default): the mean of every batch's Gram so far, after one epoch the
        whole data's (kept in ``state.gram``, also across ``partial_fit`` chunks): a bound of
        the full objective rather than of each batch, without the noise of a batch's Gram in
        the directions it barely spans (digits, batches of 100: the batch Gram left the
        objective at 0.10-0.12 after 20 epochs, the running mean at 0.04)."""
        if self.opts["gram"] == "batch":
            return super().direction(batch, state, x, g)
        model = self.curvature_model(batch)
        G = loss_and_penalties(model)[0].bound_gram()
        k = state.gram_n + 1
        state.gram = G if state.gram is None else state.gram + (G - state.gram) / k
        state.gram_n = k
        if state.cache is None or (state.t - 1) % int(self.opts["refresh"]) == 0:
            state.cache = self.build(model, x, state.gram)
            state.n_bound += 1
        return self.solve(state.cache, g, state)


@register
class ShermanMorrisonSBM(StochasticSolver):
    """SBM with Sherman-Morrison inverse updates (slides Alg. 4).

    Per batch, M starts at the inverse of the penalty curvature (lambda I; the intercept
    centering term enters by one more update) and takes one Sherman-Morrison update per
    rank-one term r = sqrt(beta) l of Alg. 1 (sample by sample, label by label), so that at the
    end M = (lambda I + Sigma_B)^{-1} exactly; phi = M grad is kept alongside the slides'
    recurrence phi <- phi - (M r)(r^T phi) / (1 + r^T M r). Same step as "sbm", O(p^2) per
    term: limited to ``max_params`` parameters. Every penalty strength must be > 0.
    """

    info = MethodInfo("sbm-sm", peer=False, constraints="none", uses_bound=True,
                      needs=("majorizer",), stochastic=True,
                      description="slides Alg. 4: SBM with Sherman-Morrison rank-one inverse "
                                  "updates")
    options = {**StochasticSolver.options, "max_params": 2000}
    option_constraints = {**StochasticSolver.option_constraints, "max_params": [POSITIVE_INT]}

    def _start(self, batch, p):
        diag = np.zeros(p)
        extra = []
        for pen in batch.penalties:
            form = pen.curvature(p).diagonal_plus_rank_one()
            if form is None:
                raise TypeError(f"sbm-sm: unsupported penalty {type(pen).__name__} (its "
                                "curvature is not diagonal plus rank-one terms)")
            diag += form[0]
            extra.extend(math.sqrt(w) * u for w, u in form[1])
        if not (diag > 0).all():
            raise ValueError("sbm-sm starts from M = (lambda I)^{-1} and needs a positive L2 "
                             "strength on every parameter")
        M = np.asfortranarray(np.diag(1.0 / diag))
        if extra:
            M = sherman_morrison_inverse(M, np.array(extra))
        return M

    def direction(self, batch, state, x, g):
        p = x.shape[0]
        if p > int(self.opts["max_params"]):
            raise ValueError(f"sbm-sm costs O(p^2) per rank-one term; p = {p} exceeds "
                             f"max_params = {self.opts['max_params']} (use 'sbm' or 'lspfb')")
        M = self._start(batch, p)
        phi = M @ g
        for r in softmax_bound_terms(batch.loss, x, self.order):
            u = M @ r
            den = 1.0 + float(r @ u)
            phi -= u * (float(r @ phi) / den)
            M = dger(-1.0 / den, u, u, a=M, overwrite_a=1)
        state.M = M
        return phi


# ----------------------------------------------------------------------------- first order
class _FirstOrder(StochasticSolver):
    """A first-order rule on the batch gradients: torch.optim when available (``backend``
    "auto" or "torch"), else :mod:`zbound.solvers.first_order` ("numpy")."""

    options = {**StochasticSolver.options, "lr": 0.1, "backend": "auto"}

    option_constraints = {**StochasticSolver.option_constraints,
                          "backend": [StrOptions(Choices("auto", "numpy", "torch"))]}

    def check_options(self):
        if self.opts["backend"] == "torch" and not torch_available():
            raise ValueError("backend='torch' needs PyTorch installed")

    def backend(self) -> str:
        b = self.opts["backend"]
        if b == "auto":
            return "torch" if torch_available() else "numpy"
        return b

    def make_rule(self, x, lr):
        """The update rule (:mod:`zbound.solvers.first_order`) on the chosen backend."""
        raise NotImplementedError

    def init(self, model, x):
        state = super().init(model, x)
        state.opt = self.make_rule(state.x, self.step_size(1))
        return state

    def direction(self, batch, state, x, g):
        return g

    def apply_step(self, state, x, g):
        state.opt.lr = self.current_step(state)
        return state.opt.step(x, g)


@register
class StochasticSGD(_FirstOrder):
    """Plain mini-batch SGD (torch.optim.SGD or its NumPy twin)."""

    info = MethodInfo("sgd", peer=True, constraints="none", stochastic=True,
                      description="mini-batch SGD (torch.optim.SGD when torch is installed)")

    def make_rule(self, x, lr):
        return TorchRule("SGD", x, lr) if self.backend() == "torch" else SGD(lr)


@register
class StochasticMomentum(_FirstOrder):
    """Mini-batch SGD with heavy-ball (or Nesterov) momentum."""

    info = MethodInfo("momentum", peer=True, constraints="none", stochastic=True,
                      description="mini-batch SGD with momentum (torch.optim.SGD)")
    options = {**_FirstOrder.options, "momentum": 0.9, "nesterov": False}
    option_constraints = {**_FirstOrder.option_constraints,
                          "momentum": [Number(Real, 0, 1, closed="left")],
                          "nesterov": ["boolean"]}

    def make_rule(self, x, lr):
        kw = dict(momentum=float(self.opts["momentum"]), nesterov=bool(self.opts["nesterov"]))
        return TorchRule("SGD", x, lr, **kw) if self.backend() == "torch" else SGD(lr, **kw)


@register
class StochasticAdam(_FirstOrder):
    """Mini-batch Adam (torch.optim.Adam or its NumPy twin)."""

    info = MethodInfo("adam", peer=True, constraints="none", stochastic=True,
                      description="mini-batch Adam (torch.optim.Adam)")
    options = {**_FirstOrder.options, "lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8}
    option_constraints = {**_FirstOrder.option_constraints, "betas": [tuple, list],
                          "eps": [POSITIVE]}

    def make_rule(self, x, lr):
        kw = dict(betas=tuple(self.opts["betas"]), eps=float(self.opts["eps"]))
        return TorchRule("Adam", x, lr, **kw) if self.backend() == "torch" else Adam(lr, **kw)


@register
class StochasticAdaGrad(_FirstOrder):
    """Mini-batch AdaGrad (Duchi, Hazan & Singer 2011): G <- G + g^2 per coordinate,
    theta <- theta - lr g / (sqrt(G) + eps); the stochastic method of the CRF estimators (their
    ``solver="adagrad"`` and ``partial_fit``). Scale-free: a batch's mean and summed forms take
    the same steps. The squared-gradient sums are the result's ``info["sums"]``, so that a
    stream can go on from them."""

    info = MethodInfo("adagrad", peer=False, constraints="none", stochastic=True,
                      description="mini-batch AdaGrad (the CRF estimators' stochastic method)")
    options = {**_FirstOrder.options, "lr": 0.3, "eps": 1e-12, "backend": "numpy"}
    option_constraints = {**_FirstOrder.option_constraints, "eps": [NON_NEGATIVE]}

    def make_rule(self, x, lr):
        eps = float(self.opts["eps"])
        if self.backend() == "torch":
            return TorchRule("Adagrad", x, lr, eps=eps)
        return AdaGrad(lr, eps)

    def result_info(self, state):
        return {**super().result_info(state), "sums": getattr(state.opt, "G", None)}
