"""Benchmark records: the ``zbound bench`` JSON contract (DESIGN.md 4.2), written as it grows.

Every call to :meth:`RecordWriter.add` rewrites ``SUITE.json`` atomically, so an interrupted run
keeps every record already computed.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from pathlib import Path
from typing import Any

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


def machine_info() -> dict[str, Any]:
    """CPU count and library versions, recorded with every suite."""
    import numpy
    import scipy
    import sklearn

    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
    }
    try:
        import zbound

        info["zbound"] = zbound.__version__
    except Exception:  # pragma: no cover
        pass
    return info


def _clean(value: Any) -> Any:
    """Make a value JSON-safe: numpy scalars to Python, non-finite floats to None."""
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


class RecordWriter:
    """Collects records for one suite and keeps ``out/SUITE.json`` current after every record."""

    def __init__(self, suite: str, quick: bool, out: str | os.PathLike):
        self.suite = suite
        self.quick = bool(quick)
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.path = self.out / f"{suite}.json"
        self.records: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}
        self.machine = machine_info()
        self._flush()

    def add(self, **fields: Any) -> dict[str, Any]:
        """Add one record; missing optional fields get their neutral value."""
        record = {
            "peer": False,
            "default": False,
            "reached": False,
            "time_to_target_s": None,
            "evaluations": None,
            "final_objective": None,
            "target_objective": None,
            "metrics": {},
        }
        record.update(fields)
        missing = [k for k in ("task", "dataset", "setting", "method") if k not in record]
        if missing:
            raise ValueError(f"benchmark record lacks fields {missing}")
        if record["peer"] and record["default"]:
            raise ValueError("a peer method cannot be the library default")
        record = _clean(record)
        self.records.append(record)
        self._flush()
        return record

    def set_extra(self, key: str, value: Any) -> None:
        """Suite-level data that is not a per-method record (e.g. curves for plots)."""
        self.extra[key] = _clean(value)
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
            json.dump(self.to_dict(), fh, indent=1)
        os.replace(tmp, self.path)
