"""Solvers as configured objects with explicit state, a registry of methods, and the counted model.

A solver is configured once (stopping rules and method options), then either ``run(model, x0)``
or stepped: ``state = solver.init(model, x)`` and ``solver.update(model, state)`` one iteration
at a time (JAXopt's shape; stochastic solvers will take a batch in ``update``). ``run`` owns the
skeleton every method shares: stopping tests, the trace, the callback and the :class:`Result`.
A method implements only ``init``, ``update`` and, where the stationarity measure needs its own
work (a constrained step, a majorizer step), ``stationarity``.

Every method is registered once with its capabilities (:class:`MethodInfo`: what it needs of the
model, which constraints it takes, whether it uses the bound, is stochastic, is a peer).
Evaluations are counted by :class:`CountedModel`, a wrapper around the model, never by models.

Adding a method::

    @register
    class Halving(Solver):
        info = MethodInfo("halving", peer=True, constraints="none",
                          needs=("value_and_grad",), description="gradient steps of 1/L")
        def init(self, model, x):
            f, g = model.value_and_grad(x)
            return State(x, f, g)
        def update(self, model, state):
            x = state.x - 0.1 * state.g
            f, g = model.value_and_grad(x)
            self.accept(model, state, x, f, g)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sklearn.utils._param_validation import validate_parameter_constraints

from zbound.constraints import LinearConstraints
from zbound.models.base import supports
from zbound.solvers.result import Recorder, Result, Status

INNER_SOLVERS = ("auto", "cholesky", "cg")
# Above this many parameters "auto" switches from dense Cholesky to matrix-free preconditioned CG
# (a softmax curvature product costs O(t n d + t n^2)).
AUTO_CG_THRESHOLD = 300
# The same switch for an exact bound step (plain Alg. 2, SQUAREM): the step is solved to 1e-8 and
# the pair-block assembly is GEMM-bound, so dense Cholesky stays faster than block-Jacobi PCG
# further up (digits, p = 620, takes it).
AUTO_CG_THRESHOLD_BOUND = 1000
#: The stationarity test does not stop a run whose last iteration lowered the objective by
#: more than this fraction of it (see :meth:`Solver.stop_status`).
STILL_MOVING_RTOL = 1e-2


def little_left(decrease: float, f: float) -> bool:
    """Whether a model's predicted decrease of the objective from here is at most
    ``STILL_MOVING_RTOL`` of max(1, abs(f)): the condition under which a stopping test
    relative to abs(f) is trusted (far from the optimum a quadratic penalty makes f grow
    faster than the gradient, and the relative test alone passes there)."""
    return decrease <= STILL_MOVING_RTOL * max(1.0, abs(f))


@dataclass(frozen=True)
class MethodInfo:
    """Registry entry of a method.

    name : the name ``minimize(method=...)`` takes
    peer : True for methods that are not the library's own idea (baselines)
    constraints : "linear" (lb <= x <= ub and A x <= b), "box" (lb <= x <= ub) or "none"
    uses_bound : whether it builds the Alg. 1 majorizer
    description : one line
    needs : model methods it calls
    stochastic : whether ``update`` takes a batch of rows
    requires : None, or a capability protocol (e.g. ``LatentLikelihood`` of
    :mod:`zbound.models.base` for EM) that the model or its loss must support; see
    :meth:`applies_to`
    step_size : True for a method whose step size (option ``lr``) must be chosen for the
    problem (it converges only for small enough steps): the papers' fixed-step baselines,
    which estimators do not offer as a ``solver``
    proximal : True for a method that minimizes objectives with a non-smooth separable
    penalty (L1, elastic net) through its proximal map; the others refuse them
    separable : True for a method that needs every penalty to be separable (a per-coordinate
    term: ``penalty.separable``), as coordinate descent does
    """

    name: str
    peer: bool
    constraints: str
    uses_bound: bool = False
    description: str = ""
    needs: tuple[str, ...] = ("value_and_grad",)
    stochastic: bool = False
    requires: type | None = None
    step_size: bool = False
    proximal: bool = False
    separable: bool = False

    def __post_init__(self):
        if self.constraints not in ("linear", "box", "none"):
            raise ValueError(f"constraints must be 'linear', 'box' or 'none', got "
                             f"{self.constraints!r}")

    @property
    def supports_constraints(self) -> bool:
        return self.constraints != "none"

    def meets_requirement(self, model) -> bool:
        """Whether the model, or its loss, has the ``requires`` capability (True without one)."""
        return self.requires is None or supports(model, self.requires) or \
            supports(getattr(model, "loss", None), self.requires)

    def applies_to(self, model) -> bool:
        """Whether the method can run on ``model``: the methods in ``needs`` and, if any, the
        ``requires`` capability (of the model or of its loss)."""
        return all(callable(getattr(model, need, None)) for need in self.needs) and \
            self.meets_requirement(model) and self.penalties_fit(model)

    def penalties_fit(self, model) -> bool:
        """Whether the model's penalties are what the method takes (all separable where it
        needs that)."""
        return not self.separable or all(getattr(p, "separable", False)
                                         for p in getattr(model, "penalties", ()))


_REGISTRY: dict[str, type[Solver]] = {}
#: packages beyond ``zbound.solvers`` whose modules register methods (the mixtures' training
#: methods). The registry imports them the first time it is read, so what it holds never
#: depends on what a caller happened to import first (a plugin list, as entry points are).
PROVIDERS = ("zbound.moe",)
_providers_loaded = False


def _registry() -> dict[str, type[Solver]]:
    """The registry, with every provider's methods in it."""
    global _providers_loaded
    if not _providers_loaded:
        _providers_loaded = True           # set first: the providers' imports read it
        import importlib

        for name in PROVIDERS:
            importlib.import_module(name)
    return _REGISTRY


def register(cls: type[Solver]) -> type[Solver]:
    """Class decorator: make ``cls`` available to ``minimize(method=cls.info.name)``."""
    info = getattr(cls, "info", None)
    if not isinstance(info, MethodInfo):
        raise TypeError(f"{cls.__name__} needs a class attribute info = MethodInfo(...)")
    other = _REGISTRY.get(info.name)
    if other is not None and other is not cls:
        raise ValueError(f"a method named {info.name!r} is already registered "
                         f"({other.__module__}.{other.__qualname__})")
    _REGISTRY[info.name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a registered method (tests that register temporary methods)."""
    _REGISTRY.pop(name, None)


def solver_class(name: str) -> type[Solver]:
    registry = _registry()
    try:
        return registry[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown method {name!r}; choose one of {sorted(registry)}") from None


def configure(method, **settings) -> Solver:
    """A configured solver from a registered name, a :class:`Solver` subclass or a configured
    solver (``settings`` then replace its own)."""
    if isinstance(method, Solver):
        return method.replace(**settings) if settings else method
    if isinstance(method, type) and issubclass(method, Solver):
        return method(**settings)
    if isinstance(method, str):
        return solver_class(method)(**settings)
    raise ValueError(f"unknown method {method!r}; choose one of {sorted(_registry())} or "
                     "pass a zbound.solvers.Solver")


def proximal_methods() -> list[str]:
    """The registered methods that take non-smooth separable penalties."""
    return [k for k, v in _registry().items() if v.info.proximal]


class MethodNames(Set):
    """The names of the registered methods whose :class:`MethodInfo` satisfies ``keep``, plus
    ``also`` (names that are not methods, e.g. "auto"), read from the registry at every look-up:
    a parameter's choices stated by capability (``StrOptions(MethodNames(...))``) instead of
    a table of names."""

    def __init__(self, keep, also: tuple[str, ...] = ()):
        self.keep = keep
        self.also = tuple(also)

    @classmethod
    def _from_iterable(cls, it):          # what set operations with it return
        return frozenset(it)

    def _names(self) -> list[str]:
        return [*self.also, *sorted(k for k, v in _registry().items() if self.keep(v.info))]

    def __contains__(self, name) -> bool:
        if not isinstance(name, str):
            return False
        if name in self.also:
            return True
        cls = _registry().get(name)
        return cls is not None and bool(self.keep(cls.info))

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self):
        return f"MethodNames({self._names()})"


class _Methods(Mapping):
    """Read-only view name -> :class:`MethodInfo` of the registered methods."""

    def __getitem__(self, name):
        return _registry()[name].info

    def __iter__(self):
        return iter(_registry())

    def __len__(self):
        return len(_registry())

    def __repr__(self):
        return f"METHODS({sorted(_registry())})"


METHODS: Mapping[str, MethodInfo] = _Methods()


class CountedModel:
    """The model as a solver sees it: every call counted by kind ("bound" = majorizer).

    The protocol's methods are counted here, and only those the model has (a model without
    ``hessian`` has none here either); every other attribute is the model's own (its
    capabilities, e.g. ``lowrank_majorizer`` (counted as a bound), ``value_grad_dense_hessian``
    (counted as ``value_grad_hessian``), ``single_precision``, ``loss``, ``penalties``), so a
    solver asks the counted model what it can do exactly as it would ask the model, and never
    unwraps it. Work a solver does in its own algebra instead of through the model (an E-step
    from the model's parts, an objective value in a reduced space) it reports with
    :meth:`count`.
    """

    __slots__ = ("model", "n_params", "n_value", "n_value_and_grad", "n_value_grad_hessian",
                 "n_hessian", "n_bound")

    #: counted methods: the counter each call adds to
    COUNTED = {"value": "n_value", "value_and_grad": "n_value_and_grad",
               "value_grad_hessian": "n_value_grad_hessian", "hessian": "n_hessian",
               "majorizer": "n_bound", "lowrank_majorizer": "n_bound",
               "value_grad_dense_hessian": "n_value_grad_hessian"}

    def __init__(self, model):
        self.model = model
        self.n_params = model.n_params
        self.n_value = self.n_value_and_grad = self.n_value_grad_hessian = 0
        self.n_hessian = self.n_bound = 0

    def value(self, x):
        self.n_value += 1
        return self.model.value(x)

    def value_and_grad(self, x):
        self.n_value_and_grad += 1
        return self.model.value_and_grad(x)

    def majorizer(self, x, order="descending"):
        self.n_bound += 1
        return self.model.majorizer(x, order)

    def count(self, kind: str, n: int = 1) -> None:
        """Record ``n`` evaluations of ``kind`` ("value", "value_and_grad",
        "value_grad_hessian", "hessian" or "bound") made without the model's methods."""
        counter = {"value": "n_value", "value_and_grad": "n_value_and_grad",
                   "value_grad_hessian": "n_value_grad_hessian", "hessian": "n_hessian",
                   "bound": "n_bound"}.get(kind)
        if counter is None:
            raise ValueError(f"unknown evaluation kind {kind!r}")
        setattr(self, counter, getattr(self, counter) + int(n))

    @property
    def model_name(self) -> str:
        """The class name of the model counted (for messages)."""
        return type(self.model).__name__

    def __getattr__(self, name):
        # only reached for names that are not the counter's own
        if name.startswith("__") or name == "model":
            raise AttributeError(name)
        attr = getattr(self.model, name)
        counter = self.COUNTED.get(name)
        if counter is not None and callable(attr):
            def counted(*args, **kwargs):
                setattr(self, counter, getattr(self, counter) + 1)
                return attr(*args, **kwargs)
            return counted
        return attr

    @property
    def n_evals(self) -> int:
        return (self.n_value + self.n_value_and_grad + self.n_value_grad_hessian
                + self.n_hessian + self.n_bound)

    @property
    def counts(self) -> dict[str, int]:
        return {"value": self.n_value, "value_and_grad": self.n_value_and_grad,
                "value_grad_hessian": self.n_value_grad_hessian, "hessian": self.n_hessian,
                "bound": self.n_bound}


def model_name(model) -> str:
    """The class name of ``model``, counted or not (for messages)."""
    return model.model_name if isinstance(model, CountedModel) else type(model).__name__


@dataclass
class State:
    """Where a solver stands: the iterate, its objective and gradient (None where a method did
    not compute it), the previous objective, iterations, status, and whether the last update
    left the iterate where it was (``zero_step``: the run then stops, converged).

    A method with data of its own subclasses it as a dataclass with typed fields (JAXopt's
    per-solver state)::

        @dataclass
        class HalvingState(State):
            step: float = 1.0
    """

    x: np.ndarray
    f: float
    g: np.ndarray | None = None
    f_prev: float | None = None
    nit: int = 0
    status: Status = Status.RUNNING
    message: str | None = None
    zero_step: bool = False
    recorder: Recorder | None = None


_REAL = (int, float, np.integer, np.floating)
_INTEGER = (int, np.integer)


def _check_number(name, value):
    if isinstance(value, bool) or not isinstance(value, _REAL):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


class Solver:
    """Base class: configuration, the ``run`` skeleton and its helpers.

    Parameters
    ----------
    tol : stop when the stationarity measure (gradient inf-norm when unconstrained; the
        inf-norm of C d for a constrained step d) is <= tol * max(1, abs(f)); every method
        takes these parameters
    ftol : stop when one iteration decreased the objective by <= ftol * max(1, abs(f)) (0: off)
    max_iter : iteration limit
    target : stop as soon as the objective is <= target
    callback : callback(x, f) after every iteration; a truthy return stops the solver
    constraints : :class:`zbound.constraints.LinearConstraints` or None
    order : configuration ordering for Alg. 1 (``model.majorizer(order=...)``)
    inner : "auto" (dense Cholesky up to 300 parameters, then CG; exact bound steps up to
        1000), "cholesky" or "cg"
    options : the method's own options (:attr:`options` lists them with their defaults)
    """

    info: ClassVar[MethodInfo]
    options: ClassVar[dict[str, Any]] = {}
    #: scikit-learn parameter constraints of the options (a subclass extends its parent's);
    #: the options a caller gives are checked against them when the solver is configured
    option_constraints: ClassVar[dict[str, list]] = {}

    @property
    def _needs(self) -> tuple[str, ...]:
        return ("value_and_grad", *self.info.needs)

    def __init__(self, *, tol: float = 1e-8, ftol: float = 1e-13, max_iter: int = 1000,
                 target: float | None = None, callback=None,
                 constraints: LinearConstraints | None = None, order: str = "descending",
                 inner: str = "auto", **options):
        if type(tol) is not float:
            tol = _check_number("tol", tol)
        if not (tol >= 0 and math.isfinite(tol)):
            raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
        if type(ftol) is not float:
            ftol = _check_number("ftol", ftol)
        if not (ftol >= 0 and math.isfinite(ftol)):
            raise ValueError(f"ftol must be a finite number >= 0, got {ftol!r}")
        if type(max_iter) is not int and (isinstance(max_iter, bool)
                                          or not isinstance(max_iter, _INTEGER)):
            raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}")
        if max_iter < 0:
            raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}")
        if target is not None:
            if type(target) is not float and (isinstance(target, bool)
                                              or not isinstance(target, _REAL)):
                raise ValueError(f"target must be a number or None, got {target!r}")
            target = float(target)
            if math.isnan(target):
                raise ValueError(f"target must be a number or None, got {target!r}")
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable: callback(x, f) -> stop?")
        if type(order) is not str:
            raise TypeError(f"order must be a string naming a configuration ordering, "
                            f"got {order!r}")
        if inner not in INNER_SOLVERS:
            raise ValueError(f"unknown inner solver {inner!r}; use one of {INNER_SOLVERS}")
        if constraints is not None:
            if not isinstance(constraints, LinearConstraints):
                raise TypeError("constraints must be a zbound.constraints.LinearConstraints, "
                                f"got {type(constraints).__name__}")
            kind = self.info.constraints
            if kind == "none":
                ok = sorted(k for k, v in METHODS.items() if v.supports_constraints)
                raise ValueError(f"method {self.info.name!r} does not support constraints; "
                                 f"use one of {ok}")
            if kind == "box" and constraints.has_general:
                raise ValueError(f"method {self.info.name!r} supports only box constraints "
                                 "(lb, ub), not A x <= b; use 'newton-bound', 'bound' or "
                                 "'squarem'")
        if options:
            unknown = [k for k in options if k not in self.options]
            if unknown:
                known = sorted(self.options) or "none"
                raise TypeError(f"unexpected options {sorted(unknown)} for method "
                                f"{self.info.name!r} (its options: {known})")
            self.opts = {**self.options, **options}
        else:
            self.opts = self.options
        self.tol, self.ftol, self.max_iter, self.target = tol, ftol, int(max_iter), target
        self.callback, self.constraints, self.order, self.inner = (callback, constraints,
                                                                   order, inner)
        self._options = options
        if options:
            validate_parameter_constraints(self.option_constraints, options,
                                           caller_name=f"method {self.info.name!r}")
        self.check_options()

    def check_options(self) -> None:
        """Checks that relate options (each option alone is checked by
        :attr:`option_constraints`); methods that have such relations override this."""

    @property
    def config(self) -> dict[str, Any]:
        """The settings this solver was configured with."""
        return dict(tol=self.tol, ftol=self.ftol, max_iter=self.max_iter, target=self.target,
                    callback=self.callback, constraints=self.constraints, order=self.order,
                    inner=self.inner, **self._options)

    def replace(self, **changes) -> Solver:
        """A copy with some settings changed."""
        return type(self)(**{**self.config, **changes})

    def __repr__(self):
        shown = ", ".join(f"{k}={v!r}" for k, v in self.config.items()
                          if k != "callback" and v is not None)
        return f"{type(self).__name__}({shown})"

    # -- what a method implements ---------------------------------------------------------------
    def init(self, model: CountedModel, x: np.ndarray) -> State:
        raise NotImplementedError

    def update(self, model: CountedModel, state: State) -> None:
        """One iteration: move ``state`` (through :meth:`accept`) or set a failure status."""
        raise NotImplementedError

    def start(self, model: CountedModel, x: np.ndarray) -> State:
        """:meth:`run`'s first state (default: :meth:`init`)."""
        return self.init(model, x)

    def iterate(self, model: CountedModel, state: State) -> None:
        """One iteration of :meth:`run` (default: :meth:`update`; the stochastic methods run
        an epoch of mini-batch updates here)."""
        self.update(model, state)

    def stationarity(self, model: CountedModel, state: State) -> float:
        """The stationarity measure at ``state.x`` (default: ||g||_inf)."""
        return float(np.max(np.abs(state.g)))

    def limit_reached(self, model: CountedModel, state: State) -> bool:
        return state.nit >= self.max_iter

    def result_info(self, state: State) -> dict:
        return {}

    # -- the shared skeleton --------------------------------------------------------------------
    def prepare(self, model, x0) -> tuple[CountedModel, np.ndarray]:
        """Validate the model and the start point; wrap the model to count evaluations."""
        p = getattr(model, "n_params", None)
        if p is None:
            raise TypeError(f"model {type(model).__name__} has no n_params; it does not follow "
                            "the zbound Model protocol (zbound.models.base.Model)")
        for need in self._needs:
            if not callable(getattr(model, need, None)):
                raise TypeError(f"method {self.info.name!r} needs model.{need}(), which "
                                f"{type(model).__name__} does not have")
        if not getattr(model, "smooth", True) and not self.info.proximal:
            raise ValueError(f"method {self.info.name!r} needs a differentiable objective; "
                             "an L1 or elastic-net penalty needs a proximal method "
                             f"({', '.join(sorted(proximal_methods()))})")
        if not self.info.penalties_fit(model):
            odd = [type(p).__name__ for p in model.penalties if not getattr(p, "separable",
                                                                                False)]
            raise TypeError(f"method {self.info.name!r} takes separable penalties only (L2, "
                            f"L1, elastic net), not {odd}")
        if not self.info.meets_requirement(model):
            req = self.info.requires
            raise TypeError(f"method {self.info.name!r} needs a model with the "
                            f"{req.__name__} capability ({req.__module__}), which "
                            f"{type(model).__name__} does not have")
        try:
            x = np.array(x0, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"x0 must be a real array of shape ({p},): {exc}") from None
        if x.ndim != 1 or x.shape[0] != p:
            raise ValueError(f"x0 must have shape ({p},) for this model, got {x.shape}")
        if not np.isfinite(x).all():
            raise ValueError("x0 contains non-finite values (nan or inf)")
        cons = self.constraints
        if cons is not None:
            cons.check_dimension(p)
            if not cons.is_feasible(x):
                raise ValueError(
                    f"x0 is infeasible (constraint violation {cons.violation(x):.3g}); "
                    "start inside the constraints, e.g. x0 = constraints.project(x0)")
        if not isinstance(model, CountedModel):
            model = CountedModel(model)
        return model, x

    def resolve_inner(self, p: int, bound: bool = False) -> str:
        """"auto" -> "cholesky" or "cg" by the number of parameters."""
        if self.inner == "auto":
            limit = AUTO_CG_THRESHOLD_BOUND if bound else AUTO_CG_THRESHOLD
            return "cholesky" if p <= limit else "cg"
        return self.inner

    def stop_status(self, state: State, stat: float) -> Status | None:
        """Target, tolerance and objective-change tests at ``state`` with measure ``stat``."""
        f = state.f
        scale = max(1.0, abs(f))
        if self.target is not None and f <= self.target:
            return Status.TARGET
        # a small gradient right after a step that lowered the objective by over
        # STILL_MOVING_RTOL of it is not trusted: with many parameters over sparse columns
        # every gradient entry can be small far from the optimum (20 000 x 30 000 tf-idf
        # rows, 20 classes: ||g||_inf <= 1e-4 |f| held at several times the optimum, right
        # after a step that had lowered f by almost half)
        moving = state.f_prev is not None and state.f_prev - f > STILL_MOVING_RTOL * scale
        # at the start point, before any step, the test is absolute (scale 1): relative to
        # abs(f) it passed at once far from the optimum, where a quadratic penalty makes f
        # grow faster than the gradient (theta ~ 1e8: f = 1e15 with ||g||_inf = 5e6, called
        # converged after 0 iterations); one step later the relative test applies
        if state.f_prev is None and state.nit == 0:
            scale = 1.0
        if stat <= self.tol * scale and not moving:
            return Status.STATIONARY
        if self.ftol > 0.0 and state.f_prev is not None and \
                state.f_prev - f <= self.ftol * scale:
            return Status.FTOL
        return None

    def check(self, model: CountedModel, state: State) -> None:
        """Set ``state.status`` if a stopping test holds (called before every update)."""
        if self.target is not None and state.f <= self.target:
            state.status = Status.TARGET
            return
        status = self.stop_status(state, self.stationarity(model, state))
        if status is None and state.zero_step:
            status = Status.ZERO_STEP
        if status is None and self.limit_reached(model, state):
            status = Status.MAX_ITER
        if status is not None:
            state.status = status

    def record(self, model: CountedModel, state: State) -> None:
        if state.recorder is None:          # stepped by hand with init/update: no trace
            return
        g = state.g
        state.recorder.record(state.f, math.sqrt(g @ g) if g is not None else math.nan,
                              model.n_evals)

    def accept(self, model: CountedModel, state: State, x, f, g) -> None:
        """Move to an accepted iterate and record it in the trace."""
        state.f_prev, state.f, state.x, state.g = state.f, float(f), x, g
        state.nit += 1
        self.record(model, state)

    def run_iterator(self, model, x0):
        """:meth:`run` one iteration at a time (JAXopt's ``run_iterator``): a generator of
        ``(counted model, state)`` after the start and after every iteration, the stopping
        tests of :meth:`run` already applied to it (its ``status`` final once one holds, when
        the generator ends). A caller may stop early on a rule of its own;
        ``result(counted model, state)`` gives the :class:`Result` either way."""
        recorder = Recorder()
        model, x = self.prepare(model, x0)
        state = self.start(model, x)
        del x       # the state holds the iterate; the first one need not outlive it
        state.recorder = recorder
        self.record(model, state)
        self.check(model, state)
        yield model, state
        callback = self.callback
        while state.status is Status.RUNNING:
            self.iterate(model, state)
            if state.status is Status.RUNNING:
                if callback is not None and callback(state.x, state.f):
                    state.status = Status.CALLBACK
                else:
                    self.check(model, state)
            yield model, state

    def run(self, model, x0) -> Result:
        """Minimize ``model`` from ``x0``; returns :class:`Result`."""
        *_, (counted, state) = self.run_iterator(model, x0)      # run to the end
        return self.result(counted, state)

    def result(self, model: CountedModel, state: State) -> Result:
        status = state.status
        if status is Status.RUNNING:
            status = Status.MAX_ITER
        target_reached = self.target is not None and state.f <= self.target
        return Result(x=state.x, fun=float(state.f), converged=status.converged,
                      message=state.message or status.message, nit=int(state.nit),
                      n_evals=int(model.n_evals), method=self.info.name,
                      trace=state.recorder.trace(), jac=state.g,
                      target_reached=bool(target_reached), counts=model.counts,
                      info=self.result_info(state), status=status)
