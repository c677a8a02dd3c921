"""ACP elicitation: the agent asks the user for structured input (``elicitation/create``).

The client says what it can show in ``initialize``: ``clientCapabilities.elicitation.form``
(a form the client renders from a JSON Schema of primitive fields) and ``.url`` (the client
sends the user to a URL); a mode it did not advertise must not be asked for. The request is
tied to a session (and, optionally, to one of its tool calls, which the client may show it
beside); the answer's ``action`` is ``accept`` (with ``content``: the form's values),
``decline`` or ``cancel``. An agent that no longer needs the answer (the turn was cancelled)
cancels the request with ``$/cancel_request``, as for any request.

The form's schema is kept as JSON (``requested_schema``), so a schema made elsewhere (an MCP
server's elicitation, passed through) goes out as it came; :func:`text_form` builds the
common one-field form. The editor's answer (:class:`CreateElicitationResponse`) is structured
where it arrives (``iaccode.session.editor``) and read into :class:`ElicitationAnswer`.

URL mode's ``elicitation/complete`` notification (the agent telling the client that the
out-of-band step finished) has its params here; nothing of ours sends it yet.
"""

from __future__ import annotations

from typing import Any, Literal

from attrs import frozen

Meta = dict[str, Any] | None

ElicitationMode = Literal["form", "url"]
ElicitationAction = Literal["accept", "decline", "cancel"]


@frozen
class CreateElicitationRequest:
    """``elicitation/create``, scoped to a session (and to a tool call when one is given):
    ``form`` mode with ``requested_schema``, or ``url`` mode with ``url`` and
    ``elicitation_id``."""

    session_id: str
    mode: str
    message: str
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None
    tool_call_id: str | None = None
    meta: Meta = None


@frozen
class CompleteElicitationNotification:
    """``elicitation/complete``: a URL-mode elicitation is done."""

    elicitation_id: str
    meta: Meta = None


@frozen
class CreateElicitationResponse:
    """The editor's answer to ``elicitation/create``: ``accept`` (with the form's ``content``),
    ``decline`` or ``cancel``; another action a newer client may send is kept as it came."""

    action: str
    content: dict[str, Any] | None = None
    meta: Meta = None


@frozen
class Elicitation:
    """What a caller asks (the session is the editor facade's to add)."""

    message: str
    mode: ElicitationMode = "form"
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None
    tool_call_id: str | None = None

    def request(self, session_id: str) -> CreateElicitationRequest:
        return CreateElicitationRequest(
            session_id,
            self.mode,
            self.message,
            self.requested_schema,
            self.url,
            self.elicitation_id,
            self.tool_call_id,
        )


@frozen
class ElicitationAnswer:
    """The user's answer: ``accept`` with the form's ``content``, ``decline`` or ``cancel``
    (another action a newer client may send is kept as it came)."""

    action: str
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


def text_form(field: str, title: str, description: str | None = None) -> dict[str, Any]:
    """The schema of a form with one required text field."""
    prop: dict[str, Any] = {"type": "string", "title": title}
    if description:
        prop["description"] = description
    return {"type": "object", "properties": {field: prop}, "required": [field]}
