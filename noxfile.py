"""Daily commands: `nox -s tests lint typecheck` (what CI runs), `nox -s conformance`."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "conformance", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = ["3.11"]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Unit and end-to-end tests (a real `iaccode acp` against a fake Messages API)."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests", *session.posargs)


@nox.session(python=PYTHON)
def conformance(session: nox.Session) -> None:
    """The agent-agnostic ACP conformance suite; `-- --agent "CMD ARGS"` checks another agent."""
    session.install("-e", ".[test]")
    session.run("pytest", "conformance", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", "iaccode", "tests", "conformance", "noxfile.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".", "mypy>=1.11")
    session.run("mypy", "iaccode")
