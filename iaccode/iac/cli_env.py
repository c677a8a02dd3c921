"""What a CLI's environment makes of the argv its gate saw: the words it adds, the verbs it
renames. A gate classifies the argv the program really gets (:func:`iaccode.iac.clis.classify`),
but some CLIs read more words than their argv:

- Terraform and OpenTofu put ``TF_CLI_ARGS`` and ``TF_CLI_ARGS_<command>`` after the command's
  name: ``TF_CLI_ARGS_init='-migrate-state -force-copy' terraform init`` moves the state.
- The AWS CLI reads ``$HOME/.aws/cli/alias``, whose ``[toplevel]`` aliases replace any command,
  built-in ones too: with ``s3 = ec2 terminate-instances ...`` there, ``aws s3 ls`` terminates
  an instance, and ``!...`` runs a shell command. It also loads service models from
  ``$HOME/.aws/models`` and ``AWS_DATA_PATH`` (``aws configure add-model`` writes one), which
  can give a read operation a change's HTTP call: with any there, no aws run is a sure read.

:func:`classify_run` reads the argv as the CLI will: with those words, the alias expanded (a
shell alias, or one it cannot read, is a change it cannot tell). The variables a gate reports
are :data:`REPORTED` (the shim sends only those: it must stay fast).
"""

from __future__ import annotations

import configparser
import os
import pwd
import shlex
import stat
from collections.abc import Mapping

from iaccode.iac.argv import Change, parse
from iaccode.iac.clis import CLIS, classify

REPORTED = ("TF_CLI_ARGS", "HOME", "AWS_DATA_PATH")
"""The names (``TF_CLI_ARGS`` as a prefix) a gate sends along with the argv."""
_TERRAFORMS = frozenset({"terraform", "tofu"})
_ALIAS_MAX_BYTES = 256 * 1024


def classify_run(cli: str, args: list[str], env: Mapping[str, str]) -> Change | None:
    """What running ``cli`` with ``args`` in ``env`` changes (None: a read)."""
    if cli in _TERRAFORMS:
        return _terraform(cli, args, env)
    if cli == "aws":
        return _aws(args, env)
    return classify(cli, args)


def _terraform(cli: str, args: list[str], env: Mapping[str, str]) -> Change | None:
    command = _positionals(cli, args)[:2]
    if not command:
        return classify(cli, args)
    extra: list[str] = []
    names = list(
        dict.fromkeys(
            ["TF_CLI_ARGS", f"TF_CLI_ARGS_{command[0]}", "TF_CLI_ARGS_" + "_".join(command)]
        )
    )
    for name in names:
        if value := env.get(name, "").strip():
            try:
                extra += shlex.split(value)
            except ValueError:
                return Change(f"{cli} {command[0]} ({name})", unknown=True)
    if not extra:
        return classify(cli, args)
    at = args.index(command[0]) + 1
    change = classify(cli, [*args[:at], *extra, *args[at:]])
    if change is None:
        return None
    used = ", ".join(
        f"{name}={shlex.quote(env[name].strip())}" for name in names if env.get(name, "").strip()
    )
    return Change(f"{change.label} (with {used})", change.unknown)


def _aws(args: list[str], env: Mapping[str, str]) -> Change | None:
    change = _aws_aliased(args, env)
    if change is None and _aws_models(env):
        return Change(
            f"aws {' '.join(_positionals('aws', args)[:2])} (service models of "
            "AWS_DATA_PATH or ~/.aws/models, which may rename it)",
            unknown=True,
        )
    return change


def _aws_models(env: Mapping[str, str]) -> bool:
    """Whether the CLI loads service models besides its own: one of them can give a read
    operation the HTTP call of a change (``get-function`` sending DeleteFunction)."""
    if env.get("AWS_DATA_PATH", "").strip():
        return True
    try:
        with os.scandir(os.path.join(_home(env), ".aws", "models")) as models:
            return any(models)
    except OSError:
        return False


def _aws_aliased(args: list[str], env: Mapping[str, str]) -> Change | None:
    aliases = _aws_aliases(_home(env))
    command = next(iter(_positionals("aws", args)), None)
    if aliases is None:
        return Change("aws (an alias file it cannot read)", unknown=True)
    if command is None or command not in aliases:
        return classify("aws", args)
    value = aliases[command]
    where = "$HOME/.aws/cli/alias"
    if value.startswith("!"):
        return Change(f"aws {command} (a shell command of {where})", unknown=True)
    try:
        words = shlex.split(value)
    except ValueError:
        return Change(f"aws {command} (an alias of {where})", unknown=True)
    if words[:1] and words[0] in aliases:  # an alias of an alias: not followed
        return Change(f"aws {command} (an alias of {where})", unknown=True)
    at = args.index(command)
    expanded = [*args[:at], *words, *args[at + 1 :]]
    change = classify("aws", expanded)
    return (
        None
        if change is None
        else Change(f"{change.label} (aws {command}, an alias of {where})", change.unknown)
    )


def _positionals(cli: str, args: list[str]) -> list[str]:
    return parse(args, CLIS[cli].value_options).positionals


def _home(env: Mapping[str, str]) -> str:
    """The home folder the AWS CLI reads: where its ``expanduser`` looks."""
    return env.get("HOME", "") or pwd.getpwuid(os.getuid()).pw_dir


def _aws_aliases(home: str) -> dict[str, str] | None:
    """The ``[toplevel]`` aliases of ``home``'s alias file ({} when it has none); None when
    it exists but cannot be read (or is not a plain file)."""
    try:  # never blocking the agent: a FIFO or a device named there is not read
        fd = os.open(os.path.join(home, ".aws", "cli", "alias"), os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, _ALIAS_MAX_BYTES + 1).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    if len(text) > _ALIAS_MAX_BYTES:
        return None
    if not parser.has_section("toplevel"):
        return {}
    return {name: value.strip() for name, value in parser.items("toplevel")}
