"""The model's context: the system prompt, built from named sections.

    session opens -> SessionContext.refresh()   (git status, AGENTS.md, ... in a worker thread)
    before a prompt -> refresh() again: a rebuild only if an instruction file's mtime changed
    each request   -> the same text (so the cached prompt prefix stays valid)

Sections, in order (``sections.SECTIONS``):

    10 identity / subagent_identity   who the agent is and how it works (one per audience)
    20 environment                    cwd, platform, shell, date, git branch and status
    30 tool_guidance                  which tool when, paths, the permission model
    40 (MCP tools, iaccode/mcp)       50 (IaC inventory, iaccode/iac)
    90 project_instructions           AGENTS.md / IAC-CODE.md / CLAUDE.md, then the user's own

Adding a section:

1. In your package, write ``def my_section(facts: SessionFacts) -> str | None``. It runs in a
   worker thread when the prompt is built (not per request): read ``facts`` (cwd, home,
   environment, instructions, and ``facts.session``, the live session), never change them;
   return None to say nothing. An exception leaves the section out (and is logged).
2. Import it in ``iaccode/context/sections.py`` and add one line to ``SECTIONS``:
   ``Section("my_section", my_section, order=40)``. ``main=False`` / ``subagent=False`` keep
   it out of one audience's prompt.
3. Keep the text stable: it is part of the cached prefix of every request.
"""

from iaccode.context.live import SessionContext
from iaccode.context.sections import SECTIONS, Section, SessionFacts, SystemPrompt, build

__all__ = ["SECTIONS", "Section", "SessionContext", "SessionFacts", "SystemPrompt", "build"]
