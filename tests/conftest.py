"""Shared test configuration.

Hypothesis runs under a fixed, derandomized profile so CI results are reproducible and no test
fails on a slow machine because of a per-example deadline. Select another profile with
``--hypothesis-profile`` (e.g. ``dev`` for fresh random examples while hunting bugs).

Skips raised outside the test's own file (scikit-learn's ``check_estimator`` raising
``SkipTest``, a skip in a fixture or a conftest) are reported at the test, with its id, instead
of at the line of pytest, scikit-learn or the conftest that raised them.

Slow tests are marked ``slow``; ``pytest -m "not slow"`` is the fast lane for development.
CI runs everything.
"""

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
