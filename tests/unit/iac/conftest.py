"""Hypothesis profiles of the command reader's tests: ``reader-ci`` (derandomised: the same
examples in every run, so CI never fails on a draw nobody can replay) unless
``IAC_HYPOTHESIS=reader-fuzz`` (random seeds, many more examples: ``nox -s fuzz``)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "reader-ci",
    derandomize=True,
    max_examples=300,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "reader-fuzz", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
