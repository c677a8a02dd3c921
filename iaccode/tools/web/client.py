"""The HTTP side of web_fetch: URLs parsed and normalized, one GET over h11 on a trio stream.

The exchange is done here rather than with an HTTP library so that the connection goes to the
address :mod:`~iaccode.tools.web.addresses` vetted, not to the host name again (a DNS answer
cannot change between the check and the connect); TLS checks the certificate against the host
name the URL gave. Nothing here decides what may be fetched: the caller vets each hop, redirects
included, and says how much of a body to read.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import ssl
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import h11
import trio
from attrs import frozen

from iaccode import __version__
from iaccode.tool_result import ToolFailure

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
BodyBudget = Callable[[int, list[tuple[str, str]]], int]
"""(status, headers with lowercased names) -> how many body bytes to read."""

USER_AGENT = f"iac-code/{__version__} (web_fetch)"
ACCEPT = "text/html, text/plain, application/json;q=0.9, */*;q=0.5"
REDIRECTS = frozenset({301, 302, 303, 307, 308})

_CHUNK = 64 * 1024
_MAX_URL_CHARS = 8_192
_HOST_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_URL_SAFE = "!#$%&'()*+,/:;=?@[]~-._"


@frozen
class UrlTarget:
    """Where a URL leads, checked and normalized."""

    url: str
    """The URL as fetched: normalized, without credentials or fragment."""
    scheme: str
    host: str
    """ASCII host name, or an IP address without brackets."""
    port: int
    ip: IPAddress | None
    """The address, when the URL gave one instead of a name."""
    request_target: str
    host_header: str


def parse_url(raw: str) -> UrlTarget:
    raw = raw.strip()
    if not raw:
        raise ToolFailure("the URL is empty")
    if len(raw) > _MAX_URL_CHARS:
        raise ToolFailure(f"the URL is longer than {_MAX_URL_CHARS} characters")
    if _CONTROL.search(raw.replace(" ", "")):
        raise ToolFailure(f"the URL contains control characters: {raw!r}")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise ToolFailure(f"not a valid URL: {raw!r} ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        what = f"{scheme}:" if scheme else "a URL without a scheme"
        raise ToolFailure(f"only http and https URLs can be fetched, not {what} ({raw})")
    if parts.username is not None or parts.password is not None:
        raise ToolFailure("URLs with credentials (user:password@host) are not fetched")
    host = parts.hostname or ""
    if not host:
        raise ToolFailure(f"the URL has no host: {raw}")
    if port is None:
        port = 443 if scheme == "https" else 80
    if port == 0:
        raise ToolFailure(f"port 0 cannot be fetched: {raw}")
    ip: IPAddress | None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is None:
        host = host.rstrip(".")
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ToolFailure(f"not a valid host name: {host!r}") from exc
        if not _HOST_NAME.fullmatch(host):
            raise ToolFailure(f"not a valid host name: {host!r}")
        netloc_host = host
    else:
        host = str(ip)
        netloc_host = f"[{host}]" if ip.version == 6 else host
    default_port = port == (443 if scheme == "https" else 80)
    host_header = netloc_host if default_port else f"{netloc_host}:{port}"
    path = _quote(parts.path) or "/"
    request_target = f"{path}?{_quote(parts.query)}" if parts.query else path
    url = f"{scheme}://{host_header}{request_target}"
    return UrlTarget(url, scheme, host, port, ip, request_target, host_header)


def _quote(part: str) -> str:
    return quote(part, safe=_URL_SAFE)


async def open_stream(ip: str, port: int) -> trio.abc.Stream:
    """A TCP connection to an address already vetted (tests replace this)."""
    return await trio.open_tcp_stream(ip, port)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


@frozen
class Response:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    """Names lowercased."""
    body: bytes
    cut: bool
    """The body was longer than what was read."""

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


class _Decoder:
    """Undoes a gzip/deflate content encoding (sent despite ``Accept-Encoding: identity``)."""

    def __init__(self, encoding: str | None) -> None:
        name = (encoding or "identity").strip().lower()
        self._zlib: Any = None
        if name in ("gzip", "x-gzip", "deflate"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
        elif name not in ("", "identity"):
            raise ToolFailure(
                f"the response uses the content encoding {name!r}, which web_fetch does not support"
            )

    def decode(self, data: bytes, room: int) -> bytes:
        """At most ``room + 1`` bytes; more than ``room`` tells the body goes on."""
        if self._zlib is None:
            return data[: room + 1]
        try:
            out: bytes = self._zlib.decompress(data, room + 1)
        except zlib.error as exc:
            raise ToolFailure(f"could not decompress the response body: {exc}") from exc
        return out


async def _next_event(conn: h11.Connection, stream: trio.abc.Stream) -> Any:
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(bytes(await stream.receive_some(_CHUNK)))  # b"" at the end
            continue
        if event is h11.PAUSED:
            raise ToolFailure("the server sent more than one response")
        return event


async def _connect(target: UrlTarget, addresses: list[IPAddress]) -> trio.abc.Stream:
    problems: list[str] = []
    for ip in addresses:
        try:
            tcp = await open_stream(str(ip), target.port)
            break
        except OSError as exc:
            problems.append(f"{ip}: {exc.strerror or exc}")
    else:
        raise ToolFailure(
            f"could not connect to {target.host} port {target.port} ({'; '.join(problems)})"
        )
    if target.scheme == "http":
        return tcp
    tls = trio.SSLStream(tcp, _tls_context(), server_hostname=target.host, https_compatible=True)
    try:
        await tls.do_handshake()
    except trio.BrokenResourceError as exc:
        await trio.aclose_forcefully(tls)
        raise ToolFailure(
            f"the TLS handshake with {target.host} failed: {exc.__cause__ or exc}"
        ) from exc
    except BaseException:
        await trio.aclose_forcefully(tls)
        raise
    return tls


async def exchange(target: UrlTarget, addresses: list[IPAddress], budget: BodyBudget) -> Response:
    """One GET, to the first vetted address that answers; ``budget`` says how much of the body
    to read once the status and headers are in (it may refuse the response instead)."""
    stream = await _connect(target, addresses)
    try:
        conn = h11.Connection(h11.CLIENT)
        request = h11.Request(
            method="GET",
            target=target.request_target,
            headers=[
                ("Host", target.host_header),
                ("User-Agent", USER_AGENT),
                ("Accept", ACCEPT),
                ("Accept-Encoding", "identity"),
                ("Connection", "close"),
            ],
        )
        data = (conn.send(request) or b"") + (conn.send(h11.EndOfMessage()) or b"")
        await stream.send_all(data)
        event = await _next_event(conn, stream)
        while isinstance(event, h11.InformationalResponse):
            event = await _next_event(conn, stream)
        if not isinstance(event, h11.Response):
            raise ToolFailure(f"{target.host} closed the connection without a response")
        headers = [
            (name.decode("latin-1").lower(), value.decode("latin-1"))
            for name, value in event.headers
        ]
        status = event.status_code
        reason = event.reason.decode("latin-1")
        most = budget(status, headers)
        decoder = _Decoder(next((v for k, v in headers if k == "content-encoding"), None))
        body = bytearray()
        cut = False
        while most > 0:
            event = await _next_event(conn, stream)
            if isinstance(event, h11.EndOfMessage):
                break
            if isinstance(event, h11.Data):
                room = most - len(body)
                piece = decoder.decode(bytes(event.data), room)
                if len(piece) > room:
                    body += piece[:room]
                    cut = True
                    break
                body += piece
        return Response(status, reason, headers, bytes(body), cut)
    except h11.RemoteProtocolError as exc:
        raise ToolFailure(f"{target.host} sent an invalid HTTP response: {exc}") from exc
    except h11.LocalProtocolError as exc:
        raise ToolFailure(f"could not make a request for {target.url}: {exc}") from exc
    except trio.BrokenResourceError as exc:
        raise ToolFailure(f"the connection to {target.host} broke: {exc.__cause__ or exc}") from exc
    finally:
        await trio.aclose_forcefully(stream)
