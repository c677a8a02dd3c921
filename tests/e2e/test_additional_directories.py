"""``additionalDirectories``: more folders that count as the project (issue 24).

The editor opens a session in one folder and adds others (a monorepo's shared modules, a docs
checkout). Reads there run without a question, as in the cwd; ``accept_edits`` covers edits
there; anything outside every folder still asks, symlinks included. The system prompt names
them, ``session/list`` reports them, and load / resume / fork take the request's list (the RFD:
never the stored one).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import reply

from tests.e2e.test_tools import call, choose, result_for
from tests.support.agent_process import AgentConnection


@pytest.fixture
def modules(tmp_path: Path) -> Path:
    folder = tmp_path / "shared-modules"
    folder.mkdir()
    (folder / "vpc.tf").write_text('resource "aws_vpc" "main" {}\n')
    return folder


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "secret.txt").write_text("not the project's\n")
    return folder


async def open_session(agent: AgentConnection, workspace: Path, *folders: Path) -> str:
    await agent.initialize()
    result = await agent.call(
        "session/new",
        {
            "cwd": str(workspace),
            "mcpServers": [],
            "additionalDirectories": [str(f) for f in folders],
        },
    )
    return str(result["sessionId"])


async def test_the_capability_is_advertised(agent: AgentConnection) -> None:
    result = await agent.initialize()
    assert result["agentCapabilities"]["sessionCapabilities"]["additionalDirectories"] == {}


async def test_reads_in_an_added_folder_need_no_question_and_outside_they_do(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    modules: Path,
    elsewhere: Path,
) -> None:
    model_server.enqueue(
        call("read_file", path=str(modules / "vpc.tf")),
        reply("read"),
        call("read_file", path=str(elsewhere / "secret.txt")),
        reply("asked"),
    )
    session = await open_session(agent, workspace, modules)
    _, _, requests = await agent.run_prompt(session, "read the shared module")
    assert requests == []  # no question: it is part of the project
    assert "aws_vpc" in result_for(model_server, 1, "toolu_read_file")["content"]
    _, _, requests = await agent.run_prompt(session, "read elsewhere", choose("reject_once"))
    assert [r["method"] for r in requests] == ["session/request_permission"]


async def test_a_symlink_out_of_an_added_folder_is_outside(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    modules: Path,
    elsewhere: Path,
) -> None:
    (modules / "link.txt").symlink_to(elsewhere / "secret.txt")
    (modules / "linked-dir").symlink_to(elsewhere)
    model_server.enqueue(
        call("read_file", path=str(modules / "link.txt")),
        reply("asked"),
        call("read_file", path=str(modules / "linked-dir" / "secret.txt")),
        reply("asked again"),
    )
    session = await open_session(agent, workspace, modules)
    for prompt in ("read the link", "read through the linked folder"):
        _, _, requests = await agent.run_prompt(session, prompt, choose("reject_once"))
        assert [r["method"] for r in requests] == ["session/request_permission"], prompt


async def test_accept_edits_covers_an_added_folder_and_not_outside(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    modules: Path,
    elsewhere: Path,
) -> None:
    model_server.enqueue(
        call("write_file", path=str(modules / "new.tf"), content="x = 1\n"),
        reply("written"),
        call("write_file", path=str(elsewhere / "new.tf"), content="x = 1\n"),
        reply("refused"),
    )
    session = await open_session(agent, workspace, modules)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "accept_edits"})
    _, _, requests = await agent.run_prompt(session, "write in the shared modules")
    assert requests == [] and (modules / "new.tf").read_text() == "x = 1\n"
    _, _, requests = await agent.run_prompt(session, "write elsewhere", choose("reject_once"))
    assert [r["method"] for r in requests] == ["session/request_permission"]
    assert not (elsewhere / "new.tf").exists()


async def test_a_question_calls_only_what_is_outside_every_folder_outside(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    modules: Path,
    elsewhere: Path,
) -> None:
    """A write asks in the default mode, in an added folder too; its question says "outside
    the project" only for a path outside every folder of the project."""
    model_server.enqueue(
        call("write_file", path=str(modules / "new.tf"), content="x = 1\n"),
        reply("asked"),
        call("write_file", path=str(elsewhere / "new.tf"), content="x = 1\n"),
        reply("asked too"),
    )
    session = await open_session(agent, workspace, modules)
    titles = []
    for prompt in ("write in the shared modules", "write elsewhere"):
        _, _, requests = await agent.run_prompt(session, prompt, choose("reject_once"))
        assert [r["method"] for r in requests] == ["session/request_permission"], prompt
        titles.append(requests[0]["params"]["toolCall"]["title"])
    inside, outside = titles
    assert "outside the project" not in inside, inside
    assert outside.endswith("(outside the project)"), outside


async def test_the_system_prompt_names_them(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, modules: Path
) -> None:
    model_server.enqueue(reply("hello"))
    session = await open_session(agent, workspace, modules)
    await agent.run_prompt(session, "hi")
    system = json.dumps(model_server.requests[0].body["system"])
    assert "Also part of the project" in system and str(modules) in system


async def test_listed_kept_and_replaced_by_load_resume_and_fork(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    modules: Path,
    elsewhere: Path,
) -> None:
    session = await open_session(agent, workspace, modules, modules, workspace)

    async def listed(session_id: str) -> list[str]:
        found = await agent.call("session/list", {})
        return next(
            s["additionalDirectories"] for s in found["sessions"] if s["sessionId"] == session_id
        )

    assert await listed(session) == [str(modules)]  # repeats and the cwd itself left out
    await agent.call("session/close", {"sessionId": session})
    assert await listed(session) == [str(modules)]  # kept with the session

    # load: the request's list, and omitted means none (the RFD), whatever was stored
    await agent.call(
        "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
    )
    assert await listed(session) == []
    model_server.enqueue(call("read_file", path=str(modules / "vpc.tf")), reply("asked"))
    _, _, requests = await agent.run_prompt(session, "read", choose("reject_once"))
    assert [r["method"] for r in requests] == ["session/request_permission"]

    # resume of the live session: the new list from now on
    await agent.call(
        "session/resume",
        {
            "sessionId": session,
            "cwd": str(workspace),
            "mcpServers": [],
            "additionalDirectories": [str(elsewhere)],
        },
    )
    assert await listed(session) == [str(elsewhere)]
    model_server.enqueue(call("read_file", path=str(elsewhere / "secret.txt")), reply("read"))
    _, _, requests = await agent.run_prompt(session, "read")
    assert requests == []

    fork = await agent.call(
        "session/fork",
        {
            "sessionId": session,
            "cwd": str(workspace),
            "mcpServers": [],
            "additionalDirectories": [str(modules)],
        },
    )
    assert await listed(fork["sessionId"]) == [str(modules)]
    plain_fork = await agent.call(
        "session/fork", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
    )
    assert await listed(plain_fork["sessionId"]) == []


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("relative/path", "must be an absolute path"),
        ("", "must be an absolute path"),
        ("/no/such/folder/anywhere", "existing directory"),
    ],
)
async def test_a_bad_entry_is_refused_naming_it(
    agent: AgentConnection, workspace: Path, modules: Path, entry: str, why: str
) -> None:
    await agent.initialize()
    answer = await agent.request(
        "session/new",
        {"cwd": str(workspace), "mcpServers": [], "additionalDirectories": [str(modules), entry]},
    )
    assert answer["error"]["code"] == -32602
    assert why in answer["error"]["data"]["params.additionalDirectories[1]"]
    file_entry = await agent.request(
        "session/new",
        {
            "cwd": str(workspace),
            "mcpServers": [],
            "additionalDirectories": [str(modules / "vpc.tf")],
        },
    )
    assert "params.additionalDirectories[0]" in file_entry["error"]["data"]
    wrong_type = await agent.request(
        "session/new", {"cwd": str(workspace), "mcpServers": [], "additionalDirectories": [None]}
    )
    assert wrong_type["error"]["code"] == -32602


def test_through_the_official_python_sdk(
    agent_env: dict[str, str], workspace: Path, modules: Path
) -> None:
    """The SDK's own models read what we send: the capability, the listed folders."""
    import acp

    from tests.e2e.test_official_sdk_client import RecordingClient, run, spawn

    async def main() -> None:
        async with await spawn(RecordingClient(), agent_env) as (conn, _):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            capabilities = init.agent_capabilities.session_capabilities
            assert capabilities.additional_directories is not None
            session = await conn.new_session(
                cwd=str(workspace), mcp_servers=[], additional_directories=[str(modules)]
            )
            listed = await conn.list_sessions()
            info = next(s for s in listed.sessions if s.session_id == session.session_id)
            assert info.additional_directories == [str(modules)]

    run(main())
