"""Whether an automatic check may start what a module's folder holds: only what the user installed.

``terraform validate`` starts every provider plugin the module's working directory has
installed (``.terraform/providers/<host>/<namespace>/<type>/<version>/<os_arch>/``, checked
against ``.terraform.lock.hcl``). A repository can ship both, so after an ``edit_file`` in
``accept_edits`` the check after the write would run the repository's program with no question.
The rule here (:func:`validate_verdict`):

- a module folder with no working directory (no ``.terraform/``, or ``TF_DATA_DIR``) is
  validated when it needs no provider (only Terraform's built-in ``terraform_data`` and
  ``terraform_remote_state``, no module calls): nothing can be started then;
- an initialised one is validated only when every provider package installed there is, on its
  real path, in a folder the user's own Terraform setup names: the plugin cache
  (``TF_PLUGIN_CACHE_DIR``, or ``plugin_cache_dir`` in the CLI configuration:
  ``TF_CLI_CONFIG_FILE``, ``~/.terraformrc`` / ``~/.tofurc``, ``~/.terraform.d/*.tfrc``) or
  the implied local mirrors in the home folder (``~/.terraform.d/plugins``,
  ``~/.local/share/terraform/plugins``), never one inside the project. ``terraform init``
  with a plugin cache links each package there, so such a module validates;
- anything else is skipped with a one-line note (the model can run ``terraform validate``
  itself: a bash command, which asks).

The same rule for the other linters: cfn-lint runs outside the project folder, so a
``.cfnlintrc`` there (``append_rules``: Python modules) is never read, only the user's own
``~/.cfnlintrc``; tflint (whose plugins a repository's ``.tflint.hcl`` names) is not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from attrs import frozen

from iaccode.iac.hcl import is_terraform_file

BUILTIN_TYPES = ("terraform_",)
"""Resource / data types of Terraform's built-in provider (``terraform_data``, ...)."""
MAX_CONFIG_BYTES = 1024 * 1024
"""Most of a CLI configuration or module file read here."""
MAX_PACKAGES = 1000
"""Provider packages looked at in one working directory (more: not validated)."""

_BLOCK = re.compile(
    r'^\s*(resource|data|ephemeral|list|action)\s+"?([A-Za-z0-9_-]+)"?', re.MULTILINE
)
_NEEDS_PROVIDERS = re.compile(r"^\s*(provider|module)\b|\brequired_providers\b", re.MULTILINE)
_CACHE_SETTING = re.compile(r'^\s*plugin_cache_dir\s*=\s*"([^"]*)"', re.MULTILINE)


@frozen
class ValidateVerdict:
    run: bool
    note: str | None = None
    """For a check not run: the one line saying why (None: nothing worth saying)."""


def validate_verdict(
    module: Path, env: Mapping[str, str], program: str, project: Path
) -> ValidateVerdict:
    """Whether ``PROGRAM validate`` may run in ``module`` (a real path) with ``env``, the
    environment it would get; ``project`` is the session's folder. Blocking (stats, reads)."""
    data_dir = module / env.get("TF_DATA_DIR", ".terraform")
    if not data_dir.is_dir():
        return ValidateVerdict(not needs_providers(module))  # not initialised: nothing to say
    trusted = [folder for folder in trusted_folders(env, program) if not _inside(folder, project)]
    name = Path(program).name
    for count, package in enumerate(installed_packages(data_dir)):
        if count == MAX_PACKAGES:
            return ValidateVerdict(
                False,
                f"`{name} validate` not run: {data_dir.name}/ holds over "
                f"{MAX_PACKAGES} provider packages.",
            )
        real = Path(os.path.realpath(package))
        if not any(_inside(real, folder) for folder in trusted):
            shown = (
                "/".join(package.relative_to(data_dir / "providers").parts[:4])
                if _inside(package, data_dir / "providers")
                else str(package.name)
            )
            return ValidateVerdict(
                False,
                f"`{name} validate` not run: the provider {shown} in "
                f"{data_dir.name}/ is not from your plugin cache, so it may have "
                "come with the repository (an automatic check starts only "
                f"programs you installed; run `{name} validate` to check anyway).",
            )
    return ValidateVerdict(True)


def needs_providers(module: Path) -> bool:
    """Whether the module in this folder needs a provider besides the built-in one, or calls a
    module (either needs ``init``). Read from the text, no parser: wrong only toward not
    validating."""
    for path in _module_files(module):
        try:
            with path.open("rb") as file:
                text = file.read(MAX_CONFIG_BYTES).decode("utf-8", "replace")
        except OSError:
            return True
        if path.name.endswith(".json"):
            text = _json_as_blocks(text)
        if _NEEDS_PROVIDERS.search(text):
            return True
        if any(not kind.startswith(BUILTIN_TYPES) for _, kind in _BLOCK.findall(text)):
            return True
    return False


def _module_files(module: Path) -> list[Path]:
    try:
        return [entry for entry in module.iterdir() if is_terraform_file(entry.name)]
    except OSError:
        return []


def _json_as_blocks(text: str) -> str:
    """A ``.tf.json`` file's top-level blocks written as HCL block headers, for the scan."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "module"  # unreadable: count it as needing init
    if not isinstance(data, dict):
        return ""
    lines: list[str] = []
    for block in ("resource", "data", "ephemeral"):
        kinds = data.get(block)
        lines.extend(f'{block} "{kind}"' for kind in (kinds if isinstance(kinds, dict) else {}))
    terraform = data.get("terraform")
    needs = (
        "provider" in data
        or "module" in data
        or ("required_providers" in json.dumps(terraform) if terraform is not None else False)
    )
    return "\n".join([*lines, *(["provider"] if needs else [])])


def installed_packages(data_dir: Path) -> Iterator[Path]:
    """Every provider package of a working directory: what ``providers/`` holds at the depth
    of a package (``<host>/<namespace>/<type>/<version>/<os_arch>``), or anything that is not
    a folder on the way there (an archive, a folder we cannot list); the same in the old
    ``plugins/<os_arch>/``."""
    for top, depth in ((data_dir / "providers", 5), (data_dir / "plugins", 2)):
        stack = [(top, 0)]
        while stack:
            path, level = stack.pop()
            if level == depth or not path.is_dir():
                if level:
                    yield path
                continue
            try:
                children = list(path.iterdir())
            except OSError:
                yield path
                continue
            stack.extend((child, level + 1) for child in children)


def trusted_folders(env: Mapping[str, str], program: str) -> list[Path]:
    """The folders the user's Terraform setup installs providers from (real paths)."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    found = [env.get("TF_PLUGIN_CACHE_DIR", "")]
    for config in cli_config_files(env, program, home):
        try:
            with config.open("rb") as file:
                text = file.read(MAX_CONFIG_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        found.extend(_CACHE_SETTING.findall(text))
    data_home = env.get("XDG_DATA_HOME") or str(home / ".local" / "share")
    found.extend(
        [str(home / ".terraform.d" / "plugins"), str(Path(data_home) / "terraform" / "plugins")]
    )
    folders = []
    for raw in found:
        expanded = os.path.expanduser(_expand(raw, env)) if raw else ""
        if expanded and os.path.isabs(expanded):
            folders.append(Path(os.path.realpath(expanded)))
    return folders


def cli_config_files(env: Mapping[str, str], program: str, home: Path) -> list[Path]:
    """The CLI configuration files Terraform (or OpenTofu) reads."""
    tofu = Path(program).name.startswith("tofu")
    named = env.get("TOFU_CLI_CONFIG_FILE") if tofu else None
    named = named or env.get("TF_CLI_CONFIG_FILE")
    files = [Path(named)] if named else [home / (".tofurc" if tofu else ".terraformrc")]
    with contextlib.suppress(OSError):
        files.extend(sorted((home / ".terraform.d").glob("*.tfrc")))
    return files


def _expand(raw: str, env: Mapping[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` from ``env``, as Terraform expands them in its settings."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), raw)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
