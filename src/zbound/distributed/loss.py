"""The softmax loss over a ``dask.array``: the chunk map runs on the Dask workers.

:class:`DaskSoftmaxLoss` implements the loss protocol of
:class:`zbound.models.loss.SoftmaxLoss` (``value``, ``value_and_grad``,
``value_grad_hessian``, ``hessian``, ``majorizer``, ``predict_proba``) for X a dask array
chunked by rows. Each row block becomes one chunk record, a ``SoftmaxLoss`` on that block,
built and kept on the worker that holds the block; every evaluation is then one pass: one
task per worker (pinned to it, loosely: it runs elsewhere if the worker dies), carrying
theta, loops over that worker's records with the NumPy path's per-chunk kernels (a fused
dsyrk kernel for binary dense rows, :func:`~zbound.distributed._kernels.
binary_value_grad_hessian`) and returns their sum; the driver adds the per-worker tuples.
Only small results travel: a number, the (p,) gradient, and the curvature in structured
form:

- ``curvature="dense"``: the (p, p) matrix summed over chunks (one Gram product per class
  pair and chunk), solved exactly in the driver (:class:`GatheredCurvature`);
- ``curvature="operator"``: the chunk operators stay on the workers
  (:class:`DistributedCurvature`), each product, diagonal or set of class blocks one more
  pass;
- ``"auto"`` (default): dense while the per-row cost of the matrix (class pairs x d^2) stays
  within a few products (at most ``DENSE_MAX_PAIRS`` class-pair Grams, p <= ``DENSE_MAX_P``),
  else the operator. Binary and 3-class problems get the matrix, 10 classes the operator
  (there a dense Hessian costs about 60 products).

No call gathers X: the driver holds theta, the reduced results and the Dask graph.
Works with Dask's default (threaded) scheduler (one task per chunk and a tree of additions)
and with a ``distributed.Client`` (the one given, or the default client when Dask's current
scheduler is one).
"""

from __future__ import annotations

import itertools
import sys
import uuid

import numpy as np

from zbound.distributed import _kernels as K
from zbound.distributed.curvature import DistributedCurvature, GatheredCurvature
from zbound.models.base import Majorizer

#: "auto" keeps the dense (p, p) curvature while a chunk assembles at most this many class-pair
#: Gram products (binary: 1, three classes: 3, ten: 45) ...
DENSE_MAX_PAIRS = 6
#: ... and p stays at most this (a (p, p) float64 matrix per chunk and per reduction)
DENSE_MAX_P = 4096
#: fan-in of the tree of additions on the workers
FAN_IN = 8
#: passes between two regroupings of the chunk records by the worker that holds them
REGROUP_EVERY = 16
CURVATURES = ("auto", "dense", "operator")
#: ``hessian_sample="auto"`` (the default): the fraction q = max(AUTO_COST / p, floor) ...
#: the exact binary Hessian part of a pass costs about p / 18 value-and-gradient passes
#: (a dsyrk of t p^2 flops against a memory-bound t p sweep), so
#: q = 6 / p makes it about a third of one
AUTO_COST = 6.0
#: ... floor: the sample keeps at least this many rows x d (parameters per class) of the
#: rarest class, so each class block of the sampled Hessian rests on >= 100 d rows ...
AUTO_ROWS_PER_PARAM = 100
#: ... and above this fraction the exact Hessian is used (the saving is small there)
AUTO_MAX = 0.5


#: errors of the data or the arguments: raised as they are, not as a cluster failure
_PASS_THROUGH = (ValueError, TypeError, ArithmeticError, MemoryError)


def _current_client(dask):
    """The distributed Client that Dask's current scheduler is (the default client), or
    None (threaded or another scheduler)."""
    if "distributed" not in sys.modules:
        return None
    try:
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):
        return None
    sched = dask.base.get_scheduler()
    return client if getattr(sched, "__self__", None) is client else None


class DistributedEvaluationError(RuntimeError):
    """A pass over the data failed on the Dask cluster (workers lost beyond what Dask
    recomputes, a closed client, ...)."""


def is_dask_array(x) -> bool:
    """Whether x is a ``dask.array.Array``, without importing dask when it is absent."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(x, da.Array)


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise ImportError("dask inputs need the optional dependency dask: "
                          "pip install 'zbound[dask]'") from exc
    return dask, da


def _row_blocks(da, X):
    """X rechunked to one block of columns, with known row chunk sizes."""
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D dask array, got {X.ndim} dimensions")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def _aligned(da, v, chunks, name: str, t: int):
    """A 1-D vector (numpy or dask) as a dask array with the given row chunks."""
    if v is None:
        return None
    if is_dask_array(v):
        if v.ndim != 1 or v.shape[0] != t:
            raise ValueError(f"{name} must have shape ({t},) to match X, got {v.shape}")
        if any(np.isnan(c) for c in v.chunks[0]):
            v = v.compute_chunk_sizes()
        return v.rechunk((chunks,)) if v.chunks[0] != chunks else v
    arr = np.asarray(v)
    if name == "sample_weight":
        arr = arr.astype(np.float64)
        if arr.ndim == 0:
            arr = np.full(t, float(arr))
    if arr.shape != (t,):
        raise ValueError(f"{name} must have shape ({t},) to match X, got {arr.shape}")
    return da.from_array(arr, chunks=(chunks,))


class DaskSoftmaxLoss:
    """sum_j s_j [log sum_a exp(S_ja) - S_{j, y_j}] over a dask array X, evaluated on the
    workers (the loss of :class:`zbound.models.loss.SoftmaxLoss`, same theta layout).

    Parameters
    ----------
    X : (t, d) dask array, chunked by rows; blocks dense, scipy.sparse or pydata sparse
    y : (t,) integer class indices in [0, n_classes), a dask or NumPy array
    n_classes : int, default max(y) + 1
    sample_weight : (t,) >= 0, dask or NumPy, or None
    reference_class, fit_intercept : as for ``SoftmaxLoss``
    curvature : "auto", "dense" or "operator" (see the module docstring)
    hessian_sample : "auto" (default), float in (0, 1], or None (the exact Hessian)
        Sub-sampled curvature for ``value_grad_hessian`` (the Newton step): the value and the
        gradient still come from every row, the Hessian from every m-th row of each chunk
        (m = round(1 / hessian_sample), the offset rotating from call to call), rescaled by
        the chunk's rows / sampled rows. Strided rows keep the sample spread over sorted
        data and the work even over the workers; the Hessian part of the pass costs about
        1/m of the exact one. The value and the majorizer (the bound) always use every row,
        so ``newton-bound`` (which tests each step on the exact objective and falls back on
        the bound) stays monotone; the iterates differ from the exact-Hessian path, the
        optimum does not.
    client : a ``distributed.Client`` to run on; default: Dask's current scheduler (the
        default client if one exists, else the threaded scheduler)
    """

    def __init__(self, X, y, n_classes: int | None = None, sample_weight=None,
                 reference_class: bool = False, fit_intercept: bool = False,
                 curvature: str = "auto", client=None,
                 hessian_sample: float | str | None = "auto"):
        dask, da = _import_dask()
        auto = isinstance(hessian_sample, str) and hessian_sample == "auto"
        if hessian_sample is not None and not auto:
            if isinstance(hessian_sample, bool) or not isinstance(
                    hessian_sample, int | float | np.floating | np.integer) \
                    or not 0.0 < float(hessian_sample) <= 1.0:
                raise ValueError("hessian_sample must be 'auto', a number in (0, 1] or None, "
                                 f"got {hessian_sample!r}")
            hessian_sample = float(hessian_sample)
        if not is_dask_array(X):
            raise TypeError(f"X must be a dask array, got {type(X).__name__}; use "
                            "zbound.models.loss.SoftmaxLoss for in-memory data")
        if curvature not in CURVATURES:
            raise ValueError(f"curvature must be one of {CURVATURES}, got {curvature!r}")
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X must be numeric, got dtype {X.dtype}")
        X = _row_blocks(da, X)
        t, n_features = X.shape
        if t == 0 or n_features == 0:
            raise ValueError(f"X must be non-empty, got shape {X.shape}")
        chunks = X.chunks[0]
        y = _aligned(da, y, chunks, "y", t)
        if y.dtype.kind not in "iuf":
            raise TypeError(f"y must hold integer class indices, got dtype {y.dtype}")
        sw = _aligned(da, sample_weight, chunks, "sample_weight", t)
        self.client = client
        self._dask = dask
        self._client = client if client is not None else _current_client(dask)
        self._names = itertools.count()
        self._token = uuid.uuid4().hex[:12]
        self.passes = 0
        self.hessian_sample = None if auto else hessian_sample    # auto: set below
        self._hessian_calls = 0

        xb = X.to_delayed().ravel().tolist()
        yb = y.to_delayed().ravel().tolist()
        sb = [None] * len(xb) if sw is None else sw.to_delayed().ravel().tolist()
        delayed = dask.delayed
        if n_classes is None:
            # A checking pass first: rows, label range, finiteness, weights (small results).
            st = self._compute(*[delayed(K.stats)(a, b, c) for a, b, c in zip(xb, yb, sb)],
                               what="input check")
            K.check_stats(st, None)
            n = max(s[2] for s in st if s[0]) + 1
        else:
            n = int(n_classes)      # the checks run inside the record tasks: one pass fewer
        if n < 2:
            raise ValueError("softmax regression needs at least 2 classes")
        self.X = X
        self.y = y
        self.sample_weight = sw
        self.n_classes = n
        self.reference_class = bool(reference_class)
        self.free = 1 if self.reference_class else 0
        self.k = n - self.free
        self.fit_intercept = bool(fit_intercept)
        self.n_features = n_features
        self.d = n_features + self.fit_intercept
        self.n_params = self.k * self.d
        self.n_samples = t
        self.chunk_rows = tuple(int(c) for c in chunks)
        self.chunk_size = max(self.chunk_rows)
        pairs = n * (n - 1) // 2 if not self.free else self.k * (self.k + 1) // 2
        if curvature == "auto":
            curvature = "dense" if pairs <= DENSE_MAX_PAIRS and self.n_params <= DENSE_MAX_P \
                else "operator"
        self.curvature = curvature
        recs = [delayed(K.prepare)(a, b, c, n, self.reference_class, self.fit_intercept,
                                   check=n_classes is not None)
                for a, b, c in zip(xb, yb, sb)]
        self._chunks = self._persist(*recs)
        self._groups = None
        self._group_records()
        if auto:
            self.hessian_sample = self._auto_fraction()

    @property
    def hessian_fraction(self) -> float | None:
        """The fraction of rows behind the Hessian (1 / m), None for every row."""
        if self.hessian_sample is None:
            return None
        m = max(1, round(1.0 / self.hessian_sample))
        return None if m == 1 else 1.0 / m

    def _auto_fraction(self) -> float | None:
        """``hessian_sample="auto"``: the fraction (None: exact) from p, d and the rows of the
        rarest class (one pass over the labels, only when the cost rule would sample)."""
        q = AUTO_COST / self.n_params
        if q > AUTO_MAX or self.n_samples * q < AUTO_ROWS_PER_PARAM * self.d:
            return None
        counts = self._map(K.class_counts, (self.n_classes,), what="class count")[0]
        self.passes -= 1            # labels only: not a pass over X
        rarest = float(np.min(counts))
        if rarest <= 0:
            return None
        q = max(q, AUTO_ROWS_PER_PARAM * self.d / rarest)
        return None if q > AUTO_MAX else q

    @property
    def n_chunks(self) -> int:
        return len(self._chunks)

    # -- the engine: one fused task per worker, small results back --------------------------
    def _scheduler(self):
        return {} if self.client is None else {"scheduler": self.client}

    def _failed(self, what: str, exc: Exception) -> DistributedEvaluationError:
        return DistributedEvaluationError(
            f"DaskSoftmaxLoss: the {what} pass over the data failed on the Dask cluster "
            f"({type(exc).__name__}: {exc}). Dask recomputes lost chunks while it can; "
            "this failure means it could not (all workers or the client gone, or a task "
            "failed too often). Restart the cluster and fit again.")

    def _compute(self, *objs, what: str):
        try:
            return self._dask.compute(*objs, **self._scheduler())
        except _PASS_THROUGH:
            raise
        except Exception as exc:   # lost workers, closed client, cancelled futures
            raise self._failed(what, exc) from exc

    def _persist(self, *objs):
        """Persist delayed objects: futures on the workers with a distributed client (their
        lineage kept, so lost ones are recomputed), concrete values otherwise."""
        try:
            if self._client is not None:
                from distributed import wait

                futs = self._client.compute(list(objs))
                with self._client.as_current():
                    wait(futs)
                for f in futs:
                    if f.status == "error":
                        f.result()          # raises the task's own exception
                return futs
            return list(self._dask.persist(*objs, **self._scheduler()))
        except _PASS_THROUGH:
            raise
        except Exception as exc:
            raise DistributedEvaluationError(
                f"DaskSoftmaxLoss: persisting the chunks failed on the Dask cluster "
                f"({type(exc).__name__}: {exc})") from exc

    def _group_records(self):
        """Group the chunk records by the worker that holds them (one task per worker and
        pass); the threaded scheduler gets one group per chunk (its threads share memory)."""
        if self._client is None:
            self._groups = [(None, [c]) for c in self._chunks]
            return
        try:
            who = self._client.who_has(self._chunks)
        except Exception:           # the next pass reports a real failure
            who = {}
        load: dict = {}
        groups: dict = {}
        for fut in self._chunks:
            holders = who.get(fut.key) or (None,)
            w = min(holders, key=lambda h: load.get(h, 0))
            load[w] = load.get(w, 0) + 1
            groups.setdefault(w, []).append(fut)
        self._groups = list(groups.items())

    def _regroup_now_and_then(self):
        """Regroup every ``REGROUP_EVERY`` passes (a scheduler round trip). In between, a
        task whose worker died runs wherever its records were recomputed (the restriction
        is loose), so a lost worker costs speed until the next regrouping, never results."""
        if self._client is not None and self.passes % REGROUP_EVERY == 0:
            self._group_records()

    def _submit(self, fn, *args, worker=None, what: str):
        name = f"zbound-{what.replace(' ', '-')}-{self._token}-{next(self._names)}"
        kw = {} if worker is None else {"workers": [worker], "allow_other_workers": True}
        return self._client.submit(fn, *args, key=name, pure=False, **kw)

    def _gather(self, futs, what: str):
        try:
            return self._client.gather(futs)
        except _PASS_THROUGH:
            raise
        except Exception as exc:
            raise self._failed(what, exc) from exc

    def _map(self, kernel, args=(), keep: bool = False, what: str = "evaluation"):
        """One pass: ``kernel(record, *args)`` over every chunk record, one fused task per
        worker (or chunk, threaded). Returns the summed small results, and with ``keep`` also
        the per-group results left on the workers (their last item: the operators)."""
        self.passes += 1
        if self._client is None:
            delayed = self._dask.delayed
            tasks = [delayed(K.fused)(kernel, recs, args, keep) for _, recs in self._groups]
            if not keep:
                return self._compute(self._tree(tasks), what=what)[0], None
            parts = self._persist(*tasks)
            small = self._compute(self._tree([delayed(K.head)(q) for q in parts]),
                                  what=what)[0]
            return small, [(None, q) for q in parts]
        self._regroup_now_and_then()
        try:
            parts = [(w, self._submit(K.fused, kernel, recs, args, keep, worker=w, what=what))
                     for w, recs in self._groups]
            heads = [self._submit(K.head, q, worker=w, what=what) for w, q in parts] \
                if keep else [q for _, q in parts]
        except _PASS_THROUGH:
            raise
        except Exception as exc:
            raise self._failed(what, exc) from exc
        small = K.add(*self._gather(heads, what))
        return small, (parts if keep else None)

    def _map_parts(self, kernel, parts, args=(), what: str = "evaluation"):
        """One pass over kept group results (curvature products, diagonals, ...): ``parts``
        as :meth:`_map` returns them, (worker, result) pairs."""
        self.passes += 1
        if self._client is None:
            delayed = self._dask.delayed
            return self._compute(self._tree([delayed(kernel)(q, *args) for _, q in parts]),
                                 what=what)[0]
        try:
            futs = [self._submit(kernel, q, *args, worker=w, what=what) for w, q in parts]
        except _PASS_THROUGH:
            raise
        except Exception as exc:
            raise self._failed(what, exc) from exc
        return K.add(*self._gather(futs, what))

    def _tree(self, items):
        delayed = self._dask.delayed
        while len(items) > 1:
            items = [delayed(K.add)(*items[i:i + FAN_IN]) if len(items[i:i + FAN_IN]) > 1
                     else items[i] for i in range(0, len(items), FAN_IN)]
        return items[0]

    def _theta(self, theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},), got {theta.shape}")
        return theta

    # -- the loss protocol ---------------------------------------------------------------------
    def value(self, theta) -> float:
        th = self._theta(theta)
        return float(self._map(K.value, (th,), what="value")[0])

    def value_and_grad(self, theta):
        th = self._theta(theta)
        f, g = self._map(K.value_grad, (th,), what="gradient")[0]
        return float(f), np.array(g, dtype=np.float64)

    def _sample(self):
        """(m, offset) of this Hessian: every row (m = 1), or rows off, off + m, ... of each
        chunk with m = round(1 / hessian_sample), the offset rotating from call to call."""
        if self.hessian_sample is None:
            return 1, 0
        m = max(1, round(1.0 / self.hessian_sample))
        off = self._hessian_calls % m
        self._hessian_calls += 1
        return m, off

    def _with_curvature(self, kernel, args, what):
        dense = self.curvature == "dense"
        small, parts = self._map(kernel, args, keep=not dense, what=what)
        if dense:
            f, g, H = small
            return float(f), np.array(g), GatheredCurvature(H)
        f, g = small
        return float(f), np.array(g), DistributedCurvature(self, parts, self.k, self.d)

    def value_grad_hessian(self, theta):
        """f, g and the Hessian: gathered (p, p) or kept on the workers (``curvature``);
        sub-sampled rows with ``hessian_sample``. One pass."""
        th = self._theta(theta)
        dense = self.curvature == "dense"
        return self._with_curvature(K.value_grad_hessian, (th, dense, *self._sample()),
                                    "Hessian")

    def hessian(self, theta):
        return self.value_grad_hessian(theta)[2]

    def majorizer(self, theta, order: str = "descending") -> Majorizer:
        """The Alg. 1 majorizer summed over the chunks (exact in value and gradient)."""
        th = self._theta(theta)
        f, g, C = self._with_curvature(K.majorizer, (th, order, self.curvature == "dense"),
                                       "majorizer")
        return Majorizer(th, f, g, C)

    def predict_proba(self, theta, X=None):
        """(t, n_classes) class probabilities at theta, a lazy dask array (X default: the
        training rows)."""
        theta = self._theta(theta)
        X = self.X if X is None else _row_blocks(self._import_da(), X)
        return X.map_blocks(K.probabilities, theta, self.n_classes, self.reference_class,
                            self.fit_intercept, dtype=np.float64,
                            name=f"zbound-probabilities-{self._token}-{next(self._names)}",
                            chunks=(X.chunks[0], (self.n_classes,)))

    @staticmethod
    def _import_da():
        return _import_dask()[1]

    def __repr__(self):
        return (f"DaskSoftmaxLoss(t={self.n_samples}, n_features={self.n_features}, "
                f"n_classes={self.n_classes}, chunks={self.n_chunks}, "
                f"curvature={self.curvature!r})")
