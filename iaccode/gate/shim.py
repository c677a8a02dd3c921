"""The gate program: what runs when a command the agent started calls ``terraform`` (or any CLI
of :data:`iaccode.iac.clis.CLIS`).

Each gate file is ``#!<python> -IS``, a line ``CLI = "terraform"`` and a line that runs this
module's code, compiled once when the agent made its folder (:mod:`iaccode.gate.folder`), so a
copy or a link of a gate under another name is still the terraform gate. It imports nothing but
the interpreter's own modules (``posix``, ``marshal``, ``_socket``: no ``os``, ``json`` or
``socket`` package, each milliseconds of start) and nothing of iac-code: the agent decides, the
gate carries it out.

    gate -> agent   {"token", "cli", "argv", "cwd", "path", "pid", "env"}  one JSON line
    agent -> gate   {"op": "exec", "program", "argv"?, "env"?, "message"?}
                    {"op": "refuse", "message", "status"?}
                    {"op": "run", "program", "argv", "env"?, "limit"?}   (then the next op)
    gate -> agent   {"status", "stdout", "stderr", "truncated"}          (the run's result)

What the gate sends is JSON (the agent reads it as untrusted); what the agent sends is a
``marshal`` dump after its 4-byte length (the gate trusts the agent, and ``marshal`` is built
into the interpreter: no JSON decoder to load).

``exec`` replaces the gate with the real program (``execve``: its signals and exit status are
the program's own), its environment the gate's plus ``env`` (the held credentials).
``refuse`` prints the message (for the model) on stderr and exits with ``status`` (126). ``run``
runs a helper command in the gate's folder and environment and sends back what it printed.

It fails closed: without the channel's variables, when the agent cannot be reached, when the
connection ends (the call was cancelled or ended) or an answer cannot be read, the program does
not run and the gate exits 126 saying why.
"""

import _socket
import marshal
import posix
import sys

MARK = "iac-code gate"
"""In the first lines of every gate file: how the agent tells a gate from a real CLI."""
REFUSED = 126
NOT_FOUND = 127
REPORTED = ("TF_CLI_ARGS", "HOME", "AWS_DATA_PATH")
"""The variables (prefixes) sent with the argv, for what they make of it (the same as
:data:`iaccode.iac.cli_env.REPORTED`)."""
RUN_LIMIT = 64 * 1024 * 1024
"""The most output of a ``run`` op sent back by default (plans in JSON can be large)."""


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def _environ() -> dict[str, str]:
    return {_text(name): _text(value) for name, value in posix.environ.items()}


def _say(message: str) -> None:
    data = (message.rstrip("\n") + "\n").encode("utf-8", "surrogateescape")
    while data:
        data = data[posix.write(2, data) :]


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quote(text: str) -> str:
    """A JSON string, ASCII only (surrogates too, as json.dumps writes them)."""
    if len(text) > 4096:  # a run's output: the C encoder, loaded only then
        from _json import encode_basestring_ascii

        return str(encode_basestring_ascii(text))
    out = []
    for char in text:
        if " " <= char <= "~" and char not in '"\\':
            out.append(char)
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) > 0xFFFF:
            code = ord(char) - 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return '"' + "".join(out) + '"'


def _dumps(value: object) -> str:
    """JSON for what the gate sends: strings, numbers, booleans, lists and dicts."""
    quote = _quote
    if isinstance(value, str):
        return str(quote(value))
    if value is True or value is False or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_dumps(item) for item in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ",".join(f"{quote(str(key))}:{_dumps(item)}" for key, item in value.items()) + "}"
        )
    raise TypeError(f"cannot send {type(value).__name__}")


class _Channel:
    def __init__(self, path: str) -> None:
        self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buffer = b""

    def send(self, message: object) -> None:
        self.sock.sendall((_dumps(message) + "\n").encode("ascii"))

    def _read(self, size: int) -> bool:
        while len(self.buffer) < size:
            chunk = self.sock.recv(max(65536, size - len(self.buffer)))
            if not chunk:
                return False
            self.buffer += chunk
        return True

    def receive(self) -> dict[str, object] | None:
        """The agent's next op (None: the agent closed the connection)."""
        if not self._read(4):
            return None
        size = int.from_bytes(self.buffer[:4], "big")
        if not self._read(4 + size):
            return None
        data, self.buffer = self.buffer[4 : 4 + size], self.buffer[4 + size :]
        message = marshal.loads(data)
        if not isinstance(message, dict):
            raise ValueError("not an object")
        return message


def _refuse(cli: str, why: str, status: int = REFUSED) -> int:
    _say(f"iac-code gate: {cli} was not run: {why}")
    return status


def _strings(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a list of strings")
    return value


def _mapping(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError("expected an object of strings")
    return value


def _run(op: dict[str, object], env: dict[str, str]) -> dict[str, object]:
    """Run a helper command (the agent's ``run`` op) and say what it printed."""
    import subprocess

    limit = op.get("limit", RUN_LIMIT)
    limit = limit if isinstance(limit, int) else RUN_LIMIT
    program = op.get("program")
    if not isinstance(program, str):
        raise ValueError("run: no program")
    try:
        done = subprocess.run(
            _strings(op.get("argv")),
            executable=program,
            env={**env, **_mapping(op.get("env"))},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        return {"status": NOT_FOUND, "stdout": "", "stderr": str(exc), "truncated": False}
    out, err = done.stdout, done.stderr
    return {
        "status": done.returncode,
        "stdout": _text(out[:limit]),
        "stderr": _text(err[:limit]),
        "truncated": len(out) > limit or len(err) > limit,
    }


def hello(socket_path: str, token: str) -> str | None:
    """The supervisor in the editor's terminal says who the call's root is, before it runs
    the command; None when the agent took it, else why not."""
    try:
        channel = _Channel(socket_path)
        channel.send({"token": token, "hello": "supervisor", "pid": posix.getpid()})
        answer = channel.receive()
    except (OSError, ValueError) as exc:
        return str(exc)
    if answer is None or answer.get("op") != "ok":
        return str(answer.get("message") if answer else "no answer")
    return None


def main(cli: str) -> int:
    env = _environ()
    socket_path, token = env.get("IAC_CODE_GATE_SOCKET"), env.get("IAC_CODE_GATE_TOKEN")
    if not socket_path or not token:
        return _refuse(
            cli, "this gate only runs inside a command of iac-code (no channel to the agent)"
        )
    try:
        channel = _Channel(socket_path)
        channel.send(
            {
                "token": token,
                "cli": cli,
                "argv": [cli, *sys.argv[1:]],
                "cwd": _text(posix.getcwdb()),
                "path": env.get("PATH", ""),
                "pid": posix.getpid(),
                "env": {name: value for name, value in env.items() if name.startswith(REPORTED)},
            }
        )
    except OSError as exc:
        return _refuse(cli, f"iac-code cannot be reached ({exc.strerror or exc})")
    while True:
        try:
            op = channel.receive()
        except (OSError, ValueError) as exc:
            return _refuse(cli, f"no answer from iac-code ({exc})")
        if op is None:
            return _refuse(cli, "iac-code ended the call (cancelled, or the call is over)")
        kind = op.get("op")
        try:
            if kind == "exec":
                return _exec(cli, op, env)
            if kind == "refuse":
                message, status = op.get("message"), op.get("status", REFUSED)
                _say(str(message))
                return status if isinstance(status, int) else REFUSED
            if kind == "run":
                channel.send(_run(op, env))
                continue
        except (OSError, ValueError, TypeError) as exc:
            return _refuse(cli, f"a bad answer from iac-code ({exc})")
        return _refuse(cli, f"an answer iac-code's gate does not know ({kind!r})")


def _exec(cli: str, op: dict[str, object], env: dict[str, str]) -> int:
    program = op.get("program")
    if not isinstance(program, str):
        raise ValueError("exec: no program")
    argv = _strings(op["argv"]) if "argv" in op else [cli, *sys.argv[1:]]
    if isinstance(message := op.get("message"), str) and message:
        _say(message)
    try:
        posix.execve(program, argv, {**env, **_mapping(op.get("env"))})
    except OSError as exc:
        return _refuse(
            cli,
            f"{program}: {exc.strerror or exc}",
            NOT_FOUND if isinstance(exc, FileNotFoundError) else REFUSED,
        )
    return REFUSED  # not reached: execve returns only by raising


if __name__ == "__main__":
    sys.exit(main(globals().get("CLI") or sys.argv[0].rsplit("/", 1)[-1]))
