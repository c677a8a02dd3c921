"""Which bash command lines change real infrastructure (``terraform apply``, ``kubectl delete``...).

The command line is parsed as a shell would split it (:mod:`shlex`), not searched for words:
lists and pipelines (``;`` ``&&`` ``||`` ``|`` ``&``), sub-shells and command substitutions
(``( )``, ``$( )``, backquotes), ``sh -c`` / ``bash -c`` strings, and the prefixes that run
another command (``VAR=value``, ``env``, ``sudo``, ``time``, ``xargs``, ``nohup``, ``timeout``,
...) are looked through, so ``cd infra && sudo env TF_LOG=1 terraform apply`` is found as
``terraform apply``. ``terraform plan``, ``kubectl get`` and other reads are not changes.

A line we cannot parse (an unclosed quote) is split on white space instead: a wrong guess
there asks one question too many, never one too few for the words it holds.

A program named through a variable is looked up in the environment the command gets (``$TF
apply`` with ``TF=tofu`` is ``tofu apply``); one that is not set there, or a substitution
(``$(which terraform) apply``), counts as a change when a word after it is one of the changing
verbs of the tools above. A task runner's target that names a change (``make apply``, ``just
deploy-prod``, ``task destroy``) counts too. What the guard cannot see is what a script or a
target runs under another name: it reads the command line, as the user reading the permission
question would.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator

_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "{", "}", "$", "\n"})
_REDIRECTS = re.compile(r"^\d*(<<<|<<-?|<>|<&|>&|&>>?|>>?|<|>\|)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "fi", "done"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash"})
_HELP = frozenset({"-h", "-help", "--help"})
MAX_DEPTH = 8
"""Nested ``sh -c`` strings looked into; deeper ones count as a change (nobody writes them)."""

# Wrappers that run the rest of their arguments as a command: options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-R", "-T", "-U", "--user",
                       "--group", "--host", "--prompt", "--chdir", "--role", "--type"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "nohup": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-d", "-s", "-a", "-E", "-e", "--max-args",
                        "--max-procs", "--max-lines", "--delimiter", "--arg-file",
                        "--replace", "--max-chars", "--eof"}),
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "chronic": frozenset(),
    "caffeinate": frozenset(),
    "watch": frozenset({"-n", "--interval", "-d"}),
}
_POSITIONAL_FIRST = {"timeout": 1}
"""Wrappers whose first positional argument is theirs (the duration), not the command."""

_TERRAFORM_CHANGES = frozenset({"apply", "destroy", "import", "taint", "untaint",
                                "force-unlock", "run-all"})
_TERRAFORM_STATE_CHANGES = frozenset({"rm", "mv", "push", "replace-provider"})
_CFN_CHANGES = frozenset({
    "create-stack", "update-stack", "delete-stack", "deploy", "execute-change-set",
    "create-stack-set", "update-stack-set", "delete-stack-set", "create-stack-instances",
    "update-stack-instances", "delete-stack-instances", "rollback-stack",
    "continue-update-rollback", "import-stacks-to-stack-set", "cancel-update-stack"})
_ROS_VERBS = ("create", "update", "delete", "continue", "execute", "cancel", "rollback",
              "import", "signal")
_ROS_NOUNS = ("stack", "changeset")
_KUBECTL_CHANGES = frozenset({
    "apply", "create", "delete", "replace", "patch", "scale", "edit", "label", "annotate",
    "set", "drain", "cordon", "uncordon", "taint", "autoscale", "expose", "run"})
_KUBECTL_ROLLOUT_CHANGES = frozenset({"restart", "undo", "pause", "resume"})
_KUBECTL_VALUE_OPTIONS = frozenset({"-n", "--namespace", "--context", "--kubeconfig",
                                    "--cluster", "--user", "-s", "--server", "--token", "--as"})
_HELM_CHANGES = frozenset({"install", "upgrade", "uninstall", "delete", "del", "un",
                           "rollback"})
_HELM_VALUE_OPTIONS = frozenset({"-n", "--namespace", "--kube-context", "--kubeconfig"})
_PULUMI_CHANGES = frozenset({"up", "update", "destroy", "import"})
_PULUMI_VALUE_OPTIONS = frozenset({"-s", "--stack", "-C", "--cwd"})
_AWS_VALUE_OPTIONS = frozenset({"--region", "--profile", "--output", "--endpoint-url",
                                "--query", "--cli-read-timeout", "--cli-connect-timeout",
                                "--ca-bundle", "--color"})
_ALIYUN_VALUE_OPTIONS = frozenset({"--profile", "-p", "--region", "--endpoint", "--mode"})


_VARIABLE_VERBS = frozenset({
    "apply", "destroy", "delete", "deploy", "up", "install", "upgrade", "uninstall",
    "rollback", "import", "taint", "scale", "drain", "patch", "replace", "create-stack",
    "update-stack", "delete-stack", "execute-change-set"})
"""The words after a program we cannot name that make its command line count as a change."""
_TARGET_CHANGES = frozenset({"apply", "destroy", "deploy", "undeploy", "teardown", "rollback"})
"""Task-runner targets that change infrastructure, whole or as a part (``deploy-prod``)."""
_TASK_RUNNERS = frozenset({"make", "gmake", "just", "task", "mage"})
_MAKE_VALUE_OPTIONS = frozenset({"-C", "-f", "--file", "--makefile", "-I", "-j", "-l", "-o",
                                 "-W", "--directory", "--justfile", "-d", "--dir",
                                 "--taskfile"})
_VARIABLE = re.compile(r"^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})$")
_PLACEHOLDER = re.compile("\0(\\d+)\0")
"""Where :func:`_lift_substitutions` took a substitution out of a command line."""


def infra_change(command: str) -> str | None:
    """What in ``command`` changes real infrastructure ("terraform apply"), or None."""
    for words in simple_commands(command):
        if words == [TOO_DEEP]:
            return "a deeply nested shell command"
        if _HELP.intersection(words[1:]):
            continue
        name = os.path.basename(words[0])
        if (check := _PROGRAMS.get(name)) is not None:
            found = check(name, words[1:])
        elif words[0].startswith(("$", "`")):
            found = _through_variable(words[0], words[1:])
        else:
            found = None
        if found:
            return found
    return None


def _through_variable(program: str, args: list[str]) -> str | None:
    """``$TF apply``: the program the environment names, else a guess from the verbs."""
    variable = _VARIABLE.match(program)
    value = os.environ.get(variable.group(1) or variable.group(2), "") if variable else ""
    name = os.path.basename(value.split()[0]) if value.strip() else ""
    if (check := _PROGRAMS.get(name)) is not None:
        return check(name, args)
    verbs = [word for word in _positionals(args) if word in _VARIABLE_VERBS]
    return (f"{program} {verbs[0]} (a program named through a variable or a substitution)"
            if verbs else None)


TOO_DEEP = "\0too deep"
"""The one word :func:`simple_commands` yields for a command nested deeper than MAX_DEPTH."""


def simple_commands(command: str, depth: int = 0) -> Iterator[list[str]]:
    """Each command ``command`` runs, as words, with the wrappers (``sudo``, ``env X=1``,
    ...) taken off and the strings of ``sh -c``, ``eval``, ``$( )`` and backquotes looked
    into (their commands come first). Never an empty list."""
    if depth > MAX_DEPTH:
        yield [TOO_DEEP]
        return
    lifted, substitutions = _lift_substitutions(command)
    for substitution in substitutions:  # each a command line of its own, in any quotes
        yield from simple_commands(_inside(substitution), depth + 1)
    for words in _split_commands(lifted):
        # A substitution is a word again: ``$(which terraform) apply`` is one command.
        words = [_PLACEHOLDER.sub(lambda m: substitutions[int(m.group(1))], word)
                 for word in words]
        words = _unwrap(words)
        if not words:
            continue
        name = os.path.basename(words[0])
        if name in _SHELLS:
            if (script := _shell_string(words[1:])) is not None:
                yield from simple_commands(script, depth + 1)
                continue
        elif name == "eval":
            yield from simple_commands(" ".join(words[1:]), depth + 1)
            continue
        yield words


def _lift_substitutions(command: str) -> tuple[str, list[str]]:
    """``command`` with each ``$( )`` (to its matching parenthesis) and backquoted span, in
    any quotes, replaced by a placeholder, and the spans in order (unclosed: to the end)."""
    out: list[str] = []
    spans: list[str] = []
    index = 0
    while index < len(command):
        if command.startswith("$(", index):
            depth, end = 1, index + 2
            while end < len(command) and depth:
                depth += {"(": 1, ")": -1}.get(command[end], 0)
                end += 1
        elif command[index] == "`":
            close = command.find("`", index + 1)
            end = len(command) if close < 0 else close + 1
        else:
            out.append(command[index])
            index += 1
            continue
        out.append(f"\0{len(spans)}\0")
        spans.append(command[index:end])
        index = end
    return "".join(out), spans


def _inside(substitution: str) -> str:
    """The command line of ``$(...)`` or ```...```."""
    if substitution.startswith("$("):
        return substitution[2:-1] if substitution.endswith(")") else substitution[2:]
    return substitution[1:-1] if len(substitution) > 1 and substitution.endswith("`") \
        else substitution[1:]


def _split_commands(command: str) -> Iterator[list[str]]:
    """The words of each simple command in ``command``, redirections left out."""
    try:
        lexer = shlex.shlex(_without_comments(command), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""  # shlex would start a comment at a "#" inside a word (a#b)
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the words as they stand
        tokens = re.split(r"\s+|(?=[;&|()])|(?<=[;&|()])", command)
        tokens = [token for token in tokens if token]
    words: list[str] = []
    skip_target = False
    for token in tokens:
        if skip_target:
            skip_target = False
            continue
        # shlex gives a run of operators as one token: ")&&", "((", ";;"
        if token in _SEPARATORS or (token and not token.strip("();|&")):
            if words:
                yield words
            words = []
        elif _REDIRECTS.match(token):
            skip_target = True
        else:
            words.append(token)
    if words:
        yield words


def _unwrap(words: list[str]) -> list[str]:
    """``words`` without assignments, shell keywords and the wrappers that run a command."""
    index = 0
    while index < len(words):
        word = words[index]
        name = os.path.basename(word)
        if _ASSIGNMENT.match(word) or word in _KEYWORDS:
            index += 1
        elif name in _WRAPPERS:
            index = _after_wrapper(name, words, index + 1)
            if (name == "env" and index < len(words)
                    and words[index - 1] in ("-S", "--split-string")):
                words = [*words[:index], *_split(words[index]), *words[index + 1:]]
        else:
            break
    return words[index:]


def _without_comments(line: str) -> str:
    """``line`` without its shell comments (from a ``#`` that starts a word, outside quotes,
    to the end of that line), its new lines outside quotes as ``;`` (shlex would take them for
    spaces) and its backslash-newline continuations joined."""
    out: list[str] = []
    quote: str | None = None
    previous = " "
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\" and quote != "'" and index + 1 < len(line):
            out.append(" " if line[index + 1] == "\n" else line[index:index + 2])
            previous, index = "x", index + 2
            continue
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (previous.isspace() or previous in ";&|()"):
            end = line.find("\n", index)
            if end < 0:
                break
            index = end
            continue
        elif char == "\n":
            char = ";"
        out.append(char)
        previous, index = char, index + 1
    return "".join(out)


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


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
        if name == "env" and _ASSIGNMENT.match(word):
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
        if not arg.startswith("-"):
            return None
    return None


def _positionals(args: list[str], value_options: frozenset[str] = frozenset()) -> list[str]:
    """The arguments that are not options (nor the values of ``value_options``)."""
    found: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in value_options:
            skip = True
        elif not arg.startswith("-"):
            found.append(arg)
    return found


def _terraform(name: str, args: list[str]) -> str | None:
    words = _positionals(args)
    if not words:
        return None
    sub = words[0]
    if name == "terragrunt" and sub == "run-all" and len(words) > 1:
        return f"{name} run-all {words[1]}" if words[1] in _TERRAFORM_CHANGES else None
    if sub in _TERRAFORM_CHANGES and sub != "run-all":
        return f"{name} {sub}"
    if sub == "state" and len(words) > 1 and words[1] in _TERRAFORM_STATE_CHANGES:
        return f"{name} state {words[1]}"
    if sub == "workspace" and len(words) > 1 and words[1] == "delete":
        return f"{name} workspace delete"
    return None


def _aws(name: str, args: list[str]) -> str | None:
    words = _positionals(args, _AWS_VALUE_OPTIONS)
    if len(words) >= 2 and words[0] == "cloudformation" and words[1] in _CFN_CHANGES:
        return f"aws cloudformation {words[1]}"
    return None


def _aliyun(name: str, args: list[str]) -> str | None:
    words = _positionals(args, _ALIYUN_VALUE_OPTIONS)
    if len(words) >= 2 and words[0].lower() == "ros":
        action = words[1].replace("-", "").lower()  # CreateStack or create-stack (plugin style)
        if action.startswith(_ROS_VERBS) and any(noun in action for noun in _ROS_NOUNS):
            return f"aliyun ros {words[1]}"
    return None


def _dry_run(args: list[str]) -> bool:
    return any(arg == "--dry-run" or (arg.startswith("--dry-run=") and arg != "--dry-run=none")
               for arg in args)


def _kubectl(name: str, args: list[str]) -> str | None:
    words = _positionals(args, _KUBECTL_VALUE_OPTIONS)
    if not words or _dry_run(args):
        return None
    if words[0] in _KUBECTL_CHANGES:
        return f"kubectl {words[0]}"
    if words[0] == "rollout" and len(words) > 1 and words[1] in _KUBECTL_ROLLOUT_CHANGES:
        return f"kubectl rollout {words[1]}"
    return None


def _helm(name: str, args: list[str]) -> str | None:
    words = _positionals(args, _HELM_VALUE_OPTIONS)
    if words and words[0] in _HELM_CHANGES and not _dry_run(args):
        return f"helm {words[0]}"
    return None


def _pulumi(name: str, args: list[str]) -> str | None:
    words = _positionals(args, _PULUMI_VALUE_OPTIONS)
    if not words:
        return None
    if words[0] in _PULUMI_CHANGES:
        return f"pulumi {words[0]}"
    if words[0] == "refresh" and ("--yes" in args or "-y" in args):
        return "pulumi refresh --yes"
    if words[0] == "state" and len(words) > 1 and words[1] in ("delete", "unprotect", "move"):
        return f"pulumi state {words[1]}"
    return None


def _task_runner(name: str, args: list[str]) -> str | None:
    for target in _positionals(args, _MAKE_VALUE_OPTIONS):
        if "=" not in target and _TARGET_CHANGES.intersection(re.split(r"[-_:/.]", target)):
            return f"{name} {target} (a {name} target)"
    return None


_PROGRAMS = {
    "terraform": _terraform, "tofu": _terraform, "terragrunt": _terraform,
    "aws": _aws, "aliyun": _aliyun, "kubectl": _kubectl, "oc": _kubectl,
    "helm": _helm, "pulumi": _pulumi,
    **dict.fromkeys(_TASK_RUNNERS, _task_runner),
}
