"""The text reader: what in a bash command line changes real infrastructure, read before it runs.

The gates (:mod:`iaccode.gate`) see every infrastructure CLI the command runs by name, after
every expansion, whatever started it. This reader is for the rest, and to word the question
before the command starts:

- a CLI named on the line with a changing verb (``cd infra && terraform apply``; the shell
  reader :mod:`iaccode.iac.shell` looks through wrappers and nested strings, the table
  :mod:`iaccode.iac.clis` reads the verb): asked about before the command starts, and the gate
  then runs that change without asking again (``Finding.gate_sees``);
- what a gate cannot see: a CLI run by its path (``/usr/local/bin/terraform apply``, a path in a
  script or an interpreter's string, a pattern that can name it: ``cp /usr/bin/kube[c]tl kx``,
  a link to it), a line that changes ``PATH`` so that a CLI may be found before the gate
  (``PATH=/usr/bin terraform``, ``env -i``, ``command -p``, ``export PATH=``), a line that
  looks for the copies behind the gate (``type -P -a terraform``, ``which -a``,
  ``/proc/<pid>/exe``), a program it cannot name followed by a changing verb (``./tfx apply``,
  ``$TERRAFORM_BIN destroy``) or by the words of a change a CLI's table knows (``./kx rollout
  undo``, ``./tfx state rm``), a CLI run by a runner or by Python (:mod:`iaccode.iac.elsewhere`:
  ``nix run nixpkgs#terraform -- apply``, ``python3 -m awscli``), and the same shapes in the
  scripts the line runs (``sh x.sh``, ``./deploy.sh``, ``make``'s Makefile). Each asks, saying
  that it cannot tell, or naming the change.

A program named through a variable is looked up in the environment the command gets (``$TF
apply`` with ``TF=tofu`` is ``tofu apply``).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator, Mapping
from fnmatch import fnmatchcase
from pathlib import Path

from attrs import field, frozen

from iaccode.iac.argv import Parsed, Spec, options, parse
from iaccode.iac.clis import CLIS, GATED, classify
from iaccode.iac.elsewhere import (
    activated_clis,
    elsewhere,
    interpreted_cli,
    package_script,
    runner_command,
    runner_string,
)
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
_EVERYDAY_VERBS = options(
    "add build call cancel clean compose convert copy cp create debug del dev disable edit "
    "enable exec execute export extract fail fmt force gc generate get import init insert "
    "invoke lint list load lock login logout migrate mk move mv new package pause policy proxy "
    "prune publish pull push put query rebuild register release reload remove rename reset "
    "restart restore resume revert rm rsync run scp secrets serve set setup shell shutdown "
    "sign signal snapshot ssh start stop submit swap tag test truncate tune un unlock unset "
    "untag update upload verify watch write"
)
"""Verbs of the CLIs' tables that ordinary programs take too (``./build.sh run``, ``bin/rails
generate``): alone, they do not make a program we cannot name one of those CLIs."""
_KUBE_KINDS = options(
    "cm configmap configmaps cj cronjob cronjobs deploy deployment deployments ds daemonset "
    "daemonsets hpa ing ingress ingresses job jobs no node nodes ns namespace namespaces po pod "
    "pods pv pvc rc role rolebinding rs replicaset replicasets sa secret secrets serviceaccount "
    "svc service services sts statefulset statefulsets clusterrole clusterrolebinding"
)
"""Kubernetes resource kinds, as kubectl's commands name them (``deploy/web``, ``create
deployment``)."""
_KUBE_SET = options("env image resources selector serviceaccount subject")
"""What ``kubectl set`` changes."""
_LOCAL_GROUPS = frozenset({"config"})
"""Groups of a CLI's own settings (``gcloud config set``): ``.venv/bin/pip config set`` too."""
_OBJECT_STORES = {"aws": "s3", "aliyun": "oss"}
_OPERATION = re.compile(r"^([a-z]+)-[a-z0-9-]+$|^([A-Z][a-z]+)[A-Z][A-Za-z0-9]*$")
"""A cloud operation's name: ``create-access-key``, ``DeleteInstance`` (its verb first)."""
_CLOUD_VERBS = (
    CLIS["gcloud"].verbs.changes
    | CLIS["az"].verbs.changes
    | options(
        "allocate associate attach authorize cancel change detach deregister disassociate "
        "execute invoke modify publish purge put reboot register release replace reset "
        "restore revoke rotate send terminate"
    )
)
"""What the verb of a cloud operation's name (``terminate-instances``) may be: gcloud's and
az's changes, and AWS's."""
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
_GLOB_MENTION = re.compile(
    r"(?:^|(?<=[\s'\"=(:;|&`,<>]))((?:[^\s'\"=;|&`()<>/]*/)+)"
    r"([^\s'\";|&`()<>/]*[*?\[{][^\s'\";|&`()<>/]*)"
)
"""A path whose last part the shell expands (``/usr/bin/kube[c]tl``, ``/usr/local/bin/terra*``,
``/usr/bin/kube{c,}tl``): it may name an infrastructure CLI without spelling it."""
_PROGRAM_FOLDERS = frozenset({"bin", "sbin", ".bin", "libexec"})
"""Folders of programs: a pattern there that spells one letter of a CLI's name names it
(``/usr/bin/a?``); elsewhere it must spell two (``src/*``, ``~/.local/bin/*`` name none)."""
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")
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
            self._elsewhere(simple.words, script, depth)
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
        for mention in _GLOB_MENTION.finditer(command):
            path = mention.group(0)
            clis = _pattern_clis(mention.group(1), mention.group(2))
            if clis and path not in programs and not self._only_folders(path):
                self._add(
                    Finding(
                        f"{path} (a pattern that can name {', '.join(clis)} by its path, "
                        "which the gate cannot watch)",
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

    def _elsewhere(self, words: list[str], script: str | None, depth: int) -> None:
        """Runners with program folders (or programs) of their own, virtualenvs, containers,
        other machines, later."""
        line = " ".join(words)
        shown = line if len(line) <= 80 else line[:79] + "…"
        if (inner := runner_command(words)) is not None:
            self._command(Simple(inner), True, script)  # their folders come first: gate-blind
        if (string := runner_string(words)) is not None:
            self.read(string, depth + 1, script, bins_first=True)
        if (why := elsewhere(words)) is not None:
            self._add(Finding(f"{shown} (runs {why})", cannot_tell=True), script)

    def _add(self, finding: Finding, script: str | None) -> None:
        if script is not None:  # only what a gate cannot see counts from a script
            if finding.gate_sees:
                return
            finding = Finding(f"{finding.what}, in {script}", False, True)
        self.findings.append(finding)

    def _command(self, simple: Simple, path_changed: bool, script: str | None) -> None:
        if (code := interpreted_cli(simple.words)) is not None:  # python3 -m awscli: no gate
            simple, path_changed = Simple(code), True
        program, args = simple.words[0], simple.words[1:]
        name = os.path.basename(program)
        if program.startswith(("$", "`")):
            self._through_variable(program, args, script)
        elif "/" in program:
            in_gates = self._is_gate_or_folder(program)
            clis = [name] if name in GATED else self._clis_behind(program)
            if clis:
                change = next((c for cli in clis if (c := classify(cli, args)) is not None), None)
                if change is not None:
                    seen = in_gates and not path_changed and name in GATED
                    cli = change.label.split()[0]
                    self._add(Finding(change.label, seen, change.unknown, cli=cli), script)
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
            elif name not in _BUILD_WRAPPERS and (suspect := _suspect_verb(args)):
                verb, why = suspect
                self._add(
                    Finding(
                        f"{program} {verb} (a program iac-code cannot name, with {why})",
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
        elif suspect := _suspect_verb(args, anywhere=True):
            self._add(
                Finding(
                    f"{program} {suspect[0]} (a program named through a variable or a "
                    "substitution)",
                    cannot_tell=True,
                ),
                script,
            )

    def _clis_behind(self, program: str) -> list[str]:
        """The infrastructure CLIs a path not named as one may be: a pattern that can name
        them (``/usr/bin/kube[c]tl``), or a link to one (``ln -s /usr/bin/kubectl kx``)."""
        clis = _pattern_clis(os.path.dirname(program) + "/", os.path.basename(program))
        real = self._expand(program) if not clis else None
        if real is not None and os.path.basename(real) in GATED:
            clis = [os.path.basename(real)]
        return clis

    def _only_folders(self, pattern: str) -> bool:
        """Whether the shell pattern ``pattern`` names only folders here (``infra/terra*``
        when that is the folder ``infra/terraform``)."""
        expanded = self._expand(pattern)
        if expanded is None:
            return False
        found = glob.glob(expanded)[:100]
        return bool(found) and all(os.path.isdir(path) for path in found)

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


def _kube_shaped(parsed: Parsed) -> bool:
    """Whether kubectl's arguments (an everyday verb first) name what kubectl works on: a
    ``KIND/NAME`` (``set image deploy/web``, ``exec deploy/web --``), a kind to create
    (``create deployment x``), what ``set`` changes and where (``set env web-0 A=b``), an image
    to run (``run x --image=...``)."""
    verb, *after = parsed.positionals
    return (
        any(word.partition("/")[0].lower() in _KUBE_KINDS for word in after if "/" in word)
        or (verb == "create" and bool(after) and after[0].lower() in _KUBE_KINDS)
        or (verb == "set" and len(after) >= 2 and after[0] in _KUBE_SET)
        or parsed.has("--image")
    )


def _suspect_verb(args: list[str], anywhere: bool = False) -> tuple[str, str] | None:
    """What makes ``args``, after a program we cannot name, a change, and why: a changing verb,
    or the words of an infrastructure CLI's change (``rollout undo``: ``kubectl rollout
    undo``)."""
    if verb := _changing_verb(args, anywhere):
        return verb, "a changing verb"
    if change := _known_change(args):
        return change.partition(" ")[2], f"the words of {change}"
    return None


def _known_change(args: list[str]) -> str | None:
    """The change an infrastructure CLI's table reads in ``args``, when those words would make
    a program we cannot name that CLI (``./kx rollout undo``: ``kubectl rollout undo``).

    The tables lean towards asking (any aws operation not known to read, any word of
    ansible-playbook, kubectl's ``run``), which for every program would ask about ``./build.sh
    run``. So only a change named by the first words, as the CLI's command, counts, and only
    one ordinary programs rarely spell: a verb in a group (``state rm``, ``rollout undo``), a
    cloud operation (``s3 rm``, ``iam create-access-key``), a verb after a cloud resource
    (``compute instances delete``), or a verb of a table that is not also an everyday one
    (``annotate``, ``force-unlock``; not ``run``, ``set``, ``exec``)."""
    for cli, spec in CLIS.items():
        change = classify(cli, args)
        if change is None or change.unknown:
            continue
        words = change.label.split()[1:]
        # Read as the CLI reads them: ``--region us-east-1 s3 rm`` is ``s3 rm``.
        parsed = parse(args, spec.value_options)
        positionals = parsed.positionals
        if len(words) == 1 and len(positionals) < 2:
            continue  # a verb alone is a script's own (./x.sh label): the CLI's takes a name
        if words and words == positionals[: len(words)] and _distinctive(cli, words, spec, parsed):
            return change.label
    return None


def _distinctive(cli: str, words: list[str], spec: Spec, parsed: Parsed) -> bool:
    """Whether the words of a change (after the CLI's name) are the CLI's own, see
    :func:`_known_change`; an everyday verb of kubectl's is, with kubectl's arguments."""
    verb = words[-1]
    if len(words) == 1:
        if cli == "kubectl" and verb in spec.verbs.changes and _kube_shaped(parsed):
            return True
        return verb in spec.verbs.changes and verb not in _EVERYDAY_VERBS
    level = spec.verbs
    for word in words[:-1]:
        if word not in level.groups or word in _LOCAL_GROUPS:
            break
        level = level.groups[word]
    else:
        return verb in level.changes
    if not spec.verbs.changes and len(words) == 2:  # aws, aliyun: SERVICE OPERATION
        operation = _OPERATION.match(verb)
        prefix = operation and (operation.group(1) or operation.group(2).lower())
        return words[0] == _OBJECT_STORES.get(cli) or prefix in _CLOUD_VERBS
    return (  # gcloud compute instances delete
        spec.hyphen_prefix
        and len(words) >= 3
        and verb in spec.verbs.changes
        and verb not in _EVERYDAY_VERBS
    )


def _pattern_clis(folder: str, pattern: str) -> list[str]:
    """The infrastructure CLIs the shell pattern ``pattern`` (a path's last part, in
    ``folder``) can name: ``kube[c]tl``, ``terra*``, ``kube{c,}tl``; see
    :data:`_PROGRAM_FOLDERS` for how many letters it must spell."""
    if "$" in pattern or "`" in pattern:
        return []
    in_programs = os.path.basename(folder.rstrip("/")) in _PROGRAM_FOLDERS
    found: set[str] = set()
    for alternative in _braces(pattern):
        alternative = alternative.replace("[^", "[!")  # bash's negation, as fnmatch spells it
        pinned = len(re.sub(r"[*?]", "", re.sub(r"\[!?\]?[^\]]*\]", "c", alternative)))
        if pinned >= (1 if in_programs else 2):
            found.update(name for name in GATED if fnmatchcase(name, alternative))
    return sorted(found)


def _braces(pattern: str) -> list[str]:
    """``pattern`` with its brace expansions made (``kube{c,}tl``: ``kubectl``, ``kubetl``); a
    sequence (``{a..z}``) or a deeper one stands for anything."""
    patterns = [pattern]
    for _ in range(6):
        expanded: list[str] = []
        for one in patterns:
            match = _BRACE.search(one)
            parts = match.group(1).split(",") if match else []
            if match is None:
                expanded.append(one)
            else:
                expanded += [one[: match.start()] + part + one[match.end() :] for part in parts]
        patterns = expanded[:64]
    return [re.sub(r"\{[^{}]*\}", "*", one) for one in patterns]


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
