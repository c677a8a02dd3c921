"""What a command line runs where the gates cannot follow, for the text reader
(:mod:`iaccode.iac.guard`):

- runners that put their own program folders before ``PATH`` (``npx cdk deploy``, ``npm run
  deploy`` whose script runs ``cdk``, ``uv run``, ``uv tool run``, ``pipx run``, ``poetry run``,
  ``bundle exec``, ``conda run``, ``pixi run``, ``direnv exec``, ``snap run``...), or that put
  a program of their own choosing there (``mise x terraform@1.9 -- terraform``, ``nix shell
  nixpkgs#kubectl -c kubectl``, ``nix run nixpkgs#terraform -- apply``, ``nix-shell --run``,
  ``devbox run``, ``proto run``, ``tenv tf``): a CLI run there runs without its gate;
- a cloud CLI's own code run by Python (``python3 -m awscli``, ``python3 -m azure.cli``, the
  Cloud SDK's ``gcloud.py``, ``gsutil.py``, ``bq.py``): the CLI under no name a gate knows;
- a virtualenv activated on the line whose ``bin`` holds an infrastructure CLI
  (``source .venv/bin/activate && ansible-playbook site.yml``);
- another machine or container (``ssh host ...``, ``docker run hashicorp/terraform apply``)
  and what runs later, outside the call (``at``, ``crontab``, ``systemd-run``, ``tmux``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from attrs import frozen

from iaccode.iac.clis import GATED


@frozen
class _Runner:
    subcommands: frozenset[str] | None = None
    """The subcommand that runs a program (``uv run``, ``uv tool run``); None: the runner
    itself does (``npx cdk``)."""
    values: frozenset[str] = frozenset()
    """Its own options that take a value, besides :data:`_RUNNER_VALUE_OPTIONS`."""
    own: int = 0
    """Positional words of its own before the command (``direnv exec DIR cmd``)."""
    strings: frozenset[str] = frozenset()
    """Options whose value is a command line (``nix-shell --run 'terraform apply'``)."""


_CONDA = _Runner(frozenset({"run"}), frozenset({"-n", "--name", "--prefix", "--cwd"}))
_RUNNERS: dict[str, _Runner] = {
    "npx": _Runner(strings=frozenset({"-c", "--call"})),
    "bunx": _Runner(),
    "pnpx": _Runner(),
    "uvx": _Runner(),
    "npm": _Runner(frozenset({"exec", "x"}), strings=frozenset({"-c", "--call"})),
    "pnpm": _Runner(frozenset({"exec", "dlx"})),
    "yarn": _Runner(frozenset({"exec", "dlx"})),
    "bun": _Runner(frozenset({"x"})),
    "uv": _Runner(frozenset({"run", "tool run"})),
    "poetry": _Runner(frozenset({"run"})),
    "pipenv": _Runner(frozenset({"run"})),
    "pipx": _Runner(frozenset({"run"}), frozenset({"--spec", "--pip-args", "--index-url"})),
    "bundle": _Runner(frozenset({"exec"})),
    "mise": _Runner(frozenset({"exec", "x"}), strings=frozenset({"-c", "--command"})),
    "asdf": _Runner(frozenset({"exec"})),
    "hatch": _Runner(frozenset({"run"})),
    "pdm": _Runner(frozenset({"run"})),
    "rye": _Runner(frozenset({"run"})),
    "devbox": _Runner(frozenset({"run"}), frozenset({"-c", "--config", "-e", "--env-file"})),
    "pixi": _Runner(frozenset({"run", "exec"}), frozenset({"--manifest-path", "-s", "--spec"})),
    "conda": _CONDA,
    "mamba": _CONDA,
    "micromamba": _CONDA,
    "direnv": _Runner(frozenset({"exec"}), own=1),
    "snap": _Runner(frozenset({"run"})),
    "nix-shell": _Runner(
        values=frozenset({"-p", "--packages", "-A", "--attr", "-I", "--arg", "--argstr"}),
        strings=frozenset({"--run", "--command"}),
    ),
}
"""Runners that put their own program folders first, and how their words name the command."""
_RUNNER_VALUE_OPTIONS = frozenset(
    {
        "-p",
        "--package",
        "-c",
        "--call",
        "--with",
        "--python",
        "--from",
        "--env",
        "-e",
        "-C",
        "--cwd",
        "--directory",
    }
)
_PACKAGES = {
    "aws-cdk": "cdk",
    "cdktf-cli": "cdktf",
    "awscli": "aws",
    "awscli2": "aws",
    "azure-cli": "az",
    "google-cloud-sdk": "gcloud",
    "kubernetes-helm": "helm",
    "opentofu": "tofu",
    "pulumi-bin": "pulumi",
}
"""Packages (npm, nixpkgs) whose program has another name."""
_TENV_TOOLS = {"tf": "terraform", "tofu": "tofu", "tg": "terragrunt", "terragrunt": "terragrunt"}
_TENV_OWN = frozenset(
    {"install", "uninstall", "use", "list", "list-remote", "detect", "reset", "constraint", "help"}
)
"""tenv's own commands for a tool (versions); any other word runs the tool with it."""
_PYTHON = re.compile(r"^(?:python[0-9.]*|pypy[0-9.]*)$")
_PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_PYTHON_MODULES = {"awscli": "aws", "azure.cli": "az"}
_PYTHON_SCRIPTS = {"gcloud.py": "gcloud", "gsutil.py": "gsutil", "bq.py": "bq"}
"""How Python runs a cloud CLI's own code (``python3 -m awscli``, the Cloud SDK's
``lib/gcloud.py``): the CLI, under no name a gate answers to."""
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_LIFECYCLE = frozenset({"start", "test", "stop", "restart"})
_CONTAINERS = frozenset({"docker", "podman", "nerdctl", "finch"})
_CONTAINER_RUNS = frozenset({"run", "exec", "create", "start", "compose"})
_REMOTE = frozenset({"ssh", "mosh"})
_SSH_VALUE_OPTIONS = frozenset(
    {
        "-i",
        "-p",
        "-o",
        "-l",
        "-F",
        "-J",
        "-L",
        "-R",
        "-D",
        "-b",
        "-c",
        "-E",
        "-e",
        "-m",
        "-O",
        "-Q",
        "-S",
        "-W",
        "-w",
        "-B",
    }
)
_LATER = frozenset({"at", "batch", "crontab", "systemd-run", "tmux", "screen"})
_PART = re.compile(r"[A-Za-z0-9]+")


def runner_command(words: list[str]) -> list[str] | None:
    """The command a runner runs with its own program folders first (``npx cdk deploy`` ->
    ``cdk deploy``, ``nix run nixpkgs#terraform -- apply`` -> ``terraform apply``), or None."""
    name = os.path.basename(words[0]) if words else ""
    if name == "nix":
        return _nix(words[1:])
    if name == "nix-shell":  # its words are packages and nix files; it runs only --run's
        return None
    if name == "proto":  # proto run TOOL [VERSION] [-- ARGS]
        positionals = [word for word in words[1:] if not word.startswith("-")]
        if positionals[:1] != ["run"] or len(positionals) < 2:
            return None
        rest = words[words.index("--") + 1 :] if "--" in words else []
        return [positionals[1], *rest]
    if name == "tenv":  # tenv tf apply: the tool, unless tenv's own version commands
        if len(words) > 2 and words[1] in _TENV_TOOLS and words[2] not in _TENV_OWN:
            return [_TENV_TOOLS[words[1]], *words[2:]]
        return None
    start = _runner_start(words)
    if start is None:
        return None
    runner, index = start
    if name == "mise" and "--" in words[index:]:  # mise x terraform@1.9 -- terraform apply
        return _program(words[words.index("--", index) + 1 :])
    own = runner.own
    while index < len(words):
        word = words[index]
        if word == "--":
            index += 1
            break
        if word.startswith("-"):
            takes_value = word in _RUNNER_VALUE_OPTIONS | runner.values | runner.strings
            index += 2 if takes_value else 1
        elif own:
            own, index = own - 1, index + 1
        else:
            break
    return _program(words[index:])


def runner_string(words: list[str]) -> str | None:
    """The command line a runner runs from its option's string (``nix-shell -p terraform
    --run 'terraform apply'``, ``mise x -c '...'``, ``npx -c '...'``), or None."""
    start = _runner_start(words)
    if start is None:
        return None
    runner, index = start
    for position, word in enumerate(words[index:-1], index):
        if word == "--":
            break
        if word in runner.strings:
            return words[position + 1]
    return None


def interpreted_cli(words: list[str]) -> list[str] | None:
    """The cloud CLI an interpreter runs from its own code (``python3 -m awscli ec2 ...`` ->
    ``aws ec2 ...``, ``python3 .../lib/gcloud.py compute ...`` -> ``gcloud compute ...``),
    or None."""
    if not words or not _PYTHON.match(os.path.basename(words[0])):
        return None
    index = 1
    while index < len(words) and words[index].startswith("-"):
        word = words[index]
        if word == "-m" and index + 1 < len(words):
            cli = _PYTHON_MODULES.get(words[index + 1])
            return [cli, *words[index + 2 :]] if cli else None
        if word.startswith("-m") and len(word) > 2:  # -mawscli
            cli = _PYTHON_MODULES.get(word[2:])
            return [cli, *words[index + 1 :]] if cli else None
        if word.startswith("-c") or word == "-":
            return None  # a string or stdin: the guard's path scan reads those
        index += 2 if word in _PYTHON_VALUE_OPTIONS else 1
    if index < len(words) and (cli := _PYTHON_SCRIPTS.get(os.path.basename(words[index]))):
        return [cli, *words[index + 1 :]]
    return None


def _runner_start(words: list[str]) -> tuple[_Runner, int] | None:
    """The runner ``words`` start with, and where its words after the subcommand start."""
    runner = _RUNNERS.get(os.path.basename(words[0]) if words else "")
    if runner is None:
        return None
    if runner.subcommands is None:
        return runner, 1
    positionals = [i for i, word in enumerate(words[1:], 1) if not word.startswith("-")]
    for subcommand in runner.subcommands:
        parts = subcommand.split()
        if [words[i] for i in positionals[: len(parts)]] == parts:
            return runner, positionals[len(parts) - 1] + 1
    return None


def _program(rest: list[str]) -> list[str] | None:
    """The command, its program named as installed (``aws-cdk@2 deploy`` -> ``cdk deploy``)."""
    if rest and "@" in rest[0] and not rest[0].startswith("@"):  # npx aws-cdk@2 deploy
        rest = [rest[0].split("@", 1)[0], *rest[1:]]
    if rest and rest[0] in _PACKAGES:
        rest = [_PACKAGES[rest[0]], *rest[1:]]
    return rest or None


def _nix(args: list[str]) -> list[str] | None:
    """``nix shell PKG... -c CMD``, ``nix develop -c CMD``: the command; ``nix run
    nixpkgs#terraform -- apply``: the package's program with the arguments."""
    positionals = [i for i, word in enumerate(args) if not word.startswith("-")]
    if not positionals:
        return None
    subcommand = args[positionals[0]]
    if subcommand in ("shell", "develop", "env"):
        for index, word in enumerate(args):
            if word in ("-c", "--command"):
                return args[index + 1 :] or None
        return None
    if subcommand == "run" and len(positionals) > 1:
        installable = args[positionals[1]]
        rest = args[positionals[1] + 1 :]
        if rest[:1] == ["--"]:
            rest = rest[1:]
        package = re.split(r"[#.]", installable)[-1]  # nixpkgs#terraform, nixpkgs.terraform
        return _program([re.sub(r"_[0-9_]+$", "", package), *rest])  # terraform_1 -> terraform
    return None


def package_script(words: list[str], cwd: Path | None) -> tuple[str, str] | None:
    """(name, text) of the package.json script ``npm run NAME`` (``yarn NAME``, ``npm test``)
    runs, its package's program folder first; None when there is none."""
    name = os.path.basename(words[0]) if words else ""
    if name not in _PACKAGE_MANAGERS or cwd is None:
        return None
    args = [word for word in words[1:] if not word.startswith("-")]
    if args[:1] in (["run"], ["run-script"]):
        target = args[1] if len(args) > 1 else None
    elif args[:1] and (args[0] in _LIFECYCLE or name in ("yarn", "pnpm", "bun")):
        target = args[0]
    else:
        target = None
    if target is None:
        return None
    try:
        scripts = json.loads((cwd / "package.json").read_text(encoding="utf-8")).get("scripts")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(scripts, dict):
        return None
    text = "\n".join(
        str(scripts[key])
        for key in (f"pre{target}", target, f"post{target}")
        if isinstance(scripts.get(key), str)
    )
    return (f"package.json's {target} script", text) if text else None


def activated_clis(words: list[str], cwd: Path | None) -> list[str]:
    """The infrastructure CLIs in the ``bin`` of a virtualenv ``source .venv/bin/activate``
    puts before the gates."""
    if len(words) < 2 or os.path.basename(words[0]) not in ("source", "."):
        return []
    script = words[1]
    if not os.path.basename(script).startswith("activate"):
        return []
    folder = Path(os.path.expanduser(os.path.dirname(script) or "."))
    if not folder.is_absolute():
        if cwd is None:
            return []
        folder = cwd / folder
    return sorted(name for name in GATED if (folder / name).exists())


def elsewhere(words: list[str]) -> str | None:
    """Why ``words`` runs an infrastructure CLI where no gate stands (another machine, a
    container, later), or None."""
    name = os.path.basename(words[0]) if words else ""
    rest = words[1:]
    if name in _CONTAINERS and set(rest) & _CONTAINER_RUNS and _names_a_cli(rest):
        return "in a container, where no gate stands"
    if name in _REMOTE and _remote_command(rest):
        return "on another machine, where no gate stands"
    if name in _LATER and (
        _names_a_cli(rest) or name in ("at", "batch") or (name == "crontab" and "-l" not in rest)
    ):
        return "later, outside this call, when its gate cannot ask"
    return None


def _remote_command(args: list[str]) -> bool:
    """Whether ``ssh ARGS`` runs a command there (a word after the host)."""
    positionals = 0
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _SSH_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            positionals += 1
    return positionals > 1


def _names_a_cli(words: list[str]) -> bool:
    """A word, or a part of one (``hashicorp/terraform:1.9``), is an infrastructure CLI."""
    return any(
        word in GATED or any(part in GATED for part in _PART.findall(word)) for word in words
    )
