"""Shared test configuration.

Hypothesis runs under a fixed, derandomized profile so CI results are reproducible and no test
fails on a slow machine because of a per-example deadline. Select another profile with
``--hypothesis-profile`` (e.g. ``dev`` for fresh random examples while hunting bugs).
"""

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
