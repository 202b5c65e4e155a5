"""Upper bounds on Ising log-partition functions on the Boolean hypercube (Beyler & Bach).

- :class:`IsingModel` and the paper's parameter generators (:mod:`.generators`);
- exact values by enumeration or variable elimination (:mod:`.exact`, :func:`log_partition`);
- the quantum-entropy relaxation by Chambolle-Pock (:func:`quantum_bound`), hierarchies and
  greedy features (:func:`greedy_features`), the zero-temperature SDP
  (:func:`zero_temperature_bound`) and diagonal metric learning (:func:`metric_learning_bound`);
- competitors: tree-reweighted BP (:func:`trw_bound`) and the log-determinant relaxation
  (:func:`logdet_bound`), and the CVXPY formulation of the quantum relaxation
  (:func:`cvxpy_quantum_bound`, the speed peer).

Every bound is a :class:`~zbound.ising.result.BoundResult`, a solver
:class:`~zbound.solvers.Result` with ``bound`` and ``certified`` added (exact results report
``bound``, the exact value, and ``converged``), and ``marginals`` always means P(x_i = 1)
(``means`` is E[x_i] = 2 P(x_i = 1) - 1). CVXPY is imported only when a CVXPY-based function is
called.
"""

from zbound.ising.cvxpy_quantum import cvxpy_quantum_bound
from zbound.ising.exact import log_partition
from zbound.ising.generators import gaussian_model, logdet_model, random_model, trw_model
from zbound.ising.hierarchy import degree_hierarchy, greedy_features
from zbound.ising.logdet import logdet_bound
from zbound.ising.metric import metric_learning_bound
from zbound.ising.model import IsingModel
from zbound.ising.quantum import quantum_bound, zero_temperature_bound
from zbound.ising.trw import trw_bound

__all__ = [
    "IsingModel",
    "cvxpy_quantum_bound",
    "degree_hierarchy",
    "gaussian_model",
    "greedy_features",
    "log_partition",
    "logdet_bound",
    "logdet_model",
    "metric_learning_bound",
    "quantum_bound",
    "random_model",
    "trw_bound",
    "trw_model",
    "zero_temperature_bound",
]
