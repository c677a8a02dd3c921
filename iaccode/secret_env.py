"""Which environment variables hold credentials: kept from commands, scrubbed from transcripts.

One rule for both (the bash tool's command environment, the checks after writes, and the
transcript recorder): a variable is a secret when its name, in any case, ends in ``_KEY``,
``_TOKEN``, ``_SECRET`` or ``_PASSWORD``, contains ``SECRET``, or starts with
``ANTHROPIC_AUTH`` (the Anthropic SDK's auth settings). So ``ANTHROPIC_API_KEY``,
``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY`` and ``db_password`` are secrets; ``AWS_PROFILE`` and
``HOME`` are not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
SECRET_PREFIXES = ("ANTHROPIC_AUTH",)

MIN_SCRUBBED_CHARS = 8
"""Shorter values are not scrubbed from transcripts: replacing every ``1`` or ``yes`` in them
would garble the record, and so short a value is no credential worth hiding."""


def is_secret(name: str) -> bool:
    """Whether the environment variable ``name`` looks like a credential."""
    upper = name.upper()
    return (upper.endswith(SECRET_SUFFIXES) or "SECRET" in upper
            or upper.startswith(SECRET_PREFIXES))


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the secret variables."""
    return {name: value for name, value in env.items() if not is_secret(name)}


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The values of the secret variables of ``env`` (default: ours) long enough to scrub,
    longest first (so a key that contains another is replaced whole), equal lengths in text
    order (so the list is the same in every run, whatever the order of the set)."""
    env = os.environ if env is None else env
    return sorted({value for name, value in env.items()
                   if len(value) >= MIN_SCRUBBED_CHARS and is_secret(name)},
                  key=lambda value: (-len(value), value))
