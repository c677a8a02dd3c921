"""``acp-conformance --agent "CMD ARGS" [options] [pytest options]``: run the suite on an agent.

The suite is pytest tests shipped in this package (:mod:`acp_conformance.suite`); this runs
them with the options given, which are the suite's (``--agent``, ``--agent-env``, ``--tools``,
``--model-api``, ``--report``, ``--url``, ...; ``acp-conformance --help`` lists them under
"acp-conformance") and pytest's (``-n 2``, ``-k``, ``-x``). The exit status is pytest's: 0 when
the agent conforms (SHOULD failures are reported, never failing the run).
"""

from __future__ import annotations

import sys
from pathlib import Path

SUITE = Path(__file__).resolve().parent / "suite"

VALUE_OPTIONS = frozenset(
    {
        "--agent",
        "--agent-env",
        "--agent-debug-env",
        "--tools",
        "--model-api",
        "--agent-timeout",
        "--report",
        "--markdown",
        "--url",
        "--token",
        "--transport",
        "--model-port",
    }
)
"""The suite's options that take a value (``suite/conftest.py``)."""


def joined(args: list[str]) -> list[str]:
    """``--tools PATH`` as ``--tools=PATH``: pytest reads its arguments before it loads the
    suite's options, and takes a value that names a file or folder for a path to test, loading
    the ``conftest.py`` files above it (another project's fixtures in the suite)."""
    out: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg in VALUE_OPTIONS:
            value = next(rest, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    import pytest

    args = list(sys.argv[1:] if argv is None else argv)
    wants_help = any(a in ("-h", "--help") for a in args)
    if not wants_help and not any(
        a == "--agent" or a.startswith("--agent=") or a == "--url" or a.startswith("--url=")
        for a in args
    ):
        print(
            'acp-conformance: give the agent to check: --agent "CMD ARGS" (or --url URL)',
            file=sys.stderr,
        )
        return 2
    # The suite's own settings (suite/pytest.ini), no cache folder in the installed package.
    return int(
        pytest.main(
            [str(SUITE), "-c", str(SUITE / "pytest.ini"), "-p", "no:cacheprovider", *joined(args)]
        )
    )


if __name__ == "__main__":
    sys.exit(main())
