"""What a tool call ends in: a :class:`ToolResult`, or a :class:`ToolFailure` whose message is
for the model.

Its own module, low in the layers, because more than the tools make and read them: the IaC
checks after a write annotate a result (:mod:`iaccode.iac.diagnostics`), sensitive values are
hidden in one (:mod:`iaccode.iac.sensitive`), and the local files (:mod:`iaccode.host`) refuse
with a failure. What a tool *is* stays in :mod:`iaccode.tools.base`.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from iaccode.protocol.tool_calls import ToolCallContent


class ToolFailure(Exception):
    """The tool could not do what was asked; ``str()`` is the message for the model."""


@frozen
class ToolResult:
    text: str
    """What the model sees (the loop truncates it to ``ToolLimits.output_chars``)."""
    is_error: bool = False
    raw_output: Any = None
    """``rawOutput`` for the editor; defaults to ``{"output": text}``."""
    content: list[ToolCallContent] | None = None
    """What the editor shows; defaults to ``text`` as a text block."""
    model_content: list[dict[str, Any]] | None = None
    """What the model gets instead of ``text``: API content blocks (an image, say)."""
