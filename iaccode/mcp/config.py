"""Which MCP servers a session connects to: the editor's ``mcpServers`` and config.toml's.

Editors pass servers in ``session/new`` / ``load`` / ``resume`` / ``fork`` (ACP ``McpServer``):

    {"name": "db", "command": "/usr/bin/db-mcp", "args": [], "env": [{"name": "K", "value": "v"}]}
    {"type": "http", "name": "tracker", "url": "https://...",
     "headers": [{"name": "Authorization", "value": "Bearer ..."}]}
    {"type": "sse", "name": "legacy", "url": "https://...", "headers": []}

The user's own servers live in config.toml, one table each (``env`` and ``headers`` are tables):

    [mcp_servers.terraform]
    command = "terraform-mcp-server"
    args = ["stdio"]
    env = { TF_LOG = "info" }

    [mcp_servers.tracker]
    type = "http"                      # or "sse"; a table with `url` and no type is "http"
    url = "https://tracker.example/mcp"
    headers = { Authorization = "Bearer ..." }
    trusted = true                     # its tools that may change infrastructure follow the
                                       # modes (else they ask in every mode)

An editor's server with the same name as a config.toml one wins (``merge``). Nothing here
imports the ``mcp`` SDK: parsing happens at start-up and for every ``session/new``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from attrs import field, frozen

Transport = Literal["stdio", "http", "sse"]


class ServerConfigError(ValueError):
    """A server description we cannot use; ``where`` names the field (``mcpServers[0].url``)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


@frozen
class ServerSpec:
    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(factory=dict)
    url: str = ""
    headers: Mapping[str, str] = field(factory=dict)
    origin: Literal["editor", "config"] = "editor"
    trusted: bool = False
    """``[mcp_servers.NAME] trusted = true``: its tools that may change real infrastructure
    follow the modes like any tool (else they ask in every mode)."""


def from_acp(servers: list[Any]) -> list[ServerSpec]:
    """The editor's ``mcpServers``; raises ServerConfigError naming the bad field."""
    if not isinstance(servers, list):
        raise ServerConfigError("mcpServers", "must be an array")
    specs: list[ServerSpec] = []
    for index, raw in enumerate(servers):
        where = f"mcpServers[{index}]"
        if not isinstance(raw, dict):
            raise ServerConfigError(where, "must be an object")
        kind = raw.get("type", "stdio")
        name = _string(raw, "name", where)
        if kind == "stdio":
            specs.append(
                ServerSpec(
                    name,
                    "stdio",
                    command=_string(raw, "command", where),
                    args=tuple(_strings(raw.get("args", []), f"{where}.args")),
                    env=_pairs(raw.get("env", []), f"{where}.env"),
                )
            )
        elif kind in ("http", "sse"):
            specs.append(
                ServerSpec(
                    name,
                    kind,
                    url=_url(raw, where),
                    headers=_pairs(raw.get("headers", []), f"{where}.headers"),
                )
            )
        else:
            raise ServerConfigError(
                f"{where}.type", f'must be "http" or "sse" (or absent for stdio), got {kind!r}'
            )
    _unique(specs, "mcpServers")
    return specs


def from_toml(table: Any, where: str = "mcp_servers") -> list[ServerSpec]:
    """config.toml's ``[mcp_servers]`` table; raises ServerConfigError naming the key."""
    if not isinstance(table, dict):
        raise ServerConfigError(where, "must be a table of servers ([mcp_servers.NAME])")
    specs: list[ServerSpec] = []
    for name, raw in table.items():
        at = f"{where}.{name}"
        if not isinstance(raw, dict):
            raise ServerConfigError(at, "must be a table")
        raw = dict(raw)
        trusted = raw.pop("trusted", False)
        if not isinstance(trusted, bool):
            raise ServerConfigError(f"{at}.trusted", "must be a boolean")
        stdio_keys = {"command", "args", "env"}
        remote_keys = {"type", "url", "headers"}
        unknown = set(raw) - stdio_keys - remote_keys
        if unknown:
            raise ServerConfigError(
                f"{at}.{sorted(unknown)[0]}",
                "unknown key; the keys are "
                "command, args, env (stdio) or type, url, headers, and "
                "trusted",
            )
        if "command" in raw:
            if set(raw) & remote_keys:
                raise ServerConfigError(at, "has both command (stdio) and url/type/headers")
            env = raw.get("env", {})
            specs.append(
                ServerSpec(
                    name,
                    "stdio",
                    command=_string(raw, "command", at),
                    args=tuple(_strings(raw.get("args", []), f"{at}.args")),
                    env=_table(env, f"{at}.env"),
                    origin="config",
                    trusted=trusted,
                )
            )
            continue
        kind = raw.get("type", "http")
        if kind not in ("http", "sse"):
            raise ServerConfigError(f"{at}.type", f'must be "http" or "sse", got {kind!r}')
        if set(raw) & {"args", "env"}:
            raise ServerConfigError(at, "args and env are for stdio servers (with command)")
        specs.append(
            ServerSpec(
                name,
                kind,
                url=_url(raw, at),
                headers=_table(raw.get("headers", {}), f"{at}.headers"),
                origin="config",
                trusted=trusted,
            )
        )
    return specs


SECRET_HEADERS = frozenset({"AUTHORIZATION", "PROXY_AUTHORIZATION", "COOKIE"})
"""Headers that carry credentials whatever the rule of names says."""


def spec_secrets(spec: ServerSpec) -> list[tuple[str, str]]:
    """(name, value) of the secrets the agent hands ``spec``'s server: its ``env`` variables
    that are secrets by the one rule (:func:`iaccode.secret_env.is_secret`), the values of
    its command line's options that are (``--access-token X``, ``--api-key=X``) and the
    password of a URL on it (``--db postgres://u:pw@db/x``), and its
    headers that are (``X-Api-Key`` read as ``X_API_KEY``) or that always carry credentials
    (``Authorization``, ``Cookie``), with the credential of an ``Authorization: Bearer X`` on
    its own too. The agent holds them as its own (replaced in output, refused in URLs)."""
    from iaccode.secret_env import is_secret, url_password  # with a server only (start-up)

    found = [(name, value) for name, value in spec.env.items() if is_secret(name, value)]
    for index, arg in enumerate(spec.args):
        if (password := url_password(arg)) is not None:  # a database URL, as in env
            found.append(
                (
                    spec.args[index - 1]
                    if index and spec.args[index - 1].startswith("-")
                    else "argument",
                    password,
                )
            )
        option, equals, value = arg.partition("=")
        if not option.startswith("-"):
            continue
        if not equals:
            value = spec.args[index + 1] if index + 1 < len(spec.args) else ""
        variable = "_" + option.lstrip("-").upper().replace("-", "_")
        if value and not value.startswith("-") and is_secret(variable):
            found.append((option, value))
    for name, value in spec.headers.items():
        as_variable = name.upper().replace("-", "_")
        if as_variable in SECRET_HEADERS or is_secret(as_variable, value):
            found.append((name, value))
            scheme, _, credential = value.strip().partition(" ")
            if credential.strip() and scheme.isalpha():
                found.append((name, credential.strip()))
    return found


def merge(user: Iterable[ServerSpec], editor: Iterable[ServerSpec]) -> list[ServerSpec]:
    """config.toml's servers and the editor's, by name; the editor's wins a clash."""
    by_name = {spec.name: spec for spec in user}
    by_name.update({spec.name: spec for spec in editor})
    return list(by_name.values())


def _string(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ServerConfigError(f"{where}.{key}", "must be a non-empty string")
    if "\0" in value:
        raise ServerConfigError(f"{where}.{key}", "must not contain NUL")
    return value


def _url(raw: Mapping[str, Any], where: str) -> str:
    url = _string(raw, "url", where)
    if not url.startswith(("http://", "https://")):
        raise ServerConfigError(f"{where}.url", f"must be an http:// or https:// URL, got {url!r}")
    return url


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ServerConfigError(where, "must be an array of strings")
    if any("\0" in v for v in value):
        raise ServerConfigError(where, "must not contain NUL")
    return value


def _pairs(value: Any, where: str) -> dict[str, str]:
    """ACP's ``[{name, value}, ...]`` (EnvVariable, HttpHeader) as a dict."""
    if not isinstance(value, list):
        raise ServerConfigError(where, "must be an array of {name, value} objects")
    pairs: dict[str, str] = {}
    for index, item in enumerate(value):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("value"), str)
        ):
            raise ServerConfigError(
                f"{where}[{index}]", 'must be {"name": string, "value": string}'
            )
        pairs[item["name"]] = item["value"]
    return pairs


def _table(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ServerConfigError(where, "must be a table of strings")
    return dict(value)


def _unique(specs: list[ServerSpec], where: str) -> None:
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ServerConfigError(where, f"two servers are named {spec.name!r}")
        seen.add(spec.name)
