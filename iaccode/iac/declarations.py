"""What one IaC file declares, and the inventory's entries made from that.

read_file(root, rel) -> Reading      (parsed once; kept while its mtime and size stay)
entries({rel: Reading}) -> [Entry]   (a Terraform module per folder, a template per file,
                                      a chart, a Pulumi project, a manifest)
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from attrs import define, frozen

from iaccode.iac.hcl import is_terraform_file, parse_terraform, unquote
from iaccode.iac.parse_error import ParseError, TooDeep
from iaccode.iac.templates import kube_objects, load_documents, section, template_family

_USERINFO = re.compile(r"//[^/@\s]*@")
"""The user and password (or token) of a URL: a module source may carry them
(``git::https://oauth2:TOKEN@gitlab.example.com/...``); the inventory shows the source without."""

MAX_FILE_BYTES = 1024 * 1024
"""Bigger files are left out (generated, vendored)."""
_YAML_SUFFIXES = (".yaml", ".yml", ".json", ".template")
_MARKERS = (b"Resources", b"apiVersion")
"""A YAML/JSON file is read only if it holds one of these (a template or a manifest)."""


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
    return (
        is_terraform_file(name)
        or name in ("Chart.yaml", "Pulumi.yaml", "Pulumi.yml")
        or name.endswith(_YAML_SUFFIXES)
    )


@define
class Reading:
    """One file's reading, kept while its (mtime, size) stay the same."""

    stamp: tuple[int, int]
    kind: str  # "terraform", "template", "kube", "chart", "pulumi", "helm-template", "none"
    data: Any = None
    error: str | None = None


def read_file(root: Path, rel: str) -> Reading | None:
    """What the file ``rel`` (below ``root``) holds; None when it is too big or unreadable.
    Blocking. Raises TooDeep for a file nested too deep to parse."""
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
            return Reading(stamp, "terraform", parse_terraform(text, name))
        except TooDeep:
            raise
        except ParseError as exc:
            return Reading(stamp, "terraform", {}, f"{name}: {exc}")
    if parent.name == "templates" and _is_chart(root / str(parent.parent)):
        return Reading(stamp, "helm-template", _template_kinds(text))
    if name in ("Chart.yaml", "Pulumi.yaml", "Pulumi.yml") or any(m in raw for m in _MARKERS):
        try:
            documents = load_documents(text, name)
        except TooDeep:
            raise
        except ParseError:
            return Reading(stamp, "none")
        if name == "Chart.yaml":
            return Reading(stamp, "chart", documents[0] if documents else None)
        if name.startswith("Pulumi."):
            return Reading(stamp, "pulumi", documents[0] if documents else None)
        if len(documents) == 1 and (family := template_family(documents[0])):
            return Reading(stamp, "template", (family, documents[0]))
        if objects := kube_objects(documents):
            return Reading(stamp, "kube", objects)
    return Reading(stamp, "none")


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


def _blocks(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key)
    if isinstance(value, dict):
        return [value]
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _labelled(data: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    """``resource "a" "b" {}`` -> [("a", {"b": {...}})]: each block's first label and body."""
    return [
        (str(unquote(label)), body) for block in _blocks(data, key) for label, body in block.items()
    ]


def _expression(value: Any) -> str:
    text = str(unquote(value))
    return text[2:-1] if text.startswith("${") and text.endswith("}") else text


def terraform_entry(folder: str, files: dict[str, Reading]) -> Entry:
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
            source = _USERINFO.sub("//", str(unquote(body.get("source", "?"))))
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
        lines.append(
            "providers: "
            + ", ".join(f"{name} ({spec})" if spec else name for name, spec in providers.items())
        )
    for label, items in (
        ("resources", resources),
        ("data", data_sources),
        ("variables", variables),
        ("outputs", outputs),
        ("modules", modules),
        ("syntax errors", errors),
    ):
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
    listed = [
        f"{logical_id}: {body.get('Type', '?') if isinstance(body, dict) else '?'}"
        for logical_id, body in resources.items()
    ]
    lines = [f"resources: {', '.join(listed)}"] if listed else []
    for name in ("Parameters", "Outputs"):
        if items := list(section(document, name)):
            lines.append(f"{name.lower()}: {', '.join(map(str, items))}")
    what = "ROS template" if family == "ros" else "CloudFormation template"
    return Entry(rel, what, lines, len(listed) + len(section(document, "Parameters")))


def _other_entries(rel: str, parsed: Reading, charts: dict[str, list[str]]) -> Entry | None:
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
        listed = (
            [
                f"{name}: {body.get('type', '?') if isinstance(body, dict) else '?'}"
                for name, body in resources.items()
            ]
            if isinstance(resources, dict)
            else []
        )
        what = f"Pulumi project {parsed.data.get('name', '?')} ({parsed.data.get('runtime', '?')})"
        return Entry(
            _folder(folder),
            what,
            [f"resources: {', '.join(listed)}"] if listed else [],
            len(listed) + 1,
        )
    return None


def _folder(folder: str) -> str:
    return "./" if folder in ("", ".") else folder + "/"


def entries(parsed: dict[str, Reading]) -> list[Entry]:
    modules: dict[str, dict[str, Reading]] = {}
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
