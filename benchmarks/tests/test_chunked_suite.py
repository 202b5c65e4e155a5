"""The ``chunked`` suite: the factored, chunked majorizer stays within its stated memory bound
and far below the explicit (t, n, n) representation; records follow the contract."""

from __future__ import annotations

import pytest

from zbound_benchmarks.records import BenchRecord
from zbound_benchmarks.runner import run_suite


@pytest.mark.slow
def test_chunked_suite_memory(tmp_path):
    doc = run_suite("chunked", quick=True, out=tmp_path, show_progress=False)
    recs = [r for r in doc["records"] if r["task"] == "majorizer-memory"]
    for r in recs:
        BenchRecord(**r)
    factored = [r for r in recs if r["method"].startswith("factored-bound")]
    explicit = [r for r in recs if r["method"] == "explicit-bound"]
    assert len(factored) == 4 and len(explicit) == 1
    assert all(r["metrics"]["within_bound"] for r in factored)
    small = min(factored, key=lambda r: r["metrics"]["chunk_size"])
    assert small["metrics"]["peak_memory_mb"] * 4 < explicit[0]["metrics"]["peak_memory_mb"]
    assert (tmp_path / "chunked.md").exists()
