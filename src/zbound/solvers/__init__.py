"""Solvers: batch bound majorization (Alg. 2 of Jebara & Choromanska 2012, with constraints and
monotone accelerations) and the baselines it is compared with, behind one entry point.

::

    res = minimize(model, x0)                        # default: choose_method(model)
    res = minimize(model, x0, method="bound")        # Alg. 2 exactly as published
    res = minimize(model, x0, method=Squarem(tol=1e-10))   # a configured solver object
    res.x, res.fun, res.converged, res.status, res.trace.objective

(:func:`minimize` has a runnable example.)

Every method is a registered :class:`~zbound.solvers.base.Solver` class and returns
:class:`Result`; :data:`METHODS` describes them (capabilities and a line each).
"""

from __future__ import annotations

from zbound.constraints import LinearConstraints
from zbound.solvers.base import (
    METHODS,
    CountedModel,
    MethodInfo,
    MethodNames,
    Solver,
    State,
    configure,
    register,
    solver_class,
    unregister,
)
from zbound.solvers.baselines import (
    Newton,
    ScipyBFGS,
    ScipyCG,
    ScipyLBFGSB,
    ScipyNewtonCG,
    SteepestDescent,
)
from zbound.solvers.latent_em import LatentEM, LatentJointEM
from zbound.solvers.majorization import BoundMM, NewtonBound, Squarem
from zbound.solvers.policy import DEFAULT_METHOD, SolverPolicy, choose_method
from zbound.solvers.proximal import FISTA, BoundCD  # noqa: F401
from zbound.solvers.quasi_newton import LBFGSBound, LBFGSNewton, PreconditionedLBFGS
from zbound.solvers.result import Result, Status, Trace
from zbound.solvers.sample_space import SampleBound, SampleNewton  # noqa: F401
from zbound.solvers.stochastic import LSPFB, SBM, SPFB, ShermanMorrisonSBM  # noqa: F401

_UNSET = object()


def minimize(model, x0, method=_UNSET, constraints: LinearConstraints | None = _UNSET,
             tol: float = _UNSET, max_iter: int = _UNSET, target: float | None = _UNSET,
             order: str = _UNSET, inner: str = _UNSET, callback=_UNSET, ftol: float = _UNSET,
             **options) -> Result:
    """Minimize ``model``'s objective from ``x0`` (SciPy's ``minimize`` shape).

    Parameters
    ----------
    model : follows :class:`zbound.models.base.Model` (``n_params``, ``value``,
        ``value_and_grad``, ``value_grad_hessian``, ``majorizer``)
    x0 : (n_params,) finite start point, feasible for ``constraints``
    method : a registered name (a key of :data:`METHODS`), a :class:`Solver` subclass, or a
        configured :class:`Solver` object (then the settings below, where given, replace its
        own); default: :func:`choose_method` (``"lbfgs-precond"`` for large unconstrained
        multiclass softmax objectives, else :data:`DEFAULT_METHOD`, ``"newton-bound"``)
    constraints : :class:`LinearConstraints` (lb <= x <= ub, A x <= b) or None
    tol : stationarity tolerance: stop when ||grad||_inf (constrained: ||C d||_inf for the step
        d of the quadratic model C) <= tol * max(1, abs(f)); default 1e-8
    max_iter : iteration limit (SQUAREM: bound evaluations); default 1000
    target : stop as soon as the objective is <= target
    order : configuration ordering for Alg. 1 ("descending", "ascending", "given")
    inner : "auto" (dense Cholesky up to 300 parameters, then CG; exact bound steps of "bound"
        and "squarem" up to 1000), "cholesky" or "cg"
    callback : callback(x, f) after every iteration; return True to stop
    ftol : stop when one iteration decreases the objective by <= ftol * max(1, abs(f)); default
        1e-13
    options : the method's own options (``Solver.options`` of a class lists them with their
        defaults): ``cg_rtol``, ``cg_maxiter`` for the bound methods; ``backtracks`` and
        ``fallback`` for "newton-bound"; ``max_backtracks`` and ``step_factor`` for "squarem"

    Returns
    -------
    Result

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from zbound.models.multinomial import MultinomialLogistic
    >>> from zbound.solvers import minimize
    >>> X, y = load_iris(return_X_y=True)
    >>> model = MultinomialLogistic(X, y, 3, 1.0)         # softmax log-loss + L2
    >>> res = minimize(model, np.zeros(model.n_params))   # the default method
    >>> res.converged, res.method
    (True, 'newton-bound')
    >>> alg2 = minimize(model, np.zeros(model.n_params), method="bound", tol=1e-6)
    >>> bool(abs(alg2.fun - res.fun) < 1e-4 * res.fun)
    True
    """
    settings = {k: v for k, v in dict(constraints=constraints, tol=tol, max_iter=max_iter,
                                      target=target, order=order, inner=inner,
                                      callback=callback, ftol=ftol).items() if v is not _UNSET}
    if method is _UNSET:
        method = choose_method(model, None if constraints is _UNSET else constraints,
                               **options)
    settings.update(options)
    return configure(method, **settings).run(model, x0)


def solve_maxent(model, method=DEFAULT_METHOD, tol: float = 1e-10, max_iter: int = 500,
                 feasibility_tol: float = 1e-6, **solver_options):
    """Minimize the max-entropy dual (:class:`zbound.models.maxent.MaxEnt`) under
    vartheta >= 0 and recover the primal distribution (``MaxEntSolution``).

    ``tol`` is the solver's stationarity tolerance (for the unconstrained coordinates, the
    moment residual sum_y p(y) F(y) itself); ``solver_options`` go to :func:`minimize`.
    ``method`` is any method that takes linear constraints ("newton-bound", "bound" = Alg. 2
    with the supplement's QP, "squarem"). Raises RuntimeError when the primal constraints are
    still violated by more than ``feasibility_tol`` at the end: then they are infeasible (or
    feasible only on the boundary of the simplex) and the dual has no minimizer.
    """
    import numpy as np

    # Stop on stationarity only: the dual is flat near its minimizer (a change of 1e-13 in
    # log Z still leaves ~1e-6 moment residuals), so an objective-change test stops early.
    solver_options.setdefault("ftol", 0.0)
    res = minimize(model, np.zeros(model.n_params), method=method,
                   constraints=model.constraints(), tol=tol, max_iter=max_iter,
                   **solver_options)
    sol = model.solution(res.x, res)
    if sol.max_violation > feasibility_tol:
        raise RuntimeError(
            f"the moment constraints are violated by {sol.max_violation:.3g} after {res.nit} "
            f"iterations ({res.message}); they are infeasible, or feasible only at the "
            "boundary of the simplex, so the dual log Z has no minimizer")
    return sol


__all__ = ["minimize", "choose_method", "SolverPolicy", "solve_maxent", "METHODS", "MethodInfo",
           "DEFAULT_METHOD",
           "LinearConstraints", "Result", "Status", "Trace", "Solver", "State",
           "CountedModel", "register", "unregister", "solver_class", "configure", "MethodNames",
           "BoundMM", "Squarem", "NewtonBound", "LBFGSBound", "LBFGSNewton", "PreconditionedLBFGS",
           "LatentEM",
           "LatentJointEM", "Newton", "SteepestDescent", "ScipyLBFGSB", "ScipyBFGS", "ScipyCG",
           "ScipyNewtonCG"]
