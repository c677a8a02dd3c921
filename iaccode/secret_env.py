"""Which environment variables hold credentials: one rule for everything that could pass them on.

The rule decides what commands get (the bash tool, the checks after writes:
:mod:`iaccode.iac.command_env`), what a stdio MCP server inherits, which values are replaced by
``[secret NAME]`` in tool output, transcripts and the log (:mod:`iaccode.redaction`), and what
leaves the agent's own process environment at start-up (:mod:`iaccode.process_secrets`).

A variable is a secret when its name, in any case,

- ends in ``_KEY``, ``_TOKEN``, ``_SECRET``, ``_PASSWORD``, ``_PASSWD``, ``_PWD``, ``_PAT``,
  ``_APIKEY``, ``_AUTH`` or ``_CREDENTIALS`` (``ANTHROPIC_API_KEY``, ``GITHUB_PAT``,
  ``MYSQL_PWD``, ``GOOGLE_CREDENTIALS``);
- contains ``SECRET``, ``PASSWORD`` or ``PASSWD`` (``PGPASSWORD``, ``AWS_SECRET_ACCESS_KEY``);
- starts with ``ANTHROPIC_AUTH`` (the Anthropic SDK's auth settings) or ``TF_TOKEN_``
  (Terraform's per-host API tokens, ``TF_TOKEN_app_terraform_io``);
- is one the user named: config.toml's ``[secrets] extra = ["NAME", "PREFIX_*"]`` and the
  provider's ``api_key_env``, or a cloud credential the gates hold back
  (``iaccode/iac/credentials.py``: ``AWS_ACCESS_KEY_ID`` ...) (:func:`declare`, at start-up);

or when its value is a URL with a password (``DATABASE_URL=postgres://app:pw@db/app``). The proxy
variables (``https_proxy`` ...) are the exception to that last part: commands need them to reach
the network at all, so they keep them, but their values are still replaced in what is shown.
``AWS_PROFILE``, ``HOME``, ``TOKENIZERS_PARALLELISM`` and ``PWD`` are not secrets.

A secret the agent holds that is no variable (a key read from a file) is :func:`hold`-ed: its
value is then replaced in output like the variables' values.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Mapping

SECRET_SUFFIXES = (
    "_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_PWD",
    "_PAT",
    "_APIKEY",
    "_AUTH",
    "_CREDENTIALS",
)
SECRET_PARTS = ("SECRET", "PASSWORD", "PASSWD")
SECRET_PREFIXES = ("ANTHROPIC_AUTH", "TF_TOKEN_")
PROXY_VARIABLES = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY"})
"""Kept for commands even with a password in them (see the module docstring)."""

MIN_SCRUBBED_CHARS = 8
"""Shorter values are not scrubbed from output: replacing every ``1`` or ``yes`` would garble
it, and so short a value is no credential worth hiding."""

_declared: tuple[str, ...] = ()
"""Names and ``PREFIX_*`` patterns the user declared secret (upper case)."""


_held: dict[str, str] = {}
"""Secrets the agent holds outside its environment (a stored key, what an MCP server is given):
value -> the name it goes by (two values may share a name: two servers' ``GITHUB_TOKEN``)."""


def hold(name: str, value: str) -> None:
    """A secret the agent holds that is no variable of its own (a key read from a file, an MCP
    server's token): its value is replaced in output like the variables' (:func:`secret_items`).
    The first name a value was held under stays its name."""
    _held.setdefault(value, name)


def declare(names: Iterable[str]) -> None:
    """Add the user's own secret names (``[secrets] extra``, ``api_key_env``) to the rule for
    this process. Called once at start-up (:mod:`iaccode.process_secrets`); in-process tests
    that want the names call it themselves."""
    global _declared
    _declared = tuple(dict.fromkeys([*_declared, *(name.upper() for name in names if name)]))


def is_secret(name: str, value: str | None = None) -> bool:
    """Whether the variable ``name`` (holding ``value``, when given) is a credential."""
    upper = name.upper()
    if (
        upper.endswith(SECRET_SUFFIXES)
        or any(part in upper for part in SECRET_PARTS)
        or upper.startswith(SECRET_PREFIXES)
        or any(fnmatch.fnmatchcase(upper, pattern) for pattern in _declared)
    ):
        return True
    return value is not None and upper not in PROXY_VARIABLES and url_password(value) is not None


def url_password(value: str) -> str | None:
    """The password of ``value`` when it is a URL with one (``scheme://user:pw@host``)."""
    scheme, found, rest = value.partition("://")
    if (
        not found
        or "@" not in rest
        or not scheme.replace("+", "").replace(".", "").replace("-", "").isalnum()
    ):
        return None
    userinfo = rest.split("/", 1)[0].rpartition("@")[0]
    _, colon, password = userinfo.partition(":")
    return password if colon and password else None


def _nothing(name: str) -> bool:
    return False


def scrubbed(
    env: Mapping[str, str], *, secrets: bool = True, also: Callable[[str], bool] = _nothing
) -> dict[str, str]:
    """``env`` as a program we start gets it: without the secret variables (``secrets``: this
    module's rule) and without every variable ``also`` names (the cloud credentials, the
    gate's own variables). The one filter of a child's environment: the commands'
    (:mod:`iaccode.iac.command_env`), a stdio MCP server's (:mod:`iaccode.mcp.transport`)
    and the command ``iaccode supervise`` runs in the editor's terminal."""
    return {
        name: value
        for name, value in env.items()
        if not (secrets and is_secret(name, value)) and not also(name)
    }


def secret_items(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, value) of every secret ``env`` (default: ours, with the ones we :func:`hold`)
    holds, long enough to scrub: the secret variables, the password inside a URL that holds
    one (under the variable's name; a proxy's too), longest value first, equal lengths in text
    order (the same in every run)."""
    items: dict[str, str] = {}
    if env is None:
        env = os.environ
        items = {
            value: name for value, name in sorted(_held.items()) if len(value) >= MIN_SCRUBBED_CHARS
        }
    for name, value in sorted(env.items()):
        found = [value] if is_secret(name, value) else []
        if (password := url_password(value)) is not None:
            found.append(password)
        for secret in found:
            if len(secret) >= MIN_SCRUBBED_CHARS:
                items.setdefault(secret, name)
    return sorted(
        ((name, value) for value, name in items.items()), key=lambda item: (-len(item[1]), item[1])
    )


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The values of :func:`secret_items`, in its order (longest first, so a key that contains
    another is replaced whole)."""
    return [value for _, value in secret_items(env)]
