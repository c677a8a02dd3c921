"""The permission question for a change a gate reports while a bash call runs.

It is a question about the running call: the same ``toolCallId``, so the editor shows it on
the card of the command that started the CLI (Zed and acpx put the buttons there). It names
the change, shows the exact argv the program got, the real program, the folder, what started it
and the command line it came from, and offers *Allow once*, *Reject* and *Always reject*:
never *Always allow*. Plan mode refuses without asking, and an *Always reject* for bash holds.
Once answered, the card gets its title, status and content back (``in_progress``: the command
is still running).
"""

from __future__ import annotations

from collections.abc import Callable

from iaccode.gate.channel import Asker, GatePolicy, GateQuestion
from iaccode.protocol.tool_calls import ToolCallContent, ToolCallFields, ToolCallProgress
from iaccode.turn import permissions
from iaccode.turn.env import ToolEnv
from iaccode.turn.permissions import Answer


def gate_policy(env: ToolEnv, call: ToolCallFields, command: str,
                approved: frozenset[tuple[str, ...]],
                shown: Callable[[], list[ToolCallContent] | None]) -> GatePolicy:
    """What the gates of one bash call go by. ``shown``: what the call's card shows now (its
    terminal), put back after a question."""
    config = env.config
    return GatePolicy(_asker(env, call, command, shown), confirm=config.confirm_infra_changes,
                      hold_credentials=config.hold_credentials, approved=approved)


def _asker(env: ToolEnv, call: ToolCallFields, command: str,
           shown: Callable[[], list[ToolCallContent] | None]) -> Asker:
    session, editor = env.session, env.editor

    async def ask(question: GateQuestion) -> str | None:
        if session.mode() == "plan":
            return permissions.gate_refusal(question, "plan mode is on")
        if session.remembered.get("bash") is False:
            return permissions.gate_refusal(question, "the user chose Always reject for bash")
        fields = permissions.gate_question(call, question, command)
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

