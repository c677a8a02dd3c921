"""The answer to ``initialize``: one builder, :func:`initialize_result`, in wire form.

``Agent.initialize`` answers with it (the params are negotiated there). It is a plain dict of
the wire's camelCase names, read into ``protocol.messages.InitializeResponse`` by the
converter, so a field added here is checked against the message classes.
"""

from __future__ import annotations

from typing import Any

import iaccode

PROTOCOL_VERSION = 1
"""The ACP version we speak; any other one asked for is answered with this one."""


def initialize_result(methods: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``initialize`` result in wire form, offering the auth ``methods``
    (``iaccode.llm.providers.auth_methods``)."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "sessionCapabilities": {
                "list": {},
                "close": {},
                "resume": {},
                "fork": {},
                "delete": {},
                "additionalDirectories": {},
            },
            "mcpCapabilities": {"http": True, "sse": True},
            "auth": {"logout": {}},  # forgets the key `iaccode login` saved (Agent.logout)
        },
        "agentInfo": {"name": "iaccode", "version": iaccode.__version__, "title": "iac-code"},
        "authMethods": methods,
        "_meta": {"steering": {"supported": True}},  # _session/steering (``Agent.steer``)
    }
