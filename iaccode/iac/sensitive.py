"""Values Terraform marks sensitive (and ROS / CloudFormation ``NoEcho`` parameters) never
reach the model: each is ``(sensitive)`` in what a tool gives it.

    await hide(tool_name, args, result, cwd)   the result with those values replaced

A project's :class:`ProjectValues` knows the values to hide, from two places:

- the project's files, scanned before each result (a bounded walk; each file parsed again
  only when it changed): state files (``*.tfstate``, ``*.tfstate.backup``), ``*.tfvars`` /
  ``*.tfvars.json`` values of variables some ``.tf`` file declares ``sensitive = true``
  (and ``TF_VAR_<name>`` in the environment), ``NoEcho`` defaults of templates and the
  NoEcho values of parameter files; ignored files too (state and tfvars usually are);
- what a command printed: the JSON of ``terraform output -json``, ``show -json`` and
  ``state pull`` (a remote state's values are nowhere else), and a file ``read_file`` read
  that holds such JSON. Values learnt stay known for the project while the agent runs.

Then every string of the result (the model's text, the editor's content, ``rawOutput``) has
each value replaced, as it stands and JSON-escaped (``cat terraform.tfstate`` shows the
escaped form). ``terraform output NAME`` / ``-raw NAME`` of an output the configuration marks
sensitive prints the bare value, so its whole output is hidden. The editor's content says
how many values were hidden from the model.

Not covered: a value printed in a form it does not have in the files (base64, cut in two, a
sensitive number), strings under 4 characters, and a command that prints a remote state's
value some other way than the JSON above before the project has learnt it. The gate of
issue 21 hands the real argv of each terraform read to :func:`learn_from_output` too.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import trio
from attrs import evolve

from iaccode.iac import sensitive_values as found
from iaccode.iac.hcl import parse_terraform
from iaccode.iac.parse_error import ParseError
from iaccode.iac.shell import simple_commands
from iaccode.iac.templates import load_documents
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent
from iaccode.tool_result import ToolResult

log = logging.getLogger(__name__)

HIDDEN = "(sensitive)"
SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".terraform",
        ".terragrunt-cache",
        ".mypy_cache",
        ".tox",
    }
)
MAX_DIRS = 5_000
"""Folders a scan looks into at most (the rest are not read: said once in the log)."""
MAX_FILE_BYTES = 32 * 1024 * 1024
"""Bigger state files are not read (a scan must stay quick)."""
MAX_OTHER_BYTES = 2 * 1024 * 1024
"""Bigger JSON / YAML / .tf files are not read (generated, vendored: package-lock.json)."""
MAX_DOCUMENTS = 20
"""JSON documents of one command's output looked at, at most."""
SCAN_SECONDS = 2.0
_STATE = (".tfstate", ".tfstate.backup")
_TFVARS = (".tfvars", ".tfvars.json")
_TEMPLATES = (".yaml", ".yml", ".json", ".template")
_TERRAFORM = frozenset({"terraform", "tofu", "terragrunt"})


class ProjectValues:
    """The values to hide in one project (a real path), and what the scan last saw."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[Path, tuple[tuple[int, int], Any]] = {}
        """Path -> (its mtime and size, what it holds: parsed once per change)."""
        self._learnt: set[str] = set()
        self._values: frozenset[str] = frozenset()
        self._outputs: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    @property
    def sensitive_outputs(self) -> frozenset[str]:
        """The outputs the configuration (or a state) marks sensitive, by name."""
        return self._outputs

    def learn(self, values: Iterable[str]) -> None:
        new = {value for value in values if len(value) >= found.MIN_CHARS} - self._learnt
        if new:
            self._learnt |= new
            self._set(self._values | new)

    def _set(self, values: frozenset[str]) -> None:
        if values == self._values and self._pattern is not None:
            return
        self._values = values
        forms = {form for value in values for form in (value, json.dumps(value)[1:-1])}
        self._pattern = (
            re.compile(
                "|".join(re.escape(form) for form in sorted(forms, key=lambda f: (-len(f), f)))
            )
            if forms
            else None
        )

    def scrub(self, text: str) -> tuple[str, int]:
        """``text`` with every known value replaced, and how many were."""
        if self._pattern is None or not text:
            return text, 0
        return self._pattern.subn(HIDDEN, text)

    def scan(self, env: dict[str, str] | None = None) -> None:
        """Read the project's files again where they changed. Blocking."""
        seen: dict[Path, tuple[tuple[int, int], Any]] = {}
        for path, stamp in self._walk():
            cached = self._files.get(path)
            seen[path] = cached if cached and cached[0] == stamp else (stamp, _read(path))
        self._files = seen
        variables: set[str] = set()
        outputs: set[str] = set()
        noecho: set[str] = set()
        for _, (kind, data) in seen.values():
            if kind == "tf":
                variables |= data[0]
                outputs |= data[1]
            elif kind == "template":
                noecho |= found.noecho_names(data)
        values: set[str] = set(self._learnt)
        environ = os.environ if env is None else env
        for name in variables:
            values.update(found.leaves(environ.get(f"TF_VAR_{name}")))
        for _, (kind, data) in seen.values():
            if kind == "document":
                values |= found.document_values(data, variables)
                outputs |= (
                    {
                        name
                        for name, body in (data.get("outputs") or {}).items()
                        if isinstance(body, dict) and body.get("sensitive") is True
                    }
                    if isinstance(data, dict)
                    else set()
                )
                values |= found.parameter_values(data, noecho)
            elif kind == "tfvars":
                values |= found.tfvars_values(data, variables)
            elif kind == "template":
                values |= found.template_values(data)
        self._outputs = frozenset(outputs)
        self._set(frozenset(values))

    def _walk(self) -> Iterator[tuple[Path, tuple[int, int]]]:
        deadline = time.monotonic() + SCAN_SECONDS
        folders = [self.root]
        seen = 0
        while folders:
            folder = folders.pop()
            seen += 1
            if seen > MAX_DIRS or time.monotonic() > deadline:
                log.info("sensitive values: the scan of %s stopped at %d folders", self.root, seen)
                return
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SKIP_DIRS:
                            folders.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False) and _wanted(entry.name):
                        info = entry.stat(follow_symlinks=False)
                        limit = MAX_FILE_BYTES if entry.name.endswith(_STATE) else MAX_OTHER_BYTES
                        if info.st_size <= limit:
                            yield Path(entry.path), (info.st_mtime_ns, info.st_size)
                except OSError:
                    continue


def _wanted(name: str) -> bool:
    return name.endswith((".tf", *_STATE, *_TFVARS, *_TEMPLATES))


def _read(path: Path) -> tuple[str, Any]:
    """(kind, what it holds) of one file; ("none", None) when nothing of ours. Blocking."""
    name = path.name
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "none", None
    try:
        if name.endswith(".tf"):
            return "tf", found.sensitive_names(text)
        if name.endswith(_TFVARS):
            return "tfvars", json.loads(text) if name.endswith(".json") else parse_terraform(
                text, name
            )
        if name.endswith(_STATE) or (name.endswith(".json") and text.lstrip()[:1] in ("{", "[")):
            document = json.loads(text)
            if name.endswith(_STATE) or _terraform_json(document):
                return "document", document
        if "NoEcho" in text and name.endswith(_TEMPLATES):
            documents = load_documents(text, name)
            if len(documents) == 1 and isinstance(documents[0], dict):
                return "template", documents[0]
    except (ValueError, ParseError, RecursionError):
        return "none", None
    return "none", None


def _terraform_json(document: Any) -> bool:
    """A JSON file Terraform wrote (a saved ``output -json``, ``show -json``, a state) or a
    parameter file (kept whole: which of its values are NoEcho depends on the templates)."""
    if isinstance(document, list):
        return bool(document) and all(
            isinstance(item, dict) and "ParameterKey" in item for item in document
        )
    return bool(found.document_values(document)) or (
        isinstance(document, dict) and isinstance(document.get("Parameters"), dict)
    )


_PROJECTS: dict[Path, ProjectValues] = {}
MAX_PROJECTS = 32


def project_values(root: Path) -> ProjectValues:
    """The values of the project at ``root``, kept while the agent runs (a few projects)."""
    known = _PROJECTS.get(root)
    if known is None:
        if len(_PROJECTS) >= MAX_PROJECTS:
            _PROJECTS.pop(next(iter(_PROJECTS)))
        known = _PROJECTS[root] = ProjectValues(root)
    return known


def learn_from_output(values: ProjectValues, text: str) -> None:
    """The sensitive values of each Terraform JSON document that starts a line of ``text``."""
    decoder = json.JSONDecoder()
    for number, match in enumerate(re.finditer(r"^[{\[]", text, re.MULTILINE)):
        if number >= MAX_DOCUMENTS:
            return
        try:
            document, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        values.learn(found.document_values(document))


def _bare_outputs(command: str) -> list[str]:
    """The outputs ``command`` prints alone: ``output NAME`` (``-raw``, ``-json`` too: a
    value alone is no document its marks could be read from)."""
    names: list[str] = []
    for simple in simple_commands(command):
        words = simple.words
        if not words or Path(words[0]).name not in _TERRAFORM:
            continue
        positional = [word for word in words[1:] if not word.startswith("-")]
        if positional[:1] == ["output"] and len(positional) > 1:
            names.append(positional[1])
    return names


async def hide(
    command: str | None, result: ToolResult, cwd: Path, paths: Iterable[Path] = ()
) -> ToolResult:
    """``result`` of a tool call in the project ``cwd`` with the sensitive values hidden.
    ``command``: the shell line the call ran (None: it ran none); ``paths``: the files the
    call read (their Terraform JSON is learnt first)."""
    values = project_values(cwd)
    await trio.to_thread.run_sync(_prepare, values, list(paths), abandon_on_cancel=True)
    if command is not None:
        # Any command may print a remote state or a saved plan (aws s3 cp s3://...tfstate -).
        learn_from_output(values, result.text)
        bare = [name for name in _bare_outputs(command) if name in values.sensitive_outputs]
        if bare:
            return _hidden_whole(result, bare)
    return _scrubbed(values, result)


def _prepare(values: ProjectValues, paths: list[Path]) -> None:
    values.scan()
    for path in paths:
        kind, data = _read(path) if path.is_file() else ("none", None)
        if kind == "document":
            values.learn(found.document_values(data))


def _hidden_whole(result: ToolResult, names: list[str]) -> ToolResult:
    which = ", ".join(names)
    text = (
        f"{HIDDEN}: the output of this command is the value of {which}, which Terraform "
        f"marks sensitive; it was hidden from you. Use it without printing it (pass it "
        f"to the next command in the same shell line), or ask the user."
    )
    note = f"The value of the sensitive output {which} was hidden from the model."
    return ToolResult(
        text,
        is_error=result.is_error,
        raw_output={"output": HIDDEN},
        content=[ContentToolCallContent(TextContent(note))],
    )


def _scrubbed(values: ProjectValues, result: ToolResult) -> ToolResult:
    text, count = values.scrub(result.text)
    raw, raw_count = _scrub_json(values, result.raw_output)
    content = result.content
    if content is not None:
        content = [
            evolve(item, content=TextContent(scrubbed))
            if isinstance(item, ContentToolCallContent)
            and isinstance(item.content, TextContent)
            and (scrubbed := values.scrub(item.content.text)[0]) != item.content.text
            else item
            for item in content
        ]
    model, model_count = _scrub_json(values, result.model_content)
    if not (count or raw_count or model_count or content != result.content):
        return result
    hidden = max(count, raw_count, model_count, 1)
    note = (
        f"{hidden} value{'s' if hidden != 1 else ''} that Terraform marks sensitive "
        f"{'were' if hidden != 1 else 'was'} hidden from the model (shown as {HIDDEN})."
    )
    shown = content if content is not None else [ContentToolCallContent(TextContent(text))]
    return evolve(
        result,
        text=f"{text}\n\n[{note}]",
        raw_output=raw,
        model_content=model,
        content=[*shown, ContentToolCallContent(TextContent(note))],
    )


def _scrub_json(values: ProjectValues, value: Any) -> tuple[Any, int]:
    if isinstance(value, str):
        return values.scrub(value)
    if isinstance(value, dict):
        total, out = 0, {}
        for key, item in value.items():
            out[key], count = _scrub_json(values, item)
            total += count
        return out, total
    if isinstance(value, list):
        total, items = 0, []
        for item in value:
            scrubbed, count = _scrub_json(values, item)
            items.append(scrubbed)
            total += count
        return items, total
    return value, 0
