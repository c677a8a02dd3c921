"""``iaccode login`` and ``iaccode logout``: an API key saved for the editor's agent to use.

A terminal program: it asks for the provider (the configured one is the default), then for the
key (not echoed), and saves it (``iaccode.llm.stored_keys``: the OS keyring when the ``keyring``
package has a working backend, else ``$IAC_CODE_HOME/credentials.toml``, mode 0600). Clients
with terminal auth run it for the user (the ``terminal`` auth method in ``initialize``, which
appends ``login`` to the agent's command line: ``iaccode acp login`` does the same). Without a
terminal the key is read from the first line of stdin (``echo $KEY | iaccode login --provider
openai``).

Exit status: 0 when the key was saved (or, for logout, is gone), 1 when nothing was saved
(empty input, end of input, Ctrl-C, a key that is not one, a file that cannot be written), 2
for a configuration we cannot read.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable
from typing import TextIO

from iaccode.config import Config, ConfigError
from iaccode.llm import stored_keys
from iaccode.llm.providers import PRESETS, endpoint


def key_providers() -> list[str]:
    """The providers whose API takes a key of their own, in the presets' order."""
    return [name for name, preset in PRESETS.items() if preset.key_variable]


def run_login(
    provider: str | None,
    *,
    configured: str | None = None,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    read_secret: Callable[[str], str] = getpass.getpass,
) -> int:
    """Ask for ``provider``'s key (None: ask which provider, ``configured`` or the configured
    one by default) and save it."""
    stdin, out = stdin or sys.stdin, out or sys.stdout
    config = _config(out, configured)
    if config is None:
        return 2
    choices = key_providers()
    interactive = stdin.isatty()
    try:
        if provider is None:
            provider = (
                _choose(config.provider, choices, stdin, out) if interactive else (config.provider)
            )
        if provider not in choices:
            print(
                f"iaccode login: {provider!r} takes no key of its own; the providers with "
                f"keys are {', '.join(choices)}.",
                file=out,
            )
            return 1
        preset = PRESETS[provider]
        variable = endpoint(_with_provider(config, provider)).key_variable
        if variable and os.environ.get(variable):
            print(
                f"Note: {variable} is set in this environment; where it is set, it wins over "
                "the key saved here.",
                file=out,
            )
        prompt = f"Paste your {preset.title} API key (it is not shown): "
        key = (read_secret(prompt) if interactive else stdin.readline()).strip()
    except (EOFError, KeyboardInterrupt):
        print("\nNothing saved.", file=out)
        return 1
    problem = stored_keys.check_key(key)
    if problem is not None:
        print(f"{problem} Nothing saved.", file=out)
        return 1
    try:
        where = stored_keys.save(config.home, provider, key)
    except stored_keys.StoreProblem as exc:
        print(f"iaccode login: {exc}. Nothing saved.", file=out)
        return 1
    print(f"Saved the {preset.title} API key in {where}.", file=out)
    if provider != config.provider:
        print(
            f"iac-code is set to use {config.provider}: to use {provider}, set provider = "
            f'"{provider}" in {config.home / "config.toml"} (or IAC_CODE_PROVIDER).',
            file=out,
        )
    return 0


def run_logout(provider: str | None, *, out: TextIO | None = None) -> int:
    """Forget the saved key of ``provider`` (None: the configured one)."""
    out = out or sys.stdout
    config = _config(out)
    if config is None:
        return 2
    provider = provider or config.provider
    try:
        removed = stored_keys.forget(config.home, provider)
    except stored_keys.StoreProblem as exc:
        print(f"iaccode logout: {exc}", file=out)
        return 1
    title = PRESETS[provider].title if provider in PRESETS else provider
    print(
        f"Removed the saved {title} API key." if removed else f"No {title} API key was saved.",
        file=out,
    )
    return 0


def _config(out: TextIO, provider: str | None = None) -> Config | None:
    try:
        return Config.from_env(provider=provider)
    except ConfigError as exc:
        print(f"iaccode: {exc}", file=out)
        return None


def _with_provider(config: Config, provider: str) -> Config:
    from attrs import evolve

    return evolve(config, provider=provider)


def _choose(current: str, choices: list[str], stdin: TextIO, out: TextIO) -> str:
    """Ask which provider; Enter takes the configured one (or the first, if it has no key)."""
    default = current if current in choices else choices[0]
    print("Which provider's key?", file=out)
    for number, name in enumerate(choices, 1):
        mark = "  (default)" if name == default else ""
        print(f"  {number}. {PRESETS[name].title} [{name}]{mark}", file=out)
    while True:
        print(f"Provider [1-{len(choices)}, Enter for {default}]: ", end="", file=out, flush=True)
        line = stdin.readline()
        if not line:
            raise EOFError
        answer = line.strip()
        if not answer:
            return default
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1]
        if answer in choices:
            return answer
        print(f"Type a number from 1 to {len(choices)} or a provider name.", file=out)
