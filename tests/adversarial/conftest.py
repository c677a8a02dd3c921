"""The adversarial suite: ``nox -s adversarial`` (``-- --soak`` for the long run).

It runs only when asked for by path (``pytest tests/adversarial ...``, as the nox session does):
``pytest tests`` skips it, so the ``tests`` session keeps its speed and nothing runs twice.

Every test adds what it tried to ``figures`` (cases, faults injected, kills survived, load
held); at the end of the run they are merged into ``.adversarial/figures.json`` (per category;
a partial run refreshes only the categories it ran), which the README's Reliability section
quotes. ``python -m tests.adversarial.figures`` prints them as that section's table.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIGURES = ROOT / ".adversarial" / "figures.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak", action="store_true", default=False,
                     help="adversarial suite: the long run (more examples, kills, load time)")


def _requested(config: pytest.Config) -> bool:
    for arg in config.args:
        path = Path(arg.split("::", 1)[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if HERE in collection_path.resolve().parents and not _requested(config):
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every agent here is a real ``iaccode acp`` process (kill -9, faults, load)."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.process)


def soak(config: pytest.Config) -> bool:
    return bool(config.getoption("--soak", default=False))


class Figures:
    """Counters per category (a test module), merged into ``.adversarial/figures.json``."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = defaultdict(dict)
        self.outcomes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.started = time.monotonic()

    def add(self, category: str, name: str, amount: int | float = 1) -> None:
        self.data[category][name] = self.data[category].get(name, 0) + amount

    def set(self, category: str, name: str, value: Any) -> None:
        self.data[category][name] = value

    def most(self, category: str, name: str, value: int | float) -> None:
        self.data[category][name] = max(self.data[category].get(name, value), value)


_FIGURES = Figures()


@pytest.fixture(scope="session")
def figures() -> Figures:
    return _FIGURES


@pytest.fixture(scope="session")
def soak_run(request: pytest.FixtureRequest) -> bool:
    return soak(request.config)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        category = Path(report.nodeid.split("::", 1)[0]).stem.removeprefix("test_")
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        _FIGURES.outcomes[category][outcome] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _FIGURES.outcomes:
        return
    try:
        existing = json.loads(FIGURES.read_text())
    except (OSError, ValueError):
        existing = {}
    categories = existing.get("categories", {})
    for category, outcomes in _FIGURES.outcomes.items():
        categories[category] = {**_FIGURES.data.get(category, {}), "tests": dict(outcomes)}
    existing.update({
        "run": {
            "finished": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "soak": soak(session.config),
            "seconds": round(time.monotonic() - _FIGURES.started, 1),
            "exit_status": int(exitstatus),
            "categories_run": sorted(_FIGURES.outcomes),
        },
        "categories": dict(sorted(categories.items())),
    })
    FIGURES.parent.mkdir(exist_ok=True)
    FIGURES.write_text(json.dumps(existing, indent=2, sort_keys=False) + "\n")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """The project folder: ``<tmp>/x/proj`` (with a sibling ``proj-evil`` for some tests)."""
    path = tmp_path / "x" / "proj"
    path.mkdir(parents=True)
    yield path
