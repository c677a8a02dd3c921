"""Machinery shared by the adversarial suite.

``LineAgent``
    A raw line client on the harness's synchronous one (``acp_conformance.line_client``), so
    that one ``iaccode acp`` can serve every example of a Hypothesis test function. Every line
    the agent writes is checked as it arrives: strict JSON (no NaN), a JSON-RPC 2.0 envelope,
    the official ACP schema for what the agent sends on its own, and an oracle for answers:
    each request-shaped line we sent is owed exactly one answer with its id, each malformed
    line exactly one error with a null id, and nothing else is ever answered.

Helpers: agent environments (scripted offline model or the fake HTTP server), RSS from /proc,
process liveness, and the API's history rules.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from acp_conformance.line_client import AgentGone, LineClient
from acp_conformance.processes import parent_pid, pid_alive
from acp_conformance.schema import WireChecker, method_tables, validate_def

from iaccode.llm.script import dump_script
from tests.support.agent_process import AGENT_COMMAND, METHOD_ALIASES
from tests.support.environment import agent_environment

INTERNAL_ERROR = -32603
NULL_ID = ("null", None)

IdKey = tuple[str, Any]


# -- environments ------------------------------------------------------------------------------

GUARD = Path(__file__).resolve().parent / "guard"


def guarded(env: dict[str, str], home: Path) -> dict[str, str]:
    """``env`` with the loopback-only guard (``guard/sitecustomize.py``) loaded in the agent."""
    env["PYTHONPATH"] = os.pathsep.join([str(GUARD), *filter(None, [env.get("PYTHONPATH")])])
    env["IAC_ADV_GUARD_LOG"] = str(home / "guard.log")
    return env


def guard_violations(home: Path) -> list[str]:
    """What the guard refused in agents that used ``home`` (empty: nothing left loopback)."""
    try:
        return (home / "guard.log").read_text().splitlines()
    except FileNotFoundError:
        return []


def scripted_env(
    home: Path, exchanges: Iterable[Mapping[str, Any]], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """An agent that plays ``exchanges`` with the offline provider: no network, no SDK import
    (the SDK costs ~3 s of CPU per process; most cases here only need a model that asks for
    tools, and both providers assemble events with the same code)."""
    home.mkdir(parents=True, exist_ok=True)
    script = home / "model-script.json"
    dump_script(list(exchanges), script)
    return guarded(
        agent_environment(home, {"IAC_CODE_MODEL_SCRIPT": str(script), **(extra or {})}), home
    )


def http_env(home: Path, base_url: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An agent on the real Anthropic SDK talking to a fake server on 127.0.0.1."""
    home.mkdir(parents=True, exist_ok=True)
    return guarded(
        agent_environment(
            home,
            {
                "ANTHROPIC_API_KEY": "test-key",
                "ANTHROPIC_BASE_URL": base_url,
                "IAC_CODE_MAX_RETRIES": "2",
                **(extra or {}),
            },
        ),
        home,
    )


# -- processes ---------------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB (VmRSS from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def kill_quietly(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


# -- JSON-RPC ----------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_loads(line: bytes) -> Any:
    """Parse one line as standard JSON: UTF-8, no NaN/Infinity."""
    return json.loads(line.decode("utf-8"), parse_constant=_reject_constant)


def id_key(value: Any) -> IdKey:
    if value is None:
        return NULL_ID
    return (type(value).__name__, value)


def is_request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def envelope_problems(message: Any) -> list[str]:
    """What is wrong with ``message`` as a JSON-RPC 2.0 message from the agent."""
    if not isinstance(message, dict):
        return ["not a JSON object"]
    problems = []
    if message.get("jsonrpc") != "2.0":
        problems.append('"jsonrpc" is not "2.0"')
    extra = set(message) - {"jsonrpc", "id", "method", "params", "result", "error"}
    if extra:
        problems.append(f"unexpected members {sorted(extra)}")
    if "method" in message:
        if not isinstance(message["method"], str):
            problems.append("method is not a string")
        if "result" in message or "error" in message:
            problems.append("a call carries result/error")
        if "id" in message and not is_request_id(message["id"]):
            problems.append("a request id that is not a string or an integer")
        if "params" in message and not isinstance(message["params"], dict | list):
            problems.append("params neither an object nor an array")
        return problems
    if ("result" in message) == ("error" in message):
        problems.append("a response needs exactly one of result and error")
    if "id" not in message:
        problems.append("a response without id")
    elif message["id"] is None:
        if "error" not in message:
            problems.append("a null id on a success answer")
    elif not is_request_id(message["id"]):
        problems.append("a response id that is not a string or an integer")
    if "error" in message:
        error = message["error"]
        if not (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        ):
            problems.append(f"a malformed error object {error!r:.200}")
    return problems


def expected_answers(data: bytes) -> list[tuple[IdKey, str | None]]:
    """The answers the agent owes for ``data`` (whole lines): one per request-shaped line (its
    id, its method), one null-id error per malformed line, none for notifications and
    responses. Mirrors the JSON-RPC rules the agent documents (docs/protocol.md, "Errors")."""
    owed: list[tuple[IdKey, str | None]] = []
    for line in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            owed.append((NULL_ID, None))
            continue
        except RecursionError:
            # Near Python's recursion limit the agent (whose parser runs deeper in its stack)
            # and we may disagree: a parse error, or whatever the line would be parsed.
            alternative = _parsed_deeper(line)
            if alternative is None:  # not JSON at all: a parse error either way
                owed.append((NULL_ID, None))
            elif alternative == ("maybe", NULL_ID):  # a notification or a response
                owed.append((alternative, None))
            else:
                owed.append((("either", (NULL_ID, alternative)), None))
            continue
        if not isinstance(message, dict):
            owed.append((NULL_ID, None))
            continue
        message_id = message.get("id")
        id_ok = is_request_id(message_id) and "method" in message
        echoed = id_key(message_id) if id_ok else NULL_ID
        if message.get("jsonrpc") != "2.0":
            owed.append((echoed, None))
        elif "method" in message:
            if not isinstance(message["method"], str):
                owed.append((echoed, None))
            elif "id" not in message:
                pass  # a notification
            elif not id_ok:
                owed.append((NULL_ID, None))
            else:
                owed.append((echoed, message["method"]))
        elif "result" in message or "error" in message:
            pass  # a response: never answered
        else:
            owed.append((NULL_ID, None))
    return owed


def _parsed_deeper(line: bytes) -> IdKey | None:
    """The id a request line would be answered with if parsed with a deeper stack."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 300)  # the agent's margin, and safe for the C stack
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    finally:
        sys.setrecursionlimit(limit)
    if not isinstance(message, dict):
        return NULL_ID
    entries = expected_answers(
        json.dumps(
            {k: v for k, v in message.items() if k not in ("params", "result", "error")}
            | ({"result": 0} if "result" in message else {})
            | ({"error": 0} if "error" in message else {})
        ).encode()
        + b"\n"
    )
    return entries[0][0] if entries else ("maybe", NULL_ID)


class AgentDied(AssertionError):
    pass


class LineAgent:
    """``iaccode acp`` on the harness's synchronous client, driven line by line (see the
    module docstring): each line the agent writes goes through the oracle as it arrives."""

    def __init__(
        self, env: Mapping[str, str], stderr_path: Path, *, forbid_internal_errors: bool = True
    ) -> None:
        self.stderr_path = stderr_path
        self.forbid_internal_errors = forbid_internal_errors
        self.schema = WireChecker(aliases=METHOD_ALIASES)
        self._response_types = method_tables().agent_responses
        self.owed: Counter[IdKey] = Counter()
        self.maybe: Counter[IdKey] = Counter()
        """Answers that may or may not come (a line at the edge of the recursion limit)."""
        self._methods: dict[IdKey, list[str | None]] = {}
        self.answers: dict[IdKey, list[dict[str, Any]]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.agent_requests: list[dict[str, Any]] = []
        self.lines_received = 0
        self._probe_ids = itertools.count(1)
        self.client = LineClient(AGENT_COMMAND, env, stderr=stderr_path, on_line=self._accept)
        self.process = self.client.proc

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> LineAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.__exit__(*exc)

    @property
    def stderr(self) -> str:
        return self.client.stderr

    @property
    def bytes_received(self) -> int:
        return self.client.bytes_read

    def alive(self) -> bool:
        return self.client.alive()

    def _died(self) -> AgentDied:
        return AgentDied(
            f"the agent exited ({self.process.poll()}); stderr:\n{self.stderr[-4000:]}"
        )

    # -- sending -------------------------------------------------------------------------------

    def owe(self, request_id: Any, method: str | None = None) -> None:
        """Register one answer the agent owes (``None``: a null-id error)."""
        key = id_key(request_id)
        self.owed[key] += 1
        self._methods.setdefault(key, []).append(method)

    def send(self, data: bytes, *, expect: bool = True, timeout: float = 120.0) -> None:
        """Write ``data`` while reading whatever the agent writes meanwhile. ``expect``:
        register the answers owed."""
        if expect:
            self.expect(data)
        try:
            self.client.send_raw(data, timeout)
        except TimeoutError:
            raise AssertionError(f"could not write to the agent for {timeout} s") from None
        except AgentGone:
            raise self._died() from None

    def expect(self, data: bytes) -> None:
        """Register the answers the agent owes for ``data`` (whole lines)."""
        for key, method in expected_answers(data):
            if key[0] == "maybe":
                self.maybe[key[1]] += 1
                continue
            self.owed[key] += 1
            self._methods.setdefault(key, []).append(method)

    def send_message(self, message: Any, **kwargs: Any) -> None:
        self.send(json.dumps(message).encode() + b"\n", **kwargs)

    # -- receiving -----------------------------------------------------------------------------

    def _accept(self, line: bytes) -> None:
        self.lines_received += 1
        try:
            message = strict_loads(line)
        except (ValueError, RecursionError) as exc:
            raise AssertionError(
                f"the agent wrote a line that is not JSON ({exc}): {line[:300]!r}"
            ) from None
        problems = envelope_problems(message)
        if problems:
            raise AssertionError(f"not JSON-RPC 2.0 ({'; '.join(problems)}): {line[:300]!r}")
        if "method" in message:
            problems = self.schema.agent_sent(message)
            if problems:
                raise AssertionError(f"not valid ACP: {problems}: {line[:500]!r}")
            if "id" in message:
                self.agent_requests.append(message)
            else:
                self.notifications.append(message)
            return
        key = id_key(message["id"])
        if self.owed[key] <= 0:
            key = next(
                (k for k, n in self.owed.items() if n > 0 and k[0] == "either" and key in k[1]), key
            )
        if self.owed[key] <= 0 and self.maybe[key] > 0:
            self.maybe[key] -= 1
            return
        if self.owed[key] <= 0:
            raise AssertionError(
                f"an answer nobody was owed (id {message['id']!r}): {line[:300]!r}"
            )
        self.owed[key] -= 1
        pending = self._methods[key]
        # Several requests may share an id (a duplicate in flight): an error answers the
        # newest, a result the oldest whose result type it fits.
        method = (
            pending.pop()
            if "error" in message
            else pending.pop(
                next((i for i, m in enumerate(pending) if self._fits(m, message["result"])), 0)
            )
        )
        self.answers.setdefault(key, []).append(message)
        if "error" in message:
            problems = validate_def("Error", message["error"])
            if problems:
                raise AssertionError(f"malformed error {problems}: {line[:300]!r}")
            if self.forbid_internal_errors and message["error"]["code"] == INTERNAL_ERROR:
                raise AssertionError(
                    f"internal error for {method!r}: {line[:600]!r}\nstderr:\n{self.stderr[-3000:]}"
                )
        elif method is not None:
            result_type = self._response_types.get(METHOD_ALIASES.get(method, method))
            if result_type is None and method.startswith("_"):
                return  # an extension (_session/steering): the schema has no result type
            if result_type is None:
                raise AssertionError(f"a success answer to unknown method {method!r}")
            problems = validate_def(result_type, message["result"])
            if problems:
                raise AssertionError(f"result of {method} is not {result_type}: {problems}")

    def _fits(self, method: str | None, result: Any) -> bool:
        result_type = self._response_types.get(METHOD_ALIASES.get(method or "", method or ""))
        return result_type is not None and not validate_def(result_type, result)

    def settle(self, timeout: float = 30.0, until: Callable[[], bool] | None = None) -> None:
        """Read until every owed answer has come (or until ``until()`` holds)."""
        deadline = time.monotonic() + timeout
        while (not until()) if until is not None else +self.owed:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"answers never came for {dict(+self.owed)}; stderr:\n{self.stderr[-3000:]}"
                )
            try:
                readable = self.client._fill(min(left, 1.0))
            except AgentGone:
                raise self._died() from None
            if self.process.poll() is not None and not readable:
                raise self._died()

    def request(
        self,
        method: str,
        params: Any = None,
        *,
        request_id: Any = None,
        timeout: float = 30.0,
        only: bool = False,
    ) -> dict[str, Any]:
        """Send one request and return its answer; every other owed answer is awaited too,
        unless ``only``."""
        if request_id is None:
            request_id = f"probe:{next(self._probe_ids)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        key = id_key(request_id)
        before = len(self.answers.get(key, []))
        self.send_message(message)
        self.settle(timeout, (lambda: len(self.answers.get(key, [])) > before) if only else None)
        return self.answers[key][before]

    def call(self, method: str, params: Any = None, **kwargs: Any) -> Any:
        answer = self.request(method, params, **kwargs)
        assert "result" in answer, answer
        return answer["result"]

    def probe(self, timeout: float = 30.0) -> None:
        """The agent still answers a valid request correctly (and owes nothing else)."""
        result = self.call("session/list", {}, timeout=timeout)
        assert isinstance(result["sessions"], list)
        if not self.alive():
            raise self._died()

    def notify(self, method: str, params: Any) -> None:
        self.send_message({"jsonrpc": "2.0", "method": method, "params": params})


# -- the API's rules for a history -------------------------------------------------------------


def history_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What the Messages API would refuse in ``messages``: roles must alternate starting with
    the user, every tool_use must be answered in the very next message, and every tool_result
    must answer a tool_use of the message before it."""
    problems = []
    if messages and messages[0].get("role") != "user":
        problems.append("the first message is not the user's")
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if index and message.get("role") == messages[index - 1].get("role"):
            problems.append(f"messages {index - 1} and {index} are both {message.get('role')}")
        if not blocks and not (isinstance(content, str) and content):
            problems.append(f"message {index} is empty")
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if len(set(uses)) != len(uses):
            problems.append(f"message {index} repeats a tool_use id")
        if uses:
            following = messages[index + 1]["content"] if index + 1 < len(messages) else []
            answered = [
                b.get("tool_use_id")
                for b in following
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
            if sorted(map(str, answered)) != sorted(map(str, uses)):
                problems.append(f"tool uses {uses} of message {index} answered by {answered}")
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if results:
            previous = messages[index - 1]["content"] if index else []
            asked = {
                b.get("id") for b in previous if isinstance(b, dict) and b.get("type") == "tool_use"
            }
            stray = [r for r in results if r not in asked]
            if stray:
                problems.append(f"message {index} answers tool uses never asked: {stray}")
    return problems


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text of the newest user prompt in a request (tool results skipped)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content if b.get("type") == "text"]
        if texts:
            return "\n".join(texts)
    return ""


def tool_results(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return (
        [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []
    )


TOKEN = re.compile(r"\b(s\d+)-(p\d+)\b")


# -- driving a spawned agent as an editor (trio, tests/support/agent_process) ------------------


def allow(message: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def reject(message: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}


def asked_ids(requests: list[dict[str, Any]]) -> set[str]:
    """Tool calls the agent asked permission for."""
    return {
        r["params"]["toolCall"]["toolCallId"]
        for r in requests
        if r.get("method") == "session/request_permission"
    }


def updates_of(updates: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [
        u["params"]["update"]
        for u in updates
        if u.get("method") == "session/update"
        and u["params"]["update"].get("toolCallId") == call_id
    ]


def final_status(updates: list[dict[str, Any]], call_id: str) -> str | None:
    statuses = [u.get("status") for u in updates_of(updates, call_id) if u.get("status")]
    return statuses[-1] if statuses else None


def shown_text(updates: list[dict[str, Any]], call_id: str) -> str:
    """Everything the editor was shown for one tool call, as text."""
    return json.dumps(updates_of(updates, call_id), ensure_ascii=False)


def request_tool_results(body: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """tool_use id -> the tool_result block the model received in a request body."""
    found = {}
    for message in body.get("messages") or []:
        for block in tool_results(message):
            found[block["tool_use_id"]] = block
    return found


def strict_stdout(raw_lines: Iterable[bytes]) -> int:
    """Every line the agent wrote is standard JSON and JSON-RPC 2.0; returns how many."""
    count = 0
    for line in raw_lines:
        problems = envelope_problems(strict_loads(line))
        assert not problems, (problems, line[:300])
        count += 1
    return count


def _ancestors(pid: int) -> set[int]:
    """``pid`` and the processes above it (never counted as something a command left)."""
    found: set[int] = set()
    current: int | None = pid
    while current is not None and current > 1 and current not in found:
        found.add(current)
        current = parent_pid(current)
    return found


def ran_files(folder: Path) -> list[str]:
    """Files named ``ran*`` in ``folder``: what a call that must never run would have made."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("ran"))


def survivors(root: Path) -> list[int]:
    """Live processes (not zombies) whose working directory is ``root`` or below it: what a
    command run there left behind."""
    found = []
    root = root.resolve()
    mine = _ancestors(os.getpid())
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in mine:
            continue
        try:
            cwd = Path(os.readlink(f"/proc/{name}/cwd"))
        except OSError:
            continue
        if (cwd == root or root in cwd.parents) and pid_alive(int(name)):
            found.append(int(name))
    return found


def tree_snapshot(root: Path, skip: Path | None = None) -> dict[str, Any]:
    """Every entry under ``root`` (symlinks not followed): kind, size, content hash."""
    import hashlib

    snap: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if skip is not None and (here == skip or skip in here.parents):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = here / name
            if skip is not None and path == skip:
                continue
            if path.is_symlink():
                snap[str(path)] = ("link", os.readlink(path))
            elif path.is_file():
                snap[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                snap[str(path)] = ("other", path.stat().st_mode)
    return snap


@contextlib.asynccontextmanager
async def http_agent(
    tmp_path: Path,
    base_url: str,
    name: str = "agent",
    extra: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Any:
    """A spawned ``iaccode acp`` on the real SDK and the fake server at ``base_url``; every
    message it sends is checked against the schema as it arrives, and, at the end, as strict
    JSON; the loopback guard must have refused nothing."""
    from tests.support.agent_process import spawn_agent

    home = home or tmp_path / f"{name}-home"
    env = http_env(home, base_url, extra)
    async with spawn_agent(
        env, tmp_path / f"{name}.stderr", WireChecker(aliases=METHOD_ALIASES)
    ) as agent:
        yield agent
    strict_stdout(agent.raw_lines)
    assert not guard_violations(home), guard_violations(home)


async def start(agent: Any, cwd: Path, **capabilities: Any) -> str:
    await agent.initialize(**capabilities)
    return str(await agent.new_session(cwd))
