"""``iaccode demo``: watch iac-code do a recorded infrastructure task, with no key and no
network. A real ``iaccode acp`` runs the bundled transcript (see ``replay.py``) and this client
shows it as an editor would: streamed text, dimmed thinking, each tool call with its status,
diffs in colour, the checks after each edit, the plan summary, the permission questions
(an infrastructure change asked for in red, with the plan it would apply), the forms a
protected change asks to be filled (``elicitation/create``) and their answers."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any

import trio

from iaccode.transcript.format import TranscriptError
from iaccode.transcript.replay import replay

BUNDLED = Path(__file__).with_name("demo-terraform.jsonl")

STATUS_MARKS = {
    "completed": "[green]✔[/green]",
    "failed": "[red]✘[/red]",
    "in_progress": "[yellow]…[/yellow]",
}


class Renderer:
    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(highlight=False)
        self._streaming: str | None = None  # the chunk kind being printed inline
        self._titles: dict[str, str] = {}

    def __call__(self, side: str, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params") or {}
        if side == "client":
            self._client(method, params, message)
        elif method == "session/update":
            self._update(params.get("update") or {})
        elif method == "session/request_permission":
            self._end_line()
            tool_call = params.get("toolCall") or {}
            title = tool_call.get("title", "a tool call")
            options = params.get("options") or []
            names = " / ".join(o.get("name", "?") for o in options)
            if not any(o.get("kind") == "allow_always" for o in options):  # infrastructure
                self.console.print(f"! {title}. Allow? ({names})", style="bold red", markup=False)
                for content in tool_call.get("content") or []:
                    self._question_text(content)
            else:
                self.console.print(
                    f"[bold magenta]? Allow {title}?[/bold magenta] [dim]({names})[/dim]"
                )
        elif method == "elicitation/create":
            self._end_line()
            lines = str(params.get("message", "")).splitlines()
            self.console.print(
                f"! {lines[0] if lines else 'a question'}", style="bold red", markup=False
            )
            for line in lines[1:]:
                self.console.print(f"    {line}", style="yellow", markup=False)
            fields = (params.get("requestedSchema") or {}).get("properties") or {}
            for field in fields.values():
                self.console.print(
                    f"  [{field.get('title', '?')}: ____]", style="bold red", markup=False
                )
        elif isinstance(message.get("result"), dict) and "stopReason" in message["result"]:
            self._end_line()
            usage = message["result"].get("usage") or {}
            self.console.print(
                f"[dim]── {message['result']['stopReason']} · "
                f"{usage.get('totalTokens', 0)} tokens ──[/dim]"
            )

    def _client(self, method: Any, params: dict[str, Any], message: dict[str, Any]) -> None:
        if method == "session/prompt":
            self._end_line()
            text = " ".join(b.get("text", "") for b in params.get("prompt") or [])
            self.console.print(f"\n[bold cyan]> {text}[/bold cyan]")
        elif method == "session/new":
            self.console.print(f"[dim]session opened in {params.get('cwd')}[/dim]")
        elif method == "session/cancel":
            self._end_line()
            self.console.print("[bold red]■ cancelled by the user[/bold red]")
        elif "result" in message and isinstance(message["result"], dict):
            result = message["result"]
            outcome = result.get("outcome") or {}
            if isinstance(outcome, dict) and "optionId" in outcome:
                self.console.print(f"[magenta]→ {outcome['optionId'].replace('_', ' ')}[/magenta]")
            elif isinstance(result.get("action"), str):  # an elicitation's answer
                typed = " ".join(str(v) for v in (result.get("content") or {}).values())
                self.console.print(
                    f"→ {result['action']}{f' (typed {typed})' if typed else ''}",
                    style="magenta",
                    markup=False,
                )

    def _update(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            if self._streaming != kind:
                self._end_line()
                self._streaming = kind
            text = (update.get("content") or {}).get("text", "")
            style = "dim italic" if kind == "agent_thought_chunk" else ""
            self.console.print(text, style=style, end="", markup=False)
        elif kind == "tool_call":
            self._end_line()
            self._titles[update["toolCallId"]] = update.get("title", "")
            self.console.print(
                f"[bold]⏺ {update.get('title')}[/bold] [dim]({update.get('kind')})[/dim]"
            )
        elif kind == "tool_call_update" and update.get("status") in STATUS_MARKS:
            if update["status"] == "in_progress":
                return
            self._end_line()
            title = self._titles.get(update.get("toolCallId", ""), "")
            self.console.print(f"  {STATUS_MARKS[update['status']]} [dim]{title}[/dim]")
            for content in update.get("content") or []:
                self._content(content)

    def _content(self, content: dict[str, Any]) -> None:
        if content.get("type") == "diff":
            old = (content.get("oldText") or "").splitlines()
            new = (content.get("newText") or "").splitlines()
            for line in difflib.unified_diff(old, new, "before", "after", lineterm="", n=1):
                colour = (
                    "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
                )
                self.console.print(f"    {line}", style=colour, markup=False)
        elif content.get("type") == "content":
            text = (content.get("content") or {}).get("text", "")
            lines = text.splitlines()
            # What iac-code adds (checks after an edit, a plan's summary) stands out.
            style = "yellow" if text.startswith(("IaC check", "Plan summary")) else "dim"
            for line in lines[:6]:
                if not line.strip():
                    style = "dim"
                self.console.print(f"    {line}", style=style, markup=False)
            if len(lines) > 6:
                self.console.print(f"    … {len(lines) - 6} more lines", style="dim")

    def _question_text(self, content: dict[str, Any]) -> None:
        """The plan an infrastructure question carries, as the editor shows it."""
        if content.get("type") != "content":
            return
        for line in str((content.get("content") or {}).get("text", "")).splitlines():
            style = "yellow" if line.startswith(("Plan summary", "  ")) else "dim"
            self.console.print(f"    {line}", style=style, markup=False)

    def _end_line(self) -> None:
        if self._streaming is not None:
            self.console.print()
            self._streaming = None


def run_demo(speed: float, transcript: Path | None) -> int:
    if speed <= 0:
        print("iaccode demo: --speed must be positive", file=sys.stderr)
        return 2
    renderer = Renderer()
    renderer.console.print(
        "[bold]iac-code demo[/bold] [dim]— a recorded task replayed by a real "
        "`iaccode acp` (no key, no network)[/dim]"
    )
    try:
        result = trio.run(lambda: replay(transcript or BUNDLED, speed=speed, observe=renderer))
    except TranscriptError as exc:
        print(f"iaccode demo: {exc}", file=sys.stderr)
        return 2
    renderer._end_line()
    if result.divergence is not None:
        print(f"\nThe agent did not behave as recorded:\n{result.divergence}", file=sys.stderr)
        return 1
    return 0
