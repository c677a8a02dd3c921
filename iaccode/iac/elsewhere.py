"""What a command line runs where the gates cannot follow, for the text reader
(:mod:`iaccode.iac.guard`):

- runners that put their own program folders before ``PATH`` (``npx cdk deploy``, ``npm run
  deploy`` whose script runs ``cdk``, ``uv run``, ``poetry run``, ``bundle exec``...): a CLI
  installed there runs without its gate;
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

from iaccode.iac.clis import GATED

_RUNNERS: dict[str, frozenset[str] | None] = {
    "npx": None,
    "bunx": None,
    "pnpx": None,
    "uvx": None,
    "npm": frozenset({"exec", "x"}),
    "pnpm": frozenset({"exec", "dlx"}),
    "yarn": frozenset({"exec", "dlx"}),
    "bun": frozenset({"x"}),
    "uv": frozenset({"run"}),
    "poetry": frozenset({"run"}),
    "pipenv": frozenset({"run"}),
    "pipx": frozenset({"run"}),
    "bundle": frozenset({"exec"}),
    "mise": frozenset({"exec", "x"}),
    "asdf": frozenset({"exec"}),
    "hatch": frozenset({"run"}),
    "pdm": frozenset({"run"}),
    "rye": frozenset({"run"}),
}
"""Runner -> the subcommand that runs a program (None: the runner itself does)."""
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
    ``cdk deploy``), or None."""
    name = os.path.basename(words[0]) if words else ""
    if name not in _RUNNERS:
        return None
    subcommands = _RUNNERS[name]
    index = 1
    if subcommands is not None:
        positionals = [i for i, word in enumerate(words[1:], 1) if not word.startswith("-")]
        if not positionals or words[positionals[0]] not in subcommands:
            return None
        index = positionals[0] + 1
    while index < len(words) and words[index].startswith("-"):
        if words[index] == "--":
            index += 1
            break
        index += 2 if words[index] in _RUNNER_VALUE_OPTIONS else 1
    rest = words[index:]
    if rest and "@" in rest[0] and not rest[0].startswith("@"):  # npx aws-cdk@2 deploy
        rest = [rest[0].split("@", 1)[0], *rest[1:]]
    if rest and rest[0] in ("aws-cdk", "cdktf-cli"):  # the packages of cdk and cdktf
        rest = [{"aws-cdk": "cdk", "cdktf-cli": "cdktf"}[rest[0]], *rest[1:]]
    return rest or None


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
