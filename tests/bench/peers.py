"""The other ACP agents our cold start and memory are compared with, when they are installed.

- codex-acp (npm ``@zed-industries/codex-acp``, Rust): its platform binary, which the package's
  Node launcher would start (Zed runs the binary itself);
- claude-agent-acp (npm ``@agentclientprotocol/claude-agent-acp``, Node).

They are looked for under ``$ACP_PEERS`` (a folder made with ``npm install --prefix FOLDER
@zed-industries/codex-acp @agentclientprotocol/claude-agent-acp``), else
``~/.cache/iaccode-bench-peers``; a peer that is not there is left out of the table (the rows
say which ran). Each runs with a private home and placeholder keys: nothing reaches the network
(codex-acp's ``session/new`` needs ``authenticate`` first and gets it; claude-agent-acp's starts
Claude Code, which fails offline, so it is measured for start-up and memory only).
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

PREFIXES = ("~/.cache/iaccode-bench-peers",)
PLACEHOLDER_KEY = "bench-no-network"


@dataclass
class Peer:
    name: str
    version: str
    argv: list[str]
    language: str
    auth_method: str | None = None
    """Sent with ``authenticate`` before ``session/new`` (None: session/new is not measured)."""
    env: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.name} {self.version} ({self.language})"

    def environment(self, home: Path) -> dict[str, str]:
        """The peer's environment: ours minus real credentials, a private home, fake keys."""
        home.mkdir(parents=True, exist_ok=True)
        (home / ".codex").mkdir(exist_ok=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "OPENAI_", "CODEX_", "CLAUDE_"))
        }
        env.update(
            HOME=str(home),
            CODEX_HOME=str(home / ".codex"),
            OPENAI_API_KEY=PLACEHOLDER_KEY,
            ANTHROPIC_API_KEY=PLACEHOLDER_KEY,
            **self.env,
        )
        return env


def _prefixes() -> list[Path]:
    chosen = os.environ.get("ACP_PEERS")
    return [Path(chosen)] if chosen else [Path(p).expanduser() for p in PREFIXES]


def _version(package: Path) -> str:
    try:
        return str(json.loads((package / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "?"


def installed() -> list[Peer]:
    """The peers found (the first prefix that has each one)."""
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), "")
    found: dict[str, Peer] = {}
    for prefix in _prefixes():
        modules = prefix / "node_modules"
        codex = modules / "@zed-industries" / f"codex-acp-linux-{arch}"
        if "codex-acp" not in found and (codex / "bin" / "codex-acp").is_file():
            found["codex-acp"] = Peer(
                "codex-acp",
                _version(codex),
                [str(codex / "bin" / "codex-acp")],
                "Rust",
                auth_method="openai-api-key",
            )
        claude = modules / "@agentclientprotocol" / "claude-agent-acp"
        if "claude-agent-acp" not in found and (claude / "dist" / "index.js").is_file():
            found["claude-agent-acp"] = Peer(
                "claude-agent-acp",
                _version(claude),
                ["node", str(claude / "dist" / "index.js")],
                "Node",
            )
    return list(found.values())
