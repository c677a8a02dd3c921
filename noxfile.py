"""Daily commands: ``nox`` runs the default sessions, what every change must pass and what CI
(``.ci/run``) runs; the slow ones are named: ``bench``, ``fuzz``, ``adversarial -- --soak``.

Default (``nox``), in this order:

- ``tests-3.11``: every test in ``tests/`` (but ``adversarial/``) and the conformance
  harness's own (``conformance/tests``), three workers (:data:`WORKERS`): unit,
  end-to-end with the agent in the test's process, and the ``process`` tier (spawned ``iaccode
  acp`` and ``iaccode serve``: signals, exit statuses, start-up, kill -9, the commands, the
  official SDKs spawning the agent; ``tests/README.md``), which goes first.
- ``tests-3.12``: the unit tier; ``tests-3.13``: the unit and in-process tiers. What another
  Python changes (the language, the standard library: json's messages differ on 3.13) shows in
  the unit tier; the in-process tier on the newest Python checks the libraries there; the
  process tier runs the same code started another way.
- ``conformance``, ``conformance_openai``, ``conformance_remote``: the ACP conformance suite on
  ``iaccode acp`` with each model API (three workers), and on ``iaccode serve`` (one server).
  Every test spawns its agents (the suite is agent-agnostic): ~2 s of CPU each. They run in
  ``tests-3.11``'s environment (as do ``fuzz`` and ``remote_clients``: :class:`_Shared`), so a
  fresh clone builds six environments, not nine.
- ``adversarial``: three workers, a module on each; agents in-process but where the process is
  the point (``tests/adversarial/conftest.py``). Half a minute of it is the load test by design.
- ``lint``, ``typecheck``.

Measured (``.ci/run`` on a fresh clone, 2026-12-02, a quiet 2-core machine, the environments
made with uv): 10.5 minutes in all (was 14 with pip and two workers). tests-3.11 2 min (pytest
119 s), tests-3.12 40 s, tests-3.13 1.5 min, conformance 51 s, conformance_openai 34 s,
conformance_remote 30 s, adversarial 4 min (pytest 217 s), lint 1 s, typecheck 33 s. The
whole run takes 1,008 s of CPU (856 user, 152 system), so no order of it on two cores ends in
under 8.4 minutes: the issue's 5-minute target would need 40% less CPU, which only leaving
coverage out gives (the process tier, the conformance suites and the adversarial suite spawn
agents by design, an ``iaccode acp`` costing 0.25 s of CPU to answer and 1.2 s more once it
has preloaded the model SDK; the adversarial suite's kill -9 and load tests are long by
design). What moved it: agents in the test's process (the in-process tier; ``iaccode serve``
too), one environment for the sessions that install the same, uv, a third worker; later, the
preload importing with the garbage collector off (2.5 s of CPU to 1.6 an agent with the model
SDK) and the terminal's supervisor without trio (0.35 s to 0.15 a command). Another machine of
the same kind, where ``import anthropic`` takes 1.9 s of CPU, took 23 minutes for the same run.

Python 3.11, 3.12 and 3.13 (``pyproject.toml``: ``>=3.11``): nox finds each on PATH or as
pyenv's selected version; one pyenv has installed but not selected is put on PATH here (this
machine's image has 3.11.7, 3.12.1 and 3.13.0, 3.11 selected). A missing one fails the run
(``error_on_missing_interpreters``); ``.ci/run`` checks first.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import nox
from nox.virtualenv import HAS_UV, UV, VirtualEnv

nox.options.sessions = [
    "tests",
    "conformance",
    "conformance_openai",
    "conformance_remote",
    "adversarial",
    "lint",
    "typecheck",
]
nox.options.reuse_existing_virtualenvs = True
# uv makes an environment and installs the project in ~3 s of CPU where venv and pip take ~20
# (six environments on a fresh clone); virtualenv and pip where uv is missing.
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.error_on_missing_interpreters = True

PYTHON = "3.11"
"""The Python of the sessions that run once: the oldest one supported."""
WORKERS = "3"
"""pytest-xdist workers of the test sessions (fuzz: 2). Three on two cores: a worker waiting
(an agent starting, a timeout running out, a command) leaves its core to the others. Measured
2026-12-02 on a quiet 2-core machine: tests-3.11 142 s with 2, 110 with 3, 111 with 4;
adversarial 247, 191, 204; conformance 55, 50."""
PYTHONS = ["3.11", "3.12", "3.13"]
TIERS = {
    "3.11": ["tests", "conformance/tests"],
    "3.12": ["-m", "not process", "tests/unit", "conformance/tests"],
    # The remote server's tests ran in the process tier (3.11 only) until iaccode serve ran
    # in the test's process; kept to 3.11 (about 23 s of CPU on 3.13, measured 2026-12-02).
    "3.13": [
        "-m",
        "not process",
        "--ignore=tests/e2e/test_remote.py",
        "--ignore=tests/e2e/test_remote_sdks.py",
        "tests",
        "conformance/tests",
    ],
}
"""What ``tests-X.Y`` runs (the module docstring says why); ``conformance/tests`` are the
harness's own tests (its fakes, scripts, schema checker, command), unit tests on every Python."""


def _release(path: Path) -> tuple[int, ...]:
    """(3, 12, 1) for ``.../versions/3.12.1/bin/python3.12``; () for a name that is not one."""
    name = path.parent.parent.name
    return tuple(int(part) for part in name.split(".")) if name.replace(".", "").isdigit() else ()


def _put_pyenv_pythons_on_path(versions: list[str]) -> None:
    """For each version with no working ``pythonX.Y`` on PATH (a pyenv shim of a version not
    selected fails), the newest pyenv build of it goes first on PATH."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    for version in versions:
        found = shutil.which(f"python{version}")
        if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
            continue
        builds = sorted(
            (p for p in root.glob(f"{version}.*/bin/python{version}") if _release(p)), key=_release
        )
        if builds:
            os.environ["PATH"] = f"{builds[-1].parent}{os.pathsep}{os.environ.get('PATH', '')}"


_put_pyenv_pythons_on_path(PYTHONS)

DECLARED = ("pyproject.toml", "conformance/pyproject.toml")
"""What the installs depend on (the project and the harness are installed editable)."""


def _install(session: nox.Session, *args: str) -> None:
    """``session.install(*args)``, skipped when the session's environment was made with the
    same arguments and the same ``pyproject.toml`` files (editable installs: a code change
    needs none). Re-installing costs about 13 s of CPU a session. Python may write bytecode
    in the session (this machine sets PYTHONDONTWRITEBYTECODE): else every spawned agent and
    every pytest worker compiles the project and rewrites the tests' asserts again."""
    session.env["PYTHONDONTWRITEBYTECODE"] = None
    if not _installed(session, Path(session.virtualenv.location), args):
        session.install(*args)
        _stamp(Path(session.virtualenv.location), args)


def _digest(args: tuple[str, ...]) -> str:
    digest = hashlib.sha256("\0".join(args).encode())
    for name in DECLARED:
        digest.update(Path(name).read_bytes())
    return digest.hexdigest()


def _installed(session: nox.Session, location: Path, args: tuple[str, ...]) -> bool:
    stamp = location / ".installed"
    if stamp.exists() and stamp.read_text() == _digest(args):
        session.log("installed already: %s", " ".join(args))
        return True
    return False


def _stamp(location: Path, args: tuple[str, ...]) -> None:
    (location / ".installed").write_text(_digest(args))


TEST_INSTALL = ("-e", ".[test]", "-e", "./conformance")
"""What the test sessions install. The conformance sessions need a part of it (the project and
the harness), ``fuzz`` and ``remote_clients`` all of it: they run in the environment of
``tests-3.11`` (:class:`_Shared`) instead of one each, which a fresh clone would build and
install (about 15 s of CPU each)."""

SHARED_ENV = Path(".nox") / "tests-3-11"
"""The environment of ``tests-3.11`` (nox's name for it under the default ``--envdir``)."""


class _Shared:
    """The environment of ``tests-3.11`` for a session declared ``venv_backend="none"``: made
    as nox makes it when ``tests-3.11`` has not run yet (nox reuses it then), installed with
    :data:`TEST_INSTALL` once (the same stamp as ``tests-3.11``'s); its programs run by path."""

    def __init__(self, session: nox.Session) -> None:
        location = SHARED_ENV
        self.bin = str(location.resolve() / "bin")
        # The interpreter is looked up as nox does for its own (a missing one fails the run:
        # error_on_missing_interpreters).
        backend = "uv" if HAS_UV else "virtualenv"
        VirtualEnv(
            str(location), interpreter=PYTHON, reuse_existing=True, venv_backend=backend
        ).create()
        session.env["PYTHONDONTWRITEBYTECODE"] = None
        session.env["VIRTUAL_ENV"] = str(location.resolve())
        session.env["PATH"] = f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"
        if not _installed(session, location, TEST_INSTALL):
            installer = [UV, "pip"] if backend == "uv" else [f"{self.bin}/pip"]
            session.run(*installer, "install", *TEST_INSTALL, external=True)
            _stamp(location, TEST_INSTALL)
        self.session = session

    def run(self, program: str, *args: str, **kwargs: Any) -> None:
        self.session.run(f"{self.bin}/{program}", *args, **kwargs)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Unit and end-to-end tests (the real server against fake model APIs), three at a time;
    which tiers on which Python: :data:`TIERS`. ``tests-3.11``'s environment is
    :class:`_Shared`."""
    _install(session, *TEST_INSTALL)
    # worksteal: a worker that runs out takes queued tests from another (the process tier,
    # put first by tests/conftest.py, holds the long ones).
    session.run(
        "pytest",
        "-n",
        WORKERS,
        "--dist",
        "worksteal",
        *TIERS[str(session.python)],
        *session.posargs,
    )


@nox.session(python=PYTHON, venv_backend="none")
def fuzz(session: nox.Session) -> None:
    """Hypothesis with new random examples each run (the ``fuzz`` profile of
    ``tests/conftest.py``; every other session is derandomised): the property tests of
    ``tests/``, the adversarial protocol fuzzing and the command reader's tests (5000 examples
    each). ``-- --hypothesis-seed=N`` replays a run;
    a case it finds belongs in its test as an ``@example``."""
    env = _Shared(session)
    env.run(
        "pytest",
        "-n",
        "2",
        "-m",
        "hypothesis",
        "--hypothesis-profile=fuzz",
        "tests",
        "conformance/tests",
        *session.posargs,
    )
    env.run(
        "pytest",
        "--hypothesis-profile=fuzz",
        "tests/adversarial/test_protocol.py",
        *session.posargs,
    )
    # The command reader's tests name their profiles (tests/unit/iac/conftest.py).
    env.run(
        "pytest",
        "tests/unit/iac",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={"IAC_HYPOTHESIS": "reader-fuzz"},
    )


ACP_CONFORMANCE_OPTIONS = (
    "--tools",
    "tests/support/conformance_tools.json",
    "--agent-debug-env",
    "IAC_CODE_LOG_LEVEL=DEBUG",
)
"""What the agent-agnostic suite is told of iac-code: its tools (by their names and inputs)
and how it logs verbosely."""


def _without_our_settings() -> dict[str, str | None]:
    """The developer's own IAC_CODE_* settings, unset for the agents the suite spawns (the
    suite drops only real model-API credentials from their environment)."""
    return {name: None for name in os.environ if name.startswith("IAC_CODE_")}


@nox.session(python=PYTHON, venv_backend="none")
def conformance(session: nox.Session) -> None:
    """The agent-agnostic ACP conformance suite (the `acp-conformance` command of the package
    in conformance/) on `iaccode acp`; `-- --agent "CMD ARGS"` checks another agent.

    Three agents run at a time (pytest-xdist, :data:`WORKERS`); `-- -n 0` runs them one by one.
    The results table is printed at the end; `.conformance/report.json` has the failures' wire
    transcripts.
    """
    _suite_on_stdio(session)


def _suite_on_stdio(session: nox.Session, *options: str) -> None:
    """The suite on ``iaccode acp`` from :class:`_Shared`, with these options of its own."""
    env = _Shared(session)
    env.run(
        "acp-conformance",
        "--agent",
        f"{env.bin}/iaccode acp",
        "-n",
        WORKERS,
        *options,
        *ACP_CONFORMANCE_OPTIONS,
        *session.posargs,
        env=_without_our_settings(),
    )


@nox.session(python=PYTHON, venv_backend="none")
def conformance_openai(session: nox.Session) -> None:
    """The conformance suite with iac-code on its OpenAI-compatible provider: the fake model is
    a Chat Completions API (`--model-api chat`), driven through the real `openai` SDK; iac-code
    reads its address from IAC_CODE_BASE_URL (the suite's `{model_url}`)."""
    _suite_on_stdio(
        session,
        "--model-api",
        "chat",
        "--agent-env",
        "IAC_CODE_PROVIDER=openai",
        "--agent-env",
        "IAC_CODE_BASE_URL={model_url}",
        "--report",
        ".conformance/report-openai.json",
    )


@nox.session(python=PYTHON, venv_backend="none")
def conformance_remote(session: nox.Session) -> None:
    """The conformance suite against `iaccode serve` (remote ACP), as a remote client sees it:
    over WebSocket by default, `-- --transport http2` or `http1` for the others. The server
    plays the fake model of each test (on a port given to both), so tests run one at a time.
    (WebSocket, not HTTP/2, in CI: over h2c the 10 MiB prompt's upload sometimes stalls in the
    client's flow control (httpx/httpcore) while the event stream shares the connection; the
    e2e tests cover HTTP/2, with a 20 MiB prompt.)"""
    shared = _Shared(session)
    import re
    import secrets
    import socket
    import tempfile
    import time

    with socket.socket() as probe:  # a free port for the fake model of each test
        probe.bind(("127.0.0.1", 0))
        model_port = probe.getsockname()[1]
    token = secrets.token_urlsafe(24)
    home = tempfile.mkdtemp(prefix="conformance-remote-")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IAC_CODE_"))},
        "HOME": home,
        "IAC_CODE_HOME": home,
        "IAC_CODE_SERVE_TOKEN": token,
        "ANTHROPIC_API_KEY": "conformance-dummy-key",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model_port}",
    }
    # As over stdio (IAC_CODE_MAX_LINE_BYTES), a 10 MiB prompt must fit in one message.
    (Path(home) / "config.toml").write_text("[serve]\nmax_body_bytes = 33554432\n")
    stderr_path = Path(home) / "serve.stderr"
    with stderr_path.open("wb") as stderr:
        server = subprocess.Popen(
            [shared.bin + "/python", "-m", "iaccode", "serve", "--port", "0"],
            env=env,
            stdout=stderr,
            stderr=stderr,
            cwd=home,
        )
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(r"serving ACP on (http://\S+)", stderr_path.read_text())):
            if server.poll() is not None or time.monotonic() > deadline:
                session.error(f"iaccode serve did not start:\n{stderr_path.read_text()}")
            time.sleep(0.1)
        shared.run(
            "acp-conformance",
            "-p",
            "no:xdist",
            "--url",
            found.group(1),
            f"--token={token}",  # "=": a token may start with "-"
            "--model-port",
            str(model_port),
            "--report",
            ".conformance/report-remote.json",
            "--transport",
            "websocket",
            *ACP_CONFORMANCE_OPTIONS,
            *session.posargs,
        )
    finally:
        server.terminate()
        server.wait(15)
    shutil.rmtree(home)  # kept when the run failed: the server's log is in it


@nox.session(python=PYTHON, venv_backend="none")
def remote_clients(session: nox.Session) -> None:
    """`iaccode serve` driven by the official ACP SDKs' remote clients: the TypeScript SDK's
    (`@agentclientprotocol/sdk` 2.4.0 from npm, on node) and the Python SDK's, over HTTP and
    WebSocket (tests/e2e/test_remote_sdks.py; also part of `tests`)."""
    import shutil

    env = _Shared(session)
    if shutil.which("node") is None or shutil.which("npm") is None:
        session.log("skipped: no node (the TypeScript SDK's clients; the Python SDK's run)")
    env.run("pytest", "tests/e2e/test_remote_sdks.py", "-ra", *session.posargs)


LINTED = ("iaccode", "tests", "conformance", "noxfile.py")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff: the lint rules of pyproject.toml, and the tree as ``ruff format`` leaves it."""
    # One version everywhere (pyproject's dev extra too): another may format differently.
    _install(session, "ruff==0.17.6")
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy, strict: iac-code and its tests (pyproject.toml: tests may name bare dict), then
    the conformance package and its own tests (conformance/pyproject.toml)."""
    # keyring is optional at run time (stored keys fall back to a 0600 file) but typed here;
    # the test extra and the harness: what the tests import.
    _install(
        session,
        "-e",
        ".[test]",
        "-e",
        "./conformance[test]",
        "mypy>=1.11",
        "types-PyYAML",
        "types-jsonschema",
        "types-psutil",
        "keyring>=25",
    )
    # Caches of their own: the one in .mypy_cache is rebuilt by whichever mypy ran last.
    cache = f"{session.virtualenv.location}/mypy-cache"
    session.run("mypy", "--cache-dir", cache, "iaccode", "tests")
    with session.chdir("conformance"):
        session.run("mypy", "--cache-dir", f"{cache}-conformance")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks, each figure against a baseline measured in the same run: prints the table
    and writes .bench/results.json (about 5 minutes). `-- --quick` for a smoke run,
    `-- --only startup,streaming,cancel,sessions,memory,search,caching,store_listing,gate`,
    `-- --docs` to put the table in docs/performance.md. See tests/bench/."""
    # A regular install, as users get from pip: an editable one adds its import hook to every
    # Python start in the venv (tens of milliseconds of cold start on a busy machine).
    # Compiled at install, as pip does (uv leaves it to the first import).
    session.install(".", "./conformance", "psutil>=5.9", env={"UV_COMPILE_BYTECODE": "1"})
    session.run("python", "-m", "tests.bench", *session.posargs)


@nox.session(python=PYTHON)
def adversarial(session: nox.Session) -> None:
    """A hostile client, a hostile model, faults, kill -9 and load against a real `iaccode acp`
    (tests/adversarial; about 5 minutes). `-- --soak` runs longer (about 18): 10x the examples,
    1000 kills, 5 minutes of load. Writes its figures to .adversarial/figures.json
    (docs/reliability.md). cfn-lint is installed too: the suite checks it loads no repository
    rules."""
    _install(session, "-e", ".[test,cfn]", "-e", "./conformance")
    # Three workers, each module on one (--dist loadfile: a module's agents and figures stay
    # together; tests/adversarial/conftest.py gathers the figures).
    session.run(
        "pytest", "-n", WORKERS, "--dist", "loadfile", "tests/adversarial", *session.posargs
    )
