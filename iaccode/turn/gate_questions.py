"""The permission question for a change a gate reports while a bash call runs.

It is a question about the running call: the same ``toolCallId``, so the editor shows it on
the card of the command that started the CLI (Zed and acpx put the buttons there). It names
the change, shows the exact argv the program got, the real program, the folder, what started it
and the command line it came from, and offers *Allow once*, *Reject* and *Always reject*:
never *Always allow*. Plan mode refuses without asking, and an *Always reject* for bash holds.
Once answered, the card gets its title, status and content back (``in_progress``: the command
is still running). The argv is the one the program got, after the shell's expansions, so what
the question shows is redacted like a tool's output (:mod:`iaccode.tools.redacted`).

A program that runs without the held cloud credentials (not the CLI on the agent's PATH) is
an advisory for the user (``Editor.advise``: a ``notice`` where the client shows them).
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import evolve

from iaccode.gate.channel import Asker, GatePolicy, GateQuestion
from iaccode.protocol.tool_calls import ToolCallContent, ToolCallFields, ToolCallProgress
from iaccode.redaction import redact
from iaccode.tools.redacted import redacted_content
from iaccode.turn import permissions
from iaccode.turn.env import ToolEnv
from iaccode.turn.permissions import Answer


def gate_policy(env: ToolEnv, call: ToolCallFields, command: str,
                approved: frozenset[tuple[str, ...]],
                shown: Callable[[], list[ToolCallContent] | None]) -> GatePolicy:
    """What the gates of one bash call go by. ``shown``: what the call's card shows now (its
    terminal), put back after a question."""
    config = env.config

    async def advise(message: str) -> None:
        await env.editor.advise(message, title="Cloud credentials held back")

    return GatePolicy(_asker(env, call, command, shown), confirm=config.confirm_infra_changes,
                      hold_credentials=config.hold_credentials, approved=approved,
                      advise=advise)


def _asker(env: ToolEnv, call: ToolCallFields, command: str,
           shown: Callable[[], list[ToolCallContent] | None]) -> Asker:
    session, editor = env.session, env.editor

    async def ask(question: GateQuestion) -> str | None:
        if session.mode() == "plan":
            return permissions.gate_refusal(question, "plan mode is on")
        if session.remembered.get("bash") is False:
            return permissions.gate_refusal(question, "the user chose Always reject for bash")
        fields = permissions.gate_question(call, question, command)
        fields = evolve(fields, title=fields.title and redact(fields.title),
                        content=redacted_content(fields.content))
        answer = await permissions.ask(editor, fields, "bash", session.remembered,
                                       permissions.ONCE_OPTIONS)
        await editor.send_update(ToolCallProgress(
            call.tool_call_id, status="in_progress", title=call.title, content=shown() or [],
            name=call.name))
        if answer is Answer.ALLOW:
            return None
        if answer is Answer.CANCELLED:
            session.cancel_turn()
            return permissions.gate_refusal(question, "the user cancelled the turn")
        return permissions.gate_refusal(question, "refused by the user")

    return ask

