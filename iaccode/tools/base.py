"""What a tool is, what it gets to work with, and what it gives back.

A tool failure is an observation for the model, not a crash: raise :class:`ToolFailure` with
a message the model can act on, and the loop sends it back as a ``tool_result`` with
``is_error``. Anything else a tool raises is a bug; the loop reports it the same way, and logs
the traceback.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from attrs import field, frozen

from iaccode.host.local_files import is_inside
from iaccode.protocol.elicitation import Elicitation, ElicitationAnswer
from iaccode.protocol.tool_calls import ToolCallContent, ToolCallProgress, ToolKind
from iaccode.tool_result import ToolFailure, ToolResult

if TYPE_CHECKING:
    from iaccode.gate.channel import GatePolicy
    from iaccode.protocol.messages import PlanEntry

log = logging.getLogger(__name__)


@frozen
class ToolLimits:
    """Bounds on what one tool call may take and give. Every wait and every output is capped."""

    output_chars: int = 30_000
    """Text one tool result may send to the model; the rest is cut with a marker."""
    read_max_bytes: int = 10 * 1024 * 1024
    """Largest file read_file / edit_file will load."""
    read_default_lines: int = 2_000
    """Lines read_file returns when no limit is given."""
    search_max_results: int = 500
    """Most matches (or paths) glob and grep return by default."""
    bash_timeout: float = 120.0
    """Seconds a command runs when the model gives no timeout."""
    bash_max_timeout: float = 600.0
    """The most seconds a command may ask for."""
    bash_output_bytes: int = 1024 * 1024
    """Output kept from one command (head and tail); the middle is dropped."""
    kill_grace: float = 2.0
    """Seconds between TERM and KILL for a command's process group."""
    web_timeout: float = 30.0
    """Seconds a web_fetch may take in all."""
    web_max_bytes: int = 5 * 1024 * 1024
    """Largest body web_fetch downloads."""
    web_max_redirects: int = 5
    web_allowed_hosts: frozenset[str] = field(factory=frozenset)
    """``host:port`` pairs exempt from the private-address refusal (tests use loopback)."""


WriteChecks = Literal["off", "files_only", "full"]


class FileAccess(Protocol):
    """Reads and writes text files: on the local disk, or through the editor (``fs/*``)."""

    async def read_text(self, path: Path) -> str:
        """The file's text. Raises ToolFailure (missing, a directory, binary, special, too big)."""
        ...

    async def write_text(self, path: Path, text: str) -> None:
        """Replace the file's text (creating parents); atomic: old or new, never half."""
        ...


@frozen
class ExitStatus:
    """How a command in the editor's terminal ended (both None: not known)."""

    exit_code: int | None = None
    signal: str | None = None


@frozen
class TerminalOutput:
    """What ``terminal/output`` answered."""

    output: str | None
    """The text the terminal kept; None when the answer held nothing we could read."""
    truncated: bool = False
    """The terminal's byte limit cut the start of the output."""
    exit_status: ExitStatus | None = None
    """Set once the command has ended."""


class ClientTerminal(Protocol):
    """The editor's terminal (``terminal/*``), when the client advertised ``terminal: true``.

    Each call raises ToolFailure, saying what failed, when the editor answers with an error."""

    async def create(
        self,
        command: str,
        args: list[str],
        cwd: str,
        output_byte_limit: int,
        env: dict[str, str] | None = None,
    ) -> str:
        """Start the command (``env`` added to the editor's environment); the terminal's
        id."""
        ...

    async def output(self, terminal_id: str) -> TerminalOutput: ...
    async def wait_for_exit(self, terminal_id: str) -> ExitStatus: ...
    async def kill(self, terminal_id: str) -> None: ...
    async def release(self, terminal_id: str) -> None: ...


@frozen
class ToolContext:
    cwd: Path
    """The session's working directory (a real path)."""
    limits: ToolLimits
    files: FileAccess
    tool_call_id: str
    report: Callable[[ToolCallProgress], Awaitable[None]]
    """Send a live ``tool_call_update`` for this call (e.g. terminal content as it starts)."""
    terminal: ClientTerminal | None = None
    resolved: Mapping[str, Path] = field(factory=dict)
    """The real path each of the call's paths (as the model wrote it) named when the permission
    check judged it. The tool works on these, not on a fresh resolution: a symlink swapped since
    the check cannot send it somewhere that was not checked (or shown to the user)."""
    show_plan: Callable[[list[PlanEntry]], Awaitable[None]] | None = None
    """Show the model's plan to the user and keep it with the session (None: no plan here)."""
    additional_dirs: tuple[Path, ...] = ()
    """The client's extra project folders (real paths): inside the project too (in_project)."""
    gate: GatePolicy | None = None
    """What the gates of a command go by (the bash tool's; None: no gates)."""
    elicit: Callable[[Elicitation], Awaitable[ElicitationAnswer | None]] | None = None
    """Ask the user for input (``Editor.elicit``: ``elicitation/create``; None when there is
    no answer to go by); an MCP server's elicitation during its tool call goes here."""
    reachable: Callable[[str], bool] | None = None
    """Whether a fetch may follow a redirect to a host (None: any). After the session read
    secrets a host is asked for (:mod:`iaccode.turn.exposure`): a redirect must not carry them
    to another one unasked."""
    write_checks: WriteChecks = "off"
    """The IaC check a write tool adds to its result (:mod:`iaccode.iac.diagnostics`): "full"
    in a turn; "files_only" in a replay, which leaves out the machine's programs (terraform,
    cfn-lint: what they say was not recorded); "off" outside a turn."""

    def path(self, raw: str) -> Path:
        """The real path for ``raw``: the one the permission check judged, else resolved now."""
        judged = self.resolved.get(raw)
        return judged if judged is not None else resolve_path(self.cwd, raw)


class Tool(ABC):
    """One tool. Subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind]
    input_type: ClassVar[type]
    """attrs class of the input (snake_case fields, as the model sends them)."""
    input_schema: ClassVar[dict[str, Any]]
    """JSON schema of the input, as the model sees it."""
    read_only: ClassVar[bool]
    """True when the tool changes nothing: runs without asking, inside the cwd."""
    always_asks: ClassVar[str | None] = None
    """Why the tool asks in every mode, bypass and *Always allow* included (while ``[iac]
    confirm_infra_changes`` is on), or None (an MCP tool that may change infrastructure)."""
    machine_dependent: ClassVar[bool] = False
    """What it answers depends on the machine (a command's output, a web page): a recording
    keeps its results, and a replay plays them back instead of running it."""
    subagents_use: ClassVar[bool] = True
    """A sub-agent may call it, when it is read-only (not the plan: that is the parent's)."""
    gated: ClassVar[bool] = False
    """It runs programs here with the gates (:mod:`iaccode.gate`) first on their PATH, so a
    change an infrastructure CLI would make is asked about while the call runs."""
    reads_what_it_names: ClassVar[bool] = True
    """A file its input names may be read: a secrets file named so counts as read (then a
    fetch asks per host, :mod:`iaccode.turn.exposure`). False where a name is only text: a
    URL to fetch, a plan's items."""

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    @abstractmethod
    def title(self, args: Any) -> str:
        """What the call does, for the editor: "Read src/app.py", the command line, ..."""

    def paths(self, args: Any) -> list[str]:
        """The paths the call touches, as the model wrote them (for the policy, locations)."""
        return []

    def shown_paths(self, args: Any) -> list[str]:
        """Paths the call names that are shown as its locations but not judged (an MCP
        tool's path-like arguments: its server, not the policy, decides what they reach)."""
        return []

    async def searched(
        self, args: Any, ctx: ToolContext, wanted: Callable[[str], bool]
    ) -> str | None:
        """The first file the call looked into, beyond those its input names, that
        ``wanted`` picks (as the project shows its path), or None. A search's answer tells of
        every file it searched, matches or none: grep's ``No matches`` says something of a
        ``.env`` it read (:mod:`iaccode.turn.exposure`)."""
        return None

    def address(self, args: Any) -> str | None:
        """The URL a call of kind "fetch" reaches, or None: the exposure check then takes the
        first URL in its input (an MCP server's tool)."""
        return None

    def command_line(self, args: Any) -> str | None:
        """The shell command line the call runs here, or None. It is read before the call is
        asked about (the infrastructure it changes, the protected paths it names), and what
        it prints is searched for Terraform's sensitive values."""
        return None

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        """Do it. Cancellation: stop promptly and leave nothing running or half-written."""

    async def preview(self, args: Any, ctx: ToolContext) -> list[ToolCallContent] | None:
        """What the call would do, shown in its permission question (an edit's diff), worked
        out without changing anything; None when there is nothing to show. May raise
        ToolFailure (the question then shows none: running the call reports the problem)."""
        return None


async def run_tool(tool: Tool, args: Any, ctx: ToolContext) -> ToolResult:
    """Run one call; a ToolFailure becomes an error result, and so does a bug in the tool
    (logged with its traceback): the model hears of both. Cancellation propagates."""
    try:
        return await tool.run(args, ctx)
    except ToolFailure as exc:
        return ToolResult(str(exc), is_error=True)
    except Exception as exc:  # a bug in the tool: the model and the log both hear of it
        log.exception("tool %s failed", tool.name)
        return ToolResult(
            f"The tool failed unexpectedly: {type(exc).__name__}: {exc}", is_error=True
        )


def resolve_path(cwd: Path, raw: str) -> Path:
    """The real path a model-given path names (relative to cwd; symlinks resolved).

    Resolve once per call (the tool runner does, before the permission check) and use that
    path: resolving again later may give another answer if a symlink was swapped meanwhile.
    """
    return Path(os.path.realpath(cwd / os.path.expanduser(raw)))


def in_project(path: Path, cwd: Path, additional: Sequence[Path] = ()) -> bool:
    """Whether ``path`` counts as the project: below the session's cwd or one of the folders
    the client added (``additionalDirectories``). All real paths. The one definition of
    "inside the project" the permission checks use."""
    return is_inside(path, cwd) or any(is_inside(path, root) for root in additional)


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, keeping head and tail and saying how much went."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return (
        f"{text[:head]}\n\n[... {cut} characters cut: the output was {len(text)} "
        f"characters, the limit is {limit} ...]\n\n{text[-tail:]}"
    )
