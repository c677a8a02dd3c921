"""The method table and dispatch: the one place where wire messages meet handlers.

Every request is decoded strictly into its params type (-32602 naming the bad field), checked
against the handshake (nothing but ``initialize`` before ``initialize``), and answered with the
handler's result in wire form. The session's InvalidParams is -32602 with its problems;
exceptions other than RpcError are the connection's business (-32603 with a logged
traceback).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from attrs import frozen

from iaccode.checks import deeper_than
from iaccode.protocol import messages as m
from iaccode.protocol.convert import ParamsError, from_wire, to_wire
from iaccode.server.agent import Agent
from iaccode.session.errors import InvalidParams
from iaccode.wire import errors
from iaccode.wire.connection import ThenNotify

log = logging.getLogger(__name__)


@frozen
class Route:
    params: type
    handler: Callable[..., Any]
    """Unbound Agent method: (agent, params) or, when ``ordered``, (agent, params, ready)."""
    ordered: bool = False
    """The handler calls ``ready()`` itself once later messages may be read."""


REQUESTS: dict[str, Route] = {
    "initialize": Route(m.InitializeRequest, Agent.initialize),
    "authenticate": Route(m.AuthenticateRequest, Agent.authenticate),
    "logout": Route(m.Empty, Agent.logout),
    "session/new": Route(m.NewSessionRequest, Agent.new_session),
    "session/prompt": Route(m.PromptRequest, Agent.prompt, ordered=True),
    "session/close": Route(m.SessionRequest, Agent.close_session),
    "session/load": Route(m.LoadSessionRequest, Agent.load_session),
    "session/resume": Route(m.LoadSessionRequest, Agent.resume_session),
    "session/fork": Route(m.LoadSessionRequest, Agent.fork_session),
    "session/list": Route(m.ListSessionsRequest, Agent.list_sessions),
    "sessions/list": Route(m.ListSessionsRequest, Agent.list_sessions),  # older name
    "session/delete": Route(m.SessionRequest, Agent.delete_session),
    "session/set_mode": Route(m.SetModeRequest, Agent.set_mode),
    "session/set_config_option": Route(m.SetConfigOptionRequest, Agent.set_config_option),
    "config/set": Route(m.SetConfigOptionRequest, Agent.set_config_option),  # older name
    "_session/steering": Route(m.SteeringRequest, Agent.steer),  # extension: docs/conformance.md
}

NOTIFICATIONS: dict[str, Route] = {
    "session/cancel": Route(m.SessionRequest, Agent.cancel),
}


class Dispatcher:
    """Implements the connection's Handler protocol on top of an Agent."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def handle_request(self, method: str, params: Any, ready: Callable[[], None]) -> Any:
        route = REQUESTS.get(method)
        if route is None:
            if method in NOTIFICATIONS:
                raise errors.invalid_request(f"{method} is a notification: send it without an id")
            raise errors.method_not_found(method)
        if not self.agent.initialized and method != "initialize":
            raise errors.invalid_request(
                f"{method} before initialize: the connection must start with initialize"
            )
        decoded = _decode(params, route.params)
        try:
            if route.ordered:
                result = await route.handler(self.agent, decoded, ready)
            else:
                ready()
                result = await route.handler(self.agent, decoded)
        except InvalidParams as exc:  # the session's refusal of what the params ask
            raise errors.invalid_params(exc.problems) from exc
        if isinstance(result, ThenNotify):
            return ThenNotify(to_wire(result.result), result.then)
        return to_wire(result)

    async def handle_notification(self, method: str, params: Any) -> None:
        route = NOTIFICATIONS.get(method)
        if route is None:
            if not method.startswith("_"):
                log.warning("ignoring unknown notification %s", method)
            return
        if not self.agent.initialized:
            log.warning("ignoring %s before initialize", method)
            return
        route.handler(self.agent, _decode(params, route.params))

    def connection_closed(self) -> None:
        self.agent.shutdown()


MAX_PARAMS_DEPTH = 64
"""Params nested deeper are refused (-32602): no ACP message comes close, and deeper data would
exhaust the stack wherever it is copied or encoded again (history, replay)."""


def _decode(params: Any, cls: type) -> Any:
    if deeper_than(params, MAX_PARAMS_DEPTH):
        raise errors.invalid_params({"params": f"nested more than {MAX_PARAMS_DEPTH} levels deep"})
    try:
        return from_wire(params, cls)
    except ParamsError as exc:
        raise errors.invalid_params(exc.problems) from exc
