"""The questions of a plan-bound change (:mod:`iaccode.iac.plan_gate`), put to the user.

    ask_plan(editor, call, title, detail)             the permission question with the plan
    confirm_by_name(editor, call, title, detail, ...)  a protected target: type its name

Each answers None when the user approved, else the line the model is told. The permission
question offers *Allow once*, *Reject* and *Always reject* (never *Always allow*), as for every
infrastructure change. A protected target (``[iac] protected``) goes further: an elicitation
form (``elicitation/create``, on the running tool call) where the user types the target's
name; only the exact name goes ahead. An editor that cannot show one (no
``elicitation.form`` capability) gets a refusal that tells the user to run the command
themselves.
"""

from __future__ import annotations

from attrs import evolve

from iaccode.protocol.content import TextContent
from iaccode.protocol.elicitation import Elicitation, text_form
from iaccode.protocol.tool_calls import ContentToolCallContent, ToolCallFields
from iaccode.turn import permissions
from iaccode.turn.env import EditorAccess

FIELD = "confirm"
"""The form's one field: the target's name, typed."""


async def ask_plan(editor: EditorAccess, call: ToolCallFields, title: str, detail: str,
                   remembered: dict[str, bool] | None = None) -> str | None:
    """The permission question on ``call`` (the running bash call): ``title`` names the
    target, ``detail`` shows the plan."""
    fields = evolve(call, title=title, content=[ContentToolCallContent(TextContent(detail))])
    answer = await permissions.ask(editor, fields, call.name or "bash",
                                   remembered if remembered is not None else {},
                                   permissions.ONCE_OPTIONS)
    if answer is permissions.Answer.ALLOW:
        return None
    if answer is permissions.Answer.CANCELLED:
        return "Cancelled by the user."
    return permissions.DENIED


async def confirm_by_name(editor: EditorAccess, call: ToolCallFields, title: str, detail: str,
                          what: str, name: str, command: str) -> str | None:
    """The user types ``name`` (the protected ``what``: workspace, kube context, stack) to
    let ``command`` go ahead; None when typed exactly."""
    if "form" not in editor.elicitation_modes:
        return (f"Refused: the {what} {name} is protected ([iac] protected in config.toml) "
                "and this editor cannot ask the user to type its name (it has no elicitation "
                "forms). Tell the user to run the command themselves, in their own terminal, "
                f"if they mean it:\n  {command}")
    message = (f"{title}\n\n{detail}\n\nThe {what} {name} is protected. Type its name, "
               f"{name}, to go ahead; anything else stops the change.")
    answer = await editor.elicit(Elicitation(
        message, requested_schema=text_form(FIELD, f"Type {name} to go ahead",
                                            f"The name of the protected {what}"),
        tool_call_id=call.tool_call_id))
    if answer is None:
        return f"Not applied: the confirmation for the protected {what} {name} got no answer."
    if not answer.accepted:
        return f"Not applied: the user declined the change to the protected {what} {name}."
    typed = (answer.content or {}).get(FIELD)
    if typed != name:
        return (f"Not applied: the name typed to confirm the change to the protected {what} "
                f"{name} did not match it.")
    return None
