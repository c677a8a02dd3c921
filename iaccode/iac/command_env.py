"""The environment our commands run in: the bash tool's, and the checks after writes
(``terraform fmt``, ``cfn-lint``; :mod:`iaccode.iac.diagnostics`).

No secrets (:mod:`iaccode.secret_env`), no cloud credentials (:mod:`iaccode.iac.credentials`:
a gate gives them back to the real CLI it runs) unless ``[iac] hold_credentials = false`` says
every command gets them, none of the gate's variables the agent itself may have been started
with, and nothing that waits for a person: pagers print, editors and git's credential prompts
return at once, colours are off.

The cloud credentials are secrets too (declared at start-up, :func:`iaccode.cli.seal_secrets`),
so their values are replaced in every tool's output whichever program printed them.
"""

from __future__ import annotations

import os

from iaccode.iac.credentials import held, is_credential
from iaccode.secret_env import scrubbed

TOKEN_VARIABLE = "IAC_CODE_GATE_TOKEN"
SOCKET_VARIABLE = "IAC_CODE_GATE_SOCKET"
FOLDER_VARIABLE = "IAC_CODE_GATES"
HOLD_VARIABLE = "IAC_CODE_HOLD_CREDENTIALS"
"""For the supervisor in the editor's terminal: 1 when it removes the credentials."""
GATE_VARIABLES = (TOKEN_VARIABLE, SOCKET_VARIABLE, FOLDER_VARIABLE, HOLD_VARIABLE)
"""The gate's variables in a command's environment (:mod:`iaccode.gate`: its channel, set
by the agent for each call; never passed on from ours)."""

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
    """Our environment without secrets and cloud credentials (``hold_credentials`` False:
    with the cloud credentials), with pagers, prompts, editors and colours off."""
    env = scrubbed(os.environ, also=lambda name: name in GATE_VARIABLES or is_credential(name))
    if not hold_credentials:  # the user's choice: every command gets them, not just the CLIs
        env.update(held(os.environ))
    env.update(QUIET_ENV)
    return env
