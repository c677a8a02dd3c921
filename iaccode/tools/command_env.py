"""The environment our commands run in: the bash tool's, and the checks after writes
(``terraform fmt``, ``cfn-lint``; :mod:`iaccode.iac.diagnostics`).

No secrets (:mod:`iaccode.secret_env`), no cloud credentials unless told otherwise
(:mod:`iaccode.iac.credentials`: a gate gives them back to the real CLI it runs), none of the
gate's variables the agent itself may have been started with, and nothing that waits for a
person: pagers print, editors and git's credential prompts return at once, colours are off.
"""

from __future__ import annotations

import os

from iaccode.gate import VARIABLES as GATE_VARIABLES
from iaccode.iac.credentials import is_credential
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


def command_env(hold_credentials: bool = True) -> dict[str, str]:
    """Our environment without secrets (and, with ``hold_credentials``, without cloud
    credentials), with pagers, prompts, editors and colours off."""
    env = {name: value for name, value in without_secrets(os.environ).items()
           if name not in GATE_VARIABLES and not (hold_credentials and is_credential(name))}
    env.update(QUIET_ENV)
    return env
