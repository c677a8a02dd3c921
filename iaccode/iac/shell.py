"""The shell reader: the simple commands a bash command line runs, as words.

The line is split as a shell would split it (:mod:`iaccode.iac.shell_words`), not searched for
words: lists and pipelines (``;`` ``&&`` ``||`` ``|`` ``&``), sub-shells and command
substitutions (``( )``, ``$( )``, backquotes, ``<( )`` and ``>( )``), the strings of ``sh -c``,
``eval``, ``su -c``,
``script -c``, ``watch``, ``find -exec`` and ``git -c alias.x='!...'``, and the wrappers that
run another command (``VAR=value``, ``env``, ``sudo``, ``time``, ``xargs``, ``setsid``,
``flock``, ``strace``, ``chroot``, ...) are looked through, so ``cd infra && sudo env TF_LOG=1
terraform apply`` yields ``terraform apply``.

A line we cannot parse (an unclosed quote) is split on white space instead: a wrong guess
there reads a word too many, never one too few.

What the reader cannot see is what the shell makes at run time (globs, variables, functions,
aliases, a string fed to ``sh`` on stdin): the gates (:mod:`iaccode.gate`) see those, after
every expansion. The reader is for what a gate cannot see (:mod:`iaccode.iac.guard`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator

from attrs import field, frozen

from iaccode.iac.shell_words import PLACEHOLDER, inside, lift_substitutions, split, split_commands

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_KEYWORDS = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "do",
        "while",
        "until",
        "!",
        "fi",
        "done",
        "coproc",
        "function",
        "in",
        "case",
        "esac",
        "for",
        "select",
    }
)
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"})
MAX_DEPTH = 8
"""Nested ``sh -c`` strings looked into; deeper ones count as a change (nobody writes them)."""

# Wrappers that run the rest of their arguments as a command: options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset(
        {
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-R",
            "-T",
            "-U",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--chdir",
            "--role",
            "--type",
        }
    ),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-a", "--argv0"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "nohup": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "xargs": frozenset(
        {
            "-I",
            "-n",
            "-P",
            "-L",
            "-d",
            "-s",
            "-a",
            "-E",
            "-e",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--delimiter",
            "--arg-file",
            "--replace",
            "--max-chars",
            "--eof",
        }
    ),
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "chronic": frozenset(),
    "caffeinate": frozenset(),
    "setsid": frozenset(),
    "flock": frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
    "strace": frozenset(
        {"-e", "-o", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-S", "-X", "-P"}
    ),
    "ltrace": frozenset({"-e", "-o", "-p", "-s", "-u", "-a", "-n", "-l"}),
    "chroot": frozenset({"--userspec", "--groups"}),
    "runuser": frozenset({"-u", "-g", "-G", "--user", "--group"}),
    "taskset": frozenset(),
    "chrt": frozenset(),
    "unbuffer": frozenset(),
    "faketime": frozenset(),
    "firejail": frozenset(),
    "proot": frozenset(),
    "unshare": frozenset(
        {
            "--map-user",
            "--map-group",
            "--setuid",
            "--setgid",
            "-S",
            "-G",
            "--wd",
            "--root",
            "-R",
            "-w",
        }
    ),
    "nsenter": frozenset({"-t", "--target", "-S", "-G", "--wd", "-w", "--root", "-r"}),
    "systemd-run": frozenset(
        {
            "-p",
            "--property",
            "-u",
            "--unit",
            "-E",
            "--setenv",
            "--description",
            "--slice",
            "-M",
            "--machine",
            "--uid",
            "--gid",
            "--working-directory",
        }
    ),
    "catchsegv": frozenset(),
    "valgrind": frozenset(),
    "perf": frozenset({"-e", "-o", "-p"}),
    "tini": frozenset(),
    "dumb-init": frozenset(),
    "parallel": frozenset({"-j", "--jobs", "-S", "--sshlogin"}),
    "entr": frozenset(),
    "retry": frozenset({"-t", "--tries", "-d", "--delay"}),
}
_WATCH_OPTIONS = frozenset({"-n", "--interval", "-q", "--equexit"})
"""watch's options that take a value; it runs the rest of its words, joined, with ``sh -c``."""
_POSITIONAL_FIRST = {
    "timeout": 1,
    "flock": 1,
    "chroot": 1,
    "taskset": 1,
    "chrt": 1,
    "faketime": 1,
    "perf": 1,
}
"""Wrappers whose first positional arguments are theirs (a duration, a lock file, a new root,
a CPU mask, a priority, a time, perf's subcommand), not the command."""
_STRING_OPTIONS = {
    "su": ("-c", "--command"),
    "runuser": ("-c", "--command"),
    "script": ("-c", "--command"),
    "flock": ("-c", "--command"),
    "sudo": (),
    "ssh": (),
}
"""Programs whose option's value is a command line: ``su -c 'terraform apply'``."""

TOO_DEEP = "\0too deep"
"""The one word :func:`simple_commands` yields for a command nested deeper than MAX_DEPTH."""


@frozen
class Simple:
    """One simple command: the program and its arguments, wrappers taken off."""

    words: list[str]
    """Never empty, except for a command of assignments alone (``PATH=/usr/bin``)."""
    assignments: list[str] = field(factory=list)
    """``NAME=value`` words before the program, its wrappers' included (``env PATH=...``)."""
    clean_env: bool = False
    """Run with an emptied environment (``env -i``) or the default PATH (``command -p``)."""
    nested: bool = False
    """Inside a string or substitution of another command (``sh -c '...'``, ``$(...)``)."""


def simple_commands(command: str, depth: int = 0) -> Iterator[Simple]:
    """Each command ``command`` runs, with the wrappers (``sudo``, ``env X=1``, ...) taken off
    and the strings of ``sh -c``, ``eval``, ``$( )`` and backquotes looked into (their commands
    come first)."""
    if depth > MAX_DEPTH:
        yield Simple([TOO_DEEP])
        return
    lifted, substitutions = lift_substitutions(command)
    for substitution in substitutions:  # each a command line of its own, in any quotes
        for inner in simple_commands(inside(substitution), depth + 1):
            yield _nested(inner)
    for words in split_commands(lifted):
        # A substitution is a word again: ``$(which terraform) apply`` is one command.
        words = [PLACEHOLDER.sub(lambda m: substitutions[int(m.group(1))], word) for word in words]
        found = _unwrap(words)
        if not found.words:
            if found.assignments:
                yield found
            continue
        for string in _strings_run(found.words):
            for inner in simple_commands(string, depth + 1):
                yield _nested(inner, found)
        if _is_string_runner(found.words):
            continue
        yield _nested(found) if depth else found


def _nested(inner: Simple, outer: Simple | None = None) -> Simple:
    if outer is None:
        return Simple(inner.words, inner.assignments, inner.clean_env, True)
    return Simple(
        inner.words,
        [*outer.assignments, *inner.assignments],
        inner.clean_env or outer.clean_env,
        True,
    )


def _is_string_runner(words: list[str]) -> bool:
    """Whether the command only runs strings we looked into (``sh -c S``, ``eval S``)."""
    name = os.path.basename(words[0])
    return name == "eval" or (name in SHELLS and _shell_string(words[1:]) is not None)


def _strings_run(words: list[str]) -> Iterator[str]:
    """The command lines in ``words`` that the program runs: ``sh -c S``, ``eval S``,
    ``su -c S``, ``script -c S``, ``watch S``, ``find -exec ... ;``, ``git -c alias.x=!S``,
    ``trap S SIG``, ``ssh host S`` (run elsewhere, with the same CLIs maybe)."""
    name = os.path.basename(words[0])
    args = words[1:]
    if name in SHELLS:
        if (script := _shell_string(args)) is not None:
            yield script
    elif name == "eval":
        yield " ".join(args)
    elif name in ("trap",) and args:
        yield args[0]
    elif name == "watch":
        index = 0
        while index < len(args) and args[index].startswith("-") and args[index] != "--":
            index += 2 if args[index] in _WATCH_OPTIONS else 1
        yield " ".join(args[index + (args[index : index + 1] == ["--"]) :])
    elif name in ("find", "fd"):
        for index, word in enumerate(args):
            if word in (
                "-exec",
                "-execdir",
                "-ok",
                "-okdir",
                "-x",
                "--exec",
                "-X",
                "--exec-batch",
            ) and index + 1 < len(args):
                rest = args[index + 1 :]
                end = next((i for i, w in enumerate(rest) if w in (";", "+", "\\;")), len(rest))
                yield shlex.join(rest[:end])
    elif name == "git":
        for index, word in enumerate(args):
            value = args[index + 1] if word == "-c" and index + 1 < len(args) else ""
            if value.startswith("alias.") and "=!" in value:
                yield value.split("=!", 1)[1]
    elif name == "ssh":
        positionals = [word for word in args if not word.startswith("-")]
        if len(positionals) > 1:
            yield " ".join(positionals[1:])
    for option in _STRING_OPTIONS.get(name, ()):
        for index, word in enumerate(args):
            if word == option and index + 1 < len(args):
                yield args[index + 1]
            elif word.startswith(option + "=") and option.startswith("--"):
                yield word.split("=", 1)[1]
    # Interpreters and anything else: a word that reads as a command line on its own is
    # looked into by the guard's path scan (it needs no structure), not here.


def _unwrap(words: list[str]) -> Simple:
    """``words`` without assignments, shell keywords and the wrappers that run a command."""
    index = 0
    assignments: list[str] = []
    clean = False
    while index < len(words):
        word = words[index]
        name = os.path.basename(word)
        if ASSIGNMENT.match(word):
            assignments.append(word)
            index += 1
        elif word in _KEYWORDS:
            index += 1
        elif name == "flock" and _flock_string(words[index + 1 :]):
            break  # flock runs the string of its -c (_strings_run), not the words after it
        elif name in _WRAPPERS:
            start = index + 1
            index = _after_wrapper(name, words, start)
            wrapper_args = words[start:index]
            if name == "env":
                assignments.extend(w for w in wrapper_args if ASSIGNMENT.match(w))
                clean = clean or any(
                    w in ("-i", "--ignore-environment", "-")
                    or (w.startswith("-") and not w.startswith("--") and "i" in w[1:])
                    for w in wrapper_args
                )
                clean = clean or any(
                    w in ("-u", "--unset") and n == "PATH"
                    for w, n in zip(wrapper_args, wrapper_args[1:], strict=False)
                )
                if index < len(words) and words[index - 1] in ("-S", "--split-string"):
                    words = [*words[:index], *split(words[index]), *words[index + 1 :]]
            elif name == "command":
                clean = clean or any(w.startswith("-") and "p" in w for w in wrapper_args)
            elif name == "sudo":
                clean = clean or not any(
                    w in ("-E", "--preserve-env") or w.startswith("--preserve-env=")
                    for w in wrapper_args
                )
        else:
            break
    return Simple(words[index:], assignments, clean)


def _flock_string(args: list[str]) -> bool:
    """Whether ``flock ARGS`` runs the string of its ``-c`` (``flock [opts] FILE -c CMD``)."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        if args[index] in ("-c", "--command"):
            return True
        index += 2 if args[index] in _WRAPPERS["flock"] else 1
    return args[index + 1 : index + 2] in (["-c"], ["--command"])


def _after_wrapper(name: str, words: list[str], index: int) -> int:
    """Where the wrapped command starts, after ``name``'s options (and ``env``'s VAR=)."""
    takes_value = _WRAPPERS[name]
    positional = _POSITIONAL_FIRST.get(name, 0)
    while index < len(words):
        word = words[index]
        if word == "--":
            return index + 1 + positional
        if word.startswith("-") and len(word) > 1:
            if name == "env" and word in ("-S", "--split-string"):
                return index + 1  # its argument is a command line, split by _unwrap
            index += 2 if word in takes_value else 1
            # "-I{}" and "-n1": the value is glued to the option
            continue
        if name == "env" and ASSIGNMENT.match(word):
            index += 1
            continue
        if positional:
            positional -= 1
            index += 1
            continue
        return index
    return index


def _shell_string(args: list[str]) -> str | None:
    """The STRING of ``sh -c STRING`` (``-lc``, ``-ec`` too); None for ``sh script.sh``."""
    for position, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[position + 1] if position + 1 < len(args) else None
        if arg in ("-o", "+o", "-O", "+O"):
            continue
        if not arg.startswith(("-", "+")):
            return None
    return None


def shell_script(words: list[str]) -> str | None:
    """The script file a shell runs (``sh deploy.sh``, ``bash -e ./x``, ``source x``), or None
    (``sh -c ...``, a shell reading stdin)."""
    name = os.path.basename(words[0])
    if name in (".", "source") and len(words) > 1:
        return words[1]
    if name not in SHELLS or _shell_string(words[1:]) is not None:
        return None
    for arg in words[1:]:
        if arg in ("-s", "-i", "-"):
            return None
        if not arg.startswith(("-", "+")):
            return arg
    return None
