"""Which addresses web_fetch may connect to: only public internet ones (no SSRF).

The model chooses the URL, and a page it read may have chosen it for it, so the fetch must not
become a way into the machine's own network. Every hop, the first request and each redirect, is
vetted before any connection: the host name is resolved here, and the request is refused when
*any* address it resolves to is loopback, private, shared (CGNAT), link-local, multicast,
unspecified, reserved or a cloud metadata endpoint (IPv4 embedded in IPv6 included).

``ToolLimits.web_allowed_hosts`` (config.toml ``[tools] web_allowed_hosts``) exempts exact
``host:port`` pairs from the address refusal (an intranet server; tests serve pages on
127.0.0.1); a redirect to any other host or port is vetted as usual.
"""

from __future__ import annotations

import ipaddress

import trio

from iaccode.tool_result import ToolFailure
from iaccode.tools.base import ToolLimits
from iaccode.tools.web.client import IPAddress, UrlTarget

_METADATA_NAMES = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, ...
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wire server (a public address)
    )
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def address_refusal(ip: IPAddress) -> str | None:
    """Why fetching from ``ip`` is refused (``"a private address"``), or None if it is public."""
    if ip in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = [ip.ipv4_mapped, ip.sixtofour]
        if ip.teredo is not None:
            embedded.append(ip.teredo[1])
        if ip in _NAT64:
            embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        for inner in embedded:
            reason = address_refusal(inner) if inner is not None else None
            if reason is not None:
                return reason
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "not a public internet address"
    return None


async def resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses ``host`` resolves to, in order, without repeats (tests replace this)."""
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=trio.socket.SOCK_STREAM)
    except OSError as exc:
        raise ToolFailure(f"could not resolve the host name {host}: {exc}") from exc
    found: list[IPAddress] = []
    for info in infos:
        try:
            ip = ipaddress.ip_address(str(info[4][0]))
        except ValueError:
            continue
        if ip not in found:
            found.append(ip)
    if not found:
        raise ToolFailure(f"the host name {host} resolved to no usable address")
    return found


def _is_allowed(target: UrlTarget, limits: ToolLimits) -> bool:
    """Whether ``web_allowed_hosts`` names the target's host and port."""
    allowed = limits.web_allowed_hosts
    return f"{target.host}:{target.port}" in allowed or f"[{target.host}]:{target.port}" in allowed


async def vet(target: UrlTarget, limits: ToolLimits) -> list[IPAddress]:
    """The addresses to connect to for ``target``; raises ToolFailure when it is refused."""
    refused = f"refused to fetch {target.url}:"
    only = "web_fetch only fetches from public internet addresses."
    if target.host in _METADATA_NAMES:
        raise ToolFailure(f"{refused} {target.host} is a cloud metadata host. {only}")
    allowed = _is_allowed(target, limits)
    if not allowed and (target.host == "localhost" or target.host.endswith(".localhost")):
        raise ToolFailure(f"{refused} {target.host} is a loopback name. {only}")
    addresses = [target.ip] if target.ip is not None else await resolve(target.host, target.port)
    if not allowed:
        for ip in addresses:
            reason = address_refusal(ip)
            if reason is not None:
                how = "is" if target.ip is not None else f"resolves to {ip}, which is"
                raise ToolFailure(f"{refused} {target.host} {how} {reason}. {only}")
    return addresses
