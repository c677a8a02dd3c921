"""Paths no write reaches without a question, in every mode (``bypass`` and *Always allow*
included): the agent's own files, and other programs' configuration and credentials.

    Protected.of(config).reason(path)            -> why the path is protected, or None
    Protected.of(config).command_reason(line, cwd) -> the same for a path a bash line names

What is protected (real paths, compared without regard to case, so ``~/.SSH`` on a
case-insensitive disk is ``~/.ssh``; a symlink or ``..`` is judged where it leads, and so is
each protected place: a ``~/.ssh`` or ``~/.bashrc`` that is a symlink into ``~/dotfiles``, as
GNU stow makes them, protects its target):

- iac-code's own files: ``$IAC_CODE_HOME`` (config.toml, AGENTS.md, sessions, their saved
  output), the ``[serve] token_file``, and the Python packages it runs from (a ``.pth`` file
  there runs at every start of the interpreter);
- in the home folder (``$HOME``, and the account's own, ``~user``, where they differ):
  credentials and settings of other tools (``~/.ssh``, ``~/.aws``, ``~/.kube``,
  ``~/.config/gcloud``, ...), shell start-up files and what they read, git's configuration,
  editors' and other agents' settings (:data:`HOME_ENTRIES`);
- the folders on ``PATH`` outside the project (a program put there runs in place of the one
  meant);
- anywhere: a repository's ``.git/`` (its hooks and config run programs), the project's git
  folder where it lives elsewhere (``.git`` a file: ``gitdir: ...``), a folder that holds
  or with the write would hold ``HEAD``, ``objects/`` and ``refs/`` (git takes it for a
  repository of its own, config and hooks included, before the ``.git`` above), the folders of
  editor and agent settings a repository carries (``.vscode/``: tasks that run when a folder
  is opened; ``.claude/``: hooks), ``.envrc`` (direnv runs it);
- ``/etc`` and the cron spool (an agent running as root).

A bash command is not confined: it can write anything the user can. Its line is read for the
paths it names, as a shell reads its words (quotes joined, ``~`` and ``~user``, ``$HOME``,
braces and globs expanded: ``>> "$HOME"/.bashrc``, ``tee $HOME/.ssh/config``, ``cp x
.git/hooks/``); one that names a protected path asks in every mode too. A command that hides
the path (a variable it sets, a ``cd`` first, a script) is not recognised: ``bypass`` is for
sandboxes.
"""

from __future__ import annotations

import glob
import itertools
import os
import re
import shlex
import stat
from collections.abc import Iterator
from pathlib import Path, PurePath

from attrs import frozen

from iaccode.config import Config
from iaccode.context.git import repository_root
from iaccode.host.search.ignore import expand_braces

_CREDENTIALS = "another program's credentials and settings"
_SHELL = "a shell start-up file (what it holds runs in every new shell)"
_GIT = "git's configuration (it names programs git runs)"
_EDITOR = "an editor's or another agent's settings (they can run commands)"

HOME_ENTRIES: dict[str, str] = {
    **dict.fromkeys(
        [
            ".ssh",
            ".aws",
            ".kube",
            ".config/gcloud",
            ".aliyun",
            ".azure",
            ".terraform.d",
            ".terraformrc",
            ".tofurc",
            ".docker",
            ".oci",
            ".config/rclone",
            ".config/doctl",
            ".config/hcloud",
            ".config/linode-cli",
            ".mc",
            ".bluemix",
            ".tccli",
            ".s3cfg",
            ".boto",
            ".gnupg",
            ".netrc",
            ".git-credentials",
            ".npmrc",
            ".pypirc",
            ".config/gh",
            ".config/pip",
            ".cfnlintrc",
            ".tflint.d",
            ".pulumi",
            ".helm",
            ".config/helm",
        ],
        _CREDENTIALS,
    ),
    **dict.fromkeys(
        [
            ".bashrc",
            ".bash_profile",
            ".bash_login",
            ".bash_logout",
            ".profile",
            ".zshrc",
            ".zshenv",
            ".zprofile",
            ".zlogin",
            ".zlogout",
            ".config/fish",
            ".cshrc",
            ".tcshrc",
            ".kshrc",
            ".xprofile",
            ".xinitrc",
            ".pam_environment",
            ".config/environment.d",
            ".config/autostart",
            ".config/systemd",
            ".bash_aliases",
            ".oh-my-zsh",
            ".config/zsh",
            ".inputrc",
            ".tmux.conf",
            ".config/tmux",
            ".config/direnv",
            ".local/share/direnv",
            ".config/mise",
            ".local/share/mise",
            ".ipython",
            ".Rprofile",
            ".local/bin",
            "bin",
        ],
        _SHELL,
    ),
    **dict.fromkeys(
        [
            ".cargo",
            ".m2",
            ".gradle",
            ".gem",
            ".bundle",
            ".pip",
            ".condarc",
            ".yarnrc",
            ".yarnrc.yml",
            ".config/uv",
            ".config/containers",
        ],
        _CREDENTIALS,
    ),
    **dict.fromkeys([".gitconfig", ".config/git"], _GIT),
    **dict.fromkeys(
        [
            ".vscode",
            ".vscode-server",
            ".config/Code",
            ".cursor",
            ".config/Cursor",
            ".config/zed",
            ".config/JetBrains",
            ".vimrc",
            ".config/nvim",
            ".emacs",
            ".emacs.d",
            ".config/emacs",
            ".claude",
            ".claude.json",
            ".codex",
            ".gemini",
            ".config/opencode",
            ".continue",
            ".aider.conf.yml",
        ],
        _EDITOR,
    ),
}
"""Below the home folder: what each protected entry is (the question says it)."""

_GIT_FOLDER_WHY = "its hooks and configuration run programs"
ANYWHERE: dict[str, str] = {
    ".git": f"a repository's git folder ({_GIT_FOLDER_WHY})",
    ".vscode": _EDITOR,
    ".idea": _EDITOR,
    ".zed": _EDITOR,
    ".claude": _EDITOR,
    ".cursor": _EDITOR,
    ".gemini": _EDITOR,
    ".codex": _EDITOR,
    ".envrc": "a direnv file (direnv runs it when you enter the folder)",
}
"""A path with one of these names as a component, wherever it is."""

SYSTEM: dict[str, str] = {"/etc": "the system's configuration", "/var/spool/cron": "scheduled jobs"}

_ON_PATH = "a folder on PATH (a program put there runs in place of the one meant)"
_OWN_PACKAGES = "the Python packages iac-code runs from (a .pth file there runs at every start)"
_GIT_FOLDER = "the project's git folder (its hooks and configuration run programs)"

_WORD_BREAKS = re.compile(r"""[\s;|&<>()`'"=,]+""")
_HOME_VARIABLE = re.compile(r"^(\$\{?HOME\}?|~)(?=/|$)")
_AGENT_VARIABLE = re.compile(r"^\$\{?IAC_CODE_HOME\}?(?=/|$)")
_GLOB = re.compile(r"[*?[]")
MAX_EXPANSIONS = 64
"""Paths one word of a command may expand to (braces, globs) that are looked at."""


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
    on_path: frozenset[tuple[str, ...]] = frozenset()
    """The folders on PATH: a file directly in one is protected (a program found first)."""

    @classmethod
    def of(
        cls, config: Config, user_home: Path | None = None, project: Path | None = None
    ) -> Protected:
        """The places of an agent with ``config``, for the session in ``project`` (whose git
        folder is protected where it lives; PATH folders inside it are not)."""
        home = _real(user_home or Path.home())
        agent = _real(config.home)
        places: dict[tuple[str, ...], str] = {}
        for folder in dict.fromkeys([home, *_account_home()]):
            for rel, why in HOME_ENTRIES.items():
                places.setdefault(_key(folder / rel), why)  # where it is named ...
                places.setdefault(_key(_real(folder / rel)), why)  # ... and where it leads
        for path in _own_packages():
            places.setdefault(_key(path), _OWN_PACKAGES)
        if project is not None and (gitdir := _git_folder(project)) is not None:
            places.setdefault(_key(gitdir), _GIT_FOLDER)
        places.update({_key(_real(path)): why for path, why in SYSTEM.items()})
        places[_key(agent)] = (
            "iac-code's own files (its configuration, instructions, "
            "sessions and their saved output)"
        )
        token = config.serve.token_path
        if token is not None:
            places[_key(_real(token))] = "the token file of iaccode serve"
        return cls(places, agent, home, frozenset(map(_key, _path_folders(project))))

    def what(self, path: Path) -> str | None:
        """What protected place ``path`` (a real path) is in, or None."""
        key = _key(path)
        for length in range(len(key), 0, -1):
            what = self.places.get(key[:length])
            if what is not None:
                return what
        named = next((part for part in path.parts if part.casefold() in ANYWHERE), None)
        if named is not None:
            return f"inside {named}, {ANYWHERE[named.casefold()]}"
        return _ON_PATH if key[:-1] in self.on_path else None

    def reason(self, path: Path) -> str | None:
        """Why a write to ``path`` (a real path) must ask, or None."""
        what = self.what(path) or _hard_linked(path) or _git_folder_made(path)
        return None if what is None else f"{path}: {what}"

    def command_reason(self, command: str, cwd: Path) -> str | None:
        """Why a bash line must ask: the first protected path it names, or None."""
        for word in _words(command):
            if not ("/" in word or word.startswith((".", "~", "$"))):
                continue
            word = _HOME_VARIABLE.sub(lambda _: str(self.user_home), word)
            word = _AGENT_VARIABLE.sub(lambda _: str(self.agent_home), word)
            if word.startswith("$"):
                continue  # a variable we cannot know
            for path in _expanded(os.path.expanduser(word), cwd):  # ~user too
                what = self.what(path)
                if what is not None:
                    return f"the command names {path}: {what}"
        return None


GIT_FOLDER_ENTRIES = ("HEAD", "objects", "refs")
"""What makes a folder a git folder to git, whatever its name."""


def _git_folder_made(path: Path) -> str | None:
    """What ``path`` is when a folder above it has, or with a write there would have, every
    entry of :data:`GIT_FOLDER_ENTRIES`: git, run in or below that folder, takes it for a
    repository and runs what its config and hooks name. The files are plain ones a model
    may write in a project, one at a time; the write that completes them asks."""
    for folder in path.parents:
        made = path.relative_to(folder).parts[0]
        if all(made == name or os.path.lexists(folder / name) for name in GIT_FOLDER_ENTRIES):
            return f"inside {folder}, a git folder ({_GIT_FOLDER_WHY})"
    return None


def _hard_linked(path: Path) -> str | None:
    """What ``path`` is when it is a file with other names (hard links): a write in place
    (the editor's) changes them all, and one may be a protected place (``~/.bashrc`` linked
    into a dotfiles repository). Which one is not looked for: it could be anywhere."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return (
            f"a file with {info.st_nlink - 1} other name(s) (a hard link): writing it "
            "changes them too, and one may be a protected place"
        )
    return None


def _words(command: str) -> Iterator[str]:
    """The words of a bash line that may be paths: split at every quote and operator (what
    ``bash -c '...'`` holds is seen too), and as a shell joins them (``"$HOME"/.bashrc`` is
    one word), each of those split at ``=`` and the like again (``--file=~/.x``)."""
    yield from _WORD_BREAKS.split(command)
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # an open quote: the first split is all there is
        return
    for token in tokens:
        yield token
        yield from _WORD_BREAKS.split(token)


def _expanded(word: str, cwd: Path) -> Iterator[Path]:
    """The real paths ``word`` (relative to ``cwd``) names: each of its brace alternatives,
    each glob's matches (or the word itself, when nothing matches yet)."""
    for pattern in itertools.islice(expand_braces(word), MAX_EXPANSIONS):
        full = os.path.join(cwd, pattern)
        matches = (
            list(itertools.islice(glob.iglob(full), MAX_EXPANSIONS))
            if _GLOB.search(pattern)
            else []
        )
        for path in matches or [full]:
            yield _real(path)


def _account_home() -> list[Path]:
    """The home folder of the account we run as (``~user``), which ``$HOME`` may not be."""
    import pwd

    try:
        return [_real(pwd.getpwuid(os.geteuid()).pw_dir)]
    except (KeyError, OSError):
        return []


def _path_folders(project: Path | None) -> list[Path]:
    """The absolute folders on PATH, real, but those inside ``project``."""
    found = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isabs(entry):
            path = _real(entry)
            if project is None or not (path == project or project in path.parents):
                found.append(path)
    return found


def _own_packages() -> list[Path]:
    """Where the interpreter we run on takes its packages from (site-packages, the user's)."""
    import site
    import sysconfig

    folders = [sysconfig.get_paths().get(name) for name in ("purelib", "platlib")]
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return [_real(folder) for folder in dict.fromkeys(folders) if folder]


def _git_folder(project: Path) -> Path | None:
    """The git folder of the project's repository when its ``.git`` is a file naming one
    that lives elsewhere (``--separate-git-dir``, a worktree: then the main one's too is
    the one that counts, through ``commondir``)."""
    root = repository_root(project)
    if root is None or not (root / ".git").is_file():
        return None
    try:
        with open(root / ".git", encoding="utf-8", errors="replace") as file:
            line = file.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = _real(root / line.removeprefix("gitdir:").strip())
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gitdir
    return _real(gitdir / common) if common else gitdir
