"""Fixtures of the data-set tests (the ``data`` marker itself is handled in tests/conftest.py)."""

import os
from pathlib import Path

import pytest

from zbound.datasets import _base


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
