"""A minimal ACP client: spawns `iaccode acp`, asks one question, prints the streamed answer.

    python examples/hello_client.py                 # scripted model: no key, no network
    python examples/hello_client.py --live "Hi!"    # the real model (needs ANTHROPIC_API_KEY)

Standard library only, so it shows the whole wire protocol in a page: one JSON object per line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("hello-script.json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt", nargs="?", default="Hello! Who are you?")
    parser.add_argument("--live", action="store_true", help="use the real Anthropic API")
    parser.add_argument("--verbose", action="store_true", help="show the agent's log (stderr)")
    args = parser.parse_args()

    command = [sys.executable, "-m", "iaccode", "acp"]
    if not args.live:
        command += ["--model-script", str(SCRIPT)]
    agent = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=None if args.verbose else subprocess.DEVNULL, text=True)
    assert agent.stdin is not None and agent.stdout is not None
    ids = iter(range(1, 1_000_000))

    def call(method: str, params: dict[str, Any]) -> Any:
        request_id = next(ids)
        agent.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                      "params": params}) + "\n")
        agent.stdin.flush()
        for line in agent.stdout:
            message = json.loads(line)
            if message.get("method") == "session/update":
                show(message["params"]["update"])
            elif message.get("id") == request_id:
                if "error" in message:
                    sys.exit(f"\n{method} failed: {message['error']}")
                return message["result"]
        sys.exit("the agent exited early")

    info = call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    print(f"connected to {info['agentInfo']['title']} {info['agentInfo']['version']}")
    session = call("session/new", {"cwd": str(Path.cwd()), "mcpServers": []})["sessionId"]
    print(f"> {args.prompt}")
    result = call("session/prompt", {"sessionId": session,
                                     "prompt": [{"type": "text", "text": args.prompt}]})
    print(f"\n[stop reason: {result['stopReason']}, tokens: {result['usage']['totalTokens']}]")
    agent.stdin.close()  # end of input: the agent exits
    return agent.wait(timeout=5)


_last_kind = ""


def show(update: dict[str, Any]) -> None:
    global _last_kind
    kind = update["sessionUpdate"]
    if kind not in ("agent_thought_chunk", "agent_message_chunk"):
        return
    if _last_kind and kind != _last_kind:
        print()
    _last_kind = kind
    text = update["content"]["text"]
    dim = kind == "agent_thought_chunk"
    print(f"\033[2m{text}\033[0m" if dim else text, end="", flush=True)


if __name__ == "__main__":
    sys.exit(main())
