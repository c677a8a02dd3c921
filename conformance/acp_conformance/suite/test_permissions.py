"""Around a tool call: the permission question, every answer a client can give, and the
client capabilities the agent's tools must respect.

The fake model asks for tools by the agent's own names (the tool profiles in
``scenarios.py``); unknown agents are n/a. An agent that writes without asking makes the
permission outcome checks n/a too: ACP does not say which tools need a question. For client
capabilities the client advertises no delegation, only fs, or only a terminal; what it
advertises it really serves (``conformance/client.py``), so the work must get done either way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acp_conformance.client import HOLD, ErrorAnswer, cancelled, capability_for, choose
from acp_conformance.driver import AgentConnection, deadline, updates
from acp_conformance.harness import Checks, Harness
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import Model, start, stop_reason
from acp_conformance.script import reply

CONTENT = "written by the conformance suite\n"


class WriteTurn:
    """One prompt whose model asks to write ``name``; records the permission questions."""

    def __init__(self, agent: AgentConnection, harness: Harness, model: Model) -> None:
        self.agent, self.harness, self.model = agent, harness, model
        self.profile = harness.tools(agent)
        self.asked: list[dict[str, Any]] = []
        self.existed_when_asked = False

    def plan(self, *names: str) -> None:
        for number, name in enumerate(names):
            tool = self.profile.write(self.harness.workspace / name, CONTENT)
            self.model.plan(
                self.profile.call(f"toolu_conformance_write_{number}", tool), reply("Done.")
            )

    async def run(
        self, session: str, name: str, policy: Callable[[dict[str, Any]], Any]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        target = self.harness.workspace / name

        def asking(request: dict[str, Any]) -> Any:
            self.asked.append(request)
            self.existed_when_asked = target.exists()
            return policy(request)

        self.asked = []
        assert self.agent.services is not None  # the harness's agents have the client's
        self.agent.services.permission = asking
        return await self.agent.prompt(session, f"Write {name}")

    def final_status(self, before: list[dict[str, Any]]) -> str | None:
        call_id = self.asked[-1]["params"]["toolCall"]["toolCallId"]
        statuses = [
            u.get("status")
            for u in updates(before, None, "tool_call", "tool_call_update")
            if u.get("toolCallId") == call_id and u.get("status")
        ]
        return statuses[-1] if statuses else None


async def asked_write(
    agent: AgentConnection, harness: Harness, model: Model, kind: str, *names: str
) -> tuple[WriteTurn, str, dict[str, Any], list[dict[str, Any]]]:
    session = await start(agent, harness.workspace)
    turn = WriteTurn(agent, harness, model)
    turn.plan(*(names or ("perm.txt",)))
    answer, before = await turn.run(session, (names or ("perm.txt",))[0], choose(kind))
    if not turn.asked:
        not_applicable("the agent wrote the file without asking permission")
    if kind not in [o.get("kind") for o in turn.asked[0]["params"]["options"]]:
        not_applicable(f"the agent offered no {kind} option")
    return turn, session, answer, before


@requirement(
    "PERM-REQUEST",
    "MUST",
    "a write the agent asks about is asked before it runs, naming the session, the "
    "tool call and options with unique ids",
)
async def test_permission_question(
    agent: AgentConnection, harness: Harness, model: Model, check: Checks
) -> None:
    turn, session, answer, before = await asked_write(agent, harness, model, "allow_once")
    params = turn.asked[0]["params"]
    assert params["sessionId"] == session
    assert not turn.existed_when_asked, "the file was written before the agent asked"
    ids = [o["optionId"] for o in params["options"]]
    assert ids and len(set(ids)) == len(ids), f"option ids {ids}"
    call_id = params["toolCall"]["toolCallId"]
    announced = [u for u in updates(before, session, "tool_call") if u.get("toolCallId") == call_id]
    check.should(
        "PERM-TOOL-CALL-FIRST",
        "the tool call is announced (tool_call) before or with its permission question",
        bool(announced),
        f"no tool_call {call_id}",
    )


@requirement(
    "PERM-ALLOW-ONCE",
    "MUST",
    "allow_once: the tool runs (the file is written) and the turn ends normally",
)
async def test_allow_once(
    agent: AgentConnection, harness: Harness, model: Model, check: Checks
) -> None:
    turn, _, answer, before = await asked_write(agent, harness, model, "allow_once")
    assert (harness.workspace / "perm.txt").read_text() == CONTENT
    assert stop_reason(answer) == "end_turn"
    status = turn.final_status(before)
    check.should(
        "PERM-ALLOWED-STATUS",
        "an allowed tool call ends with status completed",
        status == "completed",
        f"final status {status!r}",
    )


@requirement(
    "PERM-REJECT-ONCE",
    "MUST",
    "reject_once: the tool does not run and the turn still ends normally",
)
async def test_reject_once(
    agent: AgentConnection, harness: Harness, model: Model, check: Checks
) -> None:
    turn, _, answer, before = await asked_write(agent, harness, model, "reject_once")
    assert not (harness.workspace / "perm.txt").exists(), "the rejected write happened"
    stop_reason(answer)
    status = turn.final_status(before)
    check.should(
        "PERM-REJECTED-STATUS",
        "a rejected tool call ends with status failed",
        status == "failed",
        f"final status {status!r}",
    )


@pytest.mark.parametrize(
    ("kind", "written"),
    [
        pytest.param(
            "allow_always",
            True,
            marks=pytest.mark.requirement(
                "PERM-ALLOW-ALWAYS",
                "SHOULD",
                "allow_always: the next write of the session runs without a question",
            ),
        ),
        pytest.param(
            "reject_always",
            False,
            marks=pytest.mark.requirement(
                "PERM-REJECT-ALWAYS",
                "SHOULD",
                "reject_always: the next write of the session is refused without a question",
            ),
        ),
    ],
)
async def test_always_answers(
    agent: AgentConnection, harness: Harness, model: Model, kind: str, written: bool
) -> None:
    turn, session, _, _ = await asked_write(agent, harness, model, kind, "one.txt", "two.txt")
    assert (harness.workspace / "one.txt").exists() is written
    await turn.run(session, "two.txt", choose("reject_once" if written else "allow_once"))
    assert not turn.asked, "the agent asked again"
    assert (harness.workspace / "two.txt").exists() is written


@requirement("PERM-CANCELLED", "MUST", "the cancelled outcome: the tool does not run")
async def test_cancelled_outcome(
    agent: AgentConnection, harness: Harness, model: Model, check: Checks
) -> None:
    session = await start(agent, harness.workspace)
    turn = WriteTurn(agent, harness, model)
    turn.plan("perm.txt")
    answer, _ = await turn.run(session, "perm.txt", cancelled)
    if not turn.asked:
        not_applicable("the agent wrote the file without asking permission")
    assert not (harness.workspace / "perm.txt").exists(), "the write ran after 'cancelled'"
    reason = stop_reason(answer)
    check.should(
        "PERM-CANCELLED-STOPS",
        "a cancelled permission question ends the turn with stopReason cancelled",
        reason == "cancelled",
        f"stopReason {reason!r}",
    )


@requirement(
    "PERM-ERROR",
    "MUST",
    "a permission question answered with a JSON-RPC error: the tool does not run, "
    "the prompt is answered and the agent keeps serving",
)
async def test_error_answer(agent: AgentConnection, harness: Harness, model: Model) -> None:
    session = await start(agent, harness.workspace)
    turn = WriteTurn(agent, harness, model)
    turn.plan("perm.txt")
    answer, _ = await turn.run(
        session, "perm.txt", lambda _: ErrorAnswer(-32603, "the editor crashed")
    )
    if not turn.asked:
        not_applicable("the agent wrote the file without asking permission")
    assert not (harness.workspace / "perm.txt").exists(), "the write ran after an error"
    assert "result" in answer or "error" in answer
    stop_reason((await agent.prompt(session, "Still there?"))[0])


async def held_write(agent: AgentConnection, harness: Harness, model: Model) -> tuple[str, Any]:
    """A new session whose prompt asks to write perm.txt, its permission question held
    unanswered (``agent.held[0]``): the session and the prompt's request id."""
    session = await start(agent, harness.workspace)
    WriteTurn(agent, harness, model).plan("perm.txt")
    assert agent.services is not None
    agent.services.permission = lambda _: HOLD
    request_id = await agent.send_request(
        "session/prompt",
        {"sessionId": session, "prompt": [{"type": "text", "text": "Write perm.txt"}]},
    )
    with deadline(agent.timeout, "no permission question"):
        while not agent.held:
            message = await agent.receive()
            if message.get("id") == request_id and "method" not in message:
                not_applicable("the agent wrote the file without asking permission")
    return session, request_id


@requirement(
    "CANCEL-PERMISSION",
    "MUST",
    "session/cancel while a permission question is pending, then the cancelled "
    "outcome: the prompt answers cancelled, the tool never runs, nothing comes after",
)
async def test_cancel_during_permission(
    agent: AgentConnection, harness: Harness, model: Model
) -> None:
    session, request_id = await held_write(agent, harness, model)
    await agent.notify("session/cancel", {"sessionId": session})
    await agent.reply(agent.held[0]["id"], {"outcome": {"outcome": "cancelled"}})
    answer, _ = await agent.response(request_id, timeout=5)
    assert stop_reason(answer) == "cancelled"
    assert not (harness.workspace / "perm.txt").exists(), "the write ran after the cancel"
    assert not await agent.late_updates(session)


@requirement(
    "CANCEL-THEN-ALLOW",
    "MUST",
    "session/cancel, then a late 'allow' answer to the pending question (the client "
    "had not seen its own cancel yet): the prompt still answers cancelled",
)
async def test_allow_after_cancel(
    agent: AgentConnection, harness: Harness, model: Model, check: Checks
) -> None:
    session, request_id = await held_write(agent, harness, model)
    await agent.notify("session/cancel", {"sessionId": session})
    allow = choose("allow_once")(agent.held[0])
    await agent.reply(agent.held[0]["id"], allow)
    answer, _ = await agent.response(request_id, timeout=5)
    assert stop_reason(answer) == "cancelled"
    check.should(
        "CANCEL-THEN-ALLOW-NOT-RUN",
        "a tool allowed only after its turn was cancelled does not run",
        not (harness.workspace / "perm.txt").exists(),
        "the write ran after session/cancel",
    )


# -- client capabilities ------------------------------------------------------------------


FS = {"readTextFile": True, "writeTextFile": True}


@pytest.mark.parametrize(
    "capabilities",
    [
        pytest.param(
            {},
            id="none",
            marks=pytest.mark.requirement(
                "CLIENT-CAPS-NONE",
                "MUST",
                "a client that offers no fs or terminal: the agent's tools never call fs/* or "
                "terminal/*",
            ),
        ),
        pytest.param(
            {"fs": FS},
            id="fs",
            marks=pytest.mark.requirement(
                "CLIENT-CAPS-FS-ONLY",
                "MUST",
                "a client that offers fs but no terminal: the agent never calls terminal/*, and "
                "fs/* calls (if any) work",
            ),
        ),
        pytest.param(
            {"terminal": True},
            id="terminal",
            marks=pytest.mark.requirement(
                "CLIENT-CAPS-TERMINAL-ONLY",
                "MUST",
                "a client that offers a terminal but no fs: the agent never calls fs/*, and "
                "terminal/* calls (if any) work",
            ),
        ),
    ],
)
async def test_tools_respect_client_capabilities(
    agent: AgentConnection, harness: Harness, model: Model, capabilities: dict[str, Any]
) -> None:
    workspace: Path = harness.workspace
    (workspace / "notes.txt").write_text("line one\nline two\n")
    session = await start(agent, workspace, **capabilities)
    profile = harness.tools(agent)
    model.plan(
        profile.call("toolu_conformance_write", profile.write(workspace / "out.txt", "hello\n")),
        profile.call("toolu_conformance_read", profile.read(workspace / "notes.txt")),
        profile.call(
            "toolu_conformance_shell", profile.shell(f"echo shell-ran > {workspace / 'shell.txt'}")
        ),
        reply("All done."),
    )
    answer, _ = await agent.prompt(
        session, "Write, read, then run a command", timeout=max(agent.timeout, 60)
    )
    assert stop_reason(answer) == "end_turn"
    assert agent.services is not None
    assert not agent.services.violations, agent.services.violations[0]
    delegated = sorted({r["method"] for r in agent.agent_requests if capability_for(r["method"])})
    assert (workspace / "out.txt").read_text() == "hello\n", (
        f"the write did not happen (delegated calls: {delegated})"
    )
    assert (workspace / "shell.txt").read_text().strip() == "shell-ran", (
        f"the command did not run (delegated calls: {delegated})"
    )
