"""Benchmark records: the ``zbound bench`` JSON contract, checked on write, written as it grows.

``SUITE.json`` is one JSON object::

    {"suite": "logreg-small", "quick": true, "machine": {...}, "records": [...], "extra": {...}}

- ``suite`` (str), ``quick`` (bool: the reduced ``--quick`` run);
- ``machine``: CPU count, platform and library versions (:func:`machine_info`);
- ``records``: one :class:`BenchRecord` per (task, dataset, setting, method);
- ``extra`` (optional): suite-level data that is not a per-method record (curves for plots,
  configuration, elapsed time), see :meth:`RecordWriter.set_extra`.

Every call to :meth:`RecordWriter.add` validates the record and then rewrites ``SUITE.json``
atomically (temporary file + rename), so an interrupted run keeps every record already computed
and never leaves a half-written file. :func:`read_suite` loads a file back and checks it against
the same contract.
"""

from __future__ import annotations

import difflib
import json
import math
import numbers
import os
import platform
import sys
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: Fields every record has in ``SUITE.json`` (in this order).
REQUIRED_FIELDS = (
    "task",
    "dataset",
    "setting",
    "method",
    "peer",
    "default",
    "reached",
    "time_to_target_s",
    "evaluations",
    "final_objective",
    "target_objective",
    "metrics",
)
#: Fields a caller must give; the others have neutral defaults (see :class:`BenchRecord`).
KEY_FIELDS = ("task", "dataset", "setting", "method")
#: Top-level keys of ``SUITE.json``.
DOC_FIELDS = ("suite", "quick", "machine", "records", "extra")
#: Metric names with a fixed meaning (use them where they apply). Each is a real number or null;
#: ``test_accuracy`` and ``f1`` lie in [0, 1]; ``epochs_to_target``, ``peak_memory_mb`` and
#: ``iterations`` are >= 0. Other metric names are free (suite-specific), JSON values.
STANDARD_METRICS = (
    "test_loglik",
    "test_accuracy",
    "f1",
    "epochs_to_target",
    "bound",
    "exact",
    "peak_memory_mb",
    "iterations",
)
_UNIT_METRICS = ("test_accuracy", "f1")
_NONNEGATIVE_METRICS = ("epochs_to_target", "peak_memory_mb", "iterations")
#: Longest task / dataset / setting / method string accepted (they are table labels).
MAX_LABEL_CHARS = 120
#: What a second record with the same (task, dataset, setting, method) gets: "error" (ValueError)
#: or "warn" (:class:`DuplicateRecordWarning`, the record is kept). The contract is one record per
#: key.
DUPLICATES = "error"


class DuplicateRecordWarning(UserWarning):
    """A suite wrote two records for one (task, dataset, setting, method)."""


def _duplicate(text: str, policy: str, stacklevel: int) -> None:
    message = (f"duplicate benchmark record {text}: there is one record per (task, dataset, "
               "setting, method)")
    if policy == "error":
        raise ValueError(message)
    warnings.warn(message, DuplicateRecordWarning, stacklevel=stacklevel + 1)


def _cpu_model() -> str | None:
    """The CPU's model name (Linux: /proc/cpuinfo; elsewhere what ``platform`` knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def _blas() -> str | None:
    """The BLAS libraries loaded (NumPy's and SciPy's wheels each bring one): library,
    version, the kernel family it picked (OpenBLAS chooses its kernels by CPU, and rounding
    and speed differ between them) and the package that loaded it."""
    try:
        import scipy.linalg  # noqa: F401  (loads SciPy's BLAS, which the solvers use)
        from threadpoolctl import threadpool_info

        found = []
        for lib in threadpool_info():
            if lib.get("user_api") != "blas":
                continue
            kern = lib.get("architecture")
            where = Path(lib.get("filepath") or "").parent.name.removesuffix(".libs")
            text = (f"{lib.get('internal_api')} {lib.get('version')}"
                    + (f", {kern} kernels" if kern else "") + (f" ({where})" if where else ""))
            if text not in found:
                found.append(text)
        return "; ".join(found) or None
    except Exception:  # pragma: no cover - informational only
        return None


def machine_info() -> dict[str, Any]:
    """CPU, BLAS, library versions and the UTC date, recorded with every suite."""
    import datetime

    import numpy
    import scipy
    import sklearn

    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpu": _cpu_model(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "blas": _blas(),
        "kernels": _kernels(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    try:
        import zbound

        info["zbound"] = zbound.__version__
    except Exception:  # pragma: no cover
        pass
    return info


def _kernels() -> str:
    """Which chain kernels run: "numba X.Y" (compiled) or "numpy"."""
    from zbound.structured import compiled

    if not compiled.available():
        return "numpy"
    import numba

    return f"numba {numba.__version__}"


def _clean(value: Any) -> Any:
    """Make a value JSON-safe: numpy scalars/arrays to Python, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if hasattr(value, "tolist"):
        return _clean(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _scalar(value: Any) -> Any:
    """numpy scalars (np.float64, np.int64, np.bool_) to the Python scalar; others unchanged."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _checked_metrics(metrics: Any, where: str) -> dict[str, Any]:
    """``metrics`` made JSON-safe, the standard metrics checked (numbers in their ranges)."""
    if not isinstance(metrics, dict):
        raise TypeError(f"{where}: metrics must be a dict, got {type(metrics).__name__}")
    bad_keys = [k for k in metrics if not isinstance(k, str)]
    if bad_keys:
        raise TypeError(f"{where}: metrics keys must be str, got {bad_keys!r}")
    metrics = _clean(metrics)
    for name in STANDARD_METRICS:
        value = metrics.get(name)
        if value is None:
            continue
        if not _is_real(value):
            raise TypeError(f"{where}: metrics[{name!r}] must be a number or None, got "
                            f"{type(value).__name__} {value!r}")
        if name in _UNIT_METRICS and not 0.0 <= value <= 1.0:
            raise ValueError(f"{where}: metrics[{name!r}] must lie in [0, 1], got {value!r}")
        if name in _NONNEGATIVE_METRICS and value < 0:
            raise ValueError(f"{where}: metrics[{name!r}] must be >= 0, got {value!r}")
    try:
        json.dumps(metrics, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: metrics are not JSON-serializable: {exc}") from None
    return metrics


@dataclass(frozen=True)
class BenchRecord:
    """One benchmark result: one method on one (task, dataset, setting).

    Construction validates the whole contract (``TypeError`` for a wrong type, ``ValueError``
    for a wrong value); numpy scalars are accepted and stored as Python scalars.

    task, dataset, setting, method
        Non-empty one-line strings of at most 120 characters. ``setting`` is short, e.g.
        ``"lambda=100"``; ``method`` is the library's method name or the peer's (e.g.
        ``"sklearn-lbfgs"``). Required.
    peer
        True for a method that is not the library's own. Default False.
    default
        True for the method a user gets without choosing one: library methods only, so never
        together with ``peer``. Default False.
    reached
        Whether the method reached the target. Default False.
    time_to_target_s
        Median wall seconds to the target over the repeats: finite and >= 0, or None. A record
        that reached a given target (``reached`` and ``target_objective`` not None) must give
        it: "reached" without a time is what a run that forgot to time looks like. Records
        without a target (a bound value, an iteration count) may omit it. A time with
        ``reached`` False is accepted: some suites use ``reached`` as a validity flag (e.g. "the
        bound held") for a run that was timed to its end.
    evaluations
        Bound / function evaluations to the target: an int >= 0, or None if not counted. A
        suite that averages over several random draws may give the mean count as a float.
    final_objective, target_objective
        Real numbers or None; a non-finite value (NaN, inf) is recorded as None, since JSON has
        no NaN.
    metrics
        Dict with str keys and JSON-serializable values (numpy arrays and scalars are
        converted; non-finite floats become null). The names in :data:`STANDARD_METRICS`
        (``test_loglik``, ``test_accuracy``, ``f1``, ``epochs_to_target``, ``bound``,
        ``exact``, ``peak_memory_mb``, ``iterations``) are used where they apply and must be
        real numbers or None (accuracy and F1 in [0, 1]; epochs, memory and iterations >= 0).
    """

    task: str
    dataset: str
    setting: str
    method: str
    peer: bool = False
    default: bool = False
    reached: bool = False
    time_to_target_s: float | None = None
    evaluations: int | float | None = None
    final_objective: float | None = None
    target_objective: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in KEY_FIELDS:
            value = _scalar(getattr(self, name))
            if not isinstance(value, str):
                raise TypeError(f"record field {name!r} must be a str, got "
                                f"{type(value).__name__} {value!r}")
            if not value.strip():
                raise ValueError(f"record field {name!r} must not be empty")
            if len(value) > MAX_LABEL_CHARS or not value.isprintable():
                raise ValueError(f"record field {name!r} must be a short one-line label "
                                 f"(<= {MAX_LABEL_CHARS} printable characters), got {value!r}")
            put(name, value)
        where = f"record {self.key_text()}"
        for name in ("peer", "default", "reached"):
            value = _scalar(getattr(self, name))
            if not isinstance(value, bool):
                raise TypeError(f"{where}: field {name!r} must be a bool, got "
                                f"{type(value).__name__} {value!r}")
            put(name, value)
        if self.peer and self.default:
            raise ValueError(f"{where}: a peer method cannot be the library default "
                             "(peer and default both true)")

        t = _scalar(self.time_to_target_s)
        if t is not None:
            if not _is_real(t):
                raise TypeError(f"{where}: time_to_target_s must be a number of seconds or "
                                f"None, got {type(t).__name__} {t!r}")
            t = float(t)
            if not math.isfinite(t) or t < 0:
                raise ValueError(f"{where}: time_to_target_s must be finite and >= 0, got {t!r}")
        put("time_to_target_s", t)

        n = _scalar(self.evaluations)
        if n is not None:
            if not _is_real(n):
                raise TypeError(f"{where}: evaluations must be an int count or None, got "
                                f"{type(n).__name__} {n!r}")
            if not isinstance(n, int):
                n = float(n)
                if not math.isfinite(n):
                    raise ValueError(f"{where}: evaluations must be finite, got {n!r}")
            if n < 0:
                raise ValueError(f"{where}: evaluations must be >= 0, got {n!r}")
        put("evaluations", n)

        for name in ("final_objective", "target_objective"):
            value = _scalar(getattr(self, name))
            if value is not None:
                if not _is_real(value):
                    raise TypeError(f"{where}: {name} must be a number or None, got "
                                    f"{type(value).__name__} {value!r}")
                value = float(value)
                if not math.isfinite(value):
                    value = None
            put(name, value)

        if self.reached and self.target_objective is not None and self.time_to_target_s is None:
            raise ValueError(f"{where}: reached the target {self.target_objective!r} but gives no "
                             "time_to_target_s (records without a target may omit the time)")

        put("metrics", _checked_metrics(self.metrics, where))

    @property
    def key(self) -> tuple[str, str, str, str]:
        """(task, dataset, setting, method): unique within a suite's records."""
        return (self.task, self.dataset, self.setting, self.method)

    def key_text(self) -> str:
        return "/".join(str(getattr(self, k)) for k in KEY_FIELDS)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchRecord:
        """A record from keyword fields (``RecordWriter.add``) or a JSON object.

        Rejects unknown fields (with the closest known name, to catch typos) and missing
        required ones, then validates as the constructor does.
        """
        if not isinstance(data, dict):
            raise TypeError(f"a benchmark record must be a dict, got {type(data).__name__}")
        unknown = [k for k in data if k not in REQUIRED_FIELDS]
        if unknown:
            hints = []
            for k in unknown:
                close = difflib.get_close_matches(str(k), REQUIRED_FIELDS, n=1)
                hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ValueError(f"benchmark record has unknown fields {', '.join(hints)}; the "
                             f"fields are {', '.join(REQUIRED_FIELDS)}")
        missing = [k for k in KEY_FIELDS if k not in data]
        if missing:
            raise ValueError(f"benchmark record lacks fields {missing} (required: "
                             f"{', '.join(KEY_FIELDS)})")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this record (fields in :data:`REQUIRED_FIELDS` order)."""
        out = asdict(self)
        return {k: out[k] for k in REQUIRED_FIELDS}



class RecordWriter:
    """Collects records for one suite and keeps ``out/SUITE.json`` current after every record."""

    def __init__(self, suite: str, quick: bool, out: str | os.PathLike,
                 duplicates: str | None = None):
        self.duplicates = DUPLICATES if duplicates is None else duplicates
        if self.duplicates not in ("error", "warn"):
            raise ValueError(f"duplicates must be 'error' or 'warn', got {duplicates!r}")
        if not isinstance(suite, str) or not suite:
            raise TypeError(f"suite name must be a non-empty str, got {suite!r}")
        self.suite = suite
        self.quick = bool(quick)
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.path = self.out / f"{suite}.json"
        self.records: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}
        self.machine = machine_info()
        self._keys: set[tuple[str, str, str, str]] = set()
        self._flush()

    def add(self, **fields: Any) -> dict[str, Any]:
        """Validate one record (see :class:`BenchRecord`), append it, rewrite the JSON.

        Fields not given get their neutral value (peer/default/reached False, times, counts and
        objectives None, metrics {}). Returns the record as written. A second record with the
        same (task, dataset, setting, method) raises ValueError (``duplicates="error"``) or
        warns (``"warn"``, see :data:`DUPLICATES`).
        """
        return self._append(BenchRecord.from_dict(fields))

    def add_record(self, record: BenchRecord) -> dict[str, Any]:
        """Append an already built :class:`BenchRecord`; returns its JSON object."""
        if not isinstance(record, BenchRecord):
            raise TypeError(f"expected a BenchRecord, got {type(record).__name__}")
        return self._append(record)

    def _append(self, record: BenchRecord) -> dict[str, Any]:
        if record.key in self._keys:
            # warn at the suite's line that wrote the record (add / add_record -> _append)
            _duplicate(record.key_text(), self.duplicates, stacklevel=3)
        doc = record.to_dict()
        self.records.append(doc)
        self._keys.add(record.key)
        self._flush()
        return doc

    def set_extra(self, key: str, value: Any) -> None:
        """Suite-level data that is not a per-method record (e.g. curves for plots)."""
        if not isinstance(key, str):
            raise TypeError(f"extra key must be a str, got {type(key).__name__}")
        value = _clean(value)
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"extra[{key!r}] is not JSON-serializable: {exc}") from None
        self.extra[key] = value
        self._flush()

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "suite": self.suite,
            "quick": self.quick,
            "machine": self.machine,
            "records": self.records,
        }
        if self.extra:
            doc["extra"] = self.extra
        return doc

    def _flush(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        with open(tmp, "w") as fh:
            json.dump(self.to_dict(), fh, indent=1, allow_nan=False)
        os.replace(tmp, self.path)


def validate_doc(doc: Any, duplicates: str | None = None) -> list[BenchRecord]:
    """Check a whole ``SUITE.json`` object; returns its records as :class:`BenchRecord`.

    ``duplicates``: "error" or "warn" for repeated (task, dataset, setting, method) keys
    (default :data:`DUPLICATES`).
    """
    duplicates = DUPLICATES if duplicates is None else duplicates
    if not isinstance(doc, dict):
        raise TypeError(f"a suite document must be a JSON object, got {type(doc).__name__}")
    unknown = [k for k in doc if k not in DOC_FIELDS]
    if unknown:
        raise ValueError(f"suite document has unknown keys {unknown}; the keys are "
                         f"{', '.join(DOC_FIELDS)}")
    missing = [k for k in DOC_FIELDS[:4] if k not in doc]
    if missing:
        raise ValueError(f"suite document lacks keys {missing}")
    if not isinstance(doc["suite"], str) or not isinstance(doc["quick"], bool):
        raise TypeError("suite document: 'suite' must be a str and 'quick' a bool")
    for name in ("machine", "extra"):
        if not isinstance(doc.get(name, {}), dict):
            raise TypeError(f"suite document: {name!r} must be an object")
    if not isinstance(doc["records"], list):
        raise TypeError("suite document: 'records' must be a list")
    records = [BenchRecord.from_dict(r) for r in doc["records"]]
    seen: set[tuple[str, str, str, str]] = set()
    for r in records:
        if r.key in seen:
            _duplicate(r.key_text(), duplicates, stacklevel=2)
        seen.add(r.key)
    return records


def read_suite(path: str | os.PathLike, duplicates: str | None = None) -> dict[str, Any]:
    """Load ``SUITE.json`` (or a gzipped ``SUITE.json.gz``) and check it against the contract
    (raises as :func:`validate_doc`)."""
    path = Path(path)
    if path.suffix == ".gz":
        import gzip

        doc = json.loads(gzip.decompress(path.read_bytes()).decode())
    else:
        doc = json.loads(path.read_text())
    validate_doc(doc, duplicates)
    return doc
