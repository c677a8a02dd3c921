"""The project's IaC inventory: a short, capped system-prompt section saying what it declares.

    inventory_section(cwd) -> "Infrastructure as code in this project ..." | None

Per folder, with real parsers (python-hcl2, the template loader of :mod:`.templates`):

- Terraform / OpenTofu modules: resources by address, data sources, variables (type, whether
  they have a default), outputs, providers and their version constraints, the backend, module
  calls and their source;
- ROS and CloudFormation templates: resources (``Vpc: ALIYUN::ECS::VPC``), parameters, outputs;
- Kubernetes manifests (kind/name), Helm charts (``Chart.yaml`` and the kinds its templates
  make), Pulumi projects (``Pulumi.yaml``).

The walk respects ``.gitignore`` (the walker list_files, glob and grep share), skips
``.terraform/`` and ``node_modules/``, and is bounded in time; files are parsed in a worker
thread and kept by (mtime, size), so a refresh re-reads only what changed. The text is at most
``MAX_CHARS``, biggest folders first. Each project's inventory is built once (in a thread of
its own, started by the first call) and rebuilt in the background when its IaC files change.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Any

import trio
from attrs import define, frozen

from iaccode.iac.hcl import is_terraform_file, parse_terraform, unquote
from iaccode.iac.parse_error import ParseError
from iaccode.iac.templates import (
    kube_objects,
    load_documents,
    section,
    template_family,
)
from iaccode.tools.list_files import GitIgnores, walk_files

log = logging.getLogger(__name__)

MAX_CHARS = 8 * 1024
"""The section's size limit (characters); folders that do not fit are counted, not shown."""
WALK_SECONDS = 3.0
"""Longest a walk of the project may take; a tree too big for it gets a partial inventory."""
PARSE_SECONDS = 10.0
"""Longest parsing the files may take in one build."""
FIRST_BUILD_WAIT = 5.0
"""How long the first call waits for the first build (later calls never wait)."""
MAX_FILE_BYTES = 1024 * 1024
"""Bigger files are left out (generated, vendored)."""
SKIPPED_DIRS = frozenset({".terraform", ".terragrunt-cache", "node_modules", ".git"})
_YAML_SUFFIXES = (".yaml", ".yml", ".json", ".template")
_MARKERS = (b"Resources", b"apiVersion")
"""A YAML/JSON file is read only if it holds one of these (a template or a manifest)."""


class _Ignores(GitIgnores):
    """.gitignore, plus the folders of tools' caches (``.terraform/``: provider binaries and
    copies of modules, not the project's own code)."""

    def ignored(self, rel: str, is_dir: bool, check_parents: bool = True) -> bool:
        if is_dir and rel.rsplit("/", 1)[-1] in SKIPPED_DIRS:
            return True
        return super().ignored(rel, is_dir, check_parents)


@frozen
class Entry:
    """What one folder (a module, a chart) or one file (a template, a manifest) declares."""

    where: str
    """The folder ("network/") or file ("ros/vpc.yaml"), relative to the project."""
    what: str
    """"Terraform module", "ROS template", ..."""
    lines: list[str]
    weight: int
    """How much it declares: bigger entries come first."""


def is_candidate(rel: str) -> bool:
    """Whether a file may hold IaC (then it is read; reading decides)."""
    name = PurePosixPath(rel).name
    return (is_terraform_file(name) or name in ("Chart.yaml", "Pulumi.yaml", "Pulumi.yml")
            or name.endswith(_YAML_SUFFIXES))


def find_files(root: Path, seconds: float = WALK_SECONDS) -> tuple[list[str], bool]:
    """The candidate files under ``root`` (relative) and whether the walk was complete."""
    deadline = time.monotonic() + seconds
    found: list[str] = []
    for rel in walk_files(root, _Ignores(root, root)):
        if time.monotonic() > deadline:
            return found, False
        if is_candidate(rel):
            found.append(rel)
    return found, True


@define
class _Parsed:
    """One file's reading, kept while its (mtime, size) stay the same."""

    stamp: tuple[int, int]
    kind: str  # "terraform", "template", "kube", "chart", "pulumi", "helm-template", "none"
    data: Any = None
    error: str | None = None


def _read(root: Path, rel: str) -> _Parsed | None:
    path = root / rel
    try:
        info = path.stat()
        if info.st_size > MAX_FILE_BYTES:
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    stamp = (info.st_mtime_ns, info.st_size)
    name = PurePosixPath(rel).name
    text = raw.decode("utf-8", "replace")
    parent = PurePosixPath(rel).parent
    if is_terraform_file(name):
        try:
            return _Parsed(stamp, "terraform", parse_terraform(text, name))
        except ParseError as exc:
            return _Parsed(stamp, "terraform", {}, f"{name}: {exc}")
    if parent.name == "templates" and _is_chart(root / str(parent.parent)):
        return _Parsed(stamp, "helm-template", _template_kinds(text))
    if name in ("Chart.yaml", "Pulumi.yaml", "Pulumi.yml") or any(m in raw for m in _MARKERS):
        try:
            documents = load_documents(text, name)
        except ParseError:
            return _Parsed(stamp, "none")
        if name == "Chart.yaml":
            return _Parsed(stamp, "chart", documents[0] if documents else None)
        if name.startswith("Pulumi."):
            return _Parsed(stamp, "pulumi", documents[0] if documents else None)
        if len(documents) == 1 and (family := template_family(documents[0])):
            return _Parsed(stamp, "template", (family, documents[0]))
        if objects := kube_objects(documents):
            return _Parsed(stamp, "kube", objects)
    return _Parsed(stamp, "none")


def _is_chart(folder: Path) -> bool:
    return (folder / "Chart.yaml").is_file()


def _template_kinds(text: str) -> list[str]:
    """The kinds a Helm template makes: its text is a Go template, not YAML, so the
    top-level ``kind:`` lines are read as they stand."""
    kinds = []
    for line in text.splitlines():
        if line.startswith("kind:"):
            kind = line[5:].strip()
            if kind and "{{" not in kind:
                kinds.append(kind)
    return kinds


# --- rendering ------------------------------------------------------------------------------


def _blocks(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key)
    if isinstance(value, dict):
        return [value]
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _labelled(data: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    """``resource "a" "b" {}`` -> [("a", {"b": {...}})]: each block's first label and body."""
    return [(str(unquote(label)), body) for block in _blocks(data, key)
            for label, body in block.items()]


def _expression(value: Any) -> str:
    text = str(unquote(value))
    return text[2:-1] if text.startswith("${") and text.endswith("}") else text


def terraform_entry(folder: str, files: dict[str, _Parsed]) -> Entry:
    resources: list[str] = []
    data_sources: list[str] = []
    variables: list[str] = []
    outputs: list[str] = []
    providers: dict[str, str] = {}
    modules: list[str] = []
    settings: list[str] = []
    errors: list[str] = []
    for parsed in files.values():
        if parsed.error:
            errors.append(parsed.error)
        data = parsed.data if isinstance(parsed.data, dict) else {}
        for kind, body in _labelled(data, "resource"):
            resources.extend(f"{kind}.{unquote(name)}" for name in _names(body))
        for kind, body in _labelled(data, "data"):
            data_sources.extend(f"data.{kind}.{unquote(name)}" for name in _names(body))
        for name, body in _labelled(data, "variable"):
            body = body if isinstance(body, dict) else {}
            kind = _expression(body["type"]) if "type" in body else "any"
            variables.append(f"{name} ({kind}, {'default' if 'default' in body else 'required'})")
        outputs.extend(name for name, _ in _labelled(data, "output"))
        for name, body in _labelled(data, "module"):
            body = body if isinstance(body, dict) else {}
            source = unquote(body.get("source", "?"))
            version = f" {unquote(body['version'])}" if "version" in body else ""
            modules.append(f"{name} = {source}{version}")
        for name, _ in _labelled(data, "provider"):
            providers.setdefault(name, "")
        for block in _blocks(data, "terraform"):
            if "required_version" in block:
                settings.append(f"required_version {unquote(block['required_version'])}")
            for backend, _ in _labelled(block, "backend"):
                settings.append(f"backend {backend}")
            if "cloud" in block:
                settings.append("backend cloud (HCP Terraform)")
            for required in _blocks(block, "required_providers"):
                for name, spec in required.items():
                    if isinstance(spec, dict):
                        source = unquote(spec.get("source", name))
                        version = f" {unquote(spec['version'])}" if "version" in spec else ""
                        providers[name] = f"{source}{version}"
                    else:
                        providers[name] = str(unquote(spec))
    lines = []
    if settings:
        lines.append("terraform: " + "; ".join(settings))
    if providers:
        lines.append("providers: " + ", ".join(
            f"{name} ({spec})" if spec else name for name, spec in providers.items()))
    for label, items in (("resources", resources), ("data", data_sources),
                         ("variables", variables), ("outputs", outputs),
                         ("modules", modules), ("syntax errors", errors)):
        if items:
            lines.append(f"{label}: " + ", ".join(items))
    kinds = {"OpenTofu" if ".tofu" in name else "Terraform" for name in files}
    what = " / ".join(sorted(kinds)) + f" module, {len(files)} file{'s' * (len(files) != 1)}"
    weight = len(resources) + len(data_sources) + len(variables) + len(outputs) + len(modules)
    return Entry(folder, what, lines, weight)


def _names(body: Any) -> list[str]:
    if isinstance(body, dict):
        return [str(name) for name in body]
    if isinstance(body, list):
        return [str(name) for item in body if isinstance(item, dict) for name in item]
    return []


def template_entry(rel: str, family: str, document: dict[str, Any]) -> Entry:
    resources = section(document, "Resources")
    listed = [f"{logical_id}: {body.get('Type', '?') if isinstance(body, dict) else '?'}"
              for logical_id, body in resources.items()]
    lines = [f"resources: {', '.join(listed)}"] if listed else []
    for name in ("Parameters", "Outputs"):
        if items := list(section(document, name)):
            lines.append(f"{name.lower()}: {', '.join(map(str, items))}")
    what = "ROS template" if family == "ros" else "CloudFormation template"
    return Entry(rel, what, lines, len(listed) + len(section(document, "Parameters")))


def _other_entries(rel: str, parsed: _Parsed, charts: dict[str, list[str]]) -> Entry | None:
    if parsed.kind == "template":
        family, document = parsed.data
        return template_entry(rel, family, document)
    if parsed.kind == "kube":
        objects = [f"{kind}/{name}" for kind, name in parsed.data]
        return Entry(rel, "Kubernetes", [", ".join(objects)], len(objects))
    if parsed.kind == "chart" and isinstance(parsed.data, dict):
        folder = str(PurePosixPath(rel).parent)
        kinds = charts.get(folder, [])
        name, version = parsed.data.get("name", "?"), parsed.data.get("version", "?")
        lines = [f"templates make: {', '.join(kinds)}"] if kinds else []
        return Entry(_folder(folder), f"Helm chart {name} {version}", lines, len(kinds) + 1)
    if parsed.kind == "pulumi" and isinstance(parsed.data, dict):
        folder = str(PurePosixPath(rel).parent)
        resources = parsed.data.get("resources")
        listed = [f"{name}: {body.get('type', '?') if isinstance(body, dict) else '?'}"
                  for name, body in resources.items()] if isinstance(resources, dict) else []
        what = f"Pulumi project {parsed.data.get('name', '?')} ({parsed.data.get('runtime', '?')})"
        return Entry(_folder(folder), what, [f"resources: {', '.join(listed)}"] if listed else [],
                     len(listed) + 1)
    return None


def _folder(folder: str) -> str:
    return "./" if folder in ("", ".") else folder + "/"


def render(entries: list[Entry], complete: bool = True, limit: int = MAX_CHARS) -> str | None:
    """The section text, biggest entries first, at most ``limit`` characters; None if empty."""
    if not entries:
        return None
    head = ("# Infrastructure as code in this project\n"
            "What its files declare (read with real parsers; biggest folders first"
            + ("" if complete else "; the project is too big to read whole, this is part of it")
            + "). Read a file before relying on a detail.")
    parts = [head]
    size = len(head)
    ordered = sorted(entries, key=lambda e: (-e.weight, e.where))
    for shown, entry in enumerate(ordered):
        block = "\n".join([f"\n{entry.where} ({entry.what})", *(f"  {line}" for line in
                                                                entry.lines)])
        rest = len(ordered) - shown
        tail = f"\n[... {rest} more not shown: the inventory is capped at {limit} characters]"
        if size + len(block) + len(tail) > limit:
            if shown == 0:  # one entry bigger than all the room: its start
                parts.append(block[:limit - size - len(tail) - 4] + " ...")
                rest -= 1
                tail = (f"\n[... {rest} more not shown: the inventory is capped at {limit} "
                        "characters]") if rest else ""
            parts.append(tail)
            break
        parts.append(block)
        size += len(block)
    return "\n".join(parts)


# --- building and keeping it current -----------------------------------------------------------


class ProjectInventory:
    """One project's inventory, built in a thread of its own and rebuilt when files change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        """One build at a time (the background one, or a caller's)."""
        self._parsed: dict[str, _Parsed] = {}
        self._text: str | None = None
        self._stamps: dict[str, tuple[int, int]] | None = None
        self._complete = True
        self._building = False
        self.ready = threading.Event()
        """Set once the first build is done."""
        self.version = 0
        """Counts the builds that changed the text (a prompt built from an older one is stale)."""

    def current(self) -> str | None:
        """The latest text (None: no IaC, or not built yet); starts a rebuild check in the
        background. Never blocks."""
        self.start()
        return self._text

    def start(self) -> None:
        with self._lock:
            if self._building:
                return
            self._building = True
        threading.Thread(target=self._build_logged, name="iac-inventory", daemon=True).start()

    def _build_logged(self) -> None:
        try:
            self.build()
        except Exception:  # a bug here must not take the session down; the log says what
            log.exception("building the IaC inventory of %s failed", self.root)
        finally:
            with self._lock:
                self._building = False
            self.ready.set()

    def build(self) -> str | None:
        """Walk, read what changed, render. Blocking: run it in a worker thread."""
        with self._build_lock:
            return self._build()

    def _build(self) -> str | None:
        if self._stamps is not None and not self._complete:
            files = list(self._stamps)  # a huge tree: only look at the files we know again
            complete = False
        else:
            files, complete = find_files(self.root)
        stamps = {rel: stamp for rel in files if (stamp := _stamp(self.root / rel))}
        if stamps == self._stamps:
            return self._text
        deadline = time.monotonic() + PARSE_SECONDS
        parsed: dict[str, _Parsed] = {}
        for rel, stamp in stamps.items():
            known = self._parsed.get(rel)
            if known is not None and known.stamp == stamp:
                parsed[rel] = known
            elif time.monotonic() < deadline:
                if (reading := _read(self.root, rel)) is not None:
                    parsed[rel] = reading
            else:
                complete = False
        self._parsed, self._stamps, self._complete = parsed, stamps, complete
        text = render(entries(parsed), complete)
        if text != self._text:
            self._text = text
            self.version += 1
        return self._text


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


def entries(parsed: dict[str, _Parsed]) -> list[Entry]:
    modules: dict[str, dict[str, _Parsed]] = {}
    charts: dict[str, list[str]] = {}
    for rel, reading in parsed.items():
        folder = str(PurePosixPath(rel).parent)
        if reading.kind == "terraform":
            modules.setdefault(folder, {})[PurePosixPath(rel).name] = reading
        elif reading.kind == "helm-template":
            chart = str(PurePosixPath(folder).parent)
            charts.setdefault(chart, []).extend(reading.data)
    found = [terraform_entry(_folder(folder), files) for folder, files in modules.items()]
    for rel, reading in parsed.items():
        if (entry := _other_entries(rel, reading, charts)) is not None:
            found.append(entry)
    return found


_PROJECTS: dict[Path, ProjectInventory] = {}
_PROJECTS_LOCK = threading.Lock()


def project_inventory(cwd: Path) -> ProjectInventory:
    """The inventory of the project at ``cwd`` (one per folder, shared by its sessions)."""
    with _PROJECTS_LOCK:
        inventory = _PROJECTS.get(cwd)
        if inventory is None:
            inventory = _PROJECTS[cwd] = ProjectInventory(cwd)
        return inventory


async def inventory_section(cwd: Path) -> str | None:
    """The system-prompt section for the session's project (``cwd``, a real path), or None
    when it holds no IaC. The first call waits up to FIRST_BUILD_WAIT for the first build; a
    later one returns at once what was last built, and a rebuild picks up changed files for
    the next."""
    return await trio.to_thread.run_sync(inventory_text, cwd, abandon_on_cancel=True)


def inventory_text(cwd: Path) -> str | None:
    """:func:`inventory_section`, blocking (for a caller already in a worker thread)."""
    inventory = project_inventory(cwd)
    inventory.start()
    inventory.ready.wait(FIRST_BUILD_WAIT)
    return inventory.current()


def inventory_version(cwd: Path) -> int:
    """Changes when the project's inventory text changes: a caller that built its prompt from
    an older version rebuilds it. Blocking (it looks at the files again): call it from a
    worker thread, before a prompt."""
    inventory = project_inventory(cwd)
    inventory.start()
    inventory.ready.wait(FIRST_BUILD_WAIT)
    inventory.build()
    return inventory.version


def iac_inventory(facts: Any) -> str | None:
    """The system-prompt section (``iaccode.context`` calls it, in a worker thread, with the
    session's facts: only ``facts.cwd`` is used)."""
    return inventory_text(Path(facts.cwd))
