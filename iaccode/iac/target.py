"""What a change touches, named without a network call: for the question's title and for the
protected targets of config.toml (``[iac] protected = ["prod*", "production"]``).

    terraform_target(folder, env)      workspace, backend, provider region/profile/project
    kube_target(argv, env)             kubectl / helm: the kube context and namespace
    pulumi_target(argv, cwd, env)      the stack
    title(command, target)             "terraform apply · workspace prod · s3 acme-state/..."
    protected_name(target, globs)      the name a protected glob matched, or None

Everything comes from files on disk and the command's environment:

- the workspace: ``TF_WORKSPACE``, else ``.terraform/environment`` (``TF_DATA_DIR`` moves the
  folder), else ``default``;
- the backend: ``.terraform/terraform.tfstate`` (what ``init`` configured, ``-backend-config``
  included), else the ``backend`` / ``cloud`` block of the module's files, else Terragrunt's
  ``remote_state``; only the fields that name a place (bucket, key, organisation, ...), never
  a connection string or a credential;
- the providers: the literal ``region`` / ``profile`` / ``subscription_id`` / ``project`` of
  the module's provider blocks, else the environment (``AWS_REGION``, ``AWS_PROFILE``,
  ``ALIBABA_CLOUD_REGION_ID``, ``ARM_SUBSCRIPTION_ID``, ``GOOGLE_PROJECT``, ...), for each
  provider the module uses;
- the kube context: ``--context`` (helm: ``--kube-context``, ``HELM_KUBECONTEXT``), else the
  ``current-context`` of ``--kubeconfig`` / ``KUBECONFIG`` / ``~/.kube/config``;
- the Pulumi stack: ``--stack`` / ``-s``, else the project's workspace settings
  (``~/.pulumi/workspaces/<project>-<sha1 of Pulumi.yaml's path>-workspace.json``).

What cannot be known this way (an expression, a value only the network has) is left out:
the title then names less, never something wrong.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from iaccode.iac.hcl import is_terraform_file, parse_terraform
from iaccode.iac.parse_error import ParseError

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1024 * 1024
"""Bigger configuration files are not read for the target."""

_BACKEND_FIELDS: dict[str, tuple[str, ...]] = {
    "s3": ("bucket", "key"),
    "gcs": ("bucket", "prefix"),
    "azurerm": ("storage_account_name", "container_name", "key"),
    "oss": ("bucket", "prefix", "key"),
    "cos": ("bucket", "prefix", "key"),
    "local": ("path",),
    "consul": ("path",),
    "kubernetes": ("namespace", "secret_suffix"),
    "pg": ("schema_name",),
    "http": ("address",),
}
"""Per backend type, the fields that say where the state is (joined with "/")."""

_PROVIDERS: dict[str, tuple[tuple[str, tuple[str, ...], str], ...]] = {
    # provider -> (argument, environment variables, how it is shown) ...
    "aws": (
        ("region", ("AWS_REGION", "AWS_DEFAULT_REGION"), "{}"),
        ("profile", ("AWS_PROFILE",), "profile {}"),
    ),
    "alicloud": (
        ("region", ("ALIBABA_CLOUD_REGION_ID", "ALICLOUD_REGION"), "{}"),
        ("profile", ("ALIBABA_CLOUD_PROFILE", "ALICLOUD_PROFILE"), "profile {}"),
    ),
    "azurerm": (("subscription_id", ("ARM_SUBSCRIPTION_ID",), "subscription {}"),),
    "google": (
        (
            "project",
            ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"),
            "project {}",
        ),
        ("region", ("GOOGLE_REGION", "GCLOUD_REGION", "CLOUDSDK_COMPUTE_REGION"), "{}"),
    ),
    "kubernetes": (("config_context", ("KUBE_CTX",), "context {}"),),
    "helm": (),
}
_RESOURCE_PREFIX = re.compile(r"^([a-z0-9]+)_")
_CURRENT_CONTEXT = re.compile(r"^current-context:\s*[\"']?([^\"'#\s]+)", re.MULTILINE)


@frozen
class Target:
    """What a change touches, as far as it can be known here."""

    workspace: str | None = None
    backend: str | None = None
    providers: tuple[str, ...] = ()
    kube_context: str | None = None
    namespace: str | None = None
    stack: str | None = None

    def parts(self) -> list[str]:
        parts = [f"workspace {self.workspace}"] if self.workspace else []
        parts += [self.backend] if self.backend else []
        parts += list(self.providers)
        parts += [f"context {self.kube_context}"] if self.kube_context else []
        parts += [f"namespace {self.namespace}"] if self.namespace else []
        parts += [f"stack {self.stack}"] if self.stack else []
        return [_shown(part) for part in parts]

    def names(self) -> list[tuple[str, str]]:
        """(what, name) of each name a protected glob is matched against."""
        found = [
            ("workspace", self.workspace),
            ("kube context", self.kube_context),
            ("stack", self.stack),
        ]
        found += [
            ("kube context", part.split(" ", 2)[2])
            for part in self.providers
            if part.startswith("kubernetes context ")
        ]
        return [(what, name) for what, name in found if name]


MAX_PART = 120
"""Longest part of a title; a file's content is no place for a paragraph."""
_UNSHOWN = re.compile(r"[^\S ]|[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(text: str) -> str:
    """``text`` on one line, without control or direction-changing characters: the names
    come from files and variables anyone may have written (``prod\nAllowed by the user``)."""
    text = _UNSHOWN.sub("?", text.strip())
    return text if len(text) <= MAX_PART else text[: MAX_PART - 1] + "…"


def title(command: str, target: Target) -> str:
    return " · ".join([command, *target.parts()])


def protected_name(target: Target, globs: Iterable[str]) -> tuple[str, str] | None:
    """(what, name) of the first name of ``target`` a glob of ``globs`` matches (case
    sensitive, as workspaces and contexts are), or None."""
    patterns = list(globs)
    for what, name in target.names():
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            return what, name
    return None


# --- Terraform / OpenTofu / Terragrunt ----------------------------------------------------


def terraform_target(folder: Path, env: Mapping[str, str]) -> Target:
    """The workspace, backend and providers of the module in ``folder``. Blocking (it reads
    files)."""
    data_dir = folder / env.get("TF_DATA_DIR", ".terraform")
    configs = _module_files(folder)
    kind, config = (
        _initialised_backend(data_dir)
        or _configured_backend(configs)
        or _terragrunt_backend(folder)
        or ("local", {})
    )
    workspace = _workspace(data_dir, env)
    if kind == "local" and not config.get("path") and workspace != "default":
        config = {"path": f"terraform.tfstate.d/{workspace}/terraform.tfstate"}
    return Target(
        workspace=workspace,
        backend=_backend_text(kind, config),
        providers=tuple(_providers(configs, env)),
    )


def _workspace(data_dir: Path, env: Mapping[str, str]) -> str:
    if name := env.get("TF_WORKSPACE", "").strip():
        return name
    text = _read(data_dir / "environment")
    return text.strip() if text and text.strip() else "default"


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _module_files(folder: Path) -> list[dict[str, Any]]:
    parsed = []
    try:
        names = sorted(entry.name for entry in os.scandir(folder) if entry.is_file())
    except OSError:
        return []
    for name in names:
        if not is_terraform_file(name) or name.endswith(".tofu.json"):
            continue
        text = _read(folder / name)
        if text is None:
            continue
        try:
            parsed.append(parse_terraform(text, name))
        except ParseError as exc:
            log.info("target: %s does not parse: %s", name, exc)
    return parsed


def _blocks(data: Any, key: str) -> list[dict[str, Any]]:
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, dict):
        return [value]
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _literal(value: Any) -> str | None:
    """A plain string of the configuration (not an expression); None otherwise."""
    if isinstance(value, str) and value and "${" not in value:
        return value
    return None


def _initialised_backend(data_dir: Path) -> tuple[str, dict[str, Any]] | None:
    text = _read(data_dir / "terraform.tfstate")
    try:
        backend = json.loads(text).get("backend") if text else None
    except (ValueError, AttributeError):
        return None
    if isinstance(backend, dict) and isinstance(backend.get("type"), str):
        config = backend.get("config")
        return backend["type"], config if isinstance(config, dict) else {}
    return None


def _configured_backend(configs: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    for data in configs:
        for block in _blocks(data, "terraform"):
            for backend in _blocks(block, "backend"):
                for kind, body in backend.items():
                    return str(kind), body if isinstance(body, dict) else {}
            for cloud in _blocks(block, "cloud"):
                return "cloud", cloud
    return None


def _terragrunt_backend(folder: Path) -> tuple[str, dict[str, Any]] | None:
    text = _read(folder / "terragrunt.hcl")
    if text is None:
        return None
    try:
        data = parse_terraform(text, "terragrunt.hcl")
    except ParseError:
        return None
    for block in _blocks(data, "remote_state"):
        kind = _literal(block.get("backend"))
        config = block.get("config")
        if kind:
            return kind, config if isinstance(config, dict) else {}
    return None


def _backend_text(kind: str, config: Mapping[str, Any]) -> str:
    if kind in ("cloud", "remote"):
        organisation = _literal(config.get("organization"))
        workspaces = config.get("workspaces")
        workspaces = workspaces[0] if isinstance(workspaces, list) and workspaces else workspaces
        name = None
        if isinstance(workspaces, dict):
            name = _literal(workspaces.get("name")) or (
                f"{prefix}*" if (prefix := _literal(workspaces.get("prefix"))) else None
            )
        where = "/".join(part for part in (organisation, name) if part)
        label = "HCP Terraform" if kind == "cloud" else "remote"
        return f"{label} {where}" if where else label
    fields = _BACKEND_FIELDS.get(kind, ())
    values = [_literal(config.get(name)) for name in fields]
    if kind == "http" and values[0]:
        values[0] = re.sub(r"^(\w+://)[^/@]*@", r"\1", values[0]).split("?", 1)[0]
    if kind == "local" and not values[0]:
        values[0] = "terraform.tfstate"
    where = "/".join(value for value in values if value)
    return f"{kind} {where}" if where else kind


def _providers(configs: list[dict[str, Any]], env: Mapping[str, str]) -> list[str]:
    used: dict[str, list[dict[str, Any]]] = {}
    for data in configs:
        for block in _blocks(data, "provider"):
            for name, body in block.items():
                used.setdefault(str(name), []).append(body if isinstance(body, dict) else {})
        for block in _blocks(data, "terraform"):
            for required in _blocks(block, "required_providers"):
                for name in required:
                    used.setdefault(str(name), [])
        for key in ("resource", "data"):
            for block in _blocks(data, key):
                for kind in block:
                    if found := _RESOURCE_PREFIX.match(str(kind)):
                        used.setdefault(found.group(1), [])
    shown = []
    for name, bodies in used.items():
        arguments = _PROVIDERS.get(name)
        if not arguments:
            continue
        settings: list[str] = []
        for body in bodies or [{}]:
            words = []
            for argument, variables, form in arguments:
                value = _literal(body.get(argument)) or next(
                    (env[v] for v in variables if env.get(v, "").strip()), None
                )
                if value:
                    words.append(form.format(value.strip()))
            if words and " ".join(words) not in settings:
                settings.append(" ".join(words))
        if settings:
            shown.append(f"{name} {', '.join(settings)}")
    return shown


# --- kubectl / helm -----------------------------------------------------------------------


def kube_target(argv: Sequence[str], env: Mapping[str, str]) -> Target:
    """The kube context (and namespace) a ``kubectl`` / ``oc`` / ``helm`` argv works on."""
    helm = Path(argv[0]).name == "helm" if argv else False
    context = _option(argv, ("--kube-context",) if helm else ("--context",))
    if context is None and helm:
        context = env.get("HELM_KUBECONTEXT") or None
    if context is None:
        context = _current_context(_option(argv, ("--kubeconfig",)), env)
    namespace = _option(argv, ("-n", "--namespace"))
    return Target(kube_context=context, namespace=namespace)


def _option(argv: Sequence[str], names: tuple[str, ...]) -> str | None:
    for index, word in enumerate(argv):
        if word in names and index + 1 < len(argv):
            return argv[index + 1]
        for name in names:
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def _current_context(kubeconfig: str | None, env: Mapping[str, str]) -> str | None:
    """The first ``current-context`` of the kubeconfig files, as kubectl merges them."""
    if kubeconfig:
        files = [kubeconfig]
    elif env.get("KUBECONFIG"):
        files = [f for f in env["KUBECONFIG"].split(os.pathsep) if f]
    else:
        files = [str(Path(env.get("HOME") or Path.home()) / ".kube" / "config")]
    for file in files:
        text = _read(Path(file).expanduser())
        if text and (found := _CURRENT_CONTEXT.search(text)):
            return found.group(1)
    return None


# --- Pulumi -------------------------------------------------------------------------------


def pulumi_target(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> Target:
    """The stack a ``pulumi`` argv works on."""
    stack = _option(argv, ("-s", "--stack"))
    folder = cwd / (_option(argv, ("-C", "--cwd")) or ".")
    return Target(stack=stack or _selected_stack(folder, env))


def _selected_stack(folder: Path, env: Mapping[str, str]) -> str | None:
    """``pulumi stack select``'s choice, kept in Pulumi's workspace settings."""
    for directory in [folder, *folder.parents]:
        project = next(
            (
                directory / name
                for name in ("Pulumi.yaml", "Pulumi.yml")
                if (directory / name).is_file()
            ),
            None,
        )
        if project is None:
            continue
        text = _read(project) or ""
        found = re.search(r"^name:\s*[\"']?([^\"'#\s]+)", text, re.MULTILINE)
        if not found:
            return None
        name = found.group(1).replace("/", "-")
        home = Path(env.get("PULUMI_HOME") or Path(env.get("HOME") or Path.home()) / ".pulumi")
        key = hashlib.sha1(str(project).encode(), usedforsecurity=False).hexdigest()
        settings = _read(home / "workspaces" / f"{name}-{key}-workspace.json")
        try:
            stack = json.loads(settings).get("stack") if settings else None
        except (ValueError, AttributeError):
            return None
        return stack if isinstance(stack, str) and stack else None
    return None
