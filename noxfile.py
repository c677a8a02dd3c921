"""Daily commands: `nox` runs what CI runs (tests, conformance on both model APIs, lint,
typecheck, adversarial); `nox -s bench` for the benchmarks (not run by default);
`nox -s adversarial -- --soak` for the long adversarial run; `nox -s fuzz` for the command
reader's property tests on random seeds."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests", "conformance", "conformance_openai", "conformance_remote",
                        "lint", "typecheck", "adversarial"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = ["3.11"]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Unit and end-to-end tests (a real `iaccode acp` against a fake Messages API)."""
    session.install("-e", ".[test]", "-e", "./conformance")
    session.run("pytest", "tests", *session.posargs)


@nox.session(python=PYTHON)
def conformance(session: nox.Session) -> None:
    """The agent-agnostic ACP conformance suite (the `acp-conformance` command of the package
    in conformance/) on `iaccode acp`; `-- --agent "CMD ARGS"` checks another agent.

    Two agents run at a time (pytest-xdist); `-- -n 0` runs them one by one. The results table
    is printed at the end; `.conformance/report.json` has the failures' wire transcripts.
    """
    session.install("-e", ".", "-e", "./conformance")
    session.run("acp-conformance", "--agent", f"{session.bin}/iaccode acp", "-n", "2",
                *session.posargs)


@nox.session(python=PYTHON)
def conformance_openai(session: nox.Session) -> None:
    """The conformance suite with iac-code on its OpenAI-compatible provider: the fake model is
    a Chat Completions API (`--model-api chat`), driven through the real `openai` SDK."""
    session.install("-e", ".", "-e", "./conformance")
    session.run("acp-conformance", "--agent", f"{session.bin}/iaccode acp", "-n", "2",
                "--model-api", "chat", "--report", ".conformance/report-openai.json",
                *session.posargs)


@nox.session(python=PYTHON)
def conformance_remote(session: nox.Session) -> None:
    """The conformance suite against `iaccode serve` (remote ACP), as a remote client sees it:
    over WebSocket by default, `-- --transport http2` or `http1` for the others. The server
    plays the fake model of each test (on a port given to both), so tests run one at a time.
    (WebSocket, not HTTP/2, in CI: over h2c the 10 MiB prompt's upload sometimes stalls in the
    client's flow control (httpx/httpcore) while the event stream shares the connection; the
    e2e tests cover HTTP/2, with a 20 MiB prompt.)"""
    session.install("-e", ".", "-e", "./conformance")
    import os
    import re
    import secrets
    import socket
    import subprocess
    import tempfile
    import time

    with socket.socket() as probe:  # a free port for the fake model of each test
        probe.bind(("127.0.0.1", 0))
        model_port = probe.getsockname()[1]
    token = secrets.token_urlsafe(24)
    home = tempfile.mkdtemp(prefix="conformance-remote-")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IAC_CODE_"))},
           "HOME": home, "IAC_CODE_HOME": home, "IAC_CODE_SERVE_TOKEN": token,
           "ANTHROPIC_API_KEY": "conformance-dummy-key",
           "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model_port}"}
    # As over stdio (IAC_CODE_MAX_LINE_BYTES), a 10 MiB prompt must fit in one message.
    (Path(home) / "config.toml").write_text("[serve]\nmax_body_bytes = 33554432\n")
    stderr_path = Path(home) / "serve.stderr"
    with stderr_path.open("wb") as stderr:
        server = subprocess.Popen([session.bin + "/python", "-m", "iaccode", "serve", "--port",
                                   "0"], env=env, stdout=stderr, stderr=stderr, cwd=home)
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(r"serving ACP on (http://\S+)", stderr_path.read_text())):
            if server.poll() is not None or time.monotonic() > deadline:
                session.error(f"iaccode serve did not start:\n{stderr_path.read_text()}")
            time.sleep(0.1)
        session.run("acp-conformance", "-p", "no:xdist", "--url", found.group(1),
                    f"--token={token}",  # "=": a token may start with "-"
                    "--model-port", str(model_port),
                    "--report", ".conformance/report-remote.json", "--transport", "websocket",
                    *session.posargs)
    finally:
        server.terminate()
        server.wait(15)


@nox.session(python=PYTHON)
def remote_clients(session: nox.Session) -> None:
    """`iaccode serve` driven by the official ACP SDKs' remote clients: the TypeScript SDK's
    (`@agentclientprotocol/sdk` 2.4.0 from npm, on node) and the Python SDK's, over HTTP and
    WebSocket (tests/e2e/test_remote_sdks.py; also part of `tests`)."""
    import shutil

    session.install("-e", ".[test]", "-e", "./conformance")
    if shutil.which("node") is None or shutil.which("npm") is None:
        session.log("skipped: no node (the TypeScript SDK's clients; the Python SDK's run)")
    session.run("pytest", "tests/e2e/test_remote_sdks.py", "-ra", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", "iaccode", "tests", "conformance", "noxfile.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    # keyring is optional at run time (stored keys fall back to a 0600 file) but typed here.
    session.install("-e", ".", "mypy>=1.11", "types-PyYAML", "keyring>=25")
    session.run("mypy", "iaccode")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks, each figure against a baseline measured in the same run: prints the table
    and writes .bench/results.json (about 5 minutes). `-- --quick` for a smoke run,
    `-- --only startup,streaming,cancel,sessions,memory,search,caching,store_listing,gate`,
    `-- --readme` to put the table in README.md. See tests/bench/."""
    # A regular install, as users get from pip: an editable one adds its import hook to every
    # Python start in the venv (tens of milliseconds of cold start on a busy machine).
    session.install(".", "./conformance", "psutil>=5.9")
    session.run("python", "-m", "tests.bench", *session.posargs)


@nox.session(python=PYTHON)
def fuzz(session: nox.Session) -> None:
    """The command reader's Hypothesis tests with random seeds and many more examples (CI runs
    them derandomised: tests/unit/iac/conftest.py). Not run by default."""
    session.install("-e", ".[test]", "-e", "./conformance")
    session.run("pytest", "tests/unit/iac", "-p", "no:cacheprovider", *session.posargs,
                env={"IAC_HYPOTHESIS": "reader-fuzz"})


@nox.session(python=PYTHON)
def adversarial(session: nox.Session) -> None:
    """A hostile client, a hostile model, faults, kill -9 and load against a real `iaccode acp`
    (tests/adversarial; about 5 minutes). `-- --soak` runs longer (about 18): 10x the examples,
    1000 kills, 5 minutes of load. Writes its figures to .adversarial/figures.json (README,
    Reliability). cfn-lint is installed too: the suite checks it loads no repository rules."""
    session.install("-e", ".[test,cfn]", "-e", "./conformance")
    session.run("pytest", "tests/adversarial", *session.posargs)
