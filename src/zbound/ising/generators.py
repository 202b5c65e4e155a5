"""Random Ising models with the parameter settings of Beyler & Bach (Sec. 7.2 and Suppl. E).

Settings (theta_i are the fields ``h``, theta_ij the couplings ``J`` on the edges of the graph):

- ``"gaussian"``: theta ~ N(0, I) (Sec. 7.2, "Gaussian parameters");
- ``"logdet"`` (Jordan & Wainwright 2003): theta_i ~ U(-0.25, 0.25) and, for coupling strength w,
  theta_ij ~ U(0, 2w) (attractive), U(-w, w) (mixed) or U(-2w, 0) (repulsive);
- ``"trw"`` (Wainwright, Jaakkola & Willsky 2005, Suppl. E.2): theta_i ~ U(-0.05, 0.05) and
  theta_ij ~ U(0, w) (attractive) or U(-w, w) (mixed).

Graphs: ``"complete"``, ``"tree"`` (a uniformly random labelled tree, from a random Pruefer
sequence) and ``"independent"`` (no edges).
"""

from __future__ import annotations

import numbers

import numpy as np

from zbound.ising.model import IsingModel

GRAPHS = ("complete", "tree", "independent")
SETTINGS = ("gaussian", "logdet", "trw")
COUPLINGS = {"logdet": ("attractive", "mixed", "repulsive"), "trw": ("attractive", "mixed")}


def check_random_state(random_state) -> np.random.Generator:
    """``None``, an int seed or a Generator -> ``np.random.Generator`` (no global seeding)."""
    if random_state is None or isinstance(random_state, numbers.Integral | np.integer):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    raise TypeError(
        f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}"
    )


def _check_d(d) -> int:
    if not isinstance(d, numbers.Integral | np.integer) or isinstance(d, bool):
        raise TypeError(f"d must be an integer, got {type(d).__name__}")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    return int(d)


def random_tree_edges(d: int, random_state=None) -> np.ndarray:
    """(d-1, 2) edges (i < j) of a uniformly random labelled tree on d nodes (Pruefer decoding)."""
    d = _check_d(d)
    rng = check_random_state(random_state)
    if d == 1:
        return np.zeros((0, 2), dtype=np.intp)
    if d == 2:
        return np.array([[0, 1]], dtype=np.intp)
    seq = rng.integers(0, d, size=d - 2)
    degree = np.ones(d, dtype=np.intp)
    np.add.at(degree, seq, 1)
    edges = []
    for node in seq:
        leaf = int(np.flatnonzero(degree == 1)[0])
        edges.append((leaf, int(node)))
        degree[leaf] -= 1
        degree[node] -= 1
    u, v = np.flatnonzero(degree == 1)
    edges.append((int(u), int(v)))
    edges = np.sort(np.array(edges, dtype=np.intp), axis=1)
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))]


def graph_edges(d: int, graph: str = "complete", random_state=None) -> np.ndarray:
    """(m, 2) edge list (i < j) of the named graph on d nodes."""
    d = _check_d(d)
    if graph == "complete":
        i, j = np.triu_indices(d, 1)
        return np.stack([i, j], axis=1)
    if graph == "tree":
        return random_tree_edges(d, random_state)
    if graph == "independent":
        return np.zeros((0, 2), dtype=np.intp)
    raise ValueError(f"unknown graph {graph!r}; expected one of {GRAPHS}")


def _coupling_range(setting: str, coupling: str, w: float) -> tuple[float, float]:
    if setting == "logdet":
        ranges = {"attractive": (0.0, 2 * w), "mixed": (-w, w), "repulsive": (-2 * w, 0.0)}
    else:
        ranges = {"attractive": (0.0, w), "mixed": (-w, w)}
    if coupling not in ranges:
        raise ValueError(
            f"unknown coupling {coupling!r} for {setting!r} parameters; "
            f"expected one of {tuple(ranges)}"
        )
    return ranges[coupling]


def random_model(
    d: int,
    setting: str = "gaussian",
    graph: str = "complete",
    coupling: str = "mixed",
    w: float = 1.0,
    epsilon: float = 1.0,
    random_state=None,
) -> IsingModel:
    """Draw an :class:`IsingModel` with one of the paper's parameter settings (Sec. 7.2, E.2).

    ``coupling`` and ``w`` (coupling strength) are used by the ``"logdet"`` and ``"trw"`` settings
    only. The fields are drawn first, then the couplings in the order of :func:`graph_edges`.
    """
    d = _check_d(d)
    if setting not in SETTINGS:
        raise ValueError(f"unknown parameter setting {setting!r}; expected one of {SETTINGS}")
    w = float(w)
    if not np.isfinite(w) or w < 0:
        raise ValueError(f"coupling strength w must be finite and >= 0, got {w}")
    rng = check_random_state(random_state)
    edges = graph_edges(d, graph, rng)
    m = edges.shape[0]
    if setting == "gaussian":
        h = rng.standard_normal(d)
        vals = rng.standard_normal(m)
    else:
        lo, hi = _coupling_range(setting, coupling, w)
        a = 0.25 if setting == "logdet" else 0.05
        h = rng.uniform(-a, a, size=d)
        vals = rng.uniform(lo, hi, size=m)
    J = np.zeros((d, d))
    J[edges[:, 0], edges[:, 1]] = vals
    J = J + J.T
    return IsingModel(h, J, epsilon)


def gaussian_model(d: int, graph: str = "complete", epsilon: float = 1.0,
                   random_state=None) -> IsingModel:
    """Gaussian parameters theta ~ N(0, I) (Sec. 7.2)."""
    return random_model(d, "gaussian", graph, epsilon=epsilon, random_state=random_state)


def logdet_model(d: int, w: float, coupling: str = "mixed", graph: str = "complete",
                 epsilon: float = 1.0, random_state=None) -> IsingModel:
    """Log-det parameters of Jordan & Wainwright (2003) with coupling strength w (Sec. 7.2)."""
    return random_model(d, "logdet", graph, coupling, w, epsilon, random_state)


def trw_model(d: int, w: float, coupling: str = "mixed", graph: str = "complete",
              epsilon: float = 1.0, random_state=None) -> IsingModel:
    """TRW parameters of Wainwright, Jaakkola & Willsky (2005) (Suppl. E.2)."""
    return random_model(d, "trw", graph, coupling, w, epsilon, random_state)
