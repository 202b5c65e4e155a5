"""Tests marked ``data`` need the shared benchmark data; they are skipped without ZBOUND_DATA."""

import os
from pathlib import Path

import pytest

from zbound.datasets import _base


def _data_problem() -> str | None:
    value = os.environ.get("ZBOUND_DATA", "").strip()
    if not value:
        return "ZBOUND_DATA is not set (CI sets it to the data directory)"
    if not Path(value).is_dir():
        return f"ZBOUND_DATA={value!r} is not a directory"
    return None


@pytest.fixture(autouse=True)
def _skip_without_data(request):
    if request.node.get_closest_marker("data") is not None:
        problem = _data_problem()
        if problem is not None:
            pytest.skip(f"needs the shared benchmark data: {problem}")


@pytest.fixture
def real_data_dir() -> Path:
    """The shared data directory (only for tests marked ``data``)."""
    return Path(os.environ["ZBOUND_DATA"])


@pytest.fixture
def fresh_checksums():
    """Run a test with an empty checksum cache, and leave an empty one behind."""
    _base.clear_checksum_cache()
    yield
    _base.clear_checksum_cache()
