"""Paths no write reaches without a question, in every mode (``bypass`` and *Always allow*
included): the agent's own files, and other programs' configuration and credentials.

    Protected.of(config).reason(path)            -> why the path is protected, or None
    Protected.of(config).command_reason(line, cwd) -> the same for a path a bash line names

What is protected (real paths, compared without regard to case, so ``~/.SSH`` on a
case-insensitive disk is ``~/.ssh``; a symlink or ``..`` is judged where it leads):

- iac-code's own files: ``$IAC_CODE_HOME`` (config.toml, AGENTS.md, sessions, their saved
  output) and the ``[serve] token_file``;
- in the home folder: credentials and settings of other tools (``~/.ssh``, ``~/.aws``,
  ``~/.kube``, ``~/.config/gcloud``, ...), shell start-up files, git's configuration, editors'
  and other agents' settings (:data:`HOME_ENTRIES`);
- anywhere: a repository's ``.git/`` (its hooks and config run programs), and the folders of
  editor and agent settings a repository carries (``.vscode/``: tasks that run when a folder
  is opened; ``.claude/``: hooks), ``.envrc`` (direnv runs it);
- ``/etc`` and the cron spool (an agent running as root).

A bash command is not confined: it can write anything the user can. Its line is read for the
paths it names (``>> ~/.bashrc``, ``tee $HOME/.ssh/config``, ``cp x .git/hooks/``); one that
names a protected path asks in every mode too. A command that hides the path (a variable it
sets, a ``cd`` first, a script) is not recognised: ``bypass`` is for sandboxes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath

from attrs import frozen

from iaccode.config import Config

_CREDENTIALS = "another program's credentials and settings"
_SHELL = "a shell start-up file (what it holds runs in every new shell)"
_GIT = "git's configuration (it names programs git runs)"
_EDITOR = "an editor's or another agent's settings (they can run commands)"

HOME_ENTRIES: dict[str, str] = {
    **dict.fromkeys([".ssh", ".aws", ".kube", ".config/gcloud", ".aliyun", ".azure",
                     ".terraform.d", ".terraformrc", ".tofurc", ".docker", ".oci", ".gnupg",
                     ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".config/gh",
                     ".config/pip", ".cfnlintrc", ".tflint.d", ".pulumi", ".helm",
                     ".config/helm"], _CREDENTIALS),
    **dict.fromkeys([".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
                     ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".config/fish",
                     ".cshrc", ".tcshrc", ".kshrc", ".xprofile", ".xinitrc", ".pam_environment",
                     ".config/environment.d", ".config/autostart", ".config/systemd"], _SHELL),
    **dict.fromkeys([".gitconfig", ".config/git"], _GIT),
    **dict.fromkeys([".vscode", ".vscode-server", ".config/Code", ".cursor", ".config/Cursor",
                     ".config/zed", ".config/JetBrains", ".vimrc", ".config/nvim", ".emacs",
                     ".emacs.d", ".config/emacs", ".claude", ".claude.json", ".codex",
                     ".gemini", ".config/opencode", ".continue", ".aider.conf.yml"], _EDITOR),
}
"""Below the home folder: what each protected entry is (the question says it)."""

ANYWHERE: dict[str, str] = {
    ".git": "a repository's git folder (its hooks and configuration run programs)",
    ".vscode": _EDITOR, ".idea": _EDITOR, ".zed": _EDITOR, ".claude": _EDITOR,
    ".cursor": _EDITOR, ".gemini": _EDITOR, ".codex": _EDITOR,
    ".envrc": "a direnv file (direnv runs it when you enter the folder)",
}
"""A path with one of these names as a component, wherever it is."""

SYSTEM: dict[str, str] = {"/etc": "the system's configuration",
                          "/var/spool/cron": "scheduled jobs"}

_WORD_BREAKS = re.compile(r"""[\s;|&<>()`'"=,]+""")
_HOME_VARIABLE = re.compile(r"^(\$\{?HOME\}?|~)(?=/|$)")
_AGENT_VARIABLE = re.compile(r"^\$\{?IAC_CODE_HOME\}?(?=/|$)")


def _key(path: PurePath) -> tuple[str, ...]:
    """The path's components without regard to case (``~/.SSH`` is ``~/.ssh`` on macOS)."""
    return tuple(part.casefold() for part in path.parts)


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(path)))


@frozen
class Protected:
    """The protected places of one agent: absolute, real paths -> why."""

    places: dict[tuple[str, ...], str]
    agent_home: Path
    user_home: Path

    @classmethod
    def of(cls, config: Config, user_home: Path | None = None) -> Protected:
        home = _real(user_home or Path.home())
        agent = _real(config.home)
        places = {_key(home / rel): why for rel, why in HOME_ENTRIES.items()}
        places.update({_key(_real(path)): why for path, why in SYSTEM.items()})
        places[_key(agent)] = ("iac-code's own files (its configuration, instructions, "
                               "sessions and their saved output)")
        token = config.serve.token_path
        if token is not None:
            places[_key(_real(token))] = "the token file of iaccode serve"
        return cls(places, agent, home)

    def what(self, path: Path) -> str | None:
        """What protected place ``path`` (a real path) is in, or None."""
        key = _key(path)
        for length in range(len(key), 0, -1):
            what = self.places.get(key[:length])
            if what is not None:
                return what
        named = next((part for part in path.parts if part.casefold() in ANYWHERE), None)
        return None if named is None else f"inside {named}, {ANYWHERE[named.casefold()]}"

    def reason(self, path: Path) -> str | None:
        """Why a write to ``path`` (a real path) must ask, or None."""
        what = self.what(path)
        return None if what is None else f"{path}: {what}"

    def command_reason(self, command: str, cwd: Path) -> str | None:
        """Why a bash line must ask: the first protected path it names, or None."""
        for word in _WORD_BREAKS.split(command):
            if not ("/" in word or word.startswith((".", "~", "$"))):
                continue
            word = _HOME_VARIABLE.sub(lambda _: str(self.user_home), word)
            word = _AGENT_VARIABLE.sub(lambda _: str(self.agent_home), word)
            if word.startswith("$"):
                continue  # a variable we cannot know
            path = _real(cwd / word)
            what = self.what(path)
            if what is not None:
                return f"the command names {path}: {what}"
        return None
