"""The environment our commands run in: the bash tool's, and the checks after writes
(``terraform fmt``, ``cfn-lint``; :mod:`iaccode.iac.diagnostics`).

No secrets (:mod:`iaccode.secret_env`), and nothing that waits for a person: pagers print,
editors and git's credential prompts return at once, colours are off.
"""

from __future__ import annotations

import os

from iaccode.secret_env import without_secrets

QUIET_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "DEBIAN_FRONTEND": "noninteractive",
}


def command_env() -> dict[str, str]:
    """Our environment without secrets, with pagers, prompts, editors and colours off."""
    env = without_secrets(os.environ)
    env.update(QUIET_ENV)
    return env
