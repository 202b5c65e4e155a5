"""Quantum-entropy upper bound on the Ising log-partition function (Beyler & Bach, Sec. 4).

For a feature set I of size n and F with phi(x)^T F phi(x) = f(x), the relaxation is

    a_eps(F) = sup_{Sigma in K'} tr(Sigma F) - (eps / n) tr(Sigma log Sigma),
    K' = {Sigma >= 0, tr Sigma = n, Sigma in V}                                  (Sec. 4.1)

and a_eps(F) >= Phi_eps(f) = eps log E_{x~uniform} exp(f(x) / eps)  (eq. (5)).

It is solved with the Chambolle-Pock algorithm (Alg. 1) on G(Sigma) = (eps / n)(tr Sigma log Sigma
- tr Sigma + n) - tr(Sigma F) and the indicator of V cap {tr = n}. Every reported bound is a
*dual* value,

    D(W) = eps log( (1/n) tr exp(n (F - W) / eps) ),   W in V-perp,

which is >= a_eps(F) for every W in the orthogonal complement of V, so it is a valid upper bound on
Phi_eps whatever the state of the iterations. A feasible primal point (Sec. 4.2) gives a lower value
on a_eps and with it the duality gap used to stop. Derivations and their numerical checks:
``docs/quantum.md``.

Modules, one job each:

- :mod:`.checks`: input checks (model, feature set, numbers);
- :mod:`.duality`: the dual value (the bound), the feasible primal point, moments of Sigma;
- :mod:`.chambolle_pock`: the solver, :func:`solve_quantum` returning a :class:`CPSolution`;
- :mod:`.newton`: the damped Newton polish of the dual (n <= 128);
- :mod:`.diagonal_newton`: Newton with temperature continuation on the diagonal dual, the
  solver for pair-only feature sets such as (1, x) when n > 128;
- :mod:`.zero_temperature`: the eps = 0 SDP (:func:`zero_temperature_bound`);
- :mod:`.kprime`: the constraints of K' for CVXPY;
- :mod:`.blas`: limiting BLAS threads while solving;
- :mod:`.bound`: the public entry :func:`quantum_bound` and its :class:`QuantumResult`.

Every result reports ``marginals`` as P(x_i = 1) (and ``means`` as E[x_i]).
"""

from zbound.ising.quantum.bound import QuantumResult, quantum_bound
from zbound.ising.quantum.chambolle_pock import CPSolution, entropy_prox, solve_quantum
from zbound.ising.quantum.duality import dual_value, feasible_primal
from zbound.ising.quantum.zero_temperature import ZeroTemperatureResult, zero_temperature_bound

__all__ = [
    "CPSolution",
    "QuantumResult",
    "ZeroTemperatureResult",
    "quantum_bound",
    "solve_quantum",
    "entropy_prox",
    "dual_value",
    "feasible_primal",
    "zero_temperature_bound",
]
