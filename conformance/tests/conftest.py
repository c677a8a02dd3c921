"""The harness's own tests: its fake model APIs, model scripts, schema checker and command.

They import nothing of any agent (the suite checks agents; these check the suite). Run them
from the repository with ``pytest conformance/tests``, or from ``conformance/`` alone
(``pip install -e 'conformance[test]'``; ``conformance/pyproject.toml`` holds their settings).

Hypothesis runs derandomised: the same examples on every run and machine.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile("ci")


def pytest_configure(config: pytest.Config) -> None:
    # The suite's mark, made when acp_conformance.requirements is imported (--strict-markers).
    config.addinivalue_line("markers", "requirement(id, tier, summary): an ACP requirement")
