"""The check after a write: write_file and edit_file add what an editor's diagnostics would
say about the IaC file they just wrote (:mod:`iaccode.iac.diagnostics`) to their result.

The write tools call it themselves, so what is checked follows the tool that wrote, never a
tool's name. ``ToolContext.write_checks`` says how far the check goes.
"""

from __future__ import annotations

from iaccode.iac import diagnostics
from iaccode.tool_result import ToolResult
from iaccode.tools.base import ToolContext


async def checked(result: ToolResult, ctx: ToolContext) -> ToolResult:
    """``result`` of a write, with the check of the file it wrote (its diff's new text) added;
    unchanged when the file is not IaC or the context checks nothing."""
    if ctx.write_checks == "off":
        return result
    return await diagnostics.annotate(result, ctx.cwd, external=ctx.write_checks == "full")
