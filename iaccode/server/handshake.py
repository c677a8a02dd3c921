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


def initialize_result(auth_method: tuple[str, str, str | None] | None) -> dict[str, Any]:
    """The ``initialize`` result in wire form, with ``auth_method`` (id, name, description)
    offered when the provider still lacks its key (None: it has it)."""
    methods = []
    if auth_method is not None:
        method_id, name, description = auth_method
        method = {"id": method_id, "name": name}
        if description is not None:  # as the converter leaves out a None field
            method["description"] = description
        methods.append(method)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "sessionCapabilities": {"list": {}, "close": {}, "resume": {}, "fork": {},
                                    "delete": {}},
            "mcpCapabilities": {"http": True, "sse": True},
        },
        "agentInfo": {"name": "iaccode", "version": iaccode.__version__, "title": "iac-code"},
        "authMethods": methods,
        "_meta": {"steering": {"supported": True}},  # _session/steering (``Agent.steer``)
    }
