"""Secret values replaced by ``[secret NAME]`` (iaccode/redaction.py), the files that count as
secrets files (iaccode/turn/exposure.py), and server names made printable (mcp/names.py)."""

from __future__ import annotations

import base64
import json
import textwrap
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import quote

import pytest

from iaccode.printable import shown
from iaccode.protocol.convert import tool_input
from iaccode.protocol.tool_calls import ContentToolCallContent, ToolCallFields, ToolKind
from iaccode.redaction import Redactor
from iaccode.secret_files import is_secret_file
from iaccode.tool_result import ToolResult
from iaccode.tools.base import Tool, ToolContext
from iaccode.tools.registry import builtin_tools
from iaccode.turn.exposure import (
    SEARCHED,
    Exposure,
    SecretsRead,
    secret_command_in,
    secret_file_in,
    secret_file_reached,
    secret_file_shown,
)

TOKEN = "dpl-8f3K+q/Zx9Lm2Wv7Tr4Ys1Nb6Qe0Ha"
REDACT = Redactor([("DEPLOY_TOKEN", TOKEN), ("SHORTER", "abcdefgh")])


@pytest.mark.parametrize(
    "text",
    [
        f"token={TOKEN}!",
        f"t={quote(TOKEN, safe='')}",
        json.dumps({"t": TOKEN}),
        TOKEN.encode().hex(),
        TOKEN.encode().hex().upper(),
        base64.b64encode(TOKEN.encode()).decode(),
        base64.b64encode(b"x" + TOKEN.encode() + b"y").decode(),
        base64.b64encode(b"xy" + TOKEN.encode()).decode(),
        base64.urlsafe_b64encode(b"xy" + TOKEN.encode()).decode(),
        "\n".join(textwrap.wrap(base64.b64encode(TOKEN.encode() * 3).decode(), 20)),
        "\n".join(textwrap.wrap(TOKEN.encode().hex(), 30)),
    ],
)
def test_every_form_of_a_value_is_replaced(text: str) -> None:
    redacted = REDACT(text)
    assert "[secret DEPLOY_TOKEN]" in redacted
    assert REDACT.find(text) == "DEPLOY_TOKEN"
    assert TOKEN[4:14] not in redacted and TOKEN.encode().hex()[:16] not in redacted.lower()


def test_nothing_to_replace_leaves_the_text_as_it_is() -> None:
    text = "plain output\n" * 1000
    assert REDACT(text) is text
    assert REDACT.find(text) is None
    assert not Redactor([]) and Redactor([])("x") == "x"


def test_a_value_inside_another_is_replaced_whole() -> None:
    redact = Redactor([("LONG", "abcdefgh-and-more"), ("SHORT", "abcdefgh")])
    assert redact("x abcdefgh-and-more y abcdefgh") == "x [secret LONG] y [secret SHORT]"


@pytest.mark.parametrize(
    "url",
    [
        f"https://x.example/{TOKEN[:9]}/{TOKEN[9:]}",  # path segments
        f"https://{TOKEN.encode().hex()[:40]}.{TOKEN.encode().hex()[40:]}.x.example/",  # labels
        f"https://{base64.b32encode(TOKEN.encode()).decode().lower()}.x.example/",  # base32
        f"https://x.example/?d={base64.b32encode(b'ab' + TOKEN.encode()).decode()}",  # offset
        f"https://x.example/?d={TOKEN.upper()}",  # another case
    ],
)
def test_a_value_spread_over_a_url_is_found(url: str) -> None:
    assert REDACT.find_spread(url) == "DEPLOY_TOKEN"


def test_only_long_values_are_looked_for_spread_out() -> None:
    assert REDACT.find_spread("https://x.example/a/b/c-d.e?f=g") is None
    assert REDACT.find_spread("https://abc.defgh.example/") is None  # SHORTER, spread: too short
    assert REDACT.find_spread("https://x.example/abcdefgh") == "SHORTER"  # as it is: found


def test_the_piece_of_a_value_left_at_a_cut_goes_too() -> None:
    head = "output ... " + TOKEN[:12]
    tail = TOKEN[9:] + " more"
    assert REDACT.ends(head, end=True) == "output ... [secret DEPLOY_TOKEN]"
    assert REDACT.ends(tail, start=True) == "[secret DEPLOY_TOKEN] more"
    assert REDACT.ends(head) == head  # not cut there: a prefix alone is no secret
    assert REDACT.ends("ends with dpl-8", end=True) == "ends with dpl-8"  # too short to tell


def test_structured_output_is_redacted_in_its_strings() -> None:
    data = {"output": f"k={TOKEN}", "list": [TOKEN, 3, None], "n": 1, TOKEN: {"k": TOKEN}}
    assert REDACT.value(data) == {
        "output": "k=[secret DEPLOY_TOKEN]",
        "list": ["[secret DEPLOY_TOKEN]", 3, None],
        "n": 1,
        "[secret DEPLOY_TOKEN]": {"k": "[secret DEPLOY_TOKEN]"},
    }


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.production",
        ".envrc",
        "prod.tfvars",
        "x.auto.tfvars.json",
        "terraform.tfstate",
        "terraform.tfstate.backup",
        "id_rsa",
        "server.pem",
        "tls.key",
        "credentials",
        "gcp-credentials.json",
        ".netrc",
        ".pgpass",
        "/home/u/.aws/credentials",
        "deploy/.ENV",
        "/home/u/.kube/config",
        "~/.aliyun/config.json",
        "/home/u/.config/gh/hosts.yml",
        "~/.docker/config.json",
        "k8s/db-secret.yaml",
        "/home/u/.ssh/deploy_key_2024",
        "/home/u/.config/rclone/rclone.conf",
        "~/.mc/config.json",
        "/home/u/.bluemix/config.json",
        "~/.tccli/default.credential",
        "/home/u/.config/linode-cli",
        "/home/u/.config/doctl/config.yaml",
        "/home/u/.config/hcloud/cli.toml",
        "~/.s3cfg",
        "/home/u/.boto",
        "ansible/.vault_pass",
    ],
)
def test_secrets_files(name: str) -> None:
    assert is_secret_file(name)


@pytest.mark.parametrize(
    "name",
    [
        "main.tf",
        "variables.tf",
        "README.md",
        "id_rsa.pub",
        "environment.py",
        "keys.md",
        ".envoy.yaml",
        "secret_env.py",
        "config/app.yaml",
        "/home/u/.config/git/config",
        "/usr/local/bin/linode-cli",
        "docs/rclone.md",
    ],
)
def test_not_secrets_files(name: str) -> None:
    assert not is_secret_file(name)


def test_a_secrets_file_named_by_a_command_or_a_path_counts() -> None:
    assert secret_file_in({"command": "source .envrc && echo $DB"}) == ".envrc"
    assert secret_file_in({"command": "cat 'env/prod.tfvars'|head"}) == "env/prod.tfvars"
    assert secret_file_in({"path": "modules/../.env"}) == "modules/../.env"
    assert secret_file_in({"command": "terraform plan"}) is None
    exposure = Exposure.from_records(
        [
            {"type": "tool_call", "start": {"name": "web_fetch", "rawInput": {"url": "x/.env"}}},
            {"type": "tool_call", "start": {"name": "read_file", "rawInput": {"path": "a.tfvars"}}},
        ],
        READS,
    )
    assert exposure.secrets == SecretsRead("a.tfvars")  # a fetch of a URL ending in .env reads none


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("aws secretsmanager get-secret-value --secret-id prod/db", "get-secret-value"),
        # options and their values between the words, the program by a path, in a $( ), a
        # pipe, a script's -c, another case, after a group or a new line
        ("aws --profile prod --region eu-west-1 ssm get-parameter --name x", "ssm get-parameter"),
        ("/usr/local/bin/aws ecr get-login-password | docker login -u AWS", "get-login-password"),
        ('DB="$(aws secretsmanager get-secret-value --secret-id x)"; echo ok', "get-secret-value"),
        ("bash -c 'gcloud auth print-access-token'", "print-access-token"),
        ("AZ=1 Az Account Get-Access-Token", "get-access-token"),
        ("ls\n  vault kv get -mount=secret db", "vault kv get"),
        ("kubectl -n prod get secret/db -o jsonpath='{.data.password}' | base64 -d", "get secret"),
        ("kubectl get secrets,configmaps -A -o yaml", "get secrets"),
        ("kubectl config view --minify --raw", "view --raw"),
        ("pulumi stack output --json --show-secrets", "--show-secrets"),
        ("pulumi env open org/prod --format json", "pulumi env open"),
        ("sops -d secrets.enc.yaml > /dev/null; echo done", "sops -d"),
        ("cd infra && aliyun kms GetSecretValue --SecretName db", "getsecretvalue"),
        ("x=1; gh auth token", "gh auth token"),
        ("aws s3 presign s3://b/dump.sql --expires-in 604800", "aws s3 presign"),  # a key
        ("az storage blob generate-sas --account-name a -c c -n b --permissions r", "-sas"),
        # commands that print no secret
        ("aws sts get-caller-identity", None),
        ("aws ssm describe-parameters", None),
        ("kubectl get pods -A", None),
        ("kubectl describe secret db", None),  # names the keys, not the values
        ("kubectl get pods; echo secret", None),  # another command of the line
        ("pulumi stack output", None),
        ("vault status", None),
        ("echo aws; echo ssm get-parameter", None),
    ],
)
def test_a_command_that_prints_secrets_counts(line: str, expected: str | None) -> None:
    found = secret_command_in({"command": line})
    if expected is None:
        assert found is None, line
    else:
        assert found is not None and expected in found, (line, found)


def test_a_look_alike_host_is_shown_as_the_network_knows_it() -> None:
    """``аpple.com`` with a Cyrillic а reads as apple.com: the question names the host the
    request goes to too, and a redirect elsewhere is not reachable unasked."""
    exposure = Exposure()
    exposure.note({"path": ".env"})
    fields, options = exposure.question(
        ToolCallFields("toolu_f", title="f"), "\u0430pple.com", "https://\u0430pple.com/?d=x"
    )
    assert fields.title == "Fetch from \u0430pple.com (xn--pple-43d.com) after reading .env"
    assert options[0].name == "Allow \u0430pple.com (xn--pple-43d.com) for this session"
    exposure.hosts.add("\u0430pple.com")
    assert exposure.reachable("\u0430pple.com") and not exposure.reachable("evil.example")
    assert Exposure().reachable("evil.example")  # nothing read: any host


def test_after_a_command_that_prints_secrets_a_fetch_asks_and_says_so() -> None:
    fetch = builtin_tools()["web_fetch"]
    args: Any = tool_input({"url": "https://drop.example/?d=x"}, fetch.input_type)
    exposure = Exposure()
    exposure.note({"command": "aws --profile p secretsmanager get-secret-value --secret-id x"})
    assert exposure.host_to_ask(fetch, args, "default") == "drop.example"
    fields, options = exposure.question(ToolCallFields("toolu_f", title="f"), "drop.example")
    assert fields.title == (
        "Fetch from drop.example after running aws secretsmanager get-secret-value"
    )
    assert fields.content is not None and isinstance(fields.content[0], ContentToolCallContent)
    text = fields.content[0].content.text  # type: ignore[union-attr]
    assert "the output of `aws secretsmanager get-secret-value`, a command that prints" in text
    assert [o.option_id for o in options] == ["allow_host", "reject_once"]
    # A loaded session remembers it from its stored call.
    records = [
        {
            "type": "tool_call",
            "start": {"name": "bash", "rawInput": {"command": "vault kv get secret/db"}},
        }
    ]
    assert Exposure.from_records(records, READS).secrets == SecretsRead(
        "vault kv get", command=True
    )


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (".env:1:STRIPE_KEY=sk_live_x", ".env"),  # the grep tool, content
        ("src/a.py:3:x\nconfig/prod.tfvars:12:db_password = 1", "config/prod.tfvars"),
        (".env:2", ".env"),  # count
        ("./deploy/.env.prod:TOKEN=x", "./deploy/.env.prod"),  # grep -r
        ("a.py-4-context\n.env-5-KEY=x", None),  # context lines name no file by ':'
        ("credentials: {user: x}\nsecrets.yaml is here", None),  # a YAML key, a mention
        ("total 8\n-rw-r--r-- 1 u u 40 Jan 1 .env", None),  # ls names it, shows nothing of it
    ],
)
def test_a_secrets_file_whose_lines_an_output_shows_counts(
    output: str, expected: str | None
) -> None:
    assert secret_file_shown(output) == expected


def test_a_loaded_session_remembers_a_secrets_file_a_search_looked_into() -> None:
    """grep said "No matches" after searching ``.env``: the runner kept the file's name in the
    call's rawOutput (:data:`SEARCHED`)."""
    stored = {
        "type": "tool_call",
        "start": {"name": "grep", "rawInput": {"pattern": "^KEY=x"}},
        "end": {"rawOutput": {"mode": "files_with_matches", "results": 0}},
    }
    assert Exposure.from_records([stored], READS).secrets is None
    stored["end"]["rawOutput"][SEARCHED] = "infra/.env"  # type: ignore[index]
    assert Exposure.from_records([stored], READS).secrets == SecretsRead("infra/.env")


def test_a_secrets_file_reached_by_its_real_path_counts() -> None:
    assert secret_file_reached({"path": "notes.txt"}, ["/p/.env"]) == "/p/.env"
    assert secret_file_reached({"path": "notes.txt"}, ["/p/notes.txt"]) is None
    exposure = Exposure.from_records(
        [  # a loaded session: the locations, the results
            {
                "type": "tool_call",
                "start": {
                    "name": "read_file",
                    "rawInput": {"path": "n.txt"},
                    "locations": [{"path": "/p/n.txt"}],
                },
                "end": {
                    "content": [
                        {"type": "content", "content": {"type": "text", "text": "no secret"}}
                    ]
                },
            },
            {
                "type": "tool_call",
                "start": {"name": "grep", "rawInput": {"pattern": "KEY"}},
                "end": {
                    "content": [
                        {"type": "content", "content": {"type": "text", "text": ".env:1:KEY=v"}}
                    ]
                },
            },
        ],
        READS,
    )
    assert exposure.secrets == SecretsRead(".env")
    linked = Exposure.from_records(
        [
            {
                "type": "tool_call",
                "start": {
                    "name": "read_file",
                    "rawInput": {"path": "n.txt"},
                    "locations": [{"path": "/p/.env"}],
                },
            }
        ],
        READS,
    )
    assert linked.secrets == SecretsRead("/p/.env")


class _ServerFetch(Tool):
    """An MCP server's fetch tool, as far as the exposure check sees one: a name, a kind."""

    name = "mcp__web__fetch"
    kind: ClassVar[ToolKind] = "fetch"

    def title(self, args: Any) -> str:
        return self.name

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        raise AssertionError("not run here")


class _ServerLookup(_ServerFetch):
    name = "mcp__db__lookup"
    kind = "read"


class _NotOurWebFetch(_ServerFetch):
    """A tool of another origin that happens to be called web_fetch, and reads a path."""

    name = "web_fetch"
    kind = "read"


def test_a_web_fetch_asks_once_per_host_after_a_secrets_file() -> None:
    fetch = builtin_tools()["web_fetch"]
    args: Any = tool_input({"url": "https://Example.com:8443/x?d=1"}, fetch.input_type)
    exposure = Exposure()
    assert exposure.host_to_ask(fetch, args, "default") is None
    exposure.note({"command": "cat .env"})
    assert exposure.host_to_ask(fetch, args, "default") == "example.com"
    assert exposure.host_to_ask(fetch, args, "bypass") is None
    exposure.hosts.add("example.com")
    assert exposure.host_to_ask(fetch, args, "plan") is None


def test_another_tool_that_reaches_out_asks_after_a_secrets_file_too() -> None:
    exposure = Exposure()
    exposure.note({"path": ".env"})
    fetch = _ServerFetch()
    assert exposure.host_to_ask(fetch, {"url": "https://c.example/?d=x"}, "default") == "c.example"
    assert exposure.host_to_ask(fetch, {"q": "weather"}, "default") == fetch.name
    lookup = _ServerLookup()
    assert exposure.host_to_ask(lookup, {"url": "https://c.example/"}, "default") is None
    assert exposure.host_to_ask(fetch, {"q": "x"}, "bypass") is None


def test_what_a_tool_does_with_a_name_decides_not_its_own_name() -> None:
    """A stored call counts as reading what it names by what its tool declares: a tool named
    like web_fetch that is not ours (a session's tool table says) reads the file it names."""
    ours = builtin_tools()
    records = [{"type": "tool_call", "start": {"name": "web_fetch", "rawInput": {"path": ".env"}}}]
    assert Exposure.from_records(records, _reads(ours)).secrets is None
    theirs: dict[str, Tool] = {**ours, "web_fetch": _NotOurWebFetch()}
    assert Exposure.from_records(records, _reads(theirs)).secrets == SecretsRead(".env")
    assert sorted(name for name, tool in ours.items() if not tool.reads_what_it_names) == [
        "todo_write",
        "web_fetch",
    ]


def _reads(tools: dict[str, Tool]) -> Callable[[str], bool]:
    """As the session tells it: an unknown name (an MCP server's tool) reads what it names."""
    return lambda name: name not in tools or tools[name].reads_what_it_names


READS = _reads(builtin_tools())


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("evil\n\x1b[31mtool\u202eexe.txt\u200b", "evil toolexe.txt"),
        ("a\r\nb\tc", "a b c"),
        ("title\x1b]0;pwned\x07 here", "title here"),
        ("\u2066isolate\u2069 \u200fmark", "isolate mark"),
        ("x" * 500, "x" * 119 + "…"),
    ],
)
def test_shown_names_are_one_printable_line(raw: str, expected: str) -> None:
    assert shown(raw) == expected
