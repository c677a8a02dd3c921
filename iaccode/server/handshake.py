"""``initialize`` answered before the rest of the agent is imported.

An editor spawns ``iaccode acp`` and waits for the answer to ``initialize`` before it shows
anything, while importing trio, attrs/cattrs and the protocol layer takes a good 100 ms. So the
first thing ``iaccode acp`` does (``iaccode/cli.py``) is :func:`answer_early`: it claims stdio,
reads the first line itself and, when that is an ``initialize`` it can answer exactly as the
full server would, writes the answer; the rest loads while the editor reads it.

Anything else goes to the full server unchanged, which reads the bytes read here first
(``Early.unread``) and then the rest of stdin: a line that is not JSON, a batch, another method,
params the strict decoder might refuse (only known fields of the right types are taken here),
another protocol version (its warning is logged before the answer), a line longer than
``IAC_CODE_MAX_LINE_BYTES``, ``--record`` (the transcript sees every line),
options argparse must read (``--help``, abbreviations), a config.toml we cannot read.

When it answers, the full server runs the same params through its own ``initialize`` route
(``server/stdio.py``: the agent is initialized and its provider preloads), compares that
answer with the bytes sent and logs an error if they differ. The answer's content has one
definition, :func:`initialize_result`, which ``Agent.initialize`` uses too, and the
auth methods come from ``iaccode.llm.providers`` as the full server's do.

One difference remains, by design: what the full server refuses at start-up (a config.toml or
environment variable: exit 2; a model script it cannot load: exit 1; the message on stderr)
stops ``iaccode`` just after this answer rather than before it; the editor sees the agent exit
either way.

Standard library only, with ``iaccode.llm.providers`` and ``iaccode.wire.encode``, which are too,
and only its lightest part: not pathlib, typing, signal or the json package, which would double
the time to the answer (they import re, enum and functools); json's own C scanner and encoder
do the JSON, as json.loads and ``Connection`` do.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal would import enum: milliseconds
import os

import iaccode
from iaccode.llm.providers import (
    DEFAULT_PROVIDER,
    PRESETS,
    auth_method_text,
    default_model,
    has_credentials,
)
from iaccode.wire.encode import dumps_line

# Not typing's: typing imports re and enum, milliseconds here. Type checkers know the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import FrameType
    from typing import Any

PROTOCOL_VERSION = 1
"""The ACP version we speak; any other one asked for is answered with this one."""

MAX_FIRST_LINE = 1 << 16
"""Read at most this much looking for the first line (an ``initialize`` is a few hundred bytes);
a longer one is the full server's."""

MAX_BRACKETS = 64
"""Lines with more ``{`` and ``[`` than this (in strings too) are the full server's: it refuses
params nested deeper than 64 levels, and fewer brackets cannot nest that deep."""

_OPTIONS = {"--model-script": "model_script", "--model": "model", "--provider": "provider",
            "--record": "record"}
"""``iaccode acp``'s options (``cli.build_parser``) -> their names here."""

_FILE_KEYS = {"provider": str, "base_url": str, "api_key_env": str, "model": str, "models": list}
"""The config.toml keys that choose the provider, and their TOML types."""

_PARAMS: dict[str, Any] = {
    "clientCapabilities": ({"fs": ({"readTextFile": bool, "writeTextFile": bool,
                                    "_meta": dict}, ()),
                            "terminal": bool, "_meta": dict}, ()),
    "clientInfo": ({"name": str, "version": str, "title": str, "_meta": dict},
                   ("name", "version")),
    "_meta": dict,
}
"""``initialize`` params (``protocol.messages.InitializeRequest``) as taken here: each known key
-> its JSON type, or (the object's keys, the required ones); ``protocolVersion`` must be ours
(another one is answered the same, after a warning the full server logs). Unknown keys are
ignored, as the decoder does; a null is left to the decoder."""


def initialize_result(auth_method: tuple[str, str, str | None] | None) -> dict[str, Any]:
    """The ``initialize`` result in wire form, with ``auth_method`` (id, name, description)
    offered when the provider still lacks its key (None: it has it)."""
    methods = []
    if auth_method is not None:
        method_id, name, description = auth_method
        method = {"id": method_id, "name": name}
        if description is not None:  # as the converter leaves out a None field
            method["description"] = description
        methods.append(method)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "sessionCapabilities": {"list": {}, "close": {}, "resume": {}, "fork": {},
                                    "delete": {}},
            "mcpCapabilities": {"http": True, "sse": True},
        },
        "agentInfo": {"name": "iaccode", "version": iaccode.__version__, "title": "iac-code"},
        "authMethods": methods,
        "_meta": {"steering": {"supported": True}},  # _session/steering (``Agent.steer``)
    }


class Settings:
    """The settings the answer depends on, read as ``Config.from_env`` reads them."""

    __slots__ = ("provider", "base_url", "api_key_env", "models", "model", "model_script")

    def __init__(self, provider: str, base_url: str | None, api_key_env: str | None,
                 models: tuple[str, ...] | None, model: str, model_script: str | None) -> None:
        self.provider = provider
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.models = models
        self.model = model
        self.model_script = model_script


class Answered:
    """The ``initialize`` answered here: its id and params, and the line written."""

    __slots__ = ("request_id", "params", "line", "write_error")

    def __init__(self, request_id: int | str, params: dict[str, Any], line: bytes,
                 write_error: str | None = None) -> None:
        self.request_id = request_id
        self.params = params
        self.line = line
        self.write_error = write_error
        """Why the line could not be written (the editor closed our output)."""


class Early:
    """What the full server takes over."""

    __slots__ = ("protocol_in", "protocol_out", "unread", "answered", "stopped")

    def __init__(self, protocol_in: int, protocol_out: int, unread: bytes,
                 answered: Answered | None, stopped: bool = False) -> None:
        self.protocol_in = protocol_in
        self.protocol_out = protocol_out
        self.unread = unread
        """Read from the editor and not handled here: the full server reads it first."""
        self.answered = answered
        self.stopped = stopped
        """SIGTERM or SIGINT came while waiting for the first line: exit at once."""


def answer_early(argv: list[str], env: Mapping[str, str] = os.environ) -> Early | None:
    """Claim stdio, read the first line and answer it if it is an ``initialize`` we can answer
    exactly. None, before anything is read, for options only argparse may read."""
    options = _options(argv)
    if options is None:
        return None
    protocol_in, protocol_out = claim_stdio()
    try:
        data = _read_first_line(protocol_in)
    except _Stopped:
        return Early(protocol_in, protocol_out, b"", None, stopped=True)
    line, newline, rest = data.partition(b"\n")
    request = _request(line, env) if newline and "record" not in options else None
    settings = _settings(options, env) if request is not None else None
    if request is None or settings is None:
        return Early(protocol_in, protocol_out, data, None)
    auth = None if has_credentials(settings, env) else auth_method_text(settings)
    answer = dumps_line({"jsonrpc": "2.0", "id": request[0],
                         "result": initialize_result(auth)})
    problem = _write_all(protocol_out, answer)
    return Early(protocol_in, protocol_out, rest,
                 Answered(request[0], request[1], answer, problem))


def claim_stdio() -> tuple[int, int]:
    """Take stdin/stdout for the protocol and point fd 1 at stderr.

    After this, a stray ``print`` (ours or a library's, even from C) lands on stderr instead of
    corrupting the protocol stream.
    """
    protocol_in = os.dup(0)
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    return protocol_in, protocol_out


def _options(argv: list[str]) -> dict[str, str] | None:
    """``iaccode acp``'s options in the forms argparse surely reads the same way (``--model X``,
    ``--model=X``); None for anything else."""
    found: dict[str, str] = {}
    items = iter(argv)
    for arg in items:
        name, equals, value = arg.partition("=")
        if name not in _OPTIONS:
            return None
        if not equals:
            value = next(items, "")
            if value.startswith("-"):
                return None
        if not value:
            return None
        found[_OPTIONS[name]] = value
    return found


class _Stopped(Exception):
    pass


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


def _read_first_line(fd: int) -> bytes:
    """What the editor sent, up to the first newline or MAX_FIRST_LINE bytes or end of input.
    Raises _Stopped on SIGTERM or SIGINT (the full server's handlers are not there yet)."""
    handlers = {signum: _signal.signal(signum, _stop)
                for signum in (_signal.SIGTERM, _signal.SIGINT)}
    try:
        data = b""
        while b"\n" not in data and len(data) < MAX_FIRST_LINE:
            chunk = os.read(fd, MAX_FIRST_LINE)
            if not chunk:
                break
            data += chunk
        return data
    finally:
        for signum, handler in handlers.items():
            _signal.signal(signum, handler)


def _request(line: bytes, env: Mapping[str, str]) -> tuple[int | str, dict[str, Any]] | None:
    """(id, params) of an ``initialize`` request the full server would surely answer with
    success; None for any other line."""
    limit = env.get("IAC_CODE_MAX_LINE_BYTES")
    if limit and not (limit.isdigit() and len(line) <= int(limit)):
        return None
    if line.count(b"{") + line.count(b"[") > MAX_BRACKETS:
        return None
    try:
        message = _loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or (
            message.get("method") != "initialize"):
        return None
    request_id = message.get("id")
    if not (isinstance(request_id, str) or (isinstance(request_id, int)
                                            and not isinstance(request_id, bool))):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not _fits(params, _PARAMS, ()):
        return None
    version = params.get("protocolVersion")
    if type(version) is not int or version != PROTOCOL_VERSION:
        return None  # the full server answers it after logging its warning
    return request_id, params


class _Decoding:
    """What json's C scanner reads from a ``json.JSONDecoder``: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__


def _scanner() -> Any:
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without the C accelerator: the full server reads it
        return None
    return make_scanner(_Decoding())  # type: ignore[arg-type]  # the stub wants a JSONDecoder


_SCAN = _scanner()
_WHITESPACE = " \t\n\r"
"""What json.loads skips around the value."""


def _loads(line: bytes) -> Any:
    """``json.loads(line)`` by the same C scanner, for lines in plain UTF-8; ValueError where
    json.loads would fail, and for a BOM or UTF-16/32 (the full server reads those)."""
    if _SCAN is None or line.startswith(b"\xef\xbb\xbf") or b"\0" in line[:4]:
        raise ValueError("left to json.loads")
    text = line.decode("utf-8", "surrogatepass")  # as json.loads decodes bytes
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _SCAN(text, start)
    except StopIteration:
        raise ValueError("no JSON value") from None
    except SystemError:
        # What 3.11's scanner raises for bad JSON while json.decoder (where its JSONDecodeError
        # lives) is not imported; 3.12 and later import it and raise JSONDecodeError, a
        # ValueError as well. Either way the full server's json.loads says what is wrong.
        raise ValueError("not JSON") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError("extra data")
    return value


def _fits(value: Any, shape: dict[str, Any], required: tuple[str, ...]) -> bool:
    if not isinstance(value, dict) or any(key not in value for key in required):
        return False
    for key, kind in shape.items():
        if key not in value:
            continue
        item = value[key]
        if isinstance(kind, tuple):
            if not _fits(item, *kind):
                return False
        elif not isinstance(item, kind) or (kind is not bool and isinstance(item, bool)):
            return False
    return True


def _settings(options: dict[str, str], env: Mapping[str, str]) -> Settings | None:
    """The provider settings as ``Config.from_env`` reads them (defaults < config.toml <
    environment < options), when they are ones it accepts; None when they cannot be."""
    # As ``Config.from_env`` finds it, with os.path: pathlib costs milliseconds to import.
    home = os.path.expanduser(env.get("IAC_CODE_HOME")
                              or os.path.join(os.path.expanduser("~"), ".iac-code"))
    file = _file_settings(os.path.join(home, "config.toml"))
    if file is None:
        return None
    provider = options.get("provider") or env.get("IAC_CODE_PROVIDER") or file.get(
        "provider", DEFAULT_PROVIDER)
    if provider not in PRESETS:
        return None
    listed = file.get("models")
    models = None if listed is None else tuple(listed)
    if models is not None and not all(isinstance(model, str) for model in models):
        return None
    model = (options.get("model") or env.get("IAC_CODE_MODEL") or file.get("model")
             or default_model(provider, models))
    script = options.get("model_script") or env.get("IAC_CODE_MODEL_SCRIPT")
    return Settings(provider=provider,
                    base_url=env.get("IAC_CODE_BASE_URL") or file.get("base_url"),
                    api_key_env=file.get("api_key_env"), models=models, model=model,
                    model_script=script or None)


def _file_settings(path: str) -> dict[str, Any] | None:
    """The provider keys of config.toml ({} without one); None when it cannot be read or they
    have the wrong types (the full server then says what is wrong)."""
    try:
        with open(path, "rb") as file:
            import tomllib  # ~8 ms: only when there is a file

            data = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
        return None
    values = {key: data[key] for key in _FILE_KEYS if key in data}
    if any(not isinstance(value, _FILE_KEYS[key]) for key, value in values.items()):
        return None
    return values


def _write_all(fd: int, data: bytes) -> str | None:
    """Write ``data``; what went wrong, if anything (logged by the full server, which finds
    the output closed too)."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        return str(exc)
    return None
