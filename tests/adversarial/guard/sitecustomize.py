"""Loaded into every agent the adversarial suite spawns (PYTHONPATH): a safety net that keeps
the machine's traffic on loopback even if a bug under test would send it elsewhere.

An audit hook refuses (PermissionError, an OSError the agent treats as a failed connection)
``connect`` to any address that is not loopback, and name lookups of anything but a numeric
address or ``localhost`` (a DNS query would leave the machine). Each refusal is appended to
``$IAC_ADV_GUARD_LOG``; the suite fails a test whose agent tried.

``$IAC_ADV_GUARD_HOSTS`` (``name=address[,address]; ...``) is a fake DNS: those names resolve
to those addresses without a query, so a test can name an internal address the way an attacker
would, with a host name that resolves there.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys

_LOG = os.environ.get("IAC_ADV_GUARD_LOG")


def _numeric(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        return True
    except ValueError:
        pass
    try:
        socket.inet_aton(host)  # the forms getaddrinfo reads without DNS: 127.1, 0x7f000001
        return True
    except (OSError, ValueError):
        return False


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _refuse(what: str) -> None:
    if _LOG:
        with open(_LOG, "a") as log:
            log.write(f"{os.getpid()} {what}\n")
    raise PermissionError(f"adversarial guard: {what} refused (loopback only)")


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == "socket.connect":
        address = args[1]
        if (
            isinstance(address, tuple)
            and address
            and isinstance(address[0], str)
            and not _loopback(address[0])
        ):
            _refuse(f"connect {address!r}")
    elif event == "socket.getaddrinfo":
        host = args[0]
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        if isinstance(host, str) and host not in ("localhost", "") and not _numeric(host):
            _refuse(f"getaddrinfo {host!r}")


def _fake_dns(table: str) -> None:
    names = {}
    for entry in filter(None, (e.strip() for e in table.split(";"))):
        name, _, addresses = entry.partition("=")
        names[name.lower()] = [a.strip() for a in addresses.split(",")]
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        key = host.decode("ascii", "replace") if isinstance(host, bytes) else host
        if isinstance(key, str) and key.lower().rstrip(".") in names:
            return [
                info
                for address in names[key.lower().rstrip(".")]
                for info in real(address, port, *args, **kwargs)
            ]
        return real(host, port, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


if os.environ.get("IAC_ADV_GUARD_HOSTS"):
    _fake_dns(os.environ["IAC_ADV_GUARD_HOSTS"])
sys.addaudithook(_hook)
