"""Daily commands: `nox` runs what CI runs (tests, conformance on both model APIs, lint,
typecheck, adversarial); `nox -s bench` for the benchmarks (not run by default);
`nox -s adversarial -- --soak` for the long adversarial run."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "conformance", "conformance_openai", "lint", "typecheck",
                        "adversarial"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = ["3.11"]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Unit and end-to-end tests (a real `iaccode acp` against a fake Messages API)."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests", *session.posargs)


@nox.session(python=PYTHON)
def conformance(session: nox.Session) -> None:
    """The agent-agnostic ACP conformance suite; `-- --agent "CMD ARGS"` checks another agent.

    Two agents run at a time (pytest-xdist); `-- -n 0` runs them one by one. The results table
    is printed at the end; `.conformance/report.json` has the failures' wire transcripts.
    """
    session.install("-e", ".[test]", "pytest-xdist>=3.5")
    session.run("pytest", "conformance", "-n", "2", *session.posargs)


@nox.session(python=PYTHON)
def conformance_openai(session: nox.Session) -> None:
    """The conformance suite with iac-code on its OpenAI-compatible provider: the fake model is
    a Chat Completions API (`--model-api chat`), driven through the real `openai` SDK."""
    session.install("-e", ".[test]", "pytest-xdist>=3.5")
    session.run("pytest", "conformance", "-n", "2", "--model-api", "chat",
                "--report", ".conformance/report-openai.json", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", "iaccode", "tests", "conformance", "noxfile.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".", "mypy>=1.11", "types-PyYAML")
    session.run("mypy", "iaccode")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks, each figure against a baseline measured in the same run: prints the table
    and writes .bench/results.json (about 5 minutes). `-- --quick` for a smoke run,
    `-- --only startup,streaming,cancel,sessions,memory,search`, `-- --readme` to put the
    table in README.md. See tests/bench/."""
    session.install("-e", ".", "psutil>=5.9")
    session.run("python", "-m", "tests.bench", *session.posargs)


@nox.session(python=PYTHON)
def adversarial(session: nox.Session) -> None:
    """A hostile client, a hostile model, faults, kill -9 and load against a real `iaccode acp`
    (tests/adversarial; about 5 minutes). `-- --soak` runs longer (about 18): 10x the examples,
    1000 kills, 5 minutes of load. Writes its figures to .adversarial/figures.json (README,
    Reliability)."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests/adversarial", *session.posargs)
