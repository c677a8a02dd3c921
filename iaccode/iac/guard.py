"""The text reader: what in a bash command line changes real infrastructure, read before it runs.

The gates (:mod:`iaccode.gate`) see every infrastructure CLI the command runs by name, after
every expansion, whatever started it. This reader is for the rest, and to word the question
before the command starts:

- a CLI named on the line with a changing verb (``cd infra && terraform apply``; the shell
  reader :mod:`iaccode.iac.shell` looks through wrappers and nested strings, the table
  :mod:`iaccode.iac.clis` reads the verb): asked about before the command starts, and the gate
  then runs that change without asking again (``Finding.gate_sees``);
- what a gate cannot see: a CLI run by its path (``/usr/local/bin/terraform apply``, a path in a
  script or an interpreter's string), a line that changes ``PATH`` so that a CLI may be found
  before the gate (``PATH=/usr/bin terraform``, ``env -i``, ``command -p``, ``export PATH=``),
  a line that looks for the copies behind the gate (``type -P -a terraform``, ``which -a``,
  ``/proc/<pid>/exe``), a program it cannot name followed by a changing verb (``./tfx apply``,
  ``$TERRAFORM_BIN destroy``), and the same shapes in the scripts the line runs (``sh x.sh``,
  ``./deploy.sh``, ``make``'s Makefile). Each asks, saying that it cannot tell.

A program named through a variable is looked up in the environment the command gets (``$TF
apply`` with ``TF=tofu`` is ``tofu apply``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from attrs import field, frozen

from iaccode.iac.clis import GATED, classify
from iaccode.iac.elsewhere import activated_clis, elsewhere, package_script, runner_command
from iaccode.iac.shell import ASSIGNMENT, TOO_DEEP, Simple, shell_script, simple_commands


@frozen
class Finding:
    what: str
    """The change (``terraform apply``), or what the reader cannot tell and why."""
    gate_sees: bool = False
    """A gate will see this run: allowing the line lets the gate run this change unasked."""
    cannot_tell: bool = False
    """The reader cannot tell what runs: the question says so."""
    argv: tuple[str, ...] | None = None
    """For a change a gate will see: the exact argv the CLI gets, when the line spells it out
    (no variable, substitution or glob): allowing the line lets the gate run that argv, and
    only that, without asking again."""
    cli: str | None = field(default=None, eq=False)
    """For a change a gate will see: the CLI (``terraform``), whose handler may ask itself."""


CHANGING_VERBS = frozenset(
    {
        "apply",
        "destroy",
        "delete",
        "deploy",
        "up",
        "install",
        "upgrade",
        "uninstall",
        "rollback",
        "import",
        "taint",
        "scale",
        "drain",
        "patch",
        "replace",
        "remove",
        "sync",
        "refresh",
        "create-stack",
        "update-stack",
        "delete-stack",
        "execute-change-set",
        "terminate-instances",
        "apply-all",
        "destroy-all",
        "run-all",
    }
)
"""The words after a program we cannot name that make its command line count as a change."""
_BUILD_WRAPPERS = frozenset(
    {"gradlew", "mvnw", "configure", "mill", "sbt", "bazel", "bazelisk", "pants", "manage.py"}
)
"""Programs run by path whose verbs are a build's (``./gradlew install``), not a deploy's."""
_UNREAD = re.compile(r"[$`*?\[{~]")
"""A word the shell still expands: the argv the CLI gets is not this word."""
_VARIABLE = re.compile(r"^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})$")
_NAMES = "|".join(re.escape(name) for name in sorted(GATED, key=len, reverse=True))
_PATH_MENTION = re.compile(
    rf"(?:^|(?<=[\s'\"=(:;|&`,\[{{<>]))((?:[\w.~$@{{}}+-]*/)+)({_NAMES})(?=$|[\s'\");|&`,\]}}>])"
)
_LOOKUPS = re.compile(
    r"\btype\s+(?:-\w+\s+)*-\w*[aP]|\bwhich\s+(?:-\w+\s+)*-\w*a|\bwhereis\b|\blocate\b"
    r"|/proc/[^;&|\n]*?/(?:exe|root)\b|\bcompgen\s+-c"
    rf"|\bfind\b[^;&|\n]*-(?:i?name|path|regex)\s+['\"]?[*./]*(?:{_NAMES})\b"
)
_LOOKUP = (
    r"\$\(\s*(?:command\s+-[vV]|which|type\s+-[pPa]+|whence)\s+(?:-\w+\s+)*[\"']?"
    rf"(?:(?:{_NAMES})\b|\$)"
)
_TAMPERING = re.compile(
    r"IAC_CODE_GATE|iaccode-gates|\$\{PATH[%#/:]|environ\[\s*['\"]PATH['\"]\s*\]"
    r"|getenv\(\s*['\"]PATH|ENV\[['\"]PATH|process\.env\.PATH"
    rf"|\b(?:rm|mv|chmod|chattr|chown|truncate|unlink|shred|ln|install|cp|tee|dd|sed\s+-i)\b"
    rf"[^;&|\n]*{_LOOKUP}|>\s*[\"']?{_LOOKUP}|\bdirname\s+[\"']?{_LOOKUP}"
)
"""A line that names the gates, or reaches for them: the gates' folder or variables, PATH
taken apart, or a program's path looked up to delete, move or overwrite it."""
_PATH_TEXT = re.compile(r"""(?:^|(?<=[\s;&|(`'"=]))PATH=("[^"]*"|'[^']*'|[^\s;&|'"`)]*)""")
"""A PATH assignment anywhere in the text: in a string a script is written from, too."""
_SCRIPT_BYTES = 256 * 1024
"""Longest script the reader opens to look inside; longer ones are read up to here."""
_SCRIPT_DEPTH = 2
_MAKEFILES = {
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "gmake": ("GNUmakefile", "makefile", "Makefile"),
    "just": ("justfile", "Justfile", ".justfile"),
    "task": ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml"),
}


def infra_changes(
    command: str,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    gates: Path | None = None,
) -> list[Finding]:
    """What in ``command`` changes (or may change) real infrastructure; empty: nothing.

    ``env``: the environment the command gets (variables naming programs, ``HOME``); ``cwd``
    where it runs (scripts it runs, folders a new PATH names); ``gates``: the folder of gates
    on its PATH (a path into it is a gate, not a real CLI)."""
    env = os.environ if env is None else env
    reader = _Reader(env, cwd, gates)
    reader.read(command, 0)
    unique: dict[str, Finding] = {}
    for finding in reader.findings:
        unique.setdefault(finding.what, finding)
    return list(unique.values())


def infra_change(command: str, **context: object) -> str | None:
    """The first of :func:`infra_changes`, or None (for logs and tests)."""
    found = infra_changes(command, **context)  # type: ignore[arg-type]
    return found[0].what if found else None


class _Reader:
    def __init__(self, env: Mapping[str, str], cwd: Path | None, gates: Path | None) -> None:
        self.env, self.cwd, self.gates = env, cwd, gates
        self.findings: list[Finding] = []

    def read(
        self, command: str, depth: int, script: str | None = None, bins_first: bool = False
    ) -> None:
        """Add what ``command`` changes. ``bins_first``: it runs with other program folders
        before the gates (a package.json script)."""
        simples = list(simple_commands(command))
        path_change = self._path_change(simples)
        programs: set[str] = set()
        for simple in simples:
            if simple.words == [TOO_DEEP]:
                self._add(Finding("a deeply nested shell command", cannot_tell=True), script)
                continue
            if not simple.words:
                continue
            programs.add(simple.words[0])
            self._command(simple, path_change is not None or bins_first, script)
            self._elsewhere(simple.words, script)
            if depth < _SCRIPT_DEPTH and (inner := self._script_of(simple.words)) is not None:
                self.read(inner[1], depth + 1, inner[0])
            if (
                depth < _SCRIPT_DEPTH
                and (found := package_script(simple.words, self.cwd)) is not None
            ):
                self.read(found[1], depth + 1, found[0], bins_first=True)
        if path_change is None:  # a script the line writes, an interpreter's string
            path_change = next(
                (
                    f"PATH={m.group(1)}"
                    for m in _PATH_TEXT.finditer(command)
                    if self._dangerous_path(m.group(1).strip("'\""))
                ),
                None,
            )
        if path_change is not None:
            self._add(
                Finding(
                    f"{path_change} (a changed PATH: what the line runs may not pass the gate)",
                    cannot_tell=True,
                ),
                script,
            )
        for mention in _PATH_MENTION.finditer(command):
            path = mention.group(0)
            if path not in programs and not self._is_gate_or_folder(path):
                self._add(
                    Finding(
                        f"{path} (an infrastructure CLI named by its path, which "
                        "the gate cannot watch)",
                        cannot_tell=True,
                    ),
                    script,
                )
        if (tamper := _TAMPERING.search(command)) is not None:
            self._add(
                Finding(
                    f"{tamper.group(0).strip()} (reaches for the gates in front of "
                    "the infrastructure CLIs)",
                    cannot_tell=True,
                ),
                script,
            )
        if (lookup := _LOOKUPS.search(command)) is not None:
            self._add(
                Finding(
                    f"{lookup.group(0).strip()} (looks for the programs behind the gates)",
                    cannot_tell=True,
                ),
                script,
            )

    def _elsewhere(self, words: list[str], script: str | None) -> None:
        """Runners with program folders of their own, virtualenvs, containers, other
        machines, later."""
        line = " ".join(words)
        shown = line if len(line) <= 80 else line[:79] + "…"
        if (inner := runner_command(words)) is not None:
            self._command(Simple(inner), True, script)  # their folders come first: gate-blind
        if (why := elsewhere(words)) is not None:
            self._add(Finding(f"{shown} (runs {why})", cannot_tell=True), script)

    def _add(self, finding: Finding, script: str | None) -> None:
        if script is not None:  # only what a gate cannot see counts from a script
            if finding.gate_sees:
                return
            finding = Finding(f"{finding.what}, in {script}", False, True)
        self.findings.append(finding)

    def _command(self, simple: Simple, path_changed: bool, script: str | None) -> None:
        program, args = simple.words[0], simple.words[1:]
        name = os.path.basename(program)
        if program.startswith(("$", "`")):
            self._through_variable(program, args, script)
        elif "/" in program:
            in_gates = self._is_gate_or_folder(program)
            if name in GATED:
                change = classify(name, args)
                if change is not None:
                    self._add(
                        Finding(
                            change.label, in_gates and not path_changed, change.unknown, cli=name
                        ),
                        script,
                    )
                elif not in_gates and any("$" in arg or "`" in arg for arg in args):
                    self._add(
                        Finding(
                            f"{program} {' '.join(args)} (an infrastructure CLI "
                            "named by its path, with arguments only the shell "
                            "knows)",
                            cannot_tell=True,
                        ),
                        script,
                    )
            elif name not in _BUILD_WRAPPERS and (verb := _changing_verb(args)):
                self._add(
                    Finding(
                        f"{program} {verb} (a program iac-code cannot name, with a changing verb)",
                        cannot_tell=True,
                    ),
                    script,
                )
        elif name in GATED:
            change = classify(name, args)
            if change is not None:
                seen = not (path_changed or simple.clean_env)
                exact = seen and not any(_UNREAD.search(word) for word in args)
                self._add(
                    Finding(
                        change.label, seen, change.unknown, (name, *args) if exact else None, name
                    ),
                    script,
                )

    def _through_variable(self, program: str, args: list[str], script: str | None) -> None:
        """``$TF apply``: the program the environment names, else a guess from the verbs."""
        variable = _VARIABLE.match(program)
        value = self.env.get(variable.group(1) or variable.group(2), "") if variable else ""
        words = value.split()
        if words and os.path.basename(words[0]) in GATED:
            self._command(Simple([*words, *args]), False, script)
        elif verb := _changing_verb(args, anywhere=True):
            self._add(
                Finding(
                    f"{program} {verb} (a program named through a variable or a substitution)",
                    cannot_tell=True,
                ),
                script,
            )

    def _is_gate_or_folder(self, path: str) -> bool:
        """Whether ``path`` is in the gates' folder, or is a folder (``infra/terraform``)."""
        expanded = self._expand(path)
        if expanded is None:
            return False
        if self.gates is not None and os.path.dirname(expanded) == str(self.gates):
            return True
        return os.path.isdir(expanded)

    def _expand(self, path: str) -> str | None:
        """``path`` as a real path (``~``, ``$HOME``, ``$PWD`` and relative ones), or None when
        it holds a substitution or another variable."""
        home = self.env.get("HOME", "")
        path = path.replace("${HOME}", home).replace("$HOME", home)
        if self.cwd is not None:
            path = path.replace("${PWD}", str(self.cwd)).replace("$PWD", str(self.cwd))
        if "$" in path or "`" in path:
            return None
        path = os.path.expanduser(path)
        if not os.path.isabs(path):
            if self.cwd is None:
                return None
            path = os.path.join(self.cwd, path)
        return os.path.realpath(path)

    def _path_change(self, simples: list[Simple]) -> str | None:
        """How the line changes PATH so that a CLI may be found before the gate, or None."""
        for simple in simples:
            if simple.clean_env:
                return "an emptied environment or the default PATH (env -i, command -p)"
            if clis := activated_clis(simple.words, self.cwd):
                return f"{' '.join(simple.words[:2])}, a virtualenv whose bin has {', '.join(clis)}"
            assignments = list(simple.assignments)
            words = simple.words
            if words and words[0] in ("export", "declare", "typeset", "local", "readonly"):
                assignments += [word for word in words[1:] if ASSIGNMENT.match(word)]
            if words[:2] == ["unset", "PATH"] or (words[:1] == ["hash"] and "-p" in words):
                return " ".join(words)
            for assignment in assignments:
                name, _, value = assignment.partition("=")
                if name == "PATH" and self._dangerous_path(value):
                    return assignment
        return None

    def _dangerous_path(self, value: str) -> bool:
        """A new PATH that may find a CLI before the gate: it drops ``$PATH``, or puts first a
        folder we cannot read (a substitution) or one that holds an infrastructure CLI."""
        parts = value.split(":")
        keeps = [part for part in parts if part.strip("\"'") in ("$PATH", "${PATH}")]
        if not keeps:
            return not (self.gates is not None and parts[:1] == [str(self.gates)])
        for part in parts[: parts.index(keeps[0])]:
            folder = self._expand(part.strip("\"'")) if part else None
            if folder is None or any(os.path.exists(os.path.join(folder, name)) for name in GATED):
                return True
        return False

    def _script_of(self, words: list[str]) -> tuple[str, str] | None:
        """(name, text) of the script or Makefile ``words`` runs, when there is one to read."""
        name = os.path.basename(words[0])
        candidates: list[str] = []
        if (script := shell_script(words)) is not None:
            if os.path.basename(script).startswith("activate"):
                return None  # a virtualenv: what its bin puts first is activated_clis'
            candidates = [script]
        elif name in _MAKEFILES:
            folder = next(
                (
                    words[i + 1]
                    for i, w in enumerate(words[:-1])
                    if w in ("-C", "--directory", "-d", "--dir")
                ),
                ".",
            )
            given = next(
                (
                    words[i + 1]
                    for i, w in enumerate(words[:-1])
                    if w in ("-f", "--file", "--makefile", "--justfile", "-t", "--taskfile")
                ),
                None,
            )
            candidates = (
                [given] if given else [os.path.join(folder, file) for file in _MAKEFILES[name]]
            )
        elif "/" in words[0]:
            candidates = [words[0]]
        for candidate in candidates:
            path = self._expand(candidate)
            if path is not None and os.path.isfile(path):
                try:
                    with open(path, "rb") as file:
                        data = file.read(_SCRIPT_BYTES)
                except OSError:
                    continue
                if b"\0" not in data[:4096]:  # a binary program is no script
                    return candidate, data.decode("utf-8", "replace")
        return None


def _changing_verb(args: list[str], anywhere: bool = False) -> str | None:
    positionals = [word for word in args if not word.startswith("-")]
    for word in positionals if anywhere else positionals[:2]:
        if word in CHANGING_VERBS:
            return word
    return None


def describe(findings: list[Finding]) -> Iterator[str]:
    """One line per finding, for the question."""
    for finding in findings:
        yield finding.what
