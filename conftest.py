"""Shared test configuration.

Hypothesis runs under a fixed, derandomized profile so CI results are reproducible and no test
fails on a slow machine because of a per-example deadline. Select another profile with
``--hypothesis-profile`` (e.g. ``dev`` for fresh random examples while hunting bugs).

Skips raised outside the test's own file (scikit-learn's ``check_estimator`` raising
``SkipTest``, a skip in a fixture or a conftest) are reported at the test, with its id, instead
of at the line of pytest, scikit-learn or the conftest that raised them.

Slow tests are marked ``slow``; ``pytest -m "not slow"`` is the fast lane for development.
CI runs everything.

A test that reaches a feature of an extra that is not installed (CVXPY's Ising bounds, the
benchmark runner's tables and figures) skips with the extra's install command as the reason.

Tests that read the benchmark data are marked ``data``: they skip, with the reason, unless
``ZBOUND_DATA`` names a directory. Every other test runs with ``ZBOUND_DATA`` removed from the
environment and ``ZBOUND_CACHE`` (where ``zbound data fetch`` puts the data by default) pointing
at an empty directory, as on a new user's machine, so a test that reads the data without the
marker fails in CI instead of only on machines without the data.

Tests marked ``numerics`` are the ones whose outcome depends on rounding (factorizations of
singular or ill-conditioned matrices, float32 against float64, tolerances near the solvers'
stopping rules, underflow). CI runs the whole suite under one OpenBLAS kernel family and these
again under another (``OPENBLAS_CORETYPE``). Their tolerances follow the rule of
``tests/_tolerance.py``.
"""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile("ci")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Attribute a skip raised in another file (library, fixture, conftest) to the test."""
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        path, _, reason = report.longrepr
        test_file = Path(str(item.path)).resolve()
        if Path(str(path)).resolve() != test_file:
            _, lineno, _ = item.reportinfo()
            reason = reason.removeprefix("Skipped: ")
            report.longrepr = (str(item.path), (lineno or 0) + 1,
                               f"{item.name}: {reason}")
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test that reaches a feature of an extra that is not installed skips, with the
    extra's install command as the reason (zbound.utils.extras.require's ImportError)."""
    try:
        return (yield)
    except ImportError as exc:
        if "pip install 'zbound[" in str(exc):
            pytest.skip(str(exc))
        raise


def _data_problem() -> str | None:
    value = os.environ.get("ZBOUND_DATA", "").strip()
    if not value:
        return "ZBOUND_DATA is not set (CI sets it to the data directory)"
    if not Path(value).is_dir():
        return f"ZBOUND_DATA={value!r} is not a directory"
    return None


@pytest.fixture(autouse=True)
def _benchmark_data(request, monkeypatch, tmp_path_factory):
    """Skip ``data`` tests without the data; hide the data from every other test."""
    if request.node.get_closest_marker("data") is not None:
        problem = _data_problem()
        if problem is not None:
            pytest.skip(f"needs the benchmark data: {problem}")
    else:
        monkeypatch.delenv("ZBOUND_DATA", raising=False)
    # never the user's fetched data (the loaders' fallback when ZBOUND_DATA is unset)
    monkeypatch.setenv("ZBOUND_CACHE", str(tmp_path_factory.getbasetemp() / "no-fetched-data"))
