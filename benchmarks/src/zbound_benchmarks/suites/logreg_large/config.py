"""Size and method list of a ``logreg-large`` run: :class:`Config`, :func:`config` (quick /
full) and :func:`tiny` (seconds, for tests)."""

from __future__ import annotations

from dataclasses import dataclass, field

SUITE = "logreg-large"

#: Table 1 of Jebara & Choromanska (2012) where the data exists: data set -> lambda (the
#: paper's cross-validated value; regularizer (t lambda / 2) ||theta||^2, reg = t * lambda).
PAPER_LAMBDA = {"srbct": 10.0, "ssl-text": 100.0}
#: Table 1: seconds and iterations to reach L-BFGS's solution within eps = 1e-4 (their 2012
#: C++ code and machine, averaged over ten starts near 0): data set -> method -> (s, iter).
PAPER_TABLE1 = {
    "srbct": {"LBFGS": (6.10, 42), "SD": (7.27, 43), "CG": (40.61, 100), "Bound": (3.67, 8)},
    "ssl-text": {"LBFGS": (15.54, 7), "SD": (153.10, 69), "CG": (57.30, 23),
                 "Bound": (6.18, 3)},
}
#: Table 1's sizes: t (all samples, train + test) and d (n_classes x features incl. bias).
PAPER_SIZES = {"srbct": {"n": 4, "t": 83, "d": 9236}, "ssl-text": {"n": 2, "t": 1500, "d": 23922}}
#: The paper's method -> our record of the same algorithm.
#: The paper's "Bound" is Alg. 2 with the full Alg. 1 curvature: ours is ``sample-bound`` (the
#: same curvature, solved in sample space); the low-rank bound (``bound-rank10``, Alg. 4 inside
#: Alg. 2) is shown as its own row (:data:`OURS_EXTRA_ROWS`).
PAPER_TO_OURS = {"LBFGS": "scipy-lbfgsb", "SD": "steepest", "CG": "scipy-cg",
                 "Bound": "sample-bound"}
#: Rows of Table 1 without a column of the paper: record name -> label in "paper's name".
OURS_EXTRA_ROWS = {"bound-rank10": "(Bound, low-rank k = 10; Table 4 has k = 8: 0.96 s)"}
#: The library's methods for d >> t (Table 1's verdict names the best of them).
LARGE_D_METHODS = ("sample-newton", "sample-bound")
#: Supplement Table 4 (SRBCT): seconds against the rank k of the low-rank bound.
PAPER_RANKS = (1, 2, 4, 8, 16, 32, 64)
PAPER_TABLE4 = {
    "LBFGS": (1.37, 1.32, 1.39, 1.35, 1.46, 1.40, 1.54),
    "SD": (8.80,) * 7,
    "CG": (4.39,) * 7,
    "Bound": (0.56, 0.56, 0.67, 0.96, 1.34, 2.11, 4.57),
}
#: Table 1's target: L-BFGS's solution (its own termination rule) within this relative eps.
PAPER_EPS = 1e-4

#: Larger data, scikit-learn's convention: sum of log-losses + 1/(2C) ||W||^2, intercepts
#: unpenalized (``BoundLogisticRegression``'s objective).
LARGE_SETS = ("adult", "kmnist", "digits", "synthetic")
#: Estimator-only cells (task ``estimator``): ``BoundLogisticRegression.fit`` against
#: ``LogisticRegression.fit`` on the Table 1 training split of SRBCT (75 x 2308, 4 classes,
#: raw features) under scikit-learn's objective, at C = 0.01 and 1 (an earlier version of the
#: estimator was 88x / 39x slower than lbfgs there, at C = 1 / 0.01).
ESTIMATOR_SETS = ("srbct",)
ESTIMATOR_C = (0.01, 1.0)
C_VALUES = (0.01, 1.0, 100.0)
#: Two targets per larger-data cell, relative to the best objective found: name -> rel.
TARGETS = {"loose": 1e-3, "tight": 1e-8}

#: Library methods (``zbound.solvers.minimize`` names); the default is added if missing.
#: ``lbfgs-precond``: L-BFGS with the fixed (shrunk) Boehning curvature as initial inverse
#: Hessian (docs/solvers.md), the candidate default at loose targets.
LIBRARY_METHODS = ("newton-bound", "lbfgs-precond", "bound", "squarem")
#: Low-rank bound: record name -> rank (run only when ``"rank" in BoundMM.options``).
LOWRANK_METHODS = {"bound-rank10": 10}
#: Peers through ``zbound.solvers.minimize`` on the same objective: record name -> method.
SOLVER_PEERS = {"scipy-lbfgsb": "lbfgs", "scipy-cg": "cg", "scipy-newton-cg": "newton-cg"}
#: Extra solver peers in the Table 1 cells (the paper's steepest descent column).
PAPER_SOLVER_PEERS = {"steepest": "steepest"}
#: scikit-learn ``LogisticRegression`` peers: record name -> solver.
SKLEARN_PEERS = {"sklearn-lbfgs": "lbfgs", "sklearn-newton-cg": "newton-cg",
                 "sklearn-newton-cholesky": "newton-cholesky", "sklearn-saga": "saga"}
#: glum ``GeneralizedLinearRegressor(family="binomial")`` peers (two classes only).
GLUM_PEERS = {"glum-irls-cd": "irls-cd", "glum-lbfgs": "lbfgs"}
#: The library's estimator with its defaults (``precision="auto"``), fitted like
#: scikit-learn's (whole ``fit``, tol searched).
ESTIMATOR = "zbound-estimator"
#: The same with ``precision="mixed"`` (float32 evaluations first, a float32 copy of X):
#: reported beside it, the memory target is the default's.
ESTIMATOR_MIXED = "zbound-estimator-mixed"
#: ... and with ``precision="double"`` (float64 throughout: the float64 reference of the
#: default, which on large data evaluates in float32 from row blocks first)
ESTIMATOR_DOUBLE = "zbound-estimator-double"
#: Tolerances searched (loosest first) for the peers that cannot stop at a target: half
#: decades from 1e-1 to 1e-12 (with decades only, a method whose tol reaches a target just
#: past a decade, e.g. at 3e-3, paid for up to a decade more accuracy than it needed).
TOLS = tuple(10.0 ** (-k / 2) for k in range(2, 25))


@dataclass
class Config:
    """What a run solves and how long it may take. ``config(quick)`` gives the two standard
    runs, ``tiny()`` one of seconds for tests."""

    paper_sets: tuple[str, ...] = tuple(PAPER_LAMBDA)
    large_sets: tuple[str, ...] = LARGE_SETS
    C_values: tuple[float, ...] = C_VALUES
    #: per data set C values replacing ``C_values``
    C_by_set: dict[str, tuple[float, ...]] = field(default_factory=dict)
    #: estimator-only cells (data sets of Table 1, scikit-learn's objective) and their C
    estimator_sets: tuple[str, ...] = ESTIMATOR_SETS
    estimator_C: tuple[float, ...] = ESTIMATOR_C
    #: random starts N(0, 0.01^2) per Table 1 cell (larger data: start at 0, as
    #: scikit-learn and glum do)
    paper_starts: int = 10
    rank_starts: int = 3
    ranks: tuple[int, ...] = PAPER_RANKS
    repeats: int = 3
    #: a method (at one tol) whose first repeat took longer than this many seconds is timed
    #: once (None: every method ``repeats`` times); its records say so ("repeats")
    slow_unit_s: float | None = None
    #: a library / SciPy call still running after this many seconds is stopped and counts as
    #: not reached; a scikit-learn / glum fit longer than this counts as not reached
    time_budget_s: float = 30.0
    #: the untimed peak-memory run (to the loose target) is stopped after this many seconds
    memory_budget_s: float = 10.0
    #: a low-rank method whose estimated single iteration exceeds this many seconds (None:
    #: ``time_budget_s``) is not timed; a memory probe stands in (``probe_rows``)
    lowrank_skip_s: float | None = None
    #: the memory probe of such a method: one iteration (one low-rank bound build, rows x
    #: classes rank-one updates, and one Woodbury step) on the first rows of the cell, at each
    #: of these row counts, under tracemalloc (the peak must not grow with the rows)
    probe_rows: tuple[int, ...] = (100, 200)
    max_iter: int = 100000
    peer_max_iter: int = 100000
    tols: tuple[float, ...] = TOLS
    #: the tol search steps this many tols at a time (a decade), then tries the skipped looser
    #: ones back (same answer, fewer fits)
    tol_stride: int = 2
    #: rows of the synthetic problem (200 000 x 50, 10 classes) and of KMNIST's training part
    #: (None: all 8000 of the 80/20 split)
    synthetic_rows: int = 200_000
    kmnist_rows: int | None = None
    library_methods: tuple[str, ...] = LIBRARY_METHODS
    lowrank_methods: dict[str, int] = field(default_factory=lambda: dict(LOWRANK_METHODS))
    solver_peers: dict[str, str] = field(default_factory=lambda: dict(SOLVER_PEERS))
    paper_solver_peers: dict[str, str] = field(
        default_factory=lambda: dict(PAPER_SOLVER_PEERS))
    sklearn_peers: dict[str, str] = field(default_factory=lambda: dict(SKLEARN_PEERS))
    glum_peers: dict[str, str] = field(default_factory=lambda: dict(GLUM_PEERS))
    estimator: bool = True
    #: restrict to these record names (None: all)
    methods: tuple[str, ...] | None = None
    curve_points: int = 120
    blas_threads: int | None = 1
    seed: int = 0

    def Cs(self, dataset: str) -> tuple[float, ...]:
        return tuple(self.C_by_set.get(dataset, self.C_values))

    @property
    def lowrank_limit_s(self) -> float:
        return self.time_budget_s if self.lowrank_skip_s is None else self.lowrank_skip_s

    def keep(self, name: str) -> bool:
        return self.methods is None or name in self.methods


def config(quick: bool) -> Config:
    """The standard run (``zbound bench logreg-large``) or its reduced ``--quick`` version:
    2 starts in Table 1, rank sweep at k = 1, 4, 16, 64 from 1 start, C = 1 only on adult,
    KMNIST (2000 training rows) and the synthetic set (50 000 rows), all three C on digits,
    5 s time budgets (1.5 s for the memory runs), and a method whose first repeat took over
    2 s (all starts of a cell together) timed once instead of three times."""
    if quick:
        return Config(paper_starts=2, rank_starts=1, ranks=(1, 4, 16, 64), time_budget_s=5.0,
                      memory_budget_s=1.5, slow_unit_s=2.0,
                      synthetic_rows=50_000, kmnist_rows=2000,
                      C_by_set={"adult": (1.0,), "kmnist": (1.0,), "synthetic": (1.0,)})
    return Config()


def tiny(**changes) -> Config:
    """A run of seconds for tests: no Table 1 cell, digits and a small two-class synthetic set
    ("synthetic-binary", 2000 x 20, so that glum runs) at C = 1, small budgets. Keyword
    arguments replace fields, e.g. ``tiny(paper_sets=("ssl-text",))``."""
    base = {"paper_sets": (), "large_sets": ("digits", "synthetic-binary"), "C_values": (1.0,),
            "estimator_sets": (),
            "paper_starts": 1, "rank_starts": 1, "ranks": (1, 2), "repeats": 1,
            "time_budget_s": 2.0, "memory_budget_s": 1.0, "tols": (1e-2, 1e-4, 1e-6, 1e-8),
            "curve_points": 20}
    base.update(changes)
    return Config(**base)
