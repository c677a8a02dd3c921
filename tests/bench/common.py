"""What every benchmark shares: a lean synchronous ACP client for a spawned ``iaccode acp``, the
figures (``Row``), statistics, RSS, and the scratch folders.

The client is deliberately not ``tests/support/agent_process.py``: that driver parses, keeps and
schema-checks every line, which would make the client, not the agent, the bottleneck when 100,000
updates stream. This one reads with ``os.read`` into a buffer, hands back raw lines, and parses
only what it is asked to.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

MIB = 1024 * 1024
UPDATE_PREFIX = b'{"jsonrpc":"2.0","method":"session/update"'
"""How every ``session/update`` line the agent writes starts (compact JSON, fixed key order)."""


# -- figures -------------------------------------------------------------------------------------


@dataclass
class Row:
    """One figure of the table: the value, its baseline from the same run, and the target."""

    group: str
    figure: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_label: str = ""
    target: str = ""
    met: bool | None = None
    """None: no target for this figure (informational)."""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100): with fewer than 100 samples p99 is the maximum."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * p // 100)))
    return ordered[int(rank) - 1]


def ms(seconds: float) -> float:
    return seconds * 1000.0


# -- processes -----------------------------------------------------------------------------------


def agent_command() -> list[str]:
    """What an editor runs: the ``iaccode`` console script beside this interpreter."""
    script = Path(sys.executable).parent / "iaccode"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), "acp"]
    return [sys.executable, "-m", "iaccode", "acp"]


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    """Our environment minus real credentials and settings, plus a private home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IAC_CODE_"))}
    env["IAC_CODE_HOME"] = str(home)
    env["IAC_CODE_LOG_LEVEL"] = "WARNING"
    env.update(extra)
    return env


def rss_bytes(pid: int) -> int:
    import psutil

    return int(psutil.Process(pid).memory_info().rss)


@contextmanager
def scratch(name: str) -> Iterator[Path]:
    """A temporary folder, removed afterwards (``BENCH_KEEP=1`` keeps it)."""
    root = Path(tempfile.mkdtemp(prefix=f"iaccode-bench-{name}-"))
    try:
        yield root
    finally:
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(root, ignore_errors=True)


class AgentGone(Exception):
    pass


class Client:
    """A spawned process spoken to in JSON lines over its stdin/stdout (synchronously)."""

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None,
                 stderr: Path | None = None, cwd: Path | None = None) -> None:
        self._stderr_path = stderr
        err = open(stderr, "wb") if stderr is not None else subprocess.DEVNULL  # noqa: SIM115
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err, env=env, cwd=cwd, bufsize=0)
        if stderr is not None:
            err.close()  # type: ignore[union-attr]
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buffer = b""
        self._lines: deque[bytes] = deque()
        self.bytes_read = 0
        self._ids = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_tail(self) -> str:
        if self._stderr_path is None:
            return ""
        try:
            return self._stderr_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    # -- sending --

    def send_raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._in, view)
            view = view[written:]

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def send_request(self, method: str, params: Any = None) -> int:
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._ids

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def reply(self, request_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    # -- receiving --

    def _fill(self, timeout: float | None) -> bool:
        """Read what is there (waiting up to ``timeout``); False on timeout."""
        if timeout is not None:
            ready, _, _ = select.select([self._out], [], [], max(0.0, timeout))
            if not ready:
                return False
        chunk = os.read(self._out, 1 << 20)
        if not chunk:
            raise AgentGone(f"the process closed its output; stderr:\n{self.stderr_tail()}")
        self.bytes_read += len(chunk)
        data = self._buffer + chunk
        *lines, self._buffer = data.split(b"\n")
        self._lines.extend(lines)
        return True

    def line(self, timeout: float | None = 60.0) -> bytes:
        """The next raw line (TimeoutError after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        while not self._lines:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0 or not self._fill(left):
                raise TimeoutError(f"no output in {timeout} s; stderr:\n{self.stderr_tail()}")
        return self._lines.popleft()

    def poll_line(self, timeout: float) -> bytes | None:
        """The next raw line if one comes within ``timeout`` seconds, else None."""
        if not self._lines and not self._fill(timeout):
            return None
        return self._lines.popleft() if self._lines else None

    def message(self, timeout: float | None = 60.0) -> dict[str, Any]:
        return json.loads(self.line(timeout))  # type: ignore[no-any-return]

    def response(self, request_id: int, timeout: float = 60.0,
                 on_request: Callable[[dict[str, Any]], Any] | None = None,
                 on_update: Callable[[bytes], None] | None = None) -> dict[str, Any]:
        """Read until the answer to ``request_id``; updates go to ``on_update`` (raw), the
        agent's requests to ``on_request`` (its return value is sent as the result)."""
        deadline = time.perf_counter() + timeout
        while True:
            raw = self.line(deadline - time.perf_counter())
            if raw.startswith(UPDATE_PREFIX):
                if on_update is not None:
                    on_update(raw)
                continue
            message = json.loads(raw)
            if "method" in message:
                if "id" in message:
                    if on_request is None:
                        raise AssertionError(f"unexpected request from the agent: {raw[:300]!r}")
                    result = on_request(message)
                    if result is not None:
                        self.reply(message["id"], result)
                continue
            if message.get("id") == request_id:
                return message

    def count_until_response(self, request_id: int, timeout: float = 300.0
                             ) -> tuple[dict[str, Any], int]:
        """Read until the answer to ``request_id`` as cheaply as we can (whole chunks, lines
        counted with ``bytes.count``, only the chunk holding the answer split): returns the
        answer and how many lines came before it. For throughput, where a client that looks
        at every line would be the bottleneck. Any agent request on the way is an error."""
        marker = b'"id":%d,' % request_id
        before = 0
        while self._lines:  # lines already split off by an earlier read
            raw = self._lines.popleft()
            if marker in raw and not raw.startswith(UPDATE_PREFIX):
                return json.loads(raw), before
            before += 1
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            ready, _, _ = select.select([self._out], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError(f"no answer in {timeout} s; stderr:\n{self.stderr_tail()}")
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise AgentGone(f"the process closed its output; stderr:\n{self.stderr_tail()}")
            self.bytes_read += len(chunk)
            data = self._buffer + chunk
            if marker not in data:
                cut = data.rfind(b"\n") + 1
                before += data.count(b"\n", 0, cut)
                self._buffer = data[cut:]
                continue
            *lines, self._buffer = data.split(b"\n")
            for index, raw in enumerate(lines):
                if marker in raw and not raw.startswith(UPDATE_PREFIX):
                    message = json.loads(raw)
                    assert "method" not in message, raw[:300]
                    self._lines.extend(lines[index + 1:])
                    return message, before
                before += 1

    def call(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        response = self.response(self.send_request(method, params), timeout)
        if "result" not in response:
            raise AssertionError(f"{method} failed: {response}; stderr:\n{self.stderr_tail()}")
        return response["result"]

    # -- ACP --

    def initialize(self) -> dict[str, Any]:
        return self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {},  # type: ignore[no-any-return]
                                        "clientInfo": {"name": "bench", "version": "0"}})

    def new_session(self, cwd: Path) -> str:
        return str(self.call("session/new", {"cwd": str(cwd), "mcpServers": []})["sessionId"])

    def prompt_request(self, session_id: str, text: str = "go") -> int:
        return self.send_request("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": text}]})

    def close(self, timeout: float = 5.0) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and self.proc.poll() is None:
            self.proc.kill()
        self.close()


def spawn_agent(home: Path, *args: str, **env: str) -> Client:
    home.mkdir(parents=True, exist_ok=True)
    return Client([*agent_command(), *args], agent_env(home, **env), stderr=home / "stderr.log")


# -- model scripts -------------------------------------------------------------------------------


def write_script(path: Path, exchanges: list[dict[str, Any]]) -> Path:
    """A model script file (compact JSON: ``dump_script`` indents, which is slow to read at
    millions of events)."""
    from iaccode.llm.script import SCRIPT_VERSION, validate_script

    checked = validate_script(exchanges)
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"version": SCRIPT_VERSION, "exchanges": checked}, file,
                  separators=(",", ":"))
    return path


def text_chunks(count: int) -> list[str]:
    """``count`` short text deltas, like tokens."""
    words = ("alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta ", "eta ", "theta ")
    return [words[i % len(words)] for i in range(count)]


def log(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
