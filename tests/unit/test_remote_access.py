"""What every request to ``iaccode serve`` passes on its headers alone, in-process."""

from __future__ import annotations

import pytest

from iaccode.remote.access import Access, Refusal, host_name, printable

TOKEN = "unit-token-0123456789"


def scope(path: str = "/acp") -> dict[str, object]:
    return {"type": "http", "path": path, "headers": []}


def refused(access: Access, path: str = "/acp", **headers: str) -> int | None:
    try:
        access.check(
            scope(path), {name.replace("_", "-"): value for name, value in headers.items()}
        )
    except Refusal as refusal:
        return refusal.status
    return None


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("/acp\n2026-01-01 INFO forged", "/acp\\n2026-01-01 INFO forged"),
        ("\x1b[2J\u202e\x7f\x00", "\\x1b[2J\\u202e\\x7f\\x00"),
        ("plain /acp", "plain /acp"),
    ],
)
def test_printable_keeps_a_value_on_one_line(given: str, shown: str) -> None:
    assert printable(given) == shown
    assert printable("x" * 500).endswith("...") and len(printable("x" * 500)) < 210


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("[::1]:8765", "::1"),
        ("[::1]", "::1"),
        ("ACP.Example.com", "acp.example.com"),
        ("localhost.:80", "localhost."),
        ("a:b:c", "a:b:c"),
    ],
)
def test_host_name(header: str, name: str) -> None:
    assert host_name(header) == name


def test_the_checks_in_their_order() -> None:
    access = Access(TOKEN, ["https://app.example.com"], ["acp.example.com"])
    access.allow_own_origins(["http://127.0.0.1:8765"])
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert refused(access, host="attacker.example:8765", **auth) == 421
    assert refused(access, host="localhost.attacker.example", **auth) == 421
    for host in (
        "127.0.0.1:8765",
        "[::1]:8765",
        "10.0.0.7",
        "localhost:1",
        "LOCALHOST.",
        "acp.example.com",
        "",
    ):
        assert refused(access, host=host, **auth) is None, host
    assert refused(access, origin="http://evil.example", **auth) == 403
    assert refused(access, origin="http://localhost:8765", **auth) is None
    assert refused(access, origin="https://app.example.com/", **auth) is None
    assert refused(access) == 401
    assert refused(access, authorization=f"Basic {TOKEN}") == 401
    assert refused(access, authorization="Bearer " + TOKEN[:-1]) == 401
    assert refused(access, "/other", **auth) == 404
