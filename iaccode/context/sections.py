"""The section registry: what the system prompt is made of, in order.

A section is a function of the session (:class:`SessionFacts`) returning its text, or None to
leave it out. The table :data:`SECTIONS` lists them, imported like any other code (this module
is imported when a session first builds its prompt, not at start-up). See the package docstring
for how to add one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import frozen

from iaccode.context import builtin
from iaccode.context.environment import Environment
from iaccode.context.instructions import Instructions
from iaccode.iac.inventory import iac_inventory
from iaccode.mcp.section import mcp_section
from iaccode.mcp.servers import McpServers
from iaccode.redaction import redact

log = logging.getLogger(__name__)


@frozen
class SessionFacts:
    """What a section may use. Sections run in a worker thread: read, never change."""

    cwd: Path
    """The session's working directory (a real path)."""
    home: Path
    """``$IAC_CODE_HOME``."""
    environment: Environment
    instructions: Instructions
    session: Any = None
    """The live session object (e.g. its MCP connections), None in unit tests."""


SectionFunction = Callable[[SessionFacts], "str | None"]


def mcp_tools_section(facts: SessionFacts) -> str | None:
    servers = getattr(facts.session, "mcp", None)  # None in unit tests of the context
    return mcp_section(servers) if isinstance(servers, McpServers) else None


@frozen
class Section:
    name: str
    function: SectionFunction
    order: int
    """Position in the prompt, lowest first; sections of equal order keep table order."""
    main: bool = True
    """In the prompt of the session's own turns."""
    subagent: bool = True
    """In the prompt of a sub-agent (the ``agent`` tool)."""

    def render(self, facts: SessionFacts) -> str | None:
        text = self.function(facts)
        return text.strip() if text and text.strip() else None


SECTIONS: list[Section] = [
    Section("identity", builtin.identity, 10, subagent=False),
    Section("subagent_identity", builtin.subagent_identity, 10, main=False),
    Section("environment", builtin.environment, 20),
    Section("tool_guidance", builtin.tool_guidance, 30),
    Section("mcp_tools", mcp_tools_section, 40, subagent=False),
    Section("iac_inventory", iac_inventory, 50),
    Section("project_instructions", builtin.project_instructions, 90),
]


@frozen
class SystemPrompt:
    """Each section's text, computed once per build (stable across requests)."""

    main: str
    subagent: str
    sections: dict[str, str]
    """Name -> text, for every section that had something to say."""


def build(facts: SessionFacts, sections: list[Section] | None = None) -> SystemPrompt:
    """Render every section (blocking: run it in a thread). A section that raises is left out
    and logged: the session must not fail to start over one section."""
    texts: dict[str, str] = {}
    ordered = sorted(
        enumerate(sections if sections is not None else SECTIONS),
        key=lambda pair: (pair[1].order, pair[0]),
    )
    for _, section in ordered:
        try:
            text = section.render(facts)
        except Exception:  # a bug in one section: the others still make a prompt
            log.exception("system prompt section %s failed", section.name)
            continue
        if text is not None:
            # What a section quotes from the project (AGENTS.md, a module's source URL) may
            # hold a secret value we hold: it goes no further than in a tool's output.
            texts[section.name] = redact(text)
    by_name = {section.name: section for _, section in ordered}

    def join(audience: str) -> str:
        return "\n\n".join(text for name, text in texts.items() if getattr(by_name[name], audience))

    return SystemPrompt(join("main"), join("subagent"), texts)
