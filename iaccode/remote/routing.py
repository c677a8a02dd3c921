"""Which of a connection's streams each agent message belongs on (the RFD's two kinds).

The connection-scoped stream (a GET with ``Acp-Connection-Id`` alone) carries what is not about
one session, and the answers to ``session/new``, ``load``, ``resume``, ``fork`` and ``list``:
the RFD puts them there because a client may not have the session's stream yet. A
session-scoped stream (``Acp-Connection-Id`` + ``Acp-Session-Id``) carries everything else
about its session: its updates, the agent's requests (permission questions, elicitations, fs
and terminal calls) and the answers to the client's requests about it.

A message is about session S when its params name S (the agent's notifications and
requests), or when it answers a client request whose params named S. The router remembers
each client request until it is answered, and which sessions this connection holds (opened
by the answers to new, load, resume and fork; dropped by those to close and delete).
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

CONNECTION_ANSWERS = frozenset(
    {
        "initialize",
        "authenticate",
        "logout",
        "session/new",
        "session/load",
        "session/resume",
        "session/fork",
        "session/list",
    }
)
"""Requests answered on the connection-scoped stream."""

SESSION_SCOPED_METHODS = frozenset(
    {
        "session/prompt",
        "session/cancel",
        "session/set_mode",
        "session/set_model",
        "session/set_config_option",
        "session/close",
        "_session/steering",
    }
)
"""Client messages that must name their session in ``Acp-Session-Id``: those about a session
the client already holds. (A client may send load, resume, fork and delete without it, as
the Python SDK does; when it is sent it must match.)"""

_OPENED_BY_RESULT = frozenset({"session/new", "session/fork"})
_OPENED_BY_PARAMS = frozenset({"session/load", "session/resume"})
_CLOSED_BY = frozenset({"session/close", "session/delete"})


@frozen
class Destination:
    session: str | None
    """The session the message is about (kept in order with its other messages), or None."""
    on_session_stream: bool
    """It goes on that session's stream while one is open (else on the connection's)."""


CONNECTION = Destination(None, False)


def _key(request_id: Any) -> tuple[str, Any]:
    return (type(request_id).__name__, request_id)  # 1, True and "1" are different ids


def session_of(message: Any) -> str | None:
    """``params.sessionId`` of a request or notification, if it is a string."""
    params = message.get("params") if isinstance(message, dict) else None
    session_id = params.get("sessionId") if isinstance(params, dict) else None
    return session_id if isinstance(session_id, str) else None


def request_id_of(message: Any) -> Any:
    """The id of a request (a string or an integer), else None."""
    if isinstance(message, dict) and isinstance(message.get("method"), str):
        request_id = message.get("id")
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            return request_id
    return None


class Router:
    """The client's open requests and the connection's sessions, for ``destination``."""

    def __init__(self) -> None:
        self._requests: dict[tuple[str, Any], tuple[str, str | None]] = {}
        self.sessions: set[str] = set()
        """The sessions this connection holds, as the agent's answers said."""

    def client_sent(self, message: Any) -> None:
        """Note a message from the client (a request is remembered until it is answered)."""
        request_id = request_id_of(message)
        if request_id is not None:
            self._requests[_key(request_id)] = (message["method"], session_of(message))

    def destination(self, message: Any) -> Destination:
        """Where an agent message goes (``message`` as parsed; anything unreadable: the
        connection's stream)."""
        if not isinstance(message, dict):
            return CONNECTION
        if "method" in message:
            session = session_of(message)
            return CONNECTION if session is None else Destination(session, True)
        asked = self._requests.pop(_key(message.get("id")), None)
        if asked is None:
            return CONNECTION
        method, session = asked
        result = message.get("result")
        if isinstance(result, dict):
            self._note_answer(method, session, result)
        if session is None:
            return CONNECTION
        return Destination(session, method not in CONNECTION_ANSWERS)

    def _note_answer(self, method: str, session: str | None, result: dict[str, Any]) -> None:
        if method in _OPENED_BY_RESULT and isinstance(result.get("sessionId"), str):
            self.sessions.add(result["sessionId"])
        elif method in _OPENED_BY_PARAMS and session is not None:
            self.sessions.add(session)
        elif method in _CLOSED_BY and session is not None:
            self.sessions.discard(session)
