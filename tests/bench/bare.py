"""The baselines: tiny Python programs that do the bare minimum of what the agent does, spoken
to over the same pipes by the same client. ``python tests/bench/bare.py MODE [ARGS]``.

- ``echo``: answer each JSON-RPC request line with ``{"result": {}}`` (a round trip's floor).
- ``stream N``: on one input line, write N ``session/update`` lines built with ``json.dumps``,
  then the answer (the floor of streaming).
- ``replay FILE``: on one input line, read a ``history.jsonl``, parse every line, write one
  ``session/update`` line per message record, then the answer (the floor of ``session/load``).
- ``sessions N``: trio, N tasks each holding a nursery and two open files (what a live idle
  session minimally holds), then idle (a floor for memory per idle session).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SESSION_ID = "sess_" + "0" * 32


def _dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _update(text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": SESSION_ID,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            },
        },
    }


def _stdout() -> Any:
    """Buffered whatever PYTHONUNBUFFERED says (the agent batches its writes too)."""
    return open(sys.stdout.fileno(), "wb", buffering=1 << 16, closefd=False)  # noqa: SIM115


def _answer(line: bytes, result: Any) -> bytes:
    return _dumps({"jsonrpc": "2.0", "id": json.loads(line)["id"], "result": result})


def echo() -> None:
    out = _stdout()
    for line in sys.stdin.buffer:
        out.write(_answer(line, {}))
        out.flush()


def stream(count: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.bench.common import text_chunks

    chunks = text_chunks(count)
    out = _stdout()
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        for text in chunks:
            out.write(_dumps(_update(text)))
        out.write(_answer(line, {"stopReason": "end_turn"}))
        out.flush()


def replay(path: str) -> None:
    out = _stdout()
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        with open(path, "rb") as file:
            for raw in file:
                record = json.loads(raw)
                if record.get("type") != "message":
                    continue
                for block in record["message"]["content"]:
                    out.write(_dumps(_update(block.get("text", ""))))
        out.write(_answer(line, {}))
        out.flush()


def sessions(count: int) -> None:
    import os
    import tempfile

    import trio

    async def hold(folder: str, index: int, task_status: trio.TaskStatus[None]) -> None:
        # As the store holds them: the history as an unbuffered FileIO, the lock as a bare fd.
        history = open(os.path.join(folder, f"{index}.history"), "ab", buffering=0)  # noqa: SIM115, ASYNC230
        lock = os.open(os.path.join(folder, f"{index}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            async with trio.open_nursery():
                task_status.started()
                await trio.sleep_forever()
        finally:
            history.close()
            os.close(lock)

    async def main() -> None:
        out = _stdout()
        with tempfile.TemporaryDirectory() as folder:
            async with trio.open_nursery() as nursery:
                out.write(b"ready\n")
                out.flush()
                await trio.lowlevel.wait_readable(sys.stdin.fileno())
                sys.stdin.buffer.readline()
                for index in range(count):
                    await nursery.start(hold, folder, index)
                out.write(b"started\n")
                out.flush()
                await trio.lowlevel.wait_readable(sys.stdin.fileno())
                nursery.cancel_scope.cancel()

    trio.run(main)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "echo":
        echo()
    elif mode == "stream":
        stream(int(args[0]))
    elif mode == "replay":
        replay(args[0])
    elif mode == "sessions":
        sessions(int(args[0]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
