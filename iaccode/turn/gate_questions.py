"""The permission question for a change a gate reports while a bash call runs.

It is a question about the running call: the same ``toolCallId``, so the editor shows it on
the card of the command that started the CLI (Zed and acpx put the buttons there). It names
the change (a handler's title names its target: ``terraform apply · workspace prod · ...``),
shows what a handler adds (a plan), the exact argv the program got, the real program, the
folder, what started it and the command line it came from, and offers *Allow once*, *Reject*
and *Always reject*: never *Always allow*. Plan mode refuses without asking, and an *Always
reject* for bash holds. Once answered, the card gets its title, status and content back
(``in_progress``: the command is still running). The argv is the one the program got, after
the shell's expansions, so what the question shows is redacted like a tool's output
(:mod:`iaccode.tools.redacted`).

A protected target (``[iac] protected``; the handler names it: ``GateQuestion.confirm``) needs
more than a click: an elicitation form (``elicitation/create``, on the running call) where the
user types the target's name, and only the exact name goes ahead. An editor that cannot show
one (no ``elicitation.form`` capability) gets a refusal that tells the user to run the command
themselves.

A program that runs without the held cloud credentials (not the CLI on the agent's PATH) is
an advisory for the user (``Editor.advise``: a ``notice`` where the client shows them).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from attrs import evolve

from iaccode.gate.channel import Asker, GatePolicy, GateQuestion
from iaccode.protocol.elicitation import Elicitation, text_form
from iaccode.protocol.tool_calls import ToolCallContent, ToolCallFields, ToolCallProgress
from iaccode.redaction import redact
from iaccode.tools.redacted import redacted_content
from iaccode.turn import permissions
from iaccode.turn.env import EditorAccess, ToolEnv
from iaccode.turn.permissions import Answer

FIELD = "confirm"
"""The protected target's form: its one field, the name typed."""


def gate_policy(
    env: ToolEnv,
    call: ToolCallFields,
    command: str,
    approved: frozenset[tuple[str, ...]],
    shown: Callable[[], list[ToolCallContent] | None],
) -> GatePolicy:
    """What the gates of one call of a gated tool (bash) go by: ``call.name`` is the tool whose
    *Always reject* they honour. ``shown``: what the call's card shows now (its terminal), put
    back after a question."""
    config = env.config

    async def advise(message: str) -> None:
        await env.editor.advise(message, title="Cloud credentials held back")

    return GatePolicy(
        _asker(env, call, command, shown),
        confirm=config.confirm_infra_changes,
        hold_credentials=config.hold_credentials,
        approved=approved,
        advise=advise,
        protected=config.protected,
    )


def _asker(
    env: ToolEnv,
    call: ToolCallFields,
    command: str,
    shown: Callable[[], list[ToolCallContent] | None],
) -> Asker:
    session, editor = env.session, env.editor

    async def ask(question: GateQuestion) -> str | None:
        if session.mode() == "plan":
            return permissions.gate_refusal(question, "plan mode is on")
        if session.remembered.get(call.name or "") is False:
            return permissions.gate_refusal(
                question, f"the user chose Always reject for {call.name}"
            )
        try:
            if question.confirm is not None:
                return await confirm_by_name(editor, call, question, command)
            answer = await put(editor, call, question, command, session.remembered)
        finally:
            await editor.send_update(
                ToolCallProgress(
                    call.tool_call_id,
                    status="in_progress",
                    title=call.title,
                    content=shown() or [],
                    name=call.name,
                )
            )
        if answer is Answer.ALLOW:
            return None
        if answer is Answer.CANCELLED:
            session.cancel_turn()
            return permissions.gate_refusal(question, "the user cancelled the turn")
        return permissions.gate_refusal(question, "refused by the user")

    return ask


def _fields(call: ToolCallFields, question: GateQuestion, command: str) -> ToolCallFields:
    fields = permissions.gate_question(call, question, command)
    return evolve(
        fields,
        title=fields.title and redact(fields.title),
        content=redacted_content(fields.content),
    )


async def put(
    editor: EditorAccess,
    call: ToolCallFields,
    question: GateQuestion,
    command: str,
    remembered: dict[str, bool],
) -> Answer:
    """The permission question itself, on ``call`` (no *Always allow*)."""
    return await permissions.ask(
        editor,
        _fields(call, question, command),
        call.name or "",
        remembered,
        permissions.ONCE_OPTIONS,
    )


async def confirm_by_name(
    editor: EditorAccess, call: ToolCallFields, question: GateQuestion, command: str
) -> str | None:
    """The user types the protected target's name (``question.confirm``) to let the change go
    ahead; None when typed exactly, else what the model is told. The card shows the question
    meanwhile."""
    assert question.confirm is not None
    what, name = question.confirm
    argv = shlex.join(question.request.argv)
    if "form" not in editor.elicitation_modes:
        return (
            f"iac-code: `{argv}` was not run: the {what} {name} is protected ([iac] "
            "protected in config.toml) and this editor cannot ask the user to type its "
            "name (it has no elicitation forms). Tell the user to run the command "
            f"themselves, in their own terminal, if they mean it:\n  {argv}"
        )
    fields = _fields(call, question, command)
    await editor.send_update(
        ToolCallProgress(
            call.tool_call_id,
            status="in_progress",
            title=fields.title,
            content=fields.content,
            name=call.name,
        )
    )
    message = (
        f"{fields.title}\n\n{redact(permissions.gate_question_text(question, command))}"
        f"\n\nThe {what} {name} is protected. Type its name, {name}, to go ahead; "
        "anything else stops the change."
    )
    answer = await editor.elicit(
        Elicitation(
            message,
            requested_schema=text_form(
                FIELD, f"Type {name} to go ahead", f"The name of the protected {what}"
            ),
            tool_call_id=call.tool_call_id,
        )
    )
    if answer is None:
        return (
            f"iac-code: `{argv}` was not run: the confirmation for the protected {what} "
            f"{name} got no answer."
        )
    if not answer.accepted:
        return (
            f"iac-code: `{argv}` was not run: the user declined the change to the "
            f"protected {what} {name}."
        )
    if (answer.content or {}).get(FIELD) != name:
        return (
            f"iac-code: `{argv}` was not run: the name typed to confirm the change to the "
            f"protected {what} {name} did not match it."
        )
    return None
