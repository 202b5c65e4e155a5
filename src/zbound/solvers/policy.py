"""Which solver runs: the library's one solver-selection policy.

:class:`SolverPolicy` turns a model's declared capabilities and shape (rows, parameters,
classes, sparsity, the units of the columns, constraints) into a configured run: the method,
its options, and, for boxes on L-BFGS-B, the method that finishes where it crawls.
``zbound.solvers.minimize`` without a method, every estimator's ``solver="auto"`` and the
benchmarks ask it, so they never disagree on what a user gets. The thresholds below come
from the benchmarks; the guide's "Choosing an estimator and a solver" page explains them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from zbound.constraints import LinearConstraints
from zbound.models.base import FixedCurvature, SoftmaxData, loss_and_penalties, supports
from zbound.solvers.base import METHODS, configure, solver_class
from zbound.solvers.quasi_newton import (
    _AUTO_MEMORY,
    AUTO_MIN_WORK,
    _blocks_newton_price,
    _has_hessian,
    gradient_work,
    has_single_form,
    precond_tail_switch,
    preconditioner_fits,
)

#: the method for everything the rules below do not single out (any model, any constraints)
DEFAULT_METHOD = "newton-bound"
#: multiclass softmax objectives take "lbfgs-precond" from this much work per gradient (rows x
#: parameters); two classes from ``AUTO_MIN_WORK`` when they evaluate in float32 first
AUTO_PRECOND_MIN_WORK = 100_000
#: ... while its curvature pairs, at their fewest, take at most this many bytes
AUTO_MAX_PAIR_BYTES = 64 * 2**20
#: two classes on dense X keep Newton steps from the start where the columns' root mean squares
#: span more than this factor (raw units: Newton is scale-invariant, L-BFGS crawls)
UNITS_SPREAD = 100.0
#: two classes on dense X with a Hessian of at most this much work (rows x parameters^2) take
#: Newton steps from the start: an iteration of either method is mostly fixed cost there
NEWTON_FIRST_WORK = 1_000_000
#: box-constrained softmax objectives of at least this many parameters on standardized dense
#: columns or sparse rows run SciPy's L-BFGS-B
BOX_LBFGS_MIN_PARAMS = 100
#: a constrained bound or Newton step solves a dense QP in every parameter: beyond this many it
#: costs gigabytes and minutes per iteration, and boxes go to L-BFGS-B
MAX_QP_PARAMS = 5000
#: curvature pairs of an estimator's "lbfgs-precond" fit (its peak memory near scikit-learn's)
ESTIMATOR_PAIRS = 40
#: precision="auto" evaluates in float32 from row blocks only where X in float32 spans at least
#: this many blocks (on a smaller X a block is nearly a copy)
AUTO_MIN_BLOCKS = 4
#: the stochastic bound method for three or more classes up to this many columns (its (d, d)
#: Gram factor), SPFB otherwise
STOCHASTIC_BOEHNING_MAX_D = 2048
PRECISIONS = ("auto", "double", "mixed", "mixed-lean")


def _mixed(info) -> bool:
    """A registered method that can evaluate in float32 first (its options take
    ``evaluation``)."""
    return "evaluation" in solver_class(info.name).options


@dataclass(frozen=True)
class Plan:
    """A configured run: ``method`` with ``options``; where ``then`` is set, ``method`` gets
    half of ``max_iter`` and ``then`` finishes from where it stopped at that limit."""

    method: str
    options: dict = field(default_factory=dict)
    then: str | None = None


@dataclass(frozen=True)
class SolverPolicy:
    """The solver-selection policy.

    Parameters
    ----------
    precision : {"auto", "double", "mixed", "mixed-lean"}
        How the L-BFGS methods evaluate the loss: "auto" in float32 from row blocks where that
        pays (large dense multiclass data), "double" in float64, "mixed" from a float32 copy of
        X, "mixed-lean" from row blocks; results and stopping tests are float64's either way.
    pairs : int or None
        Curvature pairs of "lbfgs-precond" (None: the solver's own rule).
    """

    precision: str = "auto"
    pairs: int | None = ESTIMATOR_PAIRS

    # -- which method ----------------------------------------------------------------------
    def method(self, model, constraints: LinearConstraints | None = None, *,
               evaluation: str = "auto", **options) -> str:
        """The method for ``model`` under ``constraints`` (see :func:`choose_method`)."""
        if not getattr(model, "smooth", True):      # an L1 / elastic-net penalty
            return "bound-cd" if METHODS["bound-cd"].applies_to(model) else "fista"
        if options:
            return DEFAULT_METHOD
        if constraints is not None:
            if not isinstance(constraints, LinearConstraints):
                return DEFAULT_METHOD           # which rejects them by name
            return _box_method(model, constraints)
        return _unconstrained_method(model, evaluation)

    def plan(self, model, constraints: LinearConstraints | None = None, solver: str = "auto",
             max_iter: int = 1000) -> Plan:
        """The run of ``solver`` ("auto": :meth:`method`) on ``model``; a ValueError for a
        solver that cannot take the constraints at this size, or a precision it cannot use."""
        p = int(model.n_params)
        if solver == "auto":
            method = self.method(model, constraints, evaluation="mixed-lean"
                                 if self.precision == "auto" else self.precision)
            if constraints is not None and p > MAX_QP_PARAMS and \
                    METHODS[method].constraints == "linear":
                method = "lbfgs"                # boxes without a dense QP in every parameter
            then = DEFAULT_METHOD if (method == "lbfgs" and constraints is not None
                                      and p <= MAX_QP_PARAMS and max_iter >= 2) else None
            return Plan(method, self.options(model, method), then)
        if constraints is not None and p > MAX_QP_PARAMS and \
                METHODS[solver].constraints == "linear":
            raise ValueError(
                f"bounds with solver {solver!r} solve a dense QP in all {p} parameters every "
                f"iteration (limit {MAX_QP_PARAMS}); use solver='lbfgs', which handles boxes "
                "without forming the matrix")
        if not _mixed(METHODS[solver]) and self.precision not in ("auto", "double"):
            mixed = ", ".join(sorted(name for name, info in METHODS.items() if _mixed(info)))
            raise ValueError(f"precision={self.precision!r} needs an L-BFGS solver ({mixed}) "
                             f"or 'auto', got {solver!r}")
        return Plan(solver, self.options(model, solver))

    def options(self, model, method: str) -> dict:
        """The options of ``method`` on ``model``: the evaluation precision of an L-BFGS method
        that can evaluate in float32, ``pairs`` curvature pairs for "lbfgs-precond" and its
        handover to Newton steps in a crawling tail."""
        options = {}
        if _mixed(METHODS[method]):
            if self.precision != "auto":
                options["evaluation"] = self.precision
            else:       # two classes ("lbfgs-newton") stay in float64, as their Newton steps
                binary = getattr(getattr(model, "loss", model), "k", 0) == 1
                options["evaluation"] = "double" if method == "lbfgs-newton" and binary else \
                    _auto_evaluation(model)
        if method == "lbfgs-precond":
            if self.pairs is not None:
                options["memory"] = self.pairs
            tail = precond_tail_switch(model)
            if tail is not None:
                options["newton_after"] = tail
        return options

    # -- running it ------------------------------------------------------------------------
    def solve(self, model, x0, *, solver: str = "auto",
              constraints: LinearConstraints | None = None, tol: float = 1e-4,
              max_iter: int = 1000, order: str = "descending", callback=None):
        """Minimize ``model`` from ``x0`` by :meth:`plan`; one :class:`Result` (the finishing
        method's run chained to the first's, ``info["started_by"]`` naming the first)."""
        plan = self.plan(model, constraints, solver, int(max_iter))
        budget = int(max_iter) // 2 if plan.then else int(max_iter)
        common = dict(constraints=constraints, tol=float(tol), order=order, callback=callback)
        result = configure(plan.method, max_iter=budget, **common, **plan.options).run(model, x0)
        if plan.then and not result.converged and result.status.name == "MAX_ITER":
            rest = configure(plan.then, max_iter=int(max_iter) - result.nit, **common)
            result = _chained(result, rest.run(model, result.x))
        return result

    # -- the other families ------------------------------------------------------------------
    @staticmethod
    def stochastic(n_classes: int, n_features: int) -> str:
        """The stochastic bound method of ``BoundSGDClassifier(solver="auto")``:
        "sbm-boehning" for three or more classes up to ``STOCHASTIC_BOEHNING_MAX_D`` columns
        (one (d, d) Gram factor per update, where SPFB's Alg. 1 curvature costs
        n (n - 1) / 2 Gram products and a (p, p) factor), "spfb" for two classes (the
        Jaakkola-Jordan curvature is one weighted Gram and tight where the model is
        confident) and for wider data."""
        if n_classes > 2 and n_features + 1 <= STOCHASTIC_BOEHNING_MAX_D:
            return "sbm-boehning"
        return "spfb"

    @staticmethod
    def mixture(expert: str) -> str:
        """The training method of ``MixtureOfExperts(solver="auto")``: "lbfgs" on the marginal
        likelihood for logistic experts (an EM iteration is k + 1 weighted logistic fits), "em"
        for linear ones (closed-form M-steps)."""
        return "lbfgs" if expert == "logistic" else "em"

    @staticmethod
    def crf_options(solver: str, *, cg_maxiter: int, evaluation: str = "double",
                    learning_rate: float = 0.3, batch_size: int = 1, random_state=None
                    ) -> dict:
        """The options the CRF estimators (``ChainCRF``, ``GraphCRF``) run ``solver`` with:
        Alg. 2's step (and SQUAREM's) by ``cg_maxiter`` CG products (the bound is matrix-free:
        an exact solve would cost thousands of them, and any partial one keeps the iterates
        monotone); the curvature pairs of "lbfgs-bound" in float32 (half their memory on a
        corpus of millions of parameters, the same iterations) and its ``evaluation``
        (float64, or float32 first); for "adagrad" (:data:`CRF_STREAM`) the step size, the
        mini-batch size and the epochs' shuffling (``random_state`` as scikit-learn reads it:
        None shuffles from fresh entropy)."""
        if solver in ("bound", "squarem"):
            return dict(inner="cg", cg_maxiter=cg_maxiter, cg_rtol=1e-3)
        if solver == "newton-bound":
            return dict(inner="cg")
        if solver == "lbfgs-bound":
            return dict(precision="single", evaluation=evaluation)
        if solver == CRF_STREAM:
            rng = random_state if isinstance(random_state, np.random.Generator) else \
                np.random.default_rng(random_state)
            return dict(lr=float(learning_rate), batch_size=int(batch_size), random_state=rng)
        return {}

    @staticmethod
    def crf_evaluation(model, solver: str, precision: str) -> str:
        """How ``ChainCRF`` evaluates its objective ``model`` for ``precision``: float32 first
        ("mixed-lean", converting each chunk) from ``AUTO_MIN_WORK`` sequences x parameters
        under "auto" (where the float32 products pay), else as asked; float64 for solvers
        other than "lbfgs-bound", which refuse a float32 precision."""
        if solver != "lbfgs-bound":
            if precision not in ("auto", "double"):
                raise ValueError(f"precision={precision!r} needs solver='lbfgs-bound', "
                                 f"got solver={solver!r}")
            return "double"
        if precision != "auto":
            return precision
        return "mixed-lean" if gradient_work(model) >= AUTO_MIN_WORK else "double"

    @staticmethod
    def mstep(method: str, *, tol: float, max_iter: int, options: dict | None = None):
        """The configured solver of one sub-problem of a mixture's M-step (the gate, or one
        expert), run at every EM iteration: "newton-bound" keeps its Newton-direction state
        from one run to the next (``warm_direction``; the sub-problem changes only through the
        responsibilities) and its preconditioner on the Gram matrix ("gram") unless
        ``options`` say otherwise."""
        opts = dict(options or {})
        if method == "newton-bound":
            opts = {"precond": "gram", "warm_direction": True, **opts}
        return configure(method, tol=tol, max_iter=max_iter, **opts)

    @staticmethod
    def latent() -> str:
        """The method of ``LatentLogisticRegression(solver="auto")``: "lbfgs-bound", L-BFGS
        directions with the bound as the monotone safeguard."""
        return "lbfgs-bound"

    @staticmethod
    def latent_plan(solver: str, tol: float) -> tuple[str, dict]:
        """``LatentLogisticRegression``'s method ("auto": :meth:`latent`) and its options: the
        bound methods (each step a majorizer's minimizer, monotone) also stop once an
        iteration lowers the objective by at most 1e-3 ``tol`` of it, where on the flat
        valleys of a latent likelihood the gradient test alone would crawl."""
        method = SolverPolicy.latent() if solver == "auto" else solver
        opts = {"ftol": 1e-3 * float(tol)} if method in ("bound", "squarem", "newton-bound") \
            else {}
        return method, opts


#: the stochastic method of the CRF estimators (their ``solver="adagrad"`` and ``partial_fit``)
CRF_STREAM = "adagrad"


def chain_crf_method(info) -> bool:
    """A solver ``ChainCRF`` takes: a registered batch method that asks nothing of the model
    beyond the protocol, or :data:`CRF_STREAM`."""
    return info.name == CRF_STREAM or (not info.stochastic and not info.step_size
                                       and info.requires is None)


def logistic_method(info) -> bool:
    """A solver ``BoundLogisticRegression`` takes: a registered batch method that runs on a
    softmax objective (the generic ones, and those that need a softmax loss's rows)."""
    return not (info.stochastic or info.step_size) and info.requires in (None, SoftmaxData)


def graph_crf_method(info) -> bool:
    """A solver ``GraphCRF`` takes: a batch method that needs values, gradients and
    majorizers only (no Hessian of a junction-tree loss), or :data:`CRF_STREAM`."""
    return info.name == CRF_STREAM or (
        not info.stochastic and not info.step_size and info.requires is None
        and set(info.needs) <= {"value", "value_and_grad", "majorizer"})


def choose_method(model, constraints: LinearConstraints | None = None, *,
                  evaluation: str = "auto", **options) -> str:
    """The method :func:`zbound.solvers.minimize` runs when none is named.

    - "lbfgs-precond" (L-BFGS whose initial inverse Hessian is the fixed, shrunk Boehning
      bound curvature) for unconstrained softmax / logistic objectives whose preconditioner is
      cheap (d small against t): multiclass from ``AUTO_PRECOND_MIN_WORK`` rows x parameters,
      two classes from ``AUTO_MIN_WORK`` where float32 evaluation applies (``evaluation``
      "auto" or "mixed"; they finish with Newton steps);
    - "lbfgs-newton" (L-BFGS, then Newton steps once its evaluations cost about four Newton
      steps) for two classes in float64 on dense X (from ``AUTO_MIN_WORK`` only with columns in
      comparable units, ``UNITS_SPREAD``), and for several classes on dense X with d large
      against t;
    - under box constraints alone, SciPy's L-BFGS-B ("lbfgs") for softmax objectives of at
      least ``BOX_LBFGS_MIN_PARAMS`` parameters on standardized dense columns or sparse rows;
    - ``DEFAULT_METHOD`` ("newton-bound") for everything else: other constraints, method
      options given, two classes on sparse X or large and in raw units, small problems (a
      Hessian of at most ``NEWTON_FIRST_WORK``), d large against t on sparse X, other models.
    """
    return SolverPolicy().method(model, constraints, evaluation=evaluation, **options)


def _unconstrained_method(model, evaluation: str) -> str:
    loss, _ = loss_and_penalties(model)
    k = getattr(loss, "k", 0)
    if k < 1 or not supports(loss, FixedCurvature):
        return DEFAULT_METHOD
    if k == 1 and (evaluation not in ("auto", "mixed") or not has_single_form(model)):
        return _binary_float64(model, loss)
    p = int(model.n_params)
    if gradient_work(model) < (AUTO_MIN_WORK if k == 1 else AUTO_PRECOND_MIN_WORK):
        return _binary_float64(model, loss) if k == 1 else DEFAULT_METHOD
    if 2 * _AUTO_MEMORY[0] * p * 8 > AUTO_MAX_PAIR_BYTES:     # at its fewest pairs
        return DEFAULT_METHOD
    if preconditioner_fits(model):
        return "lbfgs-precond"
    # d large against the rows, dense: L-BFGS, then truncated Newton once its iterations cost
    # about four Newton steps (Newton alone pays a Woodbury or block preconditioner per step)
    return "lbfgs-newton" if _blocks_newton_price(model) is not None else DEFAULT_METHOD


def _binary_float64(model, loss) -> str:
    """Two classes in float64: Newton from the start for a Hessian of at most
    ``NEWTON_FIRST_WORK``; else "lbfgs-newton", from ``AUTO_MIN_WORK`` only on columns in
    comparable units or with fewer rows than columns. Sparse X (truncated Newton with PCG, no
    (d, d) Hessian) and row blocks on Dask workers keep Newton."""
    from zbound.utils.linalg import column_scale

    X = getattr(loss, "X", None)
    if not (isinstance(X, np.ndarray) and _has_hessian(model)):
        return DEFAULT_METHOD
    if X.shape[0] * int(model.n_params) ** 2 <= NEWTON_FIRST_WORK:
        return DEFAULT_METHOD
    if gradient_work(model) < AUTO_MIN_WORK or X.shape[0] < X.shape[1]:
        # fewer rows than columns: a Newton step is a truncated CG solve behind a Woodbury
        # preconditioner, in any units; L-BFGS first
        return "lbfgs-newton"
    scale = column_scale(X)                 # one pass over X; 1 for an all-zero column
    if scale.size and float(scale.max()) > UNITS_SPREAD * float(scale.min()):
        return DEFAULT_METHOD
    return "lbfgs-newton"


def _box_method(model, constraints: LinearConstraints) -> str:
    """SciPy's L-BFGS-B for a softmax objective under boxes alone, of at least
    ``BOX_LBFGS_MIN_PARAMS`` parameters, on sparse rows or dense columns near standardized;
    else ``DEFAULT_METHOD`` (a Hessian and an exact box QP per step, scale-invariant)."""
    from zbound.utils.validation import scaling_hint

    loss, _ = loss_and_penalties(model)
    X = getattr(loss, "X", None)
    if constraints.has_general or int(model.n_params) < BOX_LBFGS_MIN_PARAMS or \
            not (isinstance(X, np.ndarray) or sp.issparse(X)) or \
            not supports(loss, FixedCurvature) or scaling_hint(X):
        return DEFAULT_METHOD
    return "lbfgs"


def _auto_evaluation(model) -> str:
    """``precision="auto"`` for an L-BFGS fit: float32 from row blocks ("mixed-lean": no copy of
    X) from ``AUTO_MIN_WORK`` rows x parameters, for a model with a float32 form, where X in
    float32 spans at least ``AUTO_MIN_BLOCKS`` blocks; else "double" (sparse X too: its
    products are index-bound)."""
    from zbound.models.loss import single_block_bytes

    loss = getattr(model, "loss", model)
    if not has_single_form(model) or sp.issparse(getattr(loss, "X", None)):
        return "double"
    if gradient_work(model) < AUTO_MIN_WORK:
        return "double"
    x32 = 4 * getattr(loss, "n_samples", 0) * int(getattr(loss, "d", 0))
    return "mixed-lean" if x32 >= AUTO_MIN_BLOCKS * single_block_bytes(loss) else "double"


def _chained(first, second):
    """``second`` (a run started where ``first`` stopped) as one result: the iterations,
    evaluations and trace of both (the second's times after the first's), the first's method
    and iterations in ``info`` (``started_by``, ``first_iterations``)."""
    from zbound.solvers.result import Trace

    a, b = first.trace, second.trace
    trace = Trace(objective=np.concatenate([a.objective, b.objective[1:]]),
                  seconds=np.concatenate([a.seconds, a.seconds[-1] + b.seconds[1:]]),
                  grad_norm=np.concatenate([a.grad_norm, b.grad_norm[1:]]),
                  n_evals=np.concatenate([a.n_evals, a.n_evals[-1] + b.n_evals[1:]]))
    counts = dict(first.counts or {})
    for key, value in (second.counts or {}).items():
        counts[key] = counts.get(key, 0) + value
    return dataclasses.replace(
        second, nit=first.nit + second.nit, n_evals=first.n_evals + second.n_evals,
        trace=trace, counts=counts,
        info={**second.info, "started_by": first.method, "first_iterations": first.nit})


__all__ = ["SolverPolicy", "Plan", "choose_method", "DEFAULT_METHOD", "PRECISIONS",
           "AUTO_PRECOND_MIN_WORK", "AUTO_MAX_PAIR_BYTES", "UNITS_SPREAD", "NEWTON_FIRST_WORK",
           "BOX_LBFGS_MIN_PARAMS", "MAX_QP_PARAMS", "ESTIMATOR_PAIRS", "AUTO_MIN_BLOCKS",
           "STOCHASTIC_BOEHNING_MAX_D", "CRF_STREAM", "chain_crf_method", "graph_crf_method",
           "logistic_method"]
