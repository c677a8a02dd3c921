"""API keys saved by ``iaccode login``: in ``$IAC_CODE_HOME/credentials.toml`` or the OS keyring.

    [anthropic]
    api_key = "sk-ant-..."      # the key itself, in the file (mode 0600)

    [openai]
    keyring = true              # the key is in the OS keyring (service "iac-code", user "openai")

The file names every provider with a stored key, wherever the key lives, so whether one is
stored is known without importing ``keyring`` (slow, and only there when installed). The
environment wins: a provider uses its stored key only while its variable is unset
(``providers.Endpoint.api_key``). The file is read again when it changed (its stat), so a
``iaccode login`` in a terminal reaches a running agent at its next check; ``iaccode logout``
and ACP ``logout`` remove the entry (and the keyring's item).

The key never enters the environment: commands, MCP servers and the checks after writes cannot
inherit it. Imported when a key is first looked for (``providers.Endpoint``), not to open a
session while the environment has the key; ``tomllib`` when there is a file to read.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's (nor contextlib or json at the top): see providers.py
if TYPE_CHECKING:
    from os import PathLike
    from typing import Any

FILE_NAME = "credentials.toml"
KEYRING_SERVICE = "iac-code"
"""The keyring service name; the provider is the user name."""
HEADER = (
    "# API keys saved by `iaccode login` (`iaccode logout` removes one).\n"
    "# The environment wins: a key here is used only while the provider's variable is "
    "unset.\n"
)


class StoreProblem(Exception):
    """The credentials file could not be read or written; the message is for the user."""


def path(home: PathLike[str] | str) -> str:
    return os.path.join(home, FILE_NAME)


Signature = tuple[int, int, int]
_cache: dict[str, tuple[Signature, dict[str, dict[str, object]]]] = {}
"""Path -> (its stat signature, its tables): read again only when the file changed."""
_from_keyring: dict[tuple[str, str], tuple[Signature, str | None]] = {}
"""(path, provider) -> (the file's signature, the keyring's answer): the keyring (a D-Bus call,
say) is asked again only when the file changed, not at every model request."""


def entries(home: PathLike[str] | str) -> dict[str, dict[str, object]]:
    """Provider -> its table, from the file ({} without one). A file that cannot be read or
    parsed counts as empty (``iaccode login`` rewrites it)."""
    return _read(path(home))[1]


def _read(where: str) -> tuple[Signature | None, dict[str, dict[str, object]]]:
    try:
        info = os.stat(where)
    except OSError:
        _cache.pop(where, None)
        return None, {}
    signature = (info.st_ino, info.st_mtime_ns, info.st_size)
    cached = _cache.get(where)
    if cached is not None and cached[0] == signature:
        return cached
    try:
        tables = _parse(where)
    except StoreProblem:
        tables = {}
    _cache[where] = (signature, tables)
    return signature, tables


def _parse(where: str) -> dict[str, dict[str, object]]:
    import tomllib

    try:
        with open(where, "rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # TOMLDecodeError and UnicodeDecodeError: ValueErrors
        raise StoreProblem(f"{where} cannot be read: {exc}") from None
    return {name: table for name, table in data.items() if isinstance(table, dict)}


def is_stored(home: PathLike[str] | str, provider: str) -> bool:
    """Whether ``iaccode login`` stored a key for ``provider`` (the keyring is not asked)."""
    table = entries(home).get(provider)
    return table is not None and (_usable(table.get("api_key")) or table.get("keyring") is True)


def stored_key(home: PathLike[str] | str, provider: str) -> str | None:
    """The stored key of ``provider``, from the file or the keyring; None when there is none
    (or the keyring cannot give it: the user is told to log in again)."""
    where = path(home)
    signature, tables = _read(where)
    table = tables.get(provider)
    if table is None or signature is None:
        return None
    key = table.get("api_key")
    if _usable(key):
        return str(key)
    if table.get("keyring") is not True:
        return None
    known = _from_keyring.get((where, provider))
    if known is None or known[0] != signature:
        known = _from_keyring[(where, provider)] = (signature, _keyring_get(provider))
    return known[1]


def _usable(key: object) -> bool:
    return isinstance(key, str) and bool(key)


def check_key(key: str) -> str | None:
    """What is wrong with a pasted key (None: nothing): keys are printable ASCII, no spaces."""
    if not key:
        return "The key is empty."
    if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
        return "An API key is printable ASCII without spaces; this is not one."
    return None


def save(home: PathLike[str] | str, provider: str, key: str, *, use_keyring: bool = True) -> str:
    """Store ``key`` for ``provider``: in the OS keyring when ``keyring`` is installed and has a
    working backend (and ``use_keyring``), else in the file. Returns where it went, in words.
    Raises StoreProblem (the file) or ValueError (a key that is not one)."""
    problem = check_key(key)
    if problem is not None:
        raise ValueError(problem)
    where = path(home)
    tables = _tables_for_writing(where)
    if use_keyring and _keyring_set(provider, key):
        tables[provider] = {"keyring": True}
        place = f"the OS keyring (service {KEYRING_SERVICE!r}, user {provider!r})"
    else:
        tables[provider] = {"api_key": key}
        place = where
    _write(where, tables)
    return place


def forget(home: PathLike[str] | str, provider: str) -> bool:
    """Remove the stored key of ``provider`` (the file's entry and the keyring's item); False
    when there was none. Raises StoreProblem when the file cannot be rewritten."""
    where = path(home)
    tables = _tables_for_writing(where)
    table = tables.pop(provider, None)
    if table is None:
        return False
    if table.get("keyring") is True:
        _keyring_delete(provider)
    if tables:
        _write(where, tables)
    else:
        try:
            os.unlink(where)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreProblem(f"{where} cannot be removed: {exc.strerror or exc}") from None
    _cache.pop(where, None)
    return True


def _tables_for_writing(where: str) -> dict[str, dict[str, object]]:
    """The file's tables; one we cannot parse is replaced (its keys were unusable anyway)."""
    try:
        return dict(_parse(where))
    except StoreProblem:
        return {}


def _write(where: str, tables: dict[str, dict[str, object]]) -> None:
    """The whole file, atomically, mode 0600 from the start (never readable by others)."""
    import json

    lines = [HEADER]
    for name, table in tables.items():
        lines.append(f"\n[{json.dumps(name)}]\n")
        for key, value in table.items():
            if isinstance(value, bool):
                lines.append(f"{key} = {'true' if value else 'false'}\n")
            elif isinstance(value, str) and value.isascii():
                lines.append(f"{key} = {json.dumps(value)}\n")  # a TOML basic string
    folder = os.path.dirname(where)
    temp = os.path.join(folder, f".{FILE_NAME}.{os.getpid()}.tmp")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write("".join(lines))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o600)  # O_CREAT's mode is only for a new file
        os.replace(temp, where)
    except OSError as exc:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise StoreProblem(f"{where} cannot be written: {exc.strerror or exc}") from None
    _cache.pop(where, None)


# -- the OS keyring, when the keyring package is installed ------------------------------------


def _keyring() -> Any:
    """The keyring module, or None when it is not installed."""
    try:
        import keyring
    except ImportError:
        return None
    return keyring


def _keyring_set(provider: str, key: str) -> bool:
    """Whether the key went into the keyring (False: no keyring package, or no backend)."""
    keyring = _keyring()
    if keyring is None:
        return False
    from keyring.errors import KeyringError

    try:
        keyring.set_password(KEYRING_SERVICE, provider, key)
    except (KeyringError, OSError, RuntimeError):
        return False  # e.g. the "fail" backend of a headless machine: the file it is
    return True


def _keyring_get(provider: str) -> str | None:
    keyring = _keyring()
    if keyring is None:
        return None
    from keyring.errors import KeyringError

    try:
        value = keyring.get_password(KEYRING_SERVICE, provider)
    except (KeyringError, OSError, RuntimeError):
        return None
    return value if isinstance(value, str) and value else None


def _keyring_delete(provider: str) -> None:
    keyring = _keyring()
    if keyring is None:
        return
    import contextlib

    from keyring.errors import KeyringError

    # Already gone, or the keyring is locked: either way the file no longer names it.
    with contextlib.suppress(KeyringError, OSError, RuntimeError):
        keyring.delete_password(KEYRING_SERVICE, provider)
