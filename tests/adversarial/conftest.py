"""The adversarial suite: ``nox -s adversarial`` (``-- --soak`` for the long run).

It runs only when asked for by path (``pytest tests/adversarial ...``, as the nox session does):
``pytest tests`` skips it, so the ``tests`` session keeps its speed and nothing runs twice.

Where the agent runs: a process where the process is the point (kill -9, its environment in
/proc, its RSS, its process tree, the loopback guard's fake DNS, ``iaccode serve``, faults put
on the process: :data:`PROCESS_MODULES`, :data:`PROCESS_TESTS`); in the test's process
otherwise (``tests/README.md``), with the loopback guard (``guard/sitecustomize.py``) applied
there while such an agent runs (:func:`_guard_in_process`).

Every test adds what it tried to ``figures`` (cases, faults injected, kills survived, load
held); at the end of the run they are merged into ``.adversarial/figures.json`` (per category;
a partial run refreshes only the categories it ran), which ``docs/reliability.md``
quotes. ``python -m tests.adversarial.figures`` prints them as that section's table.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIGURES = ROOT / ".adversarial" / "figures.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak",
        action="store_true",
        default=False,
        help="adversarial suite: the long run (more examples, kills, load time)",
    )


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


PROCESS_MODULES = frozenset(
    {
        "test_disk_faults",  # a disk (a mount, RLIMIT_FSIZE) under the agent's process
        "test_files_and_commands",  # what commands leave behind: the agent's process tree
        "test_load",  # the agent's RSS, from /proc
        "test_mcp_servers",  # the agent's RSS while a server floods it
        "test_path_races",  # a flipping process racing the agent's
        "test_persistence",  # kill -9
        "test_protocol",  # LineAgent: the synchronous client of a spawned agent
        "test_remote_server",  # iaccode serve
        "test_secrets",  # the agent's /proc/<pid>/environ, the seal at start-up
        "test_web_fetch",  # the guard's fake DNS, loaded into the agent's interpreter
    }
)
"""Modules whose agents are spawned ``iaccode acp`` processes."""

PROCESS_TESTS = frozenset(
    {
        "test_regression_invalid_list_cursor_is_bad_params",  # LineAgent, as test_protocol
        "test_regression_deeply_nested_params_are_bad_params",
        "test_regression_lone_surrogates_are_sent_escaped",
        "test_regression_surrogate_in_a_title_no_longer_hangs_the_agent",
        "test_regression_session_in_a_non_utf8_folder_does_not_break_listing",
        "test_regression_jobs_in_their_own_process_group_do_not_outlive_the_call",  # a tree
        "test_a_yaml_bomb_does_not_grow_the_agent",  # the agent's peak RSS, from /proc
    }
)
"""Tests of the other modules whose agents are processes."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents and (
            item.path.stem in PROCESS_MODULES
            or getattr(item, "originalname", item.name) in PROCESS_TESTS
        ):
            item.add_marker(pytest.mark.process)


_GUARD: Callable[[str, tuple[object, ...]], None] | None = None


def _load_guard() -> Callable[[str, tuple[object, ...]], None]:
    """The guard's audit hook, loaded without adding it: it is added once, below, behind a
    check that an agent of this suite is running in the process."""
    hooks: list[Callable[[str, tuple[object, ...]], None]] = []
    add = sys.addaudithook
    sys.addaudithook = hooks.append  # type: ignore[assignment]
    try:
        runpy.run_path(
            str(HERE / "guard" / "sitecustomize.py"), init_globals={"__name__": "adversarial_guard"}
        )
    finally:
        sys.addaudithook = add
    (hook,) = hooks
    return hook


def _guard_in_process(event: str, args: tuple[object, ...]) -> None:
    """The loopback guard on an agent in the test's process: while it runs, ``os.environ`` is
    its environment (``tests/support/in_process.py``), whose ``IAC_ADV_GUARD_LOG`` says the
    agent is guarded and where refusals go. (A spawned agent loads the guard itself, through
    ``PYTHONPATH``.) The test's own connections, made meanwhile, are loopback too."""
    if event in ("socket.connect", "socket.getaddrinfo"):
        log = os.environ.get("IAC_ADV_GUARD_LOG")
        if log and _GUARD is not None:
            _GUARD.__globals__["_LOG"] = log
            _GUARD(event, args)


def pytest_configure(config: pytest.Config) -> None:
    global _GUARD
    if _requested(config) and _GUARD is None:  # an audit hook cannot be taken back
        _GUARD = _load_guard()
        sys.addaudithook(_guard_in_process)


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


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Under xdist (``nox -s adversarial`` runs two workers, a module on one worker), each
    worker's figures reach the run here, where the file is written."""
    for category, values in json.loads(node.workeroutput.get(_WORKER_FIGURES, "{}")).items():
        _FIGURES.data[category].update(values)


_WORKER_FIGURES = "adversarial_figures"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its counts go to the controller
        workeroutput[_WORKER_FIGURES] = json.dumps(_FIGURES.data)
        return
    if not _FIGURES.outcomes:
        return
    try:
        existing = json.loads(FIGURES.read_text())
    except (OSError, ValueError):
        existing = {}
    categories = existing.get("categories", {})
    for category, outcomes in _FIGURES.outcomes.items():
        categories[category] = {**_FIGURES.data.get(category, {}), "tests": dict(outcomes)}
    existing.update(
        {
            "run": {
                "finished": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "soak": soak(session.config),
                "seconds": round(time.monotonic() - _FIGURES.started, 1),
                "exit_status": int(exitstatus),
                "categories_run": sorted(_FIGURES.outcomes),
            },
            "categories": dict(sorted(categories.items())),
        }
    )
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
