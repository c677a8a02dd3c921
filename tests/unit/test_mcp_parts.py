"""The MCP package's parts: server descriptions (ACP and config.toml), tool names, results, and
a session's servers against the real stdio fake server (acp_conformance/fakes/mcp_server.py)."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import mcp_types
import pytest
import trio
from acp_conformance.fakes.mcp_server import ROOT

from iaccode.config import Config, ConfigError
from iaccode.mcp.config import (
    ServerConfigError,
    ServerSpec,
    from_acp,
    from_toml,
    merge,
    spec_secrets,
)
from iaccode.mcp.names import MAX_LENGTH, tool_name
from iaccode.mcp.section import mcp_section
from iaccode.mcp.servers import McpServers, expand_prompt
from iaccode.mcp.tool import MAX_IMAGE_BYTES, tool_result
from iaccode.protocol.content import ImageContent, TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent

# -- names -----------------------------------------------------------------------------------


def test_tool_names_are_sanitised_and_fit_the_api() -> None:
    assert tool_name("db", "lookup") == "mcp__db__lookup"
    assert tool_name("my db", "get.row/v2") == "mcp__my_db__get_row_v2"
    long_a = tool_name("s" * 40, "t" * 40 + "a")
    long_b = tool_name("s" * 40, "t" * 40 + "b")
    assert len(long_a) == len(long_b) == MAX_LENGTH
    assert long_a != long_b and long_a.startswith("mcp__sss")
    assert tool_name("s" * 40, "t" * 40 + "a") == long_a  # stable


# -- where servers come from -----------------------------------------------------------------


def test_acp_servers_of_each_transport() -> None:
    specs = from_acp(
        [
            {
                "name": "db",
                "command": "/bin/db",
                "args": ["-v"],
                "env": [{"name": "TOKEN", "value": "t"}],
            },
            {
                "type": "http",
                "name": "tracker",
                "url": "https://t.example/mcp",
                "headers": [{"name": "Authorization", "value": "Bearer x"}],
            },
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []},
        ]
    )
    assert specs == [
        ServerSpec("db", "stdio", command="/bin/db", args=("-v",), env={"TOKEN": "t"}),
        ServerSpec(
            "tracker", "http", url="https://t.example/mcp", headers={"Authorization": "Bearer x"}
        ),
        ServerSpec("old", "sse", url="http://127.0.0.1:1/sse"),
    ]


@pytest.mark.parametrize(
    ("servers", "where"),
    [
        ([{"name": "db"}], "mcpServers[0].command"),
        ([{"command": "x"}], "mcpServers[0].name"),
        ([{"name": "db", "command": "x", "env": {"A": "b"}}], "mcpServers[0].env"),
        ([{"name": "db", "command": "x", "env": [{"name": "A"}]}], "mcpServers[0].env[0]"),
        ([{"name": "db", "command": "x", "args": [1]}], "mcpServers[0].args"),
        ([{"type": "http", "name": "t", "url": "file:///etc"}], "mcpServers[0].url"),
        ([{"type": "ws", "name": "t", "url": "http://x"}], "mcpServers[0].type"),
        ([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}], "mcpServers"),
        (["db"], "mcpServers[0]"),
    ],
)
def test_bad_acp_servers_name_the_field(servers: list[object], where: str) -> None:
    with pytest.raises(ServerConfigError) as caught:
        from_acp(servers)
    assert caught.value.where == where


def test_the_secrets_a_server_is_given_are_its_secret_env_and_credential_headers() -> None:
    stdio = ServerSpec(
        "gh",
        "stdio",
        command="gh-mcp",
        env={
            "GITHUB_TOKEN": "ghp_0123456789",
            "GH_HOST": "github.example.com",
            "DATABASE_URL": "postgres://u:pw-0123456789@db/x",
        },
    )
    assert spec_secrets(stdio) == [
        ("GITHUB_TOKEN", "ghp_0123456789"),
        ("DATABASE_URL", "postgres://u:pw-0123456789@db/x"),
    ]
    args = ServerSpec(
        "a",
        "stdio",
        command="a",
        args=(
            "--access-token",
            "tok-in-args-0123",
            "--api-key=key-in-args-0123",
            "--port",
            "8080",
            "--password",
            "--verbose",
            "--db",
            "postgres://u:pw-0123456789@db/x",
        ),
    )
    assert spec_secrets(args) == [
        ("--access-token", "tok-in-args-0123"),
        ("--api-key", "key-in-args-0123"),
        ("--db", "pw-0123456789"),
    ]
    remote = ServerSpec(
        "t",
        "http",
        url="https://t/mcp",
        headers={
            "Authorization": "Bearer tok-0123456789",
            "X-Api-Key": "key-0123456789",
            "Cookie": "session=abc0123456789",
            "X-Tenant": "acme-corporation",
            "Accept": "application/json",
        },
    )
    assert spec_secrets(remote) == [
        ("Authorization", "Bearer tok-0123456789"),
        ("Authorization", "tok-0123456789"),
        ("X-Api-Key", "key-0123456789"),
        ("Cookie", "session=abc0123456789"),
    ]


def test_a_session_holds_what_its_servers_are_given(monkeypatch: pytest.MonkeyPatch) -> None:
    import iaccode.secret_env as secret_env
    from iaccode.redaction import redact

    monkeypatch.setattr(secret_env, "_held", {})
    specs = [
        ServerSpec("a", "stdio", command="a", env={"GITHUB_TOKEN": "first-token-0123"}),
        ServerSpec("b", "stdio", command="b", env={"GITHUB_TOKEN": "second-token-0123"}),
    ]
    McpServers(specs, Path("/"))  # not started: holding them comes first
    assert redact("first-token-0123 second-token-0123") == (
        "[secret GITHUB_TOKEN] [secret GITHUB_TOKEN]"
    )  # two servers, one name: both held


def test_config_toml_servers_and_the_editors_win() -> None:
    user = from_toml(
        {
            "db": {"command": "db-mcp", "args": ["stdio"], "env": {"A": "1"}},
            "tracker": {"url": "https://t.example/mcp", "headers": {"X": "y"}},
            "old": {"type": "sse", "url": "https://o.example/sse"},
        }
    )
    assert [(s.name, s.transport, s.origin) for s in user] == [
        ("db", "stdio", "config"),
        ("tracker", "http", "config"),
        ("old", "sse", "config"),
    ]
    editor = from_acp([{"name": "db", "command": "/editor/db", "args": [], "env": []}])
    merged = {s.name: s for s in merge(user, editor)}
    assert merged["db"].command == "/editor/db" and merged["db"].origin == "editor"
    assert merged.keys() == {"db", "tracker", "old"}


def test_a_config_toml_server_may_be_trusted() -> None:
    specs = from_toml(
        {
            "tf": {"command": "tf-mcp", "trusted": True},
            "remote": {"url": "https://r.example/mcp", "trusted": False},
            "plain": {"command": "x"},
        }
    )
    assert [spec.trusted for spec in specs] == [True, False, False]
    assert not from_acp([{"name": "e", "command": "x", "args": [], "env": []}])[0].trusted


def home_with(tmp_path: Path, text: str) -> Path:
    (tmp_path / "config.toml").write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[mcp_servers.db]\ncommand = 1\n", "mcp_servers.db.command: must be a non-empty string"),
        ('[mcp_servers.db]\ncommand = "x"\nurl = "http://x"\n', "mcp_servers.db: has both"),
        ('[mcp_servers.db]\ncomand = "x"\n', "mcp_servers.db.comand: unknown key"),
        ('[mcp_servers.db]\ncommand = "x"\nenv = { A = 1 }\n', "mcp_servers.db.env: must be"),
        ('[mcp_servers.t]\ntype = "ws"\nurl = "http://x"\n', "mcp_servers.t.type: must be"),
        ("mcp_servers = 3\n", "mcp_servers: must be a table"),
        (
            '[mcp_servers.db]\ncommand = "x"\ntrusted = "yes"\n',
            "mcp_servers.db.trusted: must be a boolean",
        ),
        ("mcp_startup_timeout = 0\n", "mcp_startup_timeout must be more than 0"),
    ],
)
def test_bad_config_toml_servers_name_the_file_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        Config.from_env({}, home=home_with(tmp_path, text))
    assert str(tmp_path / "config.toml") in str(caught.value)
    assert message in str(caught.value)


def test_config_toml_servers_and_startup_timeout_are_read(tmp_path: Path) -> None:
    config = Config.from_env(
        {},
        home=home_with(
            tmp_path, 'mcp_startup_timeout = 2.5\n[mcp_servers.db]\ncommand = "db-mcp"\n'
        ),
    )
    assert config.mcp_startup_timeout == 2.5
    assert config.mcp_servers == (ServerSpec("db", "stdio", command="db-mcp", origin="config"),)
    assert Config.from_env({}, home=tmp_path / "none").mcp_startup_timeout == 10.0


# -- results ---------------------------------------------------------------------------------

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


def test_structured_content_alone_becomes_json_text() -> None:
    result = tool_result(mcp_types.CallToolResult(content=[], structured_content={"rows": 2}), 1000)
    assert result.text == '{\n  "rows": 2\n}' and not result.is_error
    assert result.raw_output["structuredContent"] == {"rows": 2}


def test_resources_images_and_the_output_cap() -> None:
    big = base64.b64encode(b"\0" * (MAX_IMAGE_BYTES + 1)).decode()
    result = tool_result(
        mcp_types.CallToolResult(
            is_error=True,
            content=[
                mcp_types.TextContent(type="text", text="x" * 500),
                mcp_types.EmbeddedResource(
                    type="resource",
                    resource=mcp_types.TextResourceContents(
                        uri="file:///a.txt", text="resource text"
                    ),
                ),
                mcp_types.EmbeddedResource(
                    type="resource",
                    resource=mcp_types.BlobResourceContents(
                        uri="file:///b.bin", blob="AAAA", mime_type="application/octet-stream"
                    ),
                ),
                mcp_types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                mcp_types.ImageContent(type="image", data=big, mime_type="image/png"),
                mcp_types.ImageContent(type="image", data=PNG, mime_type="image/tiff"),
            ],
        ),
        100,
    )
    assert result.is_error
    lines = result.text.split("\n")
    assert lines[1:] == [
        "resource text",
        "[resource file:///b.bin: application/octet-stream data]",
        "[image: image/png]",
        f"[image: image/png, not passed on: {MAX_IMAGE_BYTES + 1} bytes, the limit is "
        f"{MAX_IMAGE_BYTES}]",
        "[image: image/tiff, not passed on: a type the model cannot read]",
    ]
    assert result.model_content is not None
    cut, image = result.model_content
    assert cut["type"] == "text" and "characters cut" in cut["text"] and len(cut["text"]) < 200
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    }
    assert result.content is not None
    assert all(isinstance(c, ContentToolCallContent) for c in result.content)
    shown = [c.content for c in result.content if isinstance(c, ContentToolCallContent)]
    assert isinstance(shown[0], TextContent) and "characters cut" in shown[0].text
    assert len(shown[0].text) < 200
    assert shown[3] == ImageContent(PNG, "image/png")


# -- a session's servers, against the real stdio server ---------------------------------------


async def test_servers_connect_list_tools_prompts_and_end(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    spec = ServerSpec(
        "db",
        "stdio",
        command=sys.executable,
        args=("-m", "acp_conformance.fakes.mcp_server", "stdio", "--spawn-child", str(pid_file)),
        env={"PYTHONPATH": str(ROOT)},
    )
    changes: list[None] = []
    servers = McpServers(
        [spec, ServerSpec("gone", "stdio", command="/nonexistent/x")],
        tmp_path,
        on_change=lambda: changes.append(None),
    )
    assert "db (stdio" in servers.listing() and ": starting" in servers.listing()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(servers.serve)
            assert await servers.prepare(20) == [
                "MCP server gone could not start: /nonexistent/x: not found"
            ]
            assert await servers.prepare(20) == []  # tried again, not told again
            tools = servers.tools()
            assert "mcp__db__lookup" in tools and tools["mcp__db__lookup"].read_only
            assert not tools["mcp__db__drop_table"].read_only
            section = mcp_section(servers)
            assert section is not None
            assert "- mcp__db__lookup (read-only): Look a key up in the database." in section
            assert "- mcp__db__drop_table: Drop a table." in section
            command = servers.prompt_commands()["db:review"]
            assert command.hint == "<topic>"
            assert await expand_prompt(command, "the schema") == [
                TextContent("Please review the schema carefully.")
            ]
            assert "needs topic" in str(await expand_prompt(command, ""))
            assert changes
            server_pid, child_pid = (int(p) for p in pid_file.read_text().split())
            await servers.aclose()
            nursery.cancel_scope.cancel()
    from acp_conformance.processes import pid_alive

    assert not pid_alive(server_pid) and not pid_alive(child_pid)
    assert mcp_section(McpServers([], tmp_path)) is None


async def test_a_listing_keeps_what_fits_as_it_comes_and_what_came_before_a_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from iaccode.mcp import connection

    monkeypatch.setattr(connection, "LIST_TIMEOUT", 0.5)
    taken: list[str] = []

    async def pages(cursor: str | None) -> SimpleNamespace:
        page = int(cursor or 0)
        if page == 3:
            await trio.sleep_forever()
        return SimpleNamespace(tools=[f"t{page}a", f"t{page}b"], next_cursor=str(page + 1))

    def take(item: str) -> bool:
        taken.append(item)
        return item.endswith("a")

    items, why = await connection._listing(pages, "tools", take)
    assert items == ["t0a", "t1a", "t2a"] and taken == ["t0a", "t0b", "t1a", "t1b", "t2a", "t2b"]
    assert why == "its tools list took longer than 0.5 s (3 taken from 3 pages)"

    async def hangs(cursor: str | None) -> SimpleNamespace:
        await trio.sleep_forever()
        raise AssertionError

    with pytest.raises(TimeoutError):  # nothing came: the old lists stay (see _list_again)
        await connection._listing(hangs, "tools")


@pytest.mark.parametrize(
    ("tools", "prompts", "status"),
    [
        (1, 1, "connected, 1 tool, 1 prompt"),
        (2, 3, "connected, 2 tools, 3 prompts"),
        (0, 0, "connected, 0 tools"),
    ],
)
def test_the_listing_counts_in_good_english(
    tmp_path: Path, tools: int, prompts: int, status: str
) -> None:
    servers = McpServers([ServerSpec("db", "stdio", command="db-server")], tmp_path)
    connection = servers.connections[0]
    connection.status = "connected"
    connection.tools = [mcp_types.Tool(name=f"t{i}", input_schema={}) for i in range(tools)]
    connection.prompts = [mcp_types.Prompt(name=f"p{i}") for i in range(prompts)]
    assert servers.listing().splitlines()[1] == (
        f"- db (stdio, db-server, from the editor): {status}"
    )
