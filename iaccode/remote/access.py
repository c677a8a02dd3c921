"""What every request passes before anything else is read: the Host it names, its Origin, the
bearer token, the path. All four come from the request line and headers, so a refusal is sent
before a single body byte is read.

- ``Host`` must be a name the server answers to: an IP address (a DNS-rebinding page reaches us
  by a name of its own, never by our address), ``localhost``, or a name in ``[serve]
  allowed_hosts``. 421 otherwise.
- ``Origin``, when a browser sends one, must be the server's own address or in
  ``allowed_origins``. 403 otherwise.
- ``Authorization: Bearer <token>``, compared in constant time. 401 otherwise.
- The path must be ``/acp``. 404 otherwise.

Whatever of the request goes to the log passes through ``printable`` first: a path with
``%0A`` in it must not start a line of its own there.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Iterable
from typing import Any

ENDPOINT = "/acp"
SHOWN_CHARS = 200
"""Characters of a client-given value shown in the log or a refusal (the rest is cut)."""

Scope = dict[str, Any]


class Refusal(Exception):
    """An HTTP error answer: status, text, and for JSON-RPC refusals the error body's fields."""

    def __init__(
        self,
        status: int,
        text: str,
        *,
        rpc_code: int | None = None,
        request_id: Any = None,
        headers: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.rpc_code = rpc_code
        self.request_id = request_id
        self.headers = list(headers)

    def body(self) -> tuple[bytes, bytes]:
        """(content type, body)."""
        if self.rpc_code is None:
            return b"text/plain; charset=utf-8", self.text.encode() + b"\n"
        message = {
            "jsonrpc": "2.0",
            "id": self.request_id,
            "error": {"code": self.rpc_code, "message": self.text},
        }
        return b"application/json", json.dumps(message).encode()


def printable(value: object) -> str:
    """``value`` as one line of text: control and other unprintable characters escaped
    (``\\n``, ``\\x1b``, ``\\u202e``), cut to SHOWN_CHARS."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS] + "..."
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers, names lower-cased; repeated ones joined with ``, ``."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        found[key] = f"{found[key]}, {text}" if key in found else text
    return found


def peer_of(scope: Scope) -> tuple[str, int] | None:
    client = scope.get("client")
    return (str(client[0]), int(client[1])) if client else None


def shown_peer(scope: Scope) -> str:
    peer = peer_of(scope)
    return f"{peer[0]}:{peer[1]}" if peer else "unknown"


def host_name(host_header: str) -> str:
    """The name in a Host header, without its port or brackets, lower-cased."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, colon, port = host.rpartition(":")
    return name if colon and port.isdigit() else host


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class Access:
    """The checks of this server's token, origins and host names."""

    def __init__(self, token: str, origins: Iterable[str], hosts: Iterable[str]) -> None:
        self._token = token.encode()
        self._origins = {origin.lower() for origin in origins}
        self._hosts = {host.lower().rstrip(".") for host in hosts} | {"localhost"}

    def allow_own_origins(self, urls: Iterable[str]) -> None:
        """Pages served from our own address may call us (``http://127.0.0.1:8765``, ...)."""
        for url in urls:
            scheme, _, address = url.partition("://")
            self._origins.add(f"{scheme}://{address}".lower())
            host, _, port = address.rpartition(":")
            if host in ("127.0.0.1", "[::1]"):
                self._origins.add(f"{scheme}://localhost:{port}")

    def check(self, scope: Scope, headers: dict[str, str]) -> None:
        """Raise the Refusal this request gets, if any (from the headers alone)."""
        host = headers.get("host")  # HTTP/2's :authority too (hypercorn passes it as host)
        if host:  # none or empty: no name a rebinding page could have sent
            name = host_name(host).rstrip(".")
            if not (_is_address(name) or name in self._hosts):
                raise Refusal(
                    421,
                    f"this server does not answer to the host name "
                    f"{printable(name)!r} (add it to [serve] allowed_hosts)",
                )
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self._origins:
            raise Refusal(403, f"origin {printable(origin)!r} may not use this server")
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode("utf-8", "replace"), self._token
        ):
            raise Refusal(
                401,
                "missing or wrong bearer token",
                headers=[(b"www-authenticate", b'Bearer realm="iaccode"')],
            )
        if scope.get("path") != ENDPOINT:
            raise Refusal(404, f"no such endpoint; ACP is served on {ENDPOINT}")
