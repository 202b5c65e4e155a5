"""Size and method list of a ``logreg-small`` run: :class:`Config`, :func:`config` (quick / full)
and :func:`tiny` (one data set, for tests)."""

from __future__ import annotations

from dataclasses import dataclass, field

SUITE = "logreg-small"
TABLE3_SETS = ("bupa", "wine", "spect", "ionosphere", "hepatitis")
WEAK_SETS = TABLE3_SETS + ("digits",)
LAMBDAS = (1.0, 1e2, 1e4)
WEAK_C = (1.0, 10.0)
REL_TARGET = 1e-6
SKLEARN_TOLS = tuple(10.0 ** -k for k in range(2, 11))

#: Library methods of ``zbound.solvers.minimize`` benchmarked here (the default is added if it
#: is not among them).
LIBRARY_METHODS = ("bound", "squarem", "newton-bound", "lbfgs-precond")
#: Peers run through ``zbound.solvers.minimize``: record name -> method name.
SOLVER_PEERS = {
    "scipy-bfgs": "bfgs",
    "scipy-cg": "cg",
    "scipy-lbfgsb": "lbfgs",
    "scipy-newton-cg": "newton-cg",
    "steepest": "steepest",
    "newton": "newton",
}
#: scikit-learn ``LogisticRegression`` solvers: record name -> solver.
SKLEARN_PEERS = {
    "sklearn-lbfgs": "lbfgs",
    "sklearn-newton-cg": "newton-cg",
    "sklearn-newton-cholesky": "newton-cholesky",
}

#: SQUAREM target: >= this many times fewer bound evaluations than plain Alg. 2 ...
SQUAREM_FACTOR = 5.0
#: ... wherever plain Alg. 2 needs more than this many (or misses the target).
SQUAREM_MIN_BOUND_EVALS = 100


@dataclass
class Config:
    """Size and methods of a run. ``config(quick)`` gives the two standard ones, ``tiny()`` a
    seconds-long one for tests.

    Methods: every name in ``library_methods`` (plus ``zbound.solvers.DEFAULT_METHOD``),
    ``extra_methods``, the values of ``solver_peers`` (record name -> ``minimize`` method) and
    ``sklearn_peers`` (record name -> scikit-learn solver). ``extra_methods`` are names of
    ``zbound.solvers.METHODS`` (a newly registered solver, say), run through
    ``zbound.solvers.minimize`` under their own name; whether a record is a peer is read from
    ``METHODS[name].peer``. ``methods``, if given, then keeps only those record names.
    """

    table3_sets: tuple[str, ...] = TABLE3_SETS
    lambdas: tuple[float, ...] = LAMBDAS
    weak_sets: tuple[str, ...] = WEAK_SETS
    weak_C: tuple[float, ...] = WEAK_C
    weak_C_by_set: dict[str, tuple[float, ...]] = field(default_factory=dict)
    starts_table3: int = 10
    starts_weak: int = 3
    repeats: int = 5
    max_iter: int = 20000
    #: a library / solver-peer call that has not reached the target after this many seconds is
    #: stopped (through the solver callback) and counts as not reached
    time_budget_s: float = 15.0
    peer_max_iter: int = 10000
    #: scikit-learn's tolerances, searched loosest first for the one that reaches the target
    tols: tuple[float, ...] = SKLEARN_TOLS
    tol_stride: int = 1
    #: peak memory is not measured on these small problems
    memory_budget_s: float | None = None
    slow_unit_s: float | None = None
    lowrank_limit_s: float = float("inf")
    probe_rows: tuple[int, ...] = ()
    #: the library's own methods (names of ``zbound.solvers.METHODS``)
    library_methods: tuple[str, ...] = LIBRARY_METHODS
    #: further ``zbound.solvers.METHODS`` names to benchmark (e.g. a newly registered solver);
    #: one already run under another record name is not run twice
    extra_methods: tuple[str, ...] = ()
    #: peers run through ``zbound.solvers.minimize``: record name -> method name
    solver_peers: dict[str, str] = field(default_factory=lambda: dict(SOLVER_PEERS))
    #: scikit-learn ``LogisticRegression`` peers: record name -> solver
    sklearn_peers: dict[str, str] = field(default_factory=lambda: dict(SKLEARN_PEERS))
    #: restrict the methods (None: all); names are record names
    methods: tuple[str, ...] | None = None
    curve_points: int = 150
    #: Where plain Alg. 2 misses the target within ``time_budget_s`` but SQUAREM reaches it, it
    #: is run again, untimed, from the first ``count_check_starts`` starts for up to
    #: SQUAREM_FACTOR x SQUAREM's bound evaluations (each run stopped after
    #: ``count_check_budget_s``), which decides the SQUAREM target (0 starts: skip).
    count_check_starts: int = 3
    count_check_budget_s: float = 600.0
    #: BLAS/OpenMP threads during the run (None: leave as is). These problems are tiny
    #: (at most 650 parameters); with 2 OpenBLAS threads on a 2-core machine SciPy's
    #: L-BFGS-B (and so scikit-learn's lbfgs) spends ~7 ms per iteration in thread
    #: synchronization (wine: 60-90 ms instead of 0.4-0.9 ms), so every method gets one thread.
    blas_threads: int | None = 1


def config(quick: bool) -> Config:
    """The standard run (``zbound bench logreg-small``) or its reduced ``--quick`` version."""
    if quick:
        return Config(starts_table3=3, starts_weak=3, repeats=3, time_budget_s=5.0,
                      weak_C_by_set={"digits": (1.0,)}, count_check_starts=1,
                      count_check_budget_s=60.0)
    return Config()


def tiny(**changes) -> Config:
    """A run of seconds for tests: wine only, lambda = 100 and C = 1, few starts and repeats.

    Keyword arguments replace fields, e.g. ``tiny(weak_sets=(), methods=("newton-bound",))``.
    """
    base = {"table3_sets": ("wine",), "lambdas": (100.0,), "weak_sets": ("wine",),
            "weak_C": (1.0,), "starts_table3": 2, "starts_weak": 1, "repeats": 2,
            "time_budget_s": 10.0, "tols": (1e-2, 1e-4, 1e-6, 1e-8),
            "curve_points": 20}
    base.update(changes)
    return Config(**base)
